//! Property tests of the handover along a `replaces` chain (issue 17: two CSVs fighting over one Deployment in
//! a fast upgrade chain). Two properties, checked exhaustively or over many seeded schedules:
//! - whatever its phase (but Replacing or Deleting) and whatever the other facts, a CSV that a newer one
//!   replaces goes `Replacing` (OLM v0's `checkReplacementsAndUpdateStatus`; a `Failed` one with OLM's
//!   fail-forward message when its group fails forward, scenario 36);
//! - a model namespace where the four CSVs of a chain `v1 → v2 → v3 → v4` (one Deployment of the same name)
//!   arrive in every order, reconciled in seeded random interleavings from views of their peers that may lag
//!   (a reflector store behind the truth, though never behind the CSV's own arrival: the registry routes an
//!   object after its store has it), always ends with only the newest CSV, Succeeded, owning the Deployment;
//!   when they arrive oldest first (a Subscription's upgrade chain) two CSVs are never at once in a phase that
//!   writes the Deployment, and in any order they never are once every CSV has seen the whole chain.

use super::tests::observed as base;
use super::*;
use crate::csv::chain::{self, Peer};
use crate::csv::facts::{Neighbour, OwnerConflict, Requirements};
use CsvPhase as P;
use CsvReason as R;

const PHASES: [CsvPhase; 8] = [
    P::None,
    P::Pending,
    P::InstallReady,
    P::Installing,
    P::Succeeded,
    P::Failed,
    P::Unknown,
    P::Replacing,
];

/// Facts that, without a replacer, would each send the CSV somewhere else.
type Fact = fn(&mut Observed);

fn variations() -> Vec<(&'static str, Fact)> {
    vec![
        ("nothing else", |_| {}),
        ("requirements unmet", |o| {
            o.requirements = Requirements::unmet()
        }),
        ("deployment waiting", |o| {
            o.install = InstallStatus::Waiting("waiting for deployment op".into())
        }),
        ("deployment drifted", |o| {
            o.install = InstallStatus::Drifted("deployment op spec changed".into())
        }),
        ("deployment missing", |o| {
            o.install = InstallStatus::Missing("deployment op not found".into())
        }),
        ("past the install timeout", |o| {
            o.install = InstallStatus::Waiting("w".into());
            o.since_transition = Some(INSTALL_TIMEOUT + Duration::from_secs(1));
        }),
        ("no operator group", |o| o.group = GroupFit::NoOperatorGroup),
        ("owner conflict", |o| {
            o.owner_conflict = Some(OwnerConflict::Deployment {
                deployment: "op".into(),
                owner: "x".into(),
            })
        }),
        ("replaces one not yet handed over", |o| {
            o.replaces = Some(Neighbour::new("a.v1", P::Succeeded))
        }),
        ("failed for good", |o| {
            o.reason = R::InstallComponentFailedNoRetry;
        }),
    ]
}

#[test]
fn any_csv_a_newer_one_replaces_goes_replacing_whatever_its_phase() {
    let mut checked = 0;
    for phase in PHASES.iter().filter(|p| **p != P::Replacing) {
        for replacer in &PHASES {
            for (what, fact) in variations() {
                for fail_forward in [false, true] {
                    let mut o = base(phase.clone(), R::None);
                    fact(&mut o);
                    o.fail_forward = fail_forward;
                    o.replaced_by = Some(Neighbour::new("a.v3", replacer.clone()));
                    let d = decide(&o);
                    let Step::To(t) = &d.step else {
                        panic!("{phase} replaced by a {replacer} CSV ({what}) stayed: {d:?}");
                    };
                    let message = if *phase == P::Failed && fail_forward {
                        "Fail Forward is enabled, allowing Failed csv to be replaced by csv: a.v3"
                    } else {
                        "being replaced by csv: a.v3"
                    };
                    assert_eq!(
                        (&t.phase, &t.reason, t.message.as_str()),
                        (&P::Replacing, &R::BeingReplaced, message),
                        "{phase} replaced by a {replacer} CSV ({what})"
                    );
                    assert_eq!(d.effects, vec![Effect::CountUpgrade], "{phase} ({what})");
                    assert!(!d.effects.contains(&Effect::Install));
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 7 * 2 * 8 * variations().len());
}

#[test]
fn a_replacing_or_deleting_csv_is_not_sent_back_to_replacing() {
    for phase in [P::Replacing, P::Deleting] {
        let mut o = base(phase.clone(), R::BeingReplaced);
        o.replaced_by = Some(Neighbour::new("a.v3", P::Pending));
        let d = decide(&o);
        assert!(
            !matches!(&d.step, Step::To(t) if t.phase == P::Replacing),
            "{phase}: {d:?}"
        );
    }
}

/// One CSV of the model namespace.
#[derive(Clone, Debug)]
struct Member {
    name: String,
    replaces: Option<String>,
    phase: CsvPhase,
    reason: CsvReason,
    /// The index of the first snapshot that holds this CSV: its views are never older.
    arrived_at: usize,
}

/// The model namespace: the CSVs present, the owner of the one Deployment, and the history of peer views.
#[derive(Clone, Debug, Default)]
struct Namespace {
    members: Vec<Member>,
    deployment_owner: Option<String>,
    /// Snapshots of the members after each step (the lagging views a reflector store may serve).
    history: Vec<Vec<Member>>,
    /// No view is older than this snapshot (see `run`).
    view_floor: usize,
}

fn version(i: usize) -> String {
    format!("op.v{i}")
}

fn member(i: usize, arrived_at: usize) -> Member {
    Member {
        name: version(i),
        replaces: (i > 1).then(|| version(i - 1)),
        phase: P::None,
        reason: R::None,
        arrived_at,
    }
}

/// Phases in which a CSV creates or repairs the Deployment.
fn writes_the_deployment(phase: &CsvPhase) -> bool {
    matches!(phase, P::InstallReady | P::Installing | P::Succeeded)
}

impl Namespace {
    fn snapshot(&mut self) {
        self.history.push(self.members.clone());
    }

    /// The facts of `me` as `observe::gather` classifies them, from a view of the peers `lag` steps old
    /// (its own phase is always current: the actor keeps the object it last wrote).
    fn observe(&self, me: &Member, lag: usize) -> Observed {
        let view = self
            .history
            .len()
            .checked_sub(1 + lag)
            .map(|i| i.max(me.arrived_at).max(self.view_floor))
            .and_then(|i| self.history.get(i))
            .unwrap_or(&self.members);
        let mut peers: Vec<Peer> = view
            .iter()
            .filter(|m| m.name != me.name)
            .map(|m| Peer {
                name: m.name.clone(),
                replaces: m.replaces.clone(),
                phase: m.phase.clone(),
                copied: false,
                owned_crds: Vec::new(),
            })
            .collect();
        let mine = Peer {
            name: me.name.clone(),
            replaces: me.replaces.clone(),
            phase: me.phase.clone(),
            copied: false,
            owned_crds: Vec::new(),
        };
        peers.push(mine.clone());
        let in_chain = chain::chain(&mine, &peers);
        let owner_conflict = self
            .deployment_owner
            .as_ref()
            .filter(|o| !in_chain.contains(*o) && peers.iter().any(|p| &p.name == *o))
            .map(|o| OwnerConflict::Deployment {
                deployment: "op".into(),
                owner: o.clone(),
            });
        let install = match &self.deployment_owner {
            None => InstallStatus::Missing("deployment op not found".into()),
            Some(o) if *o == me.name => InstallStatus::Healthy,
            Some(_) => InstallStatus::Drifted("deployment op spec changed".into()),
        };
        let mut o = base(me.phase.clone(), me.reason.clone());
        o.owner_conflict = owner_conflict;
        o.replaces = chain::replaces(&mine, &peers);
        o.replaced_by = chain::replaced_by(&mine, &peers);
        o.chain_head = chain::head(&mine, &peers);
        o.older_not_handed_over = chain::older_not_handed_over(&mine, &peers);
        o.install = install;
        o
    }

    /// Reconcile the member at `index` once: decide, then apply the effects and the step. A `DeleteSelf` is
    /// carried out only when `may_delete` (see `run`).
    fn reconcile(&mut self, index: usize, lag: usize, may_delete: bool) -> bool {
        let me = self.members[index].clone();
        let decision = decide(&self.observe(&me, lag));
        let mut changed = false;
        for effect in &decision.effects {
            match effect {
                Effect::Install => {
                    changed |= self.deployment_owner.as_deref() != Some(me.name.as_str());
                    self.deployment_owner = Some(me.name.clone());
                }
                Effect::DeleteSelf if may_delete => {
                    self.members.remove(index);
                    return true;
                }
                _ => {}
            }
        }
        if let Step::To(t) = decision.step {
            let m = &mut self.members[index];
            changed |= m.phase != t.phase || m.reason != t.reason;
            m.phase = t.phase;
            m.reason = t.reason;
        }
        changed
    }

    fn writers(&self) -> Vec<String> {
        self.members
            .iter()
            .filter(|m| writes_the_deployment(&m.phase))
            .map(|m| format!("{} {}", m.name, m.phase))
            .collect()
    }
}

/// xorshift64*: a small deterministic generator, so a failing schedule can be replayed from its seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) as usize % n
    }
}

fn permutations(items: &[usize]) -> Vec<Vec<usize>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut all = Vec::new();
    for (i, first) in items.iter().enumerate() {
        let mut rest = items.to_vec();
        rest.remove(i);
        for mut tail in permutations(&rest) {
            tail.insert(0, *first);
            all.push(tail);
        }
    }
    all
}

/// Run one schedule: CSVs arrive in `order`, interleaved with random reconciles from views up to two steps
/// old; then every CSV is reconciled in turn from current views until nothing changes. Out of order, every CSV
/// of the chain exists, and is seen by every other, before any handover ends (a Replacing CSV moves on, and a
/// Deleting one is deleted, only once all have arrived, and no view predates the last arrival): a CSV
/// created after the one replacing it was deleted is a fresh install of an old version, not part of a
/// handover, and OLM leaves it Replacing for good too. `strict`: two writers
/// at once are an error from the start, not only once every CSV has been reconciled after the last arrival.
fn run(order: &[usize], seed: u64, strict: bool) -> Result<Namespace, String> {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut ns = Namespace::default();
    let mut arrivals = order.iter().copied().peekable();
    let mut trace = Vec::new();
    for _ in 0..200 {
        let arrive = arrivals.peek().is_some() && (ns.members.is_empty() || rng.below(3) == 0);
        if arrive {
            let i = arrivals.next().unwrap_or_default();
            let at = ns.history.len();
            ns.members.push(member(i, at));
            if !strict && arrivals.peek().is_none() {
                ns.view_floor = at;
            }
            trace.push(format!("+{}", version(i)));
        } else if !ns.members.is_empty() {
            let index = rng.below(ns.members.len());
            let lag = rng.below(3);
            if !strict && arrivals.peek().is_some() && ns.members[index].phase == P::Replacing {
                // Out of order, the chain is complete before any handover ends (see `run`).
                ns.snapshot();
                continue;
            }
            let name = ns.members[index].name.clone();
            ns.reconcile(index, lag, arrivals.peek().is_none());
            trace.push(format!(
                "{name}(lag {lag})→{}",
                ns.members
                    .iter()
                    .find(|m| m.name == name)
                    .map_or("gone".to_string(), |m| m.phase.to_string())
            ));
        }
        ns.snapshot();
        let writers = ns.writers();
        if strict && writers.len() > 1 {
            return Err(format!(
                "two writers of the Deployment {writers:?} after {}",
                trace.join(", ")
            ));
        }
        if arrivals.peek().is_none() && rng.below(8) == 0 {
            break;
        }
    }
    if arrivals.next().is_some() {
        return Err("schedule ended before every CSV arrived".into());
    }
    for round in 0..50 {
        let mut changed = false;
        let mut index = 0;
        while index < ns.members.len() {
            let before = ns.members.len();
            changed |= ns.reconcile(index, 0, true);
            ns.snapshot();
            let writers = ns.writers();
            if (strict || round > 0) && writers.len() > 1 {
                return Err(format!(
                    "two writers of the Deployment {writers:?} while settling after {}",
                    trace.join(", ")
                ));
            }
            if ns.members.len() == before {
                index += 1;
            }
        }
        if !changed {
            return Ok(ns);
        }
    }
    Err(format!("never settled after {}", trace.join(", ")))
}

#[test]
fn a_chain_converges_in_every_arrival_order_and_interleaving() {
    let orders = permutations(&[1, 2, 3, 4]);
    assert_eq!(orders.len(), 24);
    let mut schedules = 0;
    for order in &orders {
        for seed in 0..400u64 {
            let strict = order.windows(2).all(|w| w[0] < w[1]);
            let ns = run(order, seed, strict)
                .unwrap_or_else(|e| panic!("order {order:?}, seed {seed}: {e}"));
            let names: Vec<(String, CsvPhase)> = ns
                .members
                .iter()
                .map(|m| (m.name.clone(), m.phase.clone()))
                .collect();
            assert_eq!(
                names,
                vec![(version(4), P::Succeeded)],
                "order {order:?}, seed {seed}: the newest CSV alone is left, Succeeded"
            );
            assert_eq!(
                ns.deployment_owner,
                Some(version(4)),
                "order {order:?}, seed {seed}"
            );
            schedules += 1;
        }
    }
    assert_eq!(schedules, 24 * 400);
}

#[test]
fn an_upgrade_chain_arriving_oldest_first_never_has_two_writers() {
    for seed in 0..20_000u64 {
        let ns = run(&[1, 2, 3, 4], seed, true).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert_eq!(ns.deployment_owner, Some(version(4)), "seed {seed}");
    }
}

#[test]
fn the_in_order_chain_of_the_issue_hands_over_serially() {
    // The reported schedule: v1 installed, v2 installing when v3 and v4 arrive together.
    let mut ns = Namespace::default();
    ns.members.push(member(1, 0));
    for _ in 0..4 {
        ns.reconcile(0, 0, true);
        ns.snapshot();
    }
    assert_eq!(ns.members[0].phase, P::Succeeded);
    ns.members.push(member(2, ns.history.len()));
    ns.snapshot();
    ns.reconcile(0, 0, true); // v1 → Replacing
    for _ in 0..3 {
        ns.reconcile(1, 0, true); // v2 → Pending → InstallReady → Installing
        ns.snapshot();
    }
    assert_eq!(ns.members[1].phase, P::Installing);
    ns.members.push(member(3, ns.history.len()));
    ns.members.push(member(4, ns.history.len()));
    ns.snapshot();
    ns.reconcile(2, 0, true); // v3 → Pending
    ns.reconcile(3, 0, true); // v4 → Pending
    ns.snapshot();
    ns.reconcile(2, 0, true); // v3 → Replacing (v4 replaces it)
    ns.snapshot();
    ns.reconcile(3, 0, true); // v4 waits: v3 is Replacing but v2 has not handed over
    ns.snapshot();
    assert_eq!(ns.members[3].phase, P::Pending);
    assert_eq!(ns.writers(), vec![format!("{} Installing", version(2))]);
    ns.reconcile(1, 0, true); // v2: Installing before the fix, Replacing now
    ns.snapshot();
    assert_eq!(ns.members[1].phase, P::Replacing);
    ns.reconcile(3, 0, true); // v4 → InstallReady
    assert_eq!(ns.writers(), vec![format!("{} InstallReady", version(4))]);
}
