//! `catalog-operator run`: connect, serve the endpoints, wait for the leader Lease when `--leader-elect` is on
//! (lost leadership ends the process with an error), then start one registry per kind (CatalogSource, Subscription, InstallPlan) fed by
//! watches, the namespace resolver, stores of CSVs, OperatorGroups and catalog ConfigMaps whose changes
//! trigger resolution, and the endpoints; then wait for SIGTERM.

use crate::catalog_source::pod::CATALOG_SOURCE_LABEL;
use crate::catalog_source::{CatalogSourceActor, Refresh};
use crate::cli::RunArgs;
use crate::group_view::GroupView;
use crate::install_plan::InstallPlanActor;
use crate::metrics::CatalogMetrics;
use crate::namespace::NamespaceResolver;
use crate::routes::Cause;
use crate::shared::{Config, Process, Registries, Shared, StoreWriters, Stores};
use crate::subscription::SubscriptionActor;
use actix::AsyncContext;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::runtime::watcher;
use messages::crd::csv::ClusterServiceVersion;
use messages::key::ObjectKey;
use olm_runtime::activation::{Activation, Stopped};
use olm_runtime::leader::ElectionConfig;
use olm_runtime::metrics::Metrics;
use olm_runtime::own_account::OwnAccount;
use olm_runtime::registry::Forward;
use olm_runtime::scope::Scope;
use olm_runtime::watch::spawn_store;
use olm_runtime::wiring::{self, Wiring};
use std::sync::Arc;

pub fn run(args: RunArgs) -> anyhow::Result<()> {
    let RunArgs {
        common,
        install_plan_retry_timeout,
        registry_probe_interval,
        registry,
        global_pull_secret,
        catalog_cache_dir,
        catalog_serve_addr,
        catalog_serve_service,
        pod_ip,
        pod_name,
    } = args;
    // Bad registry files stop the operator here, naming the file.
    let images = registry.registry().map_err(anyhow::Error::msg)?;
    let _telemetry = olm_runtime::telemetry::init("catalog-operator", common.log_format)?;
    let indexer = crate::catalog_images::child_indexer(catalog_cache_dir);
    wiring::block_on_system(async move {
        let client = olm_runtime::client::connect(common.kubeconfig.as_deref()).await?;
        let metrics = Metrics::new()?;
        let catalog_metrics = CatalogMetrics::register(&metrics.registry)?;
        let scope = Scope::from_list(common.watch_scope());
        let config = Config {
            global_namespace: common.namespace.clone(),
            install_plan_retry_timeout,
            probe_interval: registry_probe_interval,
            global_pull_secret,
        };
        // A bad OLM_RS_CHAOS stops the operator here, before any actor runs.
        let chaos = olm_runtime::chaos::from_env()?;
        let mut wiring = Wiring::new(client.clone(), metrics.clone(), scope.clone())
            .with_resync(std::time::Duration::from_secs(common.resync_seconds))
            .with_chaos(chaos.clone())
            .with_events(crate::events::REPORTER);
        let election =
            ElectionConfig::from_args(&common.leader, &common.namespace, "catalog-operator");
        let mut activation = Activation::new(&client, &metrics, election)?;
        let bound = wiring
            .serve(common.http_addr, &common.endpoints, &activation)
            .await?;
        tracing::info!(http = %bound, namespace = %common.namespace, "catalog-operator serving its endpoints");
        if !activation.acquire().await? {
            tracing::info!("catalog-operator stopping before it led");
            return anyhow::Ok(());
        }

        // Every mailbox and store exists before any actor or watch starts: what the actors share is built
        // from them, then the actors and watches are started with it.
        let catalogs = Wiring::prepare::<CatalogSourceActor>();
        let subs = Wiring::prepare::<SubscriptionActor>();
        let plans = Wiring::prepare::<InstallPlanActor>();
        let resolver_mailbox = actix::Context::<NamespaceResolver>::new();
        let resolver = resolver_mailbox.address();
        let (stores, writers) = Stores::new(catalogs.store(), subs.store(), plans.store());
        let shared = Shared {
            client: client.clone(),
            metrics: metrics.clone(),
            catalog_metrics,
            stores: Arc::new(stores),
            registries: Arc::new(Registries {
                subscriptions: subs.addr().recipient(),
                resolve: resolver.clone().recipient(),
                wants: resolver.recipient(),
                install_plans: plans.addr().recipient(),
                handovers: Default::default(),
            }),
            catalogs: Arc::default(),
            config: Arc::new(config),
            kinds: Default::default(),
            bundles: Arc::new(crate::unpacker::Unpacker::new(
                images.clone(),
                crate::unpacker::CACHE_BYTES,
            )),
            catalog_images: Arc::new(crate::catalog_images::CatalogImages::new(images, indexer)),
            health_writes: Arc::new(tokio::sync::Semaphore::new(crate::shared::HEALTH_WRITES)),
            process: Arc::new(Process {
                chaos,
                own_account: OwnAccount::from_env(&common.namespace),
                self_grantee: crate::self_grant::grantee_from_env(&common.namespace),
                decision_numbers: Default::default(),
            }),
        };
        if let Some(addr) = catalog_serve_addr {
            let listener = registry::server::bind(addr).await?;
            let bound = listener.local_addr()?;
            tracing::info!(grpc = %bound, "catalog-operator serving its catalog images");
            if let (Some(service), Some(pod_ip)) = (catalog_serve_service, pod_ip) {
                tokio::spawn(crate::catalog_endpoint::publish(
                    client.clone(),
                    crate::catalog_endpoint::Server {
                        service,
                        namespace: common.namespace.clone(),
                        pod_name,
                        pod_ip,
                        port: bound.port(),
                    },
                ));
            }
            let images: Arc<dyn registry::routed::Catalogs> = shared.catalog_images.clone();
            tokio::spawn(async move {
                if let Err(e) =
                    registry::server::serve_routed(images, listener, std::future::pending()).await
                {
                    tracing::error!(
                        error = &e as &dyn std::error::Error,
                        "the catalog gRPC server stopped"
                    );
                }
            });
        }
        resolver_mailbox.run(NamespaceResolver::new(shared.clone(), wiring.journal()));

        // Stores whose changes only trigger resolution.
        let StoreWriters {
            csvs,
            operator_groups,
        } = writers;
        let (sh, sc) = (shared.clone(), scope.clone());
        olm_runtime::watch::spawn_store_projected(
            csvs,
            Api::<ClusterServiceVersion>::all(client.clone()),
            scoped(&scope).labels(crate::csv_view::NOT_COPIED),
            crate::csv_view::project,
            move |o: &ClusterServiceVersion| {
                trigger(&sh, &sc, o.metadata.namespace.as_deref(), Cause::CsvChanged)
            },
        );
        let (sh, sc) = (shared.clone(), scope.clone());
        spawn_store(
            operator_groups,
            Api::<GroupView>::all(client.clone()),
            scoped(&scope),
            move |o: &GroupView| {
                trigger(
                    &sh,
                    &sc,
                    o.metadata.namespace.as_deref(),
                    Cause::OperatorGroupChanged,
                )
            },
        );

        let catalog_registry = catalogs.addr();
        wiring.start(catalogs, shared.clone());
        wiring.start_projected(subs, shared.clone(), crate::catalog_health::project);
        wiring.start(plans, shared.clone());
        let stores = shared.stores.clone();
        let _readiness = tokio::spawn(async move { stores.watch_readiness().await });

        // A catalog ConfigMap (labelled by its CatalogSource) changed: that CatalogSource reloads it (reading it
        // from the API: the store keeps no content).
        olm_runtime::watch::spawn_store_projected(
            kube::runtime::reflector::store::Writer::default(),
            Api::<ConfigMap>::all(client.clone()),
            watcher::Config::default().labels(CATALOG_SOURCE_LABEL),
            |cm: &mut ConfigMap| {
                cm.data = None;
                cm.binary_data = None;
            },
            move |cm: &ConfigMap| {
                let (Some(ns), Some(name)) = (
                    cm.metadata.namespace.clone(),
                    cm.metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get(CATALOG_SOURCE_LABEL))
                        .cloned(),
                ) else {
                    return;
                };
                catalog_registry.do_send(Forward(ObjectKey::new(ns, name), Refresh));
            },
        );

        tracing::info!(namespace = %common.namespace, "catalog-operator running");
        match activation.run_until_stopped().await {
            Stopped::Signal => {
                tracing::info!("catalog-operator stopping");
                anyhow::Ok(())
            }
            Stopped::LostLeadership(lost) => Err(lost.into()),
        }
    })?
}

fn trigger(shared: &Shared, scope: &Scope, namespace: Option<&str>, cause: Cause) {
    if let Some(ns) = namespace.filter(|ns| scope.contains(Some(ns))) {
        shared.resolve(ns, cause);
    }
}

/// Watch config for the scope: one watched namespace becomes a field selector.
fn scoped(scope: &Scope) -> watcher::Config {
    match scope {
        Scope::Namespaces(list) if list.len() == 1 => {
            watcher::Config::default().fields(&format!("metadata.namespace={}", list[0]))
        }
        Scope::Namespaces(_) | Scope::Cluster => watcher::Config::default(),
    }
}
