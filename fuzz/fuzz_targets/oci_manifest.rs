//! OCI image manifests, image indexes and Docker manifest lists as pulled (`oci::manifest`): read by media type,
//! an index resolved to one platform's manifest, and an image config's labels.

#![no_main]

use libfuzzer_sys::fuzz_target;
use oci::platform::Platform;

fuzz_target!(|data: &[u8]| {
    for platform in ["linux/amd64", "linux/arm64/v8"] {
        if let Some(wanted) = Platform::parse(platform) {
            let _ = oci::manifest::read("fuzz/image:v1", data, &wanted);
        }
    }
    let _ = oci::manifest::labels("fuzz/image:v1", data);
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = Platform::parse(text);
    }
});
