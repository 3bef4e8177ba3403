//! Install and upgrade durations, observed once per CSV when this process sees it move to Succeeded:
//! an install (no `spec.replaces`) is measured from the creation of the Subscription that installs it (else the
//! CSV's own creation, for a CSV created directly), an upgrade from the replacing CSV's creation. A CSV first seen
//! already Succeeded (an operator restart) is not observed: its duration is not known here.

use crate::metrics::Series;
use k8s_openapi::jiff::Timestamp;
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::subscription::Subscription;

use crate::metrics::DurationKind as Kind;

/// What to observe for a series change `previous → now` (pure).
pub fn to_observe(
    previous: Option<&Series>,
    now: &Series,
    replaces: bool,
    started: Option<Timestamp>,
    at: Timestamp,
) -> Option<(Kind, f64)> {
    let previous = previous?;
    if now.phase != "Succeeded" || previous.phase == "Succeeded" || previous.name != now.name {
        return None;
    }
    let seconds = at.duration_since(started?).as_secs_f64();
    if seconds < 0.0 {
        return None;
    }
    Some((
        if replaces {
            Kind::Upgrade
        } else {
            Kind::Install
        },
        seconds,
    ))
}

/// When the install or upgrade of `csv` started: the Subscription naming it (installed or current) for an
/// install, else the CSV's creation.
pub fn started<'a>(
    csv: &ClusterServiceVersion,
    subscriptions: impl IntoIterator<Item = &'a Subscription>,
) -> Option<Timestamp> {
    let created = csv.metadata.creation_timestamp.as_ref().map(|t| t.0);
    if csv.spec.replaces.is_some() {
        return created;
    }
    let (name, namespace) = (
        csv.metadata.name.as_deref()?,
        csv.metadata.namespace.as_deref(),
    );
    subscriptions
        .into_iter()
        .find(|s| {
            s.metadata.namespace.as_deref() == namespace
                && s.status
                    .as_ref()
                    .is_some_and(|st| st.installed_csv == name || st.current_csv == name)
        })
        .and_then(|s| s.metadata.creation_timestamp.as_ref().map(|t| t.0))
        .or(created)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn series(name: &str, phase: &str) -> Series {
        Series {
            namespace: "ns".into(),
            name: name.into(),
            version: "1.0.0".into(),
            phase: phase.into(),
            reason: String::new(),
        }
    }

    fn ts(s: i64) -> Timestamp {
        Timestamp::from_second(s).expect("timestamp")
    }

    #[rstest]
    #[case::install_completes(Some("Installing"), "Succeeded", false, Some(100), Some((Kind::Install, 20.0)))]
    #[case::upgrade_completes(Some("Installing"), "Succeeded", true, Some(110), Some((Kind::Upgrade, 10.0)))]
    #[case::first_seen_succeeded_after_a_restart(None, "Succeeded", false, Some(100), None)]
    #[case::already_succeeded(Some("Succeeded"), "Succeeded", false, Some(100), None)]
    #[case::not_succeeded_yet(Some("Pending"), "Installing", false, Some(100), None)]
    #[case::unknown_start(Some("Installing"), "Succeeded", false, None, None)]
    #[case::start_in_the_future(Some("Installing"), "Succeeded", false, Some(130), None)]
    fn durations_are_observed_once_on_the_move_to_succeeded(
        #[case] previous: Option<&str>,
        #[case] phase: &str,
        #[case] replaces: bool,
        #[case] started: Option<i64>,
        #[case] want: Option<(Kind, f64)>,
    ) {
        let previous = previous.map(|p| series("a.v1", p));
        let got = to_observe(
            previous.as_ref(),
            &series("a.v1", phase),
            replaces,
            started.map(ts),
            ts(120),
        );
        assert_eq!(got, want);
    }
}
