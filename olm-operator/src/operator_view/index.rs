//! Which objects belong to which Operator, for every Operator a view run handles at once: one pass over each
//! store answers for all of them (a pass per Operator cost the view its catch-up at 1,000 operators). Pure:
//! [`Pending`] says which pending Operators an object's labels name; [`Adopting`] says which pending Operator's
//! adopting CSV owns an object (an owner reference to its uid, or OLM's `olm.owner` labels naming it).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use messages::crd::annotations::{
    OPERATOR_LABEL_PREFIX, OWNER, OWNER_KIND, OWNER_NAMESPACE, operator_component_label,
};
use messages::crd::csv::ClusterServiceVersion;
use std::collections::{BTreeSet, HashMap};

/// The Operators one run handles, by their component label (OLM cuts a long name to fit a label key, so two
/// names may share one key).
#[derive(Debug, Default)]
pub struct Pending {
    by_label: HashMap<String, Vec<String>>,
}

impl Pending {
    pub fn new<'a>(names: impl IntoIterator<Item = &'a String>) -> Self {
        let mut by_label: HashMap<String, Vec<String>> = HashMap::new();
        for name in names {
            by_label
                .entry(operator_component_label(name))
                .or_default()
                .push(name.clone());
        }
        Self { by_label }
    }

    /// The pending Operators whose component label `meta` carries.
    pub fn named_by<'a>(&'a self, meta: &'a ObjectMeta) -> impl Iterator<Item = &'a str> + 'a {
        meta.labels
            .iter()
            .flatten()
            .filter(|(k, _)| k.starts_with(OPERATOR_LABEL_PREFIX))
            .filter_map(|(k, _)| self.by_label.get(k))
            .flatten()
            .map(String::as_str)
    }

    pub fn is_empty(&self) -> bool {
        self.by_label.is_empty()
    }
}

/// The CSVs whose owned objects a run adopts (each labelled for a pending Operator, at a phase not adopted at
/// yet), found by uid or by name.
#[derive(Debug, Default)]
pub struct Adopting {
    operators: Vec<String>,
    crds: HashMap<String, Vec<usize>>,
    by_uid: HashMap<String, Vec<usize>>,
    by_name: HashMap<(String, String), Vec<usize>>,
}

impl Adopting {
    /// Adopt what `csv` owns for `operator`.
    pub fn add(&mut self, operator: &str, csv: &ClusterServiceVersion) {
        let at = self.operators.len();
        self.operators.push(operator.to_owned());
        if let Some(uid) = csv.metadata.uid.clone() {
            self.by_uid.entry(uid).or_default().push(at);
        }
        if let (Some(ns), Some(name)) = (&csv.metadata.namespace, &csv.metadata.name) {
            self.by_name
                .entry((ns.clone(), name.clone()))
                .or_default()
                .push(at);
        }
        for crd in super::adopt::owned_crds(csv) {
            self.crds.entry(crd).or_default().push(at);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.operators.is_empty()
    }

    /// The Operators whose adopting CSV owns `meta` and which `meta` is not labelled for yet.
    pub fn owners(&self, meta: &ObjectMeta) -> BTreeSet<&str> {
        let by_reference = meta
            .owner_references
            .iter()
            .flatten()
            .filter(|r| r.kind == "ClusterServiceVersion")
            .filter_map(|r| self.by_uid.get(&r.uid))
            .flatten();
        let labels = meta.labels.as_ref();
        let label = |key: &str| labels.and_then(|l| l.get(key)).cloned();
        let by_label = match (label(OWNER), label(OWNER_NAMESPACE)) {
            (Some(name), Some(ns))
                if label(OWNER_KIND).is_none_or(|k| k == "ClusterServiceVersion") =>
            {
                self.by_name.get(&(ns, name))
            }
            _ => None,
        };
        self.unlabelled(meta, by_reference.chain(by_label.into_iter().flatten()))
    }

    /// The Operators whose adopting CSV owns the CRD named `name` and which `meta` is not labelled for yet.
    pub fn crd_owners(&self, name: &str, meta: &ObjectMeta) -> BTreeSet<&str> {
        self.unlabelled(meta, self.crds.get(name).into_iter().flatten())
    }

    fn unlabelled<'a>(
        &'a self,
        meta: &ObjectMeta,
        at: impl Iterator<Item = &'a usize>,
    ) -> BTreeSet<&'a str> {
        at.filter_map(|i| self.operators.get(*i))
            .filter(|op| !super::adopt::is_labelled(meta, op))
            .map(String::as_str)
            .collect()
    }
}

#[cfg(test)]
mod tests;
