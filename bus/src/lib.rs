//! How kgmesh agents talk: one [`Bus`] abstraction with two implementations, `NatsBus`
//! (async-nats, queue groups, the NATS service API for discovery) and `LocalBus`
//! (in-process, same semantics). Callers see the same error kinds from both.
//!
//! The bus moves opaque payloads with headers; [`typed`] layers the schemas' envelopes,
//! content types and version checks on top.

use std::{collections::BTreeMap, sync::Arc, time::Duration};

pub mod local;
pub mod nats;
pub mod retry;
pub mod typed;

pub use local::{LocalBus, LocalBusOptions, Selection};
pub use nats::{redacted_url, NatsAuth, NatsBus, NatsOptions};
pub use retry::RetryPolicy;

use async_trait::async_trait;
use bytes::Bytes;
use futures::future::BoxFuture;
use kgmesh_schemas::{ContentType, RoleInfo};

/// Message headers (NATS headers, or a map on the local bus). Single-valued.
pub type Headers = BTreeMap<String, String>;

/// A payload and its headers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Message {
    pub headers: Headers,
    pub payload: Bytes,
}

/// Error kinds callers match on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BusError {
    #[error("request to {subject} timed out after {timeout:?}")]
    TimedOut { subject: String, timeout: Duration },
    #[error("no responders on {subject}")]
    NoResponders { subject: String },
    #[error("cannot decode message on {subject}: {detail}")]
    Decode { subject: String, detail: String },
    #[error("the bus is closed")]
    Closed,
    #[error("payload of {size} bytes exceeds the bus limit of {limit} bytes")]
    PayloadTooLarge { size: usize, limit: usize },
    #[error("bus error: {0}")]
    Other(String),
}

impl BusError {
    /// A short stable name for metrics and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            BusError::TimedOut { .. } => "timed_out",
            BusError::NoResponders { .. } => "no_responders",
            BusError::Decode { .. } => "decode",
            BusError::Closed => "closed",
            BusError::PayloadTooLarge { .. } => "payload_too_large",
            BusError::Other(_) => "other",
        }
    }

    /// Whether the same request may succeed if retried (possibly on another replica).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            BusError::TimedOut { .. } | BusError::NoResponders { .. }
        )
    }
}

/// Serves requests on one endpoint. Returning `Err` is for transport-level failures
/// only; agent errors travel inside the reply payload.
pub trait Handler: Send + Sync + 'static {
    fn handle(&self, subject: String, request: Message) -> BoxFuture<'static, Message>;
}

impl<F> Handler for F
where
    F: Fn(String, Message) -> BoxFuture<'static, Message> + Send + Sync + 'static,
{
    fn handle(&self, subject: String, request: Message) -> BoxFuture<'static, Message> {
        (self)(subject, request)
    }
}

/// The subject on which one instance alone serves `subject`: every instance serves each
/// of its endpoints there too, so that a caller can pick the replica (a hedged request
/// goes to one the first request may not have reached).
pub fn direct_subject(subject: &str, instance_id: &str) -> String {
    format!("{subject}.{instance_id}")
}

/// An endpoint to serve: a subject in a queue group, announced as part of a role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub subject: String,
    pub queue_group: String,
}

/// One role instance's registration: what it announces and the endpoints it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceSpec {
    pub info: RoleInfo,
    pub endpoints: Vec<Endpoint>,
}

/// A discovered instance of a role (one process or one in-process registration).
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceInstance {
    pub info: RoleInfo,
    pub instance_id: String,
    /// Wire formats the instance reads (the `kgmesh.codecs` metadata, mime types or
    /// `bincode` / `json`); bincode alone when it announces none.
    pub codecs: Vec<ContentType>,
    /// Requests served so far, when the implementation reports it.
    pub requests: u64,
    pub errors: u64,
}

/// A running service; dropping it does not stop it, [`ServiceHandle::stop`] does.
#[async_trait]
pub trait ServiceHandle: Send + Sync {
    /// Stops taking new requests and waits (up to `grace`) for in-flight ones to finish.
    async fn stop(&self, grace: Duration);
    fn instance_id(&self) -> &str;
}

#[async_trait]
pub trait Bus: Send + Sync + 'static {
    /// Sends a request and waits for one reply.
    async fn request(
        &self,
        subject: &str,
        message: Message,
        timeout: Duration,
    ) -> Result<Message, BusError>;

    /// Fire-and-forget.
    async fn publish(&self, subject: &str, message: Message) -> Result<(), BusError>;

    /// Serves every endpoint of `spec` with `handler`, in each endpoint's queue group,
    /// and on its [`direct_subject`] for this instance alone.
    async fn serve(
        &self,
        spec: ServiceSpec,
        handler: Arc<dyn Handler>,
    ) -> Result<Box<dyn ServiceHandle>, BusError>;

    /// Every role instance currently reachable, collected for at most `wait`.
    async fn discover(&self, wait: Duration) -> Result<Vec<ServiceInstance>, BusError>;

    /// Largest payload the bus carries.
    fn max_payload(&self) -> usize;
}

/// Counts a failed bus operation by kind (`kgmesh_bus_errors_total`; a no-op unless the
/// process installed a metrics recorder).
pub(crate) fn count_error(error: &BusError) {
    metrics::counter!("kgmesh_bus_errors_total", "kind" => error.kind()).increment(1);
}

/// Refuses a message whose payload is larger than `limit`, the bus's largest.
pub(crate) fn check_size(message: &Message, limit: usize) -> Result<(), BusError> {
    let size = message.payload.len();
    if size > limit {
        return Err(BusError::PayloadTooLarge { size, limit });
    }
    Ok(())
}

/// How many instances of each role are reachable, from a [`Bus::discover`] answer.
pub fn replica_counts(instances: &[ServiceInstance]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for instance in instances {
        *counts
            .entry(instance.info.role.as_str().to_owned())
            .or_insert(0) += 1;
    }
    counts
}

#[cfg(test)]
mod metrics_tests {
    use super::*;

    #[test]
    fn failed_requests_are_counted_by_kind() {
        let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        metrics::with_local_recorder(&recorder, || {
            runtime.block_on(async {
                let bus = LocalBus::new();
                for _ in 0..2 {
                    let error = bus
                        .request(
                            "kgmesh.v1.nobody.op",
                            Message::default(),
                            Duration::from_secs(1),
                        )
                        .await
                        .expect_err("nobody serves this subject");
                    assert!(matches!(error, BusError::NoResponders { .. }));
                }
            })
        });
        let text = handle.render();
        assert!(
            text.lines()
                .any(|line| line == r#"kgmesh_bus_errors_total{kind="no_responders"} 2"#),
            "{text}"
        );
    }
}
