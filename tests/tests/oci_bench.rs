//! Benchmark of issue 13's figures (ignored by default; run with `--ignored --nocapture`, needs the local
//! registry that `hack/control-plane.sh up` starts and ../shared/catalogs):
//! - bundle unpack, cold (pull + unpack + parse by catalog-operator's unpacker) and cached (digest cache hit);
//! - the community FBC (745 bundles) as a catalog image: CatalogSource created → READY, and catalog-operator's
//!   RSS before and with it loaded;
//! - Subscription created → CSV Succeeded, p50/p99 over 20 installs of bundle images from a catalog image;
//! - catalog memory per catalog size (issue 33, [`catalog_memory_per_size`]): catalog-operator's and
//!   package-server's RSS idle and with one catalog image loaded of 33, 745 and about 10,000 bundles (two
//!   community packages, the community FBC, 14 renamed copies of it), and the load times. Point
//!   `OLM_RS_BIN_DIR` at release builds for the figures in docs/performance.md.

use catalog_operator::unpacker::{Poll, Unpacker};
use kube::Api;
use messages::crd::catalog_source::CatalogSource;
use olm_tests::bench_figures::{percentile, pid_serving, rss_kib};
use olm_tests::catalog_fixture::*;
use olm_tests::oci_fixture::*;
use olm_tests::{await_object, with_namespace};
use std::sync::Arc;
use std::time::{Duration, Instant};

const INSTALLS: usize = 20;

/// A bundle image of `op` (its CSV and owned CRD), pushed; returns `repo@digest`.
async fn push_op(registry: &oci::Registry, prefix: &str, op: &Op) -> anyhow::Result<String> {
    let annotations = format!(
        "annotations:\n  operators.operatorframework.io.bundle.package.v1: {}\n  operators.operatorframework.io.bundle.channels.v1: stable\n",
        op.package
    );
    let mut files = vec![
        (
            "metadata/annotations.yaml".to_string(),
            annotations.into_bytes(),
        ),
        (
            "manifests/csv.json".to_string(),
            op.csv().to_string().into_bytes(),
        ),
    ];
    if let Some(c) = &op.owns {
        files.push((
            "manifests/crd.json".to_string(),
            c.manifest().to_string().into_bytes(),
        ));
    }
    let layer = oci::build::tar_gz(&files)?;
    let reference = format!("{prefix}/{}-bundle:v{}", op.package, op.version);
    let digest = registry
        .push(
            &reference,
            &oci::Auth::Anonymous,
            vec![(oci::build::LAYER_MEDIA_TYPE.into(), layer)],
            &Default::default(),
        )
        .await?;
    Ok(oci::publish::pinned(&reference, &digest))
}

async fn unpack_once(unpacker: &Arc<Unpacker>, image: &str) -> anyhow::Result<Duration> {
    let started = Instant::now();
    loop {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let notify = Box::new(move || {
            let _ = tx.send(());
        });
        match unpacker.poll(image, oci::Auth::Anonymous, Duration::from_secs(60), notify) {
            Poll::Ready(_) => return Ok(started.elapsed()),
            Poll::Pending => {
                let _ = tokio::time::timeout(Duration::from_secs(60), rx).await;
            }
            Poll::Failed { error, .. } => anyhow::bail!("{error}"),
        }
    }
}

#[tokio::test]
#[ignore = "benchmark"]
async fn bundle_unpack_catalog_image_load_and_installs_from_images() -> anyhow::Result<()> {
    let Some(bundles) = community_bundles() else {
        anyhow::bail!("../shared/catalogs is absent");
    };
    let fbc_dir = bundles
        .ancestors()
        .nth(2)
        .map(|c| c.join("community-operators-prod-fbc/catalogs"))
        .filter(|d| d.is_dir())
        .ok_or_else(|| anyhow::anyhow!("community-operators-prod-fbc is absent"))?;
    let cluster = olm_tests::Cluster::shared()?;
    with_namespace(cluster, "ocibench", |ctx| async move {
        let registry = oci::Registry::default();
        let prefix = format!("{}/{}", registry_addr(), ctx.namespace);

        // 1. Unpack: real community bundles, cold then cached.
        let published = oci::publish::push_tree(&registry, &bundles, &["pcc-operator".into(), "sonar-operator".into(), "apicurito".into(), "hawtio-operator".into()], &prefix).await?;
        let unpacker = Arc::new(Unpacker::default());
        let (mut cold, mut cached) = (Vec::new(), Vec::new());
        for image in published.bundles.values() {
            cold.push(unpack_once(&unpacker, image).await?);
            cached.push(unpack_once(&unpacker, image).await?);
        }
        cold.sort();
        cached.sort();

        // 2. The community FBC as a catalog image.
        let fbc_image = format!("{prefix}/community-catalog:latest");
        let files = oci::build::files_from_dir(&fbc_dir, "configs")?;
        oci::publish::push_catalog_files(&registry, files, &fbc_image).await?;
        let op = catalog_operator(&ctx, &[]).await?;
        let olm = olm_operator(&ctx).await?;
        let idle = pid_serving("catalog-operator", op.http_port).and_then(rss_kib);
        let catalogs: Api<CatalogSource> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let started = Instant::now();
        create(&ctx, Catsrc::named("community").image(&fbc_image).build()).await?;
        await_object(&catalogs, "community", Duration::from_secs(300), "READY", |c| {
            c.and_then(|c| c.status.as_ref()).and_then(|s| s.connection_state.as_ref()).is_some_and(|s| s.last_observed_state.as_str() == "READY")
        })
        .await?;
        let ready = started.elapsed();
        let loaded = pid_serving("catalog-operator", op.http_port).and_then(rss_kib);

        // 3. 20 installs from bundle images listed in a catalog image.
        let mut docs = Vec::new();
        for i in 0..INSTALLS {
            let o = Op::new(&format!("bench{i}"), "1.0.0");
            let image = push_op(&registry, &prefix, &o).await?;
            docs.extend(fbc_package(&o.package, &[(&o.name(), "1.0.0", None, &image)]));
        }
        let bench_image = format!("{prefix}/bench-catalog:latest");
        oci::publish::push_catalog_files(&registry, vec![("configs/catalog.json".into(), fbc_text(&docs).into_bytes())], &bench_image).await?;
        operator_group(&ctx).await?;
        create(&ctx, Catsrc::named("bench").image(&bench_image).build()).await?;
        await_object(&catalogs, "bench", DEADLINE, "READY", |c| {
            c.and_then(|c| c.status.as_ref()).and_then(|s| s.connection_state.as_ref()).is_some_and(|s| s.last_observed_state.as_str() == "READY")
        })
        .await?;
        let csvs: Api<messages::crd::csv::ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let mut took = Vec::with_capacity(INSTALLS);
        for i in 0..INSTALLS {
            let name = format!("bench{i}");
            let started = Instant::now();
            subscription(&ctx, sub_to(&ctx, &name, &name, "bench")).await?;
            await_object(&csvs, &format!("{name}.v1.0.0"), DEADLINE, "Succeeded", |c| c.is_some_and(|c| c.phase().as_str() == "Succeeded")).await?;
            took.push(started.elapsed());
        }
        took.sort();
        eprintln!(
            "BENCH bundle unpack over {} community bundles: cold p50 {:?} max {:?}; cached p50 {:?} max {:?}",
            cold.len(), percentile(&cold, 0.5), cold.last().copied().unwrap_or_default(), percentile(&cached, 0.5), cached.last().copied().unwrap_or_default()
        );
        eprintln!(
            "BENCH community FBC catalog image ({}): CatalogSource created -> READY {:?}; catalog-operator RSS idle {} KiB, with it loaded {} KiB",
            fbc_dir.display(), ready, idle.map(|k| k.to_string()).unwrap_or("?".into()), loaded.map(|k| k.to_string()).unwrap_or("?".into())
        );
        eprintln!(
            "BENCH {INSTALLS} installs from bundle images in a catalog image: Subscription created -> CSV Succeeded p50 {:?} p99 {:?}",
            percentile(&took, 0.5), percentile(&took, 0.99)
        );
        drop(olm);
        Ok(())
    })
    .await
}

/// `VmRSS` and `VmHWM` (peak) of `pid`, KiB.
fn rss_and_peak(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_default()
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// The bundles of each package folder of the FBC at `dir`.
fn bundles_per_package(dir: &std::path::Path) -> anyhow::Result<Vec<(String, usize)>> {
    let catalog = catalog::load::load_unchecked(dir)?;
    Ok(catalog
        .packages
        .values()
        .map(|p| (p.name.clone(), p.bundles.len()))
        .collect())
}

/// Packages of `sizes`, largest first, whose bundles add up to at most `target`.
fn packages_totalling(mut sizes: Vec<(String, usize)>, target: usize) -> (Vec<String>, usize) {
    sizes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut total = 0;
    let mut chosen = Vec::new();
    for (name, n) in sizes {
        if total + n <= target {
            total += n;
            chosen.push(name);
        }
    }
    (chosen, total)
}

/// Whether the catalog-operator under test serves its catalogs to package-server (`--catalog-serve-addr`).
fn shares_catalogs() -> anyhow::Result<bool> {
    let out = std::process::Command::new(olm_tests::bin_path("catalog-operator")?)
        .args(["run", "--help"])
        .output()?;
    Ok(String::from_utf8_lossy(&out.stdout).contains("--catalog-serve-addr"))
}

/// Deletes the Service and Endpoints `package_server_fixture::start` made, so the next start can make them.
async fn forget_package_server(ctx: &olm_tests::TestContext) -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::{Endpoints, Service};
    let gone = |r: Result<_, kube::Error>| match r {
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        other => other.map(|_| ()),
    };
    gone(
        Api::<Service>::namespaced(ctx.client.clone(), &ctx.namespace)
            .delete("packageserver", &Default::default())
            .await
            .map(|_| ()),
    )?;
    gone(
        Api::<Endpoints>::namespaced(ctx.client.clone(), &ctx.namespace)
            .delete("packageserver", &Default::default())
            .await
            .map(|_| ()),
    )?;
    Ok(())
}

/// One catalog per size: a fresh catalog-operator and package-server each, RSS idle, the CatalogSource created →
/// READY and → package-server listing every package, RSS then and after one heap-trim period, and peaks.
#[tokio::test]
#[ignore = "benchmark"]
async fn catalog_memory_per_size() -> anyhow::Result<()> {
    use olm_tests::package_server_fixture as pkgserver;
    let fbc_dir = std::env::var_os("OLM_RS_SHARED")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared")
        })
        .join("catalogs/community-operators-prod-fbc/catalogs/v4.21");
    anyhow::ensure!(
        fbc_dir.is_dir(),
        "the community FBC is missing at {}",
        fbc_dir.display()
    );
    let cluster = olm_tests::Cluster::shared()?;
    let _apiservice = pkgserver::exclusive().await;
    with_namespace(cluster, "catmem", |ctx| async move {
        let registry = oci::Registry::default();
        let prefix = format!("{}/{}", registry_addr(), ctx.namespace);
        let all = oci::build::files_from_dir(&fbc_dir, "configs")?;
        // 1. Three catalog images.
        let (small, small_bundles) = packages_totalling(bundles_per_package(&fbc_dir)?, 33);
        let small_files: Vec<_> = all
            .iter()
            .filter(|(p, _)| small.iter().any(|s| p.starts_with(&format!("configs/{s}/"))))
            .cloned()
            .collect();
        let synthetic = tempfile::tempdir()?;
        let source = catalog::load::load_unchecked(&fbc_dir)?;
        let (synth_packages, synth_bundles) = registry::commands::write_synthetic(&source, 14, synthetic.path())?;
        drop(source);
        let sizes = [
            ("small", small.len(), small_bundles, small_files),
            ("community", 33, 745, all),
            ("synthetic", synth_packages, synth_bundles, oci::build::files_from_dir(synthetic.path(), "configs")?),
        ];
        let catalogs: Api<CatalogSource> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let mut rows = Vec::new();
        for (name, packages, bundles, files) in sizes {
            let image = format!("{prefix}/{name}-catalog:latest");
            oci::publish::push_catalog_files(&registry, files, &image).await?;
            // 2. Fresh processes, idle; package-server reads image catalogs from catalog-operator when the
            // binaries can (`--catalog-serve-addr`), else pulls them itself.
            let serve = format!("127.0.0.1:{}", free_port()?);
            let (op_flags, ps_flags) = if shares_catalogs()? {
                (vec!["--catalog-serve-addr", serve.as_str()], vec!["--image-catalogs-address", serve.as_str()])
            } else {
                (Vec::new(), Vec::new())
            };
            let op = catalog_operator(&ctx, &op_flags).await?;
            let server = pkgserver::start_with(cluster, &ctx.client, &ctx.namespace, &ps_flags).await?;
            let (op_pid, ps_pid) = (op.pid(), server.process.pid());
            let (op_idle, ps_idle) = (rss_and_peak(op_pid).0, rss_and_peak(ps_pid).0);
            // 3. Load: READY, then package-server listing every package.
            let started = Instant::now();
            create(&ctx, Catsrc::named(name).image(&image).build()).await?;
            let loaded = await_object(&catalogs, name, Duration::from_secs(600), "READY or failed", |c| {
                c.and_then(|c| c.status.as_ref()).and_then(|s| s.connection_state.as_ref()).is_some_and(|s| ["READY", "TRANSIENT_FAILURE"].contains(&s.last_observed_state.as_str()))
            })
            .await?;
            let ready = started.elapsed();
            let status = loaded.status.unwrap_or_default();
            if status.connection_state.as_ref().is_some_and(|s| s.last_observed_state.as_str() == "TRANSIENT_FAILURE") {
                let (op_now, op_peak) = rss_and_peak(op_pid);
                rows.push(format!(
                    "| {name}: {packages} packages, {bundles} bundles | failed after {ready:.1?}: {} | catalog-operator idle {} / then {} / peak {} |",
                    status.message, mib(op_idle), mib(op_now), mib(op_peak)
                ));
                eprintln!("BENCH {}", rows.last().map(String::as_str).unwrap_or_default());
                catalogs.delete(name, &Default::default()).await?;
                drop(server);
                forget_package_server(&ctx).await?;
                continue;
            }
            let (op_ready, _) = rss_and_peak(op_pid);
            let label = format!("catalog={name}");
            let ns = ctx.namespace.clone();
            let listing = olm_tests::eventually(Duration::from_secs(300), &format!("{packages} packages listed"), || async {
                Ok((pkgserver::names(cluster, &ns, &["-l", &label])?.len() == packages).then_some(()))
            })
            .await;
            let listed = match listing {
                Ok(()) => format!("{:.1?}", started.elapsed()),
                Err(e) => {
                    let why = server.process.logs().lines().rev().find(|l| l.contains("catalog unreadable")).unwrap_or_default().to_string();
                    format!("not listed ({e}; {why})")
                }
            };
            let (ps_listed, _) = rss_and_peak(ps_pid);
            // A measurement window, not a wait for state: both binaries trim their heap every 30 s.
            tokio::time::sleep(Duration::from_secs(35)).await;
            let (op_settled, op_peak) = rss_and_peak(op_pid);
            let (ps_settled, ps_peak) = rss_and_peak(ps_pid);
            rows.push(format!(
                "| {name}: {packages} packages, {bundles} bundles | READY {ready:.1?}, listed {listed} | catalog-operator idle {} / at READY {} / settled {} / peak {} | package-server idle {} / listed {} / settled {} / peak {} |",
                mib(op_idle), mib(op_ready), mib(op_settled), mib(op_peak), mib(ps_idle), mib(ps_listed), mib(ps_settled), mib(ps_peak)
            ));
            eprintln!("BENCH {}", rows.last().map(String::as_str).unwrap_or_default());
            catalogs.delete(name, &Default::default()).await?;
            drop(server);
            drop(op);
            forget_package_server(&ctx).await?;
        }
        for r in rows {
            println!("BENCH {r}");
        }
        Ok(())
    })
    .await
}
