//! What a failing test prints: the OLM objects, Deployments, Pods and Events of its namespace, so a failure can
//! be understood from the CI log alone.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams};
use kube::discovery::ApiResource;

const OLM_KINDS: [(&str, &str, &str); 5] = [
    (
        "v1alpha1",
        "ClusterServiceVersion",
        "clusterserviceversions",
    ),
    ("v1alpha1", "Subscription", "subscriptions"),
    ("v1alpha1", "InstallPlan", "installplans"),
    ("v1alpha1", "CatalogSource", "catalogsources"),
    ("v1", "OperatorGroup", "operatorgroups"),
];

pub async fn dump_namespace(client: &Client, namespace: &str) {
    eprintln!("===== dump of namespace {namespace} =====");
    for (version, kind, plural) in OLM_KINDS {
        let ar = ApiResource {
            group: "operators.coreos.com".into(),
            version: version.into(),
            api_version: format!("operators.coreos.com/{version}"),
            kind: kind.into(),
            plural: plural.into(),
        };
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &ar);
        match api.list(&ListParams::default()).await {
            Ok(list) => {
                for obj in list.items {
                    let name = obj.metadata.name.clone().unwrap_or_default();
                    let status = obj.data.get("status").cloned().unwrap_or_default();
                    eprintln!(
                        "--- {kind} {name}\n{}",
                        serde_json::to_string_pretty(&status).unwrap_or_default()
                    );
                }
            }
            Err(e) => eprintln!("--- {kind}: cannot list: {e}"),
        }
    }
    if let Ok(list) = Api::<Deployment>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await
    {
        for d in list.items {
            eprintln!(
                "--- Deployment {} status {}",
                d.metadata.name.unwrap_or_default(),
                serde_json::to_string(&d.status).unwrap_or_default()
            );
        }
    }
    if let Ok(list) = Api::<Pod>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await
    {
        for p in list.items {
            let phase = p.status.and_then(|s| s.phase).unwrap_or_default();
            eprintln!(
                "--- Pod {} phase {phase}",
                p.metadata.name.unwrap_or_default()
            );
        }
    }
    if let Ok(list) = Api::<Event>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await
    {
        for e in list.items {
            let obj = e.involved_object.name.unwrap_or_default();
            eprintln!(
                "--- Event {} {} {obj}: {}",
                e.type_.unwrap_or_default(),
                e.reason.unwrap_or_default(),
                e.message.unwrap_or_default()
            );
        }
    }
    eprintln!("===== end of dump =====");
}
