//! Authorisation by delegation: each request becomes a SubjectAccessReview asked of the API server (the
//! user, groups and extras from request-header authentication; the resource attributes of `packagemanifests`
//! in `packages.operators.coreos.com`, or the non-resource path for discovery). Answers are cached for
//! [`CACHE_TTL`] (generic API servers cache delegated authorisation for 10 s too).

use crate::auth::UserInfo;
use crate::types::{GROUP, RESOURCE, VERSION};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::PostParams;
use kube::{Api, Client};
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

pub const CACHE_TTL: Duration = Duration::from_secs(10);
const CACHE_MAX: usize = 4096;

/// What is asked.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Attributes {
    Resource {
        namespace: Option<String>,
        verb: &'static str,
        name: Option<String>,
    },
    NonResource {
        path: String,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    pub allowed: bool,
    pub reason: String,
}

/// The review for `user` doing `attrs` (pure).
pub fn review(user: &UserInfo, attrs: &Attributes) -> SubjectAccessReview {
    let (resource_attributes, non_resource_attributes) = match attrs {
        Attributes::Resource {
            namespace,
            verb,
            name,
        } => (
            Some(ResourceAttributes {
                namespace: namespace.clone(),
                verb: Some((*verb).into()),
                group: Some(GROUP.into()),
                version: Some(VERSION.into()),
                resource: Some(RESOURCE.into()),
                name: name.clone(),
                ..Default::default()
            }),
            None,
        ),
        Attributes::NonResource { path } => (
            None,
            Some(NonResourceAttributes {
                path: Some(path.clone()),
                verb: Some("get".into()),
            }),
        ),
    };
    SubjectAccessReview {
        metadata: Default::default(),
        spec: SubjectAccessReviewSpec {
            user: Some(user.name.clone()),
            groups: Some(user.groups.clone()),
            extra: (!user.extra.is_empty()).then(|| user.extra.clone()),
            resource_attributes,
            non_resource_attributes,
            uid: None,
        },
        status: None,
    }
}

/// The message of a 403, worded as the API server words it.
pub fn forbidden_message(user: &UserInfo, attrs: &Attributes) -> String {
    match attrs {
        Attributes::Resource {
            namespace,
            verb,
            name,
        } => {
            let what = match name {
                Some(n) => format!("{RESOURCE}.{GROUP} {n:?} is forbidden"),
                None => format!("{RESOURCE}.{GROUP} is forbidden"),
            };
            let scope = match namespace {
                Some(ns) => format!(" in the namespace {ns:?}"),
                None => " at the cluster scope".into(),
            };
            format!(
                "{what}: User {:?} cannot {verb} resource {RESOURCE:?} in API group {GROUP:?}{scope}",
                user.name
            )
        }
        Attributes::NonResource { path } => {
            format!("forbidden: User {:?} cannot get path {path:?}", user.name)
        }
    }
}

type CacheKey = (UserInfo, Attributes);

pub struct Authorizer {
    api: Api<SubjectAccessReview>,
    cache: Mutex<HashMap<CacheKey, (Decision, Instant)>>,
}

impl Authorizer {
    pub fn new(client: Client) -> Self {
        Authorizer {
            api: Api::all(client),
            cache: Mutex::default(),
        }
    }

    pub async fn check(
        &self,
        user: &UserInfo,
        attrs: &Attributes,
    ) -> Result<Decision, kube::Error> {
        let key = (user.clone(), attrs.clone());
        let now = Instant::now();
        if let Some((d, at)) = self
            .cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
            && now.duration_since(*at) < CACHE_TTL
        {
            return Ok(d.clone());
        }
        let answer = self
            .api
            .create(&PostParams::default(), &review(user, attrs))
            .await?;
        let status = answer.status.unwrap_or_default();
        let decision = Decision {
            allowed: status.allowed && !status.denied.unwrap_or(false),
            reason: status.reason.unwrap_or_default(),
        };
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.len() >= CACHE_MAX {
            cache.retain(|_, (_, at)| now.duration_since(*at) < CACHE_TTL);
        }
        cache.insert(key, (decision.clone(), now));
        Ok(decision)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn alice() -> UserInfo {
        UserInfo {
            name: "alice".into(),
            groups: vec!["system:authenticated".into()],
            extra: BTreeMap::from([("scopes".to_string(), vec!["a".to_string()])]),
        }
    }

    #[test]
    fn a_resource_review_names_the_group_resource_verb_namespace_and_name() {
        let r = review(
            &alice(),
            &Attributes::Resource {
                namespace: Some("team".into()),
                verb: "get",
                name: Some("etcd".into()),
            },
        );
        let a = r.spec.resource_attributes.expect("resource attributes");
        assert_eq!(r.spec.user.as_deref(), Some("alice"));
        assert_eq!(
            r.spec.groups,
            Some(vec!["system:authenticated".to_string()])
        );
        assert_eq!(r.spec.extra.expect("extra")["scopes"], ["a"]);
        assert_eq!(a.group.as_deref(), Some("packages.operators.coreos.com"));
        assert_eq!(a.resource.as_deref(), Some("packagemanifests"));
        assert_eq!(a.verb.as_deref(), Some("get"));
        assert_eq!(a.namespace.as_deref(), Some("team"));
        assert_eq!(a.name.as_deref(), Some("etcd"));
        assert!(r.spec.non_resource_attributes.is_none());
    }

    #[test]
    fn discovery_is_a_non_resource_review() {
        let r = review(
            &alice(),
            &Attributes::NonResource {
                path: "/apis".into(),
            },
        );
        let a = r.spec.non_resource_attributes.expect("non-resource");
        assert_eq!(a.path.as_deref(), Some("/apis"));
        assert_eq!(a.verb.as_deref(), Some("get"));
    }

    #[test]
    fn forbidden_messages_read_like_the_api_servers() {
        let m = forbidden_message(
            &alice(),
            &Attributes::Resource {
                namespace: Some("team".into()),
                verb: "list",
                name: None,
            },
        );
        assert_eq!(
            m,
            r#"packagemanifests.packages.operators.coreos.com is forbidden: User "alice" cannot list resource "packagemanifests" in API group "packages.operators.coreos.com" in the namespace "team""#
        );
    }
}
