//! Build the classified [`Observed`] facts of one CSV from the shared stores (no API calls): spec problems,
//! OperatorGroup fit, requirements, replacement neighbours, owner conflicts, and the health of the
//! installed deployments against the rendered strategy.

use super::chain::{self, Peer};
use super::facts::{InstallStatus, Observed, OwnerConflict, Requirements, SpecCheck};
use super::health;
use super::requirements::{self, AccountFacts, Cluster, CrdFacts};
use crate::shared::Shared;
use crate::strategy::{self, Rendered};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::reflector::{ObjectRef, Store};
use messages::crd::annotations;
use messages::crd::csv::{ClusterServiceVersion, RequirementStatus};
use std::sync::Arc;
use std::time::Duration;

/// The facts for `decide`, plus what the effects and the status need.
pub struct Gathered {
    pub observed: Observed,
    pub requirement_statuses: Vec<RequirementStatus>,
    /// The strategy's objects, when the strategy is valid and the CSV persisted.
    pub rendered: Option<Rendered>,
    /// The other CSVs of this one's replacement chain (requeued when this one changes phase).
    pub chain: Vec<String>,
    /// The group's targets and service account as seen now (the actor compares it with the one seen when the
    /// CSV failed for good, to set `Observed::cluster_changed`).
    pub group_state: String,
    /// The CSV's OperatorCondition as the store has it.
    pub operator_condition:
        Option<std::sync::Arc<messages::crd::operator_condition::OperatorCondition>>,
}

pub fn gather(shared: &Shared, csv: &ClusterServiceVersion, now: Timestamp) -> Gathered {
    let namespace = csv.metadata.namespace.clone().unwrap_or_default();
    let peers: Vec<Peer> = shared
        .stores
        .csvs
        .state()
        .iter()
        .filter(|c| c.metadata.namespace.as_deref() == Some(namespace.as_str()))
        .map(|c| Peer::of(c))
        .collect();
    let me = Peer::of(csv);
    let config = subscription_config(shared, csv);
    let rendered = match strategy::render_with(csv, config.as_ref()) {
        Ok(Ok(r)) => Some(r),
        Ok(Err(_)) | Err(_) => None,
    };
    let spec = spec_check(csv, &me, &peers);
    let groups = shared.stores.operator_groups.state();
    let in_namespace: Vec<&messages::crd::operator_group::OperatorGroup> = groups
        .iter()
        .filter(|g| g.metadata.namespace.as_deref() == Some(namespace.as_str()))
        .map(|g| g.as_ref())
        .collect();
    let group = super::membership::fit(csv, &in_namespace, groups.iter().map(|g| g.as_ref()));
    let requirements = requirements::check(csv, &StoreCluster { shared });
    let install = match &rendered {
        Some(r) => installed(shared, &namespace, r),
        None => InstallStatus::Missing("the install strategy cannot be rendered".into()),
    };
    let since_transition = csv
        .status
        .as_ref()
        .and_then(|s| s.last_transition_time.as_ref())
        .map(|t| {
            let elapsed = now.duration_since(t.0);
            Duration::try_from(elapsed).unwrap_or(Duration::ZERO)
        });
    // What an install depends on in the group: its targets and its service account.
    let group_state = match in_namespace.as_slice() {
        [group] => {
            let status = group.status.as_ref();
            format!(
                "{:?}|{:?}",
                status.and_then(|s| s.namespaces.as_ref()),
                status
                    .and_then(|s| s.service_account_ref.as_ref())
                    .and_then(|r| r.uid.as_ref())
            )
        }
        _ => String::new(),
    };
    let condition_of = |name: &str| {
        shared
            .stores
            .csv
            .operator_conditions
            .get(&kube::runtime::reflector::ObjectRef::new(name).within(&namespace))
    };
    let operator_condition = csv.metadata.name.as_deref().and_then(condition_of);
    let operator_condition_stale = !csv.is_copied()
        && operator_condition.as_ref().is_none_or(|oc| {
            let want = crate::operator_condition::desired_spec(csv);
            oc.spec.service_accounts != want.service_accounts
                || oc.spec.deployments != want.deployments
        });
    let not_upgradeable = csv
        .spec
        .replaces
        .as_deref()
        .filter(|r| Some(*r) != csv.metadata.name.as_deref())
        .and_then(condition_of)
        .and_then(|oc| crate::operator_condition::gate(Some(oc.as_ref())).err());
    let observed = Observed {
        phase: csv.phase(),
        reason: csv.reason(),
        copied: csv.is_copied(),
        since_transition,
        cluster_changed: false,
        operator_condition_stale,
        not_upgradeable,
        spec,
        group,
        requirements: Requirements {
            met: requirements.met,
            statuses: Vec::new(),
        },
        owner_conflict: chain::owner_conflict(&me, &peers)
            .map(OwnerConflict::Crd)
            .or_else(|| deployment_conflict(shared, &namespace, &me, &peers, rendered.as_ref())),
        replaces: chain::replaces(&me, &peers),
        replaced_by: chain::replaced_by(&me, &peers),
        fail_forward: matches!(in_namespace.as_slice(), [g] if g.upgrade_strategy()
            == messages::crd::operator_group::UpgradeStrategyName::TechPreviewUnsafeFailForward),
        chain_head: chain::head(&me, &peers),
        older_not_handed_over: chain::older_not_handed_over(&me, &peers),
        install: super::served::live::refine(shared, csv, install, now.as_second()),
        served: super::served::live::served(shared, csv, now.as_second()),
    };
    let chain = chain::chain(&me, &peers)
        .into_iter()
        .filter(|n| *n != me.name)
        .collect();
    Gathered {
        observed,
        requirement_statuses: requirements.statuses,
        rendered,
        chain,
        group_state,
        operator_condition,
    }
}

/// The `spec.config` of the Subscription (in the CSV's namespace) whose `status.installedCSV` is this CSV.
fn subscription_config(
    shared: &Shared,
    csv: &ClusterServiceVersion,
) -> Option<messages::crd::subscription::SubscriptionConfig> {
    let (name, namespace) = (
        csv.metadata.name.as_deref()?,
        csv.metadata.namespace.as_deref()?,
    );
    shared
        .stores
        .csv
        .subscriptions
        .state()
        .iter()
        .find(|s| {
            s.metadata.namespace.as_deref() == Some(namespace)
                && s.status.as_ref().is_some_and(|st| st.installed_csv == name)
        })
        .and_then(|s| s.spec.config.clone())
}

/// A strategy deployment that is installed for another existing CSV outside this one's replacement chain.
fn deployment_conflict(
    shared: &Shared,
    namespace: &str,
    me: &Peer,
    peers: &[Peer],
    rendered: Option<&Rendered>,
) -> Option<OwnerConflict> {
    let store = &shared.stores.csv.deployments;
    let chain = chain::chain(me, peers);
    rendered?
        .deployments
        .iter()
        .filter_map(|d| d.metadata.name.as_deref())
        .find_map(|name| {
            let live = store.get(&ObjectRef::new(name).within(namespace))?;
            let owner = live
                .metadata
                .labels
                .as_ref()?
                .get(annotations::OWNER)?
                .clone();
            let foreign =
                !chain.contains(&owner) && peers.iter().any(|p| p.name == owner && !p.copied);
            foreign.then(|| OwnerConflict::Deployment {
                deployment: name.to_string(),
                owner,
            })
        })
}

fn spec_check(csv: &ClusterServiceVersion, me: &Peer, peers: &[Peer]) -> SpecCheck {
    let defs = csv.spec.custom_resource_definitions.as_ref();
    let names = defs
        .iter()
        .flat_map(|d| d.owned.iter().flatten().chain(d.required.iter().flatten()));
    for d in names {
        let ok = d
            .name
            .split_once('.')
            .is_some_and(|(plural, group)| !plural.is_empty() && !group.is_empty());
        if !ok {
            return SpecCheck::BadCrdName(d.name.clone());
        }
    }
    if let Err(e) = strategy::validate(csv) {
        return SpecCheck::InvalidStrategy(e.to_string());
    }
    if let Some(raw) = csv.spec.version.as_deref()
        && let Err(e) = semver::Version::parse(raw)
    {
        return SpecCheck::BadVersion(format!(
            "spec.version {raw:?} is not a semantic version ({e}); use MAJOR.MINOR.PATCH, e.g. 1.0.0"
        ));
    }
    if let Some(cycle) = chain::cycle(me, peers) {
        return SpecCheck::ReplacesCycle(cycle);
    }
    SpecCheck::Valid
}

fn installed(shared: &Shared, namespace: &str, rendered: &Rendered) -> InstallStatus {
    let store = &shared.stores.csv.deployments;
    let live: Vec<Arc<Deployment>> = rendered
        .deployments
        .iter()
        .filter_map(|d| d.metadata.name.as_deref())
        .filter_map(|name| store.get(&ObjectRef::new(name).within(namespace)))
        .collect();
    health::check(&rendered.deployments, |name| {
        live.iter()
            .find(|d| d.metadata.name.as_deref() == Some(name))
            .map(|d| d.as_ref())
    })
}

/// The requirement checks' view of the cluster, over the stores.
struct StoreCluster<'a> {
    shared: &'a Shared,
}

fn get<K>(store: &Store<K>, name: &str, namespace: Option<&str>) -> Option<Arc<K>>
where
    K: kube::Resource<DynamicType = ()> + Clone + 'static,
{
    let reference = match namespace {
        Some(ns) => ObjectRef::new(name).within(ns),
        None => ObjectRef::new(name),
    };
    store.get(&reference)
}

impl Cluster for StoreCluster<'_> {
    fn crd(&self, name: &str) -> Option<CrdFacts> {
        let crd = get(&self.shared.stores.csv.crds, name, None)?;
        let conditions = crd
            .status
            .as_ref()
            .and_then(|s| s.conditions.clone())
            .unwrap_or_default();
        let is_true = |t: &str| {
            conditions
                .iter()
                .any(|c| c.type_ == t && c.status == "True")
        };
        Some(CrdFacts {
            uid: crd.metadata.uid.clone().unwrap_or_default(),
            served_versions: crd
                .spec
                .versions
                .iter()
                .filter(|v| v.served)
                .map(|v| v.name.clone())
                .collect(),
            established: is_true("Established"),
            names_accepted: is_true("NamesAccepted"),
        })
    }

    fn server_version(&self) -> Option<String> {
        self.shared.stores.csv.cluster_info.server_version.clone()
    }

    fn has_kind(&self, group: &str, version: &str, kind: &str) -> Option<bool> {
        let kinds = self.shared.stores.csv.cluster_info.kinds.as_ref()?;
        Some(kinds.contains(&(group.to_string(), version.to_string(), kind.to_string())))
    }

    fn api_service_available(&self, name: &str) -> bool {
        get(&self.shared.stores.csv.api_services, name, None)
            .and_then(|a| a.status.clone())
            .and_then(|s| s.conditions)
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c.type_ == "Available" && c.status == "True")
            })
    }

    fn service_account(&self, namespace: &str, name: &str) -> Option<AccountFacts> {
        let sa = get(
            &self.shared.stores.csv.service_accounts,
            name,
            Some(namespace),
        )?;
        let owner_csvs = sa
            .metadata
            .owner_references
            .iter()
            .flatten()
            .filter(|o| o.kind == "ClusterServiceVersion")
            .map(|o| o.name.clone())
            .collect();
        Some(AccountFacts { owner_csvs })
    }

    fn role_hash(&self, namespace: &str, name: &str) -> Option<String> {
        let role = get(&self.shared.stores.csv.roles, name, Some(namespace))?;
        role.metadata
            .labels
            .as_ref()?
            .get(annotations::PERMISSIONS_HASH)
            .cloned()
    }

    fn cluster_role_hash(&self, name: &str) -> Option<String> {
        let role = get(&self.shared.stores.csv.cluster_roles, name, None)?;
        role.metadata
            .labels
            .as_ref()?
            .get(annotations::PERMISSIONS_HASH)
            .cloned()
    }
}
