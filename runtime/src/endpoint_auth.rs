//! Who may read `/metrics` and `/debug/*`: with `--metrics-auth=rbac` (the default) a caller shows a bearer token,
//! which the API server authenticates (a TokenReview), and the user it names must be allowed `get` on the
//! request's path as a non-resource URL (a SubjectAccessReview), as kube-rbac-proxy and OLM's own metrics
//! endpoints do. No token: 401; a token the API server rejects: 401; a user without the grant: 403; the API
//! server unreachable: 503. `/healthz` and `/readyz` stay open (the kubelet probes them without a token).
//! `--metrics-auth=none` serves everything to anyone (a loopback-only `--metrics-bind-address`, tests).
//!
//! Answers are cached, so a scrape every few seconds costs no API call: an authenticated token for
//! [`AUTHENTICATED_TTL`], a rejected one for [`REJECTED_TTL`], an allowed user and path for [`ALLOWED_TTL`], a
//! denied one for [`DENIED_TTL`] (a grant or revocation shows within that time). Tokens are kept only as their
//! SHA-256. The decision itself is [`decide`], pure and table-tested.

use clap::ValueEnum;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, UserInfo};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::Client;
use kube::api::{Api, PostParams};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long an authenticated token is trusted without asking again.
pub const AUTHENTICATED_TTL: Duration = Duration::from_secs(60);
/// How long a rejected token stays rejected without asking again.
pub const REJECTED_TTL: Duration = Duration::from_secs(10);
/// How long an allowed (user, path) stays allowed.
pub const ALLOWED_TTL: Duration = Duration::from_secs(60);
/// How long a denied (user, path) stays denied.
pub const DENIED_TTL: Duration = Duration::from_secs(10);
/// Entries per cache; when full, expired entries go, then all of them.
const CACHE_ENTRIES: usize = 1024;

/// `--metrics-auth`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthMode {
    /// TokenReview + SubjectAccessReview on the path.
    Rbac,
    /// No check.
    None,
}

/// Which endpoints a path is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathClass {
    /// `/healthz`, `/readyz`: open to anyone.
    Probe,
    /// Everything else: `/metrics`, `/debug/*` and unknown paths (which answer 404 only to an allowed caller).
    Protected,
}

pub fn classify(path: &str) -> PathClass {
    match path {
        "/healthz" | "/readyz" => PathClass::Probe,
        _ => PathClass::Protected,
    }
}

/// What the API server said of a token.
#[derive(Clone, Debug, PartialEq)]
pub enum Authn {
    User(UserInfo),
    Rejected,
    /// The TokenReview could not be made (the message says why); not cached.
    Unavailable(String),
}

/// What the API server said of a user and path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Authz {
    Allowed,
    Denied,
    /// The SubjectAccessReview could not be made; not cached.
    Unavailable(String),
}

/// The next step for a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Serve,
    /// Ask the API server who the token is.
    Authenticate,
    /// Ask the API server whether the user may `get` the path.
    Authorize,
    /// 401.
    Unauthenticated,
    /// 403.
    Forbidden,
    /// 503: the API server could not be asked.
    Unavailable,
}

/// What to do with a request, given what is known so far: `token` whether it carries a bearer token, `authn`
/// and `authz` the answers obtained (None: not asked yet).
pub fn decide(
    mode: AuthMode,
    class: PathClass,
    token: bool,
    authn: Option<&Authn>,
    authz: Option<&Authz>,
) -> Verdict {
    match (mode, class) {
        (AuthMode::None, _) | (_, PathClass::Probe) => return Verdict::Serve,
        (AuthMode::Rbac, PathClass::Protected) => {}
    }
    if !token {
        return Verdict::Unauthenticated;
    }
    match authn {
        None => Verdict::Authenticate,
        Some(Authn::Rejected) => Verdict::Unauthenticated,
        Some(Authn::Unavailable(_)) => Verdict::Unavailable,
        Some(Authn::User(_)) => match authz {
            None => Verdict::Authorize,
            Some(Authz::Allowed) => Verdict::Serve,
            Some(Authz::Denied) => Verdict::Forbidden,
            Some(Authz::Unavailable(_)) => Verdict::Unavailable,
        },
    }
}

/// The bearer token of an `Authorization` header value, if it is one.
pub fn bearer_token(header: Option<&str>) -> Option<&str> {
    let (scheme, token) = header?.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

type Reviewed<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Asks the API server (or, in tests, a script).
pub trait Reviewer: Send + Sync {
    fn authenticate(&self, token: &str) -> Reviewed<Authn>;
    fn authorize(&self, user: &UserInfo, path: &str) -> Reviewed<Authz>;
}

/// TokenReviews and SubjectAccessReviews through the operator's own client (`create` on both: deploy/rbac).
pub struct ApiReviewer {
    pub client: Client,
}

impl Reviewer for ApiReviewer {
    fn authenticate(&self, token: &str) -> Reviewed<Authn> {
        let api: Api<TokenReview> = Api::all(self.client.clone());
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_string()),
                audiences: None,
            },
            ..Default::default()
        };
        Box::pin(async move {
            match api.create(&PostParams::default(), &review).await {
                Ok(answer) => match answer.status {
                    Some(s) if s.authenticated == Some(true) => {
                        s.user.map_or(Authn::Rejected, Authn::User)
                    }
                    _ => Authn::Rejected,
                },
                Err(e) => Authn::Unavailable(e.to_string()),
            }
        })
    }

    fn authorize(&self, user: &UserInfo, path: &str) -> Reviewed<Authz> {
        let api: Api<SubjectAccessReview> = Api::all(self.client.clone());
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: user.username.clone(),
                groups: user.groups.clone(),
                uid: user.uid.clone(),
                extra: user.extra.clone(),
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(path.to_string()),
                    verb: Some("get".into()),
                }),
                resource_attributes: None,
            },
            ..Default::default()
        };
        Box::pin(async move {
            match api.create(&PostParams::default(), &review).await {
                Ok(answer) if answer.status.as_ref().is_some_and(|s| s.allowed) => Authz::Allowed,
                Ok(_) => Authz::Denied,
                Err(e) => Authz::Unavailable(e.to_string()),
            }
        })
    }
}

/// A small map whose entries expire.
struct Expiring<K, V> {
    entries: HashMap<K, (V, Instant)>,
}

impl<K: std::hash::Hash + Eq, V: Clone> Expiring<K, V> {
    fn new() -> Self {
        Self {
            entries: HashMap::new(),
        }
    }

    fn get(&self, key: &K, now: Instant) -> Option<V> {
        self.entries
            .get(key)
            .filter(|(_, until)| *until > now)
            .map(|(v, _)| v.clone())
    }

    fn put(&mut self, key: K, value: V, ttl: Duration, now: Instant) {
        if self.entries.len() >= CACHE_ENTRIES {
            self.entries.retain(|_, (_, until)| *until > now);
            if self.entries.len() >= CACHE_ENTRIES {
                self.entries.clear();
            }
        }
        self.entries.insert(key, (value, now + ttl));
    }
}

type AccessKey = (String, Vec<String>, String);

/// The check of one server: the mode, who to ask, and the cached answers.
pub struct EndpointAuth {
    mode: AuthMode,
    reviewer: Option<Arc<dyn Reviewer>>,
    tokens: Mutex<Expiring<[u8; 32], Authn>>,
    access: Mutex<Expiring<AccessKey, Authz>>,
}

impl EndpointAuth {
    /// `mode` asking through `client`.
    pub fn new(mode: AuthMode, client: Client) -> Self {
        Self::with_reviewer(mode, Arc::new(ApiReviewer { client }))
    }

    /// Everything served to anyone.
    pub fn open() -> Self {
        Self {
            mode: AuthMode::None,
            reviewer: None,
            tokens: Mutex::new(Expiring::new()),
            access: Mutex::new(Expiring::new()),
        }
    }

    pub fn with_reviewer(mode: AuthMode, reviewer: Arc<dyn Reviewer>) -> Self {
        Self {
            mode,
            reviewer: Some(reviewer),
            tokens: Mutex::new(Expiring::new()),
            access: Mutex::new(Expiring::new()),
        }
    }

    pub fn mode(&self) -> AuthMode {
        self.mode
    }

    /// The verdict for a request of `path` with the `Authorization` header `authorization`: Serve,
    /// Unauthenticated, Forbidden or Unavailable.
    pub async fn check(&self, path: &str, authorization: Option<&str>) -> Verdict {
        let class = classify(path);
        let token = bearer_token(authorization);
        let mut authn = None;
        let mut authz = None;
        loop {
            match decide(
                self.mode,
                class,
                token.is_some(),
                authn.as_ref(),
                authz.as_ref(),
            ) {
                Verdict::Authenticate => {
                    authn = Some(self.authenticate(token.unwrap_or_default()).await);
                }
                Verdict::Authorize => {
                    let Some(Authn::User(user)) = &authn else {
                        return Verdict::Unauthenticated;
                    };
                    authz = Some(self.authorize(user, path).await);
                }
                done => return done,
            }
        }
    }

    async fn authenticate(&self, token: &str) -> Authn {
        let Some(reviewer) = &self.reviewer else {
            return Authn::Rejected;
        };
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(known) = lock(&self.tokens).get(&key, Instant::now()) {
            return known;
        }
        let answer = reviewer.authenticate(token).await;
        let ttl = match &answer {
            Authn::User(_) => Some(AUTHENTICATED_TTL),
            Authn::Rejected => Some(REJECTED_TTL),
            Authn::Unavailable(why) => {
                tracing::warn!(error = %why, "cannot review the token of a metrics request");
                None
            }
        };
        if let Some(ttl) = ttl {
            lock(&self.tokens).put(key, answer.clone(), ttl, Instant::now());
        }
        answer
    }

    async fn authorize(&self, user: &UserInfo, path: &str) -> Authz {
        let Some(reviewer) = &self.reviewer else {
            return Authz::Denied;
        };
        let key = (
            user.username.clone().unwrap_or_default(),
            user.groups.clone().unwrap_or_default(),
            path.to_string(),
        );
        if let Some(known) = lock(&self.access).get(&key, Instant::now()) {
            return known;
        }
        let answer = reviewer.authorize(user, path).await;
        let ttl = match &answer {
            Authz::Allowed => Some(ALLOWED_TTL),
            Authz::Denied => Some(DENIED_TTL),
            Authz::Unavailable(why) => {
                tracing::warn!(error = %why, "cannot review the access of a metrics request");
                None
            }
        };
        if let Some(ttl) = ttl {
            lock(&self.access).put(key, answer.clone(), ttl, Instant::now());
        }
        answer
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn user() -> Authn {
        Authn::User(UserInfo {
            username: Some("system:serviceaccount:monitoring:prometheus".into()),
            ..Default::default()
        })
    }

    #[rstest]
    #[case::a_probe_needs_nothing(
        AuthMode::Rbac,
        PathClass::Probe,
        false,
        None,
        None,
        Verdict::Serve
    )]
    #[case::no_check_serves_anyone(
        AuthMode::None,
        PathClass::Protected,
        false,
        None,
        None,
        Verdict::Serve
    )]
    #[case::no_token(
        AuthMode::Rbac,
        PathClass::Protected,
        false,
        None,
        None,
        Verdict::Unauthenticated
    )]
    #[case::a_token_is_reviewed_first(
        AuthMode::Rbac,
        PathClass::Protected,
        true,
        None,
        None,
        Verdict::Authenticate
    )]
    #[case::a_rejected_token(
        AuthMode::Rbac,
        PathClass::Protected,
        true,
        Some(Authn::Rejected),
        None,
        Verdict::Unauthenticated
    )]
    #[case::no_token_review(AuthMode::Rbac, PathClass::Protected, true, Some(Authn::Unavailable("down".into())), None, Verdict::Unavailable)]
    #[case::a_user_is_then_authorized(
        AuthMode::Rbac,
        PathClass::Protected,
        true,
        Some(user()),
        None,
        Verdict::Authorize
    )]
    #[case::an_allowed_user(
        AuthMode::Rbac,
        PathClass::Protected,
        true,
        Some(user()),
        Some(Authz::Allowed),
        Verdict::Serve
    )]
    #[case::a_denied_user(
        AuthMode::Rbac,
        PathClass::Protected,
        true,
        Some(user()),
        Some(Authz::Denied),
        Verdict::Forbidden
    )]
    #[case::no_access_review(AuthMode::Rbac, PathClass::Protected, true, Some(user()), Some(Authz::Unavailable("down".into())), Verdict::Unavailable)]
    fn the_decision_for_a_request(
        #[case] mode: AuthMode,
        #[case] class: PathClass,
        #[case] token: bool,
        #[case] authn: Option<Authn>,
        #[case] authz: Option<Authz>,
        #[case] expected: Verdict,
    ) {
        assert_eq!(
            decide(mode, class, token, authn.as_ref(), authz.as_ref()),
            expected
        );
    }

    #[rstest]
    #[case::healthz("/healthz", PathClass::Probe)]
    #[case::readyz("/readyz", PathClass::Probe)]
    #[case::metrics("/metrics", PathClass::Protected)]
    #[case::journal("/debug/journal", PathClass::Protected)]
    #[case::actors("/debug/actors", PathClass::Protected)]
    #[case::unknown("/nope", PathClass::Protected)]
    #[case::a_probe_with_a_suffix("/healthz/x", PathClass::Protected)]
    fn which_paths_are_open(#[case] path: &str, #[case] expected: PathClass) {
        assert_eq!(classify(path), expected);
    }

    #[rstest]
    #[case::bearer(Some("Bearer abc"), Some("abc"))]
    #[case::any_case(Some("bearer abc"), Some("abc"))]
    #[case::spaces(Some("  Bearer   abc "), Some("abc"))]
    #[case::basic(Some("Basic abc"), None)]
    #[case::empty(Some("Bearer "), None)]
    #[case::none(None, None)]
    fn the_bearer_token_of_a_header(#[case] header: Option<&str>, #[case] expected: Option<&str>) {
        assert_eq!(bearer_token(header), expected);
    }

    /// Answers from a script: tokens `good` (allowed on /metrics only) and `stranger` (allowed nowhere); counts
    /// the reviews asked for.
    #[derive(Default)]
    struct Script {
        token_reviews: AtomicUsize,
        access_reviews: AtomicUsize,
        down: bool,
    }

    impl Reviewer for Script {
        fn authenticate(&self, token: &str) -> Reviewed<Authn> {
            self.token_reviews.fetch_add(1, Ordering::SeqCst);
            let answer = match (self.down, token) {
                (true, _) => Authn::Unavailable("connection refused".into()),
                (false, "good" | "stranger") => Authn::User(UserInfo {
                    username: Some(token.to_string()),
                    ..Default::default()
                }),
                (false, _) => Authn::Rejected,
            };
            Box::pin(async move { answer })
        }

        fn authorize(&self, user: &UserInfo, path: &str) -> Reviewed<Authz> {
            self.access_reviews.fetch_add(1, Ordering::SeqCst);
            let answer = match (user.username.as_deref(), path) {
                (Some("good"), "/metrics") => Authz::Allowed,
                _ => Authz::Denied,
            };
            Box::pin(async move { answer })
        }
    }

    #[rstest]
    #[case::allowed("/metrics", Some("Bearer good"), Verdict::Serve)]
    #[case::allowed_elsewhere_only("/debug/journal", Some("Bearer good"), Verdict::Forbidden)]
    #[case::not_granted("/metrics", Some("Bearer stranger"), Verdict::Forbidden)]
    #[case::unknown_token("/metrics", Some("Bearer forged"), Verdict::Unauthenticated)]
    #[case::anonymous("/debug/journal", None, Verdict::Unauthenticated)]
    #[case::probe_without_token("/readyz", None, Verdict::Serve)]
    #[tokio::test]
    async fn a_request_is_reviewed_by_the_api_server(
        #[case] path: &str,
        #[case] header: Option<&str>,
        #[case] expected: Verdict,
    ) {
        let auth = EndpointAuth::with_reviewer(AuthMode::Rbac, Arc::new(Script::default()));
        assert_eq!(auth.check(path, header).await, expected);
    }

    #[tokio::test]
    async fn repeated_scrapes_ask_the_api_server_once() {
        let script = Arc::new(Script::default());
        let auth = EndpointAuth::with_reviewer(AuthMode::Rbac, script.clone());
        for _ in 0..5 {
            assert_eq!(
                auth.check("/metrics", Some("Bearer good")).await,
                Verdict::Serve
            );
            assert_eq!(
                auth.check("/metrics", Some("Bearer stranger")).await,
                Verdict::Forbidden
            );
            assert_eq!(
                auth.check("/metrics", Some("Bearer forged")).await,
                Verdict::Unauthenticated
            );
        }
        assert_eq!(script.token_reviews.load(Ordering::SeqCst), 3);
        assert_eq!(script.access_reviews.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn an_unreachable_api_server_is_asked_again_next_time() {
        let script = Arc::new(Script {
            down: true,
            ..Default::default()
        });
        let auth = EndpointAuth::with_reviewer(AuthMode::Rbac, script.clone());
        for _ in 0..2 {
            assert_eq!(
                auth.check("/metrics", Some("Bearer good")).await,
                Verdict::Unavailable
            );
        }
        assert_eq!(script.token_reviews.load(Ordering::SeqCst), 2);
    }

    #[rstest]
    #[case::fresh(Duration::from_secs(1), Some(1))]
    #[case::at_its_end(Duration::from_secs(10), None)]
    #[case::expired(Duration::from_secs(11), None)]
    fn a_cached_answer_expires(#[case] later: Duration, #[case] expected: Option<u8>) {
        let now = Instant::now();
        let mut cache = Expiring::new();
        cache.put("k", 1u8, Duration::from_secs(10), now);
        assert_eq!(cache.get(&"k", now + later), expected);
    }

    #[test]
    fn a_full_cache_drops_expired_answers_first() {
        let now = Instant::now();
        let mut cache = Expiring::new();
        for i in 0..CACHE_ENTRIES - 1 {
            cache.put(i, 0u8, Duration::from_secs(1), now);
        }
        cache.put(usize::MAX, 1u8, Duration::from_secs(100), now);
        let later = now + Duration::from_secs(2);
        cache.put(usize::MAX - 1, 2u8, Duration::from_secs(100), later);
        assert_eq!(cache.entries.len(), 2);
        assert_eq!(cache.get(&usize::MAX, later), Some(1));
    }
}
