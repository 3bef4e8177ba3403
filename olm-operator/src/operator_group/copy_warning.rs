//! OLM's `DisabledCopiedCSVs` Warning Event (spec §2.7): while OLMConfig `disableCopiedCSVs` keeps an
//! all-namespaces operator from being copied, its CSV carries exactly one Warning Event "CSV copying disabled
//! for <ns>/<name>"; once copies are back (or the group narrows) those Events are deleted. Which CSVs to warn
//! or clear is pure ([`wanted`]); each is done once per group actor's life (`warn/<uid>`, `unwarn/<uid>` keys).

use kube::api::{DeleteParams, ListParams};
use kube::runtime::events::{Event, EventType, Recorder};
use kube::{Api, Client, Resource};
use messages::crd::csv::ClusterServiceVersion;
use std::collections::BTreeSet;
use std::sync::Arc;

pub const REASON: &str = "DisabledCopiedCSVs";

pub fn message(namespace: &str, name: &str) -> String {
    format!("CSV copying disabled for {namespace}/{name}")
}

/// What to do for one member CSV.
#[derive(Clone, Debug)]
pub enum CopyWarning {
    /// Make sure the CSV carries the Warning Event (`done` once it does).
    Ensure {
        done: String,
        csv: Arc<ClusterServiceVersion>,
    },
    /// Delete the CSV's Warning Events.
    Clear {
        done: String,
        csv: Arc<ClusterServiceVersion>,
    },
}

pub fn warn_key(uid: &str) -> String {
    format!("warn/{uid}")
}

pub fn unwarn_key(uid: &str) -> String {
    format!("unwarn/{uid}")
}

/// For each copyable member: warn while copies are withheld from it (`withheld`), clear otherwise; skipping
/// what `done` says was already done. Only an all-namespaces group (`all_namespaces`) withholds copies, so the
/// members of another group are cleared only when this actor warned them (the group narrowed since): a
/// delete-collection per install of a namespaced operator found nothing to delete (issue 19).
pub fn wanted(
    withheld: bool,
    all_namespaces: bool,
    members: &[&Arc<ClusterServiceVersion>],
    done: &BTreeSet<String>,
) -> Vec<CopyWarning> {
    members
        .iter()
        .filter(|c| crate::copied_csv::is_copyable(c))
        .filter_map(|c| {
            let uid = c.metadata.uid.as_deref()?;
            if !withheld && !all_namespaces && !done.contains(&warn_key(uid)) {
                return None;
            }
            let csv = Arc::clone(c);
            let warning = if withheld {
                CopyWarning::Ensure {
                    done: warn_key(uid),
                    csv,
                }
            } else {
                CopyWarning::Clear {
                    done: unwarn_key(uid),
                    csv,
                }
            };
            (!done.contains(warning.done())).then_some(warning)
        })
        .collect()
}

impl CopyWarning {
    pub fn done(&self) -> &str {
        match self {
            CopyWarning::Ensure { done, .. } | CopyWarning::Clear { done, .. } => done,
        }
    }
}

/// Field selector of the CSV's `DisabledCopiedCSVs` Events (core/v1 view).
pub fn selector(csv_name: &str) -> String {
    format!(
        "involvedObject.kind=ClusterServiceVersion,involvedObject.name={csv_name},reason={REASON}"
    )
}

/// Perform one warning change.
pub async fn apply(
    client: &Client,
    recorder: &Recorder,
    warning: &CopyWarning,
) -> Result<(), kube::Error> {
    match warning {
        CopyWarning::Ensure { csv, .. } => {
            let (Some(name), Some(namespace)) = (
                csv.metadata.name.as_deref(),
                csv.metadata.namespace.as_deref(),
            ) else {
                return Ok(());
            };
            let events: Api<k8s_openapi::api::core::v1::Event> =
                Api::namespaced(client.clone(), namespace);
            let existing = events
                .list(&ListParams::default().fields(&selector(name)))
                .await?;
            if !existing.items.is_empty() {
                return Ok(());
            }
            let event = Event {
                type_: EventType::Warning,
                reason: REASON.to_string(),
                note: Some(message(namespace, name)),
                action: "CopyCSV".to_string(),
                secondary: None,
            };
            recorder.publish(&event, &csv.object_ref(&())).await
        }
        CopyWarning::Clear { csv, .. } => {
            let (Some(name), Some(namespace)) = (
                csv.metadata.name.as_deref(),
                csv.metadata.namespace.as_deref(),
            ) else {
                return Ok(());
            };
            let events: Api<k8s_openapi::api::core::v1::Event> =
                Api::namespaced(client.clone(), namespace);
            events
                .delete_collection(
                    &DeleteParams::default(),
                    &ListParams::default().fields(&selector(name)),
                )
                .await
                .map(|_| ())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn member(name: &str, copied: bool) -> Arc<ClusterServiceVersion> {
        let mut csv = ClusterServiceVersion::new(name, Default::default());
        csv.metadata.namespace = Some("op".into());
        csv.metadata.uid = Some(format!("uid-{name}"));
        let reason = if copied { "Copied" } else { "InstallSucceeded" };
        let status = serde_json::json!({"phase": "Succeeded", "reason": reason});
        csv.status = serde_json::from_value(status).ok();
        Arc::new(csv)
    }

    fn kinds(warnings: &[CopyWarning]) -> Vec<String> {
        warnings.iter().map(|w| w.done().to_string()).collect()
    }

    #[rstest]
    #[case::withheld_copies_warn_each_member(true, true, &[], &["warn/uid-a", "warn/uid-b"])]
    #[case::copies_back_clear_each_member(false, true, &[], &["unwarn/uid-a", "unwarn/uid-b"])]
    #[case::a_done_warning_is_not_repeated(true, true, &["warn/uid-a"], &["warn/uid-b"])]
    #[case::a_done_clear_is_not_repeated(false, true, &["unwarn/uid-a", "unwarn/uid-b"], &[])]
    #[case::a_namespaced_group_clears_nothing_it_never_warned(false, false, &[], &[])]
    #[case::a_narrowed_group_clears_what_it_warned(false, false, &["warn/uid-a"], &["unwarn/uid-a"])]
    fn each_member_is_warned_or_cleared_once(
        #[case] withheld: bool,
        #[case] all_namespaces: bool,
        #[case] done: &[&str],
        #[case] expected: &[&str],
    ) {
        let (a, b, copy) = (member("a", false), member("b", false), member("c", true));
        let done: BTreeSet<String> = done.iter().map(|s| s.to_string()).collect();
        let got = wanted(withheld, all_namespaces, &[&a, &b, &copy], &done);
        assert_eq!(kinds(&got), expected);
    }

    #[test]
    fn the_message_and_selector_follow_olm() {
        assert_eq!(message("op", "a.v1"), "CSV copying disabled for op/a.v1");
        assert_eq!(
            selector("a.v1"),
            "involvedObject.kind=ClusterServiceVersion,involvedObject.name=a.v1,reason=DisabledCopiedCSVs"
        );
    }
}
