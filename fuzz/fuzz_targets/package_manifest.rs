//! Package manifests (the legacy format, as a ConfigMap catalog holds them): the input is the ConfigMap's three
//! keys, `packages`, `clusterServiceVersions` and `customResourceDefinitions`, separated by NUL bytes, each a
//! YAML text of a list; the catalog they build is validated and indexed.

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::collections::BTreeMap;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut parts = text.splitn(3, '\0');
    let mut data = BTreeMap::new();
    for key in [
        catalog::configmap::PACKAGES_KEY,
        catalog::configmap::CSVS_KEY,
        catalog::configmap::CRDS_KEY,
    ] {
        if let Some(part) = parts.next() {
            data.insert(key.to_string(), part.to_string());
        }
    }
    let Ok(catalog) = catalog::Catalog::from_configmap_data(&data) else {
        return;
    };
    let _ = catalog::validate::validate(&catalog);
    let _ = registry::store::Store::build(catalog);
});
