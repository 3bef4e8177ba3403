//! Every `api.Registry` RPC through our client against our server: found, not found, and the
//! graph edge cases (channel heads, skips, skipRange, a bundle in two channels).

#![allow(
    clippy::unwrap_used,
    reason = "tests may unwrap: a panic is a test failure"
)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use registry::client::{ClientOptions, ConnectionState, RegistryClient};
use registry::store::Store;
use rstest::rstest;
use tonic::Code;

struct Running {
    client: RegistryClient,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    server: tokio::task::JoinHandle<()>,
}

impl Running {
    /// Stops the server (the client stays alive).
    async fn stop_server(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        let _ = tokio::time::timeout(Duration::from_secs(10), &mut self.server).await;
    }

    async fn stop(mut self) {
        self.stop_server().await;
    }
}

fn fixture() -> PathBuf {
    PathBuf::from(
        std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
    )
    .join("tests/fixtures/rpc/catalog.yaml")
}

async fn start_with(path: PathBuf, options: ClientOptions) -> Running {
    let catalog = catalog::Catalog::load(&[path]).expect("fixture loads");
    // Disk bodies, as `registry serve` uses by default.
    let store = Arc::new(
        Store::build_with(catalog, registry::bodies::BodyMode::Disk).expect("store builds"),
    );
    let listener = registry::server::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        registry::server::serve(store, listener, async {
            let _ = rx.await;
        })
        .await
        .expect("server runs");
    });
    let client = RegistryClient::connect(&addr.to_string(), options).unwrap();
    client
        .wait_for(ConnectionState::Ready, Duration::from_secs(10))
        .await
        .expect("client becomes READY");
    Running {
        client,
        stop: Some(tx),
        server,
    }
}

async fn start() -> Running {
    start_with(fixture(), ClientOptions::default()).await
}

#[tokio::test]
async fn list_packages_names_every_package() {
    let r = start().await;
    assert_eq!(
        r.client.list_packages().await.unwrap(),
        vec!["alpha-op", "beta-op"]
    );
    r.stop().await;
}

#[tokio::test]
async fn get_package_gives_heads_default_channel_and_deprecations() {
    let r = start().await;
    let p = r.client.get_package("alpha-op").await.unwrap();
    assert_eq!(p.default_channel_name, "stable");
    let chans: Vec<(&str, &str)> = p
        .channels
        .iter()
        .map(|c| (c.name.as_str(), c.csv_name.as_str()))
        .collect();
    assert_eq!(
        chans,
        vec![("beta", "a.v3.0.0"), ("stable", "a.v3.0.0")],
        "channels sorted by name, csvName = head"
    );
    assert_eq!(
        p.channels[0]
            .deprecation
            .as_ref()
            .map(|d| d.message.as_str()),
        Some("beta is deprecated, use stable")
    );
    assert!(p.deprecation.is_none());
    let b = r.client.get_package("beta-op").await.unwrap();
    assert_eq!(
        b.deprecation.map(|d| d.message),
        Some("beta-op is deprecated".to_string())
    );
    r.stop().await;
}

#[tokio::test]
async fn get_bundle_is_trimmed_and_carries_everything_else() {
    let r = start().await;
    let b = r
        .client
        .get_bundle("alpha-op", "stable", "a.v3.0.0")
        .await
        .unwrap();
    assert_eq!(
        (
            b.csv_name.as_str(),
            b.package_name.as_str(),
            b.channel_name.as_str()
        ),
        ("a.v3.0.0", "alpha-op", "stable")
    );
    assert_eq!(b.version, "3.0.0");
    assert_eq!(b.bundle_path, "quay.io/example/alpha-bundle:3.0.0");
    assert_eq!(
        b.skip_range, ">=1.0.0 <3.0.0",
        "skipRange comes from this channel's entry"
    );
    assert_eq!(
        (b.replaces.as_str(), b.skips.len()),
        ("", 0),
        "GetBundle trims replaces and skips"
    );
    let provided: Vec<String> = b
        .provided_apis
        .iter()
        .map(|g| format!("{}/{}/{}:{}", g.group, g.version, g.kind, g.plural))
        .collect();
    assert_eq!(
        provided,
        vec!["example.com/v1/Widget:", "example.com/v1/Gadget:"],
        "property order, plural empty"
    );
    assert_eq!(b.required_apis.len(), 1);
    let deps: Vec<(String, String)> = b
        .dependencies
        .iter()
        .map(|d| (d.r#type.clone(), d.value.clone()))
        .collect();
    assert_eq!(
        deps,
        vec![
            (
                "olm.gvk".to_string(),
                r#"{"group":"other.io","kind":"Thing","version":"v1"}"#.to_string()
            ),
            (
                "olm.package".to_string(),
                r#"{"packageName":"beta-op","version":">=1.0.0"}"#.to_string()
            ),
        ]
    );
    let types: Vec<&str> = b.properties.iter().map(|p| p.r#type.as_str()).collect();
    assert_eq!(
        types,
        vec![
            "olm.package",
            "olm.gvk",
            "olm.gvk",
            "olm.gvk.required",
            "olm.package.required",
            "olm.maxOpenShiftVersion"
        ],
        "olm.csv.metadata is never sent"
    );
    assert_eq!(
        b.properties[0].value,
        r#"{"packageName":"alpha-op","version":"3.0.0"}"#
    );
    let csv: serde_json::Value = serde_json::from_str(&b.csv_json).unwrap();
    assert_eq!(
        csv["metadata"]["name"], "a.v3.0.0",
        "csvJson built from olm.csv.metadata"
    );
    assert_eq!(
        csv["spec"]["relatedImages"][0]["image"],
        "quay.io/example/alpha:3.0.0"
    );
    assert_eq!(
        csv["spec"]["icon"][0]["mediatype"], "image/svg+xml",
        "package icon spliced into the built CSV"
    );
    assert_eq!(csv["spec"]["description"], "Alpha v3");
    assert_eq!(
        b.object,
        vec![b.csv_json.clone()],
        "object = [csvJson] when the bundle has no objects"
    );
    r.stop().await;
}

#[tokio::test]
async fn the_same_bundle_has_per_channel_edges() {
    let r = start().await;
    let all = r.client.list_bundles().await.unwrap();
    let v3: Vec<(&str, &str, Vec<String>, &str)> = all
        .iter()
        .filter(|b| b.csv_name == "a.v3.0.0")
        .map(|b| {
            (
                b.channel_name.as_str(),
                b.replaces.as_str(),
                b.skips.clone(),
                b.skip_range.as_str(),
            )
        })
        .collect();
    assert_eq!(
        v3,
        vec![
            ("beta", "a.v1.0.0", vec!["a.v2.0.0".to_string()], ""),
            (
                "stable",
                "a.v2.0.0",
                vec!["a.v1.5.0".to_string()],
                ">=1.0.0 <3.0.0"
            ),
        ]
    );
    r.stop().await;
}

#[tokio::test]
async fn list_bundles_is_ordered_and_light_for_image_bundles() {
    let r = start().await;
    let all = r.client.list_bundles().await.unwrap();
    let keys: Vec<(String, String, String)> = all
        .iter()
        .map(|b| {
            (
                b.channel_name.clone(),
                b.package_name.clone(),
                b.csv_name.clone(),
            )
        })
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted, "sorted by (channel, package, bundle)");
    assert_eq!(all.len(), 7, "one copy per (package, channel, bundle)");
    for b in &all {
        if b.bundle_path.is_empty() {
            assert!(
                !b.csv_json.is_empty() && b.object.len() == 2,
                "{}: inline bundle keeps csvJson and objects",
                b.csv_name
            );
        } else {
            assert!(
                b.csv_json.is_empty() && b.object.is_empty(),
                "{}: image bundle is sent without bodies",
                b.csv_name
            );
        }
    }
    let a1 = all.iter().find(|b| b.csv_name == "a.v1.0.0").unwrap();
    assert_eq!(
        a1.deprecation.as_ref().map(|d| d.message.as_str()),
        Some("a.v1.0.0 has a bug, upgrade")
    );
    r.stop().await;
}

#[tokio::test]
async fn get_bundle_for_channel_returns_the_head_with_csv_json() {
    let r = start().await;
    let b = r
        .client
        .get_bundle_for_channel("alpha-op", "stable")
        .await
        .unwrap();
    assert_eq!(b.csv_name, "a.v3.0.0");
    assert!(!b.csv_json.is_empty());
    let inline = r
        .client
        .get_bundle_for_channel("beta-op", "fast")
        .await
        .unwrap();
    let csv: serde_json::Value = serde_json::from_str(&inline.csv_json).unwrap();
    assert_eq!(
        csv["spec"]["displayName"], "Beta",
        "inline CSV object is the csvJson"
    );
    r.stop().await;
}

#[rstest]
#[case::replaced_by_replaces("a.v1.0.0", "stable", "a.v2.0.0")]
#[case::replaced_through_skips_of_a_missing_bundle("a.v1.5.0", "stable", "a.v3.0.0")]
#[case::in_another_channel_the_edges_differ("a.v1.0.0", "beta", "a.v3.0.0")]
#[case::skipped_in_beta("a.v2.0.0", "beta", "a.v3.0.0")]
#[tokio::test]
async fn get_bundle_that_replaces_follows_replaces_and_skips(
    #[case] csv: &str,
    #[case] channel: &str,
    #[case] want: &str,
) {
    let r = start().await;
    let b = r
        .client
        .get_bundle_that_replaces(csv, "alpha-op", channel)
        .await
        .unwrap();
    assert_eq!(b.csv_name, want);
    assert!(b.replaces.is_empty(), "trimmed");
    r.stop().await;
}

#[tokio::test]
async fn skip_range_alone_does_not_make_a_replacement() {
    let r = start().await;
    // 1.2.0 is inside a.v3.0.0's skipRange, but no bundle of that name is replaced or skipped.
    let err = r
        .client
        .get_bundle_that_replaces("a.v1.2.0", "alpha-op", "stable")
        .await
        .unwrap_err();
    let s = err.status().unwrap();
    assert_eq!(
        (s.code(), s.message()),
        (
            Code::Unknown,
            r#"no entry found for package "alpha-op", channel "stable""#
        )
    );
    r.stop().await;
}

/// Which channel-entry RPC a case asks.
#[derive(Clone, Copy, Debug)]
enum Entries {
    /// `GetChannelEntriesThatReplace` of this bundle.
    Replacing(&'static str),
    /// `GetChannelEntriesThatProvide` of example.com/v1 Widget.
    Providing,
    /// `GetLatestChannelEntriesThatProvide` of example.com/v1 Widget.
    LatestProviding,
}

#[rstest]
#[case::replaces_and_skips_of_a_bundle(
    Entries::Replacing("a.v1.0.0"),
    &[("beta", "a.v3.0.0", "a.v1.0.0"), ("stable", "a.v2.0.0", "a.v1.0.0")]
)]
#[case::the_skip_of_a_missing_bundle(Entries::Replacing("a.v1.5.0"), &[("stable", "a.v3.0.0", "a.v1.5.0")])]
#[case::every_provider_and_its_skips(
    Entries::Providing,
    &[
        ("beta", "a.v1.0.0", ""),
        ("beta", "a.v2.0.0", ""),
        ("beta", "a.v3.0.0", "a.v1.0.0"),
        ("beta", "a.v3.0.0", "a.v2.0.0"),
        ("stable", "a.v1.0.0", ""),
        ("stable", "a.v2.0.0", "a.v1.0.0"),
        ("stable", "a.v3.0.0", "a.v2.0.0"),
        ("stable", "a.v3.0.0", "a.v1.5.0"),
    ]
)]
// stable's skip of a.v1.5.0 is left out: that bundle is not a member of the channel.
#[case::latest_providers_are_heads_and_member_skips(
    Entries::LatestProviding,
    &[("beta", "a.v3.0.0", "a.v1.0.0"), ("beta", "a.v3.0.0", "a.v2.0.0"), ("stable", "a.v3.0.0", "a.v2.0.0")]
)]
#[tokio::test]
async fn channel_entries_list_channel_bundle_and_replaced(
    #[case] query: Entries,
    #[case] want: &[(&str, &str, &str)],
) {
    let r = start().await;
    let entries = match query {
        Entries::Replacing(csv) => r.client.get_channel_entries_that_replace(csv).await,
        Entries::Providing => {
            r.client
                .get_channel_entries_that_provide("example.com", "v1", "Widget")
                .await
        }
        Entries::LatestProviding => {
            r.client
                .get_latest_channel_entries_that_provide("example.com", "v1", "Widget")
                .await
        }
    }
    .unwrap();
    let got: Vec<(&str, &str, &str)> = entries
        .iter()
        .map(|e| {
            (
                e.channel_name.as_str(),
                e.bundle_name.as_str(),
                e.replaces.as_str(),
            )
        })
        .collect();
    assert_eq!(got, want, "{query:?}");
    r.stop().await;
}

#[tokio::test]
async fn default_provider_comes_from_the_default_channel() {
    let r = start().await;
    let b = r
        .client
        .get_default_bundle_that_provides("example.com", "v1", "Gadget")
        .await
        .unwrap();
    assert_eq!(
        (b.csv_name.as_str(), b.channel_name.as_str()),
        ("a.v3.0.0", "stable")
    );
    let t = r
        .client
        .get_default_bundle_that_provides("other.io", "v1", "Thing")
        .await
        .unwrap();
    assert_eq!(
        (t.csv_name.as_str(), t.bundle_path.as_str()),
        ("b.v1.0.0", "")
    );
    r.stop().await;
}

#[rstest]
#[case::unknown_package("GetPackage", r#"package "nope" not found"#)]
#[case::unknown_channel("GetBundle/channel", r#"package "alpha-op", channel "nope" not found"#)]
#[case::unknown_bundle(
    "GetBundle/bundle",
    r#"package "alpha-op", channel "stable", bundle "nope" not found"#
)]
#[case::unknown_channel_head(
    "GetBundleForChannel",
    r#"package "alpha-op", channel "nope" not found"#
)]
#[case::nothing_replaces(
    "GetChannelEntriesThatReplace",
    "no channel entries found that replace a.v3.0.0"
)]
#[case::nothing_provides(
    "GetChannelEntriesThatProvide",
    r#"no channel entries found that provide group:"x.io" version:"v1" kind:"X""#
)]
#[case::no_latest_provider(
    "GetLatestChannelEntriesThatProvide",
    r#"no channel entries found that provide group:"x.io" version:"v1" kind:"X""#
)]
#[case::no_default_provider(
    "GetDefaultBundleThatProvides",
    r#"no entry found that provides group:"x.io" version:"v1" kind:"X""#
)]
#[case::provider_only_below_the_head_is_not_latest(
    "GetDefaultBundleThatProvides/old",
    r#"no entry found that provides group:"example.com" version:"v1alpha1" kind:"Widget""#
)]
#[tokio::test]
async fn not_found_answers_are_unknown_with_opm_texts(#[case] rpc: &str, #[case] message: &str) {
    let r = start().await;
    let c = &r.client;
    let err = match rpc {
        "GetPackage" => c.get_package("nope").await.map(drop),
        "GetBundle/channel" => c.get_bundle("alpha-op", "nope", "a.v1.0.0").await.map(drop),
        "GetBundle/bundle" => c.get_bundle("alpha-op", "stable", "nope").await.map(drop),
        "GetBundleForChannel" => c.get_bundle_for_channel("alpha-op", "nope").await.map(drop),
        "GetChannelEntriesThatReplace" => c
            .get_channel_entries_that_replace("a.v3.0.0")
            .await
            .map(drop),
        "GetChannelEntriesThatProvide" => c
            .get_channel_entries_that_provide("x.io", "v1", "X")
            .await
            .map(drop),
        "GetLatestChannelEntriesThatProvide" => c
            .get_latest_channel_entries_that_provide("x.io", "v1", "X")
            .await
            .map(drop),
        "GetDefaultBundleThatProvides" => c
            .get_default_bundle_that_provides("x.io", "v1", "X")
            .await
            .map(drop),
        "GetDefaultBundleThatProvides/old" => c
            .get_default_bundle_that_provides("example.com", "v1alpha1", "Widget")
            .await
            .map(drop),
        other => panic!("unknown case {other}"),
    }
    .unwrap_err();
    let s = err.status().expect("a gRPC status");
    assert_eq!((s.code(), s.message()), (Code::Unknown, message));
    assert_eq!(
        c.state(),
        ConnectionState::Ready,
        "an answered error keeps the connection READY"
    );
    r.stop().await;
}

#[tokio::test]
async fn connection_state_goes_to_transient_failure_when_the_server_stops() {
    let options = ClientOptions {
        probe_interval: Duration::from_millis(100),
        request_timeout: Duration::from_secs(2),
        ..ClientOptions::default()
    };
    let mut r = start_with(fixture(), options.clone()).await;
    let mut states = r.client.watch_state();
    r.stop_server().await;
    // Lost server: the next probe fails.
    tokio::time::timeout(
        Duration::from_secs(10),
        states.wait_for(|s| *s == ConnectionState::TransientFailure),
    )
    .await
    .expect("TRANSIENT_FAILURE within the deadline")
    .unwrap();

    // A client pointed at a closed port never becomes READY, and says so.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = closed.local_addr().unwrap();
    drop(closed);
    let c = RegistryClient::connect(&addr.to_string(), options).unwrap();
    c.wait_for(ConnectionState::TransientFailure, Duration::from_secs(10))
        .await
        .unwrap();
    assert!(c.get_package("alpha-op").await.is_err());
    c.close();
    assert_eq!(c.state(), ConnectionState::Shutdown);
}

#[tokio::test]
async fn a_client_made_before_the_server_serves_becomes_ready() {
    let options = ClientOptions {
        probe_interval: Duration::from_millis(100),
        request_timeout: Duration::from_secs(2),
        ..ClientOptions::default()
    };
    // The port is bound but not served yet when the client starts probing.
    let listener = registry::server::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let client = RegistryClient::connect(&addr.to_string(), options).unwrap();
    let store = Arc::new(Store::build(catalog::Catalog::load(&[fixture()]).unwrap()).unwrap());
    let server = tokio::spawn(registry::server::serve(
        store,
        listener,
        std::future::pending(),
    ));
    client
        .wait_for(ConnectionState::Ready, Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(client.get_package("beta-op").await.unwrap().name, "beta-op");
    server.abort();
}

#[rstest]
#[case::bodies_on_disk(registry::bodies::BodyMode::Disk)]
#[case::bodies_in_memory(registry::bodies::BodyMode::Memory)]
fn a_store_reopened_from_its_cache_answers_the_same(#[case] mode: registry::bodies::BodyMode) {
    let direct = Store::build(catalog::Catalog::load(&[fixture()]).unwrap()).unwrap();
    let dir = std::env::temp_dir().join(format!(
        "registry-cache-test-{}-{}",
        std::process::id(),
        mode.as_str()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    Store::write_cache(catalog::Catalog::load(&[fixture()]).unwrap(), &dir).unwrap();
    let cached = Store::open_cache(&dir, mode, true).unwrap();
    assert!(!dir.exists(), "the cache directory is removed once open");
    let all = |s: &Store| {
        (0..s.list_order().len())
            .map(|i| registry::query::list_bundle_at(s, i).unwrap().unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(all(&direct), all(&cached));
    assert_eq!(
        registry::query::get_bundle(&direct, "alpha-op", "stable", "a.v3.0.0").unwrap(),
        registry::query::get_bundle(&cached, "alpha-op", "stable", "a.v3.0.0").unwrap()
    );
    assert_eq!(
        direct.custom("acme.note", "alpha-op"),
        cached.custom("acme.note", "alpha-op")
    );
}
