//! Why something could not be resolved: a machine-readable tree (serde, for status conditions) and its
//! rendering as plain sentences.
//!
//! For a failed Subscription the explanation lists every candidate that was considered, the catalog it
//! came from, and the first reason it was rejected. Nested reasons (a dependency whose providers were
//! all rejected) are kept to a bounded depth and width so messages stay readable.

use std::fmt::{self, Write as _};

use serde::{Deserialize, Serialize};

use crate::channel::ChannelError;
use crate::model::CatalogKey;

/// Nested reasons deeper than this are cut.
pub const MAX_DEPTH: usize = 3;
/// At most this many candidates are kept per requirement; the rest are counted.
pub const MAX_CANDIDATES: usize = 6;

/// A bundle named in an explanation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BundleRef {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// `None`: the CSV already installed in the namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog: Option<CatalogKey>,
}

impl fmt::Display for BundleRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.catalog, &self.channel) {
            (None, _) => write!(f, "installed {} (version {})", self.name, self.version),
            (Some(c), Some(ch)) => write!(
                f,
                "{} (version {}, channel {ch}, catalog {c})",
                self.name, self.version
            ),
            (Some(c), None) => write!(f, "{} (version {}, catalog {c})", self.name, self.version),
        }
    }
}

/// The first reason a candidate was rejected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "camelCase")]
pub enum Rejection {
    /// The bundle is marked deprecated (`olm.deprecated`); OLM never selects it.
    Deprecated,
    /// Its properties could not be read.
    #[serde(rename_all = "camelCase")]
    InvalidProperties { message: String },
    /// It declares a constraint this resolver does not evaluate.
    #[serde(rename_all = "camelCase")]
    UnsupportedConstraint { constraint: String },
    /// Another bundle of the same package is already selected.
    #[serde(rename_all = "camelCase")]
    PackageTaken { package: String, by: BundleRef },
    /// Its package belongs to a Subscription that failed to resolve.
    #[serde(rename_all = "camelCase")]
    PackageOfFailedSubscription {
        package: String,
        subscription: String,
    },
    /// It provides an API another selected bundle already provides.
    #[serde(rename_all = "camelCase")]
    ApiTaken { api: String, by: BundleRef },
    /// A selected bundle's `not` constraint forbids it, or its own forbids a selected bundle.
    #[serde(rename_all = "camelCase")]
    Forbidden { by: BundleRef, constraint: String },
    /// A requirement (of a bundle, or a Subscription's) that no candidate could satisfy.
    #[serde(rename_all = "camelCase")]
    Unmet {
        requirement: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        of: Option<BundleRef>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failure_message: Option<String>,
        candidates: Vec<Candidate>,
        /// Candidates rejected but not listed (width bound).
        #[serde(default)]
        omitted: usize,
    },
    /// The search stopped at its step bound before finding an answer.
    #[serde(rename_all = "camelCase")]
    SearchLimit { steps: u64 },
}

/// One candidate and why it was rejected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    pub bundle: BundleRef,
    pub rejected: Rejection,
}

impl Rejection {
    /// Cut nested candidate lists below `depth` levels.
    pub fn bounded(mut self, depth: usize) -> Self {
        if let Rejection::Unmet {
            candidates,
            omitted,
            ..
        } = &mut self
        {
            if depth == 0 {
                *omitted += candidates.len();
                candidates.clear();
            } else {
                if candidates.len() > MAX_CANDIDATES {
                    *omitted += candidates.len() - MAX_CANDIDATES;
                    candidates.truncate(MAX_CANDIDATES);
                }
                for c in candidates.iter_mut() {
                    c.rejected = std::mem::replace(&mut c.rejected, Rejection::Deprecated)
                        .bounded(depth - 1);
                }
            }
        }
        self
    }

    /// The reason as a clause completing "… was rejected because …".
    pub fn clause(&self) -> String {
        let mut s = String::new();
        self.write_clause(&mut s);
        s
    }

    fn write_clause(&self, s: &mut String) {
        // Writing to a String cannot fail.
        let _ = match self {
            Rejection::Deprecated => write!(s, "it is deprecated"),
            Rejection::InvalidProperties { message } => {
                write!(s, "its properties are invalid ({message})")
            }
            Rejection::UnsupportedConstraint { constraint } => {
                write!(
                    s,
                    "it declares an olm.constraint this resolver does not evaluate ({constraint})"
                )
            }
            Rejection::PackageTaken { package, by } => {
                write!(
                    s,
                    "package {package} is already provided by {by}, and a namespace holds one operator per package"
                )
            }
            Rejection::PackageOfFailedSubscription {
                package,
                subscription,
            } => {
                write!(
                    s,
                    "package {package} belongs to Subscription {subscription}, which could not be resolved"
                )
            }
            Rejection::ApiTaken { api, by } => {
                write!(
                    s,
                    "it provides {api}, which {by} already provides, and a namespace holds one provider per API"
                )
            }
            Rejection::Forbidden { by, constraint } => {
                write!(s, "the constraint {constraint} of {by} excludes it")
            }
            Rejection::SearchLimit { steps } => {
                write!(s, "the search stopped at its bound of {steps} steps")
            }
            Rejection::Unmet {
                requirement,
                of,
                failure_message,
                candidates,
                omitted,
            } => {
                let _ = match of {
                    Some(b) => write!(s, "{b} requires {requirement}"),
                    None => write!(s, "it requires {requirement}"),
                };
                if let Some(m) = failure_message {
                    let _ = write!(s, " (\"{m}\")");
                }
                let total = candidates.len() + omitted;
                if total == 0 {
                    write!(
                        s,
                        ", and no bundle in the visible catalogs or the namespace satisfies it"
                    )
                } else {
                    let _ = write!(
                        s,
                        ", and all {total} bundle(s) that could satisfy it were rejected"
                    );
                    if !candidates.is_empty() {
                        s.push_str(": ");
                        for (i, c) in candidates.iter().enumerate() {
                            if i > 0 {
                                s.push_str("; ");
                            }
                            let _ = write!(s, "{} because ", c.bundle);
                            c.rejected.write_clause(s);
                        }
                        if *omitted > 0 {
                            let _ = write!(s, "; and {omitted} more");
                        }
                    }
                    Ok(())
                }
            }
        };
    }
}

/// Say "it requires …" rather than naming the candidate `me` twice.
pub(crate) fn about_itself(r: Rejection, me: &BundleRef) -> Rejection {
    match r {
        Rejection::Unmet {
            requirement,
            of: Some(of),
            failure_message,
            candidates,
            omitted,
        } if &of == me => Rejection::Unmet {
            requirement,
            of: None,
            failure_message,
            candidates,
            omitted,
        },
        other => other,
    }
}

/// Why a Subscription got no candidates at all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum NoCandidates {
    #[serde(rename_all = "camelCase")]
    CatalogMissing { catalog: CatalogKey },
    #[serde(rename_all = "camelCase")]
    PackageMissing,
    #[serde(rename_all = "camelCase")]
    ChannelMissing,
    #[serde(rename_all = "camelCase")]
    StartingCsvMissing { starting_csv: String, skipped: bool },
    #[serde(rename_all = "camelCase")]
    ChannelInvalid { error: ChannelError },
    /// The operators already installed cannot all be kept, so nothing in the namespace resolves.
    #[serde(rename_all = "camelCase")]
    InstalledInconsistent { cause: Rejection },
}

/// The machine-readable failure of one Subscription (for its `ResolutionFailed` condition).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    pub subscription: String,
    pub package: String,
    pub channel: String,
    pub catalog: CatalogKey,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_candidates: Option<NoCandidates>,
    /// Each candidate considered, in preference order, with its first rejection.
    pub candidates: Vec<Candidate>,
    /// The same, in sentences.
    pub message: String,
}

impl Explanation {
    pub fn render(
        sub: &str,
        package: &str,
        channel: &str,
        catalog: &CatalogKey,
        no: Option<&NoCandidates>,
        cands: &[Candidate],
    ) -> String {
        let chan = if channel.is_empty() {
            "any channel".to_owned()
        } else {
            format!("channel {channel}")
        };
        let mut s = format!(
            "Subscription {sub} (package {package}, {chan}, catalog {catalog}) cannot be resolved."
        );
        match no {
            Some(NoCandidates::CatalogMissing { catalog }) => {
                let _ = write!(
                    s,
                    " No operators found from catalog {catalog}: it is not visible to this namespace."
                );
            }
            Some(NoCandidates::PackageMissing) => {
                let _ = write!(
                    s,
                    " No operators found in package {package} in catalog {catalog}."
                );
            }
            Some(NoCandidates::ChannelMissing) => {
                let _ = write!(
                    s,
                    " No operators found in {chan} of package {package} in catalog {catalog}."
                );
            }
            Some(NoCandidates::StartingCsvMissing {
                starting_csv,
                skipped,
            }) => {
                let _ = write!(
                    s,
                    " No operators found with name {starting_csv} in {chan} of package {package} in catalog {catalog}"
                );
                s.push_str(if *skipped {
                    " (another entry of the channel skips it, so it is never installed)."
                } else {
                    "."
                });
            }
            Some(NoCandidates::ChannelInvalid { error }) => {
                let _ = write!(s, " Its update graph is invalid: {error}.");
            }
            Some(NoCandidates::InstalledInconsistent { cause }) => {
                s.push_str(" The operators installed in the namespace are already inconsistent, so nothing can be resolved: ");
                match cause {
                    Rejection::Unmet { candidates, .. } if candidates.len() == 1 => {
                        let _ = write!(
                            s,
                            "{} cannot stay because {}.",
                            candidates[0].bundle,
                            candidates[0].rejected.clause()
                        );
                    }
                    other => {
                        let _ = write!(s, "{}.", other.clause());
                    }
                }
            }
            None => {}
        }
        if !cands.is_empty() {
            let _ = write!(s, " {} candidate(s) were considered:", cands.len());
            for c in cands {
                let _ = write!(
                    s,
                    " {} was rejected because {}.",
                    c.bundle,
                    c.rejected.clause()
                );
            }
        }
        s
    }
}
