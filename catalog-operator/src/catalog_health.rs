//! A Subscription's `status.catalogHealth` (one entry per catalog it sees), pure: the entries resolution writes,
//! and the summary the Subscription store keeps in their place so that memory per Subscription stays flat as
//! catalogs are added (1,000 Subscriptions beside 50 catalogs held 50,000 entries, twice).
//!
//! ```text
//! watch ─ project: entries in the written form ─▶ CatalogHealthSummary { digest, entries, last_updated }
//! resolution ─ entries(catalogs, old status, now) ─▶ the old entries (or their rebuild) when nothing changed,
//!                                                  else every entry stamped `now` (OLM v0's updateHealth)
//! ```
//!
//! The written form is OLM v0's: when any entry changes, the whole list is written with one `lastUpdated`. A list
//! in another form (written by an older release, with per-entry times, or by OLM v0, whose references carry the
//! CatalogSource's resourceVersion) stays whole in the store until resolution rewrites it.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use messages::crd::subscription::{
    CatalogHealthSummary, Subscription, SubscriptionCatalogHealth, SubscriptionStatus,
};
use resolver::CatalogKey;
use std::hash::{DefaultHasher, Hash, Hasher};

/// One CatalogSource visible to a Subscription, and whether it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogHealth {
    pub key: CatalogKey,
    pub uid: String,
    pub healthy: bool,
    /// Still loading its content for the first time (no problem reported yet).
    pub loading: bool,
}

/// The catalogs a Subscription's health reports: every visible one but those still loading for the first time,
/// unless it is the one the Subscription targets. A new global catalog is listed once it has loaded (or failed),
/// so adding one changes `catalogHealth` once and no Subscription's condition (nor the Operators showing them);
/// resolution waits for loading catalogs all the same.
pub fn reported<'a>(
    catalogs: &'a [CatalogHealth],
    target: &'a CatalogKey,
) -> impl Iterator<Item = &'a CatalogHealth> {
    catalogs
        .iter()
        .filter(move |c| !c.loading || &c.key == target)
}

const API_VERSION: &str = "operators.coreos.com/v1alpha1";
const KIND: &str = "CatalogSource";

/// The reference resolution writes for `c`.
fn reference(c: &CatalogHealth) -> ObjectReference {
    ObjectReference {
        api_version: Some(API_VERSION.into()),
        kind: Some(KIND.into()),
        name: Some(c.key.name.clone()),
        namespace: Some(c.key.namespace.clone()),
        uid: Some(c.uid.clone()),
        ..Default::default()
    }
}

/// One entry, times aside, as the digest reads it.
fn hash_entry(h: &mut DefaultHasher, r: Option<&ObjectReference>, healthy: bool) {
    match r {
        None => 0u8.hash(h),
        Some(r) => {
            1u8.hash(h);
            r.api_version.hash(h);
            r.kind.hash(h);
            r.name.hash(h);
            r.namespace.hash(h);
            r.uid.hash(h);
            r.resource_version.hash(h);
            r.field_path.hash(h);
        }
    }
    healthy.hash(h);
}

/// The digest and count of a list, times aside.
fn identity_of<'a>(
    entries: impl Iterator<Item = (Option<&'a ObjectReference>, bool)>,
) -> (u64, u32) {
    let mut h = DefaultHasher::new();
    let mut n = 0u32;
    for (r, healthy) in entries {
        hash_entry(&mut h, r, healthy);
        n = n.saturating_add(1);
    }
    (h.finish(), n)
}

/// What a status's `catalogHealth` says, times aside, whichever form holds it.
pub fn identity(status: &SubscriptionStatus) -> (u64, u32) {
    match (
        &status.catalog_health_summary,
        status.catalog_health.is_empty(),
    ) {
        (Some(s), true) => (s.digest, s.entries),
        _ => identity_of(
            status
                .catalog_health
                .iter()
                .map(|e| (e.catalog_source_ref.as_ref(), e.healthy)),
        ),
    }
}

/// The summary of `list` when it is in the written form (see the module header), else `None`.
pub fn summarize(list: &[SubscriptionCatalogHealth]) -> Option<CatalogHealthSummary> {
    let last_updated = list.first()?.last_updated.clone()?;
    let written_form = list.iter().all(|e| {
        e.last_updated.as_ref() == Some(&last_updated)
            && e.catalog_source_ref.as_ref().is_some_and(|r| {
                r.api_version.as_deref() == Some(API_VERSION)
                    && r.kind.as_deref() == Some(KIND)
                    && r.name.is_some()
                    && r.namespace.is_some()
                    && r.uid.is_some()
                    && r.resource_version.is_none()
                    && r.field_path.is_none()
            })
    });
    if !written_form {
        return None;
    }
    let (digest, entries) = identity_of(
        list.iter()
            .map(|e| (e.catalog_source_ref.as_ref(), e.healthy)),
    );
    Some(CatalogHealthSummary {
        digest,
        entries,
        last_updated,
    })
}

/// The Subscription store's projection (catalog-operator's watch): a list in the written form is kept as its
/// summary.
pub fn project(sub: &mut Subscription) {
    let Some(status) = sub.status.as_mut() else {
        return;
    };
    if let Some(summary) = summarize(&status.catalog_health) {
        status.catalog_health = Vec::new();
        status.catalog_health_summary = Some(summary);
    }
}

/// The `catalogHealth` to write for `catalogs` (sorted as resolution sees them): `old`'s entries when they say
/// the same (times aside; rebuilt from its summary when the store holds one), else every entry stamped `now`.
pub fn entries(
    catalogs: &[CatalogHealth],
    old: &SubscriptionStatus,
    now: &Time,
) -> Vec<SubscriptionCatalogHealth> {
    let references: Vec<(ObjectReference, bool)> =
        catalogs.iter().map(|c| (reference(c), c.healthy)).collect();
    let same =
        identity_of(references.iter().map(|(r, healthy)| (Some(r), *healthy))) == identity(old);
    if same && !old.catalog_health.is_empty() {
        return old.catalog_health.clone();
    }
    let stamp = match (&old.catalog_health_summary, same) {
        (Some(s), true) => s.last_updated.clone(),
        _ => now.clone(),
    };
    references
        .into_iter()
        .map(|(r, healthy)| SubscriptionCatalogHealth {
            catalog_source_ref: Some(r),
            last_updated: Some(stamp.clone()),
            healthy,
        })
        .collect()
}

#[cfg(test)]
mod tests;
