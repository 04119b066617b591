//! `/v1/chat/completions`.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};
use tracing::Instrument;

use super::{
    transport::{Clock, SystemClock, Transport},
    OpenAiConfig,
};
use crate::{tokens, ChatRequest, ChatResponse, LanguageModel, LlmError, Usage};

/// A [`LanguageModel`] backed by any OpenAI-compatible chat-completions server.
///
/// Cheap to share behind an `Arc`; the limits hold across every task using it.
pub struct OpenAiChat {
    transport: Transport,
}

impl OpenAiChat {
    pub fn new(config: OpenAiConfig) -> Result<Self, LlmError> {
        Self::with_clock(config, Arc::new(SystemClock))
    }

    /// With injected time (tests of retries and rate limits).
    pub fn with_clock(config: OpenAiConfig, clock: Arc<dyn Clock>) -> Result<Self, LlmError> {
        Ok(Self {
            transport: Transport::new(config, clock)?,
        })
    }

    pub fn config(&self) -> &OpenAiConfig {
        &self.transport.config
    }
}

#[async_trait]
impl LanguageModel for OpenAiChat {
    fn name(&self) -> &str {
        &self.transport.config.model
    }

    fn context_tokens(&self) -> Option<usize> {
        self.transport.config.context_tokens
    }

    fn gave_up(&self, waited: std::time::Duration) {
        self.transport.record_no_reply(waited);
    }

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        let config = &self.transport.config;
        // OpenTelemetry GenAI semantic conventions. Never the API key; the prompt and
        // the completion only when the operator opted in.
        let span = tracing::info_span!(
            "gen_ai.chat",
            otel.name = format!("chat {}", config.model),
            otel.kind = "client",
            gen_ai.operation.name = "chat",
            gen_ai.provider.name = "openai",
            gen_ai.request.model = %config.model,
            gen_ai.request.max_tokens = request.max_tokens,
            gen_ai.request.temperature = request.temperature,
            gen_ai.response.model = tracing::field::Empty,
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            gen_ai.input.messages = tracing::field::Empty,
            gen_ai.output.messages = tracing::field::Empty,
            error.type = tracing::field::Empty,
        );
        if config.record_prompts {
            if let Ok(messages) = serde_json::to_string(&request.messages) {
                span.record("gen_ai.input.messages", messages);
            }
        }
        let started = std::time::Instant::now();
        let result = self.complete(request).instrument(span.clone()).await;
        super::metrics::record_chat(&config.model, &result, started.elapsed());
        match &result {
            Ok(response) => {
                span.record("gen_ai.response.model", response.model.as_str());
                span.record("gen_ai.usage.input_tokens", response.usage.prompt_tokens);
                span.record(
                    "gen_ai.usage.output_tokens",
                    response.usage.completion_tokens,
                );
                if config.record_prompts {
                    let output = json!([{"role": "assistant", "content": response.text}]);
                    span.record("gen_ai.output.messages", output.to_string());
                }
            }
            Err(error) => {
                span.record("error.type", error_type(error));
            }
        }
        result
    }
}

/// `error.type` of a failed call: a short stable name, never the server's message. The
/// metrics' [`error_kind`](super::metrics::error_kind) names, but `malformed_response`
/// for a malformed response.
fn error_type(error: &LlmError) -> &'static str {
    match error {
        LlmError::Malformed(_) => "malformed_response",
        other => super::metrics::error_kind(other),
    }
}

impl OpenAiChat {
    async fn complete(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        if request.messages.is_empty() {
            return Err(LlmError::Config(
                "a chat request needs at least one message".to_owned(),
            ));
        }
        let mut body = json!({
            "model": self.transport.config.model,
            "messages": request.messages,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "stream": false,
        });
        if !request.stop.is_empty() {
            body["stop"] = json!(request.stop);
        }
        if !request.choices.is_empty() {
            match self.transport.config.choice_constraint {
                super::ChoiceConstraint::None => {}
                super::ChoiceConstraint::Grammar => {
                    body["grammar"] = json!(super::choice_grammar(&request.choices));
                }
                super::ChoiceConstraint::GuidedChoice => {
                    body["guided_choice"] = json!(request.choices);
                }
            }
        }
        let started = self.transport.clock.now();
        let value = self.transport.post_json("chat/completions", &body).await?;
        let elapsed = self
            .transport
            .clock
            .now()
            .saturating_duration_since(started);
        let mut response = parse_completion(&value, &request, &self.transport.config.model)?;
        response.elapsed = elapsed;
        tracing::debug!(
            model = %response.model,
            prompt_tokens = response.usage.prompt_tokens,
            completion_tokens = response.usage.completion_tokens,
            estimated = response.usage.estimated,
            elapsed_ms = elapsed.as_millis() as u64,
            "chat completion"
        );
        Ok(response)
    }
}

/// Reads the first choice and the usage; anything else a server adds is ignored.
pub(crate) fn parse_completion(
    value: &Value,
    request: &ChatRequest,
    configured_model: &str,
) -> Result<ChatResponse, LlmError> {
    if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
        return Err(LlmError::Malformed(format!(
            "server answered 200 with an error object: {error}"
        )));
    }
    let message = value
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|choices| choices.first())
        .and_then(|choice| choice.get("message"))
        .ok_or_else(|| LlmError::Malformed("no choices[0].message in the response".to_owned()))?;
    let text = match message.get("content") {
        Some(Value::String(text)) => text.clone(),
        // Some servers send content as a list of typed parts.
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => {
            return Err(LlmError::Malformed(
                "choices[0].message.content is missing or not text".to_owned(),
            ))
        }
    };
    let model = value
        .get("model")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        .unwrap_or(configured_model)
        .to_owned();
    let usage_value = value.get("usage");
    let reported = |key: &str| usage_value.and_then(|u| u.get(key)).and_then(Value::as_u64);
    let prompt_reported = reported("prompt_tokens");
    let completion_reported = reported("completion_tokens");
    let usage = Usage {
        prompt_tokens: prompt_reported.unwrap_or_else(|| request.estimated_prompt_tokens()),
        completion_tokens: completion_reported.unwrap_or_else(|| tokens::estimate_tokens(&text)),
        estimated: prompt_reported.is_none() || completion_reported.is_none(),
    };
    Ok(ChatResponse {
        text,
        usage,
        model,
        elapsed: std::time::Duration::ZERO,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ChatMessage;

    fn request() -> ChatRequest {
        ChatRequest::new(vec![ChatMessage::user("hello there")], 16)
    }

    #[test]
    fn reads_text_model_and_reported_usage() {
        let value = json!({
            "model": "qwen",
            "choices": [{"message": {"role": "assistant", "content": "hi"}}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
        });
        let response = parse_completion(&value, &request(), "configured").unwrap();
        assert_eq!(response.text, "hi");
        assert_eq!(response.model, "qwen");
        assert_eq!(
            response.usage,
            Usage {
                prompt_tokens: 12,
                completion_tokens: 3,
                estimated: false
            }
        );
    }

    #[test]
    fn estimates_usage_when_absent() {
        let value = json!({"choices": [{"message": {"content": "twelve chars"}}]});
        let response = parse_completion(&value, &request(), "configured").unwrap();
        assert_eq!(response.model, "configured");
        assert!(response.usage.estimated);
        assert_eq!(response.usage.completion_tokens, 3);
        assert!(response.usage.prompt_tokens > 0);
    }

    #[test]
    fn content_parts_are_joined() {
        let value = json!({"choices": [{"message": {"content": [
            {"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}}]});
        assert_eq!(
            parse_completion(&value, &request(), "m").unwrap().text,
            "ab"
        );
    }

    #[test]
    fn missing_pieces_are_typed_errors() {
        for value in [
            json!({}),
            json!({"choices": []}),
            json!({"choices": [{"message": {"content": null}}]}),
            json!({"error": {"message": "model not loaded"}}),
        ] {
            assert!(matches!(
                parse_completion(&value, &request(), "m"),
                Err(LlmError::Malformed(_))
            ));
        }
    }
}
