//! `olm-oci`: build bundle and catalog images without a container engine and push them to a registry; pull
//! and show one.
//!
//! ```text
//! olm-oci push-bundle DIR REF            a bundle folder (manifests/, metadata/) → bundle image; prints REF@digest
//! olm-oci push-catalog FBC REF           an FBC folder or file → catalog image (/configs); prints REF@digest
//! olm-oci push-tree ROOT --prefix P --catalog REF [--package NAME]...
//!                                        every bundle of ROOT/<package>/ → P/<package>-bundle:v<version>, then an FBC
//!                                        of them referencing the images by digest → catalog image REF
//! olm-oci push-archive ARCHIVE REF      an OCI image layout tar (hack/images.sh) → REF, unchanged; prints REF@digest
//!                                        (credentials: OLM_OCI_USERNAME and OLM_OCI_PASSWORD, else anonymous)
//! olm-oci inspect REF                    pull REF and list its labels and files
//! ```

use anyhow::Result;
use clap::{Parser, Subcommand};
use oci::{Limits, Registry, publish};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "olm-oci",
    about = "olm-rs: build, push and inspect bundle and catalog images"
)]
struct Cli {
    /// Registries (host:port) reached over plain HTTP besides loopback ones.
    #[arg(long, global = true)]
    insecure: Vec<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    PushBundle {
        dir: PathBuf,
        reference: String,
    },
    PushCatalog {
        fbc: PathBuf,
        reference: String,
    },
    PushTree {
        root: PathBuf,
        #[arg(long)]
        prefix: String,
        #[arg(long)]
        catalog: String,
        #[arg(long = "package")]
        packages: Vec<String>,
        /// Also write the rendered FBC here.
        #[arg(long)]
        fbc_out: Option<PathBuf>,
    },
    PushArchive {
        archive: PathBuf,
        reference: String,
        #[arg(long, env = "OLM_OCI_USERNAME")]
        username: Option<String>,
        #[arg(long, env = "OLM_OCI_PASSWORD", hide_env_values = true)]
        password: Option<String>,
    },
    Inspect {
        reference: String,
    },
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    let registry = Registry::new(&cli.insecure);
    match cli.command {
        Command::PushBundle { dir, reference } => {
            let digest = publish::push_bundle(&registry, &dir, &reference).await?;
            println!("{}", publish::pinned(&reference, &digest));
        }
        Command::PushCatalog { fbc, reference } => {
            let digest = publish::push_catalog(&registry, &fbc, &reference).await?;
            println!("{}", publish::pinned(&reference, &digest));
        }
        Command::PushTree {
            root,
            prefix,
            catalog,
            packages,
            fbc_out,
        } => {
            let published = publish::push_tree(&registry, &root, &packages, &prefix).await?;
            for (csv, image) in &published.bundles {
                eprintln!("{csv} {image}");
            }
            if let Some(path) = fbc_out {
                std::fs::write(path, &published.fbc)?;
            }
            let files = vec![(
                format!("{}/catalog.json", oci::DEFAULT_CONFIGS_DIR),
                published.fbc,
            )];
            let digest = publish::push_catalog_files(&registry, files, &catalog).await?;
            println!("{}", publish::pinned(&catalog, &digest));
        }
        Command::PushArchive {
            archive,
            reference,
            username,
            password,
        } => {
            let auth = match (username, password) {
                (Some(username), Some(password)) => oci::Auth::Basic { username, password },
                _ => oci::Auth::Anonymous,
            };
            let digest = oci::layout::push_layout(&registry, &archive, &reference, &auth).await?;
            println!("{}", publish::pinned(&reference, &digest));
        }
        Command::Inspect { reference } => {
            let image = registry
                .pull(&reference, &oci::Auth::Anonymous, &Limits::CATALOG)
                .await?;
            println!("digest {}", image.digest);
            for (k, v) in &image.labels {
                println!("label {k}={v}");
            }
            let files =
                oci::layers::unpack(&reference, &image.layers, &|_| true, &Limits::CATALOG)?;
            for (path, content) in &files {
                println!("file /{path} {} bytes", content.len());
            }
        }
    }
    Ok(())
}
