//! CR validation on CRD upgrades (spec §8 scenario 32, OLM e2e installplan "CRD validation",
//! `validateV1CRDCompatibility`): an upgrade whose CRD schema rejects an existing custom resource fails its
//! plan with OLM's "error validating existing CRs against new CRD's schema" message and creates nothing (the
//! CRD stays as it was, no new CSV); once the resource is fixed and the failed plan deleted, the next plan
//! fails on a second resource only the new `pattern` refuses; once that is fixed too, the upgrade goes through.

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use messages::crd::install_plan::InstallPlanPhase;
use messages::crd::subscription::SubscriptionState;
use olm_tests::catalog_fixture::*;
use olm_tests::{Cluster, await_object, with_namespace};
use serde_json::json;

#[tokio::test]
async fn an_upgrade_whose_schema_rejects_an_existing_resource_fails_until_the_resource_is_fixed()
-> anyhow::Result<()> {
    let cluster = Cluster::shared()?;
    with_namespace(cluster, "ipcrval", |ctx| async move {
        let _op = catalog_operator(&ctx, &["--install-plan-retry-timeout", "2s"]).await?;
        let suffix = &ctx.namespace[ctx.namespace.len() - 6..];
        let loose = Crd::new("dials", &format!("{suffix}.crval.olm-rs.io"), "Dial");
        let mut strict = loose.clone();
        strict.spec_schema = json!({"type": "object", "required": ["size"],
                                    "properties": {"size": {"type": "integer", "minimum": 1},
                                                   "tier": {"type": "string", "pattern": "^[a-z]+$"}}});
        operator_group(&ctx).await?;
        configmap_catalog(&ctx, "cat", &Catalog::with(vec![Op::new("nu", "1.0.0").owns(&loose)]), 0).await?;
        subscription(&ctx, sub_to(&ctx, "nu", "nu", "cat")).await?;
        await_sub(&ctx, "nu", "1.0.0 installed", |s| {
            s.state == SubscriptionState::AtLatestKnown && s.installed_csv == "nu.v1.0.0"
        })
        .await?;

        // A resource the loose schema accepts and the strict one will not.
        let crds: Api<CustomResourceDefinition> = Api::all(ctx.client.clone());
        olm_tests::widgets::await_established(&ctx.client, &loose.name(), DEADLINE).await?;
        let ar = ApiResource {
            group: loose.group.clone(),
            version: "v1".into(),
            api_version: format!("{}/v1", loose.group),
            kind: loose.kind.clone(),
            plural: loose.plural.clone(),
        };
        let dials: Api<DynamicObject> = Api::namespaced_with(ctx.client.clone(), &ctx.namespace, &ar);
        let cr: DynamicObject = serde_json::from_value(json!({
            "apiVersion": ar.api_version, "kind": ar.kind, "metadata": {"name": "big"}, "spec": {"size": "three"}}))?;
        dials.create(&PostParams::default(), &cr).await?;
        // And one only the new `pattern` refuses (a keyword the check once skipped).
        let tiered: DynamicObject = serde_json::from_value(json!({
            "apiVersion": ar.api_version, "kind": ar.kind, "metadata": {"name": "tiered"}, "spec": {"size": 3, "tier": "GOLD"}}))?;
        dials.create(&PostParams::default(), &tiered).await?;

        // Publish 2.0.0 with the strict schema.
        let upgraded = Catalog::with(vec![
            Op::new("nu", "1.0.0").owns(&loose),
            Op::new("nu", "2.0.0").replaces("nu.v1.0.0").owns(&strict),
        ]);
        let cms: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        cms.patch("cat", &PatchParams::default(), &Patch::Merge(json!({"data": upgraded.configmap_data()})))
            .await?;

        let sub = await_sub(&ctx, "nu", "the plan for 2.0.0 failed", |s| {
            s.current_csv == "nu.v2.0.0" && sub_condition(s, "InstallPlanFailed").is_some()
        })
        .await?;
        let status = sub.status.ok_or_else(|| anyhow::anyhow!("no status"))?;
        assert_eq!(status.installed_csv, "nu.v1.0.0");
        let failed = status.install_plan.map(|p| p.name).ok_or_else(|| anyhow::anyhow!("no plan ref"))?;
        let plan = await_object(&plans(&ctx), &failed, DEADLINE, "Failed", |ip| {
            ip.is_some_and(|ip| ip.phase() == InstallPlanPhase::Failed)
        })
        .await?;
        let message = plan.status.as_ref().and_then(|s| s.conditions.last()).map(|c| c.message.clone()).unwrap_or_default();
        assert!(
            message.contains(&format!("error validating existing CRs against new CRD's schema for {}", loose.name())),
            "{message}"
        );
        assert!(message.contains(&format!("{}/big", ctx.namespace)), "names the resource: {message}");
        assert!(message.contains(".spec.size: expected integer"), "{message}");
        assert!(message.contains("updated validation is too restrictive"), "{message}");
        let crd = crds.get(&loose.name()).await?;
        let schema = serde_json::to_value(&crd.spec.versions)?;
        assert!(schema[0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["required"].is_null(), "the CRD was not updated: {schema}");

        let csvs: Api<messages::crd::csv::ClusterServiceVersion> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        assert!(csvs.get_opt("nu.v2.0.0").await?.is_none(), "a plan that fails its CRD checks creates nothing (OLM would have created the CSV)");

        // Fix the resource, delete the failed plan: the next plan fails on the other resource's pattern.
        dials.patch("big", &PatchParams::default(), &Patch::Merge(json!({"spec": {"size": 3}}))).await?;
        plans(&ctx).delete(&failed, &DeleteParams::default()).await?;
        let sub = await_sub(&ctx, "nu", "the next plan failed on the pattern", |s| {
            s.install_plan.as_ref().is_some_and(|p| p.name != failed)
                && sub_condition(s, "InstallPlanFailed").is_some_and(|(_, _, m)| m.contains("should match"))
        })
        .await?;
        let (_, _, message) = sub.status.as_ref().and_then(|s| sub_condition(s, "InstallPlanFailed")).unwrap_or_default();
        assert!(message.contains(&format!("{}/tiered", ctx.namespace)), "{message}");
        assert!(message.contains(".spec.tier: \"GOLD\" should match '^[a-z]+$'"), "{message}");
        let failed = sub.status.and_then(|s| s.install_plan).map(|p| p.name).ok_or_else(|| anyhow::anyhow!("no plan ref"))?;

        // Fix that one too: the upgrade goes through.
        dials.patch("tiered", &PatchParams::default(), &Patch::Merge(json!({"spec": {"tier": "gold"}}))).await?;
        plans(&ctx).delete(&failed, &DeleteParams::default()).await?;
        await_sub(&ctx, "nu", "2.0.0 installed", |s| {
            s.state == SubscriptionState::AtLatestKnown && s.installed_csv == "nu.v2.0.0"
        })
        .await?;
        let crd = crds.get(&loose.name()).await?;
        let schema = serde_json::to_value(&crd.spec.versions)?;
        assert_eq!(schema[0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["required"], json!(["size"]));
        Ok(())
    })
    .await
}
