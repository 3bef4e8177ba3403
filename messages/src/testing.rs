//! Object builders for tests of other crates (feature `testing`), e.g.
//! `Csv::named("a.v1").in_ns("x").version("1.0.0").phase(CsvPhase::Succeeded, CsvReason::InstallSucceeded).build()`.
//!
//! Builders fill only what is asked for; everything else keeps the type's defaults. Webhook definitions:
//! `Csv::named("a.v1").webhook(Webhook::validating("vw.example.com", "server").path("/validate").build())`.

use std::collections::BTreeMap;

use k8s_openapi::api::admissionregistration::v1::RuleWithOperations;
use k8s_openapi::api::apps::v1::DeploymentSpec;
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::api::rbac::v1::PolicyRule;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::crd::catalog_source::{
    CatalogSource, CatalogSourceSpec, RegistryPoll, SourceType, UpdateStrategy,
};
use crate::crd::csv::{
    ApiServiceDefinitions, ApiServiceDescription, ClusterServiceVersion, ClusterServiceVersionSpec,
    ClusterServiceVersionStatus, CrdDescription, CsvPhase, CsvReason, CustomResourceDefinitions,
    INSTALL_STRATEGY_NAME_DEPLOYMENT, InstallMode, InstallModeType, NamedInstallStrategy,
    StrategyDeploymentPermissions, StrategyDeploymentSpec, StrategyDetailsDeployment,
    WebhookAdmissionType, WebhookDescription,
};
use crate::crd::install_plan::{InstallPlan, InstallPlanPhase, InstallPlanSpec, InstallPlanStatus};
use crate::crd::operator_group::{OperatorGroup, OperatorGroupSpec, OperatorGroupStatus};
use crate::crd::subscription::{Approval, Subscription, SubscriptionConfig, SubscriptionSpec};

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

    /// The uid the API server would have given it (owner references need one).
    pub fn uid(mut self, uid: &str) -> Self {
        self.0.metadata.uid = Some(uid.to_owned());
        self
    }

    pub fn version(mut self, version: &str) -> Self {
        self.0.spec.version = Some(version.to_owned());
        self
    }

    /// `spec.displayName` (the CSV's name unless set).
    pub fn display_name(mut self, display_name: &str) -> Self {
        self.0.spec.display_name = display_name.to_owned();
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

    /// Exactly these install modes, in this order, each supported or not.
    pub fn install_mode_list(mut self, modes: &[(InstallModeType, bool)]) -> Self {
        self.0.spec.install_modes = Some(
            modes
                .iter()
                .map(|(t, supported)| InstallMode {
                    type_: t.clone(),
                    supported: *supported,
                })
                .collect(),
        );
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

    /// Owns this APIService (`spec.apiservicedefinitions.owned`).
    pub fn owns_api_service(mut self, api: ApiServiceDescription) -> Self {
        self.0
            .spec
            .api_service_definitions
            .get_or_insert_with(ApiServiceDefinitions::default)
            .owned
            .get_or_insert_with(Vec::new)
            .push(api);
        self
    }

    /// Adds a webhook definition (`spec.webhookdefinitions`), built with [`Webhook`].
    pub fn webhook(mut self, webhook: WebhookDescription) -> Self {
        self.0
            .spec
            .webhook_definitions
            .get_or_insert_with(Vec::new)
            .push(webhook);
        self
    }

    /// Adds a one-container Deployment `name` running `image`, selected by `app: <name>`.
    pub fn deployment(self, name: &str, image: &str) -> Self {
        self.deployment_spec(name, app_deployment(name, name, image))
    }

    /// Adds Deployment `name` with this spec (start from [`app_deployment`] to set more fields).
    pub fn deployment_spec(mut self, name: &str, spec: DeploymentSpec) -> Self {
        self.details().deployments.push(StrategyDeploymentSpec {
            name: name.to_owned(),
            spec,
            label: None,
        });
        self
    }

    /// Grants `service_account` these rules in the operator's namespace (`install.spec.permissions`).
    pub fn permission(mut self, service_account: &str, rules: Vec<PolicyRule>) -> Self {
        self.details()
            .permissions
            .get_or_insert_with(Vec::new)
            .push(StrategyDeploymentPermissions {
                service_account_name: service_account.to_owned(),
                rules,
            });
        self
    }

    /// Grants `service_account` these rules cluster-wide (`install.spec.clusterPermissions`).
    pub fn cluster_permission(mut self, service_account: &str, rules: Vec<PolicyRule>) -> Self {
        self.details()
            .cluster_permissions
            .get_or_insert_with(Vec::new)
            .push(StrategyDeploymentPermissions {
                service_account_name: service_account.to_owned(),
                rules,
            });
        self
    }

    fn details(&mut self) -> &mut StrategyDetailsDeployment {
        self.0
            .spec
            .install
            .spec
            .get_or_insert_with(StrategyDetailsDeployment::default)
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

/// A Deployment spec selecting `app: <app>` with one container `container` running `image` (no replica count).
pub fn app_deployment(app: &str, container: &str, image: &str) -> DeploymentSpec {
    let labels = BTreeMap::from([("app".to_owned(), app.to_owned())]);
    DeploymentSpec {
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
                    name: container.to_owned(),
                    image: Some(image.to_owned()),
                    ..Container::default()
                }],
                ..PodSpec::default()
            }),
        },
        ..DeploymentSpec::default()
    }
}

/// A policy rule: `verbs` on `resources` of the API groups `api_groups` (`""` is the core group).
pub fn rule(api_groups: &[&str], resources: &[&str], verbs: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(strings(api_groups)),
        resources: Some(strings(resources)),
        verbs: strings(verbs),
        ..PolicyRule::default()
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|i| (*i).to_owned()).collect()
}

/// Builds a webhook definition of a CSV (`WebhookDescription`): only what is asked for is set.
#[derive(Debug, Clone)]
pub struct Webhook(WebhookDescription);

impl Webhook {
    fn new(type_: WebhookAdmissionType, generate_name: &str, deployment: &str) -> Self {
        Webhook(WebhookDescription {
            generate_name: generate_name.to_owned(),
            type_,
            deployment_name: Some(deployment.to_owned()),
            container_port: None,
            target_port: None,
            rules: None,
            failure_policy: None,
            match_policy: None,
            object_selector: None,
            side_effects: None,
            timeout_seconds: None,
            admission_review_versions: None,
            reinvocation_policy: None,
            webhook_path: None,
            conversion_crds: None,
        })
    }

    /// A `ValidatingAdmissionWebhook` served by Deployment `deployment`.
    pub fn validating(generate_name: &str, deployment: &str) -> Self {
        Self::new(
            WebhookAdmissionType::ValidatingAdmissionWebhook,
            generate_name,
            deployment,
        )
    }

    /// A `MutatingAdmissionWebhook` served by Deployment `deployment`.
    pub fn mutating(generate_name: &str, deployment: &str) -> Self {
        Self::new(
            WebhookAdmissionType::MutatingAdmissionWebhook,
            generate_name,
            deployment,
        )
    }

    /// A `ConversionWebhook` served by Deployment `deployment` for the CRDs `crds` (`conversionCRDs`).
    pub fn conversion(generate_name: &str, deployment: &str, crds: &[&str]) -> Self {
        let mut hook = Self::new(
            WebhookAdmissionType::ConversionWebhook,
            generate_name,
            deployment,
        );
        hook.0.conversion_crds = Some(strings(crds));
        hook
    }

    /// `containerPort`.
    pub fn port(mut self, port: i32) -> Self {
        self.0.container_port = Some(port);
        self
    }

    /// `targetPort` (a number).
    pub fn target_port(mut self, port: i32) -> Self {
        self.0.target_port = Some(IntOrString::Int(port));
        self
    }

    /// `webhookPath`.
    pub fn path(mut self, path: &str) -> Self {
        self.0.webhook_path = Some(path.to_owned());
        self
    }

    /// `failurePolicy` (`Fail` or `Ignore`).
    pub fn failure_policy(mut self, policy: &str) -> Self {
        self.0.failure_policy = Some(policy.to_owned());
        self
    }

    /// `sideEffects` (`None`, `NoneOnDryRun`, ...).
    pub fn side_effects(mut self, side_effects: &str) -> Self {
        self.0.side_effects = Some(side_effects.to_owned());
        self
    }

    /// `admissionReviewVersions`.
    pub fn review_versions(mut self, versions: &[&str]) -> Self {
        self.0.admission_review_versions = Some(strings(versions));
        self
    }

    /// Adds a rule: `operations` on `resources` of `api_groups` at `api_versions`.
    pub fn rule(
        mut self,
        api_groups: &[&str],
        api_versions: &[&str],
        resources: &[&str],
        operations: &[&str],
    ) -> Self {
        self.0
            .rules
            .get_or_insert_with(Vec::new)
            .push(RuleWithOperations {
                api_groups: Some(strings(api_groups)),
                api_versions: Some(strings(api_versions)),
                resources: Some(strings(resources)),
                operations: Some(strings(operations)),
                scope: None,
            });
        self
    }

    pub fn build(self) -> WebhookDescription {
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

    /// `spec.config`: what the operator's Deployments get (env, node selector, annotations, ...).
    pub fn config(mut self, config: SubscriptionConfig) -> Self {
        self.0.spec.config = Some(config);
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

    pub fn generation(mut self, generation: i64) -> Self {
        self.0.spec.generation = Some(generation);
        self
    }

    /// An owner reference to the Subscription `name` (uid `uid-<name>`), as resolution writes on its plans.
    pub fn owned_by_subscription(mut self, name: &str) -> Self {
        self.0
            .metadata
            .owner_references
            .get_or_insert_with(Vec::new)
            .push(OwnerReference {
                api_version: "operators.coreos.com/v1alpha1".to_owned(),
                kind: "Subscription".to_owned(),
                name: name.to_owned(),
                uid: format!("uid-{name}"),
                ..OwnerReference::default()
            });
        self
    }

    pub fn build(self) -> InstallPlan {
        self.0
    }
}
