//! The HTTP side shared by chat and embeddings: limits, retries, error mapping.

use std::{
    collections::VecDeque,
    future::Future,
    pin::Pin,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use rand::Rng;
use reqwest::header::{HeaderMap, CONTENT_TYPE, RETRY_AFTER};
use tokio::sync::Semaphore;

use super::OpenAiConfig;
use crate::LlmError;

const MINUTE: Duration = Duration::from_secs(60);
/// Error bodies are shown to people; a whole HTML error page is not useful.
const MAX_ERROR_BODY_CHARS: usize = 500;

/// Time as the client sees it, so retry and rate-limit tests run without real sleeps.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> Instant;
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>>;
}

/// Wall-clock time and tokio's timer.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(tokio::time::sleep(duration))
    }
}

/// Why one attempt failed, before deciding whether to try again.
#[derive(Debug)]
enum AttemptFailure {
    Timeout,
    Status {
        status: u16,
        body: String,
        retry_after: Option<Duration>,
    },
    Connect(String),
    Malformed(String),
}

impl AttemptFailure {
    fn is_retryable(&self) -> bool {
        match self {
            AttemptFailure::Timeout | AttemptFailure::Connect(_) => true,
            AttemptFailure::Status { status, .. } => {
                *status == 429 || *status == 408 || (500..=599).contains(status)
            }
            AttemptFailure::Malformed(_) => false,
        }
    }

    fn into_error(self, url: &str, timeout: Duration, attempts: u32) -> LlmError {
        match self {
            AttemptFailure::Timeout => LlmError::Timeout(timeout),
            AttemptFailure::Status { status: 429, .. } => LlmError::RateLimited { attempts },
            AttemptFailure::Status { status, body, .. } if status >= 500 => {
                LlmError::Server { status, body }
            }
            AttemptFailure::Status { status, body, .. } => LlmError::Rejected { status, body },
            AttemptFailure::Connect(detail) => LlmError::Unreachable {
                url: url.to_owned(),
                detail,
            },
            AttemptFailure::Malformed(detail) => LlmError::Malformed(detail),
        }
    }
}

/// Consecutive calls that found the server down, and until when calls skip it.
#[derive(Debug, Default)]
struct Breaker {
    failures: u32,
    open_until: Option<Instant>,
}

pub(crate) struct Transport {
    http: reqwest::Client,
    pub(crate) config: OpenAiConfig,
    permits: Semaphore,
    breaker: Mutex<Breaker>,
    /// Start times of the calls in the last minute (for `requests_per_minute`).
    window: Mutex<VecDeque<Instant>>,
    pub(crate) clock: Arc<dyn Clock>,
}

impl Transport {
    pub(crate) fn new(config: OpenAiConfig, clock: Arc<dyn Clock>) -> Result<Self, LlmError> {
        config
            .validate()
            .map_err(|problems| LlmError::Config(problems.join("; ")))?;
        let http = reqwest::Client::builder()
            .connect_timeout(config.timeout.min(Duration::from_secs(10)))
            .build()
            .map_err(|e| LlmError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self {
            http,
            permits: Semaphore::new(config.max_concurrency),
            breaker: Mutex::new(Breaker::default()),
            window: Mutex::new(VecDeque::new()),
            config,
            clock,
        })
    }

    /// POSTs `body` to `path` under the limits, retrying what is worth retrying; fails
    /// at once while the breaker is open (the server was down for the last calls).
    pub(crate) async fn post_json(
        &self,
        path: &str,
        body: &serde_json::Value,
    ) -> Result<serde_json::Value, LlmError> {
        let url = self.config.endpoint(path);
        let now = self.clock.now();
        {
            let breaker = self.breaker.lock().expect("breaker lock");
            if let Some(until) = breaker.open_until.filter(|until| *until > now) {
                return Err(LlmError::Unreachable {
                    url,
                    detail: format!(
                        "not tried: the last {} calls found the server down; the next try is in {:.0?}",
                        breaker.failures,
                        until - now
                    ),
                });
            }
        }
        let result = self.post_json_retrying(&url, body).await;
        let down = matches!(
            result,
            Err(LlmError::Timeout(_) | LlmError::Unreachable { .. } | LlmError::Server { .. })
        );
        // A server that refused the connection, or accepted it and gave no reply in
        // the whole timeout, would cost every following call the same wait: open the
        // breaker now rather than after `breaker_failures` more calls of it. A 5xx is a
        // server that is there and may answer the next call.
        let at_once = matches!(
            result,
            Err(LlmError::Unreachable { .. } | LlmError::Timeout(_))
        );
        if down {
            self.record_down(&url, at_once);
        } else {
            *self.breaker.lock().expect("breaker lock") = Breaker::default();
        }
        result
    }

    /// The caller stopped waiting after `waited` with no reply (its deadline came
    /// first): a model that does not answer in the time a question has, whose next
    /// calls would wait as long, so the breaker opens at once.
    pub(crate) fn record_no_reply(&self, waited: Duration) {
        tracing::warn!(
            waited_ms = waited.as_millis() as u64,
            "the language model gave no reply before the caller's deadline"
        );
        self.record_down(&self.config.endpoint("chat/completions"), true);
    }

    /// Counts one call that found the server down; opens the breaker once
    /// `breaker_failures` calls in a row did, or at once.
    fn record_down(&self, url: &str, at_once: bool) {
        let mut breaker = self.breaker.lock().expect("breaker lock");
        breaker.failures += 1;
        if at_once {
            breaker.failures = breaker.failures.max(self.config.breaker_failures);
        }
        let limit = self.config.breaker_failures;
        if limit > 0 && breaker.failures >= limit {
            breaker.open_until = Some(self.clock.now() + self.config.breaker_cooldown);
            tracing::warn!(
                url = %url,
                failures = breaker.failures,
                cooldown_ms = self.config.breaker_cooldown.as_millis() as u64,
                "language model down; calls fail at once until the cool-down ends"
            );
        }
    }

    async fn post_json_retrying(
        &self,
        url: &str,
        body: &serde_json::Value,
    ) -> Result<serde_json::Value, LlmError> {
        let url = url.to_owned();
        let payload = serde_json::to_vec(body)
            .map_err(|e| LlmError::Config(format!("cannot encode the request: {e}")))?;
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            self.wait_for_rate_slot().await;
            let outcome = {
                // The permit is released before any backoff sleep, so a waiting call does
                // not block others that could succeed.
                let _permit = self
                    .permits
                    .acquire()
                    .await
                    .map_err(|_| LlmError::Config("client is shutting down".to_owned()))?;
                self.send_once(&url, payload.clone()).await
            };
            let failure = match outcome {
                Ok(value) => return Ok(value),
                Err(failure) => failure,
            };
            // Nothing listening is not a busy server: back off once, not max_retries
            // times (the breaker then stops the next calls at once).
            let retries = match failure {
                AttemptFailure::Connect(_) => self.config.max_retries.min(1),
                _ => self.config.max_retries,
            };
            if !failure.is_retryable() || attempt > retries {
                return Err(failure.into_error(&url, self.config.timeout, attempt));
            }
            let delay = match &failure {
                AttemptFailure::Status {
                    retry_after: Some(wait),
                    ..
                } => (*wait).min(self.config.backoff_max),
                _ => self.backoff(attempt),
            };
            tracing::warn!(
                url = %url,
                attempt,
                delay_ms = delay.as_millis() as u64,
                failure = ?failure,
                "language model call failed, retrying"
            );
            self.clock.sleep(delay).await;
        }
    }

    async fn send_once(
        &self,
        url: &str,
        payload: Vec<u8>,
    ) -> Result<serde_json::Value, AttemptFailure> {
        let mut request = self
            .http
            .post(url)
            .header(CONTENT_TYPE, "application/json")
            .timeout(self.config.timeout)
            .body(payload);
        if let Some(key) = &self.config.api_key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(classify)?;
        let status = response.status().as_u16();
        let retry_after = parse_retry_after(response.headers());
        let bytes = response.bytes().await.map_err(classify)?;
        if !(200..300).contains(&status) {
            return Err(AttemptFailure::Status {
                status,
                body: snippet(&String::from_utf8_lossy(&bytes)),
                retry_after,
            });
        }
        serde_json::from_slice(&bytes).map_err(|e| {
            AttemptFailure::Malformed(format!(
                "response is not JSON ({e}): {}",
                snippet(&String::from_utf8_lossy(&bytes))
            ))
        })
    }

    /// Exponential backoff with "equal jitter": half fixed, half random, so concurrent
    /// clients spread out but never retry immediately.
    fn backoff(&self, attempt: u32) -> Duration {
        let exponent = attempt.saturating_sub(1).min(16);
        let ceiling = self
            .config
            .backoff_base
            .saturating_mul(1u32 << exponent)
            .min(self.config.backoff_max);
        let half = ceiling / 2;
        let jitter_nanos =
            rand::thread_rng().gen_range(0..=half.as_nanos().min(u64::MAX as u128) as u64);
        half + Duration::from_nanos(jitter_nanos)
    }

    async fn wait_for_rate_slot(&self) {
        let Some(per_minute) = self.config.requests_per_minute else {
            return;
        };
        loop {
            let wait = {
                let mut window = self.window.lock().unwrap_or_else(|p| p.into_inner());
                let now = self.clock.now();
                while let Some(&oldest) = window.front() {
                    if now.saturating_duration_since(oldest) >= MINUTE {
                        window.pop_front();
                    } else {
                        break;
                    }
                }
                if window.len() < per_minute as usize {
                    window.push_back(now);
                    return;
                }
                match window.front() {
                    Some(&oldest) => MINUTE.saturating_sub(now.saturating_duration_since(oldest)),
                    None => Duration::ZERO,
                }
            };
            self.clock.sleep(wait).await;
        }
    }
}

fn classify(error: reqwest::Error) -> AttemptFailure {
    if error.is_timeout() {
        return AttemptFailure::Timeout;
    }
    // Walk the source chain: "connection refused" sits a few levels down.
    let mut detail = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(inner) = source {
        detail.push_str(": ");
        detail.push_str(&inner.to_string());
        source = inner.source();
    }
    AttemptFailure::Connect(detail)
}

/// `Retry-After` in seconds (the HTTP-date form is rare from these servers and ignored).
fn parse_retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    let seconds: f64 = text.parse().ok()?;
    if seconds.is_finite() && seconds >= 0.0 {
        Some(Duration::from_secs_f64(seconds.min(3600.0)))
    } else {
        None
    }
}

fn snippet(text: &str) -> String {
    let trimmed = text.trim();
    if trimmed.chars().count() <= MAX_ERROR_BODY_CHARS {
        return trimmed.to_owned();
    }
    let mut cut: String = trimmed.chars().take(MAX_ERROR_BODY_CHARS).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn retry_after_accepts_seconds_and_ignores_dates() {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, HeaderValue::from_static("2"));
        assert_eq!(parse_retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert(RETRY_AFTER, HeaderValue::from_static("0.5"));
        assert_eq!(
            parse_retry_after(&headers),
            Some(Duration::from_millis(500))
        );
        headers.insert(
            RETRY_AFTER,
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(parse_retry_after(&headers), None);
    }

    #[test]
    fn backoff_grows_and_stays_within_bounds() {
        let mut config = OpenAiConfig::new("http://127.0.0.1:1/v1", "m");
        config.backoff_base = Duration::from_millis(100);
        config.backoff_max = Duration::from_millis(1000);
        let transport = Transport::new(config, Arc::new(SystemClock)).expect("valid config");
        for _ in 0..50 {
            let first = transport.backoff(1);
            assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(100));
            let third = transport.backoff(3);
            assert!(third >= Duration::from_millis(200) && third <= Duration::from_millis(400));
            let late = transport.backoff(30);
            assert!(late >= Duration::from_millis(500) && late <= Duration::from_millis(1000));
        }
    }

    #[test]
    fn long_error_bodies_are_cut() {
        let long = "x".repeat(2000);
        assert_eq!(snippet(&long).chars().count(), MAX_ERROR_BODY_CHARS + 1);
    }
}
