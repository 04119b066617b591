//! The trace id a question quotes and the trace context its requests carry, with and
//! without an OpenTelemetry tracer installed.

mod support;

use std::sync::{Arc, Mutex};

use kgmesh_bus::LocalBus;
use kgmesh_schemas::{
    budget::Cost,
    messages::{
        ask::{AskOptions, AskReply, AskRequest},
        judge::{JudgeReply, JudgeRequest, Verdict},
    },
    Reply, Role, RoleKind, TraceContext,
};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use support::*;
use tracing_subscriber::layer::SubscriberExt;

const CALLER_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

fn caller() -> TraceContext {
    TraceContext {
        traceparent: format!("00-{CALLER_TRACE}-{CALLER_SPAN}-01"),
        tracestate: "vendor=1".into(),
    }
}

/// Runs one question against stand-ins; returns the reply and the trace context the
/// judge received.
async fn ask(trace: TraceContext) -> (AskReply, Vec<TraceContext>) {
    let bus = Arc::new(LocalBus::new());
    let _linker = linker_linking_heat(&bus, counter()).await;
    let _paths = path_retriever(&bus, Role::PATH_FOLLOWER).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let judge_seen = seen.clone();
    let _judge = serve::<JudgeRequest, _, _>(&bus, Role::JUDGE, RoleKind::Core, move |request| {
        judge_seen.lock().unwrap().push(request.meta.trace.clone());
        futures::future::ready(Reply::ok(
            JudgeReply {
                verdict: Verdict::Complete,
                reason: "test".into(),
            },
            Cost::default(),
        ))
    })
    .await;
    let _summarizer = ends_summarizer(&bus).await;
    let request = AskRequest {
        question: "who directed Heat".into(),
        options: AskOptions::default(),
    };
    let reply = bounded(coordinator(&bus, test_config()).ask_traced(request, trace))
        .await
        .unwrap();
    let seen = seen.lock().unwrap().clone();
    (reply, seen)
}

#[tokio::test]
async fn without_a_tracer_the_callers_trace_or_a_fresh_one_is_quoted() {
    let (reply, seen) = ask(caller()).await;
    assert_eq!(reply.trace_id.as_deref(), Some(CALLER_TRACE));
    assert_eq!(seen, vec![caller()], "requests carry the question's trace");

    let (reply, seen) = ask(TraceContext::default()).await;
    let fresh = reply.trace_id.expect("a trace id even without a tracer");
    assert_eq!(fresh.len(), 32);
    assert_ne!(fresh, CALLER_TRACE);
    assert_eq!(seen[0].trace_id(), Some(fresh.as_str()));
}

fn memory_tracer() -> (InMemorySpanExporter, SdkTracerProvider) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    (exporter, provider)
}

fn finished(exporter: &InMemorySpanExporter, provider: &SdkTracerProvider) -> Vec<SpanData> {
    provider.force_flush().unwrap();
    exporter.get_finished_spans().unwrap()
}

fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.to_string())
}

/// `traceparent` = `00-<trace>-<parent span>-<flags>`.
fn parent_span(trace: &TraceContext) -> &str {
    trace.traceparent.split('-').nth(2).unwrap_or("")
}

#[tokio::test]
async fn with_a_tracer_the_quoted_id_is_the_exported_trace_and_calls_carry_their_span() {
    let (exporter, provider) = memory_tracer();
    let subscriber =
        tracing_subscriber::registry().with(vec![kgmesh_telemetry::otel_layer(&provider)]);
    // The test runtime has one thread, so a thread-local subscriber sees every span.
    let _default = tracing::subscriber::set_default(subscriber);

    let (reply, seen) = ask(TraceContext::default()).await;
    let spans = finished(&exporter, &provider);
    let question = spans
        .iter()
        .find(|s| s.name == "question")
        .expect("question span exported");
    let trace_id = question.span_context.trace_id().to_string();
    assert_eq!(reply.trace_id.as_deref(), Some(trace_id.as_str()));
    assert_eq!(
        attribute(question, "kgmesh.question_id").as_deref(),
        Some(reply.question_id.as_str())
    );
    assert_eq!(
        attribute(question, "kgmesh.rounds_run").as_deref(),
        Some("1")
    );

    let round = spans
        .iter()
        .find(|s| s.name == "round")
        .expect("round span");
    assert_eq!(round.parent_span_id, question.span_context.span_id());
    let judge_call = spans
        .iter()
        .find(|s| s.name == "call judge judge")
        .expect("judge call span");
    assert_eq!(judge_call.parent_span_id, round.span_context.span_id());

    // The judge was told its parent is the coordinator's call span.
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].trace_id(), Some(trace_id.as_str()));
    assert_eq!(
        parent_span(&seen[0]),
        judge_call.span_context.span_id().to_string()
    );
    let retrieve = spans
        .iter()
        .find(|s| s.name == "retrieve path-follower")
        .expect("retrieve span");
    assert_eq!(
        attribute(retrieve, "kgmesh.retrieved.evidence").as_deref(),
        Some("1")
    );
    assert!(spans
        .iter()
        .all(|s| s.span_context.trace_id() == question.span_context.trace_id()));
}

#[tokio::test]
async fn with_a_tracer_an_incoming_traceparent_is_the_questions_parent() {
    let (exporter, provider) = memory_tracer();
    let subscriber =
        tracing_subscriber::registry().with(vec![kgmesh_telemetry::otel_layer(&provider)]);
    let _default = tracing::subscriber::set_default(subscriber);

    let (reply, seen) = ask(caller()).await;
    let spans = finished(&exporter, &provider);
    let question = spans.iter().find(|s| s.name == "question").unwrap();
    assert_eq!(reply.trace_id.as_deref(), Some(CALLER_TRACE));
    assert_eq!(question.span_context.trace_id().to_string(), CALLER_TRACE);
    assert_eq!(question.parent_span_id.to_string(), CALLER_SPAN);
    assert!(question.parent_span_is_remote);
    assert_eq!(seen[0].trace_id(), Some(CALLER_TRACE));
    assert_ne!(
        parent_span(&seen[0]),
        CALLER_SPAN,
        "the judge's parent is ours"
    );
    assert_eq!(seen[0].tracestate, "vendor=1", "tracestate travels on");
}
