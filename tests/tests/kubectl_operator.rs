//! `kubectl operator` (github.com/operator-framework/kubectl-operator, built from its module by `hack/peers.sh`)
//! against olm-rs on the light cluster, with package-server behind the API server's aggregation layer: a catalog
//! image of the repo's sample etcd package listed and removed (`catalog add` pulls the image over HTTPS only, and
//! the tests' registry is plain HTTP: the CatalogSource is created by hand); `list-available` reading PackageManifests;
//! `install` of an older version with Manual approval (the tool approves the first plan); `upgrade` approving the
//! next one; `list`; `uninstall` with its OperatorGroup. Each step is checked both in what the tool prints and in
//! the cluster.

use kube::Api;
use messages::crd::catalog_source::CatalogSource;
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::operator_group::OperatorGroup;
use olm_tests::catalog_fixture::{Catsrc, DEADLINE, await_catalog_ready, create, subs};
use olm_tests::oci_fixture::registry_addr;
use olm_tests::{
    Cluster, OperatorProcess, TestContext, await_object, eventually, peer_bin_dir, with_namespace,
};
use std::process::Command;

/// `kubectl operator -n NS ARGS...`: (succeeded, stdout, stderr).
fn kubectl_operator(ctx: &TestContext, args: &[&str]) -> anyhow::Result<(bool, String, String)> {
    let bin = peer_bin_dir("kubectl-operator")?.join("kubectl-operator");
    let out = Command::new(bin)
        .args(["-n", &ctx.namespace])
        .args(args)
        .env("KUBECONFIG", &ctx.cluster.kubeconfig)
        .output()?;
    Ok((
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// Run it and require success; its output (stdout then stderr).
fn ok(ctx: &TestContext, args: &[&str]) -> anyhow::Result<String> {
    let (success, out, err) = kubectl_operator(ctx, args)?;
    anyhow::ensure!(
        success,
        "kubectl operator {} failed:\n{out}{err}",
        args.join(" ")
    );
    Ok(format!("{out}{err}"))
}

async fn succeeded(ctx: &TestContext, name: &str) -> anyhow::Result<()> {
    let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    await_object(&csvs, name, DEADLINE, "Succeeded", |c| {
        c.is_some_and(|c| c.phase().as_str() == "Succeeded")
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn kubectl_operator_lists_installs_upgrades_and_uninstalls_through_olm_rs()
-> anyhow::Result<()> {
    let root = olm_tests::oci_fixture::samples_catalog_dir();
    let cluster = Cluster::shared()?;
    let _one_apiservice = olm_tests::package_server_fixture::exclusive().await;
    with_namespace(cluster, "kubectl-operator", |ctx| async move {
        let registry = oci::Registry::default();
        let prefix = format!("{}/{}", registry_addr(), ctx.namespace);
        let published =
            oci::publish::push_tree(&registry, &root, &["etcd".to_string()], &prefix).await?;
        let image = format!("{prefix}/catalog:latest");
        oci::publish::push_catalog_files(
            &registry,
            vec![("configs/catalog.json".to_string(), published.fbc.clone())],
            &image,
        )
        .await?;
        let _packages =
            olm_tests::package_server_fixture::start(ctx.cluster, &ctx.client, &ctx.namespace)
                .await?;
        let ns = ctx.namespace.as_str();
        let _cat = OperatorProcess::start(
            ctx.cluster,
            "catalog-operator",
            &["--watched-namespaces", ns, "--namespace", ns],
        )
        .await?;
        let _olm = OperatorProcess::start(
            ctx.cluster,
            "olm-operator",
            &["--watched-namespaces", ns, "--namespace", ns],
        )
        .await?;

        // `catalog add` is not used: it pulls the image itself to read its labels, over HTTPS only (v0.6.0 has no
        // plain-HTTP option), and the tests' registry speaks HTTP. The CatalogSource it would create, by hand:
        let mut samples = Catsrc::named("samples")
            .image(&image)
            .display_name("olm-rs samples")
            .build();
        samples.spec.publisher = Some("olm-rs".to_string());
        create(&ctx, samples).await?;
        let catalogs: Api<CatalogSource> = Api::namespaced(ctx.client.clone(), ns);
        await_catalog_ready(&ctx, "samples").await?;
        let listed = ok(&ctx, &["catalog", "list"])?;
        anyhow::ensure!(
            listed.contains("samples") && listed.contains("olm-rs samples"),
            "catalog list: {listed}"
        );

        // list-available reads the PackageManifests package-server serves.
        let available = eventually(DEADLINE, "etcd in list-available", || {
            let ctx = &ctx;
            async move {
                let (success, out, _) = kubectl_operator(ctx, &["list-available"])?;
                Ok((success
                    && out
                        .lines()
                        .any(|l| l.starts_with("etcd ") && l.contains("olm-rs samples")))
                .then_some(out))
            }
        })
        .await?;
        anyhow::ensure!(
            available.contains("singlenamespace-alpha"),
            "list-available: {available}"
        );

        // install an older version with Manual approval: the tool approves the plan it waits for.
        let said = ok(
            &ctx,
            &[
                "install",
                "etcd",
                "--channel",
                "singlenamespace-alpha",
                "--version",
                "0.9.2",
                "--approval",
                "Manual",
                "--create-operator-group",
            ],
        )?;
        anyhow::ensure!(said.contains("etcdoperator.v0.9.2"), "install: {said}");
        succeeded(&ctx, "etcdoperator.v0.9.2").await?;
        let groups: Api<OperatorGroup> = Api::namespaced(ctx.client.clone(), ns);
        anyhow::ensure!(
            !groups.list(&Default::default()).await?.items.is_empty(),
            "install created no OperatorGroup"
        );

        // The next version waits in a Manual plan; upgrade approves it.
        await_object(&subs(&ctx), "etcd", DEADLINE, "an upgrade pending", |s| {
            s.and_then(|s| s.status.as_ref())
                .is_some_and(|s| s.state.as_str() == "UpgradePending")
        })
        .await?;
        let said = ok(&ctx, &["upgrade", "etcd"])?;
        anyhow::ensure!(said.contains("etcdoperator.v0.9.4"), "upgrade: {said}");
        succeeded(&ctx, "etcdoperator.v0.9.4").await?;
        let listed = ok(&ctx, &["list"])?;
        anyhow::ensure!(
            listed
                .lines()
                .any(|l| l.starts_with("etcd ") && l.contains("etcdoperator.v0.9.4")),
            "list: {listed}"
        );

        // uninstall finds the CSV through the Operator object's component refs (the first CSV listed), which follow
        // the upgrade: the replaced CSV drops out of them once deleted.
        let operators: Api<messages::crd::operator::Operator> = Api::all(ctx.client.clone());
        await_object(
            &operators,
            &format!("etcd.{ns}"),
            DEADLINE,
            "refs name only the new CSV",
            |o| {
                let csvs: Vec<String> = o
                    .and_then(|o| o.status.as_ref())
                    .and_then(|s| s.components.as_ref())
                    .map(|c| {
                        c.refs
                            .iter()
                            .filter(|r| r.object.kind.as_deref() == Some("ClusterServiceVersion"))
                            .filter_map(|r| r.object.name.clone())
                            .collect()
                    })
                    .unwrap_or_default();
                csvs == ["etcdoperator.v0.9.4"]
            },
        )
        .await?;
        // uninstall removes the Subscription, the CSV and, asked to, the OperatorGroup.
        ok(&ctx, &["uninstall", "etcd", "--delete-operator-groups"])?;
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), ns);
        eventually(
            DEADLINE,
            "the Subscription, CSV and OperatorGroup gone",
            || {
                let (csvs, groups, ctx) = (csvs.clone(), groups.clone(), &ctx);
                async move {
                    let sub = subs(ctx).get_opt("etcd").await?;
                    let csv = csvs.get_opt("etcdoperator.v0.9.4").await?;
                    let og = groups.list(&Default::default()).await?.items;
                    Ok((sub.is_none() && csv.is_none() && og.is_empty()).then_some(()))
                }
            },
        )
        .await?;
        ok(&ctx, &["catalog", "remove", "samples"])?;
        anyhow::ensure!(
            catalogs.get_opt("samples").await?.is_none(),
            "catalog remove left it"
        );
        Ok(())
    })
    .await
}
