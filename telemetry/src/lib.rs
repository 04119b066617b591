//! Observability shared by every kgmesh process: log/trace subscriber setup, optional OTLP
//! export, and W3C trace-context propagation between the bus envelope ([`Meta`]) and spans, so
//! one question is one trace across processes.
//!
//! Export is off unless an OTLP endpoint is configured (`OTEL_EXPORTER_OTLP_ENDPOINT` or
//! `telemetry.otlp_endpoint`): without one no OpenTelemetry layer is installed at all and
//! spans cost what plain `tracing` spans cost. With one, spans go through a batch exporter
//! over HTTP/protobuf or gRPC (`OTEL_EXPORTER_OTLP_PROTOCOL`), and the [`TelemetryGuard`]
//! flushes what is queued when the process stops.
//!
//! [`Meta`]: kgmesh_schemas::Meta

/// Prometheus metrics (independent of tracing): recorder, descriptions, rendering.
pub mod metrics;
mod propagation;

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{
    WithExportConfig, OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL,
};
use opentelemetry_sdk::{trace::SdkTracerProvider, Resource};
use tracing::{level_filters::LevelFilter, Subscriber};
use tracing_subscriber::{filter::Targets, layer::SubscriberExt, EnvFilter, Layer, Registry};

pub use propagation::{current, current_or, from_headers, inject, set_parent, trace_id};

/// Libraries whose own spans and events never go to the trace backend: the transports
/// (their spans would drown the question's) and the exporter itself (exporting its own
/// events would feed back into the exporter).
pub const QUIET_TARGETS: [&str; 12] = [
    "h2",
    "tonic",
    "tonic_prost",
    "hyper",
    "hyper_util",
    "tower",
    "reqwest",
    "async_nats",
    "rustls",
    "opentelemetry",
    "opentelemetry_sdk",
    "opentelemetry_otlp",
];

const SERVICE_NAME_ENV: &str = "OTEL_SERVICE_NAME";
const SDK_DISABLED_ENV: &str = "OTEL_SDK_DISABLED";

/// How spans travel to the collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// OTLP/gRPC (Jaeger and collectors listen on 4317).
    Grpc,
    /// OTLP/HTTP with protobuf bodies (port 4318); the OpenTelemetry default.
    HttpProtobuf,
}

impl Protocol {
    /// Reads the values `OTEL_EXPORTER_OTLP_PROTOCOL` allows (`http/json` is not built in).
    pub fn parse(value: &str) -> Result<Self, TelemetryError> {
        match value.trim().to_ascii_lowercase().as_str() {
            "grpc" => Ok(Protocol::Grpc),
            "http/protobuf" | "http" => Ok(Protocol::HttpProtobuf),
            other => Err(TelemetryError::Config(format!(
                "OTLP protocol {other:?} is not supported; use \"grpc\" or \"http/protobuf\""
            ))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Grpc => "grpc",
            Protocol::HttpProtobuf => "http/protobuf",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("telemetry configuration: {0}")]
    Config(String),
    #[error("cannot build the OTLP exporter: {0}")]
    Exporter(String),
    #[error("a global tracing subscriber is already installed")]
    AlreadyInstalled,
}

/// What a process asks of its telemetry. `OTEL_*` environment variables win over the
/// fields here, as the OpenTelemetry specification says they should.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// `service.name` when neither `OTEL_SERVICE_NAME` nor [`Settings::service_name`] is
    /// set, e.g. `kgmesh-summarizer`.
    pub default_service_name: String,
    pub service_name: Option<String>,
    /// Log filter (`RUST_LOG` syntax) for the stderr log; `RUST_LOG` wins when set.
    pub log_filter: String,
    pub log_json: bool,
    /// OTLP endpoint; `None` (and no `OTEL_EXPORTER_OTLP_ENDPOINT`) means no export.
    pub otlp_endpoint: Option<String>,
    /// `grpc` or `http/protobuf` (the default).
    pub otlp_protocol: Option<String>,
}

impl Settings {
    pub fn new(default_service_name: impl Into<String>) -> Self {
        Self {
            default_service_name: default_service_name.into(),
            service_name: None,
            log_filter: "warn".to_owned(),
            log_json: false,
            otlp_endpoint: None,
            otlp_protocol: None,
        }
    }

    /// The export target after the environment is applied; `None` when export is off.
    pub fn otlp(&self) -> Result<Option<OtlpTarget>, TelemetryError> {
        self.otlp_with_env(|name| std::env::var(name).ok())
    }

    fn otlp_with_env(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<OtlpTarget>, TelemetryError> {
        let env = |name: &str| {
            env(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        if env(SDK_DISABLED_ENV).is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        // The traces-only variables name the full URL and win over the generic ones.
        let traces_endpoint = env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
        let exact = traces_endpoint.is_some();
        let Some(endpoint) = traces_endpoint
            .or_else(|| env(OTEL_EXPORTER_OTLP_ENDPOINT))
            .or_else(|| {
                self.otlp_endpoint
                    .as_deref()
                    .map(str::trim)
                    .filter(|e| !e.is_empty())
                    .map(str::to_owned)
            })
        else {
            return Ok(None);
        };
        if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
            return Err(TelemetryError::Config(format!(
                "OTLP endpoint {endpoint:?} must be a URL starting with http:// or https://"
            )));
        }
        let protocol = match env(OTEL_EXPORTER_OTLP_TRACES_PROTOCOL)
            .or_else(|| env(OTEL_EXPORTER_OTLP_PROTOCOL))
            .or_else(|| self.otlp_protocol.clone())
        {
            Some(value) => Protocol::parse(&value)?,
            None => Protocol::HttpProtobuf,
        };
        let service_name = env(SERVICE_NAME_ENV)
            .or_else(|| self.service_name.clone().filter(|s| !s.trim().is_empty()))
            .unwrap_or_else(|| self.default_service_name.clone());
        Ok(Some(OtlpTarget {
            endpoint,
            exact,
            protocol,
            service_name,
        }))
    }
}

/// Where and how spans are exported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpTarget {
    /// The base endpoint (`http://host:4318` or `http://host:4317`); the HTTP exporter
    /// posts to `<endpoint>/v1/traces`.
    pub endpoint: String,
    /// The endpoint is the full traces URL (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`):
    /// nothing is appended to it.
    pub exact: bool,
    pub protocol: Protocol,
    pub service_name: String,
}

impl OtlpTarget {
    fn signal_endpoint(&self) -> String {
        match self.protocol {
            _ if self.exact => self.endpoint.clone(),
            Protocol::Grpc => self.endpoint.clone(),
            Protocol::HttpProtobuf => {
                let base = self.endpoint.trim_end_matches('/');
                if base.ends_with("/v1/traces") {
                    base.to_owned()
                } else {
                    format!("{base}/v1/traces")
                }
            }
        }
    }
}

/// Keeps the exporter alive; flushes and shuts it down on [`TelemetryGuard::shutdown`]
/// or on drop. Dropping it where blocking is allowed (the end of `main`) is enough.
#[must_use = "dropping the guard stops span export"]
pub struct TelemetryGuard {
    /// Shared with [`shutdown`]: whichever stops the provider first takes it.
    provider: SharedProvider,
    /// Drives the gRPC channel; kept apart from the application's runtime so that a
    /// flush at exit still has a runtime to run on.
    runtime: Option<tokio::runtime::Runtime>,
}

impl std::fmt::Debug for TelemetryGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelemetryGuard")
            .field("exporting", &self.is_exporting())
            .finish()
    }
}

impl TelemetryGuard {
    /// A guard with nothing to flush (export off).
    pub fn disabled() -> Self {
        Self::with(None, None)
    }

    fn with(provider: Option<SdkTracerProvider>, runtime: Option<tokio::runtime::Runtime>) -> Self {
        Self {
            provider: Arc::new(Mutex::new(provider)),
            runtime,
        }
    }

    pub fn is_exporting(&self) -> bool {
        self.provider.lock().is_ok_and(|p| p.is_some())
    }

    /// Exports what is queued and stops the exporter. Blocks up to a few seconds: call it
    /// outside async code (or through `spawn_blocking`). Idempotent.
    pub fn shutdown(&mut self) {
        take_and_stop(&self.provider);
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        self.shutdown();
    }
}

type SharedProvider = Arc<Mutex<Option<SdkTracerProvider>>>;

/// The provider of the globally installed subscriber, for [`shutdown`].
static GLOBAL_PROVIDER: Mutex<Option<SharedProvider>> = Mutex::new(None);

/// Flushes the spans of the globally installed exporter, if any. For drain paths that
/// do not own the [`TelemetryGuard`] (a service about to exit); blocks like
/// [`TelemetryGuard::shutdown`]. Spans ended afterwards are dropped.
pub fn shutdown() {
    let shared = GLOBAL_PROVIDER.lock().ok().and_then(|slot| slot.clone());
    if let Some(shared) = shared {
        take_and_stop(&shared);
    }
}

fn take_and_stop(shared: &SharedProvider) {
    let provider = shared.lock().ok().and_then(|mut p| p.take());
    if let Some(provider) = provider {
        if let Err(error) = provider.force_flush() {
            eprintln!("kgmesh: could not flush spans: {error}");
        }
        let _ = provider.shutdown_with_timeout(Duration::from_secs(5));
    }
}

/// A subscriber that is not installed yet, and the guard of its exporter.
pub struct Built {
    pub subscriber: Box<dyn Subscriber + Send + Sync>,
    pub guard: TelemetryGuard,
    /// The export target, when export is on.
    pub otlp: Option<OtlpTarget>,
}

/// Builds the subscriber `settings` describe: the stderr log (text or JSON, filtered by
/// `RUST_LOG` or [`Settings::log_filter`]) and, when an endpoint is configured, the
/// OpenTelemetry layer, filtered on its own so that the log level does not decide which
/// spans are exported. Use [`init`] to install it for the process.
pub fn build(settings: &Settings) -> Result<Built, TelemetryError> {
    build_with(settings, settings.otlp()?)
}

fn build_with(settings: &Settings, otlp: Option<OtlpTarget>) -> Result<Built, TelemetryError> {
    let (provider, runtime) = match &otlp {
        Some(target) => {
            let (provider, runtime) = tracer_provider(target)?;
            (Some(provider), runtime)
        }
        None => (None, None),
    };
    let mut built = build_with_provider(settings, provider)?;
    built.guard.runtime = runtime;
    built.otlp = otlp;
    Ok(built)
}

/// [`build`] with the spans going to `provider` (any exporter) instead of the OTLP
/// settings; `None` builds the log alone. For harnesses that compare costs.
pub fn build_with_provider(
    settings: &Settings,
    provider: Option<SdkTracerProvider>,
) -> Result<Built, TelemetryError> {
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(&settings.log_filter))
        .map_err(|error| {
            TelemetryError::Config(format!("log filter {:?}: {error}", settings.log_filter))
        })?;
    // Colours only for a terminal (and not when NO_COLOR is set): a log file or a
    // collector gets plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty());
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(ansi);
    let fmt: Box<dyn Layer<Registry> + Send + Sync> = if settings.log_json {
        fmt.json().with_filter(filter).boxed()
    } else {
        fmt.with_filter(filter).boxed()
    };
    let mut layers = vec![fmt];
    if let Some(provider) = &provider {
        layers.push(otel_layer(provider));
    }
    let subscriber = Registry::default().with(layers);
    Ok(Built {
        subscriber: Box::new(subscriber),
        guard: TelemetryGuard::with(provider, None),
        otlp: None,
    })
}

/// Builds and installs the process-wide subscriber. Keep the guard until the process
/// ends; dropping it flushes the spans still queued.
pub fn init(settings: &Settings) -> Result<TelemetryGuard, TelemetryError> {
    let built = build(settings)?;
    tracing::subscriber::set_global_default(built.subscriber)
        .map_err(|_| TelemetryError::AlreadyInstalled)?;
    if let Ok(mut slot) = GLOBAL_PROVIDER.lock() {
        *slot = Some(built.guard.provider.clone());
    }
    Ok(built.guard)
}

/// Installs the stderr log alone, whatever the OTLP settings say: the fallback when
/// export is misconfigured.
pub fn init_logs_only(settings: &Settings) -> Result<(), TelemetryError> {
    let built = build_with(settings, None)?;
    tracing::subscriber::set_global_default(built.subscriber)
        .map_err(|_| TelemetryError::AlreadyInstalled)
}

/// The OpenTelemetry layer over `provider`, with the transports' spans filtered out.
/// Exposed so that harnesses can install it with an exporter of their own.
pub fn otel_layer(provider: &SdkTracerProvider) -> Box<dyn Layer<Registry> + Send + Sync> {
    let tracer = provider.tracer("kgmesh");
    let quiet = QUIET_TARGETS.iter().fold(
        Targets::new().with_default(LevelFilter::INFO),
        |targets, target| targets.with_target(*target, LevelFilter::OFF),
    );
    tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_tracked_inactivity(false)
        .with_threads(false)
        .with_filter(quiet)
        .boxed()
}

/// The resource every span of this process carries: `service.name` as resolved, plus
/// `OTEL_RESOURCE_ATTRIBUTES` (read by the SDK's environment detector).
pub fn resource(service_name: &str) -> Resource {
    Resource::builder()
        .with_service_name(service_name.to_owned())
        .build()
}

fn tracer_provider(
    target: &OtlpTarget,
) -> Result<(SdkTracerProvider, Option<tokio::runtime::Runtime>), TelemetryError> {
    let endpoint = target.signal_endpoint();
    let exporter_error = |error: opentelemetry_otlp::ExporterBuildError| {
        TelemetryError::Exporter(format!("{} {endpoint}: {error}", target.protocol.as_str()))
    };
    let (exporter, runtime) = match target.protocol {
        Protocol::HttpProtobuf => {
            let exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .with_endpoint(endpoint.clone())
                .build()
                .map_err(exporter_error)?;
            (exporter, None)
        }
        Protocol::Grpc => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("otlp-grpc")
                .enable_all()
                .build()
                .map_err(|error| {
                    TelemetryError::Exporter(format!("cannot start the gRPC runtime: {error}"))
                })?;
            let exporter = {
                let _entered = runtime.enter();
                opentelemetry_otlp::SpanExporter::builder()
                    .with_tonic()
                    .with_endpoint(endpoint.clone())
                    .build()
                    .map_err(exporter_error)?
            };
            (exporter, Some(runtime))
        }
    };
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource(&target.service_name))
        .build();
    Ok((provider, runtime))
}

#[cfg(test)]
mod tests;
