//! The name of a new InstallPlan: deterministic, from the namespace and the plan's content, so that planning the
//! same step twice names the same object and the second create answers `AlreadyExists` (and is reused by
//! [`super::ensure`]) instead of writing a second plan. This is what survives a restart of the namespace actor
//! or of the whole process between creating a plan and hearing of it (the chaos runs' duplicate InstallPlan,
//! seed 77): neither the actor's memory nor the InstallPlan store has to show the first plan.
//!
//! The content: the namespace, the owning Subscriptions' uids (a Subscription deleted and made again is another
//! owner), the CSV names, the approval and the plan's `spec.generation` (a later plan for the same CSVs, e.g.
//! after its CSV was deleted, gets a higher generation once the first plan is known, and so another name).
//! Shape as OLM's `generateName: install-` (`install-` and five characters of the apiserver's alphabet), so
//! the name is wire-compatible; the five characters come from a SHA-256 of the content. Pure.

use messages::crd::install_plan::InstallPlan;
use sha2::{Digest, Sha256};

/// The apiserver's `generateName` alphabet (no vowels, no look-alikes).
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
const SUFFIX: usize = 5;

/// `install-xxxxx`, the same for the same content (owners and CSVs in any order).
pub fn plan_name(ip: &InstallPlan) -> String {
    let mut owners: Vec<&str> = ip
        .metadata
        .owner_references
        .iter()
        .flatten()
        .map(|o| o.uid.as_str())
        .collect();
    owners.sort_unstable();
    let mut csvs: Vec<&str> = ip
        .spec
        .cluster_service_version_names
        .iter()
        .map(String::as_str)
        .collect();
    csvs.sort_unstable();
    let mut h = Sha256::new();
    // Fields separated by bytes that no name or uid holds.
    h.update(
        ip.metadata
            .namespace
            .as_deref()
            .unwrap_or_default()
            .as_bytes(),
    );
    for uid in owners {
        h.update(b"\0o");
        h.update(uid.as_bytes());
    }
    for csv in csvs {
        h.update(b"\0c");
        h.update(csv.as_bytes());
    }
    h.update(if ip.spec.approval.is_manual() {
        b"\0M"
    } else {
        b"\0A"
    });
    h.update(b"\0g");
    h.update(ip.spec.generation.unwrap_or(0).to_string().as_bytes());
    let digest = h.finalize();
    let suffix: String = digest
        .iter()
        .take(SUFFIX)
        .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
        .collect();
    format!("install-{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn plan(
        ns: &str,
        owners: &[&str],
        csvs: &[&str],
        approval: &str,
        generation: i64,
    ) -> InstallPlan {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "InstallPlan",
            "metadata": {"generateName": "install-", "namespace": ns,
                "ownerReferences": owners.iter().map(|uid| serde_json::json!({
                    "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
                    "name": format!("sub-{uid}"), "uid": uid
                })).collect::<Vec<_>>()},
            "spec": {"clusterServiceVersionNames": csvs, "approval": approval,
                "approved": approval == "Automatic", "generation": generation}
        }))
        .expect("plan")
    }

    fn base() -> InstallPlan {
        plan("ns", &["uid-a", "uid-b"], &["a.v2", "b.v1"], "Automatic", 3)
    }

    #[test]
    fn the_name_has_the_shape_of_olms_generate_name() {
        let name = plan_name(&base());
        assert_eq!(name.len(), "install-".len() + SUFFIX);
        assert!(
            name.strip_prefix("install-")
                .is_some_and(|s| s.bytes().all(|b| ALPHABET.contains(&b))),
            "{name}"
        );
    }

    #[rstest]
    #[case::owners_in_another_order(plan("ns", &["uid-b", "uid-a"], &["a.v2", "b.v1"], "Automatic", 3), true)]
    #[case::csvs_in_another_order(plan("ns", &["uid-a", "uid-b"], &["b.v1", "a.v2"], "Automatic", 3), true)]
    #[case::another_namespace(plan("other", &["uid-a", "uid-b"], &["a.v2", "b.v1"], "Automatic", 3), false)]
    #[case::another_owner(plan("ns", &["uid-a", "uid-c"], &["a.v2", "b.v1"], "Automatic", 3), false)]
    #[case::another_csv(plan("ns", &["uid-a", "uid-b"], &["a.v3", "b.v1"], "Automatic", 3), false)]
    #[case::another_approval(plan("ns", &["uid-a", "uid-b"], &["a.v2", "b.v1"], "Manual", 3), false)]
    #[case::another_generation(plan("ns", &["uid-a", "uid-b"], &["a.v2", "b.v1"], "Automatic", 4), false)]
    fn the_same_step_gets_the_same_name_and_another_step_another(
        #[case] other: InstallPlan,
        #[case] same: bool,
    ) {
        assert_eq!(plan_name(&other) == plan_name(&base()), same);
    }
}
