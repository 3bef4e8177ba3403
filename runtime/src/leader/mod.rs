//! Leader election on a `coordination.k8s.io/v1` Lease, so two replicas of an operator can run with one active.
//!
//! kube 5 has no elector, so this is a small one in client-go's manner: read the Lease, let the pure
//! [`decide`] say what to do, then create or replace it (the replace carries the `resourceVersion` read, so of
//! two candidates racing for a free Lease exactly one write wins and the other gets 409 Conflict). A candidate
//! retries every `retry_period`; the leader renews on the same period and steps down (the process then exits
//! non-zero and its pod restarts as a candidate) when it has not renewed for `renew_deadline`, which is
//! shorter than `lease_duration`, so it stops before anyone may take over. Every read-decide-write round is
//! bounded in time (a leader's by what is left of its renew deadline, as client-go's renew context is): a
//! request that hangs (an API server that accepts the connection and never answers) must not keep a leader
//! leading past its deadline while a standby, seeing no renewal, takes over. On SIGTERM the leader releases the
//! Lease (empty holder) so a standby takes over at once instead of after a full lease duration. A leader whose
//! actor thread is stuck ([`crate::heartbeat`], given with [`Elector::with_liveness`]) stops renewing and steps
//! down too: the Lease is renewed from a worker thread, so without this a stuck leader would keep it for good.
//!
//! The operators start their watches and actors only once [`Elector::acquire`] returns.

mod decide;
#[cfg(test)]
mod hanging_api_tests;

pub use decide::{Decision, Record, decide, must_step_down};

use crate::error as api_error;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::PostParams;
use kube::{Api, Client};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// How an elector behaves (client-go's defaults: 15 s / 10 s / 2 s).
#[derive(Clone, Debug)]
pub struct ElectionConfig {
    pub namespace: String,
    pub lease_name: String,
    pub identity: String,
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
}

impl ElectionConfig {
    /// The election the flags ask for, or `None` when `--leader-elect` is off. The Lease is named
    /// `--leader-elect-lease-name`, else `binary`, and lives in the operator's namespace.
    pub fn from_args(
        args: &crate::args::LeaderArgs,
        namespace: &str,
        binary: &str,
    ) -> Option<Self> {
        let crate::args::LeaderArgs {
            enabled,
            lease_name,
            identity,
            lease_duration_seconds,
            renew_deadline_seconds,
            retry_period_seconds,
        } = args;
        enabled.then(|| Self {
            namespace: namespace.to_string(),
            lease_name: lease_name.clone().unwrap_or_else(|| binary.to_string()),
            identity: identity.clone().unwrap_or_else(default_identity),
            lease_duration: Duration::from_secs(*lease_duration_seconds),
            renew_deadline: Duration::from_secs(*renew_deadline_seconds),
            retry_period: Duration::from_secs(*retry_period_seconds),
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    #[error("cannot read Lease {namespace}/{name}")]
    Read {
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("the API server did not answer for Lease {namespace}/{name} within {after:?}")]
    Unanswered {
        namespace: String,
        name: String,
        after: Duration,
    },
    #[error("lease duration must exceed the renew deadline, which must exceed the retry period")]
    Timing,
}

/// The role of this replica, as the endpoints report it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Leader election is off: the process is active from the start.
    Single,
    Candidate,
    Leader,
}

pub struct Elector {
    api: Api<Lease>,
    config: ElectionConfig,
    /// The record last read and when we first saw it in that state (our clock).
    observed: Option<(Record, Instant)>,
    role: watch::Sender<Role>,
    /// The actor thread's heartbeat: a leader whose actors no longer run steps down.
    liveness: Option<crate::heartbeat::Heartbeat>,
}

impl Elector {
    pub fn new(client: Client, config: ElectionConfig) -> Result<Self, LeaderError> {
        if config.lease_duration <= config.renew_deadline
            || config.renew_deadline <= config.retry_period
        {
            return Err(LeaderError::Timing);
        }
        let api = Api::namespaced(client, &config.namespace);
        let (role, _) = watch::channel(Role::Candidate);
        Ok(Self {
            api,
            config,
            observed: None,
            role,
            liveness: None,
        })
    }

    /// Step down when `heartbeat` (the actor thread's) goes silent past `heartbeat::STALL_LIMIT`.
    pub fn with_liveness(mut self, heartbeat: crate::heartbeat::Heartbeat) -> Self {
        self.liveness = Some(heartbeat);
        self
    }

    /// Follow the role (for `/readyz` and the `leader_election_master_status` gauge).
    pub fn role(&self) -> watch::Receiver<Role> {
        self.role.subscribe()
    }

    pub fn identity(&self) -> &str {
        &self.config.identity
    }

    /// Try until this replica holds the Lease. A failed read (the apiserver restarting, say) is logged and
    /// retried: a candidate has nothing to protect by exiting.
    pub async fn acquire(&mut self) -> Result<(), LeaderError> {
        let mut last_holder: Option<String> = None;
        loop {
            let attempt = match self.try_within(self.config.renew_deadline).await {
                Ok(attempt) => attempt,
                Err(error) => {
                    tracing::warn!(
                        error = &error as &dyn std::error::Error,
                        "cannot read the leader Lease; retrying"
                    );
                    Attempt::Lost
                }
            };
            match attempt {
                Attempt::Holding => {
                    tracing::info!(lease = %self.config.lease_name, identity = %self.config.identity, "became the leader");
                    self.role.send_replace(Role::Leader);
                    return Ok(());
                }
                Attempt::Following(holder) => {
                    if last_holder.as_deref() != Some(holder.as_str()) {
                        tracing::info!(lease = %self.config.lease_name, %holder, "standing by: another replica leads");
                        last_holder = Some(holder);
                    }
                }
                Attempt::Lost => {}
            }
            tokio::time::sleep(self.config.retry_period).await;
        }
    }

    /// Renew every retry period; return when leadership is lost (not renewed within the renew deadline, or
    /// another holder seen). Cancel this future on shutdown, then call [`Elector::release`].
    pub async fn hold(&mut self) -> LostLeadership {
        let mut renewed = Instant::now();
        loop {
            tokio::time::sleep(self.config.retry_period).await;
            if let Some(heartbeat) = self.liveness.as_ref()
                && heartbeat.stalled()
            {
                let silent = heartbeat.silent_for();
                tracing::error!(silent = ?silent, "the actor thread has not run for this long: stepping down");
                self.role.send_replace(Role::Candidate);
                return LostLeadership::Stalled(silent);
            }
            let left = self.config.renew_deadline.saturating_sub(renewed.elapsed());
            match self.try_within(left).await {
                Ok(Attempt::Holding) => renewed = Instant::now(),
                Ok(Attempt::Following(holder)) => {
                    self.role.send_replace(Role::Candidate);
                    return LostLeadership::TakenBy(holder);
                }
                Ok(Attempt::Lost) => {}
                Err(error) => {
                    tracing::warn!(
                        error = &error as &dyn std::error::Error,
                        "cannot renew the leader Lease"
                    );
                }
            }
            if must_step_down(renewed.elapsed(), self.config.renew_deadline) {
                self.role.send_replace(Role::Candidate);
                return LostLeadership::RenewDeadline(self.config.renew_deadline);
            }
        }
    }

    /// Give the Lease up (empty holder, 1 s duration) so a standby takes over without waiting it out.
    pub async fn release(&mut self) {
        let budget = self.config.renew_deadline;
        if tokio::time::timeout(budget, self.release_once())
            .await
            .is_err()
        {
            tracing::warn!(lease = %self.config.lease_name, after = ?budget, "the API server did not answer: the Lease is left to expire");
        }
        self.role.send_replace(Role::Candidate);
    }

    async fn release_once(&mut self) {
        let Ok(Some(mut lease)) = self.api.get_opt(&self.config.lease_name).await else {
            return;
        };
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        if spec.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
            return;
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(MicroTime(k8s_openapi::jiff::Timestamp::now()));
        match self
            .api
            .replace(&self.config.lease_name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => tracing::info!(lease = %self.config.lease_name, "released the leader Lease"),
            Err(error) => tracing::warn!(
                error = &error as &dyn std::error::Error,
                "cannot release the leader Lease"
            ),
        }
    }

    /// One read-decide-write round, given up (an error) when it has not finished within `budget`.
    async fn try_within(&mut self, budget: Duration) -> Result<Attempt, LeaderError> {
        match tokio::time::timeout(budget, self.try_once()).await {
            Ok(attempt) => attempt,
            Err(_) => Err(LeaderError::Unanswered {
                namespace: self.config.namespace.clone(),
                name: self.config.lease_name.clone(),
                after: budget,
            }),
        }
    }

    /// One read-decide-write round.
    async fn try_once(&mut self) -> Result<Attempt, LeaderError> {
        let name = self.config.lease_name.clone();
        let current = self
            .api
            .get_opt(&name)
            .await
            .map_err(|source| LeaderError::Read {
                namespace: self.config.namespace.clone(),
                name: name.clone(),
                source,
            })?;
        let record = current.as_ref().map(record_of);
        let unchanged_for = self.unchanged_for(record.as_ref());
        let decision = decide(
            record.as_ref(),
            &self.config.identity,
            unchanged_for,
            self.config.lease_duration,
        );
        let now = MicroTime(k8s_openapi::jiff::Timestamp::now());
        let written = match (&decision, current) {
            (Decision::Follow { holder }, _) => return Ok(Attempt::Following(holder.clone())),
            (Decision::Create, _) => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        namespace: Some(self.config.namespace.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(self.spec(now.clone(), now, 0)),
                };
                self.api.create(&PostParams::default(), &lease).await
            }
            (Decision::Renew, Some(mut lease)) => {
                let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
                spec.renew_time = Some(now);
                spec.lease_duration_seconds = Some(seconds(self.config.lease_duration));
                self.api
                    .replace(&name, &PostParams::default(), &lease)
                    .await
            }
            (Decision::Acquire { transitions }, Some(mut lease)) => {
                lease.spec = Some(self.spec(now.clone(), now, *transitions));
                self.api
                    .replace(&name, &PostParams::default(), &lease)
                    .await
            }
            (Decision::Renew | Decision::Acquire { .. }, None) => return Ok(Attempt::Lost),
        };
        match written {
            Ok(lease) => {
                self.observed = Some((record_of(&lease), Instant::now()));
                Ok(Attempt::Holding)
            }
            Err(e) if api_error::classify(&e).is_conflict() => {
                tracing::debug!(lease = %name, "another replica wrote the Lease first");
                Ok(Attempt::Lost)
            }
            Err(error) => {
                tracing::warn!(
                    error = &error as &dyn std::error::Error,
                    lease = %name,
                    "cannot write the leader Lease"
                );
                Ok(Attempt::Lost)
            }
        }
    }

    /// How long `record` has stayed the same in our eyes; a changed record restarts the clock.
    fn unchanged_for(&mut self, record: Option<&Record>) -> Duration {
        let now = Instant::now();
        match (record, &self.observed) {
            (Some(r), Some((seen, since))) if r == seen => now.duration_since(*since),
            (Some(r), _) => {
                self.observed = Some((r.clone(), now));
                Duration::ZERO
            }
            (None, _) => {
                self.observed = None;
                Duration::ZERO
            }
        }
    }

    fn spec(&self, acquired: MicroTime, renewed: MicroTime, transitions: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.config.identity.clone()),
            lease_duration_seconds: Some(seconds(self.config.lease_duration)),
            acquire_time: Some(acquired),
            renew_time: Some(renewed),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        }
    }
}

/// Why a leader stopped leading.
#[derive(Debug, thiserror::Error)]
pub enum LostLeadership {
    #[error("lost leadership: not renewed within {0:?}")]
    RenewDeadline(Duration),
    #[error("lost leadership: the Lease is now held by {0}")]
    TakenBy(String),
    #[error("lost leadership: the task renewing the Lease ended: {0}")]
    KeeperEnded(String),
    #[error("stepped down: the actor thread has not run for {0:?}")]
    Stalled(Duration),
}

enum Attempt {
    Holding,
    Following(String),
    /// Our write lost a race or failed; try again next period.
    Lost,
}

fn record_of(lease: &Lease) -> Record {
    let spec = lease.spec.clone().unwrap_or_default();
    Record {
        holder: spec.holder_identity,
        lease_duration: spec
            .lease_duration_seconds
            .and_then(|s| u64::try_from(s).ok())
            .map(Duration::from_secs),
        renew_time: spec.renew_time.map(|t| t.0.to_string()),
        transitions: spec.lease_transitions.unwrap_or(0),
    }
}

fn seconds(d: Duration) -> i32 {
    i32::try_from(d.as_secs()).unwrap_or(i32::MAX)
}

/// This replica's identity when none is given: `$POD_NAME` (downward API), else `<hostname>-<pid>`.
pub fn default_identity() -> String {
    if let Some(pod) = std::env::var("POD_NAME").ok().filter(|p| !p.is_empty()) {
        return pod;
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "unknown-host".into());
    format!("{host}-{}", std::process::id())
}
