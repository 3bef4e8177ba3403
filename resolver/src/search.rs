//! A bounded backtracking search with conflict-directed backjumping.
//!
//! Obligations are satisfied in agenda order: first the roots (installed CSVs no Subscription owns, then
//! Subscriptions), then the dependencies of each chosen bundle, first come first served. Each obligation
//! tries its options in preference order, skipping any that conflict with what is chosen (one bundle per
//! package, one provider per API, `not` constraints). When an obligation cannot be met, the failure carries
//! the set of decision levels that caused it; a decision not in that set is not retried (backjumping), so
//! an independent failure costs no exponential search. The number of option attempts is bounded.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::rc::Rc;

use crate::explain::{Candidate, MAX_DEPTH, Rejection};
use crate::model::Gvk;
use crate::problem::{Problem, VarId};
use crate::requirement::Requirement;

/// Something that must hold in the answer.
#[derive(Debug, Clone)]
pub(crate) enum Root {
    /// A Subscription: one of `options` (preference order).
    Sub { label: String, options: Rc<[VarId]> },
    /// An installed CSV that must stay, with its dependencies met.
    Mandatory(VarId),
    /// An installed CSV that stays as it is: its package and APIs are taken, its dependencies not re-checked
    /// (it belongs to a failed Subscription, or the installed set is already inconsistent).
    Pinned(VarId),
}

#[derive(Debug, Clone, Copy)]
enum Ob {
    Root(usize),
    Dep { var: VarId, dep: usize, parent: u32 },
}

pub(crate) struct Failure {
    conflict: BTreeSet<u32>,
    pub cause: Rejection,
}

pub(crate) struct Search<'p, 'a> {
    p: &'p Problem<'a>,
    roots: &'p [Root],
    prohibited_packages: &'p HashMap<String, String>,
    agenda: Vec<Ob>,
    trail: Vec<VarId>,
    level_of: HashMap<VarId, u32>,
    pkg: HashMap<&'p str, VarId>,
    gvk: HashMap<&'p Gvk, VarId>,
    /// Chosen variables that carry `not` constraints.
    forbidders: Vec<VarId>,
    dep_cache: HashMap<VarId, Rc<[Rc<[VarId]>]>>,
    pub steps: u64,
    limit: u64,
}

impl<'p, 'a> Search<'p, 'a> {
    pub fn new(
        p: &'p Problem<'a>,
        roots: &'p [Root],
        prohibited_packages: &'p HashMap<String, String>,
        limit: u64,
    ) -> Self {
        Self {
            p,
            roots,
            prohibited_packages,
            agenda: (0..roots.len()).map(Ob::Root).collect(),
            trail: Vec::new(),
            level_of: HashMap::new(),
            pkg: HashMap::new(),
            gvk: HashMap::new(),
            forbidders: Vec::new(),
            dep_cache: HashMap::new(),
            steps: 0,
            limit,
        }
    }

    /// Treat `fixed` as already chosen (their own dependencies are assumed met); used to explain a
    /// candidate against an admitted solution.
    pub fn preset(mut self, fixed: &[VarId]) -> Self {
        for &v in fixed {
            if self.level_of.contains_key(&v) {
                continue;
            }
            let level = self.trail.len() as u32;
            let agenda_len = self.agenda.len();
            self.choose(v, level, false);
            self.agenda.truncate(agenda_len);
        }
        self
    }

    /// Run to completion: the chosen variables (in choice order), or the failure.
    pub fn solve(mut self) -> (Result<Vec<VarId>, Rejection>, u64) {
        let r = self.run(0);
        let steps = self.steps;
        (
            r.map(|()| self.trail)
                .map_err(|f| f.cause.bounded(MAX_DEPTH)),
            steps,
        )
    }

    #[expect(
        clippy::result_large_err,
        reason = "the Err path is the normal backtracking path; boxing would allocate on every rejection"
    )]
    fn options(&mut self, ob: Ob) -> Result<Rc<[VarId]>, Rejection> {
        match ob {
            Ob::Root(i) => Ok(match &self.roots[i] {
                Root::Sub { options, .. } => options.clone(),
                Root::Mandatory(v) | Root::Pinned(v) => Rc::from(vec![*v]),
            }),
            Ob::Dep { var, dep, .. } => {
                let p = self.p;
                let all = self
                    .dep_cache
                    .entry(var)
                    .or_insert_with(|| p.dependency_options(var))
                    .clone();
                match &p.vars[var as usize].deps[dep].requirement {
                    Requirement::Unsupported(text) => Err(Rejection::UnsupportedConstraint {
                        constraint: text.clone(),
                    }),
                    _ => Ok(all[dep].clone()),
                }
            }
        }
    }

    fn label(&self, ob: Ob) -> (String, Option<VarId>, Option<String>) {
        match ob {
            Ob::Root(i) => match &self.roots[i] {
                Root::Sub { label, .. } => (label.clone(), None, None),
                Root::Mandatory(v) | Root::Pinned(v) => {
                    (format!("keeping {}", self.p.bundle_ref(*v)), None, None)
                }
            },
            Ob::Dep { var, dep, .. } => {
                let d = &self.p.vars[var as usize].deps[dep];
                (
                    d.requirement.to_string(),
                    Some(var),
                    d.failure_message.clone(),
                )
            }
        }
    }

    fn is_positive(&self, ob: Ob) -> bool {
        match ob {
            Ob::Root(_) => true,
            Ob::Dep { var, dep, .. } => !matches!(
                self.p.vars[var as usize].deps[dep].requirement,
                Requirement::None(_)
            ),
        }
    }

    #[expect(
        clippy::result_large_err,
        reason = "the Err path is the normal backtracking path; boxing would allocate on every rejection"
    )]
    fn run(&mut self, mut pos: usize) -> Result<(), Failure> {
        let (ob, options) = loop {
            let Some(&ob) = self.agenda.get(pos) else {
                return Ok(());
            };
            if !self.is_positive(ob) {
                pos += 1;
                continue;
            }
            match self.options(ob) {
                Err(rej) => {
                    let conflict = parent_level(ob).into_iter().collect();
                    let (requirement, of, failure_message) = self.label(ob);
                    let _ = requirement;
                    let cause = match of {
                        Some(v) => Rejection::Unmet {
                            requirement: "a constraint it cannot meet".into(),
                            of: Some(self.p.bundle_ref(v)),
                            failure_message,
                            candidates: vec![],
                            omitted: 0,
                        },
                        None => rej.clone(),
                    };
                    let cause = if matches!(rej, Rejection::UnsupportedConstraint { .. }) {
                        rej
                    } else {
                        cause
                    };
                    return Err(Failure { conflict, cause });
                }
                Ok(options) => {
                    if options.iter().any(|v| self.level_of.contains_key(v)) {
                        pos += 1;
                        continue;
                    }
                    break (ob, options);
                }
            }
        };

        let mut conflict: BTreeSet<u32> = parent_level(ob).into_iter().collect();
        let mut rejected: Vec<Candidate> = Vec::new();
        for &v in options.iter() {
            self.steps += 1;
            if self.steps > self.limit {
                return Err(Failure {
                    conflict: (0..self.trail.len() as u32).collect(),
                    cause: Rejection::SearchLimit { steps: self.limit },
                });
            }
            if let Err((rej, levels)) = self.check(v, matches!(ob, Ob::Dep { .. })) {
                conflict.extend(levels);
                rejected.push(Candidate {
                    bundle: self.p.bundle_ref(v),
                    rejected: rej,
                });
                continue;
            }
            let level = self.trail.len() as u32;
            let agenda_len = self.agenda.len();
            let with_deps = !matches!(ob, Ob::Root(i) if matches!(self.roots[i], Root::Pinned(_)));
            self.choose(v, level, with_deps);
            match self.run(pos + 1) {
                Ok(()) => return Ok(()),
                Err(f) => {
                    self.undo(v, agenda_len);
                    if matches!(f.cause, Rejection::SearchLimit { .. })
                        || !f.conflict.contains(&level)
                    {
                        return Err(f);
                    }
                    conflict.extend(f.conflict.into_iter().filter(|&l| l != level));
                    let bundle = self.p.bundle_ref(v);
                    let rejected_for =
                        crate::explain::about_itself(f.cause.bounded(MAX_DEPTH), &bundle);
                    rejected.push(Candidate {
                        bundle,
                        rejected: rejected_for,
                    });
                }
            }
        }
        let (requirement, of, failure_message) = self.label(ob);
        let omitted = rejected
            .len()
            .saturating_sub(crate::explain::MAX_CANDIDATES);
        rejected.truncate(crate::explain::MAX_CANDIDATES);
        Err(Failure {
            conflict,
            cause: Rejection::Unmet {
                requirement,
                of: of.map(|v| self.p.bundle_ref(v)),
                failure_message,
                candidates: rejected,
                omitted,
            },
        })
    }

    /// Can `v` join the chosen set? On failure: the first reason, and the levels responsible.
    /// Packages of failed Subscriptions are closed to dependencies only (`as_dependency`).
    #[expect(
        clippy::result_large_err,
        reason = "the Err path is the normal backtracking path; boxing would allocate on every rejection"
    )]
    fn check(&self, v: VarId, as_dependency: bool) -> Result<(), (Rejection, Vec<u32>)> {
        let var = &self.p.vars[v as usize];
        if var.deprecated {
            return Err((Rejection::Deprecated, vec![]));
        }
        if let Some(message) = &var.invalid {
            return Err((
                Rejection::InvalidProperties {
                    message: message.clone(),
                },
                vec![],
            ));
        }
        if let Some(pkg) = &var.package {
            if let Some(sub) = self
                .prohibited_packages
                .get(pkg)
                .filter(|_| as_dependency && self.p.catalog_of(v).is_some())
            {
                return Err((
                    Rejection::PackageOfFailedSubscription {
                        package: pkg.clone(),
                        subscription: sub.clone(),
                    },
                    vec![],
                ));
            }
            if let Some(&w) = self.pkg.get(pkg.as_str()) {
                return Err((
                    Rejection::PackageTaken {
                        package: pkg.clone(),
                        by: self.p.bundle_ref(w),
                    },
                    vec![self.level_of[&w]],
                ));
            }
        }
        for g in &var.provides {
            if let Some(&w) = self.gvk.get(g) {
                return Err((
                    Rejection::ApiTaken {
                        api: format!("API {g}"),
                        by: self.p.bundle_ref(w),
                    },
                    vec![self.level_of[&w]],
                ));
            }
        }
        for &w in &self.forbidders {
            if let Some(text) = self.forbids(w, v) {
                return Err((
                    Rejection::Forbidden {
                        by: self.p.bundle_ref(w),
                        constraint: text,
                    },
                    vec![self.level_of[&w]],
                ));
            }
        }
        if var
            .deps
            .iter()
            .any(|d| matches!(d.requirement, Requirement::None(_)))
        {
            for &w in &self.trail {
                if let Some(text) = self.forbids(v, w) {
                    let by = self.p.bundle_ref(v);
                    return Err((
                        Rejection::Forbidden {
                            by,
                            constraint: format!(
                                "{text} (it excludes the selected {})",
                                self.p.bundle_ref(w)
                            ),
                        },
                        vec![self.level_of[&w]],
                    ));
                }
            }
        }
        Ok(())
    }

    /// The `not` constraint of `w` that excludes `v`, if any.
    fn forbids(&self, w: VarId, v: VarId) -> Option<String> {
        for d in &self.p.vars[w as usize].deps {
            if let Requirement::None(_) = &d.requirement {
                let mut hit = Vec::new();
                self.p.collect(&d.requirement, &mut hit);
                if hit.contains(&v) {
                    return Some(d.requirement.to_string());
                }
            }
        }
        None
    }

    fn choose(&mut self, v: VarId, level: u32, with_deps: bool) {
        let p = self.p;
        let var = &p.vars[v as usize];
        self.trail.push(v);
        self.level_of.insert(v, level);
        if let Some(pkg) = &var.package {
            self.pkg.insert(pkg.as_str(), v);
        }
        for g in &var.provides {
            self.gvk.insert(g, v);
        }
        if var
            .deps
            .iter()
            .any(|d| matches!(d.requirement, Requirement::None(_)))
        {
            self.forbidders.push(v);
        }
        for dep in (0..var.deps.len()).filter(|_| with_deps) {
            self.agenda.push(Ob::Dep {
                var: v,
                dep,
                parent: level,
            });
        }
    }

    fn undo(&mut self, v: VarId, agenda_len: usize) {
        let var = &self.p.vars[v as usize];
        self.trail.pop();
        self.level_of.remove(&v);
        if let Some(pkg) = &var.package {
            self.pkg.remove(pkg.as_str());
        }
        for g in &var.provides {
            self.gvk.remove(g);
        }
        if self.forbidders.last() == Some(&v) {
            self.forbidders.pop();
        }
        self.agenda.truncate(agenda_len);
    }
}

fn parent_level(ob: Ob) -> Option<u32> {
    match ob {
        Ob::Root(_) => None,
        Ob::Dep { parent, .. } => Some(parent),
    }
}

/// The set of variables a finished search chose, for quick membership tests.
pub(crate) fn chosen_set(chosen: &[VarId]) -> HashSet<VarId> {
    chosen.iter().copied().collect()
}
