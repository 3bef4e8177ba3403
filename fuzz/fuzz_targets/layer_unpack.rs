//! Image layers (tar, gzip-compressed or not, told apart by their bytes): unpacked under the bundle limits into
//! the files a bundle image keeps, then read as a bundle (`oci::bundle::from_files`).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let layers = [(String::new(), data.to_vec())];
    let Ok(files) = oci::layers::unpack(
        "fuzz/bundle:v1",
        &layers,
        &oci::bundle::keep,
        &oci::Limits::BUNDLE,
    ) else {
        return;
    };
    let _ = oci::bundle::from_files("fuzz/bundle:v1", "sha256:00", &files);
});
