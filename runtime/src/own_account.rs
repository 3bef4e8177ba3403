//! The operator's own ServiceAccount, for the narrow rights it grants itself at run time (the impersonation of
//! one OperatorGroup's account, olm-operator's certificate Secrets; catalog-operator's pull secrets and CRD lists
//! in its `self_grant`): `OPERATOR_SERVICE_ACCOUNT` (deploy/ sets it from the downward API's
//! `spec.serviceAccountName`) in the operator's namespace, recorded once at start. Unset (the tests' admin
//! kubeconfig), nothing is granted.

use std::sync::OnceLock;

/// The env var naming the operator's own ServiceAccount (in its namespace).
pub const SERVICE_ACCOUNT_ENV: &str = "OPERATOR_SERVICE_ACCOUNT";

/// The operator's own ServiceAccount.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grantee {
    pub namespace: String,
    pub name: String,
}

static GRANTEE: OnceLock<Option<Grantee>> = OnceLock::new();

/// Record who this process is (once, at start): `OPERATOR_SERVICE_ACCOUNT` in `namespace`.
pub fn init_from_env(namespace: &str) {
    let grantee = std::env::var(SERVICE_ACCOUNT_ENV)
        .ok()
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .map(|name| Grantee {
            namespace: namespace.to_string(),
            name,
        });
    if let Some(g) = &grantee {
        tracing::info!(service_account = %g.name, namespace = %g.namespace, "narrow run-time grants to the operator's own account enabled");
    }
    let _ = GRANTEE.set(grantee);
}

/// Who this process is, when `OPERATOR_SERVICE_ACCOUNT` named it.
pub fn get() -> Option<&'static Grantee> {
    GRANTEE.get().and_then(Option::as_ref)
}
