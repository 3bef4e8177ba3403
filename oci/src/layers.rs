//! Unpacking image layers in memory: each layer is a tar (gzip-compressed or not) applied in order, with
//! OCI whiteouts (`.wh.<name>` deletes a path, `.wh..wh..opq` empties a folder). Only the files the caller
//! keeps are held, each and all of them bounded by [`Limits`]. Pure.

use crate::error::PullError;
use crate::limits::Limits;
use flate2::read::GzDecoder;
use std::collections::BTreeMap;
use std::io::Read;

/// An image's file system as kept: normalized relative path (`manifests/csv.yaml`) → content.
pub type Files = BTreeMap<String, Vec<u8>>;

/// The layer media types we unpack.
const TAR: &[&str] = &[
    "application/vnd.oci.image.layer.v1.tar",
    "application/vnd.docker.image.rootfs.diff.tar",
];
const TAR_GZIP: &[&str] = &[
    "application/vnd.oci.image.layer.v1.tar+gzip",
    "application/vnd.docker.image.rootfs.diff.tar.gzip",
];

/// `./a/b`, `/a/b`, `a//b` → `a/b`; `None` for paths that leave the root (`..`).
pub fn normalize(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => return None,
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

/// One layer's tar bytes, decompressed according to its media type.
pub(crate) fn reader<'a>(
    reference: &str,
    media_type: &str,
    bytes: &'a [u8],
) -> Result<Box<dyn Read + 'a>, PullError> {
    if TAR_GZIP.contains(&media_type) || (media_type.is_empty() && bytes.starts_with(&[0x1f, 0x8b]))
    {
        Ok(Box::new(GzDecoder::new(bytes)))
    } else if TAR.contains(&media_type) || media_type.is_empty() {
        Ok(Box::new(bytes))
    } else {
        Err(PullError::WrongMediaType {
            reference: reference.to_string(),
            media_type: media_type.to_string(),
        })
    }
}

/// Applies `layers` (media type, bytes) in order, keeping the regular files whose normalized path `keep`
/// accepts.
pub fn unpack(
    reference: &str,
    layers: &[(String, Vec<u8>)],
    keep: &dyn Fn(&str) -> bool,
    limits: &Limits,
) -> Result<Files, PullError> {
    let mut files = Files::new();
    // Kept bytes so far, kept up to date as files are added, replaced and whited out (not summed again per file).
    let mut total: u64 = 0;
    let size_of = |files: &Files| files.values().map(|v| v.len() as u64).sum::<u64>();
    for (index, (media_type, bytes)) in layers.iter().enumerate() {
        let bad = |message: String| PullError::BadLayer {
            reference: reference.to_string(),
            layer: index.to_string(),
            message,
        };
        let mut archive = tar::Archive::new(reader(reference, media_type, bytes)?);
        let entries = archive.entries().map_err(|e| bad(e.to_string()))?;
        for entry in entries {
            let mut entry = entry.map_err(|e| bad(e.to_string()))?;
            let raw = entry.path().map_err(|e| bad(e.to_string()))?;
            let Some(path) = normalize(&raw.to_string_lossy()) else {
                return Err(bad(format!("entry {} leaves the root", raw.display())));
            };
            let (dir, name) = path.rsplit_once('/').unwrap_or(("", path.as_str()));
            if name == ".wh..wh..opq" {
                let prefix = format!("{dir}/");
                files.retain(|k, _| !k.starts_with(&prefix));
                total = size_of(&files);
                continue;
            }
            if let Some(gone) = name.strip_prefix(".wh.") {
                let target = if dir.is_empty() {
                    gone.to_string()
                } else {
                    format!("{dir}/{gone}")
                };
                let prefix = format!("{target}/");
                files.retain(|k, _| *k != target && !k.starts_with(&prefix));
                total = size_of(&files);
                continue;
            }
            if !entry.header().entry_type().is_file() || !keep(&path) {
                continue;
            }
            let size = entry.size();
            limits.check_file(reference, &path, size)?;
            let mut content = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
            entry
                .read_to_end(&mut content)
                .map_err(|e| bad(format!("{path}: {e}")))?;
            total += content.len() as u64;
            if let Some(old) = files.insert(path, content) {
                total -= old.len() as u64;
            }
            if total > limits.unpacked_bytes {
                return Err(PullError::TooLarge {
                    reference: reference.to_string(),
                    what: "unpacked content".into(),
                    size: total,
                    limit: limits.unpacked_bytes,
                });
            }
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build;
    use rstest::rstest;

    const GZ: &str = "application/vnd.oci.image.layer.v1.tar+gzip";

    fn layer(files: &[(&str, &str)]) -> (String, Vec<u8>) {
        let owned: Vec<(String, Vec<u8>)> = files
            .iter()
            .map(|(p, c)| (p.to_string(), c.as_bytes().to_vec()))
            .collect();
        (GZ.to_string(), build::tar_gz(&owned).expect("tar"))
    }

    fn all(_: &str) -> bool {
        true
    }

    #[rstest]
    #[case::dot_slash("./manifests/a.yaml", Some("manifests/a.yaml"))]
    #[case::absolute("/metadata//annotations.yaml", Some("metadata/annotations.yaml"))]
    #[case::escape("manifests/../../etc/passwd", None)]
    #[case::root("./", Some(""))]
    fn paths_are_normalized(#[case] raw: &str, #[case] want: Option<&str>) {
        assert_eq!(normalize(raw).as_deref(), want);
    }

    #[test]
    fn later_layers_override_and_whiteouts_delete() {
        let layers = vec![
            layer(&[
                ("manifests/a.yaml", "a1"),
                ("manifests/b.yaml", "b"),
                ("configs/x/c.json", "c"),
            ]),
            layer(&[
                ("manifests/a.yaml", "a2"),
                ("manifests/.wh.b.yaml", ""),
                ("configs/.wh..wh..opq", ""),
            ]),
        ];
        let files = unpack("img", &layers, &all, &Limits::BUNDLE).expect("unpack");
        assert_eq!(
            files
                .into_iter()
                .map(|(k, v)| (k, String::from_utf8(v).expect("utf8")))
                .collect::<Vec<_>>(),
            [("manifests/a.yaml".to_string(), "a2".to_string())]
        );
    }

    #[test]
    fn only_kept_files_are_held() {
        let layers = vec![layer(&[("manifests/a.yaml", "a"), ("bin/tool", "xxxx")])];
        let files = unpack(
            "img",
            &layers,
            &|p| p.starts_with("manifests/"),
            &Limits::BUNDLE,
        )
        .expect("unpack");
        assert_eq!(files.keys().collect::<Vec<_>>(), ["manifests/a.yaml"]);
    }

    #[rstest]
    #[case::one_file(Limits { file_bytes: 3, ..Limits::BUNDLE }, "file /manifests/a.yaml")]
    #[case::all_files(Limits { unpacked_bytes: 5, ..Limits::BUNDLE }, "unpacked content")]
    fn oversized_content_is_refused(#[case] limits: Limits, #[case] what: &str) {
        let layers = vec![layer(&[
            ("manifests/a.yaml", "aaaa"),
            ("manifests/b.yaml", "bbbb"),
        ])];
        match unpack("img", &layers, &all, &limits) {
            Err(PullError::TooLarge { what: w, .. }) => assert_eq!(w, what),
            other => panic!("expected TooLarge, got {other:?}"),
        }
    }

    /// A file replaced by a later layer counts once (the total is kept, not summed again), and a whited-out file
    /// stops counting.
    #[test]
    fn replaced_and_deleted_files_count_once_toward_the_total() {
        let limits = Limits {
            unpacked_bytes: 5,
            ..Limits::BUNDLE
        };
        let replaced = vec![
            layer(&[("manifests/a.yaml", "aaaa")]),
            layer(&[("manifests/a.yaml", "bbbb")]),
        ];
        assert!(unpack("img", &replaced, &all, &limits).is_ok());
        let deleted = vec![
            layer(&[("manifests/a.yaml", "aaaa")]),
            layer(&[("manifests/.wh.a.yaml", ""), ("manifests/b.yaml", "bbbb")]),
        ];
        assert!(unpack("img", &deleted, &all, &limits).is_ok());
    }

    /// A decompression bomb: 600 MiB of zeros gzip to a few MiB; its tar header declares the size, which
    /// is refused before a byte of it is inflated into memory.
    #[test]
    fn a_decompression_bomb_is_refused_by_its_declared_size() {
        use std::io::Write;
        let mut header = tar::Header::new_gnu();
        header.set_path("manifests/bomb.yaml").expect("path");
        header.set_size(600 << 20);
        header.set_mode(0o644);
        header.set_cksum();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(header.as_bytes()).expect("header");
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..600 {
            gz.write_all(&zeros).expect("zeros");
        }
        let bytes = gz.finish().expect("gzip");
        assert!(bytes.len() < 4 << 20, "compressed to {} bytes", bytes.len());
        match unpack("img", &[(GZ.to_string(), bytes)], &all, &Limits::BUNDLE) {
            Err(PullError::TooLarge { what, size, .. }) => {
                assert_eq!(
                    (what.as_str(), size),
                    ("file /manifests/bomb.yaml", 600 << 20)
                );
            }
            other => panic!("expected TooLarge, got {other:?}"),
        }
    }

    #[rstest]
    #[case::helm_chart(
        "application/vnd.cncf.helm.chart.content.v1.tar+gzip",
        "WrongMediaType"
    )]
    #[case::garbage_gzip(GZ, "InvalidLayer")]
    fn bad_layers_are_reported(#[case] media_type: &str, #[case] reason: &str) {
        let layers = vec![(media_type.to_string(), b"\x1f\x8bnot really gzip".to_vec())];
        let err = unpack("img", &layers, &all, &Limits::BUNDLE).expect_err("must fail");
        assert_eq!(err.reason(), reason, "{err}");
    }

    #[test]
    fn uncompressed_tar_layers_unpack() {
        let tar =
            build::tar(&[("metadata/annotations.yaml".to_string(), b"x".to_vec())]).expect("tar");
        let files =
            unpack("img", &[(TAR[0].to_string(), tar)], &all, &Limits::BUNDLE).expect("unpack");
        assert!(files.contains_key("metadata/annotations.yaml"));
    }
}
