//! The caches of what CSVs install for their webhooks and API services: Services and webhook
//! configurations carrying a CSV's owner labels. A change requeues the owning CSV (by owner labels); an
//! APIService change requeues every CSV that owns or requires it (required ones wait for `Available`).

use crate::shared::Shared;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::runtime::watcher;
use kube::{Api, Resource};
use messages::crd::annotations;
use messages::key::ObjectKey;
use olm_runtime::watch::spawn_store;

use crate::stores::{OWNED_BY_CSV, ServedWriters};

pub fn start(shared: &Shared, writers: ServedWriters) {
    let ServedWriters {
        services,
        validating,
        mutating,
    } = writers;
    let owned = || watcher::Config::default().labels(OWNED_BY_CSV);
    let client = shared.client.clone();
    let s = shared.clone();
    spawn_store(
        services,
        Api::<Service>::all(client.clone()),
        owned(),
        move |o: &Service| requeue_labelled_owner(&s, o),
    );
    let s = shared.clone();
    spawn_store(
        validating,
        Api::<ValidatingWebhookConfiguration>::all(client.clone()),
        owned(),
        move |o: &ValidatingWebhookConfiguration| requeue_labelled_owner(&s, o),
    );
    let s = shared.clone();
    spawn_store(
        mutating,
        Api::<MutatingWebhookConfiguration>::all(client),
        owned(),
        move |o: &MutatingWebhookConfiguration| requeue_labelled_owner(&s, o),
    );
}

/// True once every store above listed once (false when one is missing or its watch ended first).
pub async fn synced(shared: &Shared) -> bool {
    use olm_runtime::watch::listed as wait;
    let stores = &shared.stores.csv.served;
    wait(&stores.services).await && wait(&stores.validating).await && wait(&stores.mutating).await
}

fn requeue_labelled_owner<K: Resource>(shared: &Shared, obj: &K) {
    let labels = obj.meta().labels.as_ref();
    let get = |k: &str| labels.and_then(|l| l.get(k)).cloned();
    if let (Some(name), Some(namespace)) =
        (get(annotations::OWNER), get(annotations::OWNER_NAMESPACE))
    {
        shared.requeue_csv(ObjectKey::new(namespace, name));
    }
}

/// An APIService changed: its owner and every CSV owning or requiring it look again.
pub fn api_service_changed(shared: &Shared, api: &APIService) {
    requeue_labelled_owner(shared, api);
    let Some(name) = api.metadata.name.as_deref() else {
        return;
    };
    shared.requeue_csvs_where(|c| {
        c.spec.api_service_definitions.as_ref().is_some_and(|d| {
            d.owned
                .iter()
                .flatten()
                .chain(d.required.iter().flatten())
                .any(|a| a.api_service_name() == name)
        })
    });
}
