//! Server-side apply of a CSV's objects (`crate::apply`), its failure read as the CSV effect's error naming the
//! object. Used by the CSV's effects and by the served-object installers (`served`).

use crate::error::Error;
use kube::{Api, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;

/// `namespace/name` (or `name`) of an object, for messages.
pub(crate) fn shown<K: Resource>(obj: &K) -> String {
    match &obj.meta().namespace {
        Some(ns) => format!("{ns}/{}", obj.meta().name.clone().unwrap_or_default()),
        None => obj.meta().name.clone().unwrap_or_default(),
    }
}

/// Server-side apply (`crate::apply`), as a CSV effect's error.
pub(crate) async fn apply_object<K>(api: Api<K>, obj: &K, kind: &'static str) -> Result<(), Error>
where
    K: Resource + Clone + Serialize + DeserializeOwned + Debug,
{
    crate::apply::apply(&api, obj)
        .await
        .map_err(|f| Error::Apply {
            verb: f.verb,
            kind,
            name: shown(obj),
            source: f.source,
        })
}
