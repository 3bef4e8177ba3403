//! `olm-operator run`: connect, serve the endpoints, wait for the leader Lease when `--leader-elect` is on,
//! then start one registry per kind (CSV, OperatorGroup) fed by watches and a Namespace store; then wait for
//! SIGTERM (or lost leadership, which ends the process with an error so its pod restarts as a candidate).

use crate::cli::RunArgs;
use crate::csv::CsvActor;
use crate::operator_group::OperatorGroupActor;
use crate::routes::Route;
use crate::shared::{Registries, Shared, Stores};
use olm_runtime::activation::{Activation, Stopped};
use olm_runtime::leader::ElectionConfig;
use olm_runtime::metrics::Metrics;
use olm_runtime::scope::Scope;
use olm_runtime::wiring::{self, Wiring};
use std::sync::Arc;

pub fn run(args: RunArgs) -> anyhow::Result<()> {
    let RunArgs {
        common,
        protected_copied_csv_namespaces,
    } = args;
    let _telemetry = olm_runtime::telemetry::init("olm-operator", common.log_format)?;
    wiring::block_on_system(async move {
        let client = olm_runtime::client::connect(common.kubeconfig.as_deref()).await?;
        let metrics = Metrics::new()?;
        let scope = Scope::from_list(common.watch_scope());
        let shared = Shared {
            client: client.clone(),
            metrics: metrics.clone(),
            stores: Arc::new(Stores::empty()),
            registries: Arc::new(Registries::default()),
            protected_copy_namespaces: Arc::new(
                protected_copied_csv_namespaces
                    .into_iter()
                    .filter(|n| !n.is_empty())
                    .collect(),
            ),
        };
        // A bad OLM_RS_CHAOS stops the operator here, before any actor runs.
        olm_runtime::chaos::init_from_env()?;
        // Scoped installs act as an OperatorGroup's account through a grant made per account (deploy/rbac).
        olm_runtime::own_account::init_from_env(&common.namespace);
        let mut wiring = Wiring::new(client.clone(), metrics.clone(), scope)
            .with_resync(std::time::Duration::from_secs(common.resync_seconds))
            .with_events(crate::events::REPORTER);
        let election = ElectionConfig::from_args(&common.leader, &common.namespace, "olm-operator");
        let mut activation = Activation::new(&client, &metrics, election)?;
        let bound = wiring
            .serve(common.http_addr, &common.endpoints, &activation)
            .await?;
        tracing::info!(http = %bound, namespace = %common.namespace, "olm-operator serving its endpoints");
        if !activation.acquire().await? {
            tracing::info!("olm-operator stopping before it led");
            return anyhow::Ok(());
        }

        let _ = shared.stores.scope.set(wiring.scope.clone());
        let (namespaces, _task) = crate::operator_group::notify::namespace_store(&shared);
        let _ = shared.stores.namespaces.set(namespaces);
        let (olm_config, _task) = crate::operator_group::notify::olm_config_store(&shared);
        let _ = shared.stores.olm_config.set(olm_config);
        let _ = shared
            .stores
            .olm_config_status
            .set(crate::operator_group::olm_config::spawn(&shared));
        let _ = shared
            .registries
            .janitor
            .set(crate::janitor::spawn(&shared));
        // Copied CSVs are kept cut down (`copied_csv::projection`): their content is their parent's.
        let (csvs, csv_store) = wiring
            .start_projected::<CsvActor, _>(shared.clone(), crate::copied_csv::projection::project);
        let _ = shared.stores.csvs.set(csv_store);
        let _ = shared
            .registries
            .csvs
            .set(Route::new(csvs.clone().recipient(), csvs.recipient()));
        let (ogs, og_store) = wiring.start::<OperatorGroupActor>(shared.clone());
        let _ = shared.stores.operator_groups.set(og_store);
        let _ = shared.registries.group_asks.set(ogs.clone().recipient());
        let _ = shared
            .registries
            .operator_groups
            .set(Route::new(ogs.clone().recipient(), ogs.recipient()));
        let (_conditions, condition_store) =
            wiring
                .start::<crate::operator_condition::actor::OperatorConditionActor>(shared.clone());
        let _ = shared.stores.csv.operator_conditions.set(condition_store);
        crate::operator_view::start(&shared);
        // Discovery can wait seconds for an unavailable API group: a signal or a lost Lease ends it.
        match activation
            .while_active(crate::csv::watches::start(&shared))
            .await
        {
            Ok(started) => started?,
            Err(stopped) => return stopping(stopped),
        }
        tracing::info!(namespace = %common.namespace, "olm-operator running");
        stopping(activation.run_until_stopped().await)
    })?
}

fn stopping(stopped: Stopped) -> anyhow::Result<()> {
    match stopped {
        Stopped::Signal => {
            tracing::info!("olm-operator stopping");
            Ok(())
        }
        Stopped::LostLeadership(lost) => Err(lost.into()),
    }
}
