//! `catalog-operator run`: connect, start one registry per kind (CatalogSource, Subscription, InstallPlan) fed by
//! watches, and the endpoints; then wait for SIGTERM.

use crate::catalog_source::CatalogSourceActor;
use crate::cli::RunArgs;
use crate::install_plan::InstallPlanActor;
use crate::shared::{Registries, Shared, Stores};
use crate::subscription::SubscriptionActor;
use olm_runtime::metrics::Metrics;
use olm_runtime::wiring::{self, Scope, Wiring};
use std::sync::Arc;

pub fn run(args: RunArgs) -> anyhow::Result<()> {
    let RunArgs { common } = args;
    let _telemetry = olm_runtime::telemetry::init("catalog-operator", common.log_format)?;
    wiring::block_on_system(async move {
        let client = olm_runtime::client::connect(common.kubeconfig.as_deref()).await?;
        let metrics = Metrics::new()?;
        let scope = Scope::from_list(common.watch_scope());
        let shared = Shared { client: client.clone(), metrics: metrics.clone(), stores: Arc::new(Stores::default()), registries: Arc::new(Registries::default()) };
        let mut wiring = Wiring::new(client.clone(), metrics, scope);

        let (catalogs, catalog_store) = wiring.start::<CatalogSourceActor>(shared.clone());
        let _ = shared.stores.catalog_sources.set(catalog_store);
        let _ = shared.registries.catalog_sources.set(catalogs);
        let (subs, sub_store) = wiring.start::<SubscriptionActor>(shared.clone());
        let _ = shared.stores.subscriptions.set(sub_store);
        let _ = shared.registries.subscriptions.set(subs);
        let (plans, plan_store) = wiring.start::<InstallPlanActor>(shared.clone());
        let _ = shared.stores.install_plans.set(plan_store);
        let _ = shared.registries.install_plans.set(plans);

        let bound = wiring.serve(common.http_addr).await?;
        tracing::info!(http = %bound, namespace = %common.namespace, "catalog-operator running");
        wiring::shutdown_signal().await;
        tracing::info!("catalog-operator stopping");
        anyhow::Ok(())
    })?
}
