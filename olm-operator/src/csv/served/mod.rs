//! Webhooks and API services served by a CSV's deployments, with the certificates OLM manages for them
//! (OLM v0's `install/certresources.go`, `webhook.go`, `apiservice.go`, `olm/apiservices.go`).
//!
//! ```text
//! spec.webhookdefinitions / apiservicedefinitions.owned
//!   └─ plan::of(csv) ── per serving deployment: Service `<deployment>-service`, Secret `<service>-cert`
//!        install.rs (the Install effect): Service, Secret (issue or reuse: certs.rs), secret Role/RoleBinding,
//!        auth-delegator / auth-reader bindings, cert volumes + `olmcahash` on the deployment (objects.rs),
//!        then webhook configurations and CRD conversion (webhooks.rs) and APIServices (api_services.rs)
//!   └─ check.rs (observe): everything still there and agreeing on the CA, else a reinstall with the reason
//!   └─ bundle.rs: a rotation's bundles trust the new and the previous CA until the rollout settled, then
//!        the new one only (the `SettleCaBundles` effect, install::settle)
//! ```
//!
//! Pure builders and judgements live in the submodules with their table tests; `install.rs`, `watches.rs` and
//! `cert_grant.rs` (olm-operator's own `get`/`update` on the certificate Secrets of one CSV) are the only I/O.

pub mod api_services;
pub mod bundle;
pub mod cert_grant;
pub mod certs;
pub mod check;
pub mod dropped;
pub mod install;
pub mod live;
pub mod objects;
pub mod plan;
pub mod watches;
pub mod webhooks;
