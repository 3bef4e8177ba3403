//! The I/O of the Operator view: label what belongs to an Operator (reading the stores olm-operator keeps
//! anyway, plus lists of RoleBindings and ClusterRoleBindings, once per kind and view run, and of InstallPlans by
//! label, which it does not watch),
//! then create the Operator or refresh its `status.components`.

use super::adopt;
use super::bindings;
use super::components::{self, Component};
use super::memo::Memo;
use crate::shared::Shared;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::Store;
use kube::{Api, Resource, ResourceExt};
use messages::crd::annotations::operator_component_label;
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::install_plan::InstallPlan;
use messages::crd::operator::{Operator, OperatorSpec, OperatorStatus};
use messages::crd::operator_condition::OperatorCondition;
use messages::crd::subscription::Subscription;
use olm_runtime::error::{self as api_error, Class};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
use std::fmt::Debug;

/// A merge patch touching one label only (`None` removes it).
#[derive(Serialize, Debug)]
struct LabelPatch<'a> {
    metadata: LabelMeta<'a>,
}

#[derive(Serialize, Debug)]
struct LabelMeta<'a> {
    labels: BTreeMap<&'a str, Option<&'a str>>,
}

/// A merge patch of an Operator's status.
#[derive(Serialize, Debug)]
struct StatusPatch<'a> {
    status: &'a OperatorStatus,
}

async fn set_label<K>(api: &Api<K>, name: &str, key: &str, value: Option<&str>) -> kube::Result<()>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let patch = LabelPatch {
        metadata: LabelMeta {
            labels: BTreeMap::from([(key, value)]),
        },
    };
    match api
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if api_error::is(&e, Class::NotFound) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Label the Subscription, its installed CSV and its current InstallPlan; take the label off its older
/// InstallPlans. Returns the Operator's name.
pub async fn adopt_subscription(
    shared: &Shared,
    sub: &Subscription,
    memo: &mut Memo,
) -> kube::Result<Option<String>> {
    let (Some(operator), Some(namespace)) =
        (adopt::operator_of(sub), sub.metadata.namespace.as_deref())
    else {
        return Ok(None);
    };
    let key = operator_component_label(&operator);
    let client = &shared.client;
    if !adopt::is_labelled(&sub.metadata, &operator) {
        set_label(
            &Api::<Subscription>::namespaced(client.clone(), namespace),
            &sub.name_any(),
            &key,
            Some(""),
        )
        .await?;
    }
    let status = sub.status.as_ref();
    if let Some(installed) = status
        .map(|s| s.installed_csv.as_str())
        .filter(|n| !n.is_empty())
    {
        let csv = shared.stores.csvs.get().and_then(|s| {
            s.get(&kube::runtime::reflector::ObjectRef::new(installed).within(namespace))
        });
        if csv.is_some_and(|c| !adopt::is_labelled(&c.metadata, &operator) && !adopt::is_copy(&c)) {
            set_label(
                &Api::<ClusterServiceVersion>::namespaced(client.clone(), namespace),
                installed,
                &key,
                Some(""),
            )
            .await?;
        }
    }
    let sub_key = messages::key::ObjectKey::new(namespace, sub.name_any());
    if let Some(current) = status
        .and_then(|s| s.install_plan_ref.as_ref())
        .and_then(|r| r.name.clone())
        .filter(|plan| memo.plan_changed(&sub_key, plan))
    {
        let plans = Api::<InstallPlan>::namespaced(client.clone(), namespace);
        let labelled = plans
            .list_metadata(&ListParams::default().labels(&key))
            .await?;
        // catalog-operator labels a plan when it creates it (issue 19): only an unlabelled one is patched.
        if !labelled
            .items
            .iter()
            .any(|p| p.metadata.name.as_deref() == Some(current.as_str()))
        {
            set_label(&plans, &current, &key, Some("")).await?;
        }
        for older in labelled
            .items
            .iter()
            .filter_map(|p| p.metadata.name.as_deref())
            .filter(|n| *n != current)
        {
            set_label(&plans, older, &key, None).await?;
        }
    }
    Ok(Some(operator))
}

fn from_store<K>(store: Option<&Store<K>>, pred: impl Fn(&K) -> bool) -> Vec<std::sync::Arc<K>>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    store
        .map(|s| s.state().into_iter().filter(|o| pred(o)).collect())
        .unwrap_or_default()
}

/// The metadata of every object of kind `K` in the cluster (one list).
async fn metadata_of_all<K>(client: &kube::Client) -> kube::Result<Vec<ObjectMeta>>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    Ok(Api::<K>::all(client.clone())
        .list_metadata(&ListParams::default())
        .await?
        .items
        .into_iter()
        .map(|o| o.metadata)
        .collect())
}

/// The RBAC bindings one view run lists, once per kind, for every Operator it adopts for.
#[derive(Debug, Default)]
pub struct RunLists {
    pub role_bindings: bindings::Listed,
    pub cluster_role_bindings: bindings::Listed,
}

/// Label what the Operator's labelled CSVs own (objects in the stores, RBAC bindings listed, owned CRDs).
pub async fn adopt_owned(
    shared: &Shared,
    operator: &str,
    memo: &mut Memo,
    run: &mut RunLists,
) -> kube::Result<()> {
    let key = operator_component_label(operator);
    let client = &shared.client;
    let csvs = from_store(shared.stores.csvs.get(), |c| {
        adopt::is_labelled(&c.metadata, operator) && !adopt::is_copy(c)
    });
    let s = &shared.stores.csv;
    for csv in &csvs {
        let Some(namespace) = csv.metadata.namespace.as_deref() else {
            continue;
        };
        let phase = csv
            .status
            .as_ref()
            .map(|s| s.phase.as_str().to_owned())
            .unwrap_or_default();
        if !memo.phase_changed(csv.metadata.uid.as_deref().unwrap_or_default(), &phase) {
            continue;
        }
        memo.forget_bindings(operator);
        let wants = |m: &ObjectMeta| !adopt::is_labelled(m, operator) && adopt::owned_by(m, csv);
        for d in from_store(s.deployments.get(), |o: &Deployment| wants(&o.metadata)) {
            set_label(
                &Api::<Deployment>::namespaced(client.clone(), namespace),
                &d.name_any(),
                &key,
                Some(""),
            )
            .await?;
        }
        for a in from_store(s.service_accounts.get(), |o: &ServiceAccount| {
            wants(&o.metadata)
        }) {
            set_label(
                &Api::<ServiceAccount>::namespaced(client.clone(), namespace),
                &a.name_any(),
                &key,
                Some(""),
            )
            .await?;
        }
        for r in from_store(s.roles.get(), |o: &Role| wants(&o.metadata)) {
            let ns = r.namespace().unwrap_or_default();
            set_label(
                &Api::<Role>::namespaced(client.clone(), &ns),
                &r.name_any(),
                &key,
                Some(""),
            )
            .await?;
        }
        for r in from_store(s.cluster_roles.get(), |o: &ClusterRole| wants(&o.metadata)) {
            set_label(
                &Api::<ClusterRole>::all(client.clone()),
                &r.name_any(),
                &key,
                Some(""),
            )
            .await?;
        }
        for r in from_store(s.served.services.get(), |o: &Service| wants(&o.metadata)) {
            set_label(
                &Api::<Service>::namespaced(client.clone(), namespace),
                &r.name_any(),
                &key,
                Some(""),
            )
            .await?;
        }
        for r in from_store(s.api_services.get(), |o: &APIService| wants(&o.metadata)) {
            set_label(
                &Api::<APIService>::all(client.clone()),
                &r.name_any(),
                &key,
                Some(""),
            )
            .await?;
        }
        for r in from_store(s.operator_conditions.get(), |o: &OperatorCondition| {
            wants(&o.metadata)
        }) {
            set_label(
                &Api::<OperatorCondition>::namespaced(client.clone(), namespace),
                &r.name_any(),
                &key,
                Some(""),
            )
            .await?;
        }
        // One list per binding kind and run adopts and gathers at once (`bindings.rs`).
        let listed = run
            .role_bindings
            .get(|| metadata_of_all::<RoleBinding>(client))
            .await?;
        let role_bindings = bindings::split(listed, operator, csv);
        for b in &role_bindings.to_label {
            let ns = b.namespace.as_deref().unwrap_or_default();
            set_label(
                &Api::<RoleBinding>::namespaced(client.clone(), ns),
                &b.name,
                &key,
                Some(""),
            )
            .await?;
            run.role_bindings.labelled(b, &key);
        }
        let listed = run
            .cluster_role_bindings
            .get(|| metadata_of_all::<ClusterRoleBinding>(client))
            .await?;
        let cluster_bindings = bindings::split(listed, operator, csv);
        for b in &cluster_bindings.to_label {
            set_label(
                &Api::<ClusterRoleBinding>::all(client.clone()),
                &b.name,
                &key,
                Some(""),
            )
            .await?;
            run.cluster_role_bindings.labelled(b, &key);
        }
        memo.set_bindings(
            operator,
            bindings::components(&role_bindings.labelled, &cluster_bindings.labelled),
        );
        let owned_crds = adopt::owned_crds(csv);
        for crd in from_store(s.crds.get(), |c: &CustomResourceDefinition| {
            owned_crds.contains(&c.name_any()) && !adopt::is_labelled(&c.metadata, operator)
        }) {
            set_label(
                &Api::<CustomResourceDefinition>::all(client.clone()),
                &crd.name_any(),
                &key,
                Some(""),
            )
            .await?;
        }
    }
    Ok(())
}

fn component<K>(
    obj: &K,
    conditions: Vec<messages::crd::operator::OperatorComponentCondition>,
) -> Component
where
    K: Resource<DynamicType = ()>,
{
    Component {
        api_version: K::api_version(&()).into_owned(),
        kind: K::kind(&()).into_owned(),
        namespace: obj.meta().namespace.clone(),
        name: obj.meta().name.clone().unwrap_or_default(),
        conditions,
    }
}

fn labelled<K>(
    store: Option<&Store<K>>,
    operator: &str,
    with_conditions: bool,
    out: &mut Vec<Component>,
) where
    K: Resource<DynamicType = ()> + Clone + Serialize + 'static,
{
    for o in from_store(store, |o: &K| adopt::is_labelled(o.meta(), operator)) {
        let conditions = if with_conditions {
            let value = serde_json::to_value(o.as_ref()).ok();
            components::generic_conditions(value.as_ref().and_then(|v| v.get("status")))
        } else {
            Vec::new()
        };
        out.push(component(o.as_ref(), conditions));
    }
}

/// Every object carrying the Operator's label.
pub async fn gather(
    shared: &Shared,
    operator: &str,
    memo: &mut Memo,
) -> kube::Result<Vec<Component>> {
    let key = operator_component_label(operator);
    let s = &shared.stores.csv;
    let mut out = Vec::new();
    for csv in from_store(shared.stores.csvs.get(), |c| {
        adopt::is_labelled(&c.metadata, operator) && !adopt::is_copy(c)
    }) {
        out.push(component(
            csv.as_ref(),
            components::csv_conditions(csv.status.as_ref()),
        ));
    }
    labelled::<Deployment>(s.deployments.get(), operator, true, &mut out);
    labelled::<Namespace>(shared.stores.namespaces.get(), operator, true, &mut out);
    labelled::<Service>(s.served.services.get(), operator, true, &mut out);
    labelled::<APIService>(s.api_services.get(), operator, true, &mut out);
    labelled::<CustomResourceDefinition>(s.crds.get(), operator, true, &mut out);
    labelled::<Subscription>(s.subscriptions.get(), operator, true, &mut out);
    labelled::<OperatorCondition>(s.operator_conditions.get(), operator, true, &mut out);
    labelled::<ServiceAccount>(s.service_accounts.get(), operator, false, &mut out);
    labelled::<Role>(s.roles.get(), operator, false, &mut out);
    labelled::<ClusterRole>(s.cluster_roles.get(), operator, false, &mut out);
    // The labelled InstallPlans are the current plans of the labelled Subscriptions (older ones lose the label).
    for sub in from_store(s.subscriptions.get(), |o: &Subscription| {
        adopt::is_labelled(&o.metadata, operator)
    }) {
        if let Some(plan) = sub
            .status
            .as_ref()
            .and_then(|st| st.install_plan_ref.as_ref())
            .and_then(|r| r.name.clone())
        {
            out.push(Component {
                api_version: InstallPlan::api_version(&()).into_owned(),
                kind: InstallPlan::kind(&()).into_owned(),
                namespace: sub.metadata.namespace.clone(),
                name: plan,
                conditions: Vec::new(),
            });
        }
    }
    if memo.bindings(operator).is_none() {
        let by_label = ListParams::default().labels(&key);
        let mut bindings = Vec::new();
        for b in Api::<RoleBinding>::all(shared.client.clone())
            .list_metadata(&by_label)
            .await?
            .items
        {
            bindings.push(Component {
                api_version: RoleBinding::api_version(&()).into_owned(),
                kind: RoleBinding::kind(&()).into_owned(),
                namespace: b.metadata.namespace.clone(),
                name: b.name_any(),
                conditions: Vec::new(),
            });
        }
        for b in Api::<ClusterRoleBinding>::all(shared.client.clone())
            .list_metadata(&by_label)
            .await?
            .items
        {
            bindings.push(Component {
                api_version: ClusterRoleBinding::api_version(&()).into_owned(),
                kind: ClusterRoleBinding::kind(&()).into_owned(),
                namespace: None,
                name: b.name_any(),
                conditions: Vec::new(),
            });
        }
        memo.set_bindings(operator, bindings);
    }
    out.extend(memo.bindings(operator).cloned().unwrap_or_default());
    Ok(out)
}

/// Create the Operator when objects carry its label and it does not exist; refresh its status when it differs.
pub async fn refresh(
    shared: &Shared,
    operator: &str,
    existing: Option<&Operator>,
    memo: &mut Memo,
) -> kube::Result<()> {
    let found = gather(shared, operator, memo).await?;
    let api = Api::<Operator>::all(shared.client.clone());
    let status = components::status(operator, found);
    let current = match existing {
        Some(o) => o.clone(),
        None => {
            if status.components.as_ref().is_none_or(|c| c.refs.is_empty()) {
                return Ok(());
            }
            let fresh = Operator {
                metadata: ObjectMeta {
                    name: Some(operator.to_owned()),
                    ..Default::default()
                },
                spec: OperatorSpec {},
                status: None,
            };
            match api.create(&PostParams::default(), &fresh).await {
                Ok(created) => created,
                Err(e) if api_error::is(&e, Class::AlreadyExists) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    };
    if current.status.as_ref() != Some(&status) {
        api.patch_status(
            operator,
            &PatchParams::default(),
            &Patch::Merge(&StatusPatch { status: &status }),
        )
        .await?;
    }
    Ok(())
}
