//! Narrow rights catalog-operator grants its own ServiceAccount, one object at a time, when deploy/rbac leaves
//! it without them on purpose (least privilege):
//! - **pull secrets**: `get` on exactly the Secrets a CatalogSource names in `spec.secrets`, in that catalog's
//!   namespace (a Role with `resourceNames`, owned by the CatalogSource, so it goes with it);
//! - **the CRD-upgrade safety check**: `list` on the custom resources of one CRD being upgraded (a ClusterRole
//!   naming that group and resource, owned by the CRD, so it goes with it). The group and resource come from the
//!   CRD as the API server stores it ([`crd_ref_from_server`]), never from the bundle's new CRD, which the API
//!   server has not validated yet; the grant is revoked as soon as the check has listed
//!   ([`revoke_cr_list`]: the binding loses its subject and the role its rules), whatever the check found.
//!
//! Upstream OLM binds cluster-admin instead. Creating these needs nothing catalog-operator does not already hold
//! for InstallPlan steps: `create`/`patch` on (cluster)roles and bindings with `escalate` and `bind`. A grant is
//! made only after the API answered Forbidden, so with a broader identity (the admin kubeconfig of the light
//! cluster's tests) nothing is created. Who "self" is comes from `OPERATOR_SERVICE_ACCOUNT` (deploy/ sets it
//! from the downward API's `spec.serviceAccountName`) and the operator's namespace; without it no grant is made.
//!
//! The objects are built by pure functions ([`pull_secret_grant`], [`cr_list_grant`]) and server-side applied.

use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use olm_runtime::error::{self as api_error, Class};
use std::collections::BTreeMap;

/// The env var naming catalog-operator's ServiceAccount.
pub const SERVICE_ACCOUNT_ENV: &str = "OPERATOR_SERVICE_ACCOUNT";
/// The env var naming package-server's ServiceAccount (in catalog-operator's namespace): pull-secret grants bind it
/// too, so package-server pulls a private image catalog with the same credentials.
pub const PACKAGE_SERVER_ACCOUNT_ENV: &str = "OLM_RS_PACKAGE_SERVER_SERVICE_ACCOUNT";
/// The label on every grant (value: the grantee ServiceAccount's namespace).
pub const GRANT_LABEL: &str = "olm-rs.io/catalog-operator-grant";
const MANAGER: &str = "catalog-operator";
/// Longest object name the API accepts.
const MAX_NAME: usize = 253;

/// The ServiceAccount catalog-operator runs as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grantee {
    pub namespace: String,
    pub name: String,
    /// package-server's ServiceAccount in the same namespace, also bound by pull-secret grants.
    pub package_server: Option<String>,
}

/// Who this process is (read once, at start, into `Shared`'s process state): `OPERATOR_SERVICE_ACCOUNT` in
/// `namespace`; none when unset (nothing is granted then).
pub fn grantee_from_env(namespace: &str) -> Option<Grantee> {
    let grantee = std::env::var(SERVICE_ACCOUNT_ENV)
        .ok()
        .filter(|n| !n.trim().is_empty())
        .map(|name| Grantee {
            namespace: namespace.to_string(),
            name: name.trim().to_string(),
            package_server: std::env::var(PACKAGE_SERVER_ACCOUNT_ENV)
                .ok()
                .map(|n| n.trim().to_string())
                .filter(|n| !n.is_empty()),
        });
    if let Some(g) = &grantee {
        tracing::info!(service_account = %g.name, namespace = %g.namespace, "narrow self-grants enabled (pull secrets, CRD-upgrade checks)");
    }
    grantee
}

fn bounded(name: String) -> String {
    if name.len() <= MAX_NAME {
        return name;
    }
    let mut cut = MAX_NAME;
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    name[..cut].to_string()
}

fn labels(grantee: &Grantee) -> BTreeMap<String, String> {
    BTreeMap::from([(GRANT_LABEL.to_string(), grantee.namespace.clone())])
}

fn subject(grantee: &Grantee) -> Vec<Subject> {
    vec![Subject {
        kind: "ServiceAccount".into(),
        name: grantee.name.clone(),
        namespace: Some(grantee.namespace.clone()),
        ..Default::default()
    }]
}

/// Name of the Role (and RoleBinding) granting `grantee` the pull secrets of CatalogSource `catalog`.
pub fn pull_secret_grant_name(grantee: &Grantee, catalog: &str) -> String {
    bounded(format!(
        "olm-rs:{}:{}:pull-secrets:{catalog}",
        grantee.namespace, grantee.name
    ))
}

/// Name of the ClusterRole (and binding) granting `grantee` the list of CRD `crd`'s custom resources.
pub fn cr_list_grant_name(grantee: &Grantee, crd: &str) -> String {
    bounded(format!(
        "olm-rs:{}:{}:list:{crd}",
        grantee.namespace, grantee.name
    ))
}

/// The CatalogSource a pull-secret grant belongs to.
#[derive(Clone, Debug)]
pub struct CatalogRef<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub uid: &'a str,
    pub secrets: &'a [String],
}

/// `get` on exactly `catalog.secrets` in the catalog's namespace, bound to `grantee`; None when it names none.
pub fn pull_secret_grant(
    grantee: &Grantee,
    catalog: &CatalogRef<'_>,
) -> Option<(Role, RoleBinding)> {
    let mut names: Vec<String> = catalog
        .secrets
        .iter()
        .filter(|s| !s.is_empty())
        .cloned()
        .collect();
    names.sort();
    names.dedup();
    if names.is_empty() {
        return None;
    }
    let name = pull_secret_grant_name(grantee, catalog.name);
    let meta = ObjectMeta {
        name: Some(name.clone()),
        namespace: Some(catalog.namespace.to_string()),
        labels: Some(labels(grantee)),
        owner_references: Some(vec![OwnerReference {
            api_version: "operators.coreos.com/v1alpha1".into(),
            kind: "CatalogSource".into(),
            name: catalog.name.to_string(),
            uid: catalog.uid.to_string(),
            ..Default::default()
        }]),
        ..Default::default()
    };
    let role = Role {
        metadata: meta.clone(),
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec![String::new()]),
            resources: Some(vec!["secrets".into()]),
            resource_names: Some(names),
            verbs: vec!["get".into()],
            ..Default::default()
        }]),
    };
    let binding = RoleBinding {
        metadata: meta,
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "Role".into(),
            name,
        },
        subjects: Some(
            subject(grantee)
                .into_iter()
                .chain(grantee.package_server.iter().map(|name| Subject {
                    kind: "ServiceAccount".into(),
                    name: name.clone(),
                    namespace: Some(grantee.namespace.clone()),
                    ..Default::default()
                }))
                .collect(),
        ),
    };
    Some((role, binding))
}

/// The CRD a list grant belongs to.
#[derive(Clone, Debug)]
pub struct CrdRef<'a> {
    pub name: &'a str,
    pub uid: &'a str,
    pub group: &'a str,
    pub plural: &'a str,
}

/// `list` on the custom resources of one CRD, cluster-wide, bound to `grantee`.
pub fn cr_list_grant(grantee: &Grantee, crd: &CrdRef<'_>) -> (ClusterRole, ClusterRoleBinding) {
    let name = cr_list_grant_name(grantee, crd.name);
    let meta = ObjectMeta {
        name: Some(name.clone()),
        labels: Some(labels(grantee)),
        owner_references: Some(vec![OwnerReference {
            api_version: "apiextensions.k8s.io/v1".into(),
            kind: "CustomResourceDefinition".into(),
            name: crd.name.to_string(),
            uid: crd.uid.to_string(),
            ..Default::default()
        }]),
        ..Default::default()
    };
    let role = ClusterRole {
        metadata: meta.clone(),
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec![crd.group.to_string()]),
            resources: Some(vec![crd.plural.to_string()]),
            verbs: vec!["list".into()],
            ..Default::default()
        }]),
        ..Default::default()
    };
    let binding = ClusterRoleBinding {
        metadata: meta,
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name,
        },
        subjects: Some(subject(grantee)),
    };
    (role, binding)
}

/// The grant of `crd` emptied: the ClusterRole without rules, the binding without subjects (same names, owner and
/// label, so the next check re-applies over it and the CRD's deletion still removes both).
pub fn cr_list_revocation(
    grantee: &Grantee,
    crd: &CrdRef<'_>,
) -> (ClusterRole, ClusterRoleBinding) {
    let (mut role, mut binding) = cr_list_grant(grantee, crd);
    role.rules = Some(Vec::new());
    binding.subjects = None;
    (role, binding)
}

/// The CRD a list grant is for, read from the CRD the API server returned (not a bundle's manifest): its name,
/// uid, `spec.group` and `spec.names.plural`, which the API server checked when it accepted the CRD. Refused
/// unless all are present and the name is `<plural>.<group>`, as the API server requires.
pub fn crd_ref_from_server(crd: &serde_json::Value) -> Result<CrdRef<'_>, String> {
    fn field(v: &serde_json::Value) -> Option<&str> {
        v.as_str().filter(|s| !s.is_empty())
    }
    let name = field(&crd["metadata"]["name"]);
    let uid = field(&crd["metadata"]["uid"]);
    let group = field(&crd["spec"]["group"]);
    let plural = field(&crd["spec"]["names"]["plural"]);
    match (name, uid, group, plural) {
        (Some(name), Some(uid), Some(group), Some(plural))
            if name.strip_suffix(group).and_then(|n| n.strip_suffix('.')) == Some(plural) =>
        {
            Ok(CrdRef {
                name,
                uid,
                group,
                plural,
            })
        }
        _ => Err(format!(
            "the CustomResourceDefinition {} the API server returned does not name its resources as `<plural>.<group>`",
            name.unwrap_or("without a name")
        )),
    }
}

fn apply_params() -> PatchParams {
    PatchParams::apply(MANAGER).force()
}

/// Apply the pull-secret grant of `catalog` for `grantee` (an explicit grantee: tests call this as the
/// ServiceAccount). Returns whether there was anything to grant.
pub async fn apply_pull_secret_grant(
    client: &Client,
    grantee: &Grantee,
    catalog: &CatalogRef<'_>,
) -> Result<bool, kube::Error> {
    let Some((role, binding)) = pull_secret_grant(grantee, catalog) else {
        return Ok(false);
    };
    let name = pull_secret_grant_name(grantee, catalog.name);
    Api::<Role>::namespaced(client.clone(), catalog.namespace)
        .patch(&name, &apply_params(), &Patch::Apply(&role))
        .await?;
    Api::<RoleBinding>::namespaced(client.clone(), catalog.namespace)
        .patch(&name, &apply_params(), &Patch::Apply(&binding))
        .await?;
    Ok(true)
}

/// Apply the CR list grant of `crd` for `grantee`.
pub async fn apply_cr_list_grant(
    client: &Client,
    grantee: &Grantee,
    crd: &CrdRef<'_>,
) -> Result<(), kube::Error> {
    let (role, binding) = cr_list_grant(grantee, crd);
    let name = cr_list_grant_name(grantee, crd.name);
    Api::<ClusterRole>::all(client.clone())
        .patch(&name, &apply_params(), &Patch::Apply(&role))
        .await?;
    Api::<ClusterRoleBinding>::all(client.clone())
        .patch(&name, &apply_params(), &Patch::Apply(&binding))
        .await?;
    Ok(())
}

/// Revoke the CR list grant of `crd` for `grantee` (server-side applied over it).
pub async fn apply_cr_list_revocation(
    client: &Client,
    grantee: &Grantee,
    crd: &CrdRef<'_>,
) -> Result<(), kube::Error> {
    let (role, binding) = cr_list_revocation(grantee, crd);
    let name = cr_list_grant_name(grantee, crd.name);
    Api::<ClusterRoleBinding>::all(client.clone())
        .patch(&name, &apply_params(), &Patch::Apply(&binding))
        .await?;
    Api::<ClusterRole>::all(client.clone())
        .patch(&name, &apply_params(), &Patch::Apply(&role))
        .await?;
    Ok(())
}

/// After a Forbidden read of a pull secret: grant this process the catalog's pull secrets. Returns whether a
/// grant was applied (false: no identity configured, or nothing to grant).
pub async fn grant_pull_secrets(
    client: &Client,
    grantee: Option<&Grantee>,
    catalog: &CatalogRef<'_>,
) -> bool {
    let Some(grantee) = grantee else {
        return false;
    };
    match apply_pull_secret_grant(client, grantee, catalog).await {
        Ok(applied) => {
            if applied {
                tracing::info!(catalog = %format!("{}/{}", catalog.namespace, catalog.name), secrets = ?catalog.secrets, "granted catalog-operator get on the catalog's pull secrets");
            }
            applied
        }
        Err(e) => {
            tracing::warn!(catalog = %format!("{}/{}", catalog.namespace, catalog.name), error = &e as &dyn std::error::Error, "cannot grant catalog-operator its catalog's pull secrets");
            false
        }
    }
}

/// After a Forbidden list of a CRD's custom resources: grant this process that list. Returns whether it did.
pub async fn grant_cr_list(client: &Client, grantee: Option<&Grantee>, crd: &CrdRef<'_>) -> bool {
    let Some(grantee) = grantee else {
        return false;
    };
    match apply_cr_list_grant(client, grantee, crd).await {
        Ok(()) => {
            tracing::info!(
                crd = crd.name,
                "granted catalog-operator list on the CRD's custom resources (CRD-upgrade check)"
            );
            true
        }
        Err(e) => {
            tracing::warn!(
                crd = crd.name,
                error = &e as &dyn std::error::Error,
                "cannot grant catalog-operator list on the CRD's custom resources"
            );
            false
        }
    }
}

/// After the check the list grant was for: revoke it. A failure is logged; the grant then stays until the next
/// check of this CRD revokes it, or the CRD goes.
pub async fn revoke_cr_list(client: &Client, grantee: Option<&Grantee>, crd: &CrdRef<'_>) {
    let Some(grantee) = grantee else {
        return;
    };
    match apply_cr_list_revocation(client, grantee, crd).await {
        Ok(()) => tracing::info!(
            crd = crd.name,
            "revoked catalog-operator's list on the CRD's custom resources"
        ),
        Err(e) => tracing::warn!(
            crd = crd.name,
            error = &e as &dyn std::error::Error,
            "cannot revoke catalog-operator's list on the CRD's custom resources"
        ),
    }
}

/// Retry `op` after a grant, a few times over about two seconds while the apiserver's RBAC cache catches up.
pub async fn after_grant<T, F, Fut>(mut op: F) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, kube::Error>>,
{
    let mut delay = std::time::Duration::from_millis(50);
    for _ in 0..6 {
        match op().await {
            Err(e) if api_error::is(&e, Class::Forbidden) => {
                tokio::time::sleep(delay).await;
                delay *= 2;
            }
            other => return other,
        }
    }
    op().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn me() -> Grantee {
        Grantee {
            namespace: "olm".into(),
            name: "catalog-operator".into(),
            package_server: None,
        }
    }

    #[test]
    fn a_pull_secret_grant_binds_package_server_too_when_named() {
        let secrets = vec!["pull".to_string()];
        let catalog = CatalogRef {
            namespace: "team",
            name: "private",
            uid: "u1",
            secrets: &secrets,
        };
        let grantee = Grantee {
            package_server: Some("package-server".into()),
            ..me()
        };
        let (_, binding) = pull_secret_grant(&grantee, &catalog).expect("a grant");
        let subjects: Vec<(String, Option<String>)> = binding
            .subjects
            .unwrap_or_default()
            .into_iter()
            .map(|s| (s.name, s.namespace))
            .collect();
        assert_eq!(
            subjects,
            [
                ("catalog-operator".to_string(), Some("olm".to_string())),
                ("package-server".to_string(), Some("olm".to_string()))
            ]
        );
        let (_, alone) = pull_secret_grant(&me(), &catalog).expect("a grant");
        assert_eq!(alone.subjects.map(|s| s.len()), Some(1));
    }

    #[rstest]
    #[case::one(&["pull"], Some(vec!["pull"]))]
    #[case::sorted_and_deduplicated(&["b", "a", "b"], Some(vec!["a", "b"]))]
    #[case::empty_names_dropped(&["", "a"], Some(vec!["a"]))]
    #[case::none(&[], None)]
    #[case::only_empty(&[""], None)]
    fn a_pull_secret_grant_names_exactly_the_catalogs_secrets(
        #[case] secrets: &[&str],
        #[case] expected: Option<Vec<&str>>,
    ) {
        let secrets: Vec<String> = secrets.iter().map(|s| s.to_string()).collect();
        let catalog = CatalogRef {
            namespace: "team",
            name: "private",
            uid: "u1",
            secrets: &secrets,
        };
        let got = pull_secret_grant(&me(), &catalog);
        let Some(expected) = expected else {
            assert!(got.is_none());
            return;
        };
        let (role, binding) = got.expect("a grant");
        let rules = role.rules.expect("rules");
        assert_eq!(rules.len(), 1);
        let rule = &rules[0];
        assert_eq!(rule.verbs, vec!["get"]);
        assert_eq!(rule.resources, Some(vec!["secrets".to_string()]));
        assert_eq!(rule.api_groups, Some(vec![String::new()]));
        assert_eq!(
            rule.resource_names,
            Some(expected.iter().map(|s| s.to_string()).collect())
        );
        assert_eq!(role.metadata.namespace.as_deref(), Some("team"));
        let owner = &role.metadata.owner_references.expect("owner")[0];
        assert_eq!(
            (owner.kind.as_str(), owner.uid.as_str()),
            ("CatalogSource", "u1")
        );
        assert_eq!(binding.role_ref.name, role.metadata.name.expect("name"));
        let subject = &binding.subjects.expect("subjects")[0];
        assert_eq!(
            (
                subject.kind.as_str(),
                subject.name.as_str(),
                subject.namespace.as_deref()
            ),
            ("ServiceAccount", "catalog-operator", Some("olm"))
        );
    }

    #[rstest]
    #[case::core_group("widgets.example.com", "example.com", "widgets")]
    #[case::long_name(&"x".repeat(300), "example.com", "xs")]
    fn a_list_grant_names_one_group_and_resource_and_the_crd_owns_it(
        #[case] crd: &str,
        #[case] group: &str,
        #[case] plural: &str,
    ) {
        let (role, binding) = cr_list_grant(
            &me(),
            &CrdRef {
                name: crd,
                uid: "u2",
                group,
                plural,
            },
        );
        let name = role.metadata.name.clone().expect("name");
        assert!(name.len() <= MAX_NAME, "{} chars", name.len());
        let rules = role.rules.expect("rules");
        assert_eq!(rules.len(), 1);
        assert_eq!(rules[0].verbs, vec!["list"]);
        assert_eq!(rules[0].api_groups, Some(vec![group.to_string()]));
        assert_eq!(rules[0].resources, Some(vec![plural.to_string()]));
        assert_eq!(rules[0].resource_names, None);
        let owner = &role.metadata.owner_references.expect("owner")[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
            ("CustomResourceDefinition", crd, "u2")
        );
        assert_eq!(binding.role_ref.kind, "ClusterRole");
        assert_eq!(binding.role_ref.name, name);
    }

    fn stored(name: &str, uid: &str, group: &str, plural: &str) -> serde_json::Value {
        serde_json::json!({"metadata": {"name": name, "uid": uid},
            "spec": {"group": group, "names": {"plural": plural, "kind": "Widget"}}})
    }

    #[rstest]
    #[case::as_stored(stored("widgets.example.com", "u", "example.com", "widgets"), Some(("example.com", "widgets")))]
    #[case::a_group_the_name_does_not_end_with(
        stored("widgets.example.com", "u", "", "secrets"),
        None
    )]
    #[case::the_core_group_and_secrets(stored("secrets.", "u", "", "secrets"), None)]
    #[case::a_plural_the_name_does_not_start_with(
        stored("widgets.example.com", "u", "example.com", "gadgets"),
        None
    )]
    #[case::a_suffix_without_its_dot(
        stored("widgetsexample.com", "u", "example.com", "widgets"),
        None
    )]
    #[case::a_longer_group_in_the_name(stored("widgets.sub.example.com", "u", "example.com", "widgets.sub"), Some(("example.com", "widgets.sub")))]
    #[case::no_uid(stored("widgets.example.com", "", "example.com", "widgets"), None)]
    #[case::no_spec(serde_json::json!({"metadata": {"name": "widgets.example.com", "uid": "u"}}), None)]
    fn a_list_grant_is_made_only_from_a_crd_that_names_its_resources_as_the_api_server_requires(
        #[case] crd: serde_json::Value,
        #[case] expected: Option<(&str, &str)>,
    ) {
        let got = crd_ref_from_server(&crd).ok().map(|r| (r.group, r.plural));
        assert_eq!(got, expected);
    }

    #[test]
    fn a_revoked_list_grant_keeps_its_names_and_owner_and_grants_nothing() {
        let crd = CrdRef {
            name: "widgets.example.com",
            uid: "u2",
            group: "example.com",
            plural: "widgets",
        };
        let (granted_role, granted_binding) = cr_list_grant(&me(), &crd);
        let (role, binding) = cr_list_revocation(&me(), &crd);
        assert_eq!(role.rules, Some(vec![]));
        assert_eq!(binding.subjects, None);
        assert_eq!(role.metadata, granted_role.metadata);
        assert_eq!(binding.metadata, granted_binding.metadata);
        assert_eq!(binding.role_ref, granted_binding.role_ref);
    }

    #[rstest]
    #[case::different_catalogs("a", "b")]
    fn grants_of_two_catalogs_do_not_share_a_name(#[case] a: &str, #[case] b: &str) {
        assert_ne!(
            pull_secret_grant_name(&me(), a),
            pull_secret_grant_name(&me(), b)
        );
    }
}
