//! Where the large strings of a catalog live (CSV JSON and bundle manifests): an in-memory
//! arena, or an unlinked temporary file read back per request, so the resident memory of a
//! registry holds only the index. The file plays the part of `opm serve`'s cache directory.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

/// Where bodies are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyMode {
    Memory,
    Disk,
}

impl BodyMode {
    pub fn from_wire(s: &str) -> Option<Self> {
        match s {
            "memory" => Some(BodyMode::Memory),
            "disk" => Some(BodyMode::Disk),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            BodyMode::Memory => "memory",
            BodyMode::Disk => "disk",
        }
    }
}

/// A stored string: offset and length in the arena or file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BodyRef {
    offset: u64,
    len: u32,
}

impl BodyRef {
    pub fn len(self) -> usize {
        self.len as usize
    }

    pub fn is_empty(self) -> bool {
        self.len == 0
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("cannot create the body file in {}", .dir.display())]
    Create {
        dir: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot write a body")]
    Write(#[source] io::Error),
    #[error("cannot read a body")]
    Read(#[source] io::Error),
    #[error("a body is larger than 4 GiB")]
    TooLarge,
    #[error("a stored body is not UTF-8")]
    NotUtf8,
}

enum Sink {
    Memory(Vec<u8>),
    File(BufWriter<File>),
}

/// Appends bodies while the index is built.
pub struct BodyWriter {
    sink: Sink,
    offset: u64,
}

impl BodyWriter {
    /// A writer for `mode`; the disk file is created in `dir` and unlinked at once.
    pub fn new(mode: BodyMode, dir: &std::path::Path) -> Result<Self, BodyError> {
        let sink = match mode {
            BodyMode::Memory => Sink::Memory(Vec::new()),
            BodyMode::Disk => {
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos())
                    .unwrap_or_default();
                let path = dir.join(format!(
                    "olm-rs-registry-{}-{nanos}.bodies",
                    std::process::id()
                ));
                let create = |source| BodyError::Create {
                    dir: dir.to_path_buf(),
                    source,
                };
                let file = File::options()
                    .read(true)
                    .write(true)
                    .create_new(true)
                    .open(&path)
                    .map_err(create)?;
                std::fs::remove_file(&path).map_err(create)?;
                Sink::File(BufWriter::with_capacity(1 << 20, file))
            }
        };
        Ok(BodyWriter { sink, offset: 0 })
    }

    /// A writer into a new file at `path` (kept, for a cache directory).
    pub fn to_path(path: &std::path::Path) -> Result<Self, BodyError> {
        let dir = path
            .parent()
            .unwrap_or(std::path::Path::new("."))
            .to_path_buf();
        let file = File::create(path).map_err(|source| BodyError::Create { dir, source })?;
        Ok(BodyWriter {
            sink: Sink::File(BufWriter::with_capacity(1 << 20, file)),
            offset: 0,
        })
    }

    pub fn append(&mut self, s: &str) -> Result<BodyRef, BodyError> {
        let len = u32::try_from(s.len()).map_err(|_| BodyError::TooLarge)?;
        match &mut self.sink {
            Sink::Memory(buf) => buf.extend_from_slice(s.as_bytes()),
            Sink::File(w) => w.write_all(s.as_bytes()).map_err(BodyError::Write)?,
        }
        let r = BodyRef {
            offset: self.offset,
            len,
        };
        self.offset += u64::from(len);
        Ok(r)
    }

    pub fn finish(self) -> Result<Bodies, BodyError> {
        Ok(match self.sink {
            Sink::Memory(mut buf) => {
                buf.shrink_to_fit();
                Bodies::Memory(buf)
            }
            Sink::File(w) => Bodies::File(
                w.into_inner()
                    .map_err(|e| BodyError::Write(e.into_error()))?,
            ),
        })
    }
}

/// The finished, read-only body store.
pub enum Bodies {
    Memory(Vec<u8>),
    File(File),
}

impl std::fmt::Debug for Bodies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bodies::Memory(b) => write!(f, "Bodies::Memory({} bytes)", b.len()),
            Bodies::File(_) => f.write_str("Bodies::File"),
        }
    }
}

impl Default for Bodies {
    fn default() -> Self {
        Bodies::Memory(Vec::new())
    }
}

impl Bodies {
    pub fn read(&self, r: BodyRef) -> Result<String, BodyError> {
        let bytes = match self {
            Bodies::Memory(buf) => {
                let start = usize::try_from(r.offset).map_err(|_| BodyError::TooLarge)?;
                buf.get(start..start + r.len())
                    .ok_or(BodyError::Read(io::ErrorKind::UnexpectedEof.into()))?
                    .to_vec()
            }
            Bodies::File(file) => {
                let mut out = vec![0u8; r.len()];
                file.read_exact_at(&mut out, r.offset)
                    .map_err(BodyError::Read)?;
                out
            }
        };
        String::from_utf8(bytes).map_err(|_| BodyError::NotUtf8)
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a test failure"
)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::in_memory(BodyMode::Memory)]
    #[case::in_an_unlinked_file(BodyMode::Disk)]
    fn bodies_read_back_what_was_written(#[case] mode: BodyMode) {
        let mut w = BodyWriter::new(mode, &std::env::temp_dir()).unwrap();
        let a = w.append("{\"kind\":\"ClusterServiceVersion\"}").unwrap();
        let empty = w.append("").unwrap();
        let b = w.append("ünïcode").unwrap();
        let bodies = w.finish().unwrap();
        assert_eq!(
            bodies.read(a).unwrap(),
            "{\"kind\":\"ClusterServiceVersion\"}"
        );
        assert_eq!(bodies.read(empty).unwrap(), "");
        assert_eq!(bodies.read(b).unwrap(), "ünïcode");
    }
}
