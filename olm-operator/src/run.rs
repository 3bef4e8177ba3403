//! `olm-operator run`: connect, serve the endpoints, wait for the leader Lease when `--leader-elect` is on,
//! then start one registry per kind (CSV, OperatorGroup) fed by watches and a Namespace store; then wait for
//! SIGTERM (or lost leadership, which ends the process with an error so its pod restarts as a candidate).

use crate::cli::RunArgs;
use crate::csv::CsvActor;
use crate::janitor::JanitorActor;
use crate::metrics::CsvMetrics;
use crate::operator_condition::actor::OperatorConditionActor;
use crate::operator_group::OperatorGroupActor;
use crate::operator_group::olm_config::OlmConfigActor;
use crate::operator_view::OperatorViewActor;
use crate::routes::Route;
use crate::shared::{Process, Registries, Shared, StoreWriters, Stores};
use crate::stores::CsvStores;
use olm_runtime::activation::{Activation, Stopped};
use olm_runtime::leader::ElectionConfig;
use olm_runtime::metrics::Metrics;
use olm_runtime::own_account::OwnAccount;
use olm_runtime::scope::Scope;
use olm_runtime::singleton::Singleton;
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
        // A bad OLM_RS_CHAOS stops the operator here, before any actor runs.
        let chaos = olm_runtime::chaos::from_env()?;
        let mut wiring = Wiring::new(client.clone(), metrics.clone(), scope)
            .with_resync(std::time::Duration::from_secs(common.resync_seconds))
            .with_chaos(chaos.clone())
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
        // Discovery can wait seconds for an unavailable API group: a signal or a lost Lease ends it.
        let cluster_info = match activation
            .while_active(crate::csv::watches::cluster_info(&client))
            .await
        {
            Ok(info) => info,
            Err(stopped) => return stopping(stopped),
        };

        // Every mailbox and store exists before any actor or watch starts: what the actors share is built
        // from them, then the actors and watches are started with it.
        let csvs = Wiring::prepare::<CsvActor>();
        let groups = Wiring::prepare::<OperatorGroupActor>();
        let conditions = Wiring::prepare::<OperatorConditionActor>();
        let (operator_view, view) = Singleton::prepare::<OperatorViewActor>("OperatorView");
        let (janitor, janitor_mailbox) = Singleton::prepare::<JanitorActor>("Janitor");
        let (olm_config_status, olm_config) = Singleton::prepare::<OlmConfigActor>("OLMConfig");
        let csv_stores = CsvStores::new(
            conditions.store(),
            cluster_info,
            CsvMetrics::register(&metrics.registry)?,
        );
        let (stores, writers) = Stores::new(
            csvs.store(),
            groups.store(),
            wiring.scope.clone(),
            csv_stores,
        );
        let shared = Shared {
            client: client.clone(),
            metrics: metrics.clone(),
            stores: Arc::new(stores),
            registries: Arc::new(Registries {
                csvs: Route::new(csvs.addr().recipient(), csvs.addr().recipient()),
                operator_groups: Route::new(groups.addr().recipient(), groups.addr().recipient()),
                group_asks: groups.addr().recipient(),
                operator_view,
                janitor,
                olm_config_status,
            }),
            protected_copy_namespaces: Arc::new(
                protected_copied_csv_namespaces
                    .into_iter()
                    .filter(|n| !n.is_empty())
                    .collect(),
            ),
            process: Arc::new(Process {
                chaos,
                // Scoped installs act as an OperatorGroup's account through a grant made per account
                // (deploy/rbac).
                own_account: OwnAccount::from_env(&common.namespace),
                cert_grants: Default::default(),
                cert_validity: crate::csv::served::certs::validity_from_env(),
                phase_events: Default::default(),
            }),
        };
        let StoreWriters {
            namespaces,
            olm_config: olm_config_writer,
            csv: csv_writers,
        } = writers;
        crate::operator_group::notify::namespace_store(&shared, namespaces);
        crate::operator_group::notify::olm_config_store(&shared, olm_config_writer);
        crate::operator_group::olm_config::start(&shared, olm_config);
        crate::janitor::start(&shared, janitor_mailbox);
        // Copied CSVs are kept cut down (`copied_csv::projection`): their content is their parent's.
        wiring.start_projected(csvs, shared.clone(), crate::copied_csv::projection::project);
        wiring.start(groups, shared.clone());
        wiring.start(conditions, shared.clone());
        crate::operator_view::start(&shared, view);
        crate::csv::watches::start(&shared, csv_writers);
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
