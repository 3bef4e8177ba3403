//! What each `registry` subcommand does.

use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use catalog::{Catalog, Format, LoadError, load, validate};

use crate::bodies::BodyMode;
use crate::cli::{CacheArgs, GenArgs, RenderArgs, ServeArgs, SourceArgs};
use crate::store::Store;

/// Loads every path (with `--format` if given), merges, validates.
pub fn load_sources(args: &SourceArgs) -> Result<Catalog, LoadError> {
    let format = args
        .format
        .as_deref()
        .map(|f| Format::from_wire(f).ok_or(f));
    let mut catalog = Catalog::default();
    for p in &args.paths {
        let part = match &format {
            None => load::load_unchecked(p)?,
            Some(Ok(f)) => load::load_as(p, *f)?,
            Some(Err(bad)) => {
                return Err(LoadError::Manifest {
                    path: p.clone(),
                    message: format!("unknown --format {bad:?}"),
                });
            }
        };
        catalog.merge(part).map_err(LoadError::DuplicatePackage)?;
    }
    for note in &catalog.notes {
        eprintln!("warning: {note}");
    }
    validate::validate(&catalog)?;
    Ok(catalog)
}

pub async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let ServeArgs {
        source,
        port,
        listen,
        bodies,
        load_in_process,
    } = args;
    let mode = BodyMode::from_wire(&bodies).unwrap_or(BodyMode::Disk);
    let started = Instant::now();
    let (store, summary) = if load_in_process {
        let catalog = load_sources(&source)?;
        let summary = format!(
            "{} packages, {} bundles",
            catalog.packages.len(),
            catalog.bundle_count()
        );
        (Store::build_with(catalog, mode)?, summary)
    } else {
        load_in_child(&source, mode)?
    };
    let store = Arc::new(store);
    // Stop on SIGINT or SIGTERM (what Kubernetes sends), finishing in-flight calls. The handler
    // is installed before "serving on" is printed, so a signal right after it is not lost.
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let listener = crate::server::bind(SocketAddr::new(listen, port)).await?;
    let addr = listener.local_addr()?;
    println!(
        "loaded {summary} in {} ms; serving on {addr}",
        started.elapsed().as_millis()
    );
    std::io::stdout().flush()?;
    let shutdown = async move {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    };
    crate::server::serve(store, listener, shutdown).await?;
    Ok(())
}

/// Runs `registry cache-build` in a child process and opens the index it wrote.
fn load_in_child(source: &SourceArgs, mode: BodyMode) -> anyhow::Result<(Store, String)> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let dir = std::env::temp_dir().join(format!("olm-rs-registry-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.arg("cache-build").arg("--out").arg(&dir);
    if let Some(f) = &source.format {
        cmd.arg("--format").arg(f);
    }
    cmd.args(&source.paths)
        .stderr(std::process::Stdio::inherit());
    let out = cmd.output().context("run the catalog loader")?;
    if !out.status.success() {
        let _ = std::fs::remove_dir_all(&dir);
        anyhow::bail!("loading the catalog failed (see the messages above)");
    }
    let summary = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let store = Store::open_cache(&dir, mode, true)?;
    Ok((store, summary))
}

/// The loader child: validate, write the index, print a one-line summary. `Ok(false)` if invalid.
/// FBC sources are loaded one folder at a time (see [`catalog::fbc::units`]) so the model of
/// only one part is in memory; when a part refers to a package defined elsewhere, it falls
/// back to loading everything at once.
pub fn cache_build(args: CacheArgs) -> anyhow::Result<bool> {
    match cache_build_by_parts(&args) {
        Ok(Some(summary)) => {
            println!(
                "{summary} (loader peak RSS {} MiB)",
                peak_rss_mib().unwrap_or_default()
            );
            return Ok(true);
        }
        Ok(None) => {}
        Err(crate::store::CacheError::Load(LoadError::Invalid(d))) => {
            eprintln!("{d}");
            return Ok(false);
        }
        Err(e) => return Err(e.into()),
    }
    let catalog = match load_sources(&args.source) {
        Ok(c) => c,
        Err(LoadError::Invalid(d)) => {
            eprintln!("{d}");
            return Ok(false);
        }
        Err(e) => return Err(e.into()),
    };
    let (packages, bundles) = (catalog.packages.len(), catalog.bundle_count());
    Store::write_cache(catalog, &args.out)?;
    println!(
        "{packages} packages, {bundles} bundles (loader peak RSS {} MiB)",
        peak_rss_mib().unwrap_or_default()
    );
    Ok(true)
}

/// `Ok(None)` when the sources cannot be loaded part by part (not all FBC, or a part refers
/// to a package of another part).
fn cache_build_by_parts(args: &CacheArgs) -> Result<Option<String>, crate::store::CacheError> {
    let forced = args.source.format.as_deref().and_then(Format::from_wire);
    let mut units = Vec::new();
    for p in &args.source.paths {
        let format = match forced {
            Some(f) => f,
            None => load::detect(p)?,
        };
        if format != Format::Fbc {
            return Ok(None);
        }
        units.extend(catalog::fbc::units(p)?);
    }
    let mut counts = (0usize, 0usize);
    let mut findings = Vec::new();
    let mut cross_reference = false;
    // Units are parsed a few at a time (one per core), then indexed one by one.
    let width = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let mut chunks = units
        .chunks(width)
        .map(<[_]>::to_vec)
        .collect::<Vec<_>>()
        .into_iter();
    let mut loaded: std::collections::VecDeque<Result<catalog::Catalog, LoadError>> =
        std::collections::VecDeque::new();
    Store::write_cache_parts(&args.out, || {
        loop {
            if loaded.is_empty() {
                let chunk = chunks.next()?;
                loaded.extend(catalog::load::parallel_parts(&chunk));
            }
            let Some(next) = loaded.pop_front() else {
                continue;
            };
            let part = match next {
                Ok(part) => part,
                Err(LoadError::Invalid(d)) => {
                    cross_reference |=
                        d.0.iter()
                            .any(|x| matches!(x.problem, catalog::Problem::UnknownPackage(_)));
                    findings.extend(d.0);
                    continue;
                }
                Err(e) => return Some(Err(e.into())),
            };
            for note in &part.notes {
                eprintln!("warning: {note}");
            }
            if let Err(d) = validate::validate(&part) {
                findings.extend(d.0);
                continue;
            }
            counts.0 += part.packages.len();
            counts.1 += part.bundle_count();
            return Some(Ok(part));
        }
    })?;
    if cross_reference {
        return Ok(None);
    }
    if !findings.is_empty() {
        return Err(crate::store::CacheError::Load(LoadError::Invalid(
            catalog::Diagnostics(findings),
        )));
    }
    Ok(Some(format!("{} packages, {} bundles", counts.0, counts.1)))
}

/// This process's peak resident memory (VmHWM), in MiB.
pub fn peak_rss_mib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: u64 = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kib / 1024)
}

/// Prints the verdict; `Ok(false)` when the catalog has problems (they go to stderr).
pub fn validate(args: SourceArgs) -> anyhow::Result<bool> {
    match load_sources(&args) {
        Ok(c) => {
            println!(
                "valid: {} packages, {} channels, {} bundles",
                c.packages.len(),
                c.channel_count(),
                c.bundle_count()
            );
            Ok(true)
        }
        Err(LoadError::Invalid(d)) => {
            eprintln!("{d}");
            Ok(false)
        }
        Err(e) => Err(e.into()),
    }
}

pub fn render(args: RenderArgs) -> anyhow::Result<()> {
    let catalog = load_sources(&args.source)?;
    match &args.output {
        Some(path) => {
            let mut f = std::io::BufWriter::new(
                std::fs::File::create(path)
                    .with_context(|| format!("create {}", path.display()))?,
            );
            catalog::render::write_json(&catalog, &mut f)?;
            f.flush()?;
        }
        None => {
            let stdout = std::io::stdout();
            let mut lock = std::io::BufWriter::new(stdout.lock());
            catalog::render::write_json(&catalog, &mut lock)?;
            lock.flush()?;
        }
    }
    Ok(())
}

pub fn gen_synthetic(args: GenArgs) -> anyhow::Result<()> {
    let source = load::load_unchecked(&args.from)?;
    let (packages, bundles) = write_synthetic(&source, args.factor, &args.out)?;
    println!(
        "wrote {packages} packages, {bundles} bundles to {}",
        args.out.display()
    );
    Ok(())
}

/// Writes `factor` renamed copies (`<pkg>-sN`) of every package of `source` under `out`.
pub fn write_synthetic(
    source: &Catalog,
    factor: usize,
    out: &Path,
) -> anyhow::Result<(usize, usize)> {
    let names: Vec<String> = source.packages.keys().cloned().collect();
    let mut counts = (0, 0);
    for copy in 0..factor {
        let rename = |name: &str| format!("{name}-s{copy}");
        for pkg in source.packages.values() {
            let p = crate::synthetic::renamed(pkg, &rename(&pkg.name), &names, &rename);
            let dir = out.join(&p.name);
            std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
            let mut f = std::io::BufWriter::new(std::fs::File::create(dir.join("catalog.json"))?);
            for doc in catalog::render::package_documents(&p) {
                serde_json::to_writer(&mut f, &doc)?;
                f.write_all(b"\n")?;
            }
            f.flush()?;
            counts.0 += 1;
            counts.1 += p.bundles.len();
        }
    }
    Ok(counts)
}
