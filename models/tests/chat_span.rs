//! The trace span of an LLM call: OpenTelemetry GenAI attributes, usage recorded after
//! the reply, never the API key, prompts only when asked for.

mod support;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use kgmesh_models::{
    openai::{OpenAiChat, OpenAiConfig},
    ChatMessage, ChatRequest, LanguageModel,
};
use support::{within, ReplayServer, Step};
use tracing::{
    field::{Field, Visit},
    span::{Attributes, Id, Record},
    Subscriber,
};
use tracing_subscriber::{layer::Context, layer::SubscriberExt, registry::LookupSpan, Layer};

/// Every field recorded on spans named `gen_ai.chat`, as text.
#[derive(Clone, Default)]
struct Fields(Arc<Mutex<HashMap<String, String>>>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .lock()
            .unwrap()
            .insert(field.name().to_owned(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0
            .lock()
            .unwrap()
            .insert(field.name().to_owned(), value.to_owned());
    }
}

struct Capture(Fields);

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, _id: &Id, _ctx: Context<'_, S>) {
        if attrs.metadata().name() == "gen_ai.chat" {
            attrs.record(&mut self.0.clone());
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if ctx.span(id).is_some_and(|s| s.name() == "gen_ai.chat") {
            values.record(&mut self.0.clone());
        }
    }
}

fn config(server: &ReplayServer) -> OpenAiConfig {
    let mut config = OpenAiConfig::new(server.base_url(), "replay-model");
    config.api_key = Some("secret-key".into());
    config.timeout = Duration::from_secs(5);
    config.max_retries = 0;
    config
}

fn question() -> ChatRequest {
    ChatRequest::new(vec![ChatMessage::user("Who directed Inception?")], 64)
}

async fn traced_chat(config: OpenAiConfig) -> HashMap<String, String> {
    let fields = Fields::default();
    let subscriber = tracing_subscriber::registry().with(Capture(fields.clone()));
    let _default = tracing::subscriber::set_default(subscriber);
    let client = OpenAiChat::new(config).unwrap();
    let _ = within(client.chat(question())).await;
    let recorded = fields.0.lock().unwrap().clone();
    recorded
}

#[tokio::test]
async fn chat_spans_follow_the_genai_conventions_without_secrets_or_prompts() {
    let server =
        ReplayServer::start(vec![Step::completion("Christopher Nolan", Some((21, 4)))]).await;
    let fields = traced_chat(config(&server)).await;
    assert_eq!(fields["gen_ai.operation.name"], "chat");
    assert_eq!(fields["gen_ai.request.model"], "replay-model");
    assert_eq!(fields["gen_ai.response.model"], "replay-model");
    assert_eq!(fields["gen_ai.usage.input_tokens"], "21");
    assert_eq!(fields["gen_ai.usage.output_tokens"], "4");
    assert_eq!(fields["otel.name"], "chat replay-model");
    assert!(!fields.contains_key("gen_ai.input.messages"), "{fields:?}");
    assert!(!fields.contains_key("gen_ai.output.messages"), "{fields:?}");
    assert!(!fields.contains_key("error.type"));
    for value in fields.values() {
        assert!(
            !value.contains("secret-key"),
            "API key on the span: {fields:?}"
        );
        assert!(
            !value.contains("Inception"),
            "prompt on the span: {fields:?}"
        );
    }
}

#[tokio::test]
async fn prompts_are_recorded_only_when_asked_for() {
    let server =
        ReplayServer::start(vec![Step::completion("Christopher Nolan", Some((21, 4)))]).await;
    let mut config = config(&server);
    config.record_prompts = true;
    let fields = traced_chat(config).await;
    assert!(fields["gen_ai.input.messages"].contains("Who directed Inception?"));
    assert!(fields["gen_ai.output.messages"].contains("Christopher Nolan"));
    for value in fields.values() {
        assert!(
            !value.contains("secret-key"),
            "API key on the span: {fields:?}"
        );
    }
}

#[tokio::test]
async fn failed_calls_name_the_error_type() {
    let server = ReplayServer::start(vec![Step::raw(400, "bad request")]).await;
    let fields = traced_chat(config(&server)).await;
    assert_eq!(fields["error.type"], "rejected");
    assert!(!fields.contains_key("gen_ai.usage.input_tokens"));
}
