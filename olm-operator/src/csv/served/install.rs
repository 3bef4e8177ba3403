//! The I/O of webhooks and API services, run inside the `Install` effect: [`prepare`] before the
//! deployments are written (Service, Secret issued or reused, secret Role/RoleBinding, auth-delegator and
//! auth-reader bindings, cert volumes and `olmcahash` on the deployments), [`register`] after them (webhook
//! configurations, CRD conversion, APIServices, configurations of descriptions the CSV dropped deleted). What a gone CSV leaves
//! (cluster-scoped objects by owner labels; conversion CRDs back to `None`) is the janitor's (`crate::janitor`).
//! Services, the Secrets' RBAC, webhook configurations and APIServices are server-side applied
//! (`crate::apply`); a Secret is created or replaced at the version inspected, a CRD's conversion replaced on
//! the CRD read (docs/applying-objects.md).
//!
//! A rotation never leaves a pod serving with a CA the API server does not trust ([`with_certs`],
//! `bundle.rs`): the CA bundles trust the new CA beside the previous one before the new pair is written to
//! the Secret (which running pods may pick up) and before the deployment rolls; [`settle`] (the
//! `SettleCaBundles` effect) drops the previous CA once the rollout settled.

use super::api_services::{self, Owners};
use super::bundle::{self, Keep};
use super::certs::{self, CA_KEY, Lifetime, Verdict};
use super::objects::{self, KUBE_SYSTEM, Owner};
use super::plan;
use super::webhooks;
use crate::apply::post_params;
use crate::csv::apply_object::apply_object;
use crate::error::Error;
use crate::shared::Shared;
use crate::strategy::Rendered;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::rbac::v1::RoleBinding;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{DeleteParams, ListParams};
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Client, Resource};
use messages::crd::csv::{ClusterServiceVersion, WebhookAdmissionType};
use olm_runtime::error::{self as api_error, Class};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
use std::fmt::Debug;

/// The rendered strategy with certificates mounted, and the CA each serving deployment trusts.
pub struct Prepared {
    pub rendered: Rendered,
    /// Deployment name → CA PEM.
    pub cas: BTreeMap<String, String>,
    /// When the certificates are due for rotation (unix seconds; the earliest of all), if any serve.
    pub rotate_at: Option<i64>,
    /// A pair was issued in this install (OLM's `CertsRotated`: the CSV's `certsLastUpdated` moves).
    pub issued: bool,
    /// The Secrets of the pairs issued, written by [`with_certs`] once the CA bundles trust their CAs.
    pub secrets: Vec<Secret>,
    /// An issued pair replaces a stored one (a rotation: pods may be serving with the previous CA).
    pub rotating: bool,
}

fn apply_err(
    verb: &'static str,
    kind: &'static str,
    name: impl Into<String>,
) -> impl FnOnce(kube::Error) -> Error {
    let name = name.into();
    move |source| Error::Apply {
        verb,
        kind,
        name,
        source,
    }
}

/// Everything the deployments need before they are written.
pub async fn prepare(
    client: &Client,
    shared: &Shared,
    csv: &ClusterServiceVersion,
    rendered: &Rendered,
    now: i64,
) -> Result<Prepared, Error> {
    let mut out = Prepared {
        rendered: rendered.clone(),
        cas: BTreeMap::new(),
        rotate_at: None,
        issued: false,
        secrets: Vec::new(),
        rotating: false,
    };
    let servings = plan::of(csv);
    if servings.is_empty() {
        return Ok(out);
    }
    let owner =
        Owner::of(csv).ok_or_else(|| Error::Served("the CSV is not persisted yet".into()))?;
    let namespace = owner.namespace.clone();
    let lifetime = Lifetime::of(shared.process.cert_validity);
    let names: Vec<String> = servings.iter().map(|s| s.secret.clone()).collect();
    super::cert_grant::ensure(client, &shared.process, &owner, &names)
        .await
        .map_err(Error::Served)?;
    for serving in &servings {
        let Some(deployment) = out
            .rendered
            .deployments
            .iter_mut()
            .find(|d| d.metadata.name.as_deref() == Some(serving.deployment.as_str()))
        else {
            continue;
        };
        let service = objects::service(&owner, serving, deployment);
        apply_object(
            Api::namespaced(client.clone(), &namespace),
            &service,
            "Service",
        )
        .await?;
        let secrets: Api<Secret> = Api::namespaced(client.clone(), &namespace);
        let live = secrets.get_opt(&serving.secret).await.map_err(apply_err(
            "read",
            "Secret",
            format!("{namespace}/{}", serving.secret),
        ))?;
        let hosts = serving.hosts(&namespace);
        let data = |key: &str| {
            live.as_ref()
                .and_then(|s| s.data.as_ref())
                .and_then(|d| d.get(key))
                .map(|b| b.0.clone())
        };
        let verdict = certs::inspect(
            data(CA_KEY).as_deref(),
            data("tls.crt").as_deref(),
            &hosts,
            now,
            lifetime,
        );
        let (ca_pem, rotate_at) = match (verdict, live.as_ref()) {
            (Verdict::Fresh { rotate_at }, Some(live)) => {
                adopt(&secrets, live, &owner).await?;
                let ca = String::from_utf8_lossy(&data(CA_KEY).unwrap_or_default()).into_owned();
                (ca, rotate_at)
            }
            (verdict, _) => {
                if let Verdict::Rotate(why) = &verdict {
                    tracing::info!(csv = %owner.name, secret = %serving.secret, why = %why, "issuing a new serving certificate");
                }
                let issued = certs::issue(&hosts, now, lifetime)
                    .map_err(|e| Error::Served(e.to_string()))?;
                let mut secret = objects::secret(&owner, serving, &issued);
                // Replaced only at the version inspected: a pair written since is not overwritten unseen.
                secret.metadata.resource_version = live
                    .as_ref()
                    .and_then(|l| l.metadata.resource_version.clone());
                out.secrets.push(secret);
                out.issued = true;
                out.rotating |= live.is_some();
                (issued.ca_pem.clone(), lifetime.rotate_at(issued.not_after))
            }
        };
        out.rotate_at = Some(out.rotate_at.map_or(rotate_at, |r| r.min(rotate_at)));
        let account = objects::service_account(deployment);
        let (role, binding) = objects::secret_access(&owner, serving, &account);
        apply_object(Api::namespaced(client.clone(), &namespace), &role, "Role").await?;
        apply_object(
            Api::namespaced(client.clone(), &namespace),
            &binding,
            "RoleBinding",
        )
        .await?;
        apply_object(
            Api::all(client.clone()),
            &objects::auth_delegator(&owner, serving, &account),
            "ClusterRoleBinding",
        )
        .await?;
        apply_object(
            Api::<RoleBinding>::namespaced(client.clone(), KUBE_SYSTEM),
            &objects::auth_reader(&owner, serving, &account),
            "RoleBinding",
        )
        .await?;
        objects::mount_certs(
            deployment,
            &serving.secret,
            &certs::ca_hash(ca_pem.as_bytes()),
        );
        out.cas.insert(serving.deployment.clone(), ca_pem);
    }
    Ok(out)
}

/// A reused Secret gains this CSV's owner reference (an upgrade keeps its predecessor's certificates, and
/// the predecessor's deletion must not take them away).
async fn adopt(api: &Api<Secret>, live: &Secret, owner: &Owner) -> Result<(), Error> {
    let refs = live.metadata.owner_references.clone().unwrap_or_default();
    if refs.iter().any(|r| r.uid == owner.reference.uid) {
        return Ok(());
    }
    let mut adopted = live.clone();
    adopted
        .metadata
        .owner_references
        .get_or_insert_with(Vec::new)
        .push(owner.reference.clone());
    let name = live.metadata.name.clone().unwrap_or_default();
    api.replace(&name, &post_params(), &adopted)
        .await
        .map(|_| ())
        .map_err(apply_err("adopt", "Secret", name))
}

/// Write an issued pair: created when no Secret was found, else replaced at the resourceVersion inspected
/// (`metadata.resourceVersion` of `secret`), so a pair written in between is never overwritten unseen (the
/// conflict retries the install, which inspects again). Not server-side applied: what is written depends on
/// what was read, and olm-operator holds no `patch` on Secrets.
async fn write_secret(api: &Api<Secret>, secret: &Secret) -> Result<(), Error> {
    let name = secret.metadata.name.clone().unwrap_or_default();
    let shown = format!(
        "{}/{name}",
        secret.metadata.namespace.as_deref().unwrap_or_default()
    );
    match secret.metadata.resource_version {
        None => api
            .create(&post_params(), secret)
            .await
            .map(|_| ())
            .map_err(apply_err("create", "Secret", shown)),
        Some(_) => api
            .replace(&name, &post_params(), secret)
            .await
            .map(|_| ())
            .map_err(apply_err("update", "Secret", shown)),
    }
}

/// The namespace selector of the CSV's OperatorGroup (OLM: exactly one group, else an error).
fn group_selector(shared: &Shared, namespace: &str) -> Result<Option<LabelSelector>, Error> {
    let groups = shared.stores.operator_groups.state();
    let mine: Vec<_> = groups
        .iter()
        .filter(|g| g.metadata.namespace.as_deref() == Some(namespace))
        .collect();
    match mine.as_slice() {
        [group] => group
            .namespace_label_selector()
            .map_err(|e| Error::Served(format!("error retrieving OperatorGroup info: {e}"))),
        _ => Err(Error::Served("error retrieving OperatorGroup info".into())),
    }
}

/// The webhook configurations, CRD conversions and APIServices, with the CA of their deployments.
pub async fn register(
    client: &Client,
    shared: &Shared,
    csv: &ClusterServiceVersion,
    cas: &BTreeMap<String, String>,
    keep: Keep,
) -> Result<(), Error> {
    let descs = webhooks::of(csv);
    let owned_apis = api_services::owned(csv);
    let Some(owner) = Owner::of(csv) else {
        return Ok(());
    };
    let (name, namespace) = (owner.name.as_str(), owner.namespace.as_str());
    let ca_of = |deployment: Option<&str>| {
        deployment
            .and_then(|d| cas.get(d))
            .map(|c| c.as_bytes().to_vec())
            .ok_or_else(|| {
                Error::Served(format!(
                    "no certificate for deployment {:?}",
                    deployment.unwrap_or_default()
                ))
            })
    };
    if !descs.is_empty() {
        let selector = group_selector(shared, namespace)?;
        for desc in descs {
            let ca = ca_of(desc.deployment_name.as_deref())?;
            let by = webhooks::selector(name, namespace, desc);
            match desc.type_ {
                WebhookAdmissionType::ValidatingAdmissionWebhook => {
                    let want = |live: Option<&ValidatingWebhookConfiguration>| {
                        let live = live.and_then(|c| {
                            c.webhooks
                                .as_ref()?
                                .first()?
                                .client_config
                                .ca_bundle
                                .as_ref()
                        });
                        let trusted = bundle::compose(&ca, live.map(|b| b.0.as_slice()), keep);
                        webhooks::validating(name, namespace, desc, selector.clone(), &trusted)
                    };
                    put_configuration(
                        Api::all(client.clone()),
                        &by,
                        want,
                        "ValidatingWebhookConfiguration",
                    )
                    .await?;
                }
                WebhookAdmissionType::MutatingAdmissionWebhook => {
                    let want = |live: Option<&MutatingWebhookConfiguration>| {
                        let live = live.and_then(|c| {
                            c.webhooks
                                .as_ref()?
                                .first()?
                                .client_config
                                .ca_bundle
                                .as_ref()
                        });
                        let trusted = bundle::compose(&ca, live.map(|b| b.0.as_slice()), keep);
                        webhooks::mutating(name, namespace, desc, selector.clone(), &trusted)
                    };
                    put_configuration(
                        Api::all(client.clone()),
                        &by,
                        want,
                        "MutatingWebhookConfiguration",
                    )
                    .await?;
                }
                WebhookAdmissionType::ConversionWebhook => {
                    for crd in desc.conversion_crds.iter().flatten() {
                        let want = |live: Option<&[u8]>| {
                            webhooks::conversion(desc, namespace, &bundle::compose(&ca, live, keep))
                        };
                        set_conversion(client, crd, want).await?;
                    }
                }
                WebhookAdmissionType::Other(_) => {}
            }
        }
    }
    let served = &shared.stores.csv.served;
    remove_dropped::<ValidatingWebhookConfiguration>(
        client,
        &served.validating,
        csv,
        WebhookAdmissionType::ValidatingAdmissionWebhook,
    )
    .await?;
    remove_dropped::<MutatingWebhookConfiguration>(
        client,
        &served.mutating,
        csv,
        WebhookAdmissionType::MutatingAdmissionWebhook,
    )
    .await?;
    let apis: Api<APIService> = Api::all(client.clone());
    for desc in &owned_apis {
        let ca = ca_of(desc.deployment_name.as_deref())?;
        let api_name = desc.api_service_name();
        let live = apis.get_opt(&api_name).await.map_err(apply_err(
            "read",
            "APIService",
            api_name.clone(),
        ))?;
        let live_bundle = live
            .as_ref()
            .and_then(|a| a.spec.as_ref()?.ca_bundle.as_ref())
            .map(|b| b.0.as_slice());
        let ca = bundle::compose(&ca, live_bundle, keep);
        match live {
            None => {
                let annotations = subscription_annotations(shared, csv);
                let want = api_services::build(name, namespace, desc, &ca, annotations);
                apis.create(&post_params(), &want).await.map_err(apply_err(
                    "create",
                    "APIService",
                    api_name.clone(),
                ))?;
            }
            Some(live) => {
                if !api_services::adoptable(
                    live.metadata.labels.as_ref(),
                    &owners(shared, csv, &live),
                ) {
                    return Err(Error::Served(format!(
                        "pre-existing APIService {api_name} is not adoptable"
                    )));
                }
                // The annotations stay as they are (the Subscription's went on at creation), and the
                // adoption holds only for the version read: the apply fails with a conflict if it moved.
                let mut want = api_services::build(
                    name,
                    namespace,
                    desc,
                    &ca,
                    live.metadata.annotations.clone(),
                );
                want.metadata.resource_version = live.metadata.resource_version.clone();
                apply_object(apis.clone(), &want, "APIService").await?;
            }
        }
    }
    Ok(())
}

/// Who may own an APIService this CSV wants (OLM's adoption owners), from the CSV store.
pub fn owners<'a>(
    shared: &Shared,
    csv: &'a ClusterServiceVersion,
    live: &APIService,
) -> Owners<'a> {
    let store = &shared.stores.csvs;
    let namespace = csv.metadata.namespace.as_deref().unwrap_or_default();
    let labels = live.metadata.labels.as_ref();
    let get = |k: &str| labels.and_then(|l| l.get(k)).cloned();
    let current_owner_phase = match (
        get(messages::crd::annotations::OWNER),
        get(messages::crd::annotations::OWNER_NAMESPACE),
    ) {
        (Some(n), Some(ns)) => store
            .get(&ObjectRef::new(&n).within(&ns))
            .map(|c| c.phase()),
        _ => None,
    };
    let replaces = csv
        .spec
        .replaces
        .as_deref()
        .filter(|r| store.get(&ObjectRef::new(r).within(namespace)).is_some());
    Owners {
        csv_name: csv.metadata.name.as_deref().unwrap_or_default(),
        namespace,
        replaces,
        current_owner_phase,
    }
}

/// The `spec.config.annotations` of the Subscription that installed the CSV.
fn subscription_annotations(
    shared: &Shared,
    csv: &ClusterServiceVersion,
) -> Option<BTreeMap<String, String>> {
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
        .and_then(|s| s.spec.config.as_ref())
        .and_then(|c| c.annotations.clone())
}

/// Create the configuration of a description, or apply every one found by its labels (OLM's create-or-update
/// over a label selector). Created with a POST: its name comes from `generateName`, which an apply cannot
/// use; the create's fields are taken over by the first apply (`crate::apply`). `want` builds it from the live
/// one (whose CA bundle a rotation keeps trusting).
async fn put_configuration<K>(
    api: Api<K>,
    selector: &str,
    want: impl Fn(Option<&K>) -> K,
    kind: &'static str,
) -> Result<(), Error>
where
    K: Resource + Clone + Serialize + DeserializeOwned + Debug,
{
    let shown = want(None).meta().generate_name.clone().unwrap_or_default();
    let found = api
        .list(&ListParams::default().labels(selector))
        .await
        .map_err(apply_err("list", kind, shown.clone()))?;
    if found.items.is_empty() {
        api.create(&post_params(), &want(None))
            .await
            .map_err(apply_err("create", kind, shown))?;
        return Ok(());
    }
    for live in found.items {
        let name = live.meta().name.clone().unwrap_or_default();
        let mut desired = want(Some(&live));
        desired.meta_mut().name = Some(name.clone());
        desired.meta_mut().generate_name = live.meta().generate_name.clone();
        apply_object(api.clone(), &desired, kind).await?;
    }
    Ok(())
}

/// Delete this CSV's configurations of `type_` whose description it no longer lists (OLM's
/// `cleanUpRemovedWebhooks`), found in olm-operator's store of CSV-owned configurations.
async fn remove_dropped<K>(
    client: &Client,
    store: &kube::runtime::reflector::Store<K>,
    csv: &ClusterServiceVersion,
    type_: WebhookAdmissionType,
) -> Result<(), Error>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::ClusterResourceScope>
        + Clone
        + DeserializeOwned
        + Debug,
{
    let (Some(name), Some(namespace)) = (
        csv.metadata.name.as_deref(),
        csv.metadata.namespace.as_deref(),
    ) else {
        return Ok(());
    };
    let kept: Vec<&str> = webhooks::of(csv)
        .iter()
        .filter(|d| d.type_ == type_)
        .map(|d| d.generate_name.as_str())
        .collect();
    let api: Api<K> = Api::all(client.clone());
    let live = store.state();
    let gone = super::dropped::dropped(live.iter().map(|o| o.meta()), name, namespace, &kept);
    for live_name in gone {
        match api.delete(&live_name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(e) if api_error::is(&e, Class::NotFound) => {}
            Err(source) => {
                return Err(apply_err("delete", "webhook configuration", live_name)(
                    source,
                ));
            }
        }
    }
    Ok(())
}

/// Point a CRD's conversion at the webhook (OLM refuses CRDs that preserve unknown fields).
async fn set_conversion(
    client: &Client,
    crd_name: &str,
    want: impl Fn(Option<&[u8]>) -> k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceConversion,
) -> Result<(), Error> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for _attempt in 0..3 {
        let mut crd = api
            .get_opt(crd_name)
            .await
            .map_err(apply_err("read", "CustomResourceDefinition", crd_name))?
            .ok_or_else(|| {
                Error::Served(format!(
                    "unable to get CRD {crd_name} specified in Conversion Webhook: not found"
                ))
            })?;
        if crd.spec.preserve_unknown_fields == Some(true) {
            return Err(Error::Served(
                "crd.Spec.PreserveUnknownFields must be false to let API Server call webhook to do the conversion".into(),
            ));
        }
        let live = crd
            .spec
            .conversion
            .as_ref()
            .and_then(|c| {
                c.webhook
                    .as_ref()?
                    .client_config
                    .as_ref()?
                    .ca_bundle
                    .as_ref()
            })
            .map(|b| b.0.as_slice());
        let conversion = want(live);
        if crd.spec.conversion.as_ref() == Some(&conversion) {
            return Ok(());
        }
        crd.spec.conversion = Some(conversion);
        match api.replace(crd_name, &post_params(), &crd).await {
            Ok(_) => return Ok(()),
            Err(e) if api_error::classify(&e).is_conflict() => continue,
            Err(source) => {
                return Err(apply_err("update", "CustomResourceDefinition", crd_name)(
                    source,
                ));
            }
        }
    }
    Err(Error::Served(format!(
        "Error updating CRD {crd_name} with Conversion info: conflicting writers"
    )))
}

/// `status.certsLastUpdated` and `status.certsRotateAt` to write after an install.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CertTimes {
    /// Unix seconds; `None` keeps the CSV's current value (nothing was issued).
    pub last_updated: Option<i64>,
    pub rotate_at: i64,
}

/// Prepare the certificates, run `deploy` with the deployments that mount them, then register the webhooks
/// and API services; the certificate times to write when they changed.
pub async fn with_certs(
    client: &Client,
    shared: &Shared,
    csv: &ClusterServiceVersion,
    rendered: &Rendered,
    deploy: impl AsyncFnOnce(&Rendered) -> Result<(), Error>,
) -> Result<Option<CertTimes>, Error> {
    let now = k8s_openapi::jiff::Timestamp::now().as_second();
    let prepared = prepare(client, shared, csv, rendered, now).await?;
    let keep = Keep::Previous { now };
    if prepared.rotating {
        // Trust the new CA before any pod can serve with it: running pods pick up a rewritten Secret.
        register(client, shared, csv, &prepared.cas, keep).await?;
    }
    let namespace = csv.metadata.namespace.as_deref().unwrap_or_default();
    let secrets = Api::namespaced(client.clone(), namespace);
    for secret in &prepared.secrets {
        write_secret(&secrets, secret).await?;
    }
    deploy(&prepared.rendered).await?;
    register(client, shared, csv, &prepared.cas, keep).await?;
    let Some(rotate_at) = prepared.rotate_at else {
        return Ok(None);
    };
    let status = csv.status.as_ref();
    let current = status
        .and_then(|s| s.certs_rotate_at.as_ref())
        .map(|t| t.0.as_second());
    let changed = prepared.issued || current != Some(rotate_at);
    Ok(changed.then_some(CertTimes {
        last_updated: (prepared.issued
            || status.and_then(|s| s.certs_last_updated.as_ref()).is_none())
        .then_some(now),
        rotate_at,
    }))
}

/// The `SettleCaBundles` effect: every CA bundle of the CSV trusts only the CA of its deployment's Secret (a
/// rotation's previous CA goes once the rolled deployments settled).
pub async fn settle(
    client: &Client,
    shared: &Shared,
    csv: &ClusterServiceVersion,
) -> Result<(), Error> {
    let namespace = csv.metadata.namespace.as_deref().unwrap_or_default();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let servings = plan::of(csv);
    if let Some(owner) = Owner::of(csv) {
        let names: Vec<String> = servings.iter().map(|s| s.secret.clone()).collect();
        super::cert_grant::ensure(client, &shared.process, &owner, &names)
            .await
            .map_err(Error::Served)?;
    }
    let mut cas = BTreeMap::new();
    for serving in servings {
        let live = secrets.get_opt(&serving.secret).await.map_err(apply_err(
            "read",
            "Secret",
            format!("{namespace}/{}", serving.secret),
        ))?;
        let ca = live
            .and_then(|s| s.data)
            .and_then(|mut d| d.remove(CA_KEY))
            .ok_or_else(|| Error::Served(format!("secret {} holds no CA", serving.secret)))?;
        cas.insert(
            serving.deployment,
            String::from_utf8_lossy(&ca.0).into_owned(),
        );
    }
    tracing::info!(csv = ?csv.metadata.name, namespace = %namespace, "dropping the previous CA from the CA bundles");
    register(client, shared, csv, &cas, Keep::CurrentOnly).await
}

/// Merge-patch the certificate times into the CSV's status.
pub async fn write_cert_times(
    csvs: &Api<ClusterServiceVersion>,
    name: &str,
    times: CertTimes,
) -> Result<ClusterServiceVersion, Error> {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    let time = |s: i64| k8s_openapi::jiff::Timestamp::from_second(s).ok().map(Time);
    let mut status = serde_json::Map::new();
    if let Some(t) = times.last_updated.and_then(time) {
        status.insert(
            "certsLastUpdated".into(),
            serde_json::to_value(t).unwrap_or_default(),
        );
    }
    if let Some(t) = time(times.rotate_at) {
        status.insert(
            "certsRotateAt".into(),
            serde_json::to_value(t).unwrap_or_default(),
        );
    }
    let patch = serde_json::json!({ "status": status });
    csvs.patch_status(
        name,
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(&patch),
    )
    .await
    .map_err(apply_err("patch", "ClusterServiceVersion status", name))
}
