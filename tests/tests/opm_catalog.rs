//! opm as a peer on the light cluster: the FBC that olm-rs's `registry render` makes of a real bundle package
//! (apicurito, from `../shared/catalogs`) passes `opm validate`; `opm serve` serves it behind an `address`
//! CatalogSource; and olm-rs installs from opm's registry, starting at apicurito.v1.0.2 and upgrading along
//! `replaces` to the channel head apicurito.v1.0.3, which ends `Succeeded` while v1.0.2 is gone.

use kube::Api;
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::subscription::SubscriptionState;
use olm_tests::catalog_fixture::*;
use olm_tests::{
    Cluster, await_object, bin_path, eventually, peer_bin_dir, shared_catalogs, with_namespace,
};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(180);

/// `opm serve`, killed on drop.
struct OpmServe(Child);

impl Drop for OpmServe {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn run(cmd: &mut Command, what: &str) -> anyhow::Result<String> {
    let out = cmd.stdin(Stdio::null()).output()?;
    anyhow::ensure!(
        out.status.success(),
        "{what} failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// olm-rs renders the package into `dir/<package>/catalog.json`.
fn render(package: &Path, dir: &Path) -> anyhow::Result<()> {
    let out = dir.join("apicurito");
    std::fs::create_dir_all(&out)?;
    run(
        Command::new(bin_path("registry")?)
            .arg("render")
            .arg(package)
            .arg("--output")
            .arg(out.join("catalog.json")),
        "registry render",
    )?;
    Ok(())
}

#[tokio::test]
async fn olm_rs_installs_and_upgrades_from_opm_serving_the_fbc_olm_rs_rendered()
-> anyhow::Result<()> {
    let package = shared_catalogs()?.join("community-operators-prod-bundles/operators/apicurito");
    let opm = peer_bin_dir("opm")?.join("opm");
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "opm-catalog", |ctx| async move {
        let dir = std::env::temp_dir().join(format!("olm-rs-{}", ctx.namespace));
        let catalog = dir.join("catalog");
        render(&package, &catalog)?;
        run(
            Command::new(&opm).arg("validate").arg(&catalog),
            "opm validate",
        )?;

        let port = free_port()?;
        let log = std::fs::File::create(dir.join("opm-serve.log"))?;
        let _opm = OpmServe(
            Command::new(&opm)
                .arg("serve")
                .arg(&catalog)
                .args(["-p", &port.to_string()])
                .stdin(Stdio::null())
                .stdout(log.try_clone()?)
                .stderr(log)
                .spawn()?,
        );
        let address = format!("127.0.0.1:{port}");
        eventually(DEADLINE, "opm serve listening", || {
            let address = address.clone();
            async move {
                Ok(tokio::net::TcpStream::connect(&address)
                    .await
                    .ok()
                    .map(|_| ()))
            }
        })
        .await?;

        let _cat = catalog_operator(&ctx, &["--registry-probe-interval", "500ms"]).await?;
        let _olm = olm_operator(&ctx).await?;
        operator_group(&ctx).await?;
        address_catalog(&ctx, "opm", &address).await?;
        subscription(
            &ctx,
            sub_to(&ctx, "apicurito", "apicurito", "opm")
                .channel("latest")
                .starting_csv("apicurito.v1.0.2")
                .approval(Approval::Automatic),
        )
        .await?;
        let sub = await_sub(&ctx, "apicurito", "upgraded to the head", |s| {
            s.state == SubscriptionState::AtLatestKnown && s.installed_csv == "apicurito.v1.0.3"
        })
        .await?;
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let head = await_object(&csvs, "apicurito.v1.0.3", DEADLINE, "Succeeded", |c| {
            c.is_some_and(|c| c.phase().as_str() == "Succeeded")
        })
        .await?;
        assert_eq!(
            head.spec.replaces.as_deref(),
            Some("apicurito.v1.0.2"),
            "the head replaces the starting CSV"
        );
        eventually(DEADLINE, "apicurito.v1.0.2 replaced and deleted", || {
            let csvs = csvs.clone();
            async move {
                Ok(csvs
                    .get_opt("apicurito.v1.0.2")
                    .await?
                    .is_none()
                    .then_some(()))
            }
        })
        .await?;
        let plans = plans(&ctx).list(&Default::default()).await?;
        assert!(
            plans.items.len() >= 2,
            "one plan to install v1.0.2 and one to upgrade: {:?}",
            plans
                .items
                .iter()
                .map(|p| &p.spec.cluster_service_version_names)
                .collect::<Vec<_>>()
        );
        drop(sub);
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    })
    .await
}
