//! The side-by-side bench (ignored; `hack/side-by-side.sh` runs it on a private control plane with the audit log
//! on and OLM's published CRDs): the same workload on OLM v0 and on olm-rs, one after the other, one harness. For
//! each OLM: a catalog served over gRPC by `registry serve` behind an `address` CatalogSource; a warm-up install;
//! `OLM_RS_SBS_INSTALLS` (20) Subscriptions installed one after another, each timed to CSV Succeeded, with the
//! API requests both operators made for them (audit log, by user agent); an install with a 3-step `replaces`
//! upgrade; an AllNamespaces operator copied into `OLM_RS_SBS_NAMESPACES` (200) new namespaces; RSS and CPU of
//! both operators. Each OLM's namespaces are deleted while it still runs (OLM v0's CSV finalizers need it), then
//! it stops. It prints one markdown table, the one in docs/performance.md, and each operator's requests during
//! the installs by verb and resource. `OLM_RS_SBS_ONLY=v0` or `rs` runs one OLM alone.

mod scale_support;
mod side_by_side_support;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::{Client, ResourceExt};
use messages::crd::catalog_source::{CatalogSource, GrpcConnectionState};
use messages::crd::csv::{ClusterServiceVersion, CsvPhase};
use messages::testing::{Catsrc, Og, Sub};
use olm_tests::bench_figures::percentile;
use olm_tests::catalog_fixture::{Catalog, Op, RegistryProcess};
use olm_tests::{Cluster, await_object, eventually};
use scale_support::{AuditLog, by_resource, rss_and_cpu, total};
use side_by_side_support::{Figures, Olm, Process, start, table};
use std::time::{Duration, Instant};

const DEADLINE: Duration = Duration::from_secs(180);
const CATALOG: &str = "bench";

fn count(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::test]
#[ignore = "benchmark: OLM v0 and olm-rs side by side (hack/side-by-side.sh)"]
async fn olm_v0_and_olm_rs_side_by_side() -> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    let audit_path = std::path::PathBuf::from(std::env::var("OLM_RS_AUDIT_LOG").map_err(|_| {
        anyhow::anyhow!("OLM_RS_AUDIT_LOG names the audit log (hack/side-by-side.sh sets it)")
    })?);
    let installs = count("OLM_RS_SBS_INSTALLS", 20);
    let namespaces = count("OLM_RS_SBS_NAMESPACES", 200);
    // OLM_RS_SBS_ONLY=v0|rs: one column (to look into one OLM's figures).
    let only = std::env::var("OLM_RS_SBS_ONLY").ok();
    let mut columns = Vec::new();
    for olm in [Olm::V0, Olm::Rs] {
        if only.as_deref().is_some_and(|o| o != olm.tag()) {
            continue;
        }
        let figures = Workload::new(olm, cluster, &audit_path, installs, namespaces)
            .await?
            .run()
            .await?;
        eprintln!("{}: {figures:?}", olm.heading());
        columns.push((olm, figures));
    }
    println!("{}", table(&columns));
    Ok(())
}

struct Workload {
    olm: Olm,
    cluster: &'static Cluster,
    client: Client,
    audit: std::path::PathBuf,
    installs: usize,
    namespaces: usize,
    catalog_ns: String,
    install_ns: String,
    global_ns: String,
}

impl Workload {
    async fn new(
        olm: Olm,
        cluster: &'static Cluster,
        audit: &std::path::Path,
        installs: usize,
        namespaces: usize,
    ) -> anyhow::Result<Self> {
        let tag = olm.tag();
        Ok(Self {
            olm,
            cluster,
            client: cluster.client().await?,
            audit: audit.to_owned(),
            installs,
            namespaces,
            catalog_ns: format!("sbs-{tag}-olm"),
            install_ns: format!("sbs-{tag}-installs"),
            global_ns: format!("sbs-{tag}-global"),
        })
    }

    fn package(&self, name: &str) -> String {
        format!("{}-{name}", self.olm.tag())
    }

    fn catalog(&self) -> Catalog {
        let mut ops = vec![
            Op::new(&self.package("warm"), "1.0.0"),
            Op::new(&self.package("global"), "1.0.0"),
        ];
        ops.extend(
            (0..self.installs).map(|i| Op::new(&self.package(&format!("bench{i}")), "1.0.0")),
        );
        let chain = self.package("chain");
        let mut previous: Option<String> = None;
        for version in ["1.0.0", "1.1.0", "1.2.0", "1.3.0"] {
            let mut op = Op::new(&chain, version);
            if let Some(p) = &previous {
                op = op.replaces(p);
            }
            previous = Some(op.name());
            ops.push(op);
        }
        Catalog::with(ops)
    }

    async fn run(self) -> anyhow::Result<Figures> {
        for ns in [&self.catalog_ns, &self.install_ns, &self.global_ns] {
            create_namespace(&self.client, ns).await?;
        }
        let groups = |ns: &str| Api::namespaced(self.client.clone(), ns);
        groups(&self.install_ns)
            .create(
                &PostParams::default(),
                &Og::named("og").targets(&[&self.install_ns]).build(),
            )
            .await?;
        groups(&self.global_ns)
            .create(&PostParams::default(), &Og::named("og").build())
            .await?;
        let dir = std::env::temp_dir().join(format!("olm-rs-sbs-{}", self.olm.tag()));
        let file = self.catalog().write_file(&dir, CATALOG)?;
        let registry = RegistryProcess::start_on_free_port(&[&file])?;
        Api::<CatalogSource>::namespaced(self.client.clone(), &self.catalog_ns)
            .create(
                &PostParams::default(),
                &Catsrc::named(CATALOG)
                    .address(&format!("127.0.0.1:{}", registry.port))
                    .build(),
            )
            .await?;

        let started = Instant::now();
        let mut processes = start(self.olm, self.cluster, &self.catalog_ns).await?;
        let result = self.measure(started, &mut processes).await;
        if let Err(e) = &result {
            for p in processes.iter_mut() {
                if let Some(exit) = p.exited() {
                    eprintln!("{} exited {exit}", self.olm.heading());
                }
            }
            eprintln!("{} failed: {e:#}", self.olm.heading());
        }
        // Delete under the OLM that made the objects (OLM v0 removes its CSV finalizers), then stop it.
        let cleaned = self.delete_namespaces().await;
        drop(processes);
        drop(registry);
        let figures = result?;
        cleaned?;
        Ok(figures)
    }

    async fn measure(
        &self,
        started: Instant,
        processes: &mut [Process; 2],
    ) -> anyhow::Result<Figures> {
        let mut f = Figures {
            installs: self.installs,
            copies: self.namespaces,
            ..Figures::default()
        };
        await_object(
            &Api::<CatalogSource>::namespaced(self.client.clone(), &self.catalog_ns),
            CATALOG,
            DEADLINE,
            "the CatalogSource READY",
            |c: Option<&CatalogSource>| {
                c.and_then(|c| c.status.as_ref())
                    .and_then(|s| s.connection_state.as_ref())
                    .is_some_and(|s| s.last_observed_state == GrpcConnectionState::Ready)
            },
        )
        .await?;
        f.catalog_ready = started.elapsed();
        self.install(&self.install_ns, &self.package("warm"), None, "1.0.0")
            .await?;

        let mut audit = AuditLog::from_now(&self.audit)?;
        let mut took = Vec::with_capacity(self.installs);
        for i in 0..self.installs {
            let package = self.package(&format!("bench{i}"));
            took.push(
                self.install(&self.install_ns, &package, None, "1.0.0")
                    .await?,
            );
        }
        let counts = audit.take()?;
        let [olm_operator, catalog_operator] = self.olm.components();
        let requests = total(&counts, olm_operator) + total(&counts, catalog_operator);
        for component in [olm_operator, catalog_operator] {
            eprintln!(
                "{}: {component}'s requests during the installs: {}",
                self.olm.heading(),
                by_resource(&counts, component)
            );
        }
        f.requests_per_install = requests as f64 / self.installs.max(1) as f64;
        took.sort();
        f.install_p50 = percentile(&took, 0.5);
        f.install_p90 = percentile(&took, 0.9);

        let chain = self.package("chain");
        f.upgrade_chain = self
            .install(
                &self.install_ns,
                &chain,
                Some(&format!("{chain}.v1.0.0")),
                "1.3.0",
            )
            .await?;

        self.install(&self.global_ns, &self.package("global"), None, "1.0.0")
            .await?;
        let (created, done) = self.copies().await?;
        f.namespaces_created = created;
        f.copies_done = done;

        for (i, p) in processes.iter_mut().enumerate() {
            if let Some(exit) = p.exited() {
                anyhow::bail!(
                    "{} exited during the workload: {exit}",
                    self.olm.components()[i]
                );
            }
            let (rss, cpu) = rss_and_cpu(p.pid())
                .ok_or_else(|| anyhow::anyhow!("no /proc entry for {}", p.pid()))?;
            f.rss_kib[i] = rss;
            f.cpu_s[i] = cpu;
        }
        Ok(f)
    }

    /// Subscribe to `package` in `ns` (from `starting` when given) and wait until `package.v<version>` is
    /// Succeeded: the time that took.
    async fn install(
        &self,
        ns: &str,
        package: &str,
        starting: Option<&str>,
        version: &str,
    ) -> anyhow::Result<Duration> {
        let mut sub = Sub::named(package)
            .package(package)
            .channel("stable")
            .source(CATALOG, &self.catalog_ns);
        if let Some(s) = starting {
            sub = sub.starting_csv(s);
        }
        let begun = Instant::now();
        Api::namespaced(self.client.clone(), ns)
            .create(&PostParams::default(), &sub.build())
            .await?;
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(self.client.clone(), ns);
        await_object(
            &csvs,
            &format!("{package}.v{version}"),
            DEADLINE,
            "Succeeded",
            |c: Option<&ClusterServiceVersion>| c.is_some_and(|c| c.phase() == CsvPhase::Succeeded),
        )
        .await?;
        Ok(begun.elapsed())
    }

    fn copy_namespace(&self, i: usize) -> String {
        format!("sbs-{}-c{i:04}", self.olm.tag())
    }

    /// Create the namespaces and wait until each holds the global operator's copied CSV: (creating them took,
    /// all copies present after).
    async fn copies(&self) -> anyhow::Result<(Duration, Duration)> {
        let begun = Instant::now();
        for i in 0..self.namespaces {
            create_namespace(&self.client, &self.copy_namespace(i)).await?;
        }
        let created = begun.elapsed();
        let all: Api<ClusterServiceVersion> = Api::all(self.client.clone());
        let selector = format!("olm.copiedFrom={}", self.global_ns);
        let prefix = format!("sbs-{}-c", self.olm.tag());
        let wanted = self.namespaces;
        eventually(DEADLINE, "every copied CSV", || {
            let all = all.clone();
            let selector = selector.clone();
            let prefix = prefix.clone();
            async move {
                let copies = all.list(&ListParams::default().labels(&selector)).await?;
                let here = copies
                    .items
                    .iter()
                    .filter(|c| c.namespace().is_some_and(|n| n.starts_with(&prefix)))
                    .count();
                Ok((here >= wanted).then_some(()))
            }
        })
        .await?;
        Ok((created, begun.elapsed()))
    }

    async fn delete_namespaces(&self) -> anyhow::Result<()> {
        let api: Api<Namespace> = Api::all(self.client.clone());
        let mut names: Vec<String> = (0..self.namespaces)
            .map(|i| self.copy_namespace(i))
            .collect();
        names.extend([
            self.install_ns.clone(),
            self.global_ns.clone(),
            self.catalog_ns.clone(),
        ]);
        for name in &names {
            match api.delete(name, &DeleteParams::background()).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => return Err(e.into()),
            }
        }
        let prefix = format!("sbs-{}-", self.olm.tag());
        eventually(
            Duration::from_secs(300),
            "the bench's namespaces deleted",
            || {
                let api = api.clone();
                let prefix = prefix.clone();
                async move {
                    let left = api.list(&ListParams::default()).await?;
                    Ok(
                        (!left.items.iter().any(|n| n.name_any().starts_with(&prefix)))
                            .then_some(()),
                    )
                }
            },
        )
        .await
    }
}

async fn create_namespace(client: &Client, name: &str) -> anyhow::Result<()> {
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await?;
    Ok(())
}
