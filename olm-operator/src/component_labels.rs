//! The Operator labels (`operators.coreos.com/<package>.<namespace>`) a CSV passes on to the objects olm-operator
//! creates for it (its Deployments, RBAC, OperatorCondition and that condition's Role and RoleBinding), put on
//! them when they are created instead of patched on after by the Operator view (issue 19: requests per install).
//! The view still labels what is created unlabelled (e.g. before the CSV itself carried the label), so the
//! labels on the wire are OLM's either way. A copied CSV passes nothing on (OLM disowns copies). Pure.

use messages::crd::annotations::{COPIED_FROM, OPERATOR_LABEL_PREFIX};
use std::collections::BTreeMap;

/// The Operator labels among a CSV's `labels` (OLM's `OperatorNames`: a non-empty name without `/`), with
/// their values; nothing for a copy.
pub fn inherited(labels: Option<&BTreeMap<String, String>>) -> BTreeMap<String, String> {
    let Some(labels) = labels else {
        return BTreeMap::new();
    };
    if labels.contains_key(COPIED_FROM) {
        return BTreeMap::new();
    }
    labels
        .iter()
        .filter(|(k, _)| {
            k.strip_prefix(OPERATOR_LABEL_PREFIX)
                .is_some_and(|name| !name.is_empty() && !name.contains('/'))
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[rstest]
    #[case::no_labels(None, &[])]
    #[case::the_operator_label_passes(Some(&[("operators.coreos.com/etcd.ns", ""), ("olm.managed", "true")][..]), &[("operators.coreos.com/etcd.ns", "")])]
    #[case::several_operators_pass(Some(&[("operators.coreos.com/a.ns", ""), ("operators.coreos.com/b.ns", "")][..]), &[("operators.coreos.com/a.ns", ""), ("operators.coreos.com/b.ns", "")])]
    #[case::a_prefix_with_a_slash_is_not_an_operator(Some(&[("operators.coreos.com/x/y", "")][..]), &[])]
    #[case::the_bare_prefix_is_not_an_operator(Some(&[("operators.coreos.com/", "")][..]), &[])]
    #[case::other_labels_stay(Some(&[("olm.owner", "csv"), ("olm.operatorgroup.uid/1", "")][..]), &[])]
    #[case::a_copy_passes_nothing(Some(&[("operators.coreos.com/etcd.ns", ""), ("olm.copiedFrom", "ns")][..]), &[])]
    fn a_csv_passes_on_its_operator_labels(
        #[case] labels: Option<&[(&str, &str)]>,
        #[case] expected: &[(&str, &str)],
    ) {
        let labels = labels.map(map);
        assert_eq!(inherited(labels.as_ref()), map(expected));
    }
}
