//! The classified facts `machine::decide` reads: every input arrives here already judged (group fit,
//! requirements, install health, replacement neighbours, spec problems), so the machine never parses
//! annotations, looks at stores or reads the clock.

use messages::crd::csv::{CsvPhase, CsvReason, RequirementStatus};
use std::collections::BTreeMap;
use std::time::Duration;

/// How long a CSV may stay in `Installing` without its components becoming healthy (OLM: 5 minutes).
pub const INSTALL_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// Everything `decide` needs about one CSV.
#[derive(Clone, Debug, PartialEq)]
pub struct Observed {
    pub phase: CsvPhase,
    pub reason: CsvReason,
    /// True for copies made by an OperatorGroup (never transitioned).
    pub copied: bool,
    /// How long ago `status.lastTransitionTime` was, when there is one.
    pub since_transition: Option<Duration>,
    /// The CSV's OperatorGroup changed its targets or service account since the CSV failed with
    /// `InstallComponentFailedNoRetry`: what the failure depended on may have changed.
    pub cluster_changed: bool,
    /// The CSV's OperatorCondition is missing or lists other service accounts or deployments.
    pub operator_condition_stale: bool,
    /// The CSV this one replaces is not upgradeable (its OperatorCondition's message).
    pub not_upgradeable: Option<String>,
    pub spec: SpecCheck,
    pub group: GroupFit,
    pub requirements: Requirements,
    /// Another CSV outside this one's replacement chain owns one of its CRDs or deployments.
    pub owner_conflict: Option<OwnerConflict>,
    /// The existing CSV this one's `spec.replaces` names (never itself).
    pub replaces: Option<Neighbour>,
    /// A (non-copied) CSV whose `spec.replaces` names this one.
    pub replaced_by: Option<Neighbour>,
    /// The namespace's one OperatorGroup has `spec.upgradeStrategy: TechPreviewUnsafeFailForward`: a `Failed`
    /// CSV may be replaced (OLM moves it to `Replacing` only then).
    pub fail_forward: bool,
    /// The newest CSV of the chain replacing this one (following `replaced_by` to its end); the same as
    /// `replaced_by` for a chain of two.
    pub chain_head: Option<Neighbour>,
    /// The first older CSV of the chain (following `spec.replaces` past the one this CSV replaces) that has
    /// not handed over yet (neither Replacing nor Deleting): installing before it does would put two writers
    /// on the same Deployment (issue 17).
    pub older_not_handed_over: Option<Neighbour>,
    pub install: InstallStatus,
    /// Webhooks and API services the CSV serves (`served/`).
    pub served: Served,
}

/// What `decide` needs about the webhooks and API services a CSV serves.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Served {
    /// Why the webhook descriptions cannot be installed (reason `InvalidWebhookDescription`).
    pub invalid: Option<String>,
    /// An owned APIService that exists and belongs to a CSV this one may not take it from.
    pub api_service_conflict: Option<String>,
    /// Time left before the certificates are due for rotation (zero: due now); `None` without certificates.
    pub rotate_in: Option<Duration>,
    /// The CA bundles still trust a rotation's previous CA: time left before it may go (zero: now, once the
    /// install is healthy; `served/bundle.rs`); `None` when they trust only the current CA.
    pub settle_in: Option<Duration>,
}

/// What another CSV (outside the replacement chain) already owns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OwnerConflict {
    /// One of the CSV's owned CRDs (OLM's check).
    Crd(String),
    /// One of the CSV's owned APIServices (OLM's `apiServiceOwnerConflicts`; the name is in
    /// `Served::api_service_conflict`).
    ApiService,
    /// A deployment of the strategy is installed and labelled for another CSV: installing would take it
    /// over and the two CSVs would fight over it.
    Deployment { deployment: String, owner: String },
}

/// Problems of the CSV's own spec, found before any phase logic.
#[derive(Clone, Debug, PartialEq)]
pub enum SpecCheck {
    Valid,
    /// `spec.install` cannot be used (unknown strategy, missing spec, malformed deployment or permission).
    InvalidStrategy(String),
    /// `spec.version` is not a semantic version.
    BadVersion(String),
    /// Following `spec.replaces` from this CSV comes back to it (the names of the cycle, in order).
    ReplacesCycle(Vec<String>),
    /// An owned or required CRD name is not `plural.group`: OLM silently stops syncing such a CSV.
    BadCrdName(String),
}

/// How the CSV fits its namespace's OperatorGroup (issue 4 will compute this from the real OperatorGroup
/// logic; until then `group_fit::classify` does the simple check).
#[derive(Clone, Debug, PartialEq)]
pub enum GroupFit {
    /// Exactly one group and its targets are supported. `annotate` holds the group annotations to write on
    /// the CSV when they differ from what it carries.
    Fits {
        annotate: Option<BTreeMap<String, String>>,
    },
    NoOperatorGroup,
    TooManyOperatorGroups,
    /// The group resolves to zero target namespaces.
    NoTargetNamespaces,
    /// The CSV lists the same install mode type twice.
    InvalidInstallModes(String),
    /// The CSV does not support the group's targets (OLM's `InstallModeSet.Supports` error text).
    Unsupported(String),
    /// The group's `olm.providedAPIs` must change first (spec §3.4): the CSV asks the group's actor
    /// (`operator_group::notify::change_provided_apis`) and reconciles again.
    ChangeProvidedApis(messages::msg::ApiChange, std::collections::BTreeSet<String>),
    /// The provided-API rules fail the CSV, non-terminally (`InterOperatorGroupOwnerConflict`,
    /// `CannotModifyStaticOperatorGroupProvidedAPIs`); `write` is false where OLM keeps the current status.
    ApiFailure {
        reason: CsvReason,
        message: String,
        write: bool,
    },
}

/// The result of the requirement checks (spec §2.4), with the statuses to publish.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Requirements {
    pub met: bool,
    pub statuses: Vec<RequirementStatus>,
}

impl Requirements {
    pub fn met() -> Self {
        Self {
            met: true,
            statuses: Vec::new(),
        }
    }

    pub fn unmet() -> Self {
        Self {
            met: false,
            statuses: Vec::new(),
        }
    }
}

/// A neighbour in the replacement chain: its name and phase.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Neighbour {
    pub name: String,
    pub phase: CsvPhase,
}

impl Neighbour {
    pub fn new(name: impl Into<String>, phase: CsvPhase) -> Self {
        Self {
            name: name.into(),
            phase,
        }
    }
}

/// What the installed components look like compared with what the strategy wants (OLM `CheckInstalled`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InstallStatus {
    /// Every deployment exists, matches the strategy and is available.
    Healthy,
    /// A deployment is missing (`ComponentMissing`).
    Missing(String),
    /// A deployment exists but is not ready yet (`Waiting`).
    Waiting(String),
    /// A deployment drifted from the strategy: annotations or spec hash (`AnnotationsMissing`,
    /// `DeploymentUpdated`), forcing a reinstall.
    Drifted(String),
    /// A deployment can no longer succeed (`ProgressDeadlineExceeded`).
    Unrecoverable(String),
}
