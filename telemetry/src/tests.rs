use std::collections::HashMap;

use kgmesh_schemas::TraceContext;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing_subscriber::layer::SubscriberExt;

use super::*;

fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| map.get(name).cloned()
}

#[test]
fn export_is_off_without_an_endpoint() {
    let settings = Settings::new("kgmesh-test");
    assert_eq!(settings.otlp_with_env(env(&[])).unwrap(), None);
    let mut blank = settings.clone();
    blank.otlp_endpoint = Some("  ".into());
    assert_eq!(blank.otlp_with_env(env(&[])).unwrap(), None);
}

#[test]
fn environment_wins_over_configuration() {
    let mut settings = Settings::new("kgmesh-serve");
    settings.otlp_endpoint = Some("http://config:4318".into());
    settings.otlp_protocol = Some("http/protobuf".into());
    settings.service_name = Some("from-config".into());

    let from_config = settings.otlp_with_env(env(&[])).unwrap().unwrap();
    assert_eq!(from_config.endpoint, "http://config:4318");
    assert_eq!(from_config.protocol, Protocol::HttpProtobuf);
    assert_eq!(from_config.service_name, "from-config");
    assert_eq!(
        from_config.signal_endpoint(),
        "http://config:4318/v1/traces"
    );

    let from_env = settings
        .otlp_with_env(env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://jaeger:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_SERVICE_NAME", "edge"),
        ]))
        .unwrap()
        .unwrap();
    assert_eq!(from_env.endpoint, "http://jaeger:4317");
    assert_eq!(from_env.protocol, Protocol::Grpc);
    assert_eq!(from_env.service_name, "edge");
    assert_eq!(from_env.signal_endpoint(), "http://jaeger:4317");

    let traces_only = settings
        .otlp_with_env(env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://jaeger:4318"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://traces:9999/custom",
            ),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"),
        ]))
        .unwrap()
        .unwrap();
    assert_eq!(traces_only.protocol, Protocol::HttpProtobuf);
    assert_eq!(traces_only.signal_endpoint(), "http://traces:9999/custom");

    let disabled = settings
        .otlp_with_env(env(&[("OTEL_SDK_DISABLED", "true")]))
        .unwrap();
    assert_eq!(disabled, None);
}

#[test]
fn default_service_name_and_protocol() {
    let mut settings = Settings::new("kgmesh-judge");
    settings.otlp_endpoint = Some("http://c:4318/".into());
    let target = settings.otlp_with_env(env(&[])).unwrap().unwrap();
    assert_eq!(target.service_name, "kgmesh-judge");
    assert_eq!(target.protocol, Protocol::HttpProtobuf);
    assert_eq!(target.signal_endpoint(), "http://c:4318/v1/traces");
}

#[test]
fn bad_protocols_and_endpoints_are_typed_errors() {
    assert!(matches!(
        Protocol::parse("http/json"),
        Err(TelemetryError::Config(_))
    ));
    assert_eq!(Protocol::parse(" GRPC ").unwrap(), Protocol::Grpc);
    let mut settings = Settings::new("k");
    settings.otlp_endpoint = Some("jaeger:4317".into());
    assert!(matches!(
        settings.otlp_with_env(env(&[])),
        Err(TelemetryError::Config(_))
    ));
    settings.otlp_endpoint = Some("http://jaeger:4317".into());
    settings.otlp_protocol = Some("carrier-pigeon".into());
    assert!(matches!(
        settings.otlp_with_env(env(&[])),
        Err(TelemetryError::Config(_))
    ));
}

#[test]
fn without_a_tracer_propagation_is_inert() {
    let subscriber = tracing_subscriber::registry();
    tracing::subscriber::with_default(subscriber, || {
        let span = tracing::info_span!("question");
        assert!(inject(&span).is_empty());
        assert_eq!(trace_id(&span), None);
        let parent = TraceContext {
            traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into(),
            tracestate: String::new(),
        };
        assert!(!set_parent(&span, &parent));
        let fallback = current_or(parent.clone());
        assert_eq!(fallback, parent);
    });
}

fn with_memory_tracer<T>(work: impl FnOnce() -> T) -> (T, Vec<SpanData>) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry().with(vec![otel_layer(&provider)]);
    let out = tracing::subscriber::with_default(subscriber, work);
    provider.force_flush().unwrap();
    (out, exporter.get_finished_spans().unwrap())
}

#[test]
fn a_remote_child_joins_the_senders_trace() {
    let ((sent, sent_trace_id), spans) = with_memory_tracer(|| {
        let round = tracing::info_span!("round", round = 1);
        let sent = round.in_scope(current);
        let sent_trace_id = trace_id(&round).unwrap();
        drop(round);
        // The receiving side, as if in another process.
        let served = tracing::info_span!("summarizer summarize");
        assert!(set_parent(&served, &sent));
        served.in_scope(|| tracing::info!("working"));
        drop(served);
        (sent, sent_trace_id)
    });
    assert_eq!(sent.trace_id(), Some(sent_trace_id.as_str()));
    let round = spans.iter().find(|s| s.name == "round").unwrap();
    let served = spans
        .iter()
        .find(|s| s.name == "summarizer summarize")
        .unwrap();
    assert_eq!(
        served.span_context.trace_id(),
        round.span_context.trace_id()
    );
    assert_eq!(served.parent_span_id, round.span_context.span_id());
    assert!(served.parent_span_is_remote);
    assert_eq!(
        round.span_context.trace_id().to_string(),
        sent_trace_id,
        "the id quoted to users is the exported one"
    );
}

#[test]
fn malformed_parents_start_a_new_trace() {
    let (linked, spans) = with_memory_tracer(|| {
        let span = tracing::info_span!("agent");
        let linked = set_parent(
            &span,
            &TraceContext {
                traceparent: "00-zz-yy-01".into(),
                tracestate: String::new(),
            },
        );
        drop(span);
        linked
    });
    assert!(!linked);
    assert_eq!(spans.len(), 1);
    assert_eq!(
        spans[0].parent_span_id,
        opentelemetry::trace::SpanId::INVALID
    );
}

#[test]
fn transport_spans_are_not_exported() {
    let ((), spans) = with_memory_tracer(|| {
        let ours = tracing::info_span!("question");
        let _in = ours.enter();
        tracing::info_span!(target: "h2::proto", "poll").in_scope(|| {});
        tracing::info_span!(target: "async_nats::client", "publish").in_scope(|| {});
        tracing::info_span!(target: "tonic::transport", "connect").in_scope(|| {});
        tracing::debug_span!("too_fine").in_scope(|| {});
    });
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_ref()).collect();
    assert_eq!(names, vec!["question"]);
}

#[test]
fn headers_are_read_by_name() {
    let headers: HashMap<&str, &str> = [("traceparent", "00-a-b-01"), ("x", "y")].into();
    let trace = from_headers(|name| headers.get(name).copied());
    assert_eq!(trace.traceparent, "00-a-b-01");
    assert_eq!(trace.tracestate, "");
}
