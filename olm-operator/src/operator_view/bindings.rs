//! The RoleBindings and ClusterRoleBindings of an Operator from ONE list per kind and run (olm-operator does
//! not watch bindings): which a CSV owns and still lacks the Operator's label (to label), and which carry the
//! label once those are labelled (its components). Before, a run listed each kind twice, once by `!label` to
//! adopt and once by `label` to gather (issue 19: requests per install). The `!label` list already returned
//! nearly every binding of the cluster, so one unfiltered list costs the apiserver no more.

use super::adopt;
use super::components::Component;
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use messages::crd::csv::ClusterServiceVersion;

/// One listed binding: its namespace (none for a ClusterRoleBinding) and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    pub namespace: Option<String>,
    pub name: String,
}

/// What one list tells about an Operator's bindings.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Split {
    /// Owned by the CSV and not labelled for the Operator yet.
    pub to_label: Vec<Named>,
    /// Labelled for the Operator once `to_label` is (its components).
    pub labelled: Vec<Named>,
}

fn named(meta: &ObjectMeta) -> Option<Named> {
    Some(Named {
        namespace: meta.namespace.clone(),
        name: meta.name.clone()?,
    })
}

/// Split the listed bindings for `operator`, adopting what `csv` owns.
pub fn split<'a>(
    listed: impl IntoIterator<Item = &'a ObjectMeta>,
    operator: &str,
    csv: &ClusterServiceVersion,
) -> Split {
    let mut out = Split::default();
    for meta in listed {
        let Some(n) = named(meta) else { continue };
        if adopt::is_labelled(meta, operator) {
            out.labelled.push(n);
        } else if adopt::owned_by(meta, csv) {
            out.to_label.push(n.clone());
            out.labelled.push(n);
        }
    }
    out
}

/// The bindings of one kind as listed once per view run and shared by every Operator the run adopts for (was
/// one list per Operator and CSV phase: with 1,000 operators installed, a run covering hundreds of them listed
/// the cluster's thousands of bindings hundreds of times, and the view fell minutes behind; issue 19's
/// 50-CatalogSource row). A label the run puts on a binding is recorded here, so a later CSV of the same Operator
/// in the same run sees it as the API would.
#[derive(Debug, Default)]
pub struct Listed {
    metas: Option<Vec<ObjectMeta>>,
}

impl Listed {
    /// The listing, made by `list` the first time it is asked for in this run.
    pub async fn get<F, Fut, E>(&mut self, list: F) -> Result<&[ObjectMeta], E>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<Vec<ObjectMeta>, E>>,
    {
        if self.metas.is_none() {
            self.metas = Some(list().await?);
        }
        Ok(self.metas.as_deref().unwrap_or_default())
    }

    /// Record that `binding` now carries `label`.
    pub fn labelled(&mut self, binding: &Named, label: &str) {
        for m in self.metas.iter_mut().flatten() {
            if m.name.as_deref() == Some(binding.name.as_str()) && m.namespace == binding.namespace
            {
                m.labels
                    .get_or_insert_with(Default::default)
                    .insert(label.to_owned(), String::new());
            }
        }
    }
}

/// The Operator's components among its labelled bindings.
pub fn components(role_bindings: &[Named], cluster_bindings: &[Named]) -> Vec<Component> {
    let of = |kind: &str, list: &[Named]| -> Vec<Component> {
        list.iter()
            .map(|n| Component {
                api_version: RoleBinding::api_version(&()).into_owned(),
                kind: kind.to_owned(),
                namespace: n.namespace.clone(),
                name: n.name.clone(),
                conditions: Vec::new(),
            })
            .collect()
    };
    let mut out = of(&RoleBinding::kind(&()), role_bindings);
    out.extend(of(&ClusterRoleBinding::kind(&()), cluster_bindings));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use messages::crd::annotations::operator_component_label;
    use rstest::rstest;
    use std::collections::BTreeMap;

    const OPERATOR: &str = "probe.ns";

    fn csv() -> ClusterServiceVersion {
        let mut csv = ClusterServiceVersion::new("probe.v1", Default::default());
        csv.metadata.namespace = Some("ns".into());
        csv.metadata.uid = Some("csv-uid".into());
        csv
    }

    enum B {
        /// Owned by the CSV (owner reference), not labelled.
        Owned,
        /// Owned and labelled already.
        OwnedLabelled,
        /// Labelled, not owned (labelled by hand, or by an older CSV of the Operator).
        Labelled,
        /// Neither.
        Foreign,
    }

    fn binding(name: &str, kind: B) -> ObjectMeta {
        let owned = matches!(kind, B::Owned | B::OwnedLabelled);
        let labelled = matches!(kind, B::OwnedLabelled | B::Labelled);
        ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            owner_references: owned.then(|| {
                vec![OwnerReference {
                    kind: "ClusterServiceVersion".into(),
                    uid: "csv-uid".into(),
                    name: "probe.v1".into(),
                    ..OwnerReference::default()
                }]
            }),
            labels: labelled
                .then(|| BTreeMap::from([(operator_component_label(OPERATOR), String::new())])),
            ..ObjectMeta::default()
        }
    }

    fn names(v: &[Named]) -> Vec<&str> {
        v.iter().map(|n| n.name.as_str()).collect()
    }

    #[rstest]
    #[case::nothing_listed(vec![], &[], &[])]
    #[case::an_owned_binding_is_labelled_and_counted(vec![binding("a", B::Owned)], &["a"], &["a"])]
    #[case::a_labelled_binding_is_counted_only(vec![binding("a", B::OwnedLabelled)], &[], &["a"])]
    #[case::a_labelled_binding_the_csv_does_not_own_stays_a_component(vec![binding("a", B::Labelled)], &[], &["a"])]
    #[case::a_foreign_binding_is_left_alone(vec![binding("a", B::Foreign)], &[], &[])]
    #[case::a_mix(
        vec![binding("a", B::Owned), binding("b", B::Foreign), binding("c", B::OwnedLabelled), binding("d", B::Labelled)],
        &["a"],
        &["a", "c", "d"]
    )]
    fn bindings_split(
        #[case] listed: Vec<ObjectMeta>,
        #[case] to_label: &[&str],
        #[case] labelled: &[&str],
    ) {
        let s = split(&listed, OPERATOR, &csv());
        assert_eq!(names(&s.to_label), to_label);
        assert_eq!(names(&s.labelled), labelled);
    }

    #[test]
    fn components_name_their_kinds() {
        let n = |ns: Option<&str>, name: &str| Named {
            namespace: ns.map(str::to_owned),
            name: name.into(),
        };
        let c = components(&[n(Some("ns"), "rb")], &[n(None, "crb")]);
        let shown: Vec<_> = c
            .iter()
            .map(|c| {
                (
                    c.api_version.as_str(),
                    c.kind.as_str(),
                    c.namespace.as_deref(),
                    c.name.as_str(),
                )
            })
            .collect();
        assert_eq!(
            shown,
            [
                (
                    "rbac.authorization.k8s.io/v1",
                    "RoleBinding",
                    Some("ns"),
                    "rb"
                ),
                (
                    "rbac.authorization.k8s.io/v1",
                    "ClusterRoleBinding",
                    None,
                    "crb"
                ),
            ]
        );
    }

    #[tokio::test]
    async fn a_run_lists_once_and_sees_its_own_labels() {
        let mut listed = Listed::default();
        let mut lists = 0;
        for _ in 0..3 {
            listed
                .get(|| {
                    lists += 1;
                    async { Ok::<_, ()>(vec![binding("a", B::Owned), binding("b", B::Foreign)]) }
                })
                .await
                .expect("listed");
        }
        assert_eq!(
            lists, 1,
            "one list per run, whatever the number of Operators"
        );
        let first = split(
            listed.get(|| async { Err(()) }).await.expect("kept"),
            OPERATOR,
            &csv(),
        );
        assert_eq!(names(&first.to_label), ["a"]);
        for n in &first.to_label {
            listed.labelled(n, &operator_component_label(OPERATOR));
        }
        let again = split(
            listed.get(|| async { Err(()) }).await.expect("kept"),
            OPERATOR,
            &csv(),
        );
        assert!(
            again.to_label.is_empty(),
            "labelled in this run: not labelled twice"
        );
        assert_eq!(names(&again.labelled), ["a"]);
    }

    #[test]
    fn a_binding_without_a_name_is_skipped() {
        let mut b = binding("a", B::Owned);
        b.name = None;
        assert_eq!(split([&b], OPERATOR, &csv()), Split::default());
    }
}
