//! blang semver ranges (`olm.skipRange`, `skipRange` of channel entries): parsed, and every version the input
//! names besides checked against the range.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (range, versions) = text
        .split_once('\n')
        .unwrap_or((text, "0.0.1 1.0.0 2.3.4-rc.1+b"));
    let Ok(range) = catalog::VersionRange::parse(range) else {
        return;
    };
    for v in versions.split_whitespace() {
        if let Ok(v) = semver::Version::parse(v) {
            let _ = range.contains(&v);
        }
    }
});
