use super::*;
use futures::StreamExt;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::watcher;
use rstest::rstest;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

#[rstest]
#[case::a_bookmark_watch(
    "/api/v1/configmaps?allowWatchBookmarks=true&resourceVersion=1&timeoutSeconds=600&watch=true",
    true
)]
#[case::numeric_flags("/api/v1/configmaps?watch=1&allowWatchBookmarks=1", true)]
#[case::a_watch_without_bookmarks("/api/v1/configmaps?watch=true&resourceVersion=1", false)]
#[case::a_list("/api/v1/configmaps?limit=500", false)]
#[case::bookmarks_off("/api/v1/configmaps?watch=true&allowWatchBookmarks=false", false)]
#[case::no_query("/api/v1/namespaces/a/configmaps/b", false)]
fn only_bookmark_watches_are_limited(#[case] uri: &str, #[case] limited: bool) {
    let uri: http::Uri = uri.parse().expect("uri");
    assert_eq!(is_bookmark_watch(&uri), limited);
}

type Frames = futures::channel::mpsc::UnboundedSender<Result<Frame<Bytes>, BoxError>>;

fn body(limit: Option<Duration>) -> (Frames, IdleBody<BoxBody<Bytes, BoxError>>) {
    let (tx, rx) = futures::channel::mpsc::unbounded();
    let inner = BodyExt::boxed(StreamBody::new(rx));
    (tx, IdleBody::new(inner, limit))
}

/// The body's next frame, or `None` while it waits.
async fn next_now(
    body: &mut IdleBody<BoxBody<Bytes, BoxError>>,
) -> Option<Option<Result<Frame<Bytes>, BoxError>>> {
    futures::future::poll_fn(|cx| match Pin::new(&mut *body).poll_frame(cx) {
        Poll::Ready(item) => Poll::Ready(Some(item)),
        Poll::Pending => Poll::Ready(None),
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn a_body_that_sends_nothing_for_the_limit_fails_and_each_frame_restarts_the_count() {
    let limit = Duration::from_secs(150);
    let (tx, mut body) = body(Some(limit));
    tx.unbounded_send(Ok(Frame::data(Bytes::from_static(b"{}"))))
        .expect("send");
    assert!(matches!(next_now(&mut body).await, Some(Some(Ok(_)))));
    tokio::time::advance(Duration::from_secs(100)).await;
    assert!(
        next_now(&mut body).await.is_none(),
        "waiting within the limit"
    );
    tx.unbounded_send(Ok(Frame::data(Bytes::from_static(b"{}"))))
        .expect("send");
    assert!(matches!(next_now(&mut body).await, Some(Some(Ok(_)))));
    tokio::time::advance(Duration::from_secs(100)).await;
    assert!(
        next_now(&mut body).await.is_none(),
        "a frame restarted the count: 100 s since it"
    );
    tokio::time::advance(Duration::from_secs(51)).await;
    match next_now(&mut body).await {
        Some(Some(Err(e))) => assert!(e.to_string().contains("sent nothing"), "{e}"),
        other => panic!("expected the stall error, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_body_without_a_limit_waits_as_long_as_it_takes() {
    let (_tx, mut body) = body(None);
    tokio::time::advance(Duration::from_secs(3600)).await;
    assert!(next_now(&mut body).await.is_none());
}

/// A fake API server: an empty list, then watches that never send a byte; counts the watches.
fn stalling_api(
    watches: Arc<AtomicUsize>,
) -> impl tower::Service<
    http::Request<kube::client::Body>,
    Response = http::Response<BoxBody<Bytes, BoxError>>,
    Error = std::convert::Infallible,
    Future = impl Send,
> + Clone {
    tower::service_fn(move |req: http::Request<kube::client::Body>| {
        let watches = watches.clone();
        async move {
            let query = req.uri().query().unwrap_or_default().to_string();
            let body = if query.contains("watch=true") {
                watches.fetch_add(1, Ordering::SeqCst);
                BodyExt::boxed(StreamBody::new(futures::stream::pending::<
                    Result<Frame<Bytes>, BoxError>,
                >()))
            } else {
                let list = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMapList",
                    "metadata": {"resourceVersion": "1"}, "items": []});
                BodyExt::boxed(
                    Full::new(Bytes::from(list.to_string())).map_err(|never| match never {}),
                )
            };
            Ok(http::Response::new(body))
        }
    })
}

#[rstest]
#[case::limited(true, 2)]
#[case::kube_runtime_alone(false, 1)]
#[tokio::test(start_paused = true)]
async fn a_stalled_watch_is_watched_again_within_the_limit(
    #[case] layered: bool,
    #[case] at_least: usize,
) {
    let watches = Arc::new(AtomicUsize::new(0));
    let api = stalling_api(watches.clone());
    let client = if layered {
        kube::Client::new(
            tower::ServiceBuilder::new()
                .layer(LimitIdleWatches::default())
                .service(api),
            "default",
        )
    } else {
        kube::Client::new(api, "default")
    };
    let configmaps: kube::Api<ConfigMap> = kube::Api::all(client);
    let config = crate::watch::renewed_rarely(watcher::Config::default());
    let task = tokio::spawn(async move {
        let mut events = watcher(configmaps, config).boxed();
        while events.next().await.is_some() {}
    });
    // Past the limit and the watcher's backoff, well short of kube-runtime's own 605 s.
    tokio::time::sleep(IDLE_LIMIT + Duration::from_secs(60)).await;
    let seen = watches.load(Ordering::SeqCst);
    task.abort();
    assert!(seen >= at_least, "{seen} watches");
    if !layered {
        assert_eq!(
            seen, 1,
            "without the layer the stalled watch is never replaced"
        );
    }
}
