//! The OpenAI-compatible client against a real HTTP server that replays scripted
//! responses: success, missing usage, 429 with Retry-After, 5xx, malformed bodies, slow
//! responses, refused connections, and the concurrency and per-minute limits.

mod support;

use std::{
    future::Future,
    pin::Pin,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use kgmesh_models::{
    openai::{Clock, OpenAiChat, OpenAiConfig, OpenAiEmbedder},
    ChatMessage, ChatRequest, Embedder, LanguageModel, LlmError,
};
use serde_json::json;
use support::{within, ReplayServer, Step};

/// Time that moves only when the client sleeps, recording every sleep.
struct ManualClock {
    start: Instant,
    offset: Mutex<Duration>,
    sleeps: Mutex<Vec<Duration>>,
}

impl ManualClock {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            start: Instant::now(),
            offset: Mutex::new(Duration::ZERO),
            sleeps: Mutex::new(Vec::new()),
        })
    }

    fn sleeps(&self) -> Vec<Duration> {
        self.sleeps.lock().unwrap().clone()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.start + *self.offset.lock().unwrap()
    }

    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        *self.offset.lock().unwrap() += duration;
        self.sleeps.lock().unwrap().push(duration);
        Box::pin(async {})
    }
}

fn config(server: &ReplayServer) -> OpenAiConfig {
    let mut config = OpenAiConfig::new(server.base_url(), "replay-model");
    config.api_key = Some("secret-key".into());
    config.timeout = Duration::from_secs(5);
    config.max_retries = 3;
    config.backoff_base = Duration::from_millis(100);
    config.backoff_max = Duration::from_secs(30);
    config
}

fn question() -> ChatRequest {
    let mut request = ChatRequest::new(
        vec![
            ChatMessage::system("You answer briefly."),
            ChatMessage::user("Who directed Inception?"),
        ],
        64,
    );
    request.stop = vec!["</answers>".into()];
    request
}

#[tokio::test]
async fn sends_an_openai_request_and_reads_text_and_usage() {
    let server =
        ReplayServer::start(vec![Step::completion("Christopher Nolan", Some((21, 4)))]).await;
    let client = OpenAiChat::new(config(&server)).unwrap();
    let response = within(client.chat(question())).await.unwrap();
    assert_eq!(response.text, "Christopher Nolan");
    assert_eq!(response.model, "replay-model");
    assert_eq!(response.usage.prompt_tokens, 21);
    assert_eq!(response.usage.completion_tokens, 4);
    assert!(!response.usage.estimated);

    let received = server.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].path, "/v1/chat/completions");
    assert_eq!(
        received[0].authorization.as_deref(),
        Some("Bearer secret-key")
    );
    let body = &received[0].body;
    assert_eq!(body["model"], "replay-model");
    assert_eq!(body["max_tokens"], 64);
    assert_eq!(body["stop"], json!(["</answers>"]));
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "You answer briefly."})
    );
    assert_eq!(body["messages"][1]["role"], "user");
}

#[tokio::test]
async fn offered_choices_reach_the_server_as_its_constraint_says() {
    use kgmesh_models::openai::ChoiceConstraint;
    let mut request = question();
    request.choices = vec!["1".into(), "2".into()];
    let mut bodies = Vec::new();
    for constraint in [
        ChoiceConstraint::None,
        ChoiceConstraint::Grammar,
        ChoiceConstraint::GuidedChoice,
    ] {
        let server = ReplayServer::start(vec![Step::completion("2", Some((21, 1)))]).await;
        let mut config = config(&server);
        config.choice_constraint = constraint;
        let client = OpenAiChat::new(config).unwrap();
        let response = within(client.chat(request.clone())).await.unwrap();
        assert_eq!(response.text, "2");
        bodies.push(server.received()[0].body.clone());
    }
    assert!(bodies[0].get("grammar").is_none() && bodies[0].get("guided_choice").is_none());
    assert_eq!(bodies[1]["grammar"], json!("root ::= \"1\" | \"2\""));
    assert!(bodies[1].get("guided_choice").is_none());
    assert_eq!(bodies[2]["guided_choice"], json!(["1", "2"]));
    assert!(bodies[2].get("grammar").is_none());
}

#[tokio::test]
async fn usage_is_estimated_and_flagged_when_the_server_omits_it() {
    let server = ReplayServer::start(vec![Step::completion("Christopher Nolan", None)]).await;
    let client = OpenAiChat::new(config(&server)).unwrap();
    let response = within(client.chat(question())).await.unwrap();
    assert!(response.usage.estimated);
    // "Christopher Nolan" is 17 characters: about 5 tokens.
    assert_eq!(response.usage.completion_tokens, 5);
    assert!(response.usage.prompt_tokens >= 10, "{:?}", response.usage);
}

#[tokio::test]
async fn rate_limit_then_success_waits_as_long_as_retry_after_says() {
    let server = ReplayServer::start(vec![
        Step::json(429, json!({"error": {"message": "slow down"}})).with_header("retry-after", "7"),
        Step::completion("ok", Some((1, 1))),
    ])
    .await;
    let clock = ManualClock::new();
    let client = OpenAiChat::with_clock(config(&server), clock.clone()).unwrap();
    let response = within(client.chat(question())).await.unwrap();
    assert_eq!(response.text, "ok");
    assert_eq!(server.received().len(), 2);
    assert_eq!(clock.sleeps(), vec![Duration::from_secs(7)]);
}

#[tokio::test]
async fn persistent_rate_limiting_is_a_typed_error_after_the_retries() {
    let server = ReplayServer::start(vec![Step::json(429, json!({"error": "busy"}))]).await;
    let mut config = config(&server);
    config.max_retries = 2;
    let clock = ManualClock::new();
    let client = OpenAiChat::with_clock(config, clock.clone()).unwrap();
    let error = within(client.chat(question())).await.unwrap_err();
    assert_eq!(error, LlmError::RateLimited { attempts: 3 });
    assert_eq!(server.received().len(), 3);
    assert_eq!(clock.sleeps().len(), 2);
}

#[tokio::test]
async fn server_errors_are_retried_with_growing_jittered_backoff() {
    let server = ReplayServer::start(vec![
        Step::raw(500, "<html>internal error</html>"),
        Step::raw(503, "overloaded"),
        Step::completion("recovered", Some((3, 1))),
    ])
    .await;
    let clock = ManualClock::new();
    let client = OpenAiChat::with_clock(config(&server), clock.clone()).unwrap();
    let response = within(client.chat(question())).await.unwrap();
    assert_eq!(response.text, "recovered");
    let sleeps = clock.sleeps();
    assert_eq!(sleeps.len(), 2);
    // base 100 ms: first wait in [50, 100] ms, second in [100, 200] ms.
    assert!(
        sleeps[0] >= Duration::from_millis(50) && sleeps[0] <= Duration::from_millis(100),
        "{sleeps:?}"
    );
    assert!(
        sleeps[1] >= Duration::from_millis(100) && sleeps[1] <= Duration::from_millis(200),
        "{sleeps:?}"
    );
}

#[tokio::test]
async fn persistent_server_errors_keep_status_and_body() {
    let server = ReplayServer::start(vec![Step::raw(502, "bad gateway")]).await;
    let mut config = config(&server);
    config.max_retries = 1;
    let client = OpenAiChat::with_clock(config, ManualClock::new()).unwrap();
    let error = within(client.chat(question())).await.unwrap_err();
    assert_eq!(
        error,
        LlmError::Server {
            status: 502,
            body: "bad gateway".into()
        }
    );
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let server = ReplayServer::start(vec![Step::json(
        400,
        json!({"error": {"message": "max_tokens is too large"}}),
    )])
    .await;
    let client = OpenAiChat::with_clock(config(&server), ManualClock::new()).unwrap();
    let error = within(client.chat(question())).await.unwrap_err();
    match error {
        LlmError::Rejected { status, body } => {
            assert_eq!(status, 400);
            assert!(body.contains("max_tokens is too large"), "{body}");
        }
        other => panic!("expected Rejected, got {other:?}"),
    }
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn malformed_bodies_are_typed_errors_never_model_output() {
    let malformed = [
        Step::raw(200, "<html><body>proxy login required</body></html>"),
        Step::raw(200, r#"{"choices": [{"message": {"content": "trunc"#),
        Step::json(200, json!({"object": "chat.completion", "choices": []})),
        Step::json(
            200,
            json!({"choices": [{"message": {"role": "assistant", "content": null}}]}),
        ),
        Step::json(200, json!({"error": {"message": "model failed to load"}})),
    ];
    for step in malformed {
        let server = ReplayServer::start(vec![step.clone()]).await;
        let client = OpenAiChat::with_clock(config(&server), ManualClock::new()).unwrap();
        let result = within(client.chat(question())).await;
        assert!(
            matches!(result, Err(LlmError::Malformed(_))),
            "{} gave {result:?}",
            step.body
        );
        assert_eq!(
            server.received().len(),
            1,
            "malformed replies are not retried"
        );
    }
}

#[tokio::test]
async fn slow_responses_hit_the_per_attempt_timeout() {
    let server = ReplayServer::start(vec![
        Step::completion("too late", None).delayed(Duration::from_secs(3))
    ])
    .await;
    let mut config = config(&server);
    config.timeout = Duration::from_millis(300);
    config.max_retries = 1;
    let client = OpenAiChat::with_clock(config, ManualClock::new()).unwrap();
    let started = Instant::now();
    let error = within(client.chat(question())).await.unwrap_err();
    assert_eq!(error, LlmError::Timeout(Duration::from_millis(300)));
    assert_eq!(server.received().len(), 2);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "the client waited for the slow server"
    );
}

#[tokio::test]
async fn a_slow_first_attempt_then_a_fast_one_succeeds() {
    let server = ReplayServer::start(vec![
        Step::completion("too late", None).delayed(Duration::from_secs(3)),
        Step::completion("in time", Some((2, 2))),
    ])
    .await;
    let mut config = config(&server);
    config.timeout = Duration::from_millis(300);
    let client = OpenAiChat::with_clock(config, ManualClock::new()).unwrap();
    let response = within(client.chat(question())).await.unwrap();
    assert_eq!(response.text, "in time");
}

#[tokio::test]
async fn a_refused_connection_is_unreachable() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let mut config = OpenAiConfig::new(format!("http://127.0.0.1:{port}/v1"), "m");
    // However many retries are allowed, nothing listening gets one more try ...
    config.max_retries = 5;
    let clock = ManualClock::new();
    let client = OpenAiChat::with_clock(config, clock.clone()).unwrap();
    match within(client.chat(question())).await {
        Err(LlmError::Unreachable { url, detail }) => {
            assert_eq!(url, format!("http://127.0.0.1:{port}/v1/chat/completions"));
            assert!(!detail.contains("not tried"), "{detail}");
        }
        other => panic!("expected Unreachable, got {other:?}"),
    }
    // ... and the next call fails at once, without trying: the breaker is open.
    match within(client.chat(question())).await {
        Err(LlmError::Unreachable { detail, .. }) => {
            assert!(detail.contains("not tried"), "{detail}")
        }
        other => panic!("expected a skipped call, got {other:?}"),
    }
}

#[tokio::test]
async fn the_concurrency_limit_holds_across_tasks() {
    let server = ReplayServer::start(vec![
        Step::completion("ok", Some((1, 1))).delayed(Duration::from_millis(150))
    ])
    .await;
    let mut config = config(&server);
    config.max_concurrency = 2;
    let client = Arc::new(OpenAiChat::new(config).unwrap());
    let calls: Vec<_> = (0..6)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { client.chat(question()).await })
        })
        .collect();
    for call in calls {
        within(call).await.unwrap().unwrap();
    }
    assert_eq!(server.received().len(), 6);
    assert_eq!(server.max_in_flight(), 2);
}

#[tokio::test]
async fn the_per_minute_limit_delays_the_call_over_the_limit() {
    let server = ReplayServer::start(vec![Step::completion("ok", Some((1, 1)))]).await;
    let mut config = config(&server);
    config.requests_per_minute = Some(2);
    let clock = ManualClock::new();
    let client = OpenAiChat::with_clock(config, clock.clone()).unwrap();
    for _ in 0..3 {
        within(client.chat(question())).await.unwrap();
    }
    // Two calls fit in the first minute; the third waits for the window to roll over.
    assert_eq!(clock.sleeps(), vec![Duration::from_secs(60)]);
}

#[tokio::test]
async fn an_empty_conversation_is_refused_before_any_request() {
    let server = ReplayServer::start(vec![Step::completion("x", None)]).await;
    let client = OpenAiChat::new(config(&server)).unwrap();
    let error = within(client.chat(ChatRequest::new(vec![], 8)))
        .await
        .unwrap_err();
    assert!(matches!(error, LlmError::Config(_)));
    assert!(server.received().is_empty());
}

#[tokio::test]
async fn embeddings_come_back_normalized_in_order_and_batched() {
    let server = ReplayServer::start(vec![
        Step::json(
            200,
            json!({"object": "list", "data": [
            {"index": 1, "embedding": [0.0, 2.0]},
            {"index": 0, "embedding": [3.0, 4.0]}]}),
        ),
        Step::json(
            200,
            json!({"object": "list", "data": [
            {"index": 0, "embedding": [-1.0, 0.0]}]}),
        ),
    ])
    .await;
    let embedder = OpenAiEmbedder::new(config(&server), 2)
        .unwrap()
        .with_batch_size(2);
    let texts: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
    let vectors = within(embedder.embed(&texts)).await.unwrap();
    assert_eq!(
        vectors,
        vec![vec![0.6, 0.8], vec![0.0, 1.0], vec![-1.0, 0.0]]
    );
    let received = server.received();
    assert_eq!(received.len(), 2);
    assert_eq!(received[0].path, "/v1/embeddings");
    assert_eq!(received[0].body["input"], json!(["a", "b"]));
    assert_eq!(received[1].body["input"], json!(["c"]));
}

#[tokio::test]
async fn embeddings_of_the_wrong_dimension_are_an_error() {
    let server = ReplayServer::start(vec![Step::json(
        200,
        json!({"data": [{"index": 0, "embedding": [1.0, 0.0, 0.0]}]}),
    )])
    .await;
    let embedder = OpenAiEmbedder::new(config(&server), 2).unwrap();
    let result = within(embedder.embed(&["a".to_string()])).await;
    assert!(result.is_err());
}

#[tokio::test]
async fn a_server_down_for_several_calls_is_skipped_until_the_cool_down_ends() {
    let server = ReplayServer::start(vec![
        Step::raw(503, "down"),
        Step::raw(503, "down"),
        Step::completion("back", None),
    ])
    .await;
    let mut config = config(&server);
    config.max_retries = 0;
    config.breaker_failures = 2;
    config.breaker_cooldown = Duration::from_secs(30);
    let clock = ManualClock::new();
    let client = OpenAiChat::with_clock(config, clock.clone()).unwrap();
    for _ in 0..2 {
        let error = within(client.chat(question())).await.unwrap_err();
        assert!(
            matches!(error, LlmError::Server { status: 503, .. }),
            "{error:?}"
        );
    }
    // Open: the call fails at once, and the server is not asked.
    let error = within(client.chat(question())).await.unwrap_err();
    match &error {
        LlmError::Unreachable { detail, .. } => {
            assert!(detail.contains("the last 2 calls"), "{detail}")
        }
        other => panic!("expected a skipped call, got {other:?}"),
    }
    assert_eq!(server.received().len(), 2);
    // After the cool-down the server is tried again, and success closes the breaker.
    clock.sleep(Duration::from_secs(31)).await;
    let reply = within(client.chat(question())).await.expect("tried again");
    assert_eq!(reply.text, "back");
    assert_eq!(server.received().len(), 3);
}

#[test]
fn debug_output_leaves_the_api_key_out() {
    let mut config = OpenAiConfig::new("http://127.0.0.1:1/v1", "m");
    config.api_key = Some("sk-secret-key".into());
    let shown = format!("{config:?}");
    assert!(!shown.contains("sk-secret-key"), "{shown}");
    assert!(
        shown.contains("<redacted>") && shown.contains("http://127.0.0.1:1/v1"),
        "{shown}"
    );
}

/// A server that accepts connections and never answers: the first call waits out its
/// timeout, the next fails at once, without a connection (the breaker opened on the
/// timeout, not after `breaker_failures` of them); the same when the caller gave up
/// first (`gave_up`, as a role does at its deadline).
#[tokio::test]
async fn a_model_that_never_answers_is_waited_for_once() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = accepted.clone();
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            held.push(stream);
        }
    });
    let base = format!("http://127.0.0.1:{port}/v1");
    let skipped = |result: Result<_, LlmError>| match result {
        Err(LlmError::Unreachable { detail, .. }) => {
            assert!(detail.contains("not tried"), "{detail}")
        }
        other => panic!("expected a skipped call, got {other:?}"),
    };

    let mut config = OpenAiConfig::new(base.clone(), "m");
    config.timeout = Duration::from_millis(300);
    config.max_retries = 0;
    let client = OpenAiChat::new(config).unwrap();
    let error = within(client.chat(question())).await.unwrap_err();
    assert!(matches!(error, LlmError::Timeout(_)), "{error:?}");
    skipped(within(client.chat(question())).await);
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);

    // The caller's deadline comes before the client's own timeout.
    let mut config = OpenAiConfig::new(base, "m");
    config.timeout = Duration::from_secs(60);
    let client = OpenAiChat::new(config).unwrap();
    let waited = Duration::from_millis(200);
    assert!(tokio::time::timeout(waited, client.chat(question()))
        .await
        .is_err());
    client.gave_up(waited);
    skipped(within(client.chat(question())).await);
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 2);
    silent.abort();
}
