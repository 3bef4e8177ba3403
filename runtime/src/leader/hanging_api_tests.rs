//! The elector against an API server that stops answering (paused time, no cluster): a leader whose renewals
//! hang steps down by its renew deadline, and a candidate keeps retrying instead of waiting forever; and a leader
//! whose actor thread is stuck steps down without renewing.

use super::{ElectionConfig, Elector, LostLeadership, Role};
use http::{Request, Response, StatusCode};
use kube::client::Body;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::Instant;

const RENEW_DEADLINE: Duration = Duration::from_secs(10);
const RETRY: Duration = Duration::from_secs(2);

/// Answers the first `answered` requests as a Lease store that starts empty (GET: 404, POST: 201 echoing the
/// body), then never answers again.
#[derive(Clone)]
struct GoesSilent {
    answered: usize,
    calls: Arc<AtomicUsize>,
}

type Answer = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

impl tower::Service<Request<Body>> for GoesSilent {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Answer;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Answer {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        if n >= self.answered {
            return Box::pin(std::future::pending());
        }
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let (code, body) = if parts.method == http::Method::POST {
                let bytes = body.collect_bytes().await.unwrap_or_default();
                (StatusCode::CREATED, bytes.to_vec())
            } else {
                let status = serde_json::to_vec(
                    &kube::core::Status::failure("not found", "NotFound").with_code(404),
                )
                .unwrap_or_default();
                (StatusCode::NOT_FOUND, status)
            };
            let mut response = Response::new(Body::from(body));
            *response.status_mut() = code;
            Ok(response)
        })
    }
}

fn elector(answered: usize) -> (Elector, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let service = GoesSilent {
        answered,
        calls: calls.clone(),
    };
    let client = kube::Client::new(service, "olm");
    let config = ElectionConfig {
        namespace: "olm".into(),
        lease_name: "olm-operator".into(),
        identity: "replica-a".into(),
        lease_duration: Duration::from_secs(15),
        renew_deadline: RENEW_DEADLINE,
        retry_period: RETRY,
    };
    match Elector::new(client, config) {
        Ok(elector) => (elector, calls),
        Err(error) => panic!("valid timing refused: {error}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_leader_whose_renewals_hang_steps_down_by_its_renew_deadline() {
    // GET (404) and POST (201) make it the leader; every renewal after that hangs.
    let (mut elector, calls) = elector(2);
    let role = elector.role();
    elector.acquire().await.expect("acquired");
    assert_eq!(*role.borrow(), Role::Leader);

    let started = Instant::now();
    let lost = tokio::time::timeout(Duration::from_secs(600), elector.hold())
        .await
        .expect("hold() returned while the API server hung");
    let took = started.elapsed();
    assert!(
        matches!(lost, LostLeadership::RenewDeadline(d) if d == RENEW_DEADLINE),
        "{lost}"
    );
    // The first renewal starts one retry period in and is given up at the deadline.
    assert!(
        took >= RENEW_DEADLINE && took <= RENEW_DEADLINE + RETRY,
        "stepped down after {took:?}"
    );
    assert_eq!(*role.borrow(), Role::Candidate);
    assert_eq!(calls.load(Ordering::SeqCst), 3, "one renewal, hung");
}

#[tokio::test(start_paused = true)]
async fn a_candidate_whose_reads_hang_keeps_trying() {
    let (mut elector, calls) = elector(0);
    let attempts = tokio::time::timeout(Duration::from_secs(60), elector.acquire()).await;
    assert!(
        attempts.is_err(),
        "no Lease was ever answered, yet acquire() returned"
    );
    // Each read is given up after the renew deadline, then retried after a retry period.
    let per_round = RENEW_DEADLINE + RETRY;
    let rounds = (60 / per_round.as_secs()) as usize;
    let made = calls.load(Ordering::SeqCst);
    assert!(
        made >= rounds && made <= rounds + 1,
        "{made} reads in 60 s, want one every {per_round:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn releasing_against_a_silent_api_server_gives_up() {
    let (mut elector, _) = elector(0);
    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(600), elector.release())
        .await
        .expect("release() returned");
    assert_eq!(started.elapsed(), RENEW_DEADLINE);
}

#[tokio::test(start_paused = true)]
async fn a_leader_whose_actor_thread_is_stuck_steps_down_without_renewing() {
    let (elector, calls) = elector(2);
    let heartbeat = crate::heartbeat::Heartbeat::silent(crate::heartbeat::STALL_LIMIT);
    let mut elector = elector.with_liveness(heartbeat);
    let role = elector.role();
    elector.acquire().await.expect("acquired");
    let lost = tokio::time::timeout(Duration::from_secs(600), elector.hold())
        .await
        .expect("hold() returned");
    assert!(matches!(lost, LostLeadership::Stalled(_)), "{lost}");
    assert_eq!(*role.borrow(), Role::Candidate);
    assert_eq!(calls.load(Ordering::SeqCst), 2, "no renewal tried");
}
