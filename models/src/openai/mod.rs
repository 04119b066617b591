//! One client for every server that speaks the OpenAI chat-completions and embeddings
//! API: vLLM, Ollama, llama.cpp's server, LM Studio, and hosted APIs.
//!
//! Only three things differ between them: the base URL, the model name, and whether an
//! API key is needed. Everything else (timeouts, retries on 429/5xx with jittered
//! exponential backoff that honours `Retry-After`, a concurrency limit, a
//! requests-per-minute limit, usage accounting) is the same.
//!
//! | server | base URL | model | key |
//! |---|---|---|---|
//! | vLLM (`vllm serve Qwen/Qwen2.5-7B-Instruct`) | `http://HOST:8000/v1` | the served model id (`--served-model-name`) | any, unless started with `--api-key` |
//! | Ollama (`ollama serve`, `ollama pull qwen2.5:7b`) | `http://HOST:11434/v1` | `qwen2.5:7b` | any (ignored) |
//! | llama.cpp (`llama-server -m model.gguf --port 8080`) | `http://HOST:8080/v1` | anything (one model is loaded) | any, unless `--api-key` |
//! | llama-cpp-python (`scripts/local-llm serve`) | `http://127.0.0.1:8088/v1` | `qwen2.5-coder-0.5b-instruct` | any |
//! | LM Studio (server tab, "Start Server") | `http://HOST:1234/v1` | the model identifier LM Studio shows | any |
//! | OpenAI | `https://api.openai.com/v1` | e.g. `gpt-4o-mini` | `OPENAI_API_KEY` |
//! | other hosted OpenAI-compatible APIs (Together, Groq, OpenRouter, Azure via its compatible endpoint, …) | the provider's `/v1` URL | the provider's model id | the provider's key |
//!
//! The base URL always ends in `/v1` (the client appends `/chat/completions` and
//! `/embeddings`). [`OpenAiConfig::from_env`] reads `OPENAI_BASE_URL` and
//! `OPENAI_API_KEY`, the names every OpenAI SDK uses, so a shell that already talks to one
//! of these servers needs nothing else.
//!
//! Small local models are slow on CPUs: raise `timeout` (the per-attempt limit) rather than
//! `max_retries`, since a retry repeats the whole prompt processing.

mod chat;
mod embeddings;
mod metrics;
mod transport;

use std::time::Duration;

pub use chat::OpenAiChat;
pub use embeddings::OpenAiEmbedder;
pub use transport::{Clock, SystemClock};

/// Where the server is and how politely to use it. `Debug` leaves the API key out.
#[derive(Clone, PartialEq)]
pub struct OpenAiConfig {
    /// Ends in `/v1`, e.g. `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    pub model: String,
    /// Sent as `Authorization: Bearer …` when present.
    pub api_key: Option<String>,
    /// Limit for one attempt (connect, prompt processing and generation).
    pub timeout: Duration,
    /// Attempts after the first, for 429, 5xx and timeouts; a refused connection is
    /// tried once more at most, and then opens the breaker at once.
    pub max_retries: u32,
    /// First backoff; doubles per attempt, half of it jittered, up to `backoff_max`. A
    /// server's `Retry-After` replaces the computed wait, also capped at `backoff_max`.
    pub backoff_base: Duration,
    pub backoff_max: Duration,
    /// Calls in flight at once from this client (a local server serves one at a time).
    pub max_concurrency: usize,
    /// Calls started per rolling minute; `None` for no limit.
    pub requests_per_minute: Option<u32>,
    /// Puts the prompt and the completion on the call's trace span
    /// (`gen_ai.input.messages`, `gen_ai.output.messages`). Off by default: prompts hold
    /// users' questions and graph data.
    pub record_prompts: bool,
    /// After this many calls in a row fail with the server unreachable, timing out or
    /// answering 5xx (retries spent), calls fail at once for `breaker_cooldown` instead
    /// of each waiting out its own timeouts and retries; the first call after it tries
    /// the server again. 0 turns this off.
    pub breaker_failures: u32,
    pub breaker_cooldown: Duration,
    /// The model's context window in tokens, when known: prompts cut their evidence to
    /// fit it ([`crate::LanguageModel::context_tokens`]).
    pub context_tokens: Option<usize>,
    /// How a request's `choices` are enforced by the server.
    pub choice_constraint: ChoiceConstraint,
}

/// How the server is told that a reply must be one of a request's `choices`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChoiceConstraint {
    /// Not at all: the prompt asks for one, the reply is parsed tolerantly (any server).
    #[default]
    None,
    /// A GBNF `grammar` of the choices (llama.cpp's server).
    Grammar,
    /// `guided_choice` (vLLM).
    GuidedChoice,
}

impl ChoiceConstraint {
    pub fn as_str(self) -> &'static str {
        match self {
            ChoiceConstraint::None => "none",
            ChoiceConstraint::Grammar => "grammar",
            ChoiceConstraint::GuidedChoice => "guided_choice",
        }
    }
}

/// A GBNF grammar whose only sentences are the choices.
pub fn choice_grammar(choices: &[String]) -> String {
    let alternatives: Vec<String> = choices
        .iter()
        .map(|choice| serde_json::Value::String(choice.clone()).to_string())
        .collect();
    format!("root ::= {}", alternatives.join(" | "))
}

pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

impl std::fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .field("backoff_base", &self.backoff_base)
            .field("backoff_max", &self.backoff_max)
            .field("max_concurrency", &self.max_concurrency)
            .field("requests_per_minute", &self.requests_per_minute)
            .field("record_prompts", &self.record_prompts)
            .field("breaker_failures", &self.breaker_failures)
            .field("breaker_cooldown", &self.breaker_cooldown)
            .field("context_tokens", &self.context_tokens)
            .field("choice_constraint", &self.choice_constraint)
            .finish()
    }
}

impl OpenAiConfig {
    /// Defaults for a server at `base_url`.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            timeout: Duration::from_secs(120),
            max_retries: 4,
            backoff_base: Duration::from_millis(500),
            backoff_max: Duration::from_secs(30),
            max_concurrency: 4,
            requests_per_minute: None,
            record_prompts: false,
            breaker_failures: 3,
            breaker_cooldown: Duration::from_secs(30),
            context_tokens: None,
            choice_constraint: ChoiceConstraint::None,
        }
    }

    /// Base URL and key from `OPENAI_BASE_URL` / `OPENAI_API_KEY` (the OpenAI API when the
    /// URL is unset).
    pub fn from_env(model: impl Into<String>) -> Self {
        let mut config = Self::new(DEFAULT_BASE_URL, model);
        config.fill_from_env();
        config
    }

    /// Keeps explicit settings; takes the URL and key from the environment only where
    /// none was configured (the URL counts as unset when it is the OpenAI default).
    pub fn fill_from_env(&mut self) {
        if self.base_url.is_empty() || self.base_url == DEFAULT_BASE_URL {
            if let Some(url) = non_empty_env("OPENAI_BASE_URL") {
                self.base_url = url;
            }
        }
        if self.api_key.is_none() {
            self.api_key = non_empty_env("OPENAI_API_KEY");
        }
    }

    /// Every problem at once, so a bad config file is fixed in one go.
    pub fn validate(&self) -> Result<(), Vec<String>> {
        let mut problems = Vec::new();
        let url = self.base_url.trim();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            problems.push(format!(
                "base_url {:?} must start with http:// or https://",
                self.base_url
            ));
        }
        if self.model.trim().is_empty() {
            problems.push("model must not be empty".to_owned());
        }
        if self.timeout.is_zero() {
            problems.push("timeout must be above zero".to_owned());
        }
        if self.max_concurrency == 0 {
            problems.push("max_concurrency must be at least 1".to_owned());
        }
        if self.requests_per_minute == Some(0) {
            problems.push("requests_per_minute must be at least 1 (or unset)".to_owned());
        }
        if self.backoff_base > self.backoff_max {
            problems.push("backoff_base must not exceed backoff_max".to_owned());
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems)
        }
    }

    pub(crate) fn endpoint(&self, path: &str) -> String {
        format!("{}/{}", self.base_url.trim().trim_end_matches('/'), path)
    }
}

fn non_empty_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_reports_every_problem() {
        let mut config = OpenAiConfig::new("localhost:8080", "");
        config.max_concurrency = 0;
        config.requests_per_minute = Some(0);
        let problems = config.validate().unwrap_err();
        assert_eq!(problems.len(), 4, "{problems:?}");
    }

    #[test]
    fn endpoint_joins_without_double_slashes() {
        let config = OpenAiConfig::new("http://127.0.0.1:8080/v1/", "m");
        assert_eq!(
            config.endpoint("chat/completions"),
            "http://127.0.0.1:8080/v1/chat/completions"
        );
    }
}
