//! Shared pieces of the OperatorGroup cluster tests (operator_group_targets, operator_group_apis,
//! operator_group_copies): [`GroupTest`] runs a test in a fresh namespace with its extra namespaces, its CRDs
//! and an olm-operator watching them all; CSVs owning CRDs, waits on group and CSV status, and the merge patch
//! that retargets a group (groups are built with `messages::testing::Og`).

use crate::{Cluster, TestContext, await_object, with_namespace};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use messages::crd::csv::{
    ClusterServiceVersion, InstallModeType, StrategyDeploymentPermissions,
    StrategyDetailsDeployment,
};
use messages::crd::operator_group::OperatorGroup;
use messages::testing::{Csv, rule};
use serde_json::json;
use std::future::Future;
use std::time::Duration;

pub const DEADLINE: Duration = Duration::from_secs(90);

/// A CRD a test's CSVs own: (plural, group, kind), served at `v1`.
pub type OwnedApi = (String, String, String);

/// The CRD `<kind lowercase>s.<group>` of `kind`.
pub fn api(kind: &str, group: &str) -> OwnedApi {
    (
        format!("{}s", kind.to_lowercase()),
        group.to_string(),
        kind.to_string(),
    )
}

/// The API's entry in `olm.providedAPIs`: `<kind>.v1.<group>`.
pub fn key((_, group, kind): &OwnedApi) -> String {
    format!("{kind}.v1.{group}")
}

/// One OperatorGroup test: `prefix-<random>` with extra namespaces `<ns>-<suffix>` (created at once, or
/// [`later`](Self::later) by the test itself), CRDs made before olm-operator starts and deleted after, and an
/// olm-operator watching the test's namespace and every extra one (in that order) while the body runs.
pub struct GroupTest<'a> {
    prefix: &'a str,
    extra: &'a [&'a str],
    later: &'a [&'a str],
    crds: CrdsOf<'a>,
}

/// The CRDs of a [`GroupTest`], named from the test's namespace.
type CrdsOf<'a> = Box<dyn FnOnce(&str) -> Vec<OwnedApi> + 'a>;

/// What the body of a [`GroupTest`] gets.
pub struct Groups {
    pub ctx: TestContext,
    /// The test's namespace.
    pub ns: String,
    /// The extra namespaces: those created at once, then the later ones.
    pub extra: Vec<String>,
    /// The CRDs made for the test.
    pub crds: Vec<OwnedApi>,
}

impl<'a> GroupTest<'a> {
    pub fn new(prefix: &'a str) -> Self {
        Self {
            prefix,
            extra: &[],
            later: &[],
            crds: Box::new(|_| Vec::new()),
        }
    }

    /// Extra namespaces created before olm-operator starts.
    pub fn extra(mut self, suffixes: &'a [&'a str]) -> Self {
        self.extra = suffixes;
        self
    }

    /// Extra namespaces olm-operator watches that the test creates itself ([`create_test_namespace`]).
    pub fn later(mut self, suffixes: &'a [&'a str]) -> Self {
        self.later = suffixes;
        self
    }

    /// The CRDs the test's CSVs own, named from the test's namespace.
    pub fn crds(mut self, crds: impl FnOnce(&str) -> Vec<OwnedApi> + 'a) -> Self {
        self.crds = Box::new(crds);
        self
    }

    pub async fn run<F, Fut>(self, body: F) -> anyhow::Result<()>
    where
        F: FnOnce(Groups) -> Fut,
        Fut: Future<Output = anyhow::Result<()>>,
    {
        let Self {
            prefix,
            extra,
            later,
            crds,
        } = self;
        with_namespace(Cluster::shared()?, prefix, |ctx| async move {
            let ns = ctx.namespace.clone();
            let created = Extra::create(&ctx.client, &ns, extra).await?;
            let later = Extra::named(&ctx.client, &ns, later);
            let crds = crds(&ns);
            let result = async {
                for (plural, group, kind) in &crds {
                    ensure_crd(&ctx.client, plural, group, kind).await?;
                }
                let names: Vec<&str> = later.names.iter().map(String::as_str).collect();
                let _op = created.olm_operator(ctx.cluster, &ns, &names).await?;
                let extra = created.names.iter().chain(&later.names).cloned().collect();
                body(Groups {
                    ctx: ctx.clone(),
                    ns: ns.clone(),
                    extra,
                    crds: crds.clone(),
                })
                .await
            }
            .await;
            created.delete().await;
            later.delete().await;
            for (plural, group, _) in &crds {
                delete_crd(&ctx.client, plural, group).await;
            }
            result
        })
        .await
    }
}

impl Groups {
    /// The OperatorGroups of namespace `ns`.
    pub fn ogs_in(&self, ns: &str) -> Api<OperatorGroup> {
        Api::namespaced(self.ctx.client.clone(), ns)
    }

    /// The OperatorGroups of the test's namespace.
    pub fn ogs(&self) -> Api<OperatorGroup> {
        self.ogs_in(&self.ns)
    }

    /// The CSVs of namespace `ns`.
    pub fn csvs_in(&self, ns: &str) -> Api<ClusterServiceVersion> {
        Api::namespaced(self.ctx.client.clone(), ns)
    }

    /// The CSVs of the test's namespace.
    pub fn csvs(&self) -> Api<ClusterServiceVersion> {
        self.csvs_in(&self.ns)
    }

    /// Create `og` in the test's namespace.
    pub async fn create_group(&self, og: OperatorGroup) -> anyhow::Result<OperatorGroup> {
        Ok(self.ogs().create(&PostParams::default(), &og).await?)
    }
}

/// Create namespace `name` as [`Extra`] does (labelled a test namespace).
pub async fn create_test_namespace(client: &Client, name: &str) -> anyhow::Result<()> {
    let api: Api<Namespace> = Api::all(client.clone());
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

/// Merge-patch group `name`'s `spec.targetNamespaces` (`None` removes it: all namespaces).
pub async fn set_targets(
    ogs: &Api<OperatorGroup>,
    name: &str,
    targets: Option<&[&str]>,
) -> anyhow::Result<()> {
    ogs.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"targetNamespaces": targets}})),
    )
    .await?;
    Ok(())
}

/// Create [`csv`] `name` (supporting `modes`, owning `owned`) through `csvs`.
pub async fn create_csv(
    csvs: &Api<ClusterServiceVersion>,
    name: &str,
    modes: &[&str],
    owned: &[OwnedApi],
) -> anyhow::Result<ClusterServiceVersion> {
    Ok(csvs
        .create(&PostParams::default(), &csv(name, modes, owned)?)
        .await?)
}

/// CSV `name` once it is Succeeded.
pub async fn await_succeeded(
    csvs: &Api<ClusterServiceVersion>,
    name: &str,
) -> anyhow::Result<ClusterServiceVersion> {
    await_phase(csvs, name, "Succeeded", |p, _| p == "Succeeded").await
}

/// CSV `name` once its (phase, reason) meet `cond`; `what` names the wait.
pub async fn await_phase(
    api: &Api<ClusterServiceVersion>,
    name: &str,
    what: &str,
    cond: impl Fn(&str, &str) -> bool + Send + 'static,
) -> anyhow::Result<ClusterServiceVersion> {
    await_object(
        api,
        name,
        DEADLINE,
        what,
        move |c: Option<&ClusterServiceVersion>| {
            c.is_some_and(|c| {
                let (phase, reason) = phase_reason(c);
                cond(&phase, &reason)
            })
        },
    )
    .await
}

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
        create_test_namespace(&self.client, name).await
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
    owned: &[OwnedApi],
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
    csv: ClusterServiceVersion,
    sa: &str,
) -> anyhow::Result<ClusterServiceVersion> {
    let mut csv = csv;
    let details = csv
        .spec
        .install
        .spec
        .get_or_insert_with(StrategyDetailsDeployment::default);
    details.permissions = Some(vec![StrategyDeploymentPermissions {
        service_account_name: sa.to_string(),
        rules: vec![rule(&[""], &["configmaps"], &["get", "list"])],
    }]);
    Ok(csv)
}
