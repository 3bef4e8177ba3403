//! A certificate rotation on the full local cluster (hack/full-cluster.sh: kubelet, containerd, runc; the
//! apiserver reaches webhook pods through their endpoints, `--enable-aggregator-routing=true`) with no failed
//! request: olm-operator runs in the cluster with 120-second certificates (`OLM_RS_CERT_VALIDITY_SECONDS`,
//! set through `hack/full-cluster.sh up` and put back after), installs a CSV whose validating webhook the
//! repo's `test-webhook` image serves, and while the certificate rotates (60 s after issue) a loop sends
//! creates through the API server: allowed ones, and ones the webhook denies (a denial with the webhook's
//! message is a success; any other error, TLS or connection failure or timeout is a failed request). Asserts
//! the deployment rolled exactly once, `certsLastUpdated`/`certsRotateAt` moved, the webhook trusts the new
//! CA only, and no request failed; prints the figures. Part of the test command (about 4 minutes of cluster
//! time); cargo runs test binaries one after another, so no other full-cluster test shares the cluster while
//! olm-operator runs with short certificates.

use anyhow::Context;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Pod, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::core::GroupVersionKind;
use messages::crd::csv::{ClusterServiceVersion, CsvPhase, CsvReason, InstallModeType};
use messages::crd::operator_group::OperatorGroup;
use messages::testing::{Csv, Og, Webhook};
use olm_tests::csv_fixture::webhooks::{
    await_rotated, ca_hash_of_deployment, ca_of, sha256_hex, webhook_bundle,
};
use olm_tests::test_webhook::{TEST_WEBHOOK_PORT, test_webhook_deployment};
use olm_tests::{FullCluster, await_csv_succeeded, await_object, eventually, with_full_namespace};
use serde_json::json;
use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const GROUP: &str = "rotation.test.olm-rs.io";
const CSV: &str = "rotating-webhook.v1.0.0";
const DEPLOYMENT: &str = "rotating-webhook";
/// The Secret of the deployment's serving pair (`<deployment>-service-cert`, as OLM names it).
const SECRET: &str = "rotating-webhook-service-cert";
/// Certificates valid 120 s rotate 60 s after issue (the window is half a short validity): time for the
/// rollout and the old pod's exit before the next rotation on a busy machine (with 60 s, rotations ran back to
/// back there: a terminating pod took longer than 30 s to go).
const VALIDITY_SECONDS: u64 = 120;
const DEADLINE: Duration = Duration::from_secs(180);
/// A request slower than this is a failed request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
const DENIAL: &str = "denied by the test webhook";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_rotation_fails_no_admission_request() -> anyhow::Result<()> {
    let cluster = FullCluster::shared()?;
    cluster.set_cert_validity(Some(VALIDITY_SECONDS))?;
    let client = cluster.client().await?;
    let ns = format!("full-rotation-{}", std::process::id());
    let result = with_full_namespace(&client, &ns, "rotation proof", || async {
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        let crd_name = olm_tests::widgets::create_widget_crd(&client, GROUP, &["v1"]).await?;
        let result = rotation(&client, &ns, &crd_name).await;
        let _ = crds.delete(&crd_name, &DeleteParams::default()).await;
        result
    })
    .await;
    let restored = cluster.set_cert_validity(None);
    result.and(restored)
}

/// What the request loop saw.
#[derive(Default, Debug)]
struct Tally {
    allowed: u64,
    denied: u64,
    failed: Vec<String>,
}

/// Send creates through the API server until `stop`: every 4th is denied by the webhook; allowed ones are
/// dry runs but every 10th (admission runs for both; dry runs keep etcd small).
/// Failures say when they were sent, counted from `origin`, and how long they took.
async fn load(widgets: Api<DynamicObject>, stop: Arc<AtomicBool>, origin: Instant) -> Tally {
    let mut tally = Tally::default();
    let mut i: u64 = 0;
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        let deny = i.is_multiple_of(4);
        let widget: DynamicObject = match serde_json::from_value(json!({
            "apiVersion": format!("{GROUP}/v1"), "kind": "Widget",
            "metadata": {"name": format!("w-{i}")}, "spec": {"deny": deny}
        })) {
            Ok(w) => w,
            Err(e) => {
                tally.failed.push(format!("request {i}: {e}"));
                continue;
            }
        };
        let params = PostParams {
            dry_run: deny || i % 10 != 1,
            ..PostParams::default()
        };
        let sent = Instant::now();
        match tokio::time::timeout(REQUEST_TIMEOUT, widgets.create(&params, &widget)).await {
            Ok(Ok(_)) if !deny => tally.allowed += 1,
            Ok(Ok(_)) => tally
                .failed
                .push(format!("request {i}: a spec.deny widget was admitted")),
            Ok(Err(kube::Error::Api(e))) if deny && e.code == 403 && e.message.contains(DENIAL) => {
                tally.denied += 1
            }
            Ok(Err(e)) => tally.failed.push(format!(
                "request {i} (deny: {deny}) sent at {:?}, failed after {:?}: {e}",
                sent.duration_since(origin),
                sent.elapsed()
            )),
            Err(_) => tally.failed.push(format!(
                "request {i} (deny: {deny}) sent at {:?}: no answer in {REQUEST_TIMEOUT:?}",
                sent.duration_since(origin)
            )),
        }
    }
    tally
}

async fn rotation(client: &kube::Client, ns: &str, crd_name: &str) -> anyhow::Result<()> {
    let pp = PostParams::default();
    Api::<OperatorGroup>::namespaced(client.clone(), ns)
        .create(&pp, &Og::named("global").build())
        .await?;
    let validating = Webhook::validating(&format!("vwidgets.{GROUP}"), DEPLOYMENT)
        .port(TEST_WEBHOOK_PORT)
        .path("/validate")
        .failure_policy("Fail")
        .side_effects("None")
        .review_versions(&["v1"])
        .rule(&[GROUP], &["*"], &["widgets"], &["CREATE"]);
    // The webhook keeps serving 5 s after SIGTERM (its endpoint removal lags the delete).
    let deployment = test_webhook_deployment(DEPLOYMENT, &[("SHUTDOWN_DELAY_SECONDS", "5")]);
    let csv = Csv::named(CSV)
        .display_name("Rotating webhook")
        .version("1.0.0")
        .install_modes(&[
            InstallModeType::OwnNamespace,
            InstallModeType::SingleNamespace,
            InstallModeType::AllNamespaces,
        ])
        .owns_crd(crd_name, "v1", "Widget")
        .deployment_spec(DEPLOYMENT, deployment)
        .webhook(validating.build())
        .build();
    let csvs: Api<ClusterServiceVersion> = Api::namespaced(client.clone(), ns);
    csvs.create(&pp, &csv).await?;
    let first = await_csv_succeeded(client, ns, CSV, DEADLINE).await?;
    let status = first.status.clone().unwrap_or_default();
    let (first_rotate_at, first_updated) = (
        status.certs_rotate_at.clone().context("certsRotateAt")?,
        status
            .certs_last_updated
            .clone()
            .context("certsLastUpdated")?,
    );
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns);
    let before = deployments.get(DEPLOYMENT).await?;
    let generation = before.metadata.generation.unwrap_or_default();
    let replica_sets: Api<ReplicaSet> = Api::namespaced(client.clone(), ns);
    let selector = ListParams::default().labels(&format!("app={DEPLOYMENT}"));
    let sets_before = replica_sets.list(&selector).await?.items.len();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    let old_ca = ca_of(&secrets.get(SECRET).await?)?;
    let owned = ListParams::default().labels(&format!("olm.owner={CSV},olm.owner.namespace={ns}"));
    let configs = Api::<ValidatingWebhookConfiguration>::all(client.clone());

    // The webhook answers before the measure starts (its endpoint may trail the CSV's Succeeded).
    let widgets = Api::<DynamicObject>::namespaced_with(
        client.clone(),
        ns,
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(GROUP, "v1", "Widget"),
            "widgets",
        ),
    );
    let probe: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{GROUP}/v1"), "kind": "Widget", "metadata": {"name": "probe"}, "spec": {"deny": true}
    }))?;
    eventually(Duration::from_secs(60), "the webhook to deny", || {
        let (widgets, probe) = (widgets.clone(), probe.clone());
        async move {
            match widgets.create(&PostParams::default(), &probe).await {
                Err(kube::Error::Api(e)) if e.message.contains(DENIAL) => Ok(Some(())),
                Err(kube::Error::Api(_)) => Ok(None),
                Err(e) => Err(e.into()),
                Ok(_) => anyhow::bail!("a widget with spec.deny=true was admitted"),
            }
        }
    })
    .await?;

    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let loader = tokio::spawn(load(widgets.clone(), stop.clone(), started));
    let watched = async {
        await_object(
            &csvs,
            CSV,
            DEADLINE,
            "Pending/NeedsCertRotation",
            |c: Option<&ClusterServiceVersion>| {
                c.is_some_and(|c| {
                    c.phase() == CsvPhase::Pending && c.reason() == CsvReason::NeedsCertRotation
                })
            },
        )
        .await?;
        let rotation_start = Instant::now();
        eprintln!(
            "full cluster rotation: NeedsCertRotation at {:?} of the load",
            rotation_start.duration_since(started)
        );
        let rotated = await_rotated(&csvs, CSV, DEADLINE, first_rotate_at.clone())
        .await?;
        let rotation = rotation_start.elapsed();
        eprintln!("full cluster rotation: NeedsCertRotation -> Succeeded in {rotation:?}");
        // Keep sending until the rotation is over: the old pod gone (it drains for 5 s after SIGTERM) and the
        // CA bundle settled on the new CA alone, so both the old pod's shutdown and the previous CA's removal
        // are under load.
        let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
        let (gone, settled) = (Cell::new(None), Cell::new(None));
        eventually(Duration::from_secs(90), "the old pod gone and the CA bundle settled", || {
            let (pods, selector, configs, secrets) =
                (pods.clone(), selector.clone(), configs.clone(), secrets.clone());
            let (owned, gone, settled) = (owned.clone(), &gone, &settled);
            async move {
                if gone.get().is_none() && pods.list(&selector).await?.items.len() == 1 {
                    gone.set(Some(rotation_start.elapsed()));
                }
                let ca = ca_of(&secrets.get(SECRET).await?)?;
                if settled.get().is_none() && webhook_bundle(&configs, &owned).await? == ca {
                    settled.set(Some(rotation_start.elapsed()));
                }
                Ok((gone.get().is_some() && settled.get().is_some()).then_some(()))
            }
        })
        .await?;
        eprintln!(
            "full cluster rotation: after NeedsCertRotation, the old pod gone at {:?}, the CA bundle on the new CA alone at {:?}",
            gone.get(),
            settled.get()
        );
        anyhow::Ok((rotated, rotation))
    }
    .await;
    stop.store(true, Ordering::Relaxed);
    let tally = loader.await?;
    let sent = tally.allowed + tally.denied + tally.failed.len() as u64;
    eprintln!(
        "full cluster rotation: {sent} admission requests in {:?} ({} allowed, {} denied by the webhook), {} failed",
        started.elapsed(),
        tally.allowed,
        tally.denied,
        tally.failed.len()
    );
    for failure in tally.failed.iter().take(20) {
        eprintln!("  failed: {failure}");
    }
    let (rotated, _) = watched?;

    let status = rotated.status.unwrap_or_default();
    assert!(
        status.certs_last_updated.as_ref() > Some(&first_updated),
        "certsLastUpdated moved"
    );
    let after = deployments.get(DEPLOYMENT).await?;
    assert_eq!(
        after.metadata.generation.unwrap_or_default(),
        generation + 1,
        "one rotation rolls the deployment once"
    );
    assert_eq!(
        replica_sets.list(&selector).await?.items.len(),
        sets_before + 1,
        "one new ReplicaSet"
    );
    let new_ca = ca_of(&secrets.get(SECRET).await?)?;
    assert_ne!(new_ca, old_ca, "the Secret holds a new CA");
    assert_eq!(
        ca_hash_of_deployment(&after),
        Some(sha256_hex(&new_ca)),
        "the pods serve with the new CA"
    );
    let bundle = webhook_bundle(&configs, &owned).await?;
    assert_eq!(
        bundle, new_ca,
        "the webhook trusts the new CA, and only it, once settled"
    );
    assert!(
        tally.failed.is_empty(),
        "{} of {sent} admission requests failed during the rotation: {:?}",
        tally.failed.len(),
        tally.failed
    );
    assert!(
        tally.allowed > 0 && tally.denied > 0,
        "both kinds were sent: {tally:?}"
    );
    csvs.delete(CSV, &DeleteParams::default()).await?;
    Ok(())
}
