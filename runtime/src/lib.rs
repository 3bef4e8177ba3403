//! What both olm-rs operators share.
//!
//! ```text
//!  kube watch (tokio task) ──Watched<K>──▶ Registry<A> (one per kind) ──ObjectEvent<K>──▶ A (one actor per object)
//!        │ reflector Store<K> (shared reads)        │ ActorCounts / Journal (debug endpoint, metrics)
//! ```
//! - [`registry`]: the per-kind registry actor that starts one actor per object on first sight, routes every
//!   change to it as a typed message, and stops it when the object is deleted.
//! - [`singleton`]: a one-of-a-kind actor (no registry supervises it) started again by the next send when it died.
//! - [`watch`]: the watcher task feeding a registry, with backpressure; [`undecodable`]: objects whose stored
//!   JSON does not decode (the Event naming them; their actors hold, [`reconcile::hold`]).
//! - [`endpoints`]: `/healthz`, `/readyz`, `/metrics`, `/debug/actors`, `/debug/journal`; [`endpoint_auth`]:
//!   who may read the last three (TokenReview and SubjectAccessReview, `--metrics-auth`).
//! - [`telemetry`]: tracing to stdout, and OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set.
//! - [`trace_context`]: W3C trace context carried in object annotations across the two processes.
//! - [`client`]: the kube client from a kubeconfig or the in-cluster service account.
//! - [`impersonate`]: a client acting as a ServiceAccount; [`scoped_install`]: which identity installs (OLM's
//!   scoped installs, an OperatorGroup's `spec.serviceAccountName`); [`impersonation_grant`]: the operator's
//!   right to act as that one account, granted in its namespace.
//! - [`chaos`]: the seeded fault injector (off unless `OLM_RS_CHAOS` is set).
//! - [`actor_metrics`], [`api_metrics`]: controller-style reconcile/mailbox metrics and API latency by verb.
//! - [`error`]: what a failed API call means, and an error and its causes on one line.
//! - [`leader`]: leader election on a `coordination.k8s.io/v1` Lease (`--leader-elect`).

pub mod activation;
pub mod actor_metrics;
pub mod api_metrics;
pub mod args;
pub mod chaos;
pub mod children;
pub mod client;
pub mod code_pages;
pub mod endpoint_auth;
pub mod endpoints;
pub mod error;
pub mod gate;
pub mod heap_trim;
pub mod heartbeat;
pub mod impersonate;
pub mod impersonation_grant;
pub mod journal;
pub mod leader;
pub mod lenient;
pub mod metrics;
pub mod outcome;
pub mod own_account;
pub mod own_writes;
pub mod reconcile;
pub mod registry;
pub mod scope;
pub mod scoped_install;
pub mod shutdown;
pub mod singleton;
pub mod telemetry;
pub mod trace_context;
pub mod undecodable;
pub mod watch;
pub mod watch_idle;
pub mod wiring;
