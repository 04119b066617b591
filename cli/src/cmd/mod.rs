//! One module per subcommand. Each exposes `XArgs` (clap) and `run(config, args)`;
//! [`fold`] holds options several subcommands share.

pub mod agent;
pub mod ask;
pub mod cache;
pub mod config;
pub mod cypher;
pub mod eval;
pub mod fold;
pub mod index;
pub mod load;
pub mod reader;
pub mod serve;

use anyhow::Context as _;
use kgmesh_bus::{redacted_url, NatsAuth, NatsBus, NatsOptions};
use kgmesh_telemetry::{Settings, TelemetryGuard};

use crate::config::Config;

/// Connects to nats-server at `url` as the `bus` section says (credentials from the
/// variable it names, an NKey seed, a `.creds` file, TLS with a certificate
/// authority). A variable named but not set, a refused login or an unreachable server
/// is an error that says which, without the secret.
pub async fn connect_nats(config: &Config, url: &str, client: &str) -> anyhow::Result<NatsBus> {
    let secret = |key: &str, variable: &str| {
        std::env::var(variable)
            .with_context(|| format!("bus.{key} names {variable}, which is not set"))
    };
    let bus = &config.bus;
    let auth = if let Some(variable) = &bus.nats_credentials_env {
        NatsAuth::from_secret(&secret("nats_credentials_env", variable)?)
    } else if let Some(variable) = &bus.nats_nkey_env {
        NatsAuth::NKeySeed(secret("nats_nkey_env", variable)?)
    } else if let Some(path) = &bus.nats_creds_file {
        NatsAuth::CredsFile(path.clone())
    } else {
        NatsAuth::None
    };
    let options = NatsOptions {
        client_name: Some(client.to_owned()),
        auth,
        tls_ca_file: bus.nats_tls_ca_file.clone(),
        ..NatsOptions::default()
    };
    let shown = redacted_url(url);
    NatsBus::connect(url, options).await.map_err(|error| {
        let text = error.to_string();
        let hint = if text.contains("authorization") {
            format!(
                "nats-server at {shown} refused the login: check the credentials that \
                 bus.nats_credentials_env, bus.nats_nkey_env or bus.nats_creds_file give"
            )
        } else if text.to_lowercase().contains("certificate") || text.contains("tls") {
            format!(
                "the TLS connection to nats-server at {shown} failed: does \
                 bus.nats_tls_ca_file name the authority that signed the server's certificate?"
            )
        } else {
            format!("is nats-server running at {shown}?")
        };
        anyhow::Error::new(error).context(hint)
    })
}

/// Logs go to stderr so that stdout stays clean for answers and JSON. `interactive`
/// commands log warnings only, unless `RUST_LOG` or a non-default `telemetry.log` asks
/// for more. Spans are exported over OTLP when an endpoint is configured
/// (`OTEL_EXPORTER_OTLP_ENDPOINT` or `telemetry.otlp_endpoint`), as `service` unless
/// `OTEL_SERVICE_NAME` or `telemetry.service_name` says otherwise. Keep the guard until
/// the process ends: dropping it flushes the spans still queued.
pub fn init_logging(config: &Config, interactive: bool, service: &str) -> TelemetryGuard {
    let configured = config.telemetry.log.as_str();
    let default_filter = crate::config::TelemetryConfig::default().log;
    let directive = if interactive && configured == default_filter {
        "warn"
    } else {
        configured
    };
    let mut settings = Settings::new(service);
    settings.service_name = config.telemetry.service_name.clone();
    settings.log_filter = directive.to_owned();
    settings.log_json = config.telemetry.log_json;
    settings.otlp_endpoint = config.telemetry.otlp_endpoint.clone();
    settings.otlp_protocol = config.telemetry.otlp_protocol.clone();
    match kgmesh_telemetry::init(&settings) {
        Ok(guard) => guard,
        Err(error) => {
            // Logs without export beat no logs; say why spans are not exported.
            match kgmesh_telemetry::init_logs_only(&settings) {
                Ok(()) => tracing::error!(%error, "span export is off"),
                Err(_) => eprintln!("kgmesh: {error}; logging is off too"),
            }
            TelemetryGuard::disabled()
        }
    }
}

/// Sets the question reader this process uses (the one place that reads its settings):
/// re-ranking off unless `reader.enabled`, `KGMESH_READER=on` or weights are named
/// (`KGMESH_READER=off` wins); the confidence on unless `reader.confidence = false`;
/// `reader.weights` (or `KGMESH_READER_WEIGHTS`) names trained weights, else the
/// bundled ones. A weights file that cannot be used is an error, not a silent fallback.
pub fn install_reader(config: &crate::config::Config) -> anyhow::Result<()> {
    use kgmesh_agents::reader::{install, ReaderModel, Readers};
    // The passage reader's span weights, read here first so that a file that cannot be
    // used stops the command instead of being passed over.
    if let Some(path) = std::env::var_os("KGMESH_PASSAGE_WEIGHTS") {
        kgmesh_agents::summarizer::spans::SpanModel::load(std::path::Path::new(&path))?;
    }
    let weights: Option<std::path::PathBuf> = config
        .reader
        .weights
        .clone()
        .or_else(|| std::env::var_os("KGMESH_READER_WEIGHTS").map(Into::into));
    let switch = std::env::var("KGMESH_READER").ok();
    // Naming weights asks for re-ranking; `KGMESH_READER=off` still turns it off.
    let rerank = switch.as_deref() != Some("off")
        && (config.reader.enabled || weights.is_some() || switch.as_deref() == Some("on"));
    if !rerank && !config.reader.confidence {
        install(None);
        return Ok(());
    }
    let mut readers = if let Some(path) = weights {
        let model = ReaderModel::load(&path)?;
        if let Some(calibration) = &model.answer_calibration {
            signals_read_here(&path, &calibration.signals)?;
        }
        tracing::info!(weights = %path.display(), rerank, "reader: trained weights");
        Readers::single(std::sync::Arc::new(model))
    } else {
        Readers::bundled()
    };
    if let Some(path) = &config.reader.calibration {
        let fitted = ReaderModel::load(path)
            .with_context(|| format!("reader.calibration = {}", path.display()))?
            .answer_calibration
            .with_context(|| {
                format!(
                    "reader.calibration = {}: the file holds no answer calibration; fit one \
                     with `kgmesh reader calibrate --reports REPORT.json --out FILE`",
                    path.display()
                )
            })?;
        signals_read_here(path, &fitted.signals)?;
        tracing::info!(calibration = %path.display(), "reader: answer calibration fitted on this graph");
        readers = readers.calibrated(fitted);
    }
    install(Some(readers.reranking(rerank)));
    Ok(())
}

/// A fitted answer calibration must read the signals this kgmesh gives.
fn signals_read_here(path: &std::path::Path, signals: &[String]) -> anyhow::Result<()> {
    let wanted = kgmesh_coordinator::confidence::SIGNALS;
    anyhow::ensure!(
        signals == wanted,
        "{}: its answer calibration reads {signals:?}, this kgmesh gives {wanted:?}; \
         calibrate again with `kgmesh reader calibrate`",
        path.display(),
    );
    Ok(())
}
