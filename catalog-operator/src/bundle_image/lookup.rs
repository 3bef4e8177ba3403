//! `status.bundleLookups` entries of an InstallPlan (OLM's `BundleLookup`): the image, the CSV it holds, what it
//! replaces, its catalog and properties. Once a bundle is unpacked OLM keeps the entry with no conditions; we
//! do the same. Pure.

use k8s_openapi::api::core::v1::ObjectReference;
use messages::crd::install_plan::BundleLookup;
use registry::api;
use resolver::BundleStep;

/// The lookup of a bundle unpacked from its image.
pub fn completed(bundle: &api::Bundle, chosen: &BundleStep) -> BundleLookup {
    BundleLookup {
        path: bundle.bundle_path.clone(),
        identifier: chosen.name.clone(),
        replaces: chosen.replaces.clone().unwrap_or_default(),
        catalog_source_ref: Some(ObjectReference {
            kind: Some("CatalogSource".into()),
            api_version: Some("operators.coreos.com/v1alpha1".into()),
            name: Some(chosen.catalog.name.clone()),
            namespace: Some(chosen.catalog.namespace.clone()),
            ..Default::default()
        }),
        conditions: Vec::new(),
        properties: crate::properties::document(&crate::properties::of_bundle(bundle)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use resolver::CatalogKey;

    #[test]
    fn a_lookup_names_the_image_the_csv_and_its_catalog() {
        let b = api::Bundle {
            bundle_path: "127.0.0.1:25000/etcd-bundle@sha256:ab".into(),
            properties: vec![api::Property {
                r#type: "olm.package".into(),
                value: r#"{"packageName":"etcd","version":"0.9.4"}"#.into(),
            }],
            ..Default::default()
        };
        let chosen = BundleStep {
            name: "etcdoperator.v0.9.4".into(),
            package: "etcd".into(),
            channel: "singlenamespace-alpha".into(),
            version: "0.9.4".into(),
            catalog: CatalogKey::new("community", "olm"),
            bundle_path: String::new(),
            replaces: Some("etcdoperator.v0.9.2".into()),
            subscription: "etcd".into(),
        };
        let l = completed(&b, &chosen);
        assert_eq!(
            (l.path.as_str(), l.identifier.as_str(), l.replaces.as_str()),
            (
                "127.0.0.1:25000/etcd-bundle@sha256:ab",
                "etcdoperator.v0.9.4",
                "etcdoperator.v0.9.2"
            )
        );
        let r = l.catalog_source_ref.expect("ref");
        assert_eq!(
            (r.name.as_deref(), r.namespace.as_deref()),
            (Some("community"), Some("olm"))
        );
        let props: serde_json::Value = serde_json::from_str(&l.properties).expect("json");
        assert_eq!(props["properties"][0]["value"]["packageName"], "etcd");
        assert!(l.conditions.is_empty());
    }
}
