//! Errors from loading catalogs (I/O, parsing, structure). Semantic findings are
//! [`crate::diagnostic::Diagnostics`], carried by [`LoadError::Invalid`].

use std::path::PathBuf;

use crate::diagnostic::Diagnostics;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot walk {}", .path.display())]
    Walk {
        path: PathBuf,
        #[source]
        source: walkdir::Error,
    },
    #[error("{}: not valid YAML/JSON: {message}", .path.display())]
    Parse { path: PathBuf, message: String },
    #[error("{}: {message}", .path.display())]
    Manifest { path: PathBuf, message: String },
    #[error("ConfigMap key {key:?}: {message}")]
    ConfigMap { key: String, message: String },
    #[error("package {0:?} is defined by more than one catalog source")]
    DuplicatePackage(String),
    #[error(transparent)]
    Invalid(#[from] Diagnostics),
}

pub type Result<T, E = LoadError> = std::result::Result<T, E>;
