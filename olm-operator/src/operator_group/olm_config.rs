//! The OLMConfig's `DisabledCopiedCSVs` condition (spec §1.6, §2.7; scenario 17), kept by its own actor on the
//! reconcile contract ([`OlmConfigActor`]), asked to run (a `Requeue`) whenever the OLMConfig changes or a group
//! wrote copies. The condition is decided purely from the stores.

use crate::shared::Shared;
use actix::prelude::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Api, Patch, PatchParams};
use messages::crd::annotations;
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::olm_config::{
    OLM_CONFIG_NAME, OLMConfig, OlmConfigConditionReason, OlmConfigConditionType,
};
use messages::crd::operator_group::OperatorGroup;
use messages::key::ObjectKey;
use messages::msg::{Requeue, RequeueReason};
use olm_runtime::outcome::{Next, Outcome};
use olm_runtime::reconcile::{self, Cause, Loop, Reconciler};
use olm_runtime::singleton::Pending;
use std::sync::Arc;

pub const MSG_ENABLED: &str = "Copied CSVs are enabled and present across the cluster";
pub const MSG_DISABLED_CLEAN: &str = "Copied CSVs are disabled and no unexpected copied CSVs were found for operators installed in AllNamespace mode";
pub const MSG_DISABLED_UNEXPECTED: &str = "Copied CSVs are disabled and at least one unexpected copied CSV was found for an operator installed in AllNamespace mode";

/// `(status, reason, message)` of the condition.
pub fn condition(
    disabled: bool,
    unexpected_copies: bool,
) -> (&'static str, OlmConfigConditionReason, &'static str) {
    match (disabled, unexpected_copies) {
        (false, _) => (
            "False",
            OlmConfigConditionReason::CopiedCsvsEnabled,
            MSG_ENABLED,
        ),
        (true, false) => (
            "True",
            OlmConfigConditionReason::CopiedCsvsDisabled,
            MSG_DISABLED_CLEAN,
        ),
        (true, true) => (
            "False",
            OlmConfigConditionReason::CopiedCsvsDisabled,
            MSG_DISABLED_UNEXPECTED,
        ),
    }
}

/// Whether some copy belongs to a group targeting all namespaces.
pub fn has_all_namespaces_copies<'a>(
    csvs: impl IntoIterator<Item = &'a ClusterServiceVersion>,
    groups: &[Arc<OperatorGroup>],
    protected: &std::collections::BTreeSet<String>,
) -> bool {
    let unprotected = |c: &&ClusterServiceVersion| {
        c.metadata
            .namespace
            .as_ref()
            .is_none_or(|ns| !protected.contains(ns))
    };
    csvs.into_iter()
        .filter(|c| c.is_copied())
        .filter(unprotected)
        .any(|copy| {
            let a = copy.metadata.annotations.clone().unwrap_or_default();
            let (Some(name), Some(ns)) = (
                a.get(annotations::OPERATOR_GROUP),
                a.get(annotations::OPERATOR_NAMESPACE),
            ) else {
                return false;
            };
            groups.iter().any(|g| {
                g.metadata.name.as_ref() == Some(name)
                    && g.metadata.namespace.as_ref() == Some(ns)
                    && g.status
                        .as_ref()
                        .and_then(|s| s.namespaces.as_ref())
                        .is_some_and(|n| n.iter().any(String::is_empty))
            })
        })
}

/// Ask the condition's actor to run (queued in its mailbox until it runs).
pub fn changed(shared: &Shared) {
    shared.registries.olm_config_status.do_send(Requeue {
        reason: RequeueReason::DependencyChanged,
    });
}

/// Run the condition's actor in its prepared mailbox (`shared.registries.olm_config_status`). One that died is started again by the next
/// requeue ([`olm_runtime::singleton::Singleton`]): it holds nothing but its loop, and its first run reads the OLMConfig again.
pub fn start(shared: &Shared, pending: Pending<OlmConfigActor>) {
    let again = shared.clone();
    shared.registries.olm_config_status.run(
        pending,
        OlmConfigActor::new(shared.clone()),
        move |_| OlmConfigActor::new(again.clone()).start().recipient(),
    );
}

/// The one writer of the OLMConfig's condition.
pub struct OlmConfigActor {
    shared: Shared,
    control: Loop,
}

impl OlmConfigActor {
    fn new(shared: Shared) -> Self {
        Self {
            control: Loop::new(
                "OLMConfig",
                ObjectKey::cluster(OLM_CONFIG_NAME),
                crate::error::policy(),
            )
            .with_chaos(shared.process.chaos.clone()),
            shared,
        }
    }
}

impl Actor for OlmConfigActor {
    type Context = Context<Self>;
}

impl Reconciler for OlmConfigActor {
    fn control(&mut self) -> &mut Loop {
        &mut self.control
    }

    fn run(&mut self, _ctx: &mut Context<Self>) -> ResponseActFuture<Self, Outcome> {
        let shared = self.shared.clone();
        let fut = async move { sync(&shared).await };
        Box::pin(
            actix::fut::wrap_future::<_, Self>(fut).map(|result, _act, _ctx| match result {
                Ok(()) => Outcome::Done(Next::Idle),
                Err(e) => {
                    Outcome::failed(crate::error::class(olm_runtime::error::classify(&e)), &e)
                }
            }),
        )
    }
}

impl Handler<Requeue> for OlmConfigActor {
    type Result = ();

    fn handle(&mut self, _msg: Requeue, ctx: &mut Self::Context) {
        reconcile::trigger(self, ctx, Cause::Message("olm config or copies changed"));
    }
}

async fn sync(shared: &Shared) -> Result<(), kube::Error> {
    let stores = &shared.stores;
    let Some(config) = stores
        .olm_config
        .state()
        .into_iter()
        .find(|c| c.metadata.name.as_deref() == Some(OLM_CONFIG_NAME))
    else {
        return Ok(());
    };
    let disabled = config
        .spec
        .features
        .as_ref()
        .and_then(|f| f.disable_copied_csvs)
        == Some(true);
    let csvs = stores.csvs.state();
    let groups = stores.operator_groups.state();
    let unexpected = disabled
        && has_all_namespaces_copies(
            csvs.iter().map(|c| c.as_ref()),
            &groups,
            &shared.protected_copy_namespaces,
        );
    let (status, reason, message) = condition(disabled, unexpected);
    let kind = OlmConfigConditionType::DisabledCopiedCsvs.as_str();
    let current = config
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    if current.iter().any(|c| {
        c.type_ == kind && c.status == status && c.reason == reason.as_str() && c.message == message
    }) {
        return Ok(());
    }
    let mut conditions: Vec<Condition> = current.into_iter().filter(|c| c.type_ != kind).collect();
    conditions.push(Condition {
        type_: kind.to_string(),
        status: status.to_string(),
        reason: reason.as_str().to_string(),
        message: message.to_string(),
        last_transition_time: Time(k8s_openapi::jiff::Timestamp::now()),
        observed_generation: config.metadata.generation,
    });
    let api: Api<OLMConfig> = Api::all(shared.client.clone());
    api.patch_status(
        OLM_CONFIG_NAME,
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"status": {"conditions": conditions}})),
    )
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::enabled_copies_are_reported_present(
        false,
        false,
        "False",
        "CopiedCSVsEnabled",
        MSG_ENABLED
    )]
    #[case::disabled_without_leftover_copies_is_true(
        true,
        false,
        "True",
        "CopiedCSVsDisabled",
        MSG_DISABLED_CLEAN
    )]
    #[case::disabled_with_leftover_copies_is_false(
        true,
        true,
        "False",
        "CopiedCSVsDisabled",
        MSG_DISABLED_UNEXPECTED
    )]
    fn the_condition_follows_olm(
        #[case] disabled: bool,
        #[case] unexpected: bool,
        #[case] status: &str,
        #[case] reason: &str,
        #[case] message: &str,
    ) {
        let (s, r, m) = condition(disabled, unexpected);
        assert_eq!((s, r.as_str(), m), (status, reason, message));
    }

    #[test]
    fn only_copies_of_all_namespaces_groups_count() {
        let group = |name: &str, namespaces: &[&str]| {
            let mut og = OperatorGroup::new(name, Default::default());
            og.metadata.namespace = Some("op".into());
            og.status = Some(messages::crd::operator_group::OperatorGroupStatus {
                namespaces: Some(namespaces.iter().map(|s| s.to_string()).collect()),
                ..Default::default()
            });
            Arc::new(og)
        };
        let mut copy = ClusterServiceVersion::new("a.v1", Default::default());
        copy.metadata.namespace = Some("tenant".into());
        copy.metadata.annotations = Some(
            [
                ("olm.operatorGroup".to_string(), "global".to_string()),
                ("olm.operatorNamespace".to_string(), "op".to_string()),
            ]
            .into(),
        );
        let none = std::collections::BTreeSet::new();
        let tenant = std::collections::BTreeSet::from(["tenant".to_string()]);
        assert!(has_all_namespaces_copies(
            [&copy],
            &[group("global", &[""])],
            &none
        ));
        assert!(
            !has_all_namespaces_copies([&copy], &[group("global", &[""])], &tenant),
            "a copy in a protected namespace is expected"
        );
        assert!(!has_all_namespaces_copies(
            [&copy],
            &[group("global", &["tenant"])],
            &none
        ));
        assert!(!has_all_namespaces_copies(
            [&copy],
            &[group("other", &[""])],
            &none
        ));
    }
}
