//! The CA bundles through a certificate rotation, pure: which CAs a webhook configuration, CRD conversion or
//! APIService trusts in which state. A bundle is PEM blocks, the newest CA first, each kept byte for byte (the
//! newest block hashes to the `olmcahash` of the deployments that serve with it).
//!
//! ```text
//! state                                        bundle
//! fresh install                                [new]
//! rotation: new CA issued, before its Secret   [new, previous...]   Keep::Previous (previous still valid)
//!   and pods exist, while the rollout runs     [new, previous...]   (old pods still serve the previous CA)
//! rolled out, SETTLE after the rollout ended   [new]                Keep::CurrentOnly (old pods gone)
//! ```
//!
//! So the API server trusts every CA a pod behind the Service may serve with, at every moment of the
//! rotation: the new CA is published before any pod can serve it, and the previous one is dropped only once
//! no pod serving it is routed to.

use super::certs;
use std::time::Duration;

/// How long after a rollout completed the previous CA stays trusted: the old pods are terminating by then,
/// and the endpoints the API server routes by must have dropped them.
pub const SETTLE: Duration = Duration::from_secs(5);

/// Which CAs of the live bundle to keep beside the current one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// Every other CA of the live bundle still valid at `now` (unix seconds): a rollout may run.
    Previous { now: i64 },
    /// Only the current CA: the rolled deployments settled.
    CurrentOnly,
}

const BEGIN: &[u8] = b"-----BEGIN ";
const END: &[u8] = b"-----END ";

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The PEM blocks of a bundle, each with the line ending after its END line; a bundle without any PEM block
/// is one opaque block (so a garbage bundle is still judged, not skipped).
pub fn blocks(bundle: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = bundle;
    while let Some(start) = find(rest, BEGIN) {
        let block = &rest[start..];
        let Some(end) = find(block, END) else {
            break;
        };
        let len = block[end..]
            .iter()
            .position(|b| *b == b'\n')
            .map_or(block.len(), |p| end + p + 1);
        out.push(&block[..len]);
        rest = &block[len..];
    }
    if out.is_empty() && !bundle.trim_ascii().is_empty() {
        out.push(bundle);
    }
    out
}

/// The newest CA of a bundle (its first block).
pub fn newest(bundle: &[u8]) -> Option<&[u8]> {
    blocks(bundle).into_iter().next()
}

/// Does the bundle's newest CA have this `olmcahash`? (With or without the line ending after it, whichever
/// way the CA's PEM was written.)
pub fn newest_is(bundle: &[u8], hash: &str) -> bool {
    newest(bundle).is_some_and(|b| {
        certs::ca_hash(b) == hash
            || certs::ca_hash(b.trim_ascii_end()) == hash
            || certs::ca_hash(bundle) == hash
    })
}

/// Does the bundle trust more than its newest CA?
pub fn trusts_previous(bundle: &[u8]) -> bool {
    blocks(bundle).len() > 1
}

/// The bundle to write: `current` (one CA PEM) first, then, with [`Keep::Previous`], every other CA of the
/// live bundle still valid, once each.
pub fn compose(current: &[u8], live: Option<&[u8]>, keep: Keep) -> Vec<u8> {
    let mut out = current.to_vec();
    let Keep::Previous { now } = keep else {
        return out;
    };
    let mut seen = vec![current.trim_ascii()];
    for block in blocks(live.unwrap_or_default()) {
        let key = block.trim_ascii();
        if seen.contains(&key) || certs::usable_ca(block, now).is_err() {
            continue;
        }
        seen.push(key);
        if !out.is_empty() && !out.ends_with(b"\n") {
            out.push(b'\n');
        }
        out.extend_from_slice(block);
    }
    out
}

/// Time left before the previous CAs may go, the latest rollout of the serving deployments having completed
/// at `completed_at` (unix seconds; unknown: now).
pub fn settle_in(completed_at: Option<i64>, now: i64) -> Duration {
    let Some(done) = completed_at else {
        return Duration::ZERO;
    };
    let left = done
        .saturating_add(i64::try_from(SETTLE.as_secs()).unwrap_or(i64::MAX))
        .saturating_sub(now)
        .max(0);
    Duration::from_secs(u64::try_from(left).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::csv::served::certs::{Lifetime, issue};
    use rstest::rstest;

    const NOW: i64 = 1_800_000_000;

    /// Three CAs, issued once: `old` (valid 100 s from NOW-90), `new` (from NOW), `expired` (ended before NOW).
    fn cas() -> &'static (String, String, String) {
        static CAS: std::sync::OnceLock<(String, String, String)> = std::sync::OnceLock::new();
        CAS.get_or_init(|| {
            let hosts = ["s.ns".to_string()];
            let short = Lifetime::with_validity(Duration::from_secs(100));
            let ca = |from: i64| issue(&hosts, from, short).expect("issued").ca_pem;
            (ca(NOW - 90), ca(NOW), ca(NOW - 200))
        })
    }

    fn pick(name: &str) -> String {
        let (old, new, expired) = cas();
        match name {
            "old" => old.clone(),
            "new" => new.clone(),
            "expired" => expired.clone(),
            other => other.to_string(),
        }
    }

    fn names_of(bundle: &[u8], all: &[(&str, String)]) -> Vec<String> {
        blocks(bundle)
            .iter()
            .map(|b| {
                all.iter()
                    .find(|(_, pem)| pem.as_bytes() == *b)
                    .map_or_else(
                        || String::from_utf8_lossy(b).into_owned(),
                        |(n, _)| n.to_string(),
                    )
            })
            .collect()
    }

    #[rstest]
    #[case::a_fresh_install_trusts_the_new_ca(None, Keep::Previous { now: NOW }, &["new"])]
    #[case::a_rotation_keeps_the_previous_ca_beside_the_new(Some(&["old"][..]), Keep::Previous { now: NOW }, &["new", "old"])]
    #[case::a_retried_rotation_does_not_repeat_a_ca(Some(&["new", "old"][..]), Keep::Previous { now: NOW }, &["new", "old"])]
    #[case::an_expired_previous_ca_is_dropped(Some(&["old", "expired"][..]), Keep::Previous { now: NOW }, &["new", "old"])]
    #[case::a_previous_ca_expiring_meanwhile_is_dropped(Some(&["old"][..]), Keep::Previous { now: NOW + 20 }, &["new"])]
    #[case::garbage_in_the_live_bundle_is_dropped(Some(&["garbage"][..]), Keep::Previous { now: NOW }, &["new"])]
    #[case::settled_deployments_trust_only_the_new_ca(Some(&["new", "old"][..]), Keep::CurrentOnly, &["new"])]
    fn which_cas_a_bundle_holds(
        #[case] live: Option<&[&str]>,
        #[case] keep: Keep,
        #[case] expected: &[&str],
    ) {
        let live = live.map(|names| names.iter().map(|n| pick(n)).collect::<String>());
        let bundle = compose(
            pick("new").as_bytes(),
            live.as_deref().map(str::as_bytes),
            keep,
        );
        let all = [
            ("old", pick("old")),
            ("new", pick("new")),
            ("expired", pick("expired")),
        ];
        assert_eq!(names_of(&bundle, &all), expected);
        assert!(
            newest_is(&bundle, &certs::ca_hash(pick("new").as_bytes())),
            "the newest block is the current CA, by its olmcahash"
        );
        assert_eq!(trusts_previous(&bundle), expected.len() > 1);
    }

    #[rstest]
    #[case::the_newest_of_a_rotation_is_the_new_ca("new", &["new", "old"], true)]
    #[case::a_deployment_still_on_the_old_ca_is_not_the_newest("old", &["new", "old"], false)]
    #[case::a_single_ca_bundle("new", &["new"], true)]
    #[case::another_ca("old", &["new"], false)]
    fn the_newest_ca_is_the_one_pods_must_serve_with(
        #[case] serving: &str,
        #[case] bundle: &[&str],
        #[case] newest: bool,
    ) {
        let bundle: String = bundle.iter().map(|n| pick(n)).collect();
        assert_eq!(
            newest_is(bundle.as_bytes(), &certs::ca_hash(pick(serving).as_bytes())),
            newest
        );
    }

    #[test]
    fn blocks_keep_their_bytes_and_an_opaque_bundle_is_one_block() {
        let joined = format!("{}{}", pick("new"), pick("old"));
        let got = blocks(joined.as_bytes());
        assert_eq!(got, vec![pick("new").as_bytes(), pick("old").as_bytes()]);
        assert_eq!(blocks(b"garbage"), vec![&b"garbage"[..]]);
        assert!(blocks(b"  \n").is_empty());
        assert!(newest_is(b"garbage", &certs::ca_hash(b"garbage")));
        // A CA written without its final newline, then followed by another.
        let bare = pick("new").trim_ascii_end().to_string();
        let bundle = compose(
            bare.as_bytes(),
            Some(pick("old").as_bytes()),
            Keep::Previous { now: NOW },
        );
        assert!(newest_is(&bundle, &certs::ca_hash(bare.as_bytes())));
        assert_eq!(blocks(&bundle).len(), 2);
    }

    #[rstest]
    #[case::unknown_completion_settles_now(None, NOW, 0)]
    #[case::just_rolled_out_waits(Some(NOW - 1), NOW, 4)]
    #[case::long_rolled_out_settles_now(Some(NOW - 60), NOW, 0)]
    fn the_previous_ca_goes_a_little_after_the_rollout(
        #[case] completed: Option<i64>,
        #[case] now: i64,
        #[case] left: u64,
    ) {
        assert_eq!(settle_in(completed, now), Duration::from_secs(left));
    }
}
