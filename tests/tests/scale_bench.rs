//! The scale bench (issue 19; ignored by default). Run it alone on a PRIVATE control plane with the audit log on,
//! both operators watching the whole cluster:
//!
//! ```text
//! export OLM_RS_CLUSTER_DIR=~/.cache/olm-rs/cluster-scale OLM_RS_ETCD_PORT=33792 OLM_RS_ETCD_PEER_PORT=33802 \
//!   OLM_RS_API_PORT=36445 OLM_RS_KCM_PORT=36259 OLM_RS_REGISTRY_PORT=25002 \
//!   OLM_RS_REGISTRY_DIR=~/.cache/olm-rs/registry-scale OLM_RS_AUDIT=1
//! # thousands of new namespaces: kube-controller-manager's default 20 requests/s would hold new pods for minutes
//! export OLM_RS_KCM_FLAGS="--kube-api-qps=300 --kube-api-burst=600 --concurrent-serviceaccount-token-syncs=10"
//! hack/control-plane.sh up
//! OLM_RS_BIN_DIR=$CARGO_TARGET_DIR/release cargo test -p olm-tests --test scale_bench -- --ignored --nocapture
//! hack/control-plane.sh down
//! ```
//!
//! It builds the cluster up step by step: empty; 5 AllNamespaces operators (copies on); namespaces up to
//! `OLM_RS_SCALE_NS_COPIES` (2,000) with copies on; copies off (OLMConfig `disableCopiedCSVs`); namespaces up to
//! `OLM_RS_SCALE_NS` (10,000); `OLM_RS_SCALE_OWN` (1,000) own-namespace operators; `OLM_RS_SCALE_CATALOGS` (50)
//! CatalogSources. After each step it prints one row: each operator's settled RSS and CPU seconds, its API
//! requests by verb during the step (audit log, by user agent), the time a new Subscription takes to reach
//! Succeeded (p50 and max over `OLM_RS_SCALE_PROBES` (5) installs, each in a new namespace, one after another) and
//! the requests the first of them cost, the time a new namespace's copies take to appear (copies on),
//! and idle requests per second over `OLM_RS_SCALE_IDLE_SECS` (120).

mod scale_support;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use messages::crd::csv::ClusterServiceVersion;
use olm_tests::catalog_fixture::*;
use olm_tests::{Cluster, OperatorProcess, TestContext, await_object, eventually};
use scale_support::{
    AuditLog, Counts, by_resource, by_verb, rss_and_cpu, rss_anon, total, view, writes,
};
use serde_json::json;
use std::time::{Duration, Instant};

const OLM: &str = "olm-operator";
const CAT: &str = "catalog-operator";
const CATALOG_NS: &str = "scale-catalogs";
const GLOBAL_NS: &str = "scale-global";

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Bench {
    cluster: &'static Cluster,
    client: kube::Client,
    olm: OperatorProcess,
    cat: OperatorProcess,
    audit: AuditLog,
    cpu: (f64, f64),
    namespaces: usize,
    probes: usize,
    idle: Duration,
    /// Rows printed so far, and how many to print before stopping (`OLM_RS_SCALE_ROWS`, default all).
    rows: usize,
    max_rows: usize,
    /// New installs timed per row (`OLM_RS_SCALE_PROBES`, default 5), one after another.
    probes_per_row: usize,
    /// The last probe's time from its CSV Succeeded to its Operator showing it.
    view_lag: Duration,
}

fn ctx(b: &Bench, namespace: &str) -> TestContext {
    TestContext {
        client: b.client.clone(),
        namespace: namespace.to_owned(),
        cluster: b.cluster,
    }
}

/// Create a namespace (an existing one is fine). An overloaded apiserver's errors are retried for a minute: the
/// first full-size run died at 9,990 namespaces on one `500 resource quota evaluation timed out`.
async fn create_namespace(client: &kube::Client, name: &str) -> anyhow::Result<()> {
    let api: Api<Namespace> = Api::all(client.clone());
    let mut ns = Namespace::default();
    ns.metadata.name = Some(name.to_owned());
    eventually(Duration::from_secs(60), "namespace created", || {
        let (api, ns) = (api.clone(), ns.clone());
        async move {
            match api.create(&PostParams::default(), &ns).await {
                Ok(_) => Ok(Some(())),
                Err(kube::Error::Api(e)) if e.code == 409 => Ok(Some(())),
                Err(e) => Err(e.into()),
            }
        }
    })
    .await
}

/// RSS once it stops moving (two samples 5 s apart within 1 %, at most a minute).
async fn settled_rss(pid: u32) -> u64 {
    let mut last = rss_and_cpu(pid).map(|r| r.0).unwrap_or_default();
    for _ in 0..12 {
        tokio::time::sleep(Duration::from_secs(5)).await;
        let now = rss_and_cpu(pid).map(|r| r.0).unwrap_or_default();
        if now.abs_diff(last) * 100 <= last.max(1) {
            return now;
        }
        last = now;
    }
    last
}

impl Bench {
    /// A new namespace with its own OperatorGroup and a Subscription to `probe`: time to CSV Succeeded, and the
    /// requests both operators made meanwhile.
    async fn probe_install(&mut self) -> anyhow::Result<(Duration, Counts)> {
        self.probes += 1;
        let ns = format!("scale-probe-{}", self.probes);
        create_namespace(&self.client, &ns).await?;
        let c = ctx(self, &ns);
        operator_group(&c).await?;
        let _ = self.audit.take()?;
        let started = Instant::now();
        subscription(
            &c,
            sub_to(&c, "probe", "probe", "cat").source("cat", CATALOG_NS),
        )
        .await?;
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(self.client.clone(), &ns);
        await_object(
            &csvs,
            "probe.v1.0.0",
            Duration::from_secs(300),
            "Succeeded",
            |c| c.is_some_and(|c| c.phase().as_str() == "Succeeded"),
        )
        .await?;
        let took = started.elapsed();
        // The install's last writes follow Succeeded: the Operator view shows the CSV Succeeded last of all.
        let operators: Api<messages::crd::operator::Operator> = Api::all(self.client.clone());
        await_object(
            &operators,
            &format!("probe.{ns}"),
            Duration::from_secs(300),
            "the Operator view shows the CSV Succeeded",
            |o| o.is_some_and(view::shows_succeeded),
        )
        .await?;
        self.view_lag = started.elapsed() - took;
        Ok((took, self.audit.take()?))
    }

    /// How long a new namespace takes to get a copy of every global operator's CSV.
    async fn copies_time(&mut self, globals: usize) -> anyhow::Result<Duration> {
        self.probes += 1;
        let ns = format!("scale-copies-{}", self.probes);
        let started = Instant::now();
        create_namespace(&self.client, &ns).await?;
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(self.client.clone(), &ns);
        eventually(
            Duration::from_secs(600),
            "copies in a new namespace",
            || {
                let csvs = csvs.clone();
                async move {
                    let n = csvs
                        .list_metadata(&ListParams::default())
                        .await?
                        .items
                        .len();
                    Ok((n >= globals).then_some(()))
                }
            },
        )
        .await?;
        Ok(started.elapsed())
    }

    async fn grow_namespaces(&mut self, to: usize) -> anyhow::Result<()> {
        let client = self.client.clone();
        let from = self.namespaces;
        futures::stream::iter(from..to)
            .map(|i| {
                let client = client.clone();
                async move { create_namespace(&client, &format!("scale-ns-{i}")).await }
            })
            .buffer_unordered(32)
            .collect::<Vec<_>>()
            .await
            .into_iter()
            .collect::<anyhow::Result<Vec<()>>>()?;
        self.namespaces = self.namespaces.max(to);
        Ok(())
    }

    /// Measure and print one row; true once `OLM_RS_SCALE_ROWS` rows are printed (the bench stops there).
    async fn row(&mut self, step: &str, copies: Option<usize>) -> anyhow::Result<bool> {
        let during = self.audit.take()?;
        let (olm_rss, cat_rss) = (
            settled_rss(self.olm.pid()).await,
            settled_rss(self.cat.pid()).await,
        );
        let anon = rss_anon(self.olm.pid()).unwrap_or_default()
            + rss_anon(self.cat.pid()).unwrap_or_default();
        let olm_cpu = rss_and_cpu(self.olm.pid()).map(|r| r.1).unwrap_or_default();
        let cat_cpu = rss_and_cpu(self.cat.pid()).map(|r| r.1).unwrap_or_default();
        let (d_olm, d_cat) = (olm_cpu - self.cpu.0, cat_cpu - self.cpu.1);
        let _ = self.audit.take()?;
        tokio::time::sleep(self.idle).await;
        let idle = self.audit.take()?;
        // RSS again at the end of the idle window: after the operators gave back their start-up code pages
        // (`olm_runtime::code_pages`, 60 s after start), which the first row's settled RSS may predate.
        let idle_rss = rss_and_cpu(self.olm.pid()).map(|r| r.0).unwrap_or_default()
            + rss_and_cpu(self.cat.pid()).map(|r| r.0).unwrap_or_default();
        let idle_rate = (total(&idle, OLM) + total(&idle, CAT)) as f64 / self.idle.as_secs_f64();
        // The first install's requests are reported; every install's time counts.
        let (install, install_counts) = self.probe_install().await?;
        let first_view_lag = self.view_lag;
        let mut times = vec![install];
        for _ in 1..self.probes_per_row {
            times.push(self.probe_install().await?.0);
        }
        times.sort();
        let p50 = times[times.len() / 2];
        let max = times[times.len() - 1];
        let copies = match copies {
            Some(n) => format!("{:.1} s", self.copies_time(n).await?.as_secs_f64()),
            None => "-".into(),
        };
        let after = (
            rss_and_cpu(self.olm.pid()).map(|r| r.1).unwrap_or_default(),
            rss_and_cpu(self.cat.pid()).map(|r| r.1).unwrap_or_default(),
        );
        self.cpu = after;
        self.rows += 1;
        eprintln!(
            "SCALE | {step} | RSS olm {:.1} MiB, catalog {:.1} MiB, both {:.1} MiB (anonymous {:.1} MiB) | CPU during step olm {d_olm:.1} s, catalog {d_cat:.1} s | \
             requests during step: olm [{}] catalog [{}] | idle {idle_rate:.3} req/s over {:?} (olm [{}] catalog [{}]), RSS both after it {:.1} MiB | \
             Operator writes during step {} | \
             new Subscription -> Succeeded p50 {:.2} s, max {:.2} s over {} installs; the first costing {} requests (olm [{}] catalog [{}]), its Operator showing it {:.2} s later | \
             new namespace's copies {copies}",
            olm_rss as f64 / 1024.0,
            cat_rss as f64 / 1024.0,
            (olm_rss + cat_rss) as f64 / 1024.0,
            anon as f64 / 1024.0,
            by_verb(&during, OLM),
            by_verb(&during, CAT),
            self.idle,
            by_resource(&idle, OLM),
            by_resource(&idle, CAT),
            idle_rss as f64 / 1024.0,
            writes(&during, OLM, "operators"),
            p50.as_secs_f64(),
            max.as_secs_f64(),
            times.len(),
            total(&install_counts, OLM) + total(&install_counts, CAT),
            by_resource(&install_counts, OLM),
            by_resource(&install_counts, CAT),
            first_view_lag.as_secs_f64(),
        );
        Ok(self.rows >= self.max_rows)
    }
}

/// Wait until the cluster holds at least `want` CSVs, counted cheaply: a list of one item whose
/// `remainingItemCount` tells the rest (no selector, so the apiserver gives the count; a metadata-only list
/// leaves that count out, hence a full list of one).
async fn csvs_at_least(client: &kube::Client, want: usize) -> anyhow::Result<()> {
    let all: Api<ClusterServiceVersion> = Api::all(client.clone());
    eventually(Duration::from_secs(3600), "every copy in place", || {
        let all = all.clone();
        async move {
            let page = all.list(&ListParams::default().limit(1)).await?;
            let count = page.items.len()
                + page
                    .metadata
                    .remaining_item_count
                    .unwrap_or_default()
                    .max(0) as usize;
            Ok((count >= want).then_some(()))
        }
    })
    .await
}

async fn set_copies(client: &kube::Client, enabled: bool) -> anyhow::Result<()> {
    let api: Api<messages::crd::olm_config::OLMConfig> = Api::all(client.clone());
    let body = json!({"apiVersion": "operators.coreos.com/v1", "kind": "OLMConfig", "metadata": {"name": "cluster"},
                      "spec": {"features": {"disableCopiedCSVs": !enabled}}});
    api.patch(
        "cluster",
        &PatchParams::apply("olm-rs-scale-bench").force(),
        &Patch::Apply(&body),
    )
    .await?;
    Ok(())
}

#[tokio::test]
#[ignore = "benchmark: run alone on a private control plane with OLM_RS_AUDIT=1 (see the file's header)"]
async fn scale_steps() -> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    let audit_path = cluster
        .kubeconfig
        .parent()
        .map(|d| d.join("audit.log"))
        .unwrap_or_default();
    anyhow::ensure!(
        audit_path.is_file(),
        "{} missing: start the control plane with OLM_RS_AUDIT=1 (see this file's header)",
        audit_path.display()
    );
    let client = cluster.client().await?;
    for ns in [CATALOG_NS, GLOBAL_NS] {
        create_namespace(&client, ns).await?;
    }
    let globals = env_usize("OLM_RS_SCALE_GLOBAL", 5);
    let mut ops: Vec<Op> = (0..globals)
        .map(|i| Op::new(&format!("global{i}"), "1.0.0"))
        .collect();
    ops.push(Op::new("probe", "1.0.0"));
    ops.push(Op::new("own", "1.0.0"));
    set_copies(&client, true).await?;
    let olm = OperatorProcess::start(cluster, OLM, &["--namespace", GLOBAL_NS]).await?;
    let cat = OperatorProcess::start(cluster, CAT, &["--namespace", CATALOG_NS]).await?;
    let mut b = Bench {
        cluster,
        client: client.clone(),
        olm,
        cat,
        audit: AuditLog::from_now(&audit_path)?,
        cpu: (0.0, 0.0),
        namespaces: 0,
        probes: 0,
        idle: Duration::from_secs(env_usize("OLM_RS_SCALE_IDLE_SECS", 120) as u64),
        rows: 0,
        max_rows: env_usize("OLM_RS_SCALE_ROWS", usize::MAX),
        probes_per_row: env_usize("OLM_RS_SCALE_PROBES", 5).max(1),
        view_lag: Duration::ZERO,
    };
    configmap_catalog(&ctx(&b, CATALOG_NS), "cat", &Catalog::with(ops), 0).await?;
    if b.row("empty (one catalog)", None).await? {
        return Ok(());
    }

    let global = ctx(&b, GLOBAL_NS);
    create(&global, Og::named("global").build()).await?;
    for i in 0..globals {
        let name = format!("global{i}");
        subscription(
            &global,
            sub_to(&global, &name, &name, "cat").source("cat", CATALOG_NS),
        )
        .await?;
    }
    let csvs: Api<ClusterServiceVersion> = Api::namespaced(client.clone(), GLOBAL_NS);
    for i in 0..globals {
        await_object(
            &csvs,
            &format!("global{i}.v1.0.0"),
            Duration::from_secs(300),
            "Succeeded",
            |c| c.is_some_and(|c| c.phase().as_str() == "Succeeded"),
        )
        .await?;
    }
    if b.row(
        &format!("{globals} AllNamespaces operators, copies on"),
        Some(globals),
    )
    .await?
    {
        return Ok(());
    }

    let with_copies = env_usize("OLM_RS_SCALE_NS_COPIES", 2000);
    b.grow_namespaces(with_copies).await?;
    // The row is measured once every namespace holds its copies (the first full-size run measured mid-copy).
    csvs_at_least(&client, globals * with_copies).await?;
    if b.row(
        &format!("{with_copies} namespaces, copies on"),
        Some(globals),
    )
    .await?
    {
        return Ok(());
    }

    set_copies(&client, false).await?;
    if b.row(&format!("{with_copies} namespaces, copies off"), None)
        .await?
    {
        return Ok(());
    }

    let target = env_usize("OLM_RS_SCALE_NS", 10_000);
    for step in [target / 2, target] {
        b.grow_namespaces(step).await?;
        if b.row(&format!("{step} namespaces, copies off"), None)
            .await?
        {
            return Ok(());
        }
    }

    let own = env_usize("OLM_RS_SCALE_OWN", 1000).min(b.namespaces);
    futures::stream::iter(0..own)
        .map(|i| {
            let c = ctx(&b, &format!("scale-ns-{i}"));
            async move {
                operator_group(&c).await?;
                subscription(
                    &c,
                    sub_to(&c, "own", "own", "cat").source("cat", CATALOG_NS),
                )
                .await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<anyhow::Result<Vec<()>>>()?;
    eventually(
        Duration::from_secs(3600),
        "every own-namespace operator Succeeded",
        || {
            let client = client.clone();
            async move {
                let all: Api<ClusterServiceVersion> = Api::all(client);
                let done = all
                    .list(&ListParams::default())
                    .await?
                    .items
                    .iter()
                    .filter(|c| {
                        c.metadata.name.as_deref() == Some("own.v1.0.0")
                            && c.phase().as_str() == "Succeeded"
                    })
                    .count();
                Ok((done >= own).then_some(()))
            }
        },
    )
    .await?;
    // The Operator view's lag behind the installs: from the last CSV Succeeded to every Operator showing it.
    let wanted = (0..own).map(|i| format!("own.scale-ns-{i}")).collect();
    let lag = view::caught_up(&client, wanted, Duration::from_secs(1800)).await?;
    eprintln!(
        "SCALE | view catch-up | every one of {own} new Operators shows its CSV Succeeded {:.1} s after the last CSV Succeeded",
        lag.as_secs_f64()
    );
    if b.row(&format!("{own} own-namespace operators"), None)
        .await?
    {
        return Ok(());
    }

    let catalogs = env_usize("OLM_RS_SCALE_CATALOGS", 50);
    let cat_ctx = ctx(&b, CATALOG_NS);
    for i in 1..catalogs {
        configmap_catalog(
            &cat_ctx,
            &format!("cat{i}"),
            &Catalog::with(vec![Op::new(&format!("extra{i}"), "1.0.0")]),
            0,
        )
        .await?;
    }
    if b.row(&format!("{catalogs} CatalogSources"), None).await? {
        return Ok(());
    }
    Ok(())
}
