//! How olm-operator writes the objects it renders and owns (docs/applying-objects.md has the decision per kind).
//! [`apply`]: server-side apply as field manager [`MANAGER`] with `force`, one request whether the object
//! exists or not; fields other managers set (a user's label, an autoscaler's replicas) stay theirs. Fields an
//! earlier create/update of ours or of OLM v0 owns are taken over after the apply (`managed_fields.rs`), so
//! what the CSV no longer renders goes. An object server-side apply refuses for duplicate list keys is written
//! by [`create_or_replace`] instead. Kinds olm-operator shares with others are not written here (create/update
//! or merge patches at their call sites, each saying why).

mod managed_fields;
mod request;

pub use request::post_params;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Patch, PatchParams};
use kube::{Api, Resource};
use olm_runtime::error::{self as api_error, Class};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;

/// The field manager of every write of olm-operator.
pub const MANAGER: &str = "olm-operator";

/// A write that failed: what was being done, and the API's answer.
#[derive(Debug)]
pub struct Failed {
    pub verb: &'static str,
    pub source: kube::Error,
}

fn failed(verb: &'static str) -> impl FnOnce(kube::Error) -> Failed {
    move |source| Failed { verb, source }
}

/// A merge patch of `metadata` alone (the managed fields, with the resourceVersion they were read at).
#[derive(Serialize, Debug)]
struct MetadataPatch {
    metadata: ObjectMeta,
}

/// Server-side apply `obj` (see the module docs).
pub async fn apply<K>(api: &Api<K>, obj: &K) -> Result<(), Failed>
where
    K: Resource + Clone + Serialize + DeserializeOwned + Debug,
{
    let body = request::body(obj);
    let name = body.meta().name.clone().unwrap_or_default();
    let params = request::apply_params();
    let applied = match api.patch(&name, &params, &Patch::Apply(&body)).await {
        Ok(applied) => applied,
        Err(e) if request::refused_for_duplicates(&e) => {
            tracing::debug!(name = %name, error = &e as &dyn std::error::Error, "not appliable, created or replaced instead");
            return create_or_replace(api, obj).await;
        }
        Err(source) => {
            return Err(Failed {
                verb: "apply",
                source,
            });
        }
    };
    if take_over(api, &name, applied).await? {
        // Without the caller's resourceVersion: the first apply held to it, and the object's status may have
        // moved since (a Deployment's, by its controller).
        let mut body = body;
        body.meta_mut().resource_version = None;
        api.patch(&name, &params, &Patch::Apply(&body))
            .await
            .map_err(failed("apply"))?;
    }
    Ok(())
}

/// How often [`take_over`] reads again after a conflict.
const TAKE_OVER_RETRIES: u32 = 8;

/// Write the managed fields of `live` with the `Update` entries taken over (`managed_fields.rs`), at its
/// resourceVersion; on a conflict (a status write in between) read it again and retry, up to
/// [`TAKE_OVER_RETRIES`] times: a new Deployment's status moves several times in its first seconds, and a
/// take-over that gives up is not tried again while the Deployment stays healthy. Whether an apply must follow.
async fn take_over<K>(api: &Api<K>, name: &str, mut live: K) -> Result<bool, Failed>
where
    K: Resource + Clone + Serialize + DeserializeOwned + Debug,
{
    let params = PatchParams {
        field_manager: Some(MANAGER.into()),
        ..PatchParams::default()
    };
    let mut retries = TAKE_OVER_RETRIES;
    loop {
        let meta = live.meta();
        let Some(taken) =
            managed_fields::take_over(meta.managed_fields.as_deref().unwrap_or_default(), MANAGER)
        else {
            return Ok(false);
        };
        let patch = MetadataPatch {
            metadata: ObjectMeta {
                managed_fields: Some(taken.entries),
                resource_version: meta.resource_version.clone(),
                ..ObjectMeta::default()
            },
        };
        match api.patch(name, &params, &Patch::Merge(&patch)).await {
            Ok(_) => return Ok(taken.reapply),
            Err(e) if api_error::is(&e, Class::Conflict) && retries > 0 => {
                retries -= 1;
                live = api.get(name).await.map_err(failed("read"))?;
            }
            Err(source) => {
                return Err(Failed {
                    verb: "take over the fields of",
                    source,
                });
            }
        }
    }
}

/// Create `obj`, or fully replace the live object (at its current resourceVersion) when it exists.
pub async fn create_or_replace<K>(api: &Api<K>, obj: &K) -> Result<(), Failed>
where
    K: Resource + Clone + Serialize + DeserializeOwned + Debug,
{
    let name = obj.meta().name.clone().unwrap_or_default();
    match api.create(&post_params(), obj).await {
        Ok(_) => Ok(()),
        Err(e) if api_error::is(&e, Class::AlreadyExists) => {
            let live = api.get(&name).await.map_err(failed("read"))?;
            let mut desired = obj.clone();
            desired.meta_mut().resource_version = live.meta().resource_version.clone();
            api.replace(&name, &post_params(), &desired)
                .await
                .map(|_| ())
                .map_err(failed("update"))
        }
        Err(source) => Err(Failed {
            verb: "create",
            source,
        }),
    }
}
