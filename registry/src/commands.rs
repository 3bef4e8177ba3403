//! What each `registry` subcommand does.

use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use catalog::{Catalog, Format, LoadError, load, validate};

use crate::cli::{GenArgs, RenderArgs, ServeArgs, SourceArgs};
use crate::store::Store;

/// Loads every path (with `--format` if given), merges, validates.
pub fn load_sources(args: &SourceArgs) -> Result<Catalog, LoadError> {
    let format = args.format.as_deref().map(|f| Format::from_wire(f).ok_or(f));
    let mut catalog = Catalog::default();
    for p in &args.paths {
        let part = match &format {
            None => load::load_unchecked(p)?,
            Some(Ok(f)) => load::load_as(p, *f)?,
            Some(Err(bad)) => {
                return Err(LoadError::Manifest { path: p.clone(), message: format!("unknown --format {bad:?}") });
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
    let ServeArgs { source, port, listen, bodies } = args;
    let mode = crate::bodies::BodyMode::from_wire(&bodies).unwrap_or(crate::bodies::BodyMode::Disk);
    let started = Instant::now();
    let catalog = load_sources(&source)?;
    let (packages, bundles) = (catalog.packages.len(), catalog.bundle_count());
    let store = Arc::new(Store::build_with(catalog, mode)?);
    let listener = crate::server::bind(SocketAddr::new(listen, port)).await?;
    let addr = listener.local_addr()?;
    println!(
        "loaded {packages} packages, {bundles} bundles in {} ms; serving on {addr}",
        started.elapsed().as_millis()
    );
    std::io::stdout().flush()?;
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    crate::server::serve(store, listener, shutdown).await?;
    Ok(())
}

/// Prints the verdict; `Ok(false)` when the catalog has problems (they go to stderr).
pub fn validate(args: SourceArgs) -> anyhow::Result<bool> {
    match load_sources(&args) {
        Ok(c) => {
            println!("valid: {} packages, {} channels, {} bundles", c.packages.len(), c.channel_count(), c.bundle_count());
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
            let mut f = std::io::BufWriter::new(std::fs::File::create(path).with_context(|| format!("create {}", path.display()))?);
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
    println!("wrote {packages} packages, {bundles} bundles to {}", args.out.display());
    Ok(())
}

/// Writes `factor` renamed copies (`<pkg>-sN`) of every package of `source` under `out`.
pub fn write_synthetic(source: &Catalog, factor: usize, out: &Path) -> anyhow::Result<(usize, usize)> {
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
