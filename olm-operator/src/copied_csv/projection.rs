//! What olm-operator keeps in memory of a copied CSV (issue 19): its metadata and status whole (what the copy's
//! actor, the metrics and the OperatorGroup's fan-out read: labels, annotations, phase/reason/message), and of
//! its spec only what the readers of a namespace's CSVs use (`version`, `replaces`, the names, versions and
//! kinds of its CRDs and API services); no install strategy, descriptors, icons, descriptions. A copy's content
//! is its parent's, which olm-operator keeps whole. The copy is still written whole to the API (`render`).
//!
//! So that a copy edited by someone else is still found and restored, the projection remembers a hash of the
//! whole spec as it was on the API ([`SPEC_HASH`]), and long annotation values (e.g. `alm-examples`) as their
//! hash ([`value`]); [`super::drift`] compares the wanted copy through the same cuts. Both live in memory only:
//! nothing writes a stored copy back (copies are rendered from their parent). Pure.

use messages::crd::annotations::COPIED_FROM;
use messages::crd::csv::{
    ApiServiceDefinitions, ApiServiceDescription, ClusterServiceVersion, ClusterServiceVersionSpec,
    CrdDescription, CustomResourceDefinitions,
};

/// In-memory annotation of a projected copy: the hash of its whole spec as the API had it.
pub const SPEC_HASH: &str = "olm-rs.internal/copy-spec-hash";

/// Annotation values longer than this are kept as their hash.
pub const LONG_VALUE: usize = 256;

/// Prefix of a hashed annotation value (cannot start a value we compare it with: see [`value`]).
const HASHED: &str = "\u{0}hash:";

/// An annotation value as a projected copy keeps it: itself, or its hash when long.
pub fn value(v: &str) -> String {
    if v.len() > LONG_VALUE {
        format!("{HASHED}{}", crate::hash::of_json(&v))
    } else {
        v.to_string()
    }
}

/// Whether `csv` is a projected copy (compare it through [`value`] and [`SPEC_HASH`]).
pub fn is_projected(csv: &ClusterServiceVersion) -> bool {
    csv.metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(SPEC_HASH))
}

/// The hash [`SPEC_HASH`] holds for `spec`.
pub fn spec_hash(spec: &ClusterServiceVersionSpec) -> String {
    crate::hash::of_json(spec)
}

fn crd(d: &CrdDescription) -> CrdDescription {
    CrdDescription {
        name: d.name.clone(),
        version: d.version.clone(),
        kind: d.kind.clone(),
        ..CrdDescription::default()
    }
}

fn api_service(d: &ApiServiceDescription) -> ApiServiceDescription {
    ApiServiceDescription {
        name: d.name.clone(),
        group: d.group.clone(),
        version: d.version.clone(),
        kind: d.kind.clone(),
        ..ApiServiceDescription::default()
    }
}

/// Cut a copied CSV down to what is kept of it (anything else is left as it is).
pub fn project(csv: &mut ClusterServiceVersion) {
    let copied = csv
        .metadata
        .labels
        .as_ref()
        .is_some_and(|l| l.contains_key(COPIED_FROM));
    if !copied || is_projected(csv) {
        return;
    }
    let hash = spec_hash(&csv.spec);
    let spec = std::mem::take(&mut csv.spec);
    let crds = spec
        .custom_resource_definitions
        .map(|d| CustomResourceDefinitions {
            owned: d.owned.map(|v| v.iter().map(crd).collect()),
            required: d.required.map(|v| v.iter().map(crd).collect()),
        });
    let api_services = spec.api_service_definitions.map(|d| ApiServiceDefinitions {
        owned: d.owned.map(|v| v.iter().map(api_service).collect()),
        required: d.required.map(|v| v.iter().map(api_service).collect()),
    });
    csv.spec = ClusterServiceVersionSpec {
        version: spec.version,
        replaces: spec.replaces,
        custom_resource_definitions: crds,
        api_service_definitions: api_services,
        ..ClusterServiceVersionSpec::default()
    };
    let annotations = csv
        .metadata
        .annotations
        .get_or_insert_with(Default::default);
    for v in annotations.values_mut() {
        if v.len() > LONG_VALUE {
            *v = value(v);
        }
    }
    annotations.insert(SPEC_HASH.to_string(), hash);
    csv.metadata.managed_fields = None;
}

#[cfg(test)]
mod tests;
