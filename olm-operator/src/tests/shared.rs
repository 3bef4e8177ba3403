//! A [`Shared`] for actor tests without a cluster: the client given (a fake API), stores listed with the test's
//! objects, and registries whose actors never run (what is sent to them is dropped, as a test with no other
//! actor expects).

use crate::csv::CsvActor;
use crate::janitor::JanitorActor;
use crate::metrics::CsvMetrics;
use crate::operator_group::OperatorGroupActor;
use crate::operator_group::olm_config::OlmConfigActor;
use crate::operator_view::OperatorViewActor;
use crate::routes::Route;
use crate::shared::{Registries, Shared, Stores};
use crate::stores::{ClusterInfo, CsvStores};
use k8s_openapi::api::core::v1::Namespace;
use kube::runtime::reflector::store::Writer;
use kube::runtime::watcher::Event;
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::operator_group::OperatorGroup;
use olm_runtime::metrics::Metrics;
use olm_runtime::scope::Scope;
use olm_runtime::singleton::Singleton;
use olm_runtime::wiring::Wiring;
use std::sync::Arc;

/// The objects the stores hold.
#[derive(Default)]
pub struct Objects {
    pub csvs: Vec<ClusterServiceVersion>,
    pub operator_groups: Vec<OperatorGroup>,
    pub namespaces: Vec<Namespace>,
}

/// A writer that has listed `objects` (its store ready, as after a watch's first list).
fn listed<K>(writer: &mut Writer<K>, objects: Vec<K>)
where
    K: kube::Resource<DynamicType = ()> + Clone + 'static,
{
    writer.apply_watcher_event(&Event::Init);
    for o in objects {
        writer.apply_watcher_event(&Event::InitApply(o));
    }
    writer.apply_watcher_event(&Event::InitDone);
}

/// `Shared` on `client` with `objects` in its stores; every other store empty and listed. Call inside an actix
/// System (the singletons' mailboxes are made there).
pub fn shared(client: kube::Client, objects: Objects) -> Shared {
    let Objects {
        csvs,
        operator_groups,
        namespaces,
    } = objects;
    let mut csv_writer = Writer::<ClusterServiceVersion>::default();
    listed(&mut csv_writer, csvs);
    let mut group_writer = Writer::<OperatorGroup>::default();
    listed(&mut group_writer, operator_groups);
    let mut condition_writer = Writer::default();
    listed(&mut condition_writer, Vec::new());
    let metrics = Metrics::new().expect("metrics");
    let csv_stores = CsvStores::new(
        condition_writer.as_reader(),
        ClusterInfo::default(),
        CsvMetrics::register(&prometheus::Registry::new()).expect("csv metrics"),
    );
    let (stores, mut writers) = Stores::new(
        csv_writer.as_reader(),
        group_writer.as_reader(),
        Scope::Cluster,
        csv_stores,
    );
    listed(&mut writers.namespaces, namespaces);
    listed(&mut writers.olm_config, Vec::new());
    // Mailboxes whose actors never run: sends to them are dropped.
    let csv_registry = Wiring::prepare::<CsvActor>().addr();
    let group_registry = Wiring::prepare::<OperatorGroupActor>().addr();
    let (operator_view, _) = Singleton::prepare::<OperatorViewActor>("OperatorView");
    let (janitor, _) = Singleton::prepare::<JanitorActor>("Janitor");
    let (olm_config_status, _) = Singleton::prepare::<OlmConfigActor>("OLMConfig");
    Shared {
        client,
        metrics,
        stores: Arc::new(stores),
        registries: Arc::new(Registries {
            csvs: Route::new(csv_registry.clone().recipient(), csv_registry.recipient()),
            operator_groups: Route::new(
                group_registry.clone().recipient(),
                group_registry.clone().recipient(),
            ),
            group_asks: group_registry.recipient(),
            operator_view,
            janitor,
            olm_config_status,
        }),
        protected_copy_namespaces: Arc::default(),
        process: Arc::default(),
    }
}
