//! The prefetch stage of namespace resolution: the bundles a plan needs, fetched off the namespace actor's
//! mailbox. A run that resolved a step whose bundles it does not hold yet names them ([`super::plan`]); the actor
//! starts one task per bundle (`tokio::spawn`, so a slow catalog or registry never holds the mailbox) that reads
//! the bundle from its catalog (gRPC or the ConfigMap's content), and for a bundle image, polls its unpack
//! (`crate::bundle_image::fill`: the pull secrets, and the 403 self-grant to read them, are read there). The task
//! sends the result back ([`Fetched`]) and that triggers the next run.
//!
//! A ready bundle is kept until a plan is made of it (or the resolution no longer wants it); a bundle that is not
//! ready (its image still pulling, its pull failed, its catalog could not serve it) is read by one run and fetched
//! again by the next, as the resolution retries it.

use crate::bundle_image::{Filled, NotYet};
use crate::error::error_text;
use crate::shared::Shared;
use resolver::{BundleStep, CatalogKey};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// A bundle as the prefetch stage knows it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BundleId {
    pub catalog: CatalogKey,
    pub package: String,
    pub channel: String,
    pub name: String,
}

impl BundleId {
    pub fn of(b: &BundleStep) -> Self {
        Self {
            catalog: b.catalog.clone(),
            package: b.package.clone(),
            channel: b.channel.clone(),
            name: b.name.clone(),
        }
    }
}

/// What fetching one bundle gave.
#[derive(Debug, Clone)]
pub enum Fetch {
    /// Its objects, ready to become steps.
    Ready(Arc<Filled>),
    /// Its image is not unpacked yet (pulling, or failed and retried with backoff).
    NotYet(NotYet),
    /// Its catalog could not serve it.
    Failed(String),
}

/// A fetch's result, sent back to the namespace actor.
#[derive(actix::Message)]
#[rtype(result = "()")]
pub struct Fetched {
    pub id: BundleId,
    pub fetch: Fetch,
}

/// The fetched bundles of one namespace and the fetches under way.
#[derive(Default)]
pub struct Prefetch {
    done: BTreeMap<BundleId, Fetch>,
    running: BTreeSet<BundleId>,
}

impl Prefetch {
    /// What the next plan reads.
    pub fn fetched(&self) -> &BTreeMap<BundleId, Fetch> {
        &self.done
    }

    /// The bundles of `wanted` to start fetching now (not fetched, not under way); marked under way.
    pub fn start(&mut self, wanted: &[BundleStep]) -> Vec<BundleStep> {
        let mut out = Vec::new();
        for b in wanted {
            let id = BundleId::of(b);
            if !self.done.contains_key(&id) && self.running.insert(id) {
                out.push(b.clone());
            }
        }
        out
    }

    pub fn finished(&mut self, msg: Fetched) {
        self.running.remove(&msg.id);
        self.done.insert(msg.id, msg.fetch);
    }

    /// After a run: forget what it used up (`consumed`: bundles made into plans, and results that were not
    /// ready) and what the resolution no longer wants (`wanted`).
    pub fn after_run(&mut self, wanted: &BTreeSet<BundleId>, consumed: &BTreeSet<BundleId>) {
        self.done
            .retain(|id, _| wanted.contains(id) && !consumed.contains(id));
    }
}

/// Fetch bundle `b` for namespace `ns` (in a task of its own).
pub async fn fetch(shared: Shared, ns: String, b: BundleStep) -> Fetched {
    let id = BundleId::of(&b);
    let Some(source) = shared.catalogs.get(&b.catalog).and_then(|v| v.source) else {
        let fetch = Fetch::Failed(format!("catalog {} is not serving", b.catalog));
        return Fetched { id, fetch };
    };
    let fetch = match source.bundle(&b.package, &b.channel, &b.name).await {
        Err(e) => Fetch::Failed(format!(
            "cannot fetch bundle {} from catalog {}: {}",
            b.name,
            b.catalog,
            error_text(&e)
        )),
        Ok(full) => match crate::bundle_image::fill(&shared, &ns, &b, full).await {
            Ok(filled) => Fetch::Ready(Arc::new(filled)),
            Err(not_yet) => Fetch::NotYet(not_yet),
        },
    };
    Fetched { id, fetch }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(name: &str) -> BundleStep {
        BundleStep {
            name: name.into(),
            package: "pkg".into(),
            channel: "stable".into(),
            version: "1.0.0".into(),
            catalog: CatalogKey::new("cat", "ns"),
            bundle_path: String::new(),
            replaces: None,
            subscription: "sub".into(),
        }
    }

    fn failed(name: &str) -> Fetched {
        Fetched {
            id: BundleId::of(&step(name)),
            fetch: Fetch::Failed("no".into()),
        }
    }

    #[test]
    fn a_bundle_is_fetched_once_at_a_time_and_again_once_used_up() {
        let mut p = Prefetch::default();
        assert_eq!(p.start(&[step("a"), step("b")]).len(), 2);
        assert!(p.start(&[step("a")]).is_empty(), "under way");
        p.finished(failed("a"));
        assert!(p.start(&[step("a")]).is_empty(), "fetched, not read yet");
        let a = BundleId::of(&step("a"));
        p.after_run(&BTreeSet::from([a.clone()]), &BTreeSet::from([a.clone()]));
        assert!(p.fetched().is_empty());
        assert_eq!(p.start(&[step("a")]).len(), 1, "fetched again");
    }

    #[test]
    fn a_bundle_no_longer_wanted_is_forgotten() {
        let mut p = Prefetch::default();
        p.start(&[step("a")]);
        p.finished(failed("a"));
        p.after_run(&BTreeSet::new(), &BTreeSet::new());
        assert!(p.fetched().is_empty());
    }
}
