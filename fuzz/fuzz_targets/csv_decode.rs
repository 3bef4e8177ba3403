//! Bundle manifests as OLM reads them: YAML/JSON documents decoded with Go's rules into a
//! ClusterServiceVersion (`messages::go_json`), every object's metadata normalized, and the CSV facts and
//! metadata the catalog keeps.

#![no_main]

use libfuzzer_sys::fuzz_target;
use messages::crd::csv::ClusterServiceVersion;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(values) = catalog::documents::parse_documents(text) else {
        return;
    };
    for value in &values {
        let _ = messages::go_json::normalize::<ClusterServiceVersion>(value);
        let _ = messages::go_json::normalize_metadata(value);
        if catalog::csv::facts(value).is_ok() {
            let _ = catalog::csv_json::metadata_of(value);
        }
    }
});
