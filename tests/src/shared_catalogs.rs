//! The shared catalogs (`../shared/catalogs` beside the clone, or `$OLM_RS_SHARED/catalogs`): real catalogs and
//! bundles published by others, the input of the tests that install them. A test whose input is missing fails
//! saying so.

use std::path::PathBuf;

/// The catalogs folder, or an error naming where it was looked for.
pub fn shared_catalogs() -> anyhow::Result<PathBuf> {
    let dir = std::env::var_os("OLM_RS_SHARED")
        .map(|d| PathBuf::from(d).join("catalogs"))
        .unwrap_or_else(|| {
            PathBuf::from(
                std::env::var("CARGO_MANIFEST_DIR")
                    .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
            )
            .join("../../shared/catalogs")
        });
    anyhow::ensure!(
        dir.is_dir(),
        "the shared catalogs (../shared/catalogs beside the clone, or $OLM_RS_SHARED/catalogs) are this test's input and are missing: {}",
        dir.display()
    );
    Ok(dir)
}

/// The community bundles' `operators/` folder (one folder per package, one per bundle version below it).
pub fn shared_operators() -> anyhow::Result<PathBuf> {
    Ok(shared_catalogs()?.join("community-operators-prod-bundles/operators"))
}

/// The community FBC (`community-operators-prod-fbc/catalogs/v4.21`), or an error saying it is missing.
pub fn community_fbc() -> anyhow::Result<PathBuf> {
    let fbc = shared_catalogs()?.join("community-operators-prod-fbc/catalogs/v4.21");
    anyhow::ensure!(
        fbc.is_dir(),
        "the community FBC is missing at {}",
        fbc.display()
    );
    Ok(fbc)
}
