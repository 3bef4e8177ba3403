//! Sqlite index catalog images (`/database/index.db`, operator-registry's schema): read into FBC documents
//! (`catalog_image::sqlite`) and assembled into the catalog model.

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(values) = catalog_image::sqlite::documents(data) else {
        return;
    };
    let docs = catalog::documents::with_origins(Path::new("fuzz/index.db"), values);
    if let Ok(catalog) = catalog::fbc::from_documents(docs) {
        let _ = catalog::validate::validate(&catalog);
    }
});
