//! The PackageManifest API (issue 18) through kube-apiserver's aggregation layer, as a user sees it with
//! kubectl: the community FBC served by a `grpc` CatalogSource in the global namespace shows in that namespace
//! and in a second one, with OLM's labels, status fields and table columns; label and field selectors; a
//! user without rights is refused; a deleted catalog takes its packages with it; a catalog that is down shows
//! nothing and breaks nothing else; a `configmap` catalog is served; a package with no readable channel is
//! left out; a new catalog head reaches `kubectl get packagemanifests -w`; a current kubectl explains the kind
//! from the OpenAPI v3 document, finds it through discovery and prints it wide.

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use messages::crd::catalog_source::CatalogSource;
use olm_tests::catalog_fixture::*;
use olm_tests::package_server_fixture::*;
use olm_tests::{Cluster, community_fbc, eventually, with_namespace};
use package_server::types::PackageManifest;
use registry::client::{ClientOptions, RegistryClient};
use std::io::BufRead;
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(90);

async fn second_namespace(client: &kube::Client, name: &str) -> anyhow::Result<()> {
    let api: Api<Namespace> = Api::all(client.clone());
    let mut ns = Namespace::default();
    ns.metadata.name = Some(name.into());
    api.create(&PostParams::default(), &ns).await?;
    Ok(())
}

async fn delete_namespace(client: &kube::Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let _ = api.delete(name, &DeleteParams::background()).await;
}

/// A token of a fresh ServiceAccount that has no rights at all (a TokenRequest: the API server mints no token
/// Secrets any more).
async fn token_without_rights(ctx: &olm_tests::TestContext) -> anyhow::Result<String> {
    let sas: Api<ServiceAccount> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let mut sa = ServiceAccount::default();
    sa.metadata.name = Some("nobody".into());
    sas.create(&PostParams::default(), &sa).await?;
    let request = TokenRequest {
        spec: TokenRequestSpec {
            expiration_seconds: Some(600),
            ..Default::default()
        },
        ..Default::default()
    };
    let minted = sas
        .create_token_request("nobody", &PostParams::default(), &request)
        .await?;
    minted
        .status
        .map(|s| s.token)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| anyhow::anyhow!("a TokenRequest without a token"))
}

#[tokio::test]
async fn the_community_catalog_is_listed_through_kubectl_in_every_namespace() -> anyhow::Result<()>
{
    let cluster = Cluster::shared()?;
    let _apiservice = exclusive().await;
    with_namespace(cluster, "pkgs", |ctx| async move {
        let fbc = community_fbc()?;
        let registry = RegistryProcess::start_on_free_port(&[fbc.as_path()])?;
        let address = format!("127.0.0.1:{}", registry.port);
        let probe = RegistryClient::connect(&address, ClientOptions::default())?;
        let want: Vec<String> = eventually(DEADLINE, "the registry serving", || async {
            Ok(probe.list_packages().await.ok())
        })
        .await?;
        let mut want = want;
        want.sort();
        let mut community = Catsrc::named("community")
            .address(&address)
            .display_name("Community Operators")
            .publisher("Red Hat")
            .build();
        community.metadata.labels = Some([("team".to_string(), "platform".to_string())].into());
        create(&ctx, community).await?;
        let other = format!("{}-other", ctx.namespace);
        second_namespace(&ctx.client, &other).await?;
        let result = async {
            let server = start(cluster, &ctx.client, &ctx.namespace).await?;
            let ns = ctx.namespace.as_str();

            // Every package of the catalog, in the global namespace and in another one.
            let listed = eventually(DEADLINE, "every package listed", || async {
                let got = names(cluster, ns, &[])?;
                Ok((got == want).then_some(got))
            })
            .await?;
            assert_eq!(listed.len(), 33, "the FBC has 33 packages");
            assert_eq!(
                names(cluster, &other, &[])?,
                want,
                "a global catalog shows in every namespace"
            );

            // Label selectors.
            assert_eq!(names(cluster, &other, &["-l", "catalog=community"])?, want);
            let all_three = format!("catalog=community,team=platform,catalog-namespace={ns}");
            assert_eq!(names(cluster, ns, &["-l", &all_three])?, want);
            assert!(names(cluster, ns, &["-l", "catalog=elsewhere"])?.is_empty());

            // Field selectors.
            let pkg = want[0].clone();
            assert_eq!(
                names(
                    cluster,
                    &other,
                    &["--field-selector", &format!("metadata.name={pkg}")]
                )?,
                std::slice::from_ref(&pkg)
            );
            assert_eq!(
                names(
                    cluster,
                    &other,
                    &["--field-selector", &format!("metadata.namespace={other}")]
                )?,
                want
            );
            let (ok, _, err) = kubectl(
                cluster,
                &[
                    "get",
                    "packagemanifests",
                    "-n",
                    ns,
                    "--field-selector",
                    "status.catalogSource=community",
                ],
            )?;
            assert!(!ok && err.contains("field label not supported"), "{err}");

            // Table output as kubectl prints it: OLM's columns and the catalog's display name.
            let (ok, table, err) = kubectl(cluster, &["get", "packagemanifests", "-n", &other])?;
            anyhow::ensure!(ok, "{err}");
            let header: Vec<&str> = table
                .lines()
                .next()
                .unwrap_or("")
                .split_whitespace()
                .collect();
            assert_eq!(header, ["NAME", "CATALOG", "AGE"]);
            assert!(
                table
                    .lines()
                    .skip(1)
                    .all(|l| l.contains("Community Operators")),
                "{table}"
            );

            // The OpenAPI document reached the aggregator: kubectl explain knows the kind.
            eventually(
                DEADLINE,
                "kubectl explain packagemanifest.status",
                || async {
                    let (ok, out, _) = kubectl(cluster, &["explain", "packagemanifest.status"])?;
                    Ok((ok && out.contains("catalogSource")).then_some(()))
                },
            )
            .await?;

            // One package in full, from the second namespace.
            let (ok, yaml, err) = kubectl(
                cluster,
                &["get", "packagemanifest", &pkg, "-n", &other, "-o", "yaml"],
            )?;
            anyhow::ensure!(ok, "{err}");
            let m: PackageManifest = serde_saphyr::from_str(&yaml)?;
            check_manifest(&m, &pkg, ns, &other)?;

            // Straight to the server, not through the aggregator: no front-proxy certificate, no user, whatever
            // the headers claim; the health check needs none.
            let path =
                format!("/apis/packages.operators.coreos.com/v1/namespaces/{ns}/packagemanifests");
            assert_eq!(direct_status(&server, &path, &[])?, "401");
            assert_eq!(
                direct_status(
                    &server,
                    &path,
                    &[
                        "-H",
                        "X-Remote-User: admin",
                        "-H",
                        "X-Remote-Group: system:masters"
                    ]
                )?,
                "401",
                "request headers count only behind a front-proxy certificate"
            );
            assert_eq!(direct_status(&server, "/healthz", &[])?, "200");

            // Someone without rights.
            let token = token_without_rights(&ctx).await?;
            let (ok, _, err) = kubectl(
                cluster,
                &["--token", &token, "get", "packagemanifests", "-n", ns],
            )?;
            assert!(
                !ok && err.contains("forbidden"),
                "a user without rights is refused: {err}"
            );

            // The catalog deleted: its packages go.
            let catalogs: Api<CatalogSource> = Api::namespaced(ctx.client.clone(), ns);
            catalogs
                .delete("community", &DeleteParams::default())
                .await?;
            eventually(DEADLINE, "the packages gone with their catalog", || async {
                Ok(names(cluster, &other, &[])?.is_empty().then_some(()))
            })
            .await?;
            anyhow::Ok(())
        }
        .await;
        delete_namespace(&ctx.client, &other).await;
        result
    })
    .await
}

fn check_manifest(
    m: &PackageManifest,
    pkg: &str,
    catalog_ns: &str,
    shown_in: &str,
) -> anyhow::Result<()> {
    assert_eq!(m.kind, "PackageManifest");
    assert_eq!(m.api_version, "packages.operators.coreos.com/v1");
    assert_eq!(m.metadata.name.as_deref(), Some(pkg));
    assert_eq!(m.metadata.namespace.as_deref(), Some(shown_in));
    let labels = m.metadata.labels.clone().unwrap_or_default();
    let label = |k: &str| labels.get(k).map(String::as_str);
    assert_eq!(label("catalog"), Some("community"));
    assert_eq!(label("catalog-namespace"), Some(catalog_ns));
    assert_eq!(label("team"), Some("platform"), "the catalog's labels");
    assert!(
        labels.contains_key("provider") && labels.contains_key("provider-url"),
        "{labels:?}"
    );
    assert!(
        labels
            .keys()
            .any(|k| k.starts_with("operatorframework.io/os.")),
        "{labels:?}"
    );
    assert!(
        labels
            .keys()
            .any(|k| k.starts_with("operatorframework.io/arch.")),
        "{labels:?}"
    );
    let s = &m.status;
    assert_eq!(s.catalog_source, "community");
    assert_eq!(s.catalog_source_namespace, catalog_ns);
    assert_eq!(s.catalog_source_display_name, "Community Operators");
    assert_eq!(s.catalog_source_publisher, "Red Hat");
    assert_eq!(s.package_name, pkg);
    assert!(!s.channels.is_empty());
    assert!(
        s.channels.iter().any(|c| c.name == s.default_channel),
        "the default channel {} is listed",
        s.default_channel
    );
    assert_eq!(labels.get("provider"), Some(&s.provider.name));
    for c in &s.channels {
        assert!(!c.current_csv.is_empty(), "channel {} has a head", c.name);
        assert!(
            !c.current_csv_desc.version.is_empty(),
            "channel {} head has a version",
            c.name
        );
        assert!(
            !c.current_csv_desc.install_modes.is_empty(),
            "channel {} head has install modes",
            c.name
        );
        assert!(
            c.entries.iter().any(|e| e.name == c.current_csv),
            "channel {} entries include its head",
            c.name
        );
        assert!(
            c.current_csv_desc.icon.is_empty(),
            "icons are not served in get"
        );
    }
    Ok(())
}

/// `kubectl get packagemanifests -w` printing `name head` lines, read on a thread.
struct Watch {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Watch {
    /// `kubectl get packagemanifests -n ns -w --no-headers` with `output` (JSON events), or the server's
    /// table (Table events) when `None`.
    fn start(cluster: &Cluster, ns: &str, output: Option<&str>) -> anyhow::Result<Self> {
        let mut args = vec!["get", "packagemanifests", "-n", ns, "-w", "--no-headers"];
        if let Some(o) = output {
            args.extend(["-o", o]);
        }
        let mut child = std::process::Command::new("kubectl")
            .args(&args)
            .env("KUBECONFIG", &cluster.kubeconfig)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stdout"))?;
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Watch { child, lines })
    }

    /// Wait for a line whose words are `words`.
    async fn expect(&self, words: &[&str], seen: &mut Vec<String>) -> anyhow::Result<()> {
        eventually(DEADLINE, &format!("a watch line {words:?}"), || {
            while let Ok(l) = self.lines.try_recv() {
                seen.push(l);
            }
            let found = seen
                .iter()
                .any(|l| l.split_whitespace().collect::<Vec<_>>() == words);
            async move { Ok(found.then_some(())) }
        })
        .await
        .map_err(|e| anyhow::anyhow!("{e}; lines so far: {seen:?}"))
    }
}

impl Watch {
    /// Wait until `count` rows for `name` were printed.
    async fn expect_rows(
        &self,
        name: &str,
        count: usize,
        seen: &mut Vec<String>,
    ) -> anyhow::Result<()> {
        eventually(DEADLINE, &format!("{count} watch rows for {name}"), || {
            while let Ok(l) = self.lines.try_recv() {
                seen.push(l);
            }
            let rows = seen
                .iter()
                .filter(|l| {
                    l.split_whitespace().next() == Some(name) && l.split_whitespace().count() >= 2
                })
                .count();
            async move { Ok((rows >= count).then_some(())) }
        })
        .await
        .map_err(|e| anyhow::anyhow!("{e}; lines so far: {seen:?}"))
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn bad_catalogs_are_left_out_and_a_new_head_reaches_a_watch() -> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    let _apiservice = exclusive().await;
    with_namespace(cluster, "pkgbad", |ctx| async move {
        let dir = std::env::temp_dir().join(format!("olm-rs-{}", ctx.namespace));
        let v1 = Catalog::with(vec![Op::new("pi", "1.0.0")]).write_file(&dir.join("v1"), "pi")?;
        let v2 = Catalog::with(vec![
            Op::new("pi", "1.0.0"),
            Op::new("pi", "2.0.0").replaces("pi.v1.0.0"),
        ])
        .write_file(&dir.join("v2"), "pi")?;
        let nochannel = write_no_channel_fbc(&dir.join("nochannel"))?;
        let port = free_port()?;
        let mut good = Some(RegistryProcess::start(&[v1.as_path()], port)?);
        let odd = RegistryProcess::start_on_free_port(&[nochannel.as_path()])?;
        address_catalog(&ctx, "good", &format!("127.0.0.1:{port}")).await?;
        address_catalog(&ctx, "odd", &format!("127.0.0.1:{}", odd.port)).await?;
        // A `configmap` catalog (read from its ConfigMap: olm-rs runs no registry pod for it).
        configmap_catalog(&ctx, "cm", &Catalog::with(vec![Op::new("tau", "1.0.0")]), 0).await?;
        // Nothing listens there.
        address_catalog(&ctx, "down", &format!("127.0.0.1:{}", free_port()?)).await?;
        let server = start(cluster, &ctx.client, &ctx.namespace).await?;
        let ns = ctx.namespace.as_str();

        // The good catalog's package and the odd catalog's package with channels; nothing from the one that is
        // down, no error.
        eventually(DEADLINE, "pi, tau and withchannel listed", || async {
            let got = names(cluster, ns, &[])?;
            Ok((got == ["pi", "tau", "withchannel"]).then_some(()))
        })
        .await?;
        let (ok, out, err) = kubectl(
            cluster,
            &["get", "packagemanifests", "-n", ns, "-l", "catalog=down"],
        )?;
        assert!(ok, "a catalog that is down is no error: {err}");
        assert!(out.trim().is_empty(), "{out}");
        assert!(
            server
                .process
                .logs()
                .contains("package headless has no valid channels"),
            "the elided package is logged"
        );

        // A watch sees the new head once the catalog serves it (a restart of its registry, as a new image would be).
        let watch = Watch::start(
            cluster,
            ns,
            Some("custom-columns=NAME:.metadata.name,HEAD:.status.channels[0].currentCSV"),
        )?;
        // The same watch as kubectl prints it by default: rows of the server's Table.
        let table_watch = Watch::start(cluster, ns, None)?;
        let mut seen = Vec::new();
        watch.expect(&["pi", "pi.v1.0.0"], &mut seen).await?;
        let mut table_seen = Vec::new();
        table_watch.expect_rows("pi", 1, &mut table_seen).await?;
        drop(good.take());
        // Down: its packages disappear (as OLM, on TRANSIENT_FAILURE).
        eventually(DEADLINE, "pi gone while its registry is down", || async {
            Ok((names(cluster, ns, &[])? == ["tau", "withchannel"]).then_some(()))
        })
        .await?;
        let _good = RegistryProcess::start(&[v2.as_path()], port)?;
        watch.expect(&["pi", "pi.v2.0.0"], &mut seen).await?;
        // Its deletion while down and its return: two more rows (NAME, CATALOG, AGE).
        table_watch.expect_rows("pi", 3, &mut table_seen).await?;
        let (ok, yaml, err) = kubectl(
            cluster,
            &["get", "packagemanifest", "pi", "-n", ns, "-o", "yaml"],
        )?;
        anyhow::ensure!(ok, "{err}");
        let m: PackageManifest = serde_saphyr::from_str(&yaml)?;
        let entries: Vec<_> = m.status.channels[0]
            .entries
            .iter()
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(entries, ["pi.v2.0.0", "pi.v1.0.0"]);
        drop(server);
        let _ = std::fs::remove_dir_all(&dir);
        anyhow::Ok(())
    })
    .await
}

/// An FBC with a package whose channel head has a CSV, and one whose only bundle carries no CSV at all (a valid
/// catalog cannot hold a package without channels: opm and `registry serve` refuse it; what reaches the server is
/// a package none of whose channels has a readable head, which OLM leaves out as "no valid channels").
fn write_no_channel_fbc(dir: &std::path::Path) -> anyhow::Result<std::path::PathBuf> {
    std::fs::create_dir_all(dir)?;
    let bundle = |pkg: &str, name: &str, with_csv: bool| {
        let mut properties = vec![
            serde_json::json!({"type": "olm.package", "value": {"packageName": pkg, "version": "1.0.0"}}),
        ];
        if with_csv {
            properties.push(serde_json::json!({"type": "olm.bundle.object", "value": {"data": base64_csv(name)}}));
        }
        serde_json::json!({"schema": "olm.bundle", "name": name, "package": pkg, "image": format!("example.com/{name}:1"),
            "properties": properties})
    };
    let docs = [
        serde_json::json!({"schema": "olm.package", "name": "withchannel", "defaultChannel": "stable"}),
        serde_json::json!({"schema": "olm.channel", "package": "withchannel", "name": "stable", "entries": [{"name": "withchannel.v1.0.0"}]}),
        bundle("withchannel", "withchannel.v1.0.0", true),
        serde_json::json!({"schema": "olm.package", "name": "headless", "defaultChannel": "stable"}),
        serde_json::json!({"schema": "olm.channel", "package": "headless", "name": "stable", "entries": [{"name": "headless.v1.0.0"}]}),
        bundle("headless", "headless.v1.0.0", false),
    ];
    let text: String = docs.iter().map(|d| format!("{d}\n")).collect();
    let path = dir.join("catalog.json");
    std::fs::write(&path, text)?;
    Ok(dir.to_path_buf())
}

fn base64_csv(name: &str) -> String {
    use base64::Engine;
    let csv = serde_json::json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
        "metadata": {"name": name}, "spec": {"version": "1.0.0", "displayName": name,
        "installModes": [{"type": "AllNamespaces", "supported": true}],
        "install": {"strategy": "deployment", "spec": {"deployments": []}}}});
    base64::engine::general_purpose::STANDARD.encode(csv.to_string())
}

/// The minor version of the kubectl on PATH (the plane's, `hack/control-plane.sh env`).
fn kubectl_minor(cluster: &Cluster) -> anyhow::Result<u32> {
    let (ok, out, err) = kubectl(cluster, &["version", "--client", "-o", "json"])?;
    anyhow::ensure!(ok, "kubectl version: {err}");
    let v: serde_json::Value = serde_json::from_str(&out)?;
    v["clientVersion"]["minor"]
        .as_str()
        .and_then(|m| m.trim_end_matches('+').parse().ok())
        .ok_or_else(|| anyhow::anyhow!("no client minor version in {out}"))
}

/// The hex SHA-512 of `body`, in upper case as kube-openapi writes hashes.
fn sha512_hex(body: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha512::digest(body)
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect()
}

/// A current kubectl against the aggregated API: `explain` reads the server's OpenAPI v3 document through the
/// aggregator (a field's schema, and the whole tree with `--recursive`), `api-resources` reads discovery, `get
/// -o wide` prints the server's Table. Underneath: the aggregator's `/openapi/v3` names the group-version with
/// the hash of the document it then serves, the server's own; straight to the server, `/apis` with the
/// aggregator's Accept is an `apidiscovery.k8s.io/v2` list (revalidated by ETag), and a stale hash is
/// redirected to the current one.
#[tokio::test]
async fn a_current_kubectl_explains_discovers_and_lists_packagemanifests() -> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    let minor = kubectl_minor(cluster)?;
    anyhow::ensure!(
        minor >= 30,
        "kubectl 1.{minor} on PATH: this test needs a current one (eval \"$(hack/control-plane.sh env)\")"
    );
    let _apiservice = exclusive().await;
    with_namespace(cluster, "pkgctl", |ctx| async move {
        let fbc = community_fbc()?;
        let registry = RegistryProcess::start_on_free_port(&[fbc.as_path()])?;
        let address = format!("127.0.0.1:{}", registry.port);
        let community = Catsrc::named("community")
            .address(&address)
            .display_name("Community Operators")
            .publisher("Red Hat");
        create(&ctx, community.build()).await?;
        let server = start(cluster, &ctx.client, &ctx.namespace).await?;
        let ns = ctx.namespace.as_str();
        eventually(DEADLINE, "the 33 packages listed", || async {
            Ok((names(cluster, ns, &[])?.len() == 33).then_some(()))
        })
        .await?;

        // kubectl explain: the schema of one field, from the OpenAPI v3 document.
        let explained = eventually(
            DEADLINE,
            "kubectl explain packagemanifests.status.channels",
            || async {
                let (ok, out, _) =
                    kubectl(cluster, &["explain", "packagemanifests.status.channels"])?;
                Ok((ok && out.contains("FIELD: channels")).then_some(out))
            },
        )
        .await?;
        for want in [
            "GROUP:      packages.operators.coreos.com",
            "KIND:       PackageManifest",
            "VERSION:    v1",
            "FIELD: channels <[]PackageChannel>",
            "Channels are the declared channels for the package",
            "currentCSV\t<string> -required-",
            "currentCSVDesc\t<CSVDescription>",
            "entries\t<[]ChannelEntry>",
            "name\t<string> -required-",
        ] {
            assert!(explained.contains(want), "{want:?} not in:\n{explained}");
        }
        let (ok, tree, err) = kubectl(cluster, &["explain", "packagemanifests", "--recursive"])?;
        anyhow::ensure!(ok, "kubectl explain --recursive: {err}");
        for want in [
            "catalogSourceDisplayName",
            "currentCSVDesc",
            "installModes",
            "base64data",
            "creationTimestamp",
        ] {
            assert!(
                tree.contains(want),
                "{want:?} not in the recursive explain:\n{tree}"
            );
        }

        // kubectl api-resources: the resource as OLM's packageserver declares it.
        let (ok, out, err) = kubectl(
            cluster,
            &[
                "api-resources",
                "--api-group=packages.operators.coreos.com",
                "-o",
                "wide",
            ],
        )?;
        anyhow::ensure!(ok, "kubectl api-resources: {err}");
        let rows: Vec<Vec<&str>> = out
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(rows.len(), 2, "{out}");
        assert_eq!(
            rows[0],
            [
                "NAME",
                "SHORTNAMES",
                "APIVERSION",
                "NAMESPACED",
                "KIND",
                "VERBS",
                "CATEGORIES"
            ]
        );
        assert_eq!(
            rows[1],
            [
                "packagemanifests",
                "packages.operators.coreos.com/v1",
                "true",
                "PackageManifest",
                "get,list,watch"
            ]
        );

        // kubectl get -o wide: the server's Table, every package.
        let (ok, table, err) = kubectl(
            cluster,
            &["get", "packagemanifests", "-n", ns, "-o", "wide"],
        )?;
        anyhow::ensure!(ok, "kubectl get -o wide: {err}");
        let header: Vec<&str> = table
            .lines()
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        assert_eq!(header, ["NAME", "CATALOG", "AGE"]);
        assert_eq!(
            table
                .lines()
                .skip(1)
                .filter(|l| l.contains("Community Operators"))
                .count(),
            33,
            "{table}"
        );

        // The aggregator's OpenAPI v3 index names our document by its hash, and serves that document.
        let (ok, index, err) = kubectl(cluster, &["get", "--raw", "/openapi/v3"])?;
        anyhow::ensure!(ok, "GET /openapi/v3: {err}");
        let index: serde_json::Value = serde_json::from_str(&index)?;
        let url = index["paths"]["apis/packages.operators.coreos.com/v1"]["serverRelativeURL"]
            .as_str()
            .ok_or_else(|| anyhow::anyhow!("the group-version is not in the index: {index}"))?
            .to_string();
        let hash = url
            .split_once("?hash=")
            .map(|(_, h)| h.to_string())
            .unwrap_or_default();
        let out = std::process::Command::new("kubectl")
            .args(["get", "--raw", &url])
            .env("KUBECONFIG", &cluster.kubeconfig)
            .output()?;
        anyhow::ensure!(
            out.status.success(),
            "GET {url}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(sha512_hex(&out.stdout), hash, "the hash is the document's");
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout)?;
        assert_eq!(doc["openapi"], "3.0.0");

        // Straight to the server, as the aggregator asks: aggregated discovery, revalidated by its ETag.
        let accept = "Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
        let fresh = as_aggregator(cluster, &server, "/apis", &[accept])?;
        assert_eq!(fresh.status, 200);
        assert_eq!(
            fresh.header("content-type"),
            Some("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
        );
        let list: serde_json::Value = serde_json::from_slice(&fresh.body)?;
        assert_eq!(list["kind"], "APIGroupDiscoveryList");
        assert_eq!(
            list["items"][0]["versions"][0]["resources"][0]["resource"],
            "packagemanifests"
        );
        let etag = fresh.header("etag").unwrap_or_default().to_string();
        let cached = as_aggregator(
            cluster,
            &server,
            "/apis",
            &[accept, &format!("If-None-Match: {etag}")],
        )?;
        assert_eq!(cached.status, 304);
        let legacy = as_aggregator(cluster, &server, "/apis", &["Accept: application/json"])?;
        let groups: serde_json::Value = serde_json::from_slice(&legacy.body)?;
        assert_eq!(
            groups["kind"], "APIGroupList",
            "without the profile, the unaggregated answer"
        );

        // That document is the server's own (not one the aggregator converted from v2), immutable under its
        // hash; a stale hash is redirected to the current one.
        let current = as_aggregator(cluster, &server, &url, &[])?;
        assert_eq!(current.status, 200);
        assert_eq!(current.header("cache-control"), Some("public, immutable"));
        assert!(
            current.body == out.stdout,
            "the aggregator serves the server's document as is"
        );
        let stale = as_aggregator(
            cluster,
            &server,
            "/openapi/v3/apis/packages.operators.coreos.com/v1?hash=0BAD",
            &[],
        )?;
        assert_eq!(stale.status, 301);
        assert_eq!(stale.header("location"), Some(url.as_str()));
        anyhow::Ok(())
    })
    .await
}
