//! The operator's own ServiceAccount, for the narrow rights it grants itself at run time (the impersonation of
//! one OperatorGroup's account, olm-operator's certificate Secrets; catalog-operator's pull secrets and CRD lists
//! in its `self_grant`): `OPERATOR_SERVICE_ACCOUNT` (deploy/ sets it from the downward API's
//! `spec.serviceAccountName`) in the operator's namespace, read once at start into an [`OwnAccount`] the actors
//! share. Unset (the tests' admin
//! kubeconfig), nothing is granted.

use std::collections::HashMap;
use std::sync::Mutex;

/// The env var naming the operator's own ServiceAccount (in its namespace).
pub const SERVICE_ACCOUNT_ENV: &str = "OPERATOR_SERVICE_ACCOUNT";

/// The operator's own ServiceAccount.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grantee {
    pub namespace: String,
    pub name: String,
}

/// Who this process is, and the accounts it has granted itself to act as: made once at start
/// ([`OwnAccount::from_env`]) and shared by the actors (no process-wide state).
#[derive(Debug, Default)]
pub struct OwnAccount {
    grantee: Option<Grantee>,
    /// Accounts this process was granted to act as (`crate::impersonation_grant`): (namespace, name) → the
    /// account's uid.
    pub(crate) impersonations: Mutex<HashMap<(String, String), String>>,
}

impl OwnAccount {
    /// `OPERATOR_SERVICE_ACCOUNT` in `namespace`; none when unset (nothing is granted then).
    pub fn from_env(namespace: &str) -> Self {
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
        Self::of(grantee)
    }

    /// This process as `grantee` (none: nothing is granted).
    pub fn of(grantee: Option<Grantee>) -> Self {
        Self {
            grantee,
            impersonations: Mutex::default(),
        }
    }

    /// Who this process is, when `OPERATOR_SERVICE_ACCOUNT` named it.
    pub fn grantee(&self) -> Option<&Grantee> {
        self.grantee.as_ref()
    }
}
