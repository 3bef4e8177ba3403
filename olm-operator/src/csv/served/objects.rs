//! The objects that make a serving deployment reachable and trusted, pure builders: its Service, the
//! Secret with the CA and serving pair, the Role/RoleBinding letting the deployment's service account read
//! that Secret, the `system:auth-delegator` ClusterRoleBinding and kube-system `auth-reader` RoleBinding
//! (OLM creates both for every serving deployment), and the cert volumes plus `olmcahash` annotation on the
//! deployment (OLM's `AddDefaultCertVolumeAndVolumeMounts` and `SetCAAnnotation`: a new CA rolls the pods).
//! Everything carries `olm.managed=true` and the CSV's owner labels; namespaced objects get a non-blocking
//! owner reference to the CSV, so the garbage collector removes them with it.

use super::certs::{CA_HASH_ANNOTATION, CA_KEY, Issued};
use super::plan::{self, Serving};
use crate::strategy::owner_labels;
use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{
    KeyToPath, Secret, SecretVolumeSource, Service, ServiceSpec, Volume, VolumeMount,
};
use k8s_openapi::api::rbac::v1::{
    ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use messages::crd::csv::ClusterServiceVersion;
use std::collections::BTreeMap;

/// Where OLM mounts the pair for API servers (`apiserver.crt`/`apiserver.key`).
pub const APISERVICE_CERT_DIR: &str = "/apiserver.local.config/certificates";
/// Where controller-runtime (Operator SDK, Kubebuilder) looks for webhook certs (`tls.crt`/`tls.key`).
pub const WEBHOOK_CERT_DIR: &str = "/tmp/k8s-webhook-server/serving-certs";
const APISERVICE_VOLUME: &str = "apiservice-cert";
const WEBHOOK_VOLUME: &str = "webhook-cert";
/// The namespace of the `extension-apiserver-authentication-reader` Role.
pub const KUBE_SYSTEM: &str = "kube-system";

/// The CSV as owner: its name, namespace and a non-blocking owner reference.
#[derive(Clone, Debug)]
pub struct Owner {
    pub name: String,
    pub namespace: String,
    pub reference: OwnerReference,
}

impl Owner {
    /// `None` until the CSV is persisted (no uid).
    pub fn of(csv: &ClusterServiceVersion) -> Option<Self> {
        let name = csv.metadata.name.clone()?;
        let namespace = csv.metadata.namespace.clone()?;
        let uid = csv.metadata.uid.clone()?;
        Some(Self {
            reference: OwnerReference {
                api_version: "operators.coreos.com/v1alpha1".into(),
                kind: "ClusterServiceVersion".into(),
                name: name.clone(),
                uid,
                controller: Some(false),
                block_owner_deletion: Some(false),
            },
            name,
            namespace,
        })
    }

    pub fn labels(&self) -> BTreeMap<String, String> {
        owner_labels(&self.name, &self.namespace)
    }

    /// Metadata of a namespaced object owned by the CSV in `namespace` (its own, or kube-system without an
    /// owner reference: one cannot point across namespaces).
    fn meta(&self, name: String, namespace: &str) -> ObjectMeta {
        let owned = namespace == self.namespace;
        ObjectMeta {
            name: Some(name),
            namespace: Some(namespace.to_string()),
            labels: Some(self.labels()),
            owner_references: owned.then(|| vec![self.reference.clone()]),
            ..ObjectMeta::default()
        }
    }
}

/// The Service in front of the deployment's pods (selector = the deployment's `matchLabels`).
pub fn service(owner: &Owner, serving: &Serving, deployment: &Deployment) -> Service {
    let selector = deployment
        .spec
        .as_ref()
        .and_then(|s| s.selector.match_labels.clone());
    Service {
        metadata: owner.meta(serving.service.clone(), &owner.namespace),
        spec: Some(ServiceSpec {
            ports: Some(serving.ports.clone()),
            selector,
            ..ServiceSpec::default()
        }),
        status: None,
    }
}

/// The `kubernetes.io/tls` Secret: `tls.crt`, `tls.key`, `olmCAKey`, annotated with the CA hash.
pub fn secret(owner: &Owner, serving: &Serving, issued: &Issued) -> Secret {
    let mut metadata = owner.meta(serving.secret.clone(), &owner.namespace);
    metadata.annotations = Some(BTreeMap::from([(
        CA_HASH_ANNOTATION.to_string(),
        super::certs::ca_hash(issued.ca_pem.as_bytes()),
    )]));
    let bytes = |s: &str| ByteString(s.as_bytes().to_vec());
    Secret {
        metadata,
        type_: Some("kubernetes.io/tls".into()),
        data: Some(BTreeMap::from([
            ("tls.crt".to_string(), bytes(&issued.cert_pem)),
            ("tls.key".to_string(), bytes(&issued.key_pem)),
            (CA_KEY.to_string(), bytes(&issued.ca_pem)),
        ])),
        ..Secret::default()
    }
}

/// The deployment's service account (`default` when its pod spec names none, as OLM).
pub fn service_account(deployment: &Deployment) -> String {
    deployment
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|p| p.service_account_name.clone())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "default".into())
}

fn subject(owner: &Owner, account: &str) -> Vec<Subject> {
    vec![Subject {
        kind: "ServiceAccount".into(),
        name: account.into(),
        namespace: Some(owner.namespace.clone()),
        api_group: Some(String::new()),
    }]
}

/// Role and RoleBinding named after the Secret: `get` on that Secret only, for the deployment's account.
pub fn secret_access(owner: &Owner, serving: &Serving, account: &str) -> (Role, RoleBinding) {
    let role = Role {
        metadata: owner.meta(serving.secret.clone(), &owner.namespace),
        rules: Some(vec![PolicyRule {
            verbs: vec!["get".into()],
            api_groups: Some(vec![String::new()]),
            resources: Some(vec!["secrets".into()]),
            resource_names: Some(vec![serving.secret.clone()]),
            ..PolicyRule::default()
        }]),
    };
    let binding = RoleBinding {
        metadata: owner.meta(serving.secret.clone(), &owner.namespace),
        role_ref: role_ref("Role", &serving.secret),
        subjects: Some(subject(owner, account)),
    };
    (role, binding)
}

fn role_ref(kind: &str, name: &str) -> RoleRef {
    RoleRef {
        api_group: "rbac.authorization.k8s.io".into(),
        kind: kind.into(),
        name: name.into(),
    }
}

/// `<service>-system:auth-delegator` (delegated authn/authz for API servers), cluster-scoped: found by
/// owner labels when the CSV goes.
pub fn auth_delegator(owner: &Owner, serving: &Serving, account: &str) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: ObjectMeta {
            name: Some(plan::auth_delegator_name(&serving.service)),
            labels: Some(owner.labels()),
            ..ObjectMeta::default()
        },
        role_ref: role_ref("ClusterRole", "system:auth-delegator"),
        subjects: Some(subject(owner, account)),
    }
}

/// `kube-system/<service>-auth-reader` (read the `extension-apiserver-authentication` ConfigMap).
pub fn auth_reader(owner: &Owner, serving: &Serving, account: &str) -> RoleBinding {
    RoleBinding {
        metadata: owner.meta(plan::auth_reader_name(&serving.service), KUBE_SYSTEM),
        role_ref: role_ref("Role", "extension-apiserver-authentication-reader"),
        subjects: Some(subject(owner, account)),
    }
}

/// Mount the Secret where API servers and webhook servers look for it, and annotate the pod template with
/// the CA hash (a new CA changes the template: the deployment rolls). Volumes and mounts of the same name or
/// mount path are replaced, not duplicated.
pub fn mount_certs(deployment: &mut Deployment, secret: &str, ca_hash: &str) {
    let Some(spec) = deployment.spec.as_mut() else {
        return;
    };
    let template = &mut spec.template;
    template
        .metadata
        .get_or_insert_with(ObjectMeta::default)
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(CA_HASH_ANNOTATION.into(), ca_hash.into());
    let Some(pod) = template.spec.as_mut() else {
        return;
    };
    let item = |key: &str, path: &str| KeyToPath {
        key: key.into(),
        path: path.into(),
        mode: None,
    };
    for (name, dir, items) in [
        (
            APISERVICE_VOLUME,
            APISERVICE_CERT_DIR,
            vec![
                item("tls.crt", "apiserver.crt"),
                item("tls.key", "apiserver.key"),
            ],
        ),
        (
            WEBHOOK_VOLUME,
            WEBHOOK_CERT_DIR,
            vec![item("tls.crt", "tls.crt"), item("tls.key", "tls.key")],
        ),
    ] {
        let volume = Volume {
            name: name.into(),
            secret: Some(SecretVolumeSource {
                secret_name: Some(secret.into()),
                items: Some(items),
                ..SecretVolumeSource::default()
            }),
            ..Volume::default()
        };
        let volumes = pod.volumes.get_or_insert_with(Vec::new);
        match volumes.iter_mut().find(|v| v.name == name) {
            Some(v) => *v = volume,
            None => volumes.push(volume),
        }
        let mount = VolumeMount {
            name: name.into(),
            mount_path: dir.into(),
            ..VolumeMount::default()
        };
        for container in &mut pod.containers {
            let mounts = container.volume_mounts.get_or_insert_with(Vec::new);
            match mounts
                .iter_mut()
                .find(|m| m.name == name || m.mount_path == dir)
            {
                Some(m) => *m = mount.clone(),
                None => mounts.push(mount.clone()),
            }
        }
    }
}

/// The CA hash a live deployment's pods were started with.
pub fn mounted_ca_hash(deployment: &Deployment) -> Option<&str> {
    deployment
        .spec
        .as_ref()?
        .template
        .metadata
        .as_ref()?
        .annotations
        .as_ref()?
        .get(CA_HASH_ANNOTATION)
        .map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::DeploymentSpec;
    use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
    use messages::testing::{Csv, Webhook};

    fn owner() -> Owner {
        let csv = Csv::named("op.v1").in_ns("ns").uid("u-1").build();
        Owner::of(&csv).expect("persisted")
    }

    fn serving() -> Serving {
        let selector = LabelSelector {
            match_labels: Some([("app".to_owned(), "op".to_owned())].into()),
            ..LabelSelector::default()
        };
        let spec = DeploymentSpec {
            selector,
            ..DeploymentSpec::default()
        };
        let csv = Csv::named("op.v1")
            .in_ns("ns")
            .deployment_spec("op", spec)
            .webhook(Webhook::validating("v.x.io", "op").port(9443).build())
            .build();
        plan::of(&csv).remove(0)
    }

    fn deployment(mounts: Vec<VolumeMount>) -> Deployment {
        Deployment {
            metadata: ObjectMeta {
                name: Some("op".into()),
                ..ObjectMeta::default()
            },
            spec: Some(DeploymentSpec {
                selector: k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
                    match_labels: Some(BTreeMap::from([("app".into(), "op".into())])),
                    ..Default::default()
                },
                template: PodTemplateSpec {
                    metadata: None,
                    spec: Some(PodSpec {
                        containers: vec![Container {
                            name: "c".into(),
                            volume_mounts: Some(mounts),
                            ..Container::default()
                        }],
                        ..PodSpec::default()
                    }),
                },
                ..DeploymentSpec::default()
            }),
            status: None,
        }
    }

    #[test]
    fn certs_are_mounted_where_olm_mounts_them_and_the_ca_hash_rolls_the_pods() {
        let stale = VolumeMount {
            name: "old".into(),
            mount_path: WEBHOOK_CERT_DIR.into(),
            ..VolumeMount::default()
        };
        let mut d = deployment(vec![stale]);
        mount_certs(&mut d, "op-service-cert", "h1");
        mount_certs(&mut d, "op-service-cert", "h2");
        assert_eq!(mounted_ca_hash(&d), Some("h2"));
        let pod = d
            .spec
            .as_ref()
            .and_then(|s| s.template.spec.clone())
            .expect("pod");
        let volumes: Vec<(String, Vec<String>)> = pod
            .volumes
            .iter()
            .flatten()
            .map(|v| {
                let items = v
                    .secret
                    .as_ref()
                    .and_then(|s| s.items.clone())
                    .unwrap_or_default();
                (
                    v.name.clone(),
                    items
                        .into_iter()
                        .map(|i| format!("{}>{}", i.key, i.path))
                        .collect(),
                )
            })
            .collect();
        assert_eq!(
            volumes,
            vec![
                (
                    "apiservice-cert".to_string(),
                    vec![
                        "tls.crt>apiserver.crt".to_string(),
                        "tls.key>apiserver.key".to_string()
                    ]
                ),
                (
                    "webhook-cert".to_string(),
                    vec!["tls.crt>tls.crt".to_string(), "tls.key>tls.key".to_string()]
                ),
            ]
        );
        let mounts: Vec<(String, String)> = pod.containers[0]
            .volume_mounts
            .iter()
            .flatten()
            .map(|m| (m.name.clone(), m.mount_path.clone()))
            .collect();
        assert_eq!(
            mounts,
            vec![
                ("webhook-cert".to_string(), WEBHOOK_CERT_DIR.to_string()),
                (
                    "apiservice-cert".to_string(),
                    APISERVICE_CERT_DIR.to_string()
                ),
            ],
            "the mount at the webhook path is replaced, not duplicated"
        );
    }

    #[test]
    fn the_service_selects_the_pods_and_is_owned_by_the_csv() {
        let s = service(&owner(), &serving(), &deployment(vec![]));
        assert_eq!(s.metadata.name.as_deref(), Some("op-service"));
        let spec = s.spec.expect("spec");
        assert_eq!(
            spec.selector,
            Some(BTreeMap::from([("app".into(), "op".into())]))
        );
        assert_eq!(spec.ports.expect("ports")[0].port, 9443);
        let refs = s.metadata.owner_references.expect("owned");
        assert_eq!(
            (refs[0].name.as_str(), refs[0].uid.as_str()),
            ("op.v1", "u-1")
        );
        assert_eq!(
            s.metadata
                .labels
                .expect("labels")
                .get("olm.owner")
                .map(String::as_str),
            Some("op.v1")
        );
    }

    #[test]
    fn the_secret_holds_the_pair_and_the_ca_with_its_hash() {
        let issued = super::super::certs::issue(
            &["op-service.ns".to_string()],
            1_800_000_000,
            Default::default(),
        )
        .expect("issued");
        let s = secret(&owner(), &serving(), &issued);
        assert_eq!(s.type_.as_deref(), Some("kubernetes.io/tls"));
        let data = s.data.expect("data");
        assert_eq!(
            data.keys().cloned().collect::<Vec<_>>(),
            vec!["olmCAKey", "tls.crt", "tls.key"]
        );
        assert_eq!(
            s.metadata
                .annotations
                .expect("annotations")
                .get("olmcahash"),
            Some(&super::super::certs::ca_hash(issued.ca_pem.as_bytes()))
        );
    }

    #[test]
    fn the_secret_is_readable_by_the_deployment_account_only_by_name() {
        let (role, binding) =
            secret_access(&owner(), &serving(), &service_account(&deployment(vec![])));
        let rule = &role.rules.expect("rules")[0];
        assert_eq!(
            rule.resource_names,
            Some(vec!["op-service-cert".to_string()])
        );
        assert_eq!(rule.verbs, vec!["get".to_string()]);
        assert_eq!(binding.subjects.expect("subjects")[0].name, "default");
        let reader = auth_reader(&owner(), &serving(), "sa");
        assert_eq!(reader.metadata.namespace.as_deref(), Some(KUBE_SYSTEM));
        assert!(
            reader.metadata.owner_references.is_none(),
            "no owner reference across namespaces"
        );
        assert_eq!(
            auth_delegator(&owner(), &serving(), "sa")
                .metadata
                .name
                .as_deref(),
            Some("op-service-system:auth-delegator")
        );
    }
}
