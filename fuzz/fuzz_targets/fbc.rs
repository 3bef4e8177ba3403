//! File-based catalogs: a catalog file (YAML or JSON stream) read into documents, assembled into the catalog
//! model, validated, indexed as the registry serves it, and rendered back to FBC.

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(values) = catalog::documents::parse_documents(text) else {
        return;
    };
    let docs = catalog::documents::with_origins(Path::new("fuzz/catalog.yaml"), values);
    let Ok(catalog) = catalog::fbc::from_documents(docs) else {
        return;
    };
    let _ = catalog::validate::validate(&catalog);
    let mut rendered = Vec::new();
    let _ = catalog::render::write_json(&catalog, &mut rendered);
    let _ = registry::store::Store::build(catalog);
});
