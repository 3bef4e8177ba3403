//! Discovery answers for InstallPlan steps, cached for every plan (held in `Shared`). A leaf of the module graph.

use kube::Client;
use kube::api::ApiResource;
use kube::core::GroupVersionKind;
use kube::discovery::{ApiCapabilities, Scope};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// (group, version, kind) → (resource, namespaced).
type KindCache = HashMap<(String, String, String), (ApiResource, bool)>;

/// Discovery answers, shared by every plan.
#[derive(Default, Clone)]
pub struct Kinds {
    cache: Arc<Mutex<KindCache>>,
}

impl Kinds {
    pub async fn resolve(
        &self,
        client: &Client,
        group: &str,
        version: &str,
        kind: &str,
    ) -> Result<(ApiResource, bool), kube::Error> {
        let key = (group.to_string(), version.to_string(), kind.to_string());
        if let Some(hit) = self
            .cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
        {
            return Ok(hit.clone());
        }
        let (ar, caps): (ApiResource, ApiCapabilities) =
            kube::discovery::pinned_kind(client, &GroupVersionKind::gvk(group, version, kind))
                .await?;
        let hit = (ar, caps.scope == Scope::Namespaced);
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, hit.clone());
        Ok(hit)
    }
}
