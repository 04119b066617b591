//! Whatever answers the questions: a `kgmesh serve` endpoint or the embedded pipeline.
//!
//! The harness only needs "question in, [`AskReply`] out" and a description of the
//! system for the report, so both modes hide behind [`Answerer`]; tests use a scripted
//! one.

use std::time::Duration;

use async_trait::async_trait;
use kgmesh_schemas::messages::ask::{AskReply, AskRequest};
use serde::{Deserialize, Serialize};

#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    #[error("the answering system is not available: {0}")]
    Unavailable(String),
    #[error("request failed: {0}")]
    Transport(String),
    #[error("server answered HTTP {status}: {body}")]
    Status { status: u16, body: String },
    #[error("cannot decode the reply: {0}")]
    Decode(String),
    #[error("no answer within {0:?}")]
    TimedOut(Duration),
    #[error("{0}")]
    Failed(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnswererMode {
    /// Every role in the evaluating process.
    Embedded,
    /// A `kgmesh serve` endpoint over HTTP.
    Http,
    /// A stand-in (tests).
    Scripted,
}

/// Everything about the answering system a reader needs to reproduce a number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswererConfig {
    pub mode: AnswererMode,
    pub server_url: Option<String>,
    /// `none` for the LLM-free strategy, otherwise `model @ base_url`; `unknown` when a
    /// server does not say.
    pub llm: String,
    pub embedder: String,
    /// Per-question limits (rounds, depth, breadth = K_degree, LLM calls, tokens, rows,
    /// timeout).
    pub budget: Option<serde_json::Value>,
    /// Retrieval and linking knobs (top-m, K_degree, evidence and answers kept, …).
    #[serde(default)]
    pub k_values: Option<serde_json::Value>,
    /// Plan-cache state at the start and whether it was used.
    pub cache: String,
    /// Roles the system started (embedded mode).
    #[serde(default)]
    pub roles: Vec<String>,
    /// Time to load the KG and start the roles, not part of any question's latency.
    #[serde(default)]
    pub setup_ms: Option<f64>,
    /// The whole effective configuration, when known. It holds no secrets: keys and
    /// passwords are configured as names of environment variables.
    pub config: Option<serde_json::Value>,
    /// What a server said about itself (`GET /v1/agents`), when it answered.
    pub server_info: Option<serde_json::Value>,
}

#[async_trait]
pub trait Answerer: Send + Sync {
    async fn ask(&self, request: AskRequest) -> Result<AskReply, AnswerError>;
    fn describe(&self) -> AnswererConfig;
}

/// Asks a `kgmesh serve` endpoint: `POST {base}/v1/ask` with a JSON [`AskRequest`].
pub struct HttpAnswerer {
    client: reqwest::Client,
    ask_url: String,
    base_url: String,
    server_info: Option<serde_json::Value>,
}

const RETRIES_WHEN_BUSY: usize = 8;
/// Failed connections retried per question (within [`RETRIES_WHEN_BUSY`]); with the
/// backoff that is about a second and a half of waiting for a server to come back.
const RECONNECTS: usize = 5;

impl HttpAnswerer {
    async fn ask_once(&self, request: &AskRequest) -> Result<AskReply, AnswerError> {
        let response = self
            .client
            .post(&self.ask_url)
            .json(request)
            .send()
            .await
            .map_err(|error| {
                if error.is_timeout() {
                    AnswerError::Failed(format!("HTTP request timed out: {error}"))
                } else {
                    AnswerError::Transport(error.to_string())
                }
            })?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|error| AnswerError::Transport(error.to_string()))?;
        if !status.is_success() {
            let body = String::from_utf8_lossy(&body);
            return Err(AnswerError::Status {
                status: status.as_u16(),
                body: body.chars().take(500).collect(),
            });
        }
        serde_json::from_slice(&body).map_err(|error| AnswerError::Decode(error.to_string()))
    }

    /// Connects lazily; reads `GET /v1/agents` once (best effort) for the report.
    pub async fn new(base_url: &str, request_timeout: Duration) -> Result<Self, AnswerError> {
        let base_url = base_url.trim_end_matches('/').to_owned();
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(AnswerError::Unavailable(format!(
                "server URL `{base_url}` must start with http:// or https://"
            )));
        }
        let client = reqwest::Client::builder()
            .timeout(request_timeout)
            .build()
            .map_err(|error| AnswerError::Transport(error.to_string()))?;
        // Nothing listening is an error before the run, not a run of failed questions.
        let server_info = match client.get(format!("{base_url}/v1/agents")).send().await {
            Ok(response) if response.status().is_success() => response.json().await.ok(),
            Err(error) if error.is_connect() => {
                return Err(AnswerError::Unavailable(format!(
                    "cannot connect to {base_url} ({error}); is `kgmesh serve` running there?"
                )))
            }
            _ => None,
        };
        Ok(Self {
            ask_url: format!("{base_url}/v1/ask"),
            client,
            base_url,
            server_info,
        })
    }
}

#[async_trait]
impl Answerer for HttpAnswerer {
    async fn ask(&self, request: AskRequest) -> Result<AskReply, AnswerError> {
        // A server at its in-flight limit answers 429: wait a little and ask again, so
        // that --concurrency above the server's limit slows the run instead of failing it.
        // A connection that fails (a server restarting) is tried again a few times too,
        // so that a restart does not lose the questions in flight.
        let mut backoff = Duration::from_millis(20);
        let mut reconnects = 0;
        for _ in 0..RETRIES_WHEN_BUSY {
            match self.ask_once(&request).await {
                Err(AnswerError::Status { status: 429, .. }) => {}
                Err(AnswerError::Transport(_)) if reconnects < RECONNECTS => reconnects += 1,
                outcome => return outcome,
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(1));
        }
        self.ask_once(&request).await
    }

    fn describe(&self) -> AnswererConfig {
        AnswererConfig {
            mode: AnswererMode::Http,
            server_url: Some(self.base_url.clone()),
            llm: "unknown (server-side configuration)".to_owned(),
            embedder: "unknown (server-side configuration)".to_owned(),
            budget: None,
            k_values: None,
            cache: "server's plan cache, state at start unknown".to_owned(),
            roles: Vec::new(),
            setup_ms: None,
            config: None,
            server_info: self.server_info.clone(),
        }
    }
}
