//! Object builders for tests of other crates (feature `testing`), e.g.
//! `Csv::named("a.v1").in_ns("x").version("1.0.0").phase(CsvPhase::Succeeded, CsvReason::InstallSucceeded).build()`.
//!
//! Builders fill only what is asked for; everything else keeps the type's defaults.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::DeploymentSpec;
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use crate::crd::catalog_source::{
    CatalogSource, CatalogSourceSpec, RegistryPoll, SourceType, UpdateStrategy,
};
use crate::crd::csv::{
    ClusterServiceVersion, ClusterServiceVersionSpec, ClusterServiceVersionStatus, CrdDescription,
    CsvPhase, CsvReason, CustomResourceDefinitions, INSTALL_STRATEGY_NAME_DEPLOYMENT, InstallMode,
    InstallModeType, NamedInstallStrategy, StrategyDeploymentSpec, StrategyDetailsDeployment,
};
use crate::crd::install_plan::{InstallPlan, InstallPlanPhase, InstallPlanSpec, InstallPlanStatus};
use crate::crd::operator_group::{OperatorGroup, OperatorGroupSpec, OperatorGroupStatus};
use crate::crd::subscription::{Approval, Subscription, SubscriptionSpec};

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        ..ObjectMeta::default()
    }
}

fn insert(map: &mut Option<BTreeMap<String, String>>, key: &str, value: &str) {
    map.get_or_insert_with(BTreeMap::new)
        .insert(key.to_owned(), value.to_owned());
}

/// Builds a ClusterServiceVersion.
#[derive(Debug, Clone)]
pub struct Csv(ClusterServiceVersion);

impl Csv {
    /// A CSV with the `deployment` strategy, no deployments, and all install modes supported.
    pub fn named(name: &str) -> Self {
        let spec = ClusterServiceVersionSpec {
            display_name: name.to_owned(),
            install: NamedInstallStrategy {
                strategy: INSTALL_STRATEGY_NAME_DEPLOYMENT.to_owned(),
                spec: Some(StrategyDetailsDeployment::default()),
            },
            install_modes: Some(
                InstallModeType::KNOWN
                    .iter()
                    .map(|t| InstallMode {
                        type_: t.clone(),
                        supported: true,
                    })
                    .collect(),
            ),
            ..ClusterServiceVersionSpec::default()
        };
        Csv(ClusterServiceVersion {
            metadata: meta(name),
            spec,
            status: None,
        })
    }

    pub fn in_ns(mut self, namespace: &str) -> Self {
        self.0.metadata.namespace = Some(namespace.to_owned());
        self
    }

    pub fn version(mut self, version: &str) -> Self {
        self.0.spec.version = Some(version.to_owned());
        self
    }

    pub fn replaces(mut self, name: &str) -> Self {
        self.0.spec.replaces = Some(name.to_owned());
        self
    }

    pub fn skips(mut self, names: &[&str]) -> Self {
        self.0.spec.skips = Some(names.iter().map(|n| (*n).to_owned()).collect());
        self
    }

    /// Only these install modes are supported (the others are listed as unsupported).
    pub fn install_modes(mut self, supported: &[InstallModeType]) -> Self {
        self.0.spec.install_modes = Some(
            InstallModeType::KNOWN
                .iter()
                .map(|t| InstallMode {
                    type_: t.clone(),
                    supported: supported.contains(t),
                })
                .collect(),
        );
        self
    }

    /// Owns the CRD `plural.group` with `kind` at `version`.
    pub fn owns_crd(mut self, name: &str, version: &str, kind: &str) -> Self {
        self.crds()
            .owned
            .get_or_insert_with(Vec::new)
            .push(crd(name, version, kind));
        self
    }

    /// Requires the CRD `plural.group` with `kind` at `version`.
    pub fn requires_crd(mut self, name: &str, version: &str, kind: &str) -> Self {
        self.crds()
            .required
            .get_or_insert_with(Vec::new)
            .push(crd(name, version, kind));
        self
    }

    fn crds(&mut self) -> &mut CustomResourceDefinitions {
        self.0
            .spec
            .custom_resource_definitions
            .get_or_insert_with(CustomResourceDefinitions::default)
    }

    /// Adds a one-container Deployment `name` running `image`, selected by `app: <name>`.
    pub fn deployment(mut self, name: &str, image: &str) -> Self {
        let labels = BTreeMap::from([("app".to_owned(), name.to_owned())]);
        let spec = DeploymentSpec {
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: name.to_owned(),
                        image: Some(image.to_owned()),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        };
        let details = self
            .0
            .spec
            .install
            .spec
            .get_or_insert_with(StrategyDetailsDeployment::default);
        details.deployments.push(StrategyDeploymentSpec {
            name: name.to_owned(),
            spec,
            label: None,
        });
        self
    }

    pub fn annotation(mut self, key: &str, value: &str) -> Self {
        insert(&mut self.0.metadata.annotations, key, value);
        self
    }

    pub fn label(mut self, key: &str, value: &str) -> Self {
        insert(&mut self.0.metadata.labels, key, value);
        self
    }

    /// Sets the status phase and reason directly (no condition history).
    pub fn phase(mut self, phase: CsvPhase, reason: CsvReason) -> Self {
        let status = self
            .0
            .status
            .get_or_insert_with(ClusterServiceVersionStatus::default);
        status.phase = phase;
        status.reason = reason;
        self
    }

    pub fn build(self) -> ClusterServiceVersion {
        self.0
    }
}

fn crd(name: &str, version: &str, kind: &str) -> CrdDescription {
    CrdDescription {
        name: name.to_owned(),
        version: version.to_owned(),
        kind: kind.to_owned(),
        ..CrdDescription::default()
    }
}

/// Builds an OperatorGroup (AllNamespaces unless targets or a selector are given).
#[derive(Debug, Clone)]
pub struct Og(OperatorGroup);

impl Og {
    pub fn named(name: &str) -> Self {
        Og(OperatorGroup {
            metadata: meta(name),
            spec: OperatorGroupSpec::default(),
            status: None,
        })
    }

    pub fn in_ns(mut self, namespace: &str) -> Self {
        self.0.metadata.namespace = Some(namespace.to_owned());
        self
    }

    pub fn uid(mut self, uid: &str) -> Self {
        self.0.metadata.uid = Some(uid.to_owned());
        self
    }

    pub fn targets(mut self, namespaces: &[&str]) -> Self {
        self.0.spec.target_namespaces = Some(namespaces.iter().map(|n| (*n).to_owned()).collect());
        self
    }

    pub fn selector(mut self, match_labels: &[(&str, &str)]) -> Self {
        let labels = match_labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        self.0.spec.selector = Some(LabelSelector {
            match_labels: Some(labels),
            ..LabelSelector::default()
        });
        self
    }

    /// `spec.serviceAccountName`: the account the group's operators install as.
    pub fn service_account(mut self, name: &str) -> Self {
        self.0.spec.service_account_name = Some(name.to_owned());
        self
    }

    /// `spec.staticProvidedAPIs`.
    pub fn static_provided_apis(mut self, fixed: bool) -> Self {
        self.0.spec.static_provided_apis = Some(fixed);
        self
    }

    /// Sets `status.namespaces` (what OLM computed); `&[""]` is AllNamespaces.
    pub fn status_namespaces(mut self, namespaces: &[&str]) -> Self {
        let status = self
            .0
            .status
            .get_or_insert_with(OperatorGroupStatus::default);
        status.namespaces = Some(namespaces.iter().map(|n| (*n).to_owned()).collect());
        self
    }

    pub fn build(self) -> OperatorGroup {
        self.0
    }
}

/// Builds a Subscription.
#[derive(Debug, Clone)]
pub struct Sub(Subscription);

impl Sub {
    /// An empty subscription; set `package`, `source` and `channel`.
    pub fn named(name: &str) -> Self {
        Sub(Subscription {
            metadata: meta(name),
            spec: SubscriptionSpec::default(),
            status: None,
        })
    }

    pub fn in_ns(mut self, namespace: &str) -> Self {
        self.0.metadata.namespace = Some(namespace.to_owned());
        self
    }

    pub fn package(mut self, package: &str) -> Self {
        self.0.spec.package = package.to_owned();
        self
    }

    pub fn channel(mut self, channel: &str) -> Self {
        self.0.spec.channel = Some(channel.to_owned());
        self
    }

    pub fn source(mut self, catalog: &str, catalog_ns: &str) -> Self {
        self.0.spec.catalog_source = catalog.to_owned();
        self.0.spec.catalog_source_namespace = catalog_ns.to_owned();
        self
    }

    pub fn starting_csv(mut self, csv: &str) -> Self {
        self.0.spec.starting_csv = Some(csv.to_owned());
        self
    }

    pub fn approval(mut self, approval: Approval) -> Self {
        self.0.spec.install_plan_approval = Some(approval);
        self
    }

    pub fn build(self) -> Subscription {
        self.0
    }
}

/// Builds a CatalogSource (grpc by default).
#[derive(Debug, Clone)]
pub struct Catsrc(CatalogSource);

impl Catsrc {
    pub fn named(name: &str) -> Self {
        let spec = CatalogSourceSpec {
            source_type: SourceType::Grpc,
            priority: None,
            config_map: None,
            address: None,
            image: None,
            grpc_pod_config: None,
            update_strategy: None,
            secrets: None,
            display_name: None,
            description: None,
            publisher: None,
            icon: None,
        };
        Catsrc(CatalogSource {
            metadata: meta(name),
            spec,
            status: None,
        })
    }

    pub fn in_ns(mut self, namespace: &str) -> Self {
        self.0.metadata.namespace = Some(namespace.to_owned());
        self
    }

    pub fn image(mut self, image: &str) -> Self {
        self.0.spec.image = Some(image.to_owned());
        self
    }

    pub fn address(mut self, address: &str) -> Self {
        self.0.spec.address = Some(address.to_owned());
        self
    }

    /// A `configmap` catalog reading ConfigMap `name` of its namespace.
    pub fn config_map(mut self, name: &str) -> Self {
        self.0.spec.source_type = SourceType::ConfigMap;
        self.0.spec.config_map = Some(name.to_owned());
        self
    }

    pub fn display_name(mut self, display_name: &str) -> Self {
        self.0.spec.display_name = Some(display_name.to_owned());
        self
    }

    pub fn publisher(mut self, publisher: &str) -> Self {
        self.0.spec.publisher = Some(publisher.to_owned());
        self
    }

    /// `spec.secrets`: the pull secrets of the catalog's image.
    pub fn secrets(mut self, names: &[&str]) -> Self {
        self.0.spec.secrets = Some(names.iter().map(|n| (*n).to_owned()).collect());
        self
    }

    pub fn priority(mut self, priority: i32) -> Self {
        self.0.spec.priority = Some(priority);
        self
    }

    /// `spec.updateStrategy.registryPoll.interval`.
    pub fn poll(mut self, interval: &str) -> Self {
        self.0.spec.update_strategy = Some(UpdateStrategy {
            registry_poll: Some(RegistryPoll {
                interval: Some(interval.to_owned()),
            }),
        });
        self
    }

    pub fn build(self) -> CatalogSource {
        self.0
    }
}

/// Builds an InstallPlan (automatic, not approved, no status).
#[derive(Debug, Clone)]
pub struct Ip(InstallPlan);

impl Ip {
    pub fn named(name: &str) -> Self {
        let spec = InstallPlanSpec {
            source: None,
            source_namespace: None,
            cluster_service_version_names: Vec::new(),
            approval: Approval::Automatic,
            approved: false,
            generation: None,
        };
        Ip(InstallPlan {
            metadata: meta(name),
            spec,
            status: None,
        })
    }

    pub fn in_ns(mut self, namespace: &str) -> Self {
        self.0.metadata.namespace = Some(namespace.to_owned());
        self
    }

    pub fn csvs(mut self, names: &[&str]) -> Self {
        self.0.spec.cluster_service_version_names = names.iter().map(|n| (*n).to_owned()).collect();
        self
    }

    pub fn approval(mut self, approval: Approval, approved: bool) -> Self {
        self.0.spec.approval = approval;
        self.0.spec.approved = approved;
        self
    }

    pub fn phase(mut self, phase: InstallPlanPhase) -> Self {
        self.0
            .status
            .get_or_insert_with(InstallPlanStatus::default)
            .phase = phase;
        self
    }

    pub fn build(self) -> InstallPlan {
        self.0
    }
}
