//! Indexing a pulled catalog image on disk, in a short-lived child process (issue 33), as `registry serve` loads
//! its catalog (`registry cache-build`): the parse's garbage and high-water mark die with the child, and the
//! parent keeps only the compact index, its bundle bodies in an unlinked file of the cache folder.
//!
//! ```text
//! parent: pull ─▶ stage(job dir: job.json + layer-N) ─▶ spawn `<exe> index-catalog --job DIR` ─▶ open(DIR/cache)
//! child:  run_job: layers ─▶ DIR/fs (unpack_dir, kept files only) ─▶ FBC one top-level folder at a time
//!         (or the sqlite index) ─▶ StoreBuilder ─▶ DIR/cache/{index.msgpack, bodies}
//! ```
//!
//! The job folder lives under the cache folder (catalog-operator's `--catalog-cache-dir`, an emptyDir in the
//! pod) and is removed when the parent has opened the index (the body file stays open, unlinked). Every failure
//! is an [`IndexError`] naming the image and the file or folder: a status message, never a crash.

use oci::unpack_dir::{UnpackDirError, unpack_layer};
use oci::{Image, Limits, PullError};
use registry::bodies::BodyMode;
use registry::store::{CacheError, Store};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const JOB: &str = "job.json";
const FS: &str = "fs";
const CACHE: &str = "cache";
/// Job folders start with this; stale ones (a parent that died) are removed by [`clear_stale`].
pub const JOB_PREFIX: &str = "job-";

/// What the child needs besides the layer files.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Job {
    reference: String,
    labels: BTreeMap<String, String>,
    /// Media type of `layer-<i>`.
    layers: Vec<String>,
}

/// How a catalog image is indexed.
#[derive(Debug, Clone)]
pub enum Indexer {
    /// In a child process: `exe` with `args`, then the job folder (catalog-operator's `index-catalog --job`).
    Child {
        exe: PathBuf,
        args: Vec<String>,
        cache: PathBuf,
    },
    /// In this process (tests, and a binary that cannot run itself).
    InProcess { cache: PathBuf },
}

impl Default for Indexer {
    fn default() -> Self {
        Indexer::InProcess {
            cache: std::env::temp_dir().join("olm-rs-catalogs"),
        }
    }
}

impl Indexer {
    fn cache(&self) -> &Path {
        match self {
            Indexer::Child { cache, .. } | Indexer::InProcess { cache } => cache,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("cannot stage catalog image {reference} in the cache folder: {}", .path.display())]
    Stage {
        reference: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start the catalog indexer {}", .exe.display())]
    Spawn {
        exe: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The child's own message (a [`JobError`] chain), which names the image and what failed.
    #[error("{message}")]
    Indexer { message: String },
    #[error("the catalog indexer of {reference} was killed ({status}): out of memory?")]
    Killed { reference: String, status: String },
    #[error(transparent)]
    Job(#[from] JobError),
    #[error("cannot open the index of {reference} in {}", .path.display())]
    Open {
        reference: String,
        path: PathBuf,
        #[source]
        source: Box<CacheError>,
    },
}

/// What went wrong in the child (or in-process) indexing a staged job.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("cannot read the indexing job {}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the indexing job {} is not valid", .path.display())]
    Decode {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error(transparent)]
    Image(#[from] Box<PullError>),
    #[error("cannot unpack catalog image {reference} into {}", .path.display())]
    Unpack {
        reference: String,
        path: PathBuf,
        #[source]
        source: Box<UnpackDirError>,
    },
    #[error("cannot write the index of catalog image {reference} into {}", .path.display())]
    Cache {
        reference: String,
        path: PathBuf,
        #[source]
        source: Box<CacheError>,
    },
}

/// Removes the job folders under `cache` a previous run left behind (it died mid-index).
pub fn clear_stale(cache: &Path) {
    let Ok(entries) = std::fs::read_dir(cache) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with(JOB_PREFIX) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// A job folder, removed when dropped.
struct JobDir(PathBuf);

impl Drop for JobDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Index `image` (pulled from `reference`) as `indexer` says; returns the store and the indexer's summary.
/// Blocking: run it off the async threads.
pub fn index(
    indexer: &Indexer,
    reference: &str,
    image: Image,
) -> Result<(Store, String), IndexError> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let dir = JobDir(
        indexer
            .cache()
            .join(format!("{JOB_PREFIX}{}-{nanos}", std::process::id())),
    );
    stage(&dir.0, reference, image)?;
    let summary = match indexer {
        Indexer::InProcess { .. } => run_job(&dir.0)?,
        Indexer::Child { exe, args, .. } => run_child(exe, args, &dir.0, reference)?,
    };
    let cache = dir.0.join(CACHE);
    let store =
        Store::open_cache(&cache, BodyMode::Disk, true).map_err(|source| IndexError::Open {
            reference: reference.to_string(),
            path: cache.clone(),
            source: Box::new(source),
        })?;
    Ok((store, summary))
}

/// Writes the job: `job.json` and one file per layer.
fn stage(dir: &Path, reference: &str, image: Image) -> Result<(), IndexError> {
    let err = |path: &Path| {
        let path = path.to_path_buf();
        let reference = reference.to_string();
        move |source| IndexError::Stage {
            reference,
            path,
            source,
        }
    };
    std::fs::create_dir_all(dir).map_err(err(dir))?;
    let Image { labels, layers, .. } = image;
    let mut media_types = Vec::with_capacity(layers.len());
    for (i, (media_type, bytes)) in layers.into_iter().enumerate() {
        let path = dir.join(format!("layer-{i}"));
        std::fs::write(&path, bytes).map_err(err(&path))?;
        media_types.push(media_type);
    }
    let job = Job {
        reference: reference.to_string(),
        labels,
        layers: media_types,
    };
    let path = dir.join(JOB);
    let text = serde_json::to_vec(&job).map_err(|e| err(&path)(std::io::Error::other(e)))?;
    std::fs::write(&path, text).map_err(err(&path))
}

fn run_child(
    exe: &Path,
    args: &[String],
    dir: &Path,
    reference: &str,
) -> Result<String, IndexError> {
    let out = std::process::Command::new(exe)
        .args(args)
        .arg(dir)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|source| IndexError::Spawn {
            exe: exe.to_path_buf(),
            source,
        })?;
    let stdout = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if out.status.success() {
        return Ok(stdout);
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    match stderr.lines().rev().find(|l| !l.trim().is_empty()) {
        Some(line) if out.status.code().is_some() => Err(IndexError::Indexer {
            message: line.trim().to_string(),
        }),
        _ => Err(IndexError::Killed {
            reference: reference.to_string(),
            status: out.status.to_string(),
        }),
    }
}

/// The child's work: unpack the staged layers under `dir/fs`, index the catalog into `dir/cache`; returns a
/// one-line summary. The child prints the error chain of a failure as one line on stderr and exits 1.
pub fn run_job(dir: &Path) -> Result<String, JobError> {
    let job_path = dir.join(JOB);
    let text = std::fs::read(&job_path).map_err(|source| JobError::Read {
        path: job_path.clone(),
        source,
    })?;
    let job: Job = serde_json::from_slice(&text).map_err(|source| JobError::Decode {
        path: job_path.clone(),
        source,
    })?;
    let configs = crate::files::configs_dir(&job.labels);
    let prefix = format!("{configs}/");
    let keep = |p: &str| p.starts_with(&prefix) || p == oci::SQLITE_INDEX;
    let fs = dir.join(FS);
    let mut written = 0;
    for (i, media_type) in job.layers.iter().enumerate() {
        let path = dir.join(format!("layer-{i}"));
        let bytes = std::fs::read(&path).map_err(|source| JobError::Read {
            path: path.clone(),
            source,
        })?;
        unpack_layer(
            &job.reference,
            i,
            media_type,
            &bytes,
            &keep,
            &Limits::CATALOG_ON_DISK,
            &fs,
            &mut written,
        )
        .map_err(|source| match source {
            UnpackDirError::Layer(e) => JobError::Image(Box::new(e)),
            source => JobError::Unpack {
                reference: job.reference.clone(),
                path: fs.clone(),
                source: Box::new(source),
            },
        })?;
        drop(bytes);
        let _ = std::fs::remove_file(&path);
    }
    let cache = dir.join(CACHE);
    let cache_err = |source: CacheError| JobError::Cache {
        reference: job.reference.clone(),
        path: cache.clone(),
        source: Box::new(source),
    };
    std::fs::create_dir_all(&cache).map_err(|source| {
        cache_err(CacheError::Write {
            path: cache.clone(),
            source,
        })
    })?;
    let counts =
        crate::parts::write_cache(&job.reference, &fs, &configs, &cache).map_err(|e| match e {
            crate::parts::PartsError::Image(e) => JobError::Image(Box::new(e)),
            crate::parts::PartsError::Cache(e) => cache_err(e),
        })?;
    let _ = std::fs::remove_dir_all(&fs);
    Ok(format!(
        "{} packages, {} bundles (indexer peak RSS {} MiB)",
        counts.0,
        counts.1,
        registry::commands::peak_rss_mib().unwrap_or_default()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const FBC: &str = r#"{"schema":"olm.package","name":"a","defaultChannel":"stable"}
{"schema":"olm.channel","package":"a","name":"stable","entries":[{"name":"a.v1"}]}
{"schema":"olm.bundle","name":"a.v1","package":"a","image":"r/a@sha256:1","properties":[{"type":"olm.package","value":{"packageName":"a","version":"1.0.0"}}]}
"#;
    const OTHER_FOLDER: &str = r#"{"schema":"olm.bundle","name":"a.v2","package":"a","image":"r/a@sha256:2","properties":[{"type":"olm.package","value":{"packageName":"a","version":"2.0.0"}}]}
{"schema":"olm.channel","package":"a","name":"fast","entries":[{"name":"a.v2"}]}
"#;

    fn image(files: &[(&str, &str)]) -> Image {
        let files: Vec<(String, Vec<u8>)> = files
            .iter()
            .map(|(p, c)| (p.to_string(), c.as_bytes().to_vec()))
            .collect();
        Image {
            digest: "sha256:0".into(),
            labels: BTreeMap::new(),
            layers: vec![(
                oci::build::LAYER_MEDIA_TYPE.to_string(),
                oci::build::tar_gz(&files).expect("tar"),
            )],
        }
    }

    fn indexed(files: &[(&str, &str)]) -> (tempfile::TempDir, Result<(Store, String), IndexError>) {
        let cache = tempfile::tempdir().expect("tempdir");
        let indexer = Indexer::InProcess {
            cache: cache.path().to_path_buf(),
        };
        let result = index(&indexer, "img", image(files));
        (cache, result)
    }

    #[rstest]
    #[case::one_folder_per_package(&[("configs/a/catalog.json", FBC)], 1, 1)]
    #[case::a_package_across_folders(&[("configs/a/catalog.json", FBC), ("configs/b/more.json", OTHER_FOLDER)], 1, 2)]
    fn a_catalog_image_is_indexed_on_disk_and_its_job_folder_removed(
        #[case] files: &[(&str, &str)],
        #[case] packages: usize,
        #[case] bundles: usize,
    ) {
        let (cache, result) = indexed(files);
        let (store, summary) = result.expect("indexed");
        assert_eq!(
            (store.packages().len(), store.bundle_count()),
            (packages, bundles)
        );
        assert!(
            summary.starts_with(&format!("{packages} packages, {bundles} bundles")),
            "{summary}"
        );
        let head = registry::query::get_bundle_for_channel(&store, "a", "stable").expect("head");
        assert_eq!(head.csv_name, "a.v1");
        let left: Vec<_> = std::fs::read_dir(cache.path()).expect("cache").collect();
        assert!(left.is_empty(), "the job folder is removed: {left:?}");
    }

    #[rstest]
    #[case::nothing(&[("bin/registry", "x")], "is not a catalog: no file-based catalog under /configs")]
    #[case::not_fbc(&[("configs/a/catalog.json", "{not json")], "/configs/a/catalog.json")]
    #[case::no_package(&[("configs/a/notes.txt", "x"), ("configs/a/empty.json", "")], "is not a catalog")]
    fn an_image_without_a_catalog_says_why_and_where(
        #[case] files: &[(&str, &str)],
        #[case] says: &str,
    ) {
        let (_cache, result) = indexed(files);
        let err = result.expect_err("not a catalog");
        let text = err.to_string();
        assert!(text.contains(says), "{text}");
        assert!(
            !text.contains("/fs/"),
            "paths as the image has them: {text}"
        );
    }

    #[test]
    fn a_cache_folder_that_cannot_be_written_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let blocked = dir.path().join("not-a-folder");
        std::fs::write(&blocked, "x").expect("write");
        let indexer = Indexer::InProcess {
            cache: blocked.clone(),
        };
        let err = index(&indexer, "img", image(&[("configs/a/catalog.json", FBC)]))
            .expect_err("cannot stage");
        assert!(
            matches!(&err, IndexError::Stage { path, .. } if path.starts_with(&blocked)),
            "{err:?}"
        );
        assert!(err.to_string().contains("not-a-folder"), "{err}");
    }

    #[test]
    fn stale_job_folders_are_cleared_and_nothing_else() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("job-1-2/fs")).expect("job");
        std::fs::create_dir_all(dir.path().join("kept")).expect("kept");
        clear_stale(dir.path());
        assert!(!dir.path().join("job-1-2").exists());
        assert!(dir.path().join("kept").exists());
    }
}
