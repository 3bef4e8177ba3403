//! Unpacking image layers into a folder (a catalog image too large to hold in memory): each layer's tar applied
//! in order with OCI whiteouts, as [`crate::layers::unpack`] does in memory, keeping the regular files whose
//! normalized path the caller keeps. One layer at a time; the bytes written are bounded by
//! [`Limits::unpacked_bytes`] (whiteouts do not give budget back).

use crate::error::PullError;
use crate::layers::normalize;
use crate::limits::Limits;
use std::io::Read;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum UnpackDirError {
    #[error(transparent)]
    Layer(#[from] PullError),
    #[error("cannot write {}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Applies layer `index` (`media_type`, `bytes`) of `reference` under `root`; `written` counts the bytes
/// written so far across layers.
#[expect(
    clippy::too_many_arguments,
    reason = "one layer of a multi-layer unpack: the running total and the caller's filter travel with it"
)]
pub fn unpack_layer(
    reference: &str,
    index: usize,
    media_type: &str,
    bytes: &[u8],
    keep: &dyn Fn(&str) -> bool,
    limits: &Limits,
    root: &Path,
    written: &mut u64,
) -> Result<(), UnpackDirError> {
    let bad = |message: String| PullError::BadLayer {
        reference: reference.to_string(),
        layer: index.to_string(),
        message,
    };
    let write_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| UnpackDirError::Write { path, source }
    };
    let mut archive = tar::Archive::new(crate::layers::reader(reference, media_type, bytes)?);
    let entries = archive.entries().map_err(|e| bad(e.to_string()))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| bad(e.to_string()))?;
        let raw = entry.path().map_err(|e| bad(e.to_string()))?;
        let Some(path) = normalize(&raw.to_string_lossy()) else {
            return Err(bad(format!("entry {} leaves the root", raw.display())).into());
        };
        let (dir, name) = path.rsplit_once('/').unwrap_or(("", path.as_str()));
        if name == ".wh..wh..opq" {
            remove(&root.join(dir)).map_err(write_err(&root.join(dir)))?;
            continue;
        }
        if let Some(gone) = name.strip_prefix(".wh.") {
            let target = root.join(dir).join(gone);
            remove(&target).map_err(write_err(&target))?;
            continue;
        }
        if !entry.header().entry_type().is_file() || !keep(&path) {
            continue;
        }
        let size = entry.size();
        limits.check_file(reference, &path, size)?;
        *written += size;
        if *written > limits.unpacked_bytes {
            return Err(PullError::TooLarge {
                reference: reference.to_string(),
                what: "unpacked content".into(),
                size: *written,
                limit: limits.unpacked_bytes,
            }
            .into());
        }
        let target = root.join(&path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(write_err(parent))?;
        }
        let mut file = std::fs::File::create(&target).map_err(write_err(&target))?;
        let mut limited = (&mut entry).take(size);
        std::io::copy(&mut limited, &mut file).map_err(|e| match e.kind() {
            std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof => {
                UnpackDirError::Layer(bad(format!("{path}: {e}")))
            }
            _ => UnpackDirError::Write {
                path: target.clone(),
                source: e,
            },
        })?;
    }
    Ok(())
}

/// Removes a file or folder; one that is not there is fine.
fn remove(path: &Path) -> std::io::Result<()> {
    let result = match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) => Err(e),
    };
    match result {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build;

    fn unpack_all(
        layers: &[Vec<(String, Vec<u8>)>],
        limits: &Limits,
    ) -> (tempfile::TempDir, Result<u64, UnpackDirError>) {
        let root = tempfile::tempdir().expect("tempdir");
        let mut written = 0;
        let result = layers.iter().enumerate().try_for_each(|(i, files)| {
            let bytes = build::tar_gz(files).expect("tar");
            unpack_layer(
                "img",
                i,
                build::LAYER_MEDIA_TYPE,
                &bytes,
                &|p: &str| p.starts_with("configs/"),
                limits,
                root.path(),
                &mut written,
            )
        });
        (root, result.map(|()| written))
    }

    fn file(path: &str, text: &str) -> (String, Vec<u8>) {
        (path.to_string(), text.as_bytes().to_vec())
    }

    #[test]
    fn kept_files_are_written_and_later_layers_white_out_earlier_ones() {
        let layers = vec![
            vec![
                file("configs/a/catalog.json", "a"),
                file("configs/b/catalog.json", "b"),
                file("bin/x", "x"),
            ],
            vec![
                file("configs/a/.wh.catalog.json", ""),
                file("configs/c/catalog.json", "c"),
            ],
        ];
        let (root, written) = unpack_all(&layers, &Limits::CATALOG);
        assert_eq!(written.expect("unpacked"), 3);
        assert!(!root.path().join("configs/a/catalog.json").exists());
        assert_eq!(
            std::fs::read_to_string(root.path().join("configs/b/catalog.json")).expect("b"),
            "b"
        );
        assert_eq!(
            std::fs::read_to_string(root.path().join("configs/c/catalog.json")).expect("c"),
            "c"
        );
        assert!(!root.path().join("bin/x").exists());
    }

    #[test]
    fn content_over_the_limit_is_too_large() {
        let limits = Limits {
            unpacked_bytes: 3,
            ..Limits::CATALOG
        };
        let layers = vec![vec![
            file("configs/a.json", "ab"),
            file("configs/b.json", "cd"),
        ]];
        let (_root, written) = unpack_all(&layers, &limits);
        let Err(UnpackDirError::Layer(e)) = written else {
            panic!("expected TooLarge, got {written:?}")
        };
        assert_eq!(e.reason(), "TooLarge");
    }

    #[test]
    fn a_folder_that_cannot_be_written_is_named() {
        let root = tempfile::tempdir().expect("tempdir");
        std::fs::write(root.path().join("configs"), "a file where the folder goes").expect("write");
        let bytes = build::tar_gz(&[file("configs/a.json", "a")]).expect("tar");
        let mut written = 0;
        let err = unpack_layer(
            "img",
            0,
            build::LAYER_MEDIA_TYPE,
            &bytes,
            &|_: &str| true,
            &Limits::CATALOG,
            root.path(),
            &mut written,
        )
        .expect_err("not writable");
        assert!(
            matches!(&err, UnpackDirError::Write { path, .. } if path.ends_with("configs")),
            "{err:?}"
        );
    }
}
