//! Validation findings a person can act on: where (file, document, package/channel/bundle),
//! what is wrong, and how to fix it.

use std::fmt;

use crate::model::Origin;

/// What part of the catalog a finding is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    Document,
    Package { package: String },
    Channel { package: String, channel: String },
    Bundle { package: String, bundle: String },
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Document => Ok(()),
            Scope::Package { package } => write!(f, "package {package:?}: "),
            Scope::Channel { package, channel } => {
                write!(f, "package {package:?}, channel {channel:?}: ")
            }
            Scope::Bundle { package, bundle } => {
                write!(f, "package {package:?}, bundle {bundle:?}: ")
            }
        }
    }
}

/// What is wrong. `Display` says what; [`Problem::hint`] says how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    #[error("document has no `schema` key")]
    MissingSchema,
    #[error("unknown schema {0:?} (names starting with `olm.` are reserved)")]
    UnknownSchema(String),
    #[error("keys {0:?} appear more than once, differing only in case")]
    CaseDuplicateKey(String),
    #[error("document is not a valid {schema}: {message}")]
    BadDocument { schema: String, message: String },
    #[error("package is defined more than once (also at {other})")]
    DuplicatePackage { other: String },
    #[error("channel is defined more than once (also at {other})")]
    DuplicateChannel { other: String },
    #[error("bundle is defined more than once (also at {other})")]
    DuplicateBundle { other: String },
    #[error("more than one olm.deprecations document for this package")]
    DuplicateDeprecations,
    #[error("refers to package {0:?}, which has no olm.package document")]
    UnknownPackage(String),
    #[error("package name {0:?} is not a DNS-1123 label")]
    InvalidPackageName(String),
    #[error("package has no channels")]
    NoChannels,
    #[error("package has no default channel")]
    NoDefaultChannel,
    #[error("default channel {0:?} does not exist")]
    DefaultChannelMissing(String),
    #[error("channel name is empty")]
    EmptyChannelName,
    #[error("channel has no entries")]
    EmptyChannel,
    #[error("entry {0:?} appears more than once")]
    DuplicateEntry(String),
    #[error("entry {0:?} has no olm.bundle in this package")]
    EntryWithoutBundle(String),
    #[error("bundle is not an entry of any channel")]
    BundleInNoChannel,
    #[error("channel has no head: every entry is replaced or skipped by another")]
    NoHead,
    #[error("channel has {} heads ({}), expected exactly one", .0.len(), .0.join(", "))]
    SeveralHeads(Vec<String>),
    #[error("replaces chain has a cycle: {}", .0.join(" -> "))]
    Cycle(Vec<String>),
    #[error("entry {entry:?} replaces {target:?}, which is not in the channel, so the chain stops there and {} cannot be reached from the head", .stranded.join(", "))]
    ReplacesMissing {
        entry: String,
        target: String,
        stranded: Vec<String>,
    },
    #[error("stranded entries (not reachable from the head by replaces, and not skipped): {}", .0.join(", "))]
    Stranded(Vec<String>),
    #[error("entry {0:?} has an empty name in `skips`")]
    EmptySkip(String),
    #[error("skipRange {range:?} of {entry:?} is invalid: {message}")]
    InvalidSkipRange {
        entry: String,
        range: String,
        message: String,
    },
    #[error("bundle has {0} olm.package properties, expected exactly one")]
    PackagePropertyCount(usize),
    #[error("olm.package property names package {0:?}, not the bundle's package")]
    PackagePropertyMismatch(String),
    #[error("version {version:?} is not valid semver: {message}")]
    InvalidVersion { version: String, message: String },
    #[error("version {version} is also used by bundle {other:?}")]
    DuplicateVersion { version: String, other: String },
    #[error("bundle has no image and no olm.bundle.object properties")]
    EmptyImage,
    #[error("property {type_:?} is invalid: {message}")]
    InvalidProperty { type_: String, message: String },
    #[error("deprecation refers to {schema} {name:?}, which does not exist")]
    DeprecationUnknownRef { schema: String, name: String },
    #[error("deprecation entry has an empty message")]
    DeprecationEmptyMessage,
}

impl Problem {
    /// How to fix it, in one sentence.
    pub fn hint(&self) -> &'static str {
        match self {
            Problem::MissingSchema => {
                "add `schema: olm.package|olm.channel|olm.bundle|olm.deprecations`"
            }
            Problem::UnknownSchema(_) => {
                "fix the spelling of the schema, or use a name outside the `olm.` prefix for custom data"
            }
            Problem::CaseDuplicateKey(_) => "keep only one spelling of the key",
            Problem::BadDocument { .. } => {
                "fix the field named in the message (see the FBC reference for its type)"
            }
            Problem::DuplicatePackage { .. } => {
                "remove one of the definitions, or rename one package"
            }
            Problem::DuplicateChannel { .. } => "merge the entries into one olm.channel document",
            Problem::DuplicateBundle { .. } => "remove the duplicate olm.bundle document",
            Problem::DuplicateDeprecations => {
                "merge the entries into one olm.deprecations document"
            }
            Problem::UnknownPackage(_) => {
                "add an olm.package document for it, or fix the `package` field"
            }
            Problem::InvalidPackageName(_) => {
                "use lowercase letters, digits and '-', at most 63 characters"
            }
            Problem::NoChannels => "add an olm.channel document listing the package's bundles",
            Problem::NoDefaultChannel => "set `defaultChannel` on the olm.package document",
            Problem::DefaultChannelMissing(_) => {
                "set `defaultChannel` to an existing channel, or add that channel"
            }
            Problem::EmptyChannelName => "give the olm.channel a `name`",
            Problem::EmptyChannel => "add entries to the channel, or remove it",
            Problem::DuplicateEntry(_) => "list each bundle once per channel",
            Problem::EntryWithoutBundle(_) => "add the olm.bundle document, or remove the entry",
            Problem::BundleInNoChannel => "add the bundle as an entry of a channel, or remove it",
            Problem::NoHead => {
                "break the loop: the newest entry must not be replaced or skipped by another"
            }
            Problem::SeveralHeads(_) => {
                "make all but the newest head the target of a `replaces` or `skips`"
            }
            Problem::Cycle(_) => "remove one `replaces` edge of the loop",
            Problem::ReplacesMissing { .. } => {
                "point `replaces` at an entry of this channel, or add the missing bundle"
            }
            Problem::Stranded(_) => {
                "connect the entries to the replaces chain (replaces or skips), or remove them"
            }
            Problem::EmptySkip(_) => "remove the empty item from `skips`",
            Problem::InvalidSkipRange { .. } => "use a semver range such as \">=1.0.0 <1.2.0\"",
            Problem::PackagePropertyCount(_) => {
                "give the bundle exactly one olm.package property {packageName, version}"
            }
            Problem::PackagePropertyMismatch(_) => {
                "make olm.package.packageName equal the bundle's `package`"
            }
            Problem::InvalidVersion { .. } => "use a semantic version such as 1.2.3 or 1.2.3-rc.1",
            Problem::DuplicateVersion { .. } => "give each bundle of a package its own version",
            Problem::EmptyImage => {
                "set `image` to the bundle image, or inline the manifests as olm.bundle.object"
            }
            Problem::InvalidProperty { .. } => "fix the property value to the documented shape",
            Problem::DeprecationUnknownRef { .. } => {
                "fix the reference name, or remove the deprecation entry"
            }
            Problem::DeprecationEmptyMessage => "write a message telling users what to do instead",
        }
    }
}

/// One finding: where it is, what it is about, what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub origin: Option<Origin>,
    pub scope: Scope,
    pub problem: Problem,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(origin) = &self.origin {
            write!(f, "{origin}: ")?;
        }
        write!(
            f,
            "{}{} (fix: {})",
            self.scope,
            self.problem,
            self.problem.hint()
        )
    }
}

/// A non-empty list of findings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} problem(s) in the catalog:", self.0.len())?;
        for d in &self.0 {
            write!(f, "\n  - {d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}
