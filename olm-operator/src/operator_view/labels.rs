//! The component label writes of the view: one merge patch touching one label of one object (adding it, or
//! taking it off an older InstallPlan), and what the write is for, so that a failed write retries the
//! Subscription or Operator it belongs to.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client, Resource};
use messages::crd::csv::ClusterServiceVersion;
use messages::crd::install_plan::InstallPlan;
use messages::crd::operator_condition::OperatorCondition;
use messages::crd::subscription::Subscription;
use messages::key::ObjectKey;
use olm_runtime::error::{self as api_error, Class};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
use std::fmt::Debug;

/// The kinds the view reads or labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Subscription,
    Csv,
    InstallPlan,
    Deployment,
    Namespace,
    ServiceAccount,
    Role,
    ClusterRole,
    RoleBinding,
    ClusterRoleBinding,
    Service,
    ApiService,
    OperatorCondition,
    Crd,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Subscription => "Subscription",
            Kind::Csv => "ClusterServiceVersion",
            Kind::InstallPlan => "InstallPlan",
            Kind::Deployment => "Deployment",
            Kind::Namespace => "Namespace",
            Kind::ServiceAccount => "ServiceAccount",
            Kind::Role => "Role",
            Kind::ClusterRole => "ClusterRole",
            Kind::RoleBinding => "RoleBinding",
            Kind::ClusterRoleBinding => "ClusterRoleBinding",
            Kind::Service => "Service",
            Kind::ApiService => "APIService",
            Kind::OperatorCondition => "OperatorCondition",
            Kind::Crd => "CustomResourceDefinition",
        }
    }
}

/// What a write is done for: retried by adopting from the Subscription again, or refreshing the Operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum For {
    Subscription(ObjectKey),
    Operator(String),
}

/// One label write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelWrite {
    pub kind: Kind,
    pub namespace: Option<String>,
    pub name: String,
    pub key: String,
    /// Add the label (empty value, as OLM) or take it off.
    pub add: bool,
    pub for_: For,
}

/// A merge patch touching one label only (`None` removes it).
#[derive(Serialize, Debug)]
struct LabelPatch<'a> {
    metadata: LabelMeta<'a>,
}

#[derive(Serialize, Debug)]
struct LabelMeta<'a> {
    labels: BTreeMap<&'a str, Option<&'a str>>,
}

impl LabelWrite {
    pub fn add(kind: Kind, namespace: Option<&str>, name: &str, key: &str, for_: For) -> Self {
        Self {
            kind,
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
            key: key.to_owned(),
            add: true,
            for_,
        }
    }

    pub fn remove(kind: Kind, namespace: Option<&str>, name: &str, key: &str, for_: For) -> Self {
        Self {
            add: false,
            ..Self::add(kind, namespace, name, key, for_)
        }
    }

    /// Patch the label (an object gone meanwhile is no error).
    pub async fn apply(&self, client: &Client) -> kube::Result<()> {
        let ns = self.namespace.as_deref().unwrap_or_default();
        let c = client.clone();
        match self.kind {
            Kind::Subscription => self.patch(Api::<Subscription>::namespaced(c, ns)).await,
            Kind::Csv => {
                self.patch(Api::<ClusterServiceVersion>::namespaced(c, ns))
                    .await
            }
            Kind::InstallPlan => self.patch(Api::<InstallPlan>::namespaced(c, ns)).await,
            Kind::Deployment => self.patch(Api::<Deployment>::namespaced(c, ns)).await,
            Kind::Namespace => self.patch(Api::<Namespace>::all(c)).await,
            Kind::ServiceAccount => self.patch(Api::<ServiceAccount>::namespaced(c, ns)).await,
            Kind::Role => self.patch(Api::<Role>::namespaced(c, ns)).await,
            Kind::ClusterRole => self.patch(Api::<ClusterRole>::all(c)).await,
            Kind::RoleBinding => self.patch(Api::<RoleBinding>::namespaced(c, ns)).await,
            Kind::ClusterRoleBinding => self.patch(Api::<ClusterRoleBinding>::all(c)).await,
            Kind::Service => self.patch(Api::<Service>::namespaced(c, ns)).await,
            Kind::ApiService => self.patch(Api::<APIService>::all(c)).await,
            Kind::OperatorCondition => {
                self.patch(Api::<OperatorCondition>::namespaced(c, ns))
                    .await
            }
            Kind::Crd => self.patch(Api::<CustomResourceDefinition>::all(c)).await,
        }
    }

    async fn patch<K>(&self, api: Api<K>) -> kube::Result<()>
    where
        K: Resource + Clone + DeserializeOwned + Debug,
    {
        let value = self.add.then_some("");
        let patch = LabelPatch {
            metadata: LabelMeta {
                labels: BTreeMap::from([(self.key.as_str(), value)]),
            },
        };
        match api
            .patch(&self.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if api_error::is(&e, Class::NotFound) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_names_are_the_api_kinds() {
        let pairs = [
            (Kind::Subscription, Subscription::kind(&()).into_owned()),
            (Kind::Csv, ClusterServiceVersion::kind(&()).into_owned()),
            (Kind::InstallPlan, InstallPlan::kind(&()).into_owned()),
            (Kind::Deployment, Deployment::kind(&()).into_owned()),
            (Kind::Namespace, Namespace::kind(&()).into_owned()),
            (Kind::ServiceAccount, ServiceAccount::kind(&()).into_owned()),
            (Kind::Role, Role::kind(&()).into_owned()),
            (Kind::ClusterRole, ClusterRole::kind(&()).into_owned()),
            (Kind::RoleBinding, RoleBinding::kind(&()).into_owned()),
            (
                Kind::ClusterRoleBinding,
                ClusterRoleBinding::kind(&()).into_owned(),
            ),
            (Kind::Service, Service::kind(&()).into_owned()),
            (Kind::ApiService, APIService::kind(&()).into_owned()),
            (
                Kind::OperatorCondition,
                OperatorCondition::kind(&()).into_owned(),
            ),
            (Kind::Crd, CustomResourceDefinition::kind(&()).into_owned()),
        ];
        for (kind, api) in pairs {
            assert_eq!(kind.name(), api, "{kind:?}");
        }
    }

    #[test]
    fn a_removal_is_the_same_write_without_the_label() {
        let for_ = For::Operator("etcd.ns".into());
        let add = LabelWrite::add(
            Kind::InstallPlan,
            Some("ns"),
            "install-1",
            "k",
            for_.clone(),
        );
        let remove = LabelWrite::remove(Kind::InstallPlan, Some("ns"), "install-1", "k", for_);
        assert!(add.add && !remove.add);
        assert_eq!(
            LabelWrite {
                add: true,
                ..remove
            },
            add
        );
    }
}
