//! Resolution of one namespace: build the problem, solve all Subscriptions together, and when that
//! fails isolate the unsatisfiable ones so independent Subscriptions still resolve.
//!
//! Isolation: Subscriptions are admitted one at a time in name order; one whose admission makes the set
//! unsatisfiable is marked failed (with an explanation computed against the admitted set), its installed
//! CSV is kept as it is, and a fresh one's package is reserved so nothing else installs it. Where two
//! Subscriptions interact (e.g. two Subscriptions to one package on different channels) the one whose
//! name sorts first wins and the other fails naming it. OLM v0 instead fails every Subscription of the namespace.

use std::collections::HashMap;
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use crate::candidates::{self, SubCandidates};
use crate::explain::{Candidate, Explanation, Rejection};
use crate::model::{CatalogKey, Namespace, SubscriptionSpec};
use crate::problem::{Problem, VarId};
use crate::search::{Root, Search, chosen_set};

/// Tuning knobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Options {
    /// Bound on option attempts per search; when hit, the Subscriptions involved fail with `SearchLimit`.
    pub search_limit: u64,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            search_limit: 200_000,
        }
    }
}

/// What happens to one Subscription.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "camelCase")]
pub enum Outcome {
    /// Its installed CSV is the answer; nothing to do.
    UpToDate { csv: String },
    /// Install this bundle (nothing installed yet).
    Install { csv: String },
    /// Replace the installed CSV with this bundle.
    Upgrade { from: String, to: String },
    /// Nothing satisfies it.
    Failed { explanation: Box<Explanation> },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubscriptionOutcome {
    pub name: String,
    pub outcome: Outcome,
}

/// A bundle to install from a catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BundleStep {
    pub name: String,
    pub package: String,
    pub channel: String,
    pub version: String,
    pub catalog: CatalogKey,
    pub bundle_path: String,
    /// The CSV this one replaces (the resolver's Replaces value; written into the new CSV's `spec.replaces`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,
    /// The Subscription that owns it (existing, or one of `new_subscriptions`).
    pub subscription: String,
}

/// A Subscription to create for a newly resolved dependency.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSubscription {
    pub name: String,
    pub package: String,
    pub channel: String,
    pub source: String,
    pub source_namespace: String,
    pub starting_csv: String,
}

/// The answer for a namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resolution {
    /// One per Subscription, in name order.
    pub subscriptions: Vec<SubscriptionOutcome>,
    /// Bundles to install, dependencies before their dependents.
    pub steps: Vec<BundleStep>,
    pub new_subscriptions: Vec<NewSubscription>,
    /// Problems that did not stop resolution (e.g. an unparseable skipRange, ignored as OLM does).
    pub warnings: Vec<String>,
    /// Option attempts made by all searches.
    pub search_steps: u64,
}

impl Resolution {
    pub fn outcome(&self, sub: &str) -> Option<&Outcome> {
        self.subscriptions
            .iter()
            .find(|s| s.name == sub)
            .map(|s| &s.outcome)
    }
    pub fn failed(&self) -> impl Iterator<Item = &SubscriptionOutcome> {
        self.subscriptions
            .iter()
            .filter(|s| matches!(s.outcome, Outcome::Failed { .. }))
    }
}

/// OLM's name for a generated Subscription: `<package>-<channel>-<catalog>-<catalogNamespace>`.
pub fn subscription_name(package: &str, channel: &str, catalog: &CatalogKey) -> String {
    format!("{package}-{channel}-{}-{}", catalog.name, catalog.namespace)
}

struct Sub<'a> {
    spec: &'a SubscriptionSpec,
    cands: SubCandidates,
}

impl Sub<'_> {
    fn root(&self) -> Root {
        Root::Sub {
            label: sub_requirement(self.spec),
            options: Rc::from(self.cands.options.clone()),
        }
    }
}

struct Ctx<'p, 'a> {
    p: &'p Problem<'a>,
    opts: Options,
    steps: u64,
}

impl Ctx<'_, '_> {
    #[expect(
        clippy::result_large_err,
        reason = "the Err path is the normal backtracking path; boxing would allocate on every rejection"
    )]
    fn solve(
        &mut self,
        roots: &[Root],
        prohibited: &HashMap<String, String>,
    ) -> Result<Vec<VarId>, Rejection> {
        self.solve_with(roots, prohibited, &[])
    }

    #[expect(
        clippy::result_large_err,
        reason = "the Err path is the normal backtracking path; boxing would allocate on every rejection"
    )]
    fn solve_with(
        &mut self,
        roots: &[Root],
        prohibited: &HashMap<String, String>,
        fixed: &[VarId],
    ) -> Result<Vec<VarId>, Rejection> {
        let (r, steps) = Search::new(self.p, roots, prohibited, self.opts.search_limit)
            .preset(fixed)
            .solve();
        self.steps += steps;
        r
    }
}

/// Resolve one namespace.
pub fn resolve(ns: &Namespace, opts: &Options) -> Resolution {
    let p = Problem::build(ns);
    let mut ctx = Ctx {
        p: &p,
        opts: *opts,
        steps: 0,
    };

    let mut specs: Vec<&SubscriptionSpec> = ns.subscriptions.iter().collect();
    specs.sort_by(|a, b| a.name.cmp(&b.name));
    let subs: Vec<Sub> = specs
        .into_iter()
        .map(|spec| Sub {
            spec,
            cands: candidates::for_subscription(&p, spec),
        })
        .collect();

    // Installed CSVs no Subscription owns must stay.
    let owned: Vec<VarId> = subs.iter().filter_map(|s| s.cands.current).collect();
    let mut mandatory: Vec<Root> = p
        .installed
        .values()
        .copied()
        .filter(|v| !owned.contains(v))
        .map(Root::Mandatory)
        .collect();
    mandatory.sort_by_key(|r| match r {
        Root::Mandatory(v) | Root::Pinned(v) => *v,
        Root::Sub { .. } => VarId::MAX,
    });

    let mut failed: HashMap<usize, Explanation> = HashMap::new();
    let mut warnings: Vec<String> = Vec::new();
    let mut prohibited: HashMap<String, String> = HashMap::new();
    for (i, s) in subs.iter().enumerate() {
        if let Some(why) = &s.cands.no_candidates {
            failed.insert(i, explanation(s, Some(why.clone()), vec![]));
            prohibited.insert(s.spec.package.clone(), s.spec.name.clone());
        }
    }

    let live: Vec<usize> = (0..subs.len())
        .filter(|i| !failed.contains_key(i))
        .collect();
    let all_roots: Vec<Root> = mandatory
        .iter()
        .cloned()
        .chain(live.iter().map(|&i| subs[i].root()))
        .collect();
    let chosen = match ctx.solve(&all_roots, &prohibited) {
        Ok(chosen) => chosen,
        Err(_) => isolate(
            &mut ctx,
            &subs,
            &live,
            &mut mandatory,
            &mut failed,
            &mut prohibited,
            &mut warnings,
        ),
    };
    let mut r = finish(&p, &subs, &chosen, failed, ctx.steps);
    r.warnings.extend(warnings);
    r
}

/// Admit Subscriptions one at a time; return the last satisfiable choice.
///
/// A Subscription that fails keeps its installed CSV (or reserves its package), which earlier admissions
/// did not know about; so a pass that records a new failure is repeated with those constraints in place
/// from the start. Failures are never retried, so this ends after at most one pass per Subscription.
fn isolate(
    ctx: &mut Ctx<'_, '_>,
    subs: &[Sub<'_>],
    live: &[usize],
    mandatory: &mut Vec<Root>,
    failed: &mut HashMap<usize, Explanation>,
    prohibited: &mut HashMap<String, String>,
    warnings: &mut Vec<String>,
) -> Vec<VarId> {
    // Subscriptions that cannot resolve even alone fail first, without a pass over the others; often
    // what remains then resolves together.
    if let Ok(base) = ctx.solve(mandatory, prohibited) {
        let open: Vec<usize> = live
            .iter()
            .copied()
            .filter(|i| !failed.contains_key(i))
            .collect();
        for i in open {
            let s = &subs[i];
            let roots: Vec<Root> = mandatory
                .iter()
                .cloned()
                .chain(std::iter::once(s.root()))
                .collect();
            if ctx.solve(&roots, prohibited).is_ok() {
                continue;
            }
            let alone = mandatory.clone();
            let cands = explain_candidates(ctx, s, &alone, &alone, &base, prohibited);
            failed.insert(i, explanation(s, None, cands));
            match s.cands.current {
                Some(cur) => mandatory.push(Root::Mandatory(cur)),
                None => {
                    prohibited.insert(s.spec.package.clone(), s.spec.name.clone());
                }
            }
        }
        let rest: Vec<Root> = mandatory
            .iter()
            .cloned()
            .chain(
                live.iter()
                    .filter(|i| !failed.contains_key(i))
                    .map(|&i| subs[i].root()),
            )
            .collect();
        if let Ok(chosen) = ctx.solve(&rest, prohibited) {
            return chosen;
        }
    }
    let mut passes = 0usize;
    loop {
        passes += 1;
        let mut chosen = match ctx.solve(mandatory, prohibited) {
            Ok(c) => c,
            Err(cause) if mandatory.iter().any(|r| matches!(r, Root::Mandatory(_))) => {
                // The installed operators are already inconsistent: keep them as they are, say so, and
                // resolve what can be resolved around them.
                warnings.push(format!("the installed operators are already inconsistent ({}); they are kept as they are", cause.clause()));
                for r in mandatory.iter_mut() {
                    if let Root::Mandatory(v) = *r {
                        *r = Root::Pinned(v);
                    }
                }
                continue;
            }
            Err(cause) => {
                // Even kept as they are, the installed operators conflict (e.g. two CSVs of one package):
                // nothing else can be resolved.
                let open: Vec<usize> = live
                    .iter()
                    .copied()
                    .filter(|i| !failed.contains_key(i))
                    .collect();
                for i in open {
                    let why = crate::explain::NoCandidates::InstalledInconsistent {
                        cause: cause.clone(),
                    };
                    failed.insert(i, explanation(&subs[i], Some(why), vec![]));
                }
                return Vec::new();
            }
        };
        let mut accepted: Vec<Root> = Vec::new();
        let mut new_failure = false;
        let open: Vec<usize> = live
            .iter()
            .copied()
            .filter(|i| !failed.contains_key(i))
            .collect();
        for i in open {
            let s = &subs[i];
            let roots: Vec<Root> = mandatory
                .iter()
                .chain(accepted.iter())
                .cloned()
                .chain(std::iter::once(s.root()))
                .collect();
            match ctx.solve(&roots, prohibited) {
                Ok(c) => {
                    chosen = c;
                    accepted.push(s.root());
                }
                Err(_) => {
                    let base: Vec<Root> =
                        mandatory.iter().chain(accepted.iter()).cloned().collect();
                    let alone = mandatory.clone();
                    let cands = explain_candidates(ctx, s, &alone, &base, &chosen, prohibited);
                    failed.insert(i, explanation(s, None, cands));
                    new_failure = true;
                    match s.cands.current {
                        Some(cur) => mandatory.push(Root::Mandatory(cur)),
                        None => {
                            prohibited.insert(s.spec.package.clone(), s.spec.name.clone());
                        }
                    }
                }
            }
        }
        // Each repeated pass has one more failure or one fewer Mandatory root, so this bound is never reached.
        if !new_failure || passes > 2 * subs.len() + 2 {
            retry_failed(
                ctx,
                subs,
                mandatory,
                &mut accepted,
                failed,
                prohibited,
                &mut chosen,
            );
            return chosen;
        }
    }
}

/// A Subscription that failed in an earlier pass may fit the final state (the one it clashed with failed
/// later). Those whose CSV is still held with its dependencies met get one more admission.
fn retry_failed(
    ctx: &mut Ctx<'_, '_>,
    subs: &[Sub<'_>],
    mandatory: &mut Vec<Root>,
    accepted: &mut Vec<Root>,
    failed: &mut HashMap<usize, Explanation>,
    prohibited: &HashMap<String, String>,
    chosen: &mut Vec<VarId>,
) {
    let mut retry: Vec<usize> = failed.keys().copied().collect();
    retry.sort_unstable();
    for i in retry {
        let s = &subs[i];
        let Some(cur) = s.cands.current else { continue };
        if !mandatory
            .iter()
            .any(|r| matches!(r, Root::Mandatory(v) if *v == cur))
        {
            continue;
        }
        let roots: Vec<Root> = mandatory
            .iter()
            .filter(|r| !matches!(r, Root::Mandatory(v) if *v == cur))
            .chain(accepted.iter())
            .cloned()
            .chain(std::iter::once(s.root()))
            .collect();
        if let Ok(c) = ctx.solve(&roots, prohibited) {
            *chosen = c;
            mandatory.retain(|r| !matches!(r, Root::Mandatory(v) if *v == cur));
            accepted.push(s.root());
            failed.remove(&i);
        }
    }
}

/// The first reason each candidate of `s` was rejected, given the admitted `base` and its `solution`.
///
/// In order, the first that fails gives the reason: the candidate with only the installed CSVs (`alone`,
/// its own problems); against the admitted solution held fixed (a conflict with what others chose); against
/// `base` (the admitted Subscriptions would have to choose differently, and cannot).
fn explain_candidates(
    ctx: &mut Ctx<'_, '_>,
    s: &Sub<'_>,
    alone: &[Root],
    base: &[Root],
    solution: &[VarId],
    prohibited: &HashMap<String, String>,
) -> Vec<Candidate> {
    let label = sub_requirement(s.spec);
    let mut out = Vec::new();
    for &c in &s.cands.options {
        let bundle = ctx.p.bundle_ref(c);
        let forced = Root::Sub {
            label: label.clone(),
            options: Rc::from(vec![c]),
        };
        let with = |roots: &[Root]| {
            roots
                .iter()
                .cloned()
                .chain(std::iter::once(forced.clone()))
                .collect::<Vec<_>>()
        };
        let first = ctx
            .solve(&with(alone), prohibited)
            .err()
            .or_else(|| {
                ctx.solve_with(std::slice::from_ref(&forced), prohibited, solution)
                    .err()
            })
            .or_else(|| ctx.solve(&with(base), prohibited).err());
        let rejected = match first {
            None => Rejection::SearchLimit {
                steps: ctx.opts.search_limit,
            },
            Some(Rejection::Unmet {
                requirement,
                of: None,
                mut candidates,
                ..
            }) if requirement == label && candidates.len() == 1 => {
                crate::explain::about_itself(candidates.remove(0).rejected, &bundle)
            }
            Some(other) => crate::explain::about_itself(other, &bundle),
        };
        out.push(Candidate { bundle, rejected });
    }
    out
}

/// How a Subscription's obligation is named in explanations.
pub(crate) fn sub_requirement(spec: &SubscriptionSpec) -> String {
    format!("a bundle for Subscription {}", spec.name)
}

fn explanation(
    s: &Sub<'_>,
    no: Option<crate::explain::NoCandidates>,
    candidates: Vec<Candidate>,
) -> Explanation {
    let spec = s.spec;
    let catalog = spec.catalog();
    let message = Explanation::render(
        &spec.name,
        &spec.package,
        &spec.channel,
        &catalog,
        no.as_ref(),
        &candidates,
    );
    Explanation {
        subscription: spec.name.clone(),
        package: spec.package.clone(),
        channel: spec.channel.clone(),
        catalog,
        no_candidates: no,
        candidates,
        message,
    }
}

fn finish(
    p: &Problem<'_>,
    subs: &[Sub<'_>],
    chosen: &[VarId],
    mut failed: HashMap<usize, Explanation>,
    steps: u64,
) -> Resolution {
    let set = chosen_set(chosen);
    let mut owner: HashMap<VarId, String> = HashMap::new();
    let mut outcomes = Vec::with_capacity(subs.len());
    for (i, s) in subs.iter().enumerate() {
        let name = s.spec.name.clone();
        if let Some(e) = failed.remove(&i) {
            outcomes.push(SubscriptionOutcome {
                name,
                outcome: Outcome::Failed {
                    explanation: Box::new(e),
                },
            });
            continue;
        }
        let Some(&v) = s.cands.options.iter().find(|v| set.contains(v)) else {
            // Unreachable when the search succeeded; report rather than panic.
            let e = explanation(s, None, vec![]);
            outcomes.push(SubscriptionOutcome {
                name,
                outcome: Outcome::Failed {
                    explanation: Box::new(e),
                },
            });
            continue;
        };
        owner.entry(v).or_insert_with(|| name.clone());
        let to = p.vars[v as usize].name.clone();
        let outcome = match s.cands.current {
            Some(cur) if cur == v => Outcome::UpToDate { csv: to },
            Some(cur) => Outcome::Upgrade {
                from: p.vars[cur as usize].name.clone(),
                to,
            },
            None => Outcome::Install { csv: to },
        };
        outcomes.push(SubscriptionOutcome { name, outcome });
    }

    let mut steps_out = Vec::new();
    let mut new_subs: Vec<NewSubscription> = Vec::new();
    for &v in chosen.iter().rev() {
        let (Some(c), Some(entry)) = (p.catalog_of(v), p.entry(v)) else {
            continue;
        };
        let catalog = p.catalogs[c].key.clone();
        let replaces = subs
            .iter()
            .find(|s| owner.get(&v) == Some(&s.spec.name))
            .and_then(|s| s.cands.current)
            .map(|cur| p.vars[cur as usize].name.clone());
        let subscription = match owner.get(&v) {
            Some(name) => name.clone(),
            None => {
                let name = subscription_name(&entry.package, &entry.channel, &catalog);
                if !new_subs.iter().any(|n| n.name == name) {
                    new_subs.push(NewSubscription {
                        name: name.clone(),
                        package: entry.package.clone(),
                        channel: entry.channel.clone(),
                        source: catalog.name.clone(),
                        source_namespace: catalog.namespace.clone(),
                        starting_csv: entry.name.clone(),
                    });
                }
                name
            }
        };
        steps_out.push(BundleStep {
            name: entry.name.clone(),
            package: entry.package.clone(),
            channel: entry.channel.clone(),
            version: entry.version.to_string(),
            catalog,
            bundle_path: entry.bundle_path.clone(),
            replaces,
            subscription,
        });
    }
    Resolution {
        subscriptions: outcomes,
        steps: steps_out,
        new_subscriptions: new_subs,
        warnings: p.warnings.clone(),
        search_steps: steps,
    }
}
