//! What a CatalogSource actor does on a run (pure): the catalog as observed ([`observe`]), what changed since the
//! run before ([`step`]) and, with what its messages reported (a read asked for, its connection lost), the one
//! thing to do ([`decide`]). Also the loop's timing ([`policy`]).

use crate::manifest::CatalogInfo;
use messages::crd::catalog_source::{CatalogSource, SourceType};
use olm_runtime::outcome::Policy;
use std::time::Duration;

/// The loop's timing: a failed read is retried from 2 s doubling to 5 minutes (the default resync); a run that
/// takes longer than 5 minutes (the longest a whole streamed RPC may take, `ClientOptions::stream_timeout`) is
/// abandoned and retried, so a read that stalls never freezes its catalog.
pub fn policy() -> Policy {
    Policy {
        base: Duration::from_secs(2),
        cap: Duration::from_secs(300),
        conflict: Duration::from_millis(100),
        permanent: Duration::from_secs(300),
        deadline: Duration::from_secs(300),
    }
}

/// Where a catalog's content is read from.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// A registry's gRPC address.
    Grpc(String),
    /// A ConfigMap in the catalog's namespace (`configmap`/`internal` catalogs: olm-rs runs no registry pod for
    /// them, catalog-operator loads them in-process, so we read the ConfigMap too).
    ConfigMap(String),
    /// A catalog image catalog-operator serves in-process (no address): pulled here too (crate::catalogs::image_catalog).
    Image(String),
    None,
}

/// What the actor reads a catalog for.
#[derive(Clone, Debug, PartialEq)]
pub struct Observed {
    pub info: CatalogInfo,
    pub source: Source,
    /// The CatalogSource's `spec.secrets` (pull secrets of an image catalog).
    pub secrets: Vec<String>,
    /// Changes of served content the catalog-operator reports: latest poll, connection state, and the
    /// resourceVersion of a ConfigMap catalog it loaded.
    pub content_marks: (Option<String>, Option<String>, Option<String>),
}

pub fn observe(cs: &CatalogSource) -> Observed {
    let status = cs.status.as_ref();
    Observed {
        info: CatalogInfo {
            name: cs.metadata.name.clone().unwrap_or_default(),
            namespace: cs.metadata.namespace.clone().unwrap_or_default(),
            display_name: cs.spec.display_name.clone().unwrap_or_default(),
            publisher: cs.spec.publisher.clone().unwrap_or_default(),
            labels: cs.metadata.labels.clone().unwrap_or_default(),
            created: cs.metadata.creation_timestamp.clone(),
        },
        source: match cs.spec.source_type {
            SourceType::ConfigMap | SourceType::Internal => cs
                .spec
                .config_map
                .clone()
                .filter(|n| !n.is_empty())
                .map_or(Source::None, Source::ConfigMap),
            _ => match (
                cs.address(),
                cs.spec.image.clone().filter(|i| !i.is_empty()),
            ) {
                (Some(address), _) => Source::Grpc(address),
                (None, Some(image)) => Source::Image(image),
                (None, None) => Source::None,
            },
        },
        secrets: cs.spec.secrets.clone().unwrap_or_default(),
        content_marks: (
            status
                .and_then(|s| s.latest_image_registry_poll.as_ref())
                .map(|t| t.0.to_string()),
            status
                .and_then(|s| s.connection_state.as_ref())
                .map(|c| format!("{:?}", c.last_observed_state)),
            status
                .and_then(|s| s.config_map_reference.as_ref())
                .map(|r| r.resource_version.clone()),
        ),
    }
}

/// What changed between the observation the last run acted on and the newest one.
#[derive(Debug, PartialEq)]
pub enum Step {
    Nothing,
    /// Drop the connection and the packages (no address).
    Clear,
    /// Connect to the new address, then read.
    Connect(String),
    /// Read again over the current connection.
    Read,
    /// (Re)read the catalog's ConfigMap (no connection).
    ReadConfigMap,
    /// (Re)read the catalog image (no connection; nothing pulled while its digest is unchanged).
    ReadImage,
}

pub fn step(previous: Option<&Observed>, now: &Observed) -> Step {
    let unchanged = previous.is_some_and(|p| p == now);
    let same_source = previous.is_some_and(|p| p.source == now.source);
    match &now.source {
        Source::None if same_source => Step::Nothing,
        Source::None => Step::Clear,
        _ if unchanged => Step::Nothing,
        Source::Grpc(_) if same_source => Step::Read,
        Source::Grpc(a) => Step::Connect(a.clone()),
        Source::ConfigMap(_) => Step::ReadConfigMap,
        Source::Image(_) => Step::ReadImage,
    }
}

/// The one thing a run does.
#[derive(Debug, PartialEq)]
pub enum Act {
    Nothing,
    /// Drop the connection and the packages.
    Clear,
    /// Connect to a new address (dropping any other source); the read follows its first READY.
    Connect(String),
    /// Read the catalog (over the connection, its ConfigMap or its image).
    Read,
}

/// What a run does: what [`step`] says, a read when one was asked for (our connection became READY, the resync)
/// though the observation did not change, and for a gRPC catalog whose connection went TRANSIENT_FAILURE or
/// SHUTDOWN, no read: its packages are removed until it answers again (OLM's packageserver).
pub fn decide(previous: Option<&Observed>, now: &Observed, asked: bool, lost: bool) -> Act {
    let grpc = matches!(now.source, Source::Grpc(_));
    match step(previous, now) {
        Step::Clear => Act::Clear,
        Step::Connect(address) => Act::Connect(address),
        Step::ReadConfigMap | Step::ReadImage => Act::Read,
        Step::Read | Step::Nothing if grpc && lost => Act::Clear,
        Step::Read => Act::Read,
        Step::Nothing if asked && now.source != Source::None => Act::Read,
        Step::Nothing => Act::Nothing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn obs(address: Option<&str>, poll: Option<&str>) -> Observed {
        Observed {
            info: CatalogInfo::default(),
            source: address.map_or(Source::None, |a| Source::Grpc(a.to_string())),
            secrets: Vec::new(),
            content_marks: (poll.map(str::to_string), None, None),
        }
    }

    fn img(image: &str, poll: Option<&str>) -> Observed {
        Observed {
            info: CatalogInfo::default(),
            source: Source::Image(image.to_string()),
            secrets: Vec::new(),
            content_marks: (poll.map(str::to_string), None, None),
        }
    }

    fn cm(name: &str, rv: &str) -> Observed {
        Observed {
            info: CatalogInfo::default(),
            source: Source::ConfigMap(name.to_string()),
            secrets: Vec::new(),
            content_marks: (None, None, Some(rv.to_string())),
        }
    }

    #[rstest]
    #[case::first_with_address(None, obs(Some("a:1"), None), Step::Connect("a:1".into()))]
    #[case::first_without_address(None, obs(None, None), Step::Clear)]
    #[case::address_gone(Some(obs(Some("a:1"), None)), obs(None, None), Step::Clear)]
    #[case::still_no_address(Some(obs(None, None)), obs(None, Some("t")), Step::Nothing)]
    #[case::address_changed(Some(obs(Some("a:1"), None)), obs(Some("b:1"), None), Step::Connect("b:1".into()))]
    #[case::unchanged(
        Some(obs(Some("a:1"), Some("t1"))),
        obs(Some("a:1"), Some("t1")),
        Step::Nothing
    )]
    #[case::polled(
        Some(obs(Some("a:1"), Some("t1"))),
        obs(Some("a:1"), Some("t2")),
        Step::Read
    )]
    #[case::config_map_first(None, cm("c", "1"), Step::ReadConfigMap)]
    #[case::config_map_loaded_again(Some(cm("c", "1")), cm("c", "2"), Step::ReadConfigMap)]
    #[case::config_map_unchanged(Some(cm("c", "1")), cm("c", "1"), Step::Nothing)]
    #[case::grpc_to_config_map(Some(obs(Some("a:1"), None)), cm("c", "1"), Step::ReadConfigMap)]
    #[case::config_map_to_grpc(Some(cm("c", "1")), obs(Some("a:1"), None), Step::Connect("a:1".into()))]
    #[case::image_first(None, img("r/c:1", None), Step::ReadImage)]
    #[case::image_polled(
        Some(img("r/c:1", Some("t1"))),
        img("r/c:1", Some("t2")),
        Step::ReadImage
    )]
    #[case::image_unchanged(
        Some(img("r/c:1", Some("t1"))),
        img("r/c:1", Some("t1")),
        Step::Nothing
    )]
    #[case::image_to_grpc(Some(img("r/c:1", None)), obs(Some("a:1"), None), Step::Connect("a:1".into()))]
    fn steps(#[case] previous: Option<Observed>, #[case] now: Observed, #[case] want: Step) {
        assert_eq!(step(previous.as_ref(), &now), want);
    }

    #[rstest]
    #[case::unchanged_and_not_asked(
        Some(obs(Some("a:1"), None)),
        obs(Some("a:1"), None),
        false,
        false,
        Act::Nothing
    )]
    #[case::ready_or_resync_reads_again(
        Some(obs(Some("a:1"), None)),
        obs(Some("a:1"), None),
        true,
        false,
        Act::Read
    )]
    #[case::resync_reads_a_config_map_again(
        Some(cm("c", "1")),
        cm("c", "1"),
        true,
        false,
        Act::Read
    )]
    #[case::resync_reads_an_image_again(
        Some(img("r/c:1", None)),
        img("r/c:1", None),
        true,
        false,
        Act::Read
    )]
    #[case::resync_without_a_source_reads_nothing(
        Some(obs(None, None)),
        obs(None, None),
        true,
        false,
        Act::Nothing
    )]
    #[case::lost_connection_removes_the_packages(
        Some(obs(Some("a:1"), None)),
        obs(Some("a:1"), None),
        false,
        true,
        Act::Clear
    )]
    #[case::lost_connection_is_not_read_on_a_poll(
        Some(obs(Some("a:1"), Some("t1"))),
        obs(Some("a:1"), Some("t2")),
        true,
        true,
        Act::Clear
    )]
    #[case::polled(
        Some(obs(Some("a:1"), Some("t1"))),
        obs(Some("a:1"), Some("t2")),
        false,
        false,
        Act::Read
    )]
    #[case::new_address_connects_even_if_the_old_one_was_lost(Some(obs(Some("a:1"), None)), obs(Some("b:1"), None), false, true, Act::Connect("b:1".into()))]
    #[case::address_gone(
        Some(obs(Some("a:1"), None)),
        obs(None, None),
        false,
        false,
        Act::Clear
    )]
    #[case::config_map_changed(Some(cm("c", "1")), cm("c", "2"), false, false, Act::Read)]
    #[case::first_image(None, img("r/c:1", None), false, false, Act::Read)]
    fn decisions(
        #[case] previous: Option<Observed>,
        #[case] now: Observed,
        #[case] asked: bool,
        #[case] lost: bool,
        #[case] want: Act,
    ) {
        assert_eq!(decide(previous.as_ref(), &now, asked, lost), want);
    }
}
