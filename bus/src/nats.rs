//! The bus between processes: NATS, through async-nats.
//!
//! Every role instance registers as a NATS *service* (the micro-service API), so
//! `$SRV.INFO` / `$SRV.STATS` list every replica with its metadata and counters; each
//! operation is a service endpoint in the role's queue group, so replicas share the
//! load. Replies carry headers (content type, schema version, error kind) through
//! `respond_with_headers`.

use std::{
    collections::{BTreeMap, HashMap},
    path::PathBuf,
    sync::{
        atomic::{AtomicU64, AtomicUsize, Ordering},
        Arc,
    },
    time::Duration,
};

use async_nats::{
    service::{Service, ServiceExt},
    HeaderMap, RequestErrorKind,
};
use async_trait::async_trait;
use futures::StreamExt;
use kgmesh_schemas::{envelope::headers, ContentType, Role, RoleInfo, RoleKind};
use tokio::sync::{watch, Notify};

use crate::{
    Bus, BusError, Handler, Headers, Message, ServiceHandle, ServiceInstance, ServiceSpec,
};

/// Service metadata keys under which a role announces what `RoleInfo` needs beyond
/// the service name and version.
pub mod metadata {
    pub const KIND: &str = "kgmesh.kind";
    /// Wire formats the role reads, comma-separated (`bincode,json`); an agent from
    /// outside kgmesh announces `json`.
    pub const CODECS: &str = "kgmesh.codecs";
    pub const OPS: &str = "kgmesh.ops";
    pub const ROLE: &str = "kgmesh.role";
}

/// Key in the endpoint stats' `data` for replies that carried an agent error (NATS's
/// own `num_errors` only counts transport-level error replies, which kgmesh never sends).
const DATA_AGENT_ERRORS: &str = "kgmesh_agent_errors";

/// Counts a connection event (`kgmesh_bus_connection_events_total{event}`) and logs it
/// once: losing the server is a warning, getting it back is news.
fn record_connection_event(event: &async_nats::Event) {
    use async_nats::Event;
    let name = match event {
        Event::Connected => "connected",
        Event::Disconnected => "disconnected",
        Event::LameDuckMode => "lame_duck",
        Event::Draining => "draining",
        Event::Closed => "closed",
        Event::SlowConsumer(_) => "slow_consumer",
        Event::ServerError(_) => "server_error",
        Event::ClientError(_) => "client_error",
    };
    metrics::counter!("kgmesh_bus_connection_events_total", "event" => name).increment(1);
    match event {
        Event::Connected | Event::Draining | Event::Closed => {
            tracing::info!(%event, "nats connection")
        }
        _ => tracing::warn!(%event, "nats connection"),
    }
}

#[derive(Debug, Clone)]
pub struct NatsOptions {
    pub connect_timeout: Duration,
    /// Shown in the server's connection list (`kgmesh agent echo@host`).
    pub client_name: Option<String>,
    pub auth: NatsAuth,
    /// A PEM file of the certificate authorities that sign the server's certificate:
    /// the connection then requires TLS and trusts these (besides the system's).
    pub tls_ca_file: Option<PathBuf>,
}

impl Default for NatsOptions {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(5),
            client_name: None,
            auth: NatsAuth::None,
            tls_ca_file: None,
        }
    }
}

/// How a process proves to nats-server who it is. `Debug` never shows a secret.
#[derive(Clone, Default, PartialEq, Eq)]
pub enum NatsAuth {
    #[default]
    None,
    Token(String),
    UserPassword {
        user: String,
        password: String,
    },
    /// An NKey seed (`SU…`): the client signs the server's nonce with it.
    NKeySeed(String),
    /// A `.creds` file (user JWT and NKey seed) of a decentralized-auth account.
    CredsFile(PathBuf),
}

impl NatsAuth {
    /// A token, or `user:password` (the form the configuration's variable holds).
    pub fn from_secret(secret: &str) -> Self {
        match secret.split_once(':') {
            Some((user, password)) => Self::UserPassword {
                user: user.to_owned(),
                password: password.to_owned(),
            },
            None => Self::Token(secret.to_owned()),
        }
    }
}

impl std::fmt::Debug for NatsAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::None => f.write_str("None"),
            Self::Token(_) => f.write_str("Token(<redacted>)"),
            Self::UserPassword { user, .. } => f
                .debug_struct("UserPassword")
                .field("user", user)
                .field("password", &"<redacted>")
                .finish(),
            Self::NKeySeed(_) => f.write_str("NKeySeed(<redacted>)"),
            Self::CredsFile(path) => f.debug_tuple("CredsFile").field(path).finish(),
        }
    }
}

/// `url` with any password or token in it replaced, for logs and error messages
/// (`nats://user:secret@host:4222` → `nats://user:***@host:4222`).
pub fn redacted_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, path) = match rest.find('/') {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    let Some((userinfo, host)) = authority.rsplit_once('@') else {
        return url.to_owned();
    };
    let userinfo = match userinfo.split_once(':') {
        Some((user, _)) => format!("{user}:***"),
        None => "***".to_owned(),
    };
    format!("{scheme}://{userinfo}@{host}{path}")
}

/// [`Bus`] over NATS. Cheap to clone (one connection, shared).
#[derive(Clone, Debug)]
pub struct NatsBus {
    client: async_nats::Client,
}

impl NatsBus {
    /// Connects to `url`, giving up after `options.connect_timeout`.
    pub async fn connect(url: &str, options: NatsOptions) -> Result<Self, BusError> {
        // rustls needs one crypto provider per process, and cannot choose one itself in
        // a binary whose dependencies enable two (ring and aws-lc-rs, as kgmesh's do):
        // a TLS connection would panic. The first caller's choice (ring) stands.
        let _ = async_nats::rustls::crypto::ring::default_provider().install_default();
        let mut connect = async_nats::ConnectOptions::new()
            .connection_timeout(options.connect_timeout)
            // Without a bound a request to a dead server would wait forever on the
            // client side; kgmesh passes its own timeout on every request anyway.
            .request_timeout(Some(Duration::from_secs(60)))
            .event_callback(|event| {
                record_connection_event(&event);
                std::future::ready(())
            });
        if let Some(name) = &options.client_name {
            connect = connect.name(name);
        }
        let shown = redacted_url(url);
        connect = match options.auth {
            NatsAuth::None => connect,
            NatsAuth::Token(token) => connect.token(token),
            NatsAuth::UserPassword { user, password } => connect.user_and_password(user, password),
            NatsAuth::NKeySeed(seed) => connect.nkey(seed),
            NatsAuth::CredsFile(path) => {
                connect.credentials_file(&path).await.map_err(|error| {
                    BusError::Other(format!(
                        "cannot read the NATS credentials file {}: {error}",
                        path.display()
                    ))
                })?
            }
        };
        if let Some(ca) = options.tls_ca_file {
            if !ca.is_file() {
                return Err(BusError::Other(format!(
                    "the NATS TLS certificate authority file {} does not exist",
                    ca.display()
                )));
            }
            connect = connect.require_tls(true).add_root_certificates(ca);
        }
        let connecting = connect.connect(url);
        let client = match tokio::time::timeout(options.connect_timeout, connecting).await {
            Ok(Ok(client)) => client,
            Ok(Err(error)) => {
                return Err(BusError::Other(format!(
                    "cannot connect to NATS at {shown}: {error}"
                )))
            }
            Err(_elapsed) => {
                return Err(BusError::Other(format!(
                    "cannot connect to NATS at {shown}: no connection within {:?}",
                    options.connect_timeout
                )))
            }
        };
        Ok(Self { client })
    }

    /// Whether `client`'s connection to nats-server is up right now (not reconnecting).
    pub fn is_connected(client: &async_nats::Client) -> bool {
        client.connection_state() == async_nats::connection::State::Connected
    }

    /// The underlying client, for JetStream KV and the like.
    pub fn client(&self) -> &async_nats::Client {
        &self.client
    }

    fn check_size(&self, message: &Message) -> Result<(), BusError> {
        crate::check_size(message, self.max_payload())
    }
}

fn to_nats_headers(headers: &Headers) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        map.insert(name.as_str(), value.as_str());
    }
    map
}

fn from_nats_headers(headers: Option<&HeaderMap>) -> Headers {
    let mut map = Headers::new();
    if let Some(headers) = headers {
        for (name, values) in headers.iter() {
            if let Some(value) = values.last() {
                map.insert(name.to_string(), value.as_str().to_owned());
            }
        }
    }
    map
}

/// The wire formats a `kgmesh.codecs` value names (`bincode`, `json` or their mime
/// types); bincode when there is none or none is known.
pub fn parse_codecs(value: Option<&str>) -> Vec<ContentType> {
    let mut codecs: Vec<ContentType> = Vec::new();
    for name in value.unwrap_or_default().split(',') {
        if let Ok(codec) = ContentType::from_name_or_mime(name) {
            if !codecs.contains(&codec) {
                codecs.push(codec);
            }
        }
    }
    if codecs.is_empty() {
        codecs.push(ContentType::Bincode);
    }
    codecs
}

fn closed_or_other(error: impl std::fmt::Display) -> BusError {
    let text = error.to_string();
    if text.contains("closed") || text.contains("disconnected") {
        BusError::Closed
    } else {
        BusError::Other(text)
    }
}

impl NatsBus {
    async fn request_once(
        &self,
        subject: &str,
        message: Message,
        timeout: Duration,
    ) -> Result<Message, BusError> {
        self.check_size(&message)?;
        let request = async_nats::Request::new()
            .payload(message.payload)
            .headers(to_nats_headers(&message.headers))
            .timeout(Some(timeout));
        // The client's own timeout covers the wait for the reply; the outer one also
        // covers a stalled connection (e.g. a full outgoing buffer).
        let sent = self.client.send_request(subject.to_owned(), request);
        let reply = match tokio::time::timeout(timeout + Duration::from_millis(250), sent).await {
            Ok(Ok(reply)) => reply,
            Ok(Err(error)) => {
                return Err(match error.kind() {
                    RequestErrorKind::TimedOut => BusError::TimedOut {
                        subject: subject.to_owned(),
                        timeout,
                    },
                    RequestErrorKind::NoResponders => BusError::NoResponders {
                        subject: subject.to_owned(),
                    },
                    RequestErrorKind::MaxPayloadExceeded => BusError::PayloadTooLarge {
                        size: 0,
                        limit: self.max_payload(),
                    },
                    RequestErrorKind::InvalidSubject => {
                        BusError::Other(format!("invalid subject {subject:?}"))
                    }
                    RequestErrorKind::Other => closed_or_other(error),
                })
            }
            Err(_elapsed) => {
                return Err(BusError::TimedOut {
                    subject: subject.to_owned(),
                    timeout,
                })
            }
        };
        Ok(Message {
            headers: from_nats_headers(reply.headers.as_ref()),
            payload: reply.payload,
        })
    }
}

#[async_trait]
impl Bus for NatsBus {
    async fn request(
        &self,
        subject: &str,
        message: Message,
        timeout: Duration,
    ) -> Result<Message, BusError> {
        self.request_once(subject, message, timeout)
            .await
            .inspect_err(crate::count_error)
    }

    async fn publish(&self, subject: &str, message: Message) -> Result<(), BusError> {
        self.check_size(&message)?;
        self.client
            .publish_with_headers(
                subject.to_owned(),
                to_nats_headers(&message.headers),
                message.payload,
            )
            .await
            .map_err(closed_or_other)
    }

    async fn serve(
        &self,
        spec: ServiceSpec,
        handler: Arc<dyn Handler>,
    ) -> Result<Box<dyn ServiceHandle>, BusError> {
        let info = spec.info;
        let role = info.role.as_str().to_owned();
        let agent_errors = Arc::new(AtomicU64::new(0));
        let service_metadata = HashMap::from([
            (metadata::ROLE.to_owned(), role.clone()),
            (metadata::KIND.to_owned(), info.kind.as_str().to_owned()),
            (metadata::OPS.to_owned(), info.ops.join(",")),
            // kgmesh's roles are served through `typed`, which reads both formats.
            (
                metadata::CODECS.to_owned(),
                [ContentType::Bincode, ContentType::Json]
                    .map(ContentType::name)
                    .join(","),
            ),
        ]);
        let errors_for_stats = agent_errors.clone();
        let service = self
            .client
            .service_builder()
            .description(format!("kgmesh {} role ({})", role, info.kind.as_str()))
            .metadata(service_metadata)
            .stats_handler(move |_endpoint, _stats| {
                serde_json::json!({ DATA_AGENT_ERRORS: errors_for_stats.load(Ordering::Relaxed) })
            })
            .start(role.clone(), info.version.clone())
            .await
            .map_err(|e| BusError::Other(format!("cannot register service {role}: {e}")))?;
        let instance_id = service.info().await.id;

        let (shutdown_sender, shutdown) = watch::channel(false);
        let tracker = Arc::new(InFlight::default());
        let mut loops = Vec::with_capacity(spec.endpoints.len());
        for endpoint in &spec.endpoints {
            let name = endpoint_name(&endpoint.subject);
            let direct = crate::direct_subject(&endpoint.subject, &instance_id);
            // (NATS endpoint name, queue group, subject): the endpoint in its queue group,
            // then the same operation on this instance's own subject (no other member).
            let routes = [
                (
                    name.clone(),
                    endpoint.queue_group.clone(),
                    endpoint.subject.clone(),
                ),
                (format!("{name}_direct"), direct.clone(), direct),
            ];
            for (name, queue_group, subject) in routes {
                let nats_endpoint = service
                    .endpoint_builder()
                    .name(name)
                    .queue_group(queue_group)
                    .add(subject.clone())
                    .await
                    .map_err(|e| {
                        BusError::Other(format!("cannot add endpoint {subject} to {role}: {e}"))
                    })?;
                loops.push(tokio::spawn(serve_endpoint(
                    nats_endpoint,
                    endpoint.subject.clone(),
                    handler.clone(),
                    tracker.clone(),
                    agent_errors.clone(),
                    shutdown.clone(),
                )));
            }
        }
        // `add` returns once the subscriptions are written, not once the server has
        // processed them, and a flush only empties the socket buffer. The server handles
        // one connection's messages in order, so a round trip to this instance's own
        // PING verb proves the endpoints' subscriptions are live: a request sent by
        // another process right after `serve` returns finds them.
        let ping = format!("$SRV.PING.{role}.{instance_id}");
        match tokio::time::timeout(Duration::from_secs(5), self.client.request(ping, "".into()))
            .await
        {
            Ok(Ok(_pong)) => {}
            Ok(Err(error)) => return Err(closed_or_other(error)),
            Err(_elapsed) => {
                return Err(BusError::Other(format!(
                    "service {role} registered but the server did not confirm it within 5s"
                )))
            }
        }
        Ok(Box::new(NatsServiceHandle {
            instance_id,
            shutdown: shutdown_sender,
            loops: parking_lot::Mutex::new(loops),
            tracker,
            service: parking_lot::Mutex::new(Some(service)),
        }))
    }

    async fn discover(&self, wait: Duration) -> Result<Vec<ServiceInstance>, BusError> {
        let inbox = self.client.new_inbox();
        let mut replies = self
            .client
            .subscribe(inbox.clone())
            .await
            .map_err(closed_or_other)?;
        for verb in ["INFO", "STATS"] {
            self.client
                .publish_with_reply(format!("$SRV.{verb}"), inbox.clone(), "".into())
                .await
                .map_err(closed_or_other)?;
        }
        self.client.flush().await.map_err(closed_or_other)?;

        // Every instance answers both verbs; collect until `wait` has passed, since
        // nothing says how many instances exist.
        let mut infos: BTreeMap<String, serde_json::Value> = BTreeMap::new();
        let mut stats: BTreeMap<String, serde_json::Value> = BTreeMap::new();
        let deadline = tokio::time::Instant::now() + wait;
        while let Ok(Some(reply)) = tokio::time::timeout_at(deadline, replies.next()).await {
            let Ok(value) = serde_json::from_slice::<serde_json::Value>(&reply.payload) else {
                continue;
            };
            let id = value["id"].as_str().unwrap_or_default().to_owned();
            match value["type"].as_str() {
                Some("io.nats.micro.v1.info_response") => {
                    infos.insert(id, value);
                }
                Some("io.nats.micro.v1.stats_response") => {
                    stats.insert(id, value);
                }
                _ => {}
            }
        }
        let _ = replies.unsubscribe().await;

        let mut instances = Vec::new();
        for (id, info) in infos {
            // Other NATS services may share the server; only kgmesh roles announce a kind.
            let Some(kind) = info["metadata"][metadata::KIND]
                .as_str()
                .and_then(RoleKind::parse)
            else {
                continue;
            };
            let Ok(role) = Role::new(info["name"].as_str().unwrap_or_default()) else {
                continue;
            };
            let ops = info["metadata"][metadata::OPS]
                .as_str()
                .unwrap_or_default()
                .split(',')
                .filter(|op| !op.is_empty())
                .map(str::to_owned)
                .collect();
            let (requests, errors) = stats
                .get(&id)
                .map(|stats| {
                    let endpoints = stats["endpoints"].as_array().cloned().unwrap_or_default();
                    let requests = endpoints
                        .iter()
                        .map(|e| e["num_requests"].as_u64().unwrap_or(0))
                        .sum();
                    // The agent-error counter is per instance, repeated in each endpoint.
                    let agent_errors = endpoints
                        .iter()
                        .map(|e| e["data"][DATA_AGENT_ERRORS].as_u64().unwrap_or(0))
                        .max()
                        .unwrap_or(0);
                    let nats_errors: u64 = endpoints
                        .iter()
                        .map(|e| e["num_errors"].as_u64().unwrap_or(0))
                        .sum();
                    (requests, agent_errors + nats_errors)
                })
                .unwrap_or((0, 0));
            instances.push(ServiceInstance {
                info: RoleInfo {
                    role,
                    version: info["version"].as_str().unwrap_or_default().to_owned(),
                    kind,
                    ops,
                },
                instance_id: id,
                codecs: parse_codecs(info["metadata"][metadata::CODECS].as_str()),
                requests,
                errors,
            });
        }
        Ok(instances)
    }

    fn max_payload(&self) -> usize {
        self.client.server_info().max_payload
    }
}

/// An endpoint name from its subject's last token (NATS allows `A-Za-z0-9_-`).
fn endpoint_name(subject: &str) -> String {
    let last = subject.rsplit('.').next().unwrap_or(subject);
    last.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[derive(Default)]
struct InFlight {
    count: AtomicUsize,
    idle: Notify,
}

impl InFlight {
    fn enter(self: &Arc<Self>) -> InFlightGuard {
        self.count.fetch_add(1, Ordering::SeqCst);
        InFlightGuard(self.clone())
    }

    async fn wait_idle(&self) {
        loop {
            let idle = self.idle.notified();
            if self.count.load(Ordering::SeqCst) == 0 {
                return;
            }
            idle.await;
        }
    }
}

struct InFlightGuard(Arc<InFlight>);

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

async fn serve_endpoint(
    mut endpoint: async_nats::service::endpoint::Endpoint,
    subject: String,
    handler: Arc<dyn Handler>,
    tracker: Arc<InFlight>,
    agent_errors: Arc<AtomicU64>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let request = tokio::select! {
            request = endpoint.next() => request,
            _ = shutdown.wait_for(|stop| *stop) => break,
        };
        let Some(request) = request else {
            return;
        };
        spawn_request(request, &subject, &handler, &tracker, &agent_errors);
    }
    // Stop taking new requests, then serve what was already delivered to us: after
    // the unsubscribe the stream yields the buffered requests and ends.
    if let Err(error) = endpoint.stop().await {
        tracing::warn!(%subject, %error, "cannot unsubscribe endpoint");
        return;
    }
    let drain_buffered = async {
        while let Some(request) = endpoint.next().await {
            spawn_request(request, &subject, &handler, &tracker, &agent_errors);
        }
    };
    // A stream that does not end promptly has nothing more for us.
    let _ = tokio::time::timeout(Duration::from_millis(500), drain_buffered).await;
}

fn spawn_request(
    request: async_nats::service::Request,
    subject: &str,
    handler: &Arc<dyn Handler>,
    tracker: &Arc<InFlight>,
    agent_errors: &Arc<AtomicU64>,
) {
    let guard = tracker.enter();
    let message = Message {
        headers: from_nats_headers(request.message.headers.as_ref()),
        payload: request.message.payload.clone(),
    };
    let work = handler.handle(subject.to_owned(), message);
    let agent_errors = agent_errors.clone();
    let subject = subject.to_owned();
    tokio::spawn(async move {
        let reply = work.await;
        if reply.headers.contains_key(headers::ERROR) {
            agent_errors.fetch_add(1, Ordering::Relaxed);
        }
        // A published message (a cancel) asks for no reply.
        if request.message.reply.is_some() {
            let reply_headers = to_nats_headers(&reply.headers);
            if let Err(error) = request
                .respond_with_headers(Ok(reply.payload), reply_headers)
                .await
            {
                tracing::warn!(%subject, %error, "cannot send reply");
            }
        }
        drop(guard);
    });
}

struct NatsServiceHandle {
    instance_id: String,
    shutdown: watch::Sender<bool>,
    loops: parking_lot::Mutex<Vec<tokio::task::JoinHandle<()>>>,
    tracker: Arc<InFlight>,
    service: parking_lot::Mutex<Option<Service>>,
}

#[async_trait]
impl ServiceHandle for NatsServiceHandle {
    async fn stop(&self, grace: Duration) {
        let _ = self.shutdown.send(true);
        let loops = std::mem::take(&mut *self.loops.lock());
        let drained = async {
            for endpoint_loop in loops {
                let _ = endpoint_loop.await;
            }
            self.tracker.wait_idle().await;
        };
        if tokio::time::timeout(grace, drained).await.is_err() {
            tracing::warn!(
                instance = %self.instance_id,
                in_flight = self.tracker.count.load(Ordering::SeqCst),
                "stop grace elapsed with requests still in flight"
            );
        }
        // Leave discovery last, so an instance is listed as long as it answers.
        let service = self.service.lock().take();
        if let Some(service) = service {
            let _ = service.stop().await;
        }
    }

    fn instance_id(&self) -> &str {
        &self.instance_id
    }
}

#[cfg(test)]
mod secret_tests {
    use super::*;

    #[test]
    fn urls_lose_their_passwords_and_tokens() {
        assert_eq!(
            redacted_url("nats://kgmesh:s3cret@nats:4222"),
            "nats://kgmesh:***@nats:4222"
        );
        assert_eq!(
            redacted_url("tls://t0ken@nats:4222/x"),
            "tls://***@nats:4222/x"
        );
        assert_eq!(redacted_url("nats://nats:4222"), "nats://nats:4222");
        assert_eq!(redacted_url("nats:4222"), "nats:4222");
    }

    #[test]
    fn debug_output_never_shows_a_secret() {
        let options = NatsOptions {
            auth: NatsAuth::from_secret("kgmesh:s3cret"),
            ..NatsOptions::default()
        };
        let shown = format!("{options:?}");
        assert!(
            shown.contains("kgmesh") && !shown.contains("s3cret"),
            "{shown}"
        );
        for auth in [
            NatsAuth::from_secret("t0ken"),
            NatsAuth::NKeySeed("SUAseed".to_owned()),
        ] {
            let shown = format!("{auth:?}");
            assert!(
                !shown.contains("t0ken") && !shown.contains("SUAseed"),
                "{shown}"
            );
        }
    }
}

#[cfg(test)]
mod codec_tests {
    use super::*;

    #[test]
    fn announced_codecs_are_read_by_name_or_mime_and_default_to_bincode() {
        use ContentType::{Bincode, Json};
        assert_eq!(parse_codecs(None), [Bincode]);
        assert_eq!(parse_codecs(Some("")), [Bincode]);
        assert_eq!(parse_codecs(Some("json")), [Json]);
        assert_eq!(parse_codecs(Some(" JSON , bincode ,json")), [Json, Bincode]);
        assert_eq!(parse_codecs(Some("application/json")), [Json]);
        assert_eq!(parse_codecs(Some("msgpack")), [Bincode]);
    }
}
