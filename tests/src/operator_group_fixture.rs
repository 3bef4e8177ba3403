//! Shared pieces of the OperatorGroup cluster tests: extra namespaces, CSVs and CRDs of a test (groups are built with
//! `messages::testing::Og`).

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams};
use messages::crd::csv::{ClusterServiceVersion, InstallModeType};
use messages::crd::operator_group::OperatorGroup;
use messages::testing::Csv;
use serde_json::json;
use std::time::Duration;

pub const DEADLINE: Duration = Duration::from_secs(90);

/// Extra namespaces for one test, deleted by [`Extra::delete`].
pub struct Extra {
    pub client: Client,
    pub names: Vec<String>,
}

impl Extra {
    /// Names `<base>-<suffix>`; only those in `create_now` are created at once (others may be created later).
    pub async fn create(client: &Client, base: &str, suffixes: &[&str]) -> anyhow::Result<Self> {
        let extra = Self {
            client: client.clone(),
            names: suffixes.iter().map(|s| format!("{base}-{s}")).collect(),
        };
        for name in &extra.names {
            extra.create_one(name).await?;
        }
        Ok(extra)
    }

    pub fn named(client: &Client, base: &str, suffixes: &[&str]) -> Self {
        Self {
            client: client.clone(),
            names: suffixes.iter().map(|s| format!("{base}-{s}")).collect(),
        }
    }

    pub async fn create_one(&self, name: &str) -> anyhow::Result<()> {
        let api: Api<Namespace> = Api::all(self.client.clone());
        let ns = Namespace {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(name.to_string()),
                labels: Some([("olm-rs.io/test".to_string(), "true".to_string())].into()),
                ..Default::default()
            },
            ..Namespace::default()
        };
        api.create(&PostParams::default(), &ns).await?;
        Ok(())
    }

    /// olm-operator watching `base`, these namespaces and `later` (names a test creates afterwards), in that
    /// order.
    pub async fn olm_operator(
        &self,
        cluster: &crate::Cluster,
        base: &str,
        later: &[&str],
    ) -> anyhow::Result<crate::OperatorProcess> {
        let scope: Vec<&str> = std::iter::once(base)
            .chain(self.names.iter().map(String::as_str))
            .chain(later.iter().copied())
            .collect();
        crate::OperatorProcess::start(
            cluster,
            "olm-operator",
            &["--watched-namespaces", &scope.join(",")],
        )
        .await
    }

    pub async fn delete(self) {
        let api: Api<Namespace> = Api::all(self.client.clone());
        for name in self.names {
            let _ = api.delete(&name, &DeleteParams::background()).await;
        }
    }
}

/// A CSV without deployments owning the CRDs `(plural, group, kind)` at `v1`, supporting `modes`.
pub fn csv(
    name: &str,
    modes: &[&str],
    owned: &[(String, String, String)],
) -> anyhow::Result<ClusterServiceVersion> {
    let modes: Vec<InstallModeType> = modes.iter().map(|m| InstallModeType::from(*m)).collect();
    let csv = owned.iter().fold(
        Csv::named(name).version("1.0.0").install_modes(&modes),
        |csv, (plural, group, kind)| csv.owns_crd(&format!("{plural}.{group}"), "v1", kind),
    );
    Ok(csv.build())
}

/// A namespaced CRD `<plural>.<group>` serving `v1` with kind `kind`; created (or kept when it exists).
pub async fn ensure_crd(
    client: &Client,
    plural: &str,
    group: &str,
    kind: &str,
) -> anyhow::Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut crd = crate::widgets::open_crd(plural, group, kind, &["v1"]);
    crd.metadata.labels = Some([("olm-rs.io/test".to_string(), "true".to_string())].into());
    match api.create(&PostParams::default(), &crd).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

pub async fn delete_crd(client: &Client, plural: &str, group: &str) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let _ = api
        .delete(&format!("{plural}.{group}"), &DeleteParams::background())
        .await;
}

pub fn provided(og: &OperatorGroup) -> String {
    og.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("olm.providedAPIs"))
        .cloned()
        .unwrap_or_default()
}

pub fn phase_reason(csv: &ClusterServiceVersion) -> (String, String) {
    let status = csv.status.clone().unwrap_or_default();
    (
        status.phase.as_str().to_string(),
        status.reason.as_str().to_string(),
    )
}

/// `csv` with one namespaced permission for the service account `sa` (read ConfigMaps).
pub fn with_permissions(
    mut csv: ClusterServiceVersion,
    sa: &str,
) -> anyhow::Result<ClusterServiceVersion> {
    let mut value = serde_json::to_value(&csv)?;
    value["spec"]["install"]["spec"]["permissions"] = json!([{"serviceAccountName": sa, "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]}]);
    csv = serde_json::from_value(value)?;
    Ok(csv)
}
