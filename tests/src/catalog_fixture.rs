//! Catalog fixtures for the catalog-operator cluster tests: small operators (a CSV with one Deployment,
//! optionally owning or requiring a CRD) arranged in packages and channels, served either as a ConfigMap
//! catalog (in-process) or by the `registry` binary (gRPC). Also the common objects (OperatorGroup,
//! CatalogSource, Subscription, built typed with `messages::testing`) and waits. The CSV and CRD manifests a
//! catalog serves stay JSON documents: they are the catalog's content, as a bundle author writes it.

use crate::{OperatorProcess, TestContext, eventually};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::PostParams;
use messages::crd::catalog_source::CatalogSource;
use messages::crd::install_plan::{
    InstallPlan, InstallPlanPhase, InstallPlanStatus, Step, StepResource, StepStatus,
};
use messages::crd::operator_group::OperatorGroup;
pub use messages::crd::subscription::Approval;
use messages::crd::subscription::Subscription;
pub use messages::testing::{Catsrc, Ip, Og, Sub};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

pub const DEADLINE: Duration = Duration::from_secs(90);

/// A CRD `<plural>.<group>` of kind `kind`, version v1, with an optional schema for `spec`.
#[derive(Clone, Debug)]
pub struct Crd {
    pub plural: String,
    pub group: String,
    pub kind: String,
    pub versions: Vec<String>,
    pub spec_schema: Value,
}

impl Crd {
    pub fn new(plural: &str, group: &str, kind: &str) -> Self {
        Self {
            plural: plural.into(),
            group: group.into(),
            kind: kind.into(),
            versions: vec!["v1".into()],
            spec_schema: json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
        }
    }

    pub fn name(&self) -> String {
        format!("{}.{}", self.plural, self.group)
    }

    pub fn manifest(&self) -> Value {
        let n = self.versions.len();
        let versions: Vec<Value> = self
            .versions
            .iter()
            .enumerate()
            .map(|(i, v)| {
                json!({"name": v, "served": true, "storage": i + 1 == n,
                   "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": self.spec_schema}}}})
            })
            .collect();
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "metadata": {"name": self.name()},
               "spec": {"group": self.group, "scope": "Namespaced",
                        "names": {"plural": self.plural, "singular": self.plural.trim_end_matches('s'), "kind": self.kind, "listKind": format!("{}List", self.kind)},
                        "versions": versions}})
    }
}

/// One operator bundle.
#[derive(Clone, Debug, Default)]
pub struct Op {
    pub package: String,
    pub version: String,
    pub replaces: Option<String>,
    pub skips: Vec<String>,
    pub skip_range: Option<String>,
    pub owns: Option<Crd>,
    pub requires: Option<Crd>,
    /// `minReadySeconds` of the operator's Deployment (how long it stays unavailable once its pod is ready).
    pub min_ready_seconds: Option<u32>,
    /// `progressDeadlineSeconds` of the operator's Deployment (one not greater than `minReadySeconds` makes
    /// the API server reject the Deployment: a CSV that fails to install).
    pub progress_deadline_seconds: Option<u32>,
    /// Put the version in the operator container's environment, so each version's Deployment differs (as real
    /// operators' images do).
    pub versioned_deployment: bool,
    /// Give the operator's service account `clusterPermissions` (read namespaces): a ClusterRole and a
    /// ClusterRoleBinding labelled as the CSV's.
    pub cluster_permissions: bool,
}

impl Op {
    pub fn new(package: &str, version: &str) -> Self {
        Self {
            package: package.into(),
            version: version.into(),
            ..Default::default()
        }
    }
    pub fn name(&self) -> String {
        format!("{}.v{}", self.package, self.version)
    }
    pub fn replaces(mut self, r: &str) -> Self {
        self.replaces = Some(r.into());
        self
    }
    pub fn skip_range(mut self, r: &str) -> Self {
        self.skip_range = Some(r.into());
        self
    }
    pub fn owns(mut self, c: &Crd) -> Self {
        self.owns = Some(c.clone());
        self
    }
    pub fn requires(mut self, c: &Crd) -> Self {
        self.requires = Some(c.clone());
        self
    }
    pub fn min_ready_seconds(mut self, seconds: u32) -> Self {
        self.min_ready_seconds = Some(seconds);
        self
    }
    pub fn progress_deadline_seconds(mut self, seconds: u32) -> Self {
        self.progress_deadline_seconds = Some(seconds);
        self
    }
    pub fn versioned_deployment(mut self) -> Self {
        self.versioned_deployment = true;
        self
    }
    pub fn cluster_permissions(mut self) -> Self {
        self.cluster_permissions = true;
        self
    }

    pub fn csv(&self) -> Value {
        let name = self.name();
        let deploy = format!("{}-operator", self.package);
        let mut annotations = json!({});
        if let Some(r) = &self.skip_range {
            annotations["olm.skipRange"] = json!(r);
        }
        let crd_desc = |c: &Crd| json!({"name": c.name(), "version": c.versions.last().cloned().unwrap_or_default(), "kind": c.kind});
        let mut spec = json!({
            "version": self.version, "displayName": self.package,
            "installModes": [{"type": "OwnNamespace", "supported": true}, {"type": "SingleNamespace", "supported": true},
                             {"type": "MultiNamespace", "supported": false}, {"type": "AllNamespaces", "supported": true}],
            "install": {"strategy": "deployment", "spec": {
                "permissions": [{"serviceAccountName": deploy, "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]}],
                "deployments": [{"name": deploy, "spec": {"replicas": 1, "selector": {"matchLabels": {"app": deploy}},
                    "template": {"metadata": {"labels": {"app": deploy}}, "spec": {"serviceAccountName": deploy,
                        "containers": [{"name": "op", "image": "busybox:1.36", "command": ["sleep", "infinity"]}]}}}}]}},
            "customresourcedefinitions": {"owned": self.owns.iter().map(crd_desc).collect::<Vec<_>>(), "required": self.requires.iter().map(crd_desc).collect::<Vec<_>>()}
        });
        if let Some(r) = &self.replaces {
            spec["replaces"] = json!(r);
        }
        if self.versioned_deployment {
            spec["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"]["containers"]
                [0]["env"] = json!([{"name": "OPERATOR_VERSION", "value": self.version}]);
        }
        if self.cluster_permissions {
            spec["install"]["spec"]["clusterPermissions"] = json!([{"serviceAccountName": deploy,
                "rules": [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]}]}]);
        }
        if let Some(s) = self.min_ready_seconds {
            spec["install"]["spec"]["deployments"][0]["spec"]["minReadySeconds"] = json!(s);
        }
        if let Some(s) = self.progress_deadline_seconds {
            spec["install"]["spec"]["deployments"][0]["spec"]["progressDeadlineSeconds"] = json!(s);
        }
        if !self.skips.is_empty() {
            spec["skips"] = json!(self.skips);
        }
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
               "metadata": {"name": name, "annotations": annotations}, "spec": spec})
    }
}

/// A catalog: packages with one channel `stable` whose head is the last operator listed for the package.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    pub ops: Vec<Op>,
}

impl Catalog {
    pub fn with(ops: Vec<Op>) -> Self {
        Self { ops }
    }

    /// The ConfigMap catalog `data`.
    pub fn configmap_data(&self) -> BTreeMap<String, String> {
        let mut crds: BTreeMap<String, Value> = BTreeMap::new();
        for op in &self.ops {
            if let Some(c) = &op.owns {
                crds.insert(c.name(), c.manifest());
            }
        }
        let mut heads: BTreeMap<String, String> = BTreeMap::new();
        for op in &self.ops {
            heads.insert(op.package.clone(), op.name());
        }
        let packages: Vec<Value> = heads
            .iter()
            .map(|(p, head)| json!({"packageName": p, "defaultChannel": "stable", "channels": [{"name": "stable", "currentCSV": head}]}))
            .collect();
        let csvs: Vec<Value> = self.ops.iter().map(Op::csv).collect();
        BTreeMap::from([
            (
                "customResourceDefinitions".to_string(),
                Value::Array(crds.into_values().collect()).to_string(),
            ),
            (
                "clusterServiceVersions".to_string(),
                Value::Array(csvs).to_string(),
            ),
            ("packages".to_string(), Value::Array(packages).to_string()),
        ])
    }

    /// The catalog as a ConfigMap object named `name`.
    pub fn configmap(&self, name: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                ..ObjectMeta::default()
            },
            data: Some(self.configmap_data()),
            ..ConfigMap::default()
        }
    }

    /// Write the catalog as a ConfigMap file the `registry` binary serves; returns the file.
    pub fn write_file(
        &self,
        dir: &std::path::Path,
        name: &str,
    ) -> anyhow::Result<std::path::PathBuf> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(format!("{name}.json"));
        std::fs::write(&path, serde_json::to_string(&self.configmap(name))?)?;
        Ok(path)
    }
}

/// Create `obj` in the test namespace.
pub async fn create<K>(ctx: &TestContext, obj: K) -> anyhow::Result<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    Ok(api.create(&PostParams::default(), &obj).await?)
}

/// Create the manifest `value` (a catalog's CSV, or an object a test writes as JSON on purpose) as a `K` in the
/// test namespace.
pub async fn create_manifest<K>(ctx: &TestContext, value: Value) -> anyhow::Result<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    create(ctx, serde_json::from_value(value)?).await
}

/// The OperatorGroup `og` targeting the test namespace.
pub async fn operator_group(ctx: &TestContext) -> anyhow::Result<OperatorGroup> {
    create(ctx, Og::named("og").targets(&[&ctx.namespace]).build()).await
}

/// The ConfigMap catalog `name` (the ConfigMap and its CatalogSource) serving `catalog`.
pub async fn configmap_catalog(
    ctx: &TestContext,
    name: &str,
    catalog: &Catalog,
    priority: i32,
) -> anyhow::Result<CatalogSource> {
    create(ctx, catalog.configmap(name)).await?;
    let source = Catsrc::named(name).config_map(name).priority(priority);
    create(ctx, source.build()).await
}

/// The gRPC CatalogSource `name` at `address`.
pub async fn address_catalog(
    ctx: &TestContext,
    name: &str,
    address: &str,
) -> anyhow::Result<CatalogSource> {
    create(ctx, Catsrc::named(name).address(address).build()).await
}

/// CatalogSource `name` of the test's namespace once its connection is READY.
pub async fn await_catalog_ready(ctx: &TestContext, name: &str) -> anyhow::Result<CatalogSource> {
    let catalogs: Api<CatalogSource> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    crate::await_object(&catalogs, name, DEADLINE, "READY", |c| {
        c.and_then(|c| c.status.as_ref())
            .and_then(|s| s.connection_state.as_ref())
            .is_some_and(|s| s.last_observed_state.as_str() == "READY")
    })
    .await
}

/// A Subscription `name` to `package` in channel `stable` of the catalog `catalog` of the test namespace (not
/// created: change it with the builder, then [`subscription`]).
pub fn sub_to(ctx: &TestContext, name: &str, package: &str, catalog: &str) -> Sub {
    Sub::named(name)
        .in_ns(&ctx.namespace)
        .package(package)
        .source(catalog, &ctx.namespace)
        .channel("stable")
}

/// Create the Subscription `sub` in the test namespace.
pub async fn subscription(ctx: &TestContext, sub: Sub) -> anyhow::Result<Subscription> {
    create(ctx, sub.build()).await
}

/// Start the catalog-operator watching the test namespace, with that namespace as its global catalog namespace.
pub async fn catalog_operator(
    ctx: &TestContext,
    extra: &[&str],
) -> anyhow::Result<OperatorProcess> {
    let mut args = vec![
        "--watched-namespaces",
        ctx.namespace.as_str(),
        "--namespace",
        ctx.namespace.as_str(),
    ];
    args.extend_from_slice(extra);
    OperatorProcess::start(ctx.cluster, "catalog-operator", &args).await
}

/// Start the olm-operator watching the test namespace.
pub async fn olm_operator(ctx: &TestContext) -> anyhow::Result<OperatorProcess> {
    OperatorProcess::start(
        ctx.cluster,
        "olm-operator",
        &["--watched-namespaces", ctx.namespace.as_str()],
    )
    .await
}

pub fn subs(ctx: &TestContext) -> Api<Subscription> {
    Api::namespaced(ctx.client.clone(), &ctx.namespace)
}

pub fn plans(ctx: &TestContext) -> Api<InstallPlan> {
    Api::namespaced(ctx.client.clone(), &ctx.namespace)
}

/// Approve InstallPlan `name` (`spec.approved: true`, as `kubectl patch` does).
pub async fn approve_plan(plans: &Api<InstallPlan>, name: &str) -> anyhow::Result<()> {
    plans
        .patch(
            name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({"spec": {"approved": true}})),
        )
        .await?;
    Ok(())
}

/// Wait until the Subscription's status satisfies `cond`; the error shows the last status.
pub async fn await_sub<F>(
    ctx: &TestContext,
    name: &str,
    what: &str,
    cond: F,
) -> anyhow::Result<Subscription>
where
    F: Fn(&messages::crd::subscription::SubscriptionStatus) -> bool,
{
    let api = subs(ctx);
    let cond = &cond;
    let api = &api;
    eventually(DEADLINE, what, || async move {
        let sub = api.get(name).await?;
        match sub.status.as_ref() {
            Some(s) if cond(s) => Ok(Some(sub)),
            other => Err(anyhow::anyhow!(
                "{name} status: {}",
                serde_json::to_string(&other).unwrap_or_default()
            )),
        }
    })
    .await
}

/// The condition of `type_` on a Subscription status: (status, reason, message).
pub fn sub_condition(
    s: &messages::crd::subscription::SubscriptionStatus,
    type_: &str,
) -> Option<(String, String, String)> {
    s.conditions
        .iter()
        .find(|c| c.type_.as_str() == type_)
        .map(|c| {
            (
                c.status.clone(),
                c.reason.as_str().to_string(),
                c.message.clone(),
            )
        })
}

/// Create an Automatic, approved plan (as an older OLM or a user could write it) whose only step creates the CSV
/// `csv` (its manifest) and that names `names` in `spec.clusterServiceVersionNames`; returns the plan's name.
pub async fn hand_written_plan(
    ctx: &TestContext,
    names: &[&str],
    csv: &Value,
) -> anyhow::Result<String> {
    let name = csv["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let mut ip = Ip::named("")
        .csvs(names)
        .approval(Approval::Automatic, true)
        .build();
    ip.metadata.name = None;
    ip.metadata.generate_name = Some("manual-".to_string());
    ip.spec.generation = Some(1);
    let ip = create(ctx, ip).await?;
    let plan_name = ip.metadata.name.clone().unwrap_or_default();
    let mut with_status = ip;
    with_status.status = Some(InstallPlanStatus {
        phase: InstallPlanPhase::Installing,
        plan: vec![Step {
            resolving: name.clone(),
            resource: StepResource {
                source_name: "cat".to_string(),
                source_namespace: ctx.namespace.clone(),
                group: "operators.coreos.com".to_string(),
                version: "v1alpha1".to_string(),
                kind: "ClusterServiceVersion".to_string(),
                name,
                manifest: csv.to_string(),
            },
            optional: false,
            status: StepStatus::Unknown,
        }],
        ..InstallPlanStatus::default()
    });
    plans(ctx)
        .replace_status(&plan_name, &PostParams::default(), &with_status)
        .await?;
    Ok(plan_name)
}

/// A free loopback port.
pub fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// The `registry serve` subprocess; killed on drop.
pub struct RegistryProcess {
    pub port: u16,
    child: std::process::Child,
    log: std::path::PathBuf,
}

/// How long `registry serve` may take to listen (test catalogs load in milliseconds).
const LISTEN_WITHIN: std::time::Duration = std::time::Duration::from_secs(20);

impl RegistryProcess {
    /// `registry serve` of `paths` on `port`, once it listens there (an error naming the port and the process's
    /// output when it exited first, e.g. on a port another process took).
    pub fn start(paths: &[&std::path::Path], port: u16) -> anyhow::Result<Self> {
        let bin = crate::bin_path("registry")?;
        let log = std::env::temp_dir().join(format!("olm-rs-registry-{port}.log"));
        let out = std::fs::File::create(&log)?;
        let child = std::process::Command::new(bin)
            .arg("serve")
            .args(paths)
            .arg("--port")
            .arg(port.to_string())
            .arg("--listen")
            .arg("127.0.0.1")
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()?;
        let mut registry = Self { port, child, log };
        registry.listening()?;
        Ok(registry)
    }

    /// [`Self::start`] on a free port, taking another one when a process took the port first (the port is free
    /// when picked, but anything may bind it before `registry serve` does).
    pub fn start_on_free_port(paths: &[&std::path::Path]) -> anyhow::Result<Self> {
        let mut last = None;
        for _ in 0..5 {
            match Self::start(paths, free_port()?) {
                Ok(registry) => return Ok(registry),
                Err(e) if format!("{e:#}").contains("Address already in use") => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| anyhow::anyhow!("registry serve: no free port")))
    }

    /// Wait (bounded) until the process accepts connections on its port.
    fn listening(&mut self) -> anyhow::Result<()> {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], self.port));
        let deadline = std::time::Instant::now() + LISTEN_WITHIN;
        loop {
            if let Some(status) = self.child.try_wait()? {
                let output = std::fs::read_to_string(&self.log).unwrap_or_default();
                let head: String = output.lines().take(4).collect::<Vec<_>>().join("\n");
                anyhow::bail!(
                    "registry serve on port {} exited ({status}) before it listened: {head}",
                    self.port
                );
            }
            if std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_millis(200))
                .is_ok()
            {
                return Ok(());
            }
            if std::time::Instant::now() > deadline {
                anyhow::bail!(
                    "registry serve did not listen on port {} within {LISTEN_WITHIN:?}",
                    self.port
                );
            }
            // The poll interval of a wait bounded by the deadline above.
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// `registry serve` of the FBC JSON stream `fbc`, written to a folder of the test's namespace, on a free port.
    pub fn serve_fbc(ctx: &TestContext, fbc: &str) -> anyhow::Result<Self> {
        let dir = std::env::temp_dir().join(format!("olm-rs-{}", ctx.namespace));
        std::fs::create_dir_all(&dir)?;
        let path = dir.join("catalog.json");
        std::fs::write(&path, fbc)?;
        Self::start_on_free_port(&[&path])
    }
}

impl Drop for RegistryProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
