//! Decoding watched objects one at a time: a watch of `Lenient<K>` never fails on an object whose stored JSON
//! does not match `K` (written through another CRD version, an older schema, the raw API). Such an object
//! keeps its metadata (so it can be named, reported and counted as seen in a relist) and the decoding error;
//! the watch skips it and the rest of its kind keeps reconciling. With a plain `K` watch one bad object fails
//! the whole list, and the watcher retries the same list for ever: the kind stalls cluster-wide.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use std::borrow::Cow;

/// A watched object: its metadata, and the object itself when it decoded as `K`.
#[derive(Clone, Debug)]
pub struct Lenient<K> {
    meta: ObjectMeta,
    pub decoded: Result<K, String>,
}

impl<K> Lenient<K> {
    /// The object, or the metadata and the reason it did not decode.
    pub fn into_result(self) -> Result<K, Box<(ObjectMeta, String)>> {
        self.decoded.map_err(|error| Box::new((self.meta, error)))
    }
}

impl<'de, K: DeserializeOwned> Deserialize<'de> for Lenient<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        // Metadata that does not decode is a broken API server, not a bad object: that one fails the watch.
        let meta = match value.get("metadata") {
            Some(m) => ObjectMeta::deserialize(m).map_err(D::Error::custom)?,
            None => ObjectMeta::default(),
        };
        let decoded = serde_json::from_value::<K>(value).map_err(|e| e.to_string());
        Ok(Self { meta, decoded })
    }
}

impl<K: Resource<DynamicType = ()>> Resource for Lenient<K> {
    type DynamicType = ();
    type Scope = K::Scope;

    fn kind(dt: &()) -> Cow<'_, str> {
        K::kind(dt)
    }
    fn group(dt: &()) -> Cow<'_, str> {
        K::group(dt)
    }
    fn version(dt: &()) -> Cow<'_, str> {
        K::version(dt)
    }
    fn api_version(dt: &()) -> Cow<'_, str> {
        K::api_version(dt)
    }
    fn plural(dt: &()) -> Cow<'_, str> {
        K::plural(dt)
    }
    fn meta(&self) -> &ObjectMeta {
        &self.meta
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.meta
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use rstest::rstest;

    #[rstest]
    #[case::a_good_object_decodes(
        r#"{"metadata":{"name":"a","namespace":"n"},"data":{"k":"v"}}"#,
        true
    )]
    #[case::a_field_of_the_wrong_type_is_kept_as_an_error(
        r#"{"metadata":{"name":"a","namespace":"n"},"data":{"k":7}}"#,
        false
    )]
    #[case::a_wrong_shape_is_kept_as_an_error(
        r#"{"metadata":{"name":"a","namespace":"n"},"data":[1,2]}"#,
        false
    )]
    fn each_object_decodes_on_its_own(#[case] json: &str, #[case] ok: bool) {
        let l: Lenient<ConfigMap> = serde_json::from_str(json).expect("metadata decodes");
        assert_eq!(l.meta().name.as_deref(), Some("a"));
        assert_eq!(l.decoded.is_ok(), ok, "{:?}", l.decoded);
    }

    #[test]
    fn one_bad_object_does_not_fail_its_list() {
        let list = r#"[{"metadata":{"name":"good"}},{"metadata":{"name":"bad"},"data":"x"},{"metadata":{"name":"also-good"}}]"#;
        let items: Vec<Lenient<ConfigMap>> = serde_json::from_str(list).expect("the list decodes");
        let good: Vec<String> = items
            .into_iter()
            .filter_map(|l| l.decoded.ok())
            .filter_map(|c| c.metadata.name)
            .collect();
        assert_eq!(good, ["good", "also-good"]);
    }

    #[test]
    fn the_error_names_the_field() {
        let l: Lenient<ConfigMap> =
            serde_json::from_str(r#"{"metadata":{"name":"bad"},"data":{"k":7}}"#).expect("decodes");
        let (meta, error) = *l.into_result().expect_err("a bad object");
        assert_eq!(meta.name.as_deref(), Some("bad"));
        assert!(error.contains("invalid type"), "{error}");
    }
}
