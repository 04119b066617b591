//! Counts language-model calls, their latency and their tokens, by configured model (a
//! handful of values per deployment). Recorded through the `metrics` facade: a no-op
//! unless the process installed a recorder (`kgmesh_telemetry::metrics`).

use std::time::Duration;

use crate::{ChatResponse, LlmError};

const LLM_REQUESTS_TOTAL: &str = "kgmesh_llm_requests_total";
const LLM_REQUEST_DURATION_SECONDS: &str = "kgmesh_llm_request_duration_seconds";
const LLM_TOKENS_TOTAL: &str = "kgmesh_llm_tokens_total";

/// A short stable name for an error, for the `outcome` label.
pub(crate) fn error_kind(error: &LlmError) -> &'static str {
    match error {
        LlmError::Timeout(_) => "timeout",
        LlmError::RateLimited { .. } => "rate_limited",
        LlmError::Server { .. } => "server_error",
        LlmError::Rejected { .. } => "rejected",
        LlmError::Unreachable { .. } => "unreachable",
        LlmError::Malformed(_) => "malformed",
        LlmError::Config(_) => "config",
    }
}

/// One chat call (retries included): its outcome, its time and, when it answered, its
/// tokens.
pub(crate) fn record_chat(model: &str, result: &Result<ChatResponse, LlmError>, elapsed: Duration) {
    let outcome = match result {
        Ok(_) => "ok",
        Err(error) => error_kind(error),
    };
    let labels = [("model", model.to_owned()), ("outcome", outcome.to_owned())];
    metrics::counter!(LLM_REQUESTS_TOTAL, &labels).increment(1);
    metrics::histogram!(LLM_REQUEST_DURATION_SECONDS, &labels).record(elapsed.as_secs_f64());
    if let Ok(response) = result {
        metrics::counter!(LLM_TOKENS_TOTAL, "model" => model.to_owned(), "type" => "input")
            .increment(response.usage.prompt_tokens);
        metrics::counter!(LLM_TOKENS_TOTAL, "model" => model.to_owned(), "type" => "output")
            .increment(response.usage.completion_tokens);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Usage;

    #[test]
    fn calls_and_tokens_are_counted_by_model() {
        let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        let answered = Ok(ChatResponse {
            text: "Michael Mann".to_owned(),
            usage: Usage {
                prompt_tokens: 120,
                completion_tokens: 7,
                estimated: false,
            },
            model: "served-name".to_owned(),
            elapsed: Duration::from_millis(40),
        });
        metrics::with_local_recorder(&recorder, || {
            record_chat("qwen", &answered, Duration::from_millis(40));
            record_chat("qwen", &answered, Duration::from_millis(60));
            record_chat(
                "qwen",
                &Err(LlmError::RateLimited { attempts: 5 }),
                Duration::ZERO,
            );
        });
        let text = handle.render();
        for line in [
            r#"kgmesh_llm_requests_total{model="qwen",outcome="ok"} 2"#,
            r#"kgmesh_llm_requests_total{model="qwen",outcome="rate_limited"} 1"#,
            r#"kgmesh_llm_tokens_total{model="qwen",type="input"} 240"#,
            r#"kgmesh_llm_tokens_total{model="qwen",type="output"} 14"#,
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
    }
}
