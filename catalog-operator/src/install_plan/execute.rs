//! Executing an InstallPlan's steps in order (OLM `ExecutePlan`, spec §4.4): create each object (CRDs wait
//! for Established), update what exists (CSVs, Subscriptions and Secrets are left as they are), check CRD
//! upgrades (§4.6), label everything `olm.managed=true`, and give namespaced bundle objects an owner
//! reference to the CSV they belong to. A step whose API the cluster does not serve fails with OLM's not-found
//! message ([`not_served`]); each step goes through the API OLM would use ([`step_kinds::applied_gvk`]).

use super::crd_version::{self, CrdApi, CrdStep};
use super::machine::Executed;
use super::{
    crd_owners, crd_safety, group_annotations, not_served, operator_label, owner_refs, step_kinds,
};
use crate::error::error_text;
use crate::steps::GENERATED_BY;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use messages::crd::install_plan::{Step, StepStatus};
use olm_runtime::error::{self as api_error, Class};
use serde_json::Value;
use std::collections::HashMap;
use tracing::Instrument;

/// Kinds an InstallPlan may create (OLM's list); anything else is `UnsupportedResource`.
pub const SUPPORTED: &[&str] = &[
    "ClusterServiceVersion",
    "CustomResourceDefinition",
    "Subscription",
    "BundleSecret",
    "Secret",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "ServiceAccount",
    "Service",
    "ConfigMap",
    "PrometheusRule",
    "ServiceMonitor",
    "PodDisruptionBudget",
    "PriorityClass",
    "VerticalPodAutoscaler",
    "ConsoleYAMLSample",
    "ConsoleQuickStart",
    "ConsoleCLIDownload",
    "ConsoleLink",
    "ConsolePlugin",
    "NetworkPolicy",
];

use crate::kinds::Kinds;

/// What one plan's execution needs.
pub struct Context<'a> {
    /// The operator's own client: discovery, CRD steps and their checks, and reads (OLM's builder and listers).
    pub client: &'a Client,
    /// The client every other step is applied with: the OperatorGroup's service account, or the operator
    /// ([`super::scoped`]).
    pub applier: &'a Client,
    pub kinds: &'a Kinds,
    pub namespace: &'a str,
    pub plan_name: &'a str,
    /// The plan's `spec.clusterServiceVersionNames`.
    pub plan_csvs: &'a [String],
    /// Who owns which CRD in the namespace before this pass.
    pub crd_owners: &'a crd_owners::Owners,
    /// OLM's `installplan_warnings_total`: API warnings drawn by applied objects.
    pub warnings: &'a prometheus::IntCounter,
    /// Where the objects of image bundles are read from ([`super::bundle_objects`]).
    pub shared: &'a crate::shared::Shared,
}

fn is_established(crd: &Value) -> bool {
    let conds = crd["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let ok = |t: &str| {
        conds
            .iter()
            .any(|c| c["type"] == t && c["status"] == "True")
    };
    ok("Established") && ok("NamesAccepted")
}

fn forbidden(e: &kube::Error) -> bool {
    api_error::is(e, Class::Forbidden)
}

struct StepError {
    message: String,
    forbidden: bool,
    /// The API server's own message of a 403 (who may not do what, where).
    denial: Option<String>,
}

impl StepError {
    /// A step the applying identity may not perform reads as OLM's ensurers put it: `error creating <kind>
    /// <name>: <the API server's forbidden message>`.
    fn denied(self, verb: &str, kind: &str, name: &str) -> Self {
        match &self.denial {
            Some(denial) => StepError {
                message: format!("error {verb} {kind} {name}: {denial}"),
                ..self
            },
            None => self,
        }
    }

    /// Any other refusal of a step's object names the bundle it came from and the object, before the API
    /// server's own message (which names the field).
    fn of_bundle(self, bundle: &str, verb: &str, kind: &str, name: &str) -> Self {
        if self.denial.is_some() {
            return self;
        }
        StepError {
            message: format!(
                "bundle {bundle}: error {verb} {kind} {name}: {}",
                self.message
            ),
            ..self
        }
    }
}

impl From<kube::Error> for StepError {
    fn from(e: kube::Error) -> Self {
        StepError {
            forbidden: forbidden(&e),
            denial: match &e {
                kube::Error::Api(s) if api_error::classify_status(s) == Class::Forbidden => {
                    Some(s.message.clone())
                }
                _ => None,
            },
            message: error_text(&e),
        }
    }
}

fn fail(message: impl Into<String>) -> StepError {
    StepError {
        message: message.into(),
        forbidden: false,
        denial: None,
    }
}

/// Run every step that is not done yet, in order; returns the steps with their new statuses.
///
/// Unlike OLM, the CRD upgrade checks (§4.6) of every pending CRD step run before any step is applied, so a
/// plan that fails them creates nothing: OLM creates the CSV (ordered first) and then fails on its CRD,
/// leaving a new CSV beside the old one that the next resolution cannot get past.
pub async fn execute(cx: &Context<'_>, stored: Vec<Step>) -> (Vec<Step>, Executed) {
    let steps = match super::bundle_objects::materialize(cx.shared, cx.namespace, &stored).await {
        Ok(steps) => steps,
        Err(message) => {
            return (
                stored,
                Executed::Error {
                    message,
                    forbidden: false,
                },
            );
        }
    };
    let (executed, result) = execute_objects(cx, steps).await;
    (
        super::bundle_objects::keep_statuses(stored, &executed),
        result,
    )
}

/// [`execute`] on steps that carry their objects.
async fn execute_objects(cx: &Context<'_>, mut steps: Vec<Step>) -> (Vec<Step>, Executed) {
    if let Err(e) = preflight(cx, &steps).await {
        return (
            steps,
            Executed::Error {
                message: e.message,
                forbidden: e.forbidden,
            },
        );
    }
    let mut waiting = false;
    let mut csv_uids: HashMap<String, String> = HashMap::new();
    let operators = operator_label::by_csv(&steps, cx.namespace);
    for i in 0..steps.len() {
        let step = steps[i].clone();
        let span = super::step_span::span(cx.namespace, cx.plan_name, &step);
        let r = match (step.resource.kind.as_str(), &step.status) {
            ("CustomResourceDefinition", StepStatus::WaitingForApi) => {
                crd_ready(cx, &step).instrument(span.clone()).await
            }
            (_, StepStatus::Unknown | StepStatus::NotPresent) => {
                let (r, warnings) = olm_runtime::api_metrics::count_warnings(
                    apply(cx, &step, &mut csv_uids, operators.get(&step.resolving))
                        .instrument(span.clone()),
                )
                .await;
                warned(cx, &step, warnings);
                r
            }
            (_, other) => Ok(other.clone()),
        };
        super::step_span::finish(&span, r.as_ref().map_err(|e| e.message.as_str()));
        match r {
            Ok(status) => {
                waiting |= status == StepStatus::WaitingForApi;
                steps[i].status = status;
            }
            Err(e) => {
                if !SUPPORTED.contains(&step.resource.kind.as_str()) {
                    steps[i].status = StepStatus::UnsupportedResource;
                }
                return (
                    steps,
                    Executed::Error {
                        message: e.message,
                        forbidden: e.forbidden,
                    },
                );
            }
        }
    }
    (
        steps,
        if waiting {
            Executed::Waiting
        } else {
            Executed::Done
        },
    )
}

/// The CRD steps not applied yet: each one's apiextensions version must be served and readable
/// ([`crd_version`]; a v1beta1 CRD on Kubernetes ≥1.22 is refused here, so the plan creates nothing, where OLM
/// creates the CSV first and then fails on the CRD), then the upgrade checks of those whose CRD exists already.
async fn preflight(cx: &Context<'_>, steps: &[Step]) -> Result<(), StepError> {
    let pending: Vec<&Step> = steps
        .iter()
        .filter(|s| {
            s.resource.kind == "CustomResourceDefinition"
                && matches!(s.status, StepStatus::Unknown | StepStatus::NotPresent)
        })
        .collect();
    let mut v1beta1_served = None;
    for step in &pending {
        let served = match (crd_version::is_v1beta1(step), v1beta1_served) {
            (false, _) => false,
            (true, Some(known)) => known,
            (true, None) => {
                let known = serves_v1beta1_crds(cx).await?;
                v1beta1_served = Some(known);
                known
            }
        };
        if let CrdStep::Refuse(message) = crd_version::decide(step, served) {
            return Err(fail(message));
        }
    }
    for step in pending {
        let api = crd_api(cx).await?;
        let Some(existing) = api.get_opt(&step.resource.name).await? else {
            continue;
        };
        let new: Value = serde_json::from_str(&step.resource.manifest).map_err(|e| {
            fail(format!(
                "the InstallPlan contains invalid data: step {}: {e}",
                step.resource.name
            ))
        })?;
        let old = serde_json::to_value(&existing).unwrap_or_default();
        check_crd_upgrade(cx, &step.resource.name, &old, &new).await?;
    }
    Ok(())
}

/// Whether discovery lists `apiextensions.k8s.io/v1beta1` CustomResourceDefinitions (Kubernetes < 1.22).
async fn serves_v1beta1_crds(cx: &Context<'_>) -> Result<bool, StepError> {
    match cx
        .kinds
        .resolve(
            cx.client,
            "apiextensions.k8s.io",
            CrdApi::V1Beta1.version(),
            "CustomResourceDefinition",
        )
        .await
    {
        Ok(_) => Ok(true),
        Err(e) if not_served::is_not_served(&e) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// The CustomResourceDefinitions API (apiextensions.k8s.io/v1), resolved through the kinds cache.
async fn crd_api(cx: &Context<'_>) -> Result<Api<DynamicObject>, StepError> {
    let (ar, _) = cx
        .kinds
        .resolve(
            cx.client,
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
        )
        .await?;
    Ok(Api::all_with(cx.client.clone(), &ar))
}

async fn crd_ready(cx: &Context<'_>, step: &Step) -> Result<StepStatus, StepError> {
    let api = crd_api(cx).await?;
    let crd = api.get(&step.resource.name).await?;
    let v = serde_json::to_value(&crd).unwrap_or_default();
    Ok(if is_established(&v) {
        StepStatus::Created
    } else {
        StepStatus::WaitingForApi
    })
}

async fn csv_uid(
    cx: &Context<'_>,
    name: &str,
    cache: &mut HashMap<String, String>,
) -> Result<String, StepError> {
    if let Some(uid) = cache.get(name) {
        return Ok(uid.clone());
    }
    let api: Api<messages::crd::csv::ClusterServiceVersion> =
        Api::namespaced(cx.client.clone(), cx.namespace);
    let csv = api.get_opt(name).await?.ok_or_else(|| {
        fail(format!(
            "the ClusterServiceVersion {name} this object belongs to does not exist"
        ))
    })?;
    let uid = csv.metadata.uid.unwrap_or_default();
    cache.insert(name.to_string(), uid.clone());
    Ok(uid)
}

/// Count and announce the API warnings applying `step` drew.
fn warned(cx: &Context<'_>, step: &Step, warnings: u64) {
    if warnings == 0 {
        return;
    }
    cx.warnings.inc_by(warnings);
    tracing::warn!(plan = cx.plan_name, namespace = cx.namespace, kind = %step.resource.kind, name = %step.resource.name, warnings, "applied with warnings");
    crate::events::publish(
        cx.client,
        crate::events::applied_with_warnings(&step.resource.kind, &step.resource.name, warnings),
        crate::events::olm_ref("InstallPlan", cx.namespace, cx.plan_name, None),
    );
}

fn merge_map(obj: &mut Value, field: &str, entries: &[(&str, &str)]) {
    let meta = &mut obj["metadata"];
    if !meta[field].is_object() {
        meta[field] = Value::Object(Default::default());
    }
    for (k, v) in entries {
        meta[field][*k] = Value::String((*v).to_string());
    }
}

async fn apply(
    cx: &Context<'_>,
    step: &Step,
    csv_uids: &mut HashMap<String, String>,
    operator: Option<&String>,
) -> Result<StepStatus, StepError> {
    let kind = step.resource.kind.as_str();
    if !SUPPORTED.contains(&kind) {
        return Err(fail(format!(
            "the InstallPlan contains invalid data: unsupported kind {kind}"
        )));
    }
    let mut obj: Value = serde_json::from_str(&step.resource.manifest).map_err(|e| {
        fail(format!(
            "the InstallPlan contains invalid data: step {}: {e}",
            step.resource.name
        ))
    })?;
    let (group, version, kind) = step_kinds::applied_gvk(step, &obj).map_err(fail)?;
    obj["kind"] = Value::String(kind.clone());
    obj["apiVersion"] = Value::String(if group.is_empty() {
        version.clone()
    } else {
        format!("{group}/{version}")
    });
    let (ar, namespaced) = match cx.kinds.resolve(cx.client, &group, &version, &kind).await {
        Ok(hit) => hit,
        // OLM `not_found.go`: a kind discovery does not serve fails the pass with its not-found message.
        Err(e) if not_served::is_not_served(&e) => {
            return Err(fail(not_served::message(step, &group, &version)));
        }
        Err(e) => return Err(e.into()),
    };
    merge_map(&mut obj, "labels", &[("olm.managed", "true")]);
    if let Some(key) = operator {
        // The Operator label from the start, not patched on by the Operator view later (`operator_label`).
        merge_map(&mut obj, "labels", &[(key.as_str(), "")]);
    }
    if namespaced {
        obj["metadata"]["namespace"] = Value::String(cx.namespace.to_string());
    }
    match kind.as_str() {
        "ClusterServiceVersion" => {
            let name = step.resource.name.as_str();
            let owned = crd_owners::owned_crds(&obj);
            if let Some(message) =
                crd_owners::competing(name, &owned, cx.plan_csvs, cx.crd_owners, cx.namespace)
            {
                return Err(fail(message));
            }
            // The group annotations olm-operator would patch on first (`group_annotations`).
            if let Some(wanted) = group_annotations::of(&cx.shared.operator_groups(), cx.namespace)
            {
                let entries: Vec<(&str, &str)> =
                    wanted.iter().map(|(k, v)| (*k, v.as_str())).collect();
                merge_map(&mut obj, "annotations", &entries);
            }
        }
        "CustomResourceDefinition" => {}
        "Subscription" => merge_map(&mut obj, "annotations", &[(GENERATED_BY, cx.plan_name)]),
        _ if namespaced => {
            let uid = csv_uid(cx, &step.resolving, csv_uids).await?;
            let owner = serde_json::to_value(OwnerReference {
                api_version: "operators.coreos.com/v1alpha1".into(),
                kind: "ClusterServiceVersion".into(),
                name: step.resolving.clone(),
                uid,
                controller: Some(false),
                block_owner_deletion: Some(false),
            })
            .unwrap_or_default();
            let refs = obj["metadata"]["ownerReferences"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            for name in owner_refs::csv_owner_names(&refs) {
                csv_uid(cx, &name, csv_uids).await?;
            }
            obj["metadata"]["ownerReferences"] =
                Value::Array(owner_refs::owner_references(&refs, owner, csv_uids));
        }
        _ => merge_map(
            &mut obj,
            "labels",
            &[
                ("olm.owner", &step.resolving),
                ("olm.owner.namespace", cx.namespace),
                ("olm.owner.kind", "ClusterServiceVersion"),
            ],
        ),
    }
    // As OLM: CRDs with the operator's own client, everything else with the group's account (if any).
    let client = match kind.as_str() {
        "CustomResourceDefinition" => cx.client,
        _ => cx.applier,
    };
    let api: Api<DynamicObject> = if namespaced {
        Api::namespaced_with(client.clone(), cx.namespace, &ar)
    } else {
        Api::all_with(client.clone(), &ar)
    };
    let name = step.resource.name.as_str();
    // Plans written before their objects were read with Go's rules (`crate::bundle_content`) still hold the
    // bundle's own metadata: `createdAt:` with no value is an empty annotation, as OLM sends it.
    let obj = messages::go_json::normalize_metadata(&obj).map_err(|e| {
        fail(format!(
            "the InstallPlan contains invalid data: bundle {}, {kind} {name}, field {e}",
            step.resolving
        ))
    })?;
    let dynamic: DynamicObject = serde_json::from_value(obj.clone()).map_err(|e| {
        fail(format!(
            "the InstallPlan contains invalid data: bundle {}, {kind} {name}: {e}",
            step.resolving
        ))
    })?;
    match api.create(&PostParams::default(), &dynamic).await {
        Ok(_) if kind == "CustomResourceDefinition" => Ok(StepStatus::WaitingForApi),
        Ok(created) => {
            // The CSV's uid, for the owner references of the steps after it, without reading it back.
            if let ("ClusterServiceVersion", Some(uid)) = (kind.as_str(), created.metadata.uid) {
                csv_uids.insert(name.to_string(), uid);
            }
            Ok(StepStatus::Created)
        }
        // `AlreadyExists`, not any 409: a create answered `409 Conflict` wrote nothing, and calling its step
        // Present failed the plan on its next steps (found by the chaos runs' API fault proxy).
        Err(e) if api_error::is(&e, Class::AlreadyExists) => {
            update_existing(cx, &api, &kind, name, obj)
                .await
                .map_err(|e| {
                    e.denied("updating", &kind, name).of_bundle(
                        &step.resolving,
                        "updating",
                        &kind,
                        name,
                    )
                })
        }
        Err(e) => Err(StepError::from(e)
            .denied("creating", &kind, name)
            .of_bundle(&step.resolving, "creating", &kind, name)),
    }
}

async fn update_existing(
    cx: &Context<'_>,
    api: &Api<DynamicObject>,
    kind: &str,
    name: &str,
    obj: Value,
) -> Result<StepStatus, StepError> {
    match kind {
        "ClusterServiceVersion" | "Subscription" | "Secret" => Ok(StepStatus::Present),
        "CustomResourceDefinition" => {
            let existing = serde_json::to_value(api.get(name).await?).unwrap_or_default();
            check_crd_upgrade(cx, name, &existing, &obj).await?;
            let mut new = obj;
            new["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"].clone();
            let dynamic: DynamicObject =
                serde_json::from_value(new).map_err(|e| fail(e.to_string()))?;
            api.replace(name, &PostParams::default(), &dynamic).await?;
            Ok(StepStatus::Present)
        }
        "ServiceAccount" => {
            // Only our labels and owner references: the account's secrets and tokens are not ours to touch.
            let meta: ObjectMeta =
                serde_json::from_value(obj["metadata"].clone()).unwrap_or_default();
            let patch = ServiceAccount {
                metadata: ObjectMeta {
                    labels: meta.labels,
                    owner_references: meta.owner_references,
                    ..ObjectMeta::default()
                },
                ..ServiceAccount::default()
            };
            api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
            Ok(StepStatus::Present)
        }
        _ => {
            api.patch(name, &PatchParams::default(), &Patch::Merge(&obj))
                .await?;
            Ok(StepStatus::Present)
        }
    }
}

/// The CRD-upgrade check (§4.6) of `old` (the CRD as the API server returned it) against `new` (the bundle's):
/// no stored version dropped, and every existing custom resource valid under the new schema. The resources
/// listed are the ones `old` names: the bundle's `spec.group` and `spec.names` are not validated before the
/// replace, and must not choose what catalog-operator lists or grants itself (self_grant.rs). A list grant made
/// for the check is revoked when the check ends, whatever it found.
async fn check_crd_upgrade(
    cx: &Context<'_>,
    name: &str,
    old: &Value,
    new: &Value,
) -> Result<(), StepError> {
    if let Some(message) = crd_safety::data_loss(name, old, new) {
        return Err(fail(message));
    }
    let served = crate::self_grant::crd_ref_from_server(old).map_err(fail)?;
    let mut granted = false;
    let result = validate_existing(cx, name, &served, old, new, &mut granted).await;
    if granted {
        crate::self_grant::revoke_cr_list(
            cx.client,
            cx.shared.process.self_grantee.as_ref(),
            &served,
        )
        .await;
    }
    result
}

/// List the custom resources of every version both CRDs keep (granting catalog-operator the list on a Forbidden
/// answer; `granted` says whether it did) and validate each against the new schema.
async fn validate_existing(
    cx: &Context<'_>,
    name: &str,
    served: &crate::self_grant::CrdRef<'_>,
    old: &Value,
    new: &Value,
    granted: &mut bool,
) -> Result<(), StepError> {
    let kind = old["spec"]["names"]["kind"].as_str().unwrap_or_default();
    // The schema's patterns, compiled once for this CRD's resources.
    let patterns = super::crd_schema::Patterns::default();
    for (version, schema) in crd_safety::kept_versions(old, new) {
        let ar = ApiResource {
            group: served.group.to_string(),
            version: version.clone(),
            api_version: format!("{}/{version}", served.group),
            kind: kind.to_string(),
            plural: served.plural.to_string(),
        };
        let api: Api<DynamicObject> = Api::all_with(cx.client.clone(), &ar);
        let mut listed = api.list(&ListParams::default()).await;
        if matches!(&listed, Err(e) if api_error::is(e, Class::Forbidden)) {
            // deploy/rbac lists no custom resources: catalog-operator grants itself this CRD's (self_grant.rs).
            if !*granted {
                *granted = crate::self_grant::grant_cr_list(
                    cx.client,
                    cx.shared.process.self_grantee.as_ref(),
                    served,
                )
                .await;
            }
            if *granted {
                let params = ListParams::default();
                listed = crate::self_grant::after_grant(|| api.list(&params)).await;
            }
        }
        let list = match listed {
            Ok(l) => l,
            Err(e) if api_error::is(&e, Class::NotFound) => continue,
            Err(e) => return Err(e.into()),
        };
        for cr in list.items {
            let v = serde_json::to_value(&cr).unwrap_or_default();
            if let Some(problem) = crd_safety::validate(&patterns, schema, &v, "") {
                let cr_name = format!(
                    "{}/{}",
                    cr.metadata.namespace.unwrap_or_default(),
                    cr.metadata.name.unwrap_or_default()
                );
                let message = crd_safety::invalid_cr_message(name, &cr_name, &problem);
                if crd_safety::webhook_conversion_excuses(new) {
                    // §4.6: the webhook converts existing resources; OLM proceeds with a CRDValidation warning.
                    tracing::warn!(plan = cx.plan_name, namespace = cx.namespace, crd = name, %message, "CRDValidation: proceeding, the new CRD converts through a webhook");
                    crate::events::publish(
                        cx.client,
                        crate::events::crd_validation(&message),
                        crate::events::olm_ref("InstallPlan", cx.namespace, cx.plan_name, None),
                    );
                    break;
                }
                return Err(fail(message));
            }
        }
    }
    Ok(())
}
