//! The faults of one seed ([`fault_plan`]): inside the actors (`OLM_RS_CHAOS`, every kind of
//! `olm_runtime::chaos`), at the API (the fault proxy between each operator and the apiserver, every kind of
//! `crate::api_faults`, lost answers after applied writes included) and of the processes and parts, each kind
//! once per seed at a seeded moment ([`Fault`]: each operator's leader SIGKILLed, the kube-apiserver and etcd
//! restarted, the registry killed and started again later, the registry slowed). The moments of the workload's
//! mid-run changes are drawn from the same seed.

use crate::api_faults::ApiFaults;
use rand::{Rng, SeedableRng};
use std::time::Duration;

/// Every fault kind inside the actors on, at rates that make a few dozen faults of each kind per run. Duplicates
/// are made only where a registry delivers a broadcast or a resync (far fewer decisions than routed messages), so
/// their rate is three times the others': at 4 % a seed made none now and then, and a seed must make every kind.
pub fn chaos_text(seed: u64) -> String {
    format!("seed={seed},all=0.04,duplicate=0.12,max_delay_ms=400")
}

/// Every API fault kind on (`crate::api_faults`); watches are few, so cuts and 410s are frequent per watch.
/// Each operator's proxy draws from its own seed (`seed`, `seed + 1_000_000`).
pub fn api_text(seed: u64) -> String {
    format!(
        "seed={seed},5xx=0.02,429=0.02,409=0.03,latency=0.05,drop=0.01,lost=0.02,cut=0.2,410=0.2,max_latency_ms=300,max_cut_ms=3000"
    )
}

/// The process faults happen at a moment in this window.
const FAULT_WINDOW_MS: std::ops::Range<u64> = 1_000..20_000;
/// The gRPC catalog's registry is killed, and started again this long after.
const REGISTRY_DOWN_MS: std::ops::Range<u64> = 2_000..10_000;
/// The gRPC catalog answers slowly (each chunk the registry sends held this long) for a while.
const REGISTRY_SLOW_DELAY_MS: std::ops::Range<u64> = 200..2_000;
const REGISTRY_SLOW_FOR_MS: std::ops::Range<u64> = 3_000..12_000;
/// The Manual plan is approved at a seeded moment in this window (the fault-free run: at its start).
const APPROVE_WINDOW_MS: std::ops::Range<u64> = 1_000..20_000;
/// Seeds narrow the global group at a moment in this window; the temp namespace is created at a moment in the
/// first window and deleted this long after.
const NARROW_WINDOW_MS: std::ops::Range<u64> = 1_000..20_000;
const TEMP_CREATE_MS: std::ops::Range<u64> = 1_000..10_000;
const TEMP_LIFE_MS: std::ops::Range<u64> = 2_000..15_000;

/// One of the two operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Which {
    Catalog,
    Olm,
}

impl Which {
    pub fn binary(self) -> &'static str {
        match self {
            Which::Catalog => "catalog-operator",
            Which::Olm => "olm-operator",
        }
    }
}

/// A fault of a process or part, at a seeded moment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fault {
    /// SIGKILL the replica of one operator that holds its Lease; a new replica starts at once (as its
    /// Deployment would start a new pod), under the same faults, and the standby takes the Lease over.
    KillLeader(Which),
    /// SIGKILL the private plane's kube-apiserver (or etcd) and start it again (`hack/control-plane.sh`).
    RestartApiserver,
    RestartEtcd,
    /// The gRPC catalog's registry is killed; `RegistryUp` starts a new one.
    RegistryDown,
    RegistryUp,
    /// The gRPC catalog answers slowly from now (each chunk held this long); `RegistryFast` ends it.
    RegistrySlow(Duration),
    RegistryFast,
}

impl Fault {
    /// The name counted in the table (none for the end of a fault).
    pub fn counted(self) -> Option<&'static str> {
        match self {
            Fault::KillLeader(Which::Catalog) => Some("kill-catalog-leader"),
            Fault::KillLeader(Which::Olm) => Some("kill-olm-leader"),
            Fault::RestartApiserver => Some("apiserver-restart"),
            Fault::RestartEtcd => Some("etcd-restart"),
            Fault::RegistryDown => Some("registry-down"),
            Fault::RegistrySlow(_) => Some("registry-slow"),
            Fault::RegistryUp | Fault::RegistryFast => None,
        }
    }

    /// Every counted kind: each seed makes each once.
    pub const KINDS: [&'static str; 6] = [
        "kill-catalog-leader",
        "kill-olm-leader",
        "apiserver-restart",
        "etcd-restart",
        "registry-down",
        "registry-slow",
    ];
}

/// The faults of one seed.
#[derive(Clone, Debug)]
pub struct FaultPlan {
    pub actors: String,
    pub api: ApiFaults,
    /// The process faults, in time order (offsets from the workload's start).
    pub events: Vec<(Duration, Fault)>,
    /// When the test approves the Manual plan.
    pub approve_at: Duration,
    /// When the global group is narrowed; when the temp namespace is created and when deleted.
    pub narrow_at: Duration,
    pub temp_at: Duration,
    pub temp_until: Duration,
}

impl FaultPlan {
    /// The API faults of one operator's proxy (its own seed, so the two proxies do not draw alike).
    pub fn api_for(&self, which: Which) -> ApiFaults {
        let mut faults = self.api.clone();
        if which == Which::Olm {
            faults.seed += 1_000_000;
        }
        faults
    }

    /// When the last process fault ends (the registry up and fast again).
    pub fn faults_end(&self) -> Duration {
        self.events.last().map_or(Duration::ZERO, |(at, _)| *at)
    }
}

/// The plan of `seed`: every process fault kind once, each at a moment drawn from the seed.
pub fn fault_plan(seed: u64) -> anyhow::Result<FaultPlan> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let ms = |rng: &mut rand::rngs::StdRng, range: std::ops::Range<u64>| {
        Duration::from_millis(rng.random_range(range))
    };
    let mut events = Vec::new();
    for fault in [
        Fault::KillLeader(Which::Catalog),
        Fault::KillLeader(Which::Olm),
        Fault::RestartApiserver,
        Fault::RestartEtcd,
    ] {
        events.push((ms(&mut rng, FAULT_WINDOW_MS), fault));
    }
    let down = ms(&mut rng, FAULT_WINDOW_MS);
    events.push((down, Fault::RegistryDown));
    events.push((down + ms(&mut rng, REGISTRY_DOWN_MS), Fault::RegistryUp));
    let slow = ms(&mut rng, FAULT_WINDOW_MS);
    let delay = ms(&mut rng, REGISTRY_SLOW_DELAY_MS);
    events.push((slow, Fault::RegistrySlow(delay)));
    events.push((
        slow + ms(&mut rng, REGISTRY_SLOW_FOR_MS),
        Fault::RegistryFast,
    ));
    events.sort_by_key(|e| e.0);
    let approve_at = ms(&mut rng, APPROVE_WINDOW_MS);
    let narrow_at = ms(&mut rng, NARROW_WINDOW_MS);
    let temp_at = ms(&mut rng, TEMP_CREATE_MS);
    let temp_until = temp_at + ms(&mut rng, TEMP_LIFE_MS);
    Ok(FaultPlan {
        actors: chaos_text(seed),
        api: ApiFaults::parse(&api_text(seed))?,
        events,
        approve_at,
        narrow_at,
        temp_at,
        temp_until,
    })
}
