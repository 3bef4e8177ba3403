//! `ObjectKey`: the identity of one Kubernetes object (namespace + name), built once from metadata so that no
//! other code has to `unwrap()` metadata fields.

use kube::Resource;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Namespace (None for cluster-scoped objects) and name of an object.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ObjectKey {
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectKey {
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: Some(namespace.into()),
            name: name.into(),
        }
    }

    pub fn cluster(name: impl Into<String>) -> Self {
        Self {
            namespace: None,
            name: name.into(),
        }
    }

    /// The key of an object read from the cluster; `None` when it has no name (never true for stored objects,
    /// but data from the cluster is not trusted to be well-formed).
    pub fn of<K: Resource>(obj: &K) -> Option<Self> {
        let meta = obj.meta();
        let name = meta.name.clone()?;
        Some(Self {
            namespace: meta.namespace.clone(),
            name,
        })
    }

    pub fn namespace_or_empty(&self) -> &str {
        self.namespace.as_deref().unwrap_or("")
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{ns}/{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    #[test]
    fn a_key_is_built_from_metadata_and_displays_as_namespace_slash_name() {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("a".into());
        cm.metadata.namespace = Some("ns".into());
        let key = ObjectKey::of(&cm).expect("named");
        assert_eq!(key, ObjectKey::new("ns", "a"));
        assert_eq!(key.to_string(), "ns/a");
    }

    #[test]
    fn an_object_without_a_name_has_no_key() {
        assert_eq!(ObjectKey::of(&ConfigMap::default()), None);
    }

    #[test]
    fn a_cluster_scoped_key_displays_its_name_only() {
        assert_eq!(ObjectKey::cluster("cluster").to_string(), "cluster");
    }
}
