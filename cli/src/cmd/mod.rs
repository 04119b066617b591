//! One module per subcommand. Each exposes `XArgs` (clap) and `run(config, args)`;
//! [`fold`] holds options several subcommands share.

pub mod agent;
pub mod ask;
pub mod cache;
pub mod config;
pub mod cypher;
pub mod eval;
pub mod fold;
pub mod load;
pub mod serve;

use kgmesh_telemetry::{Settings, TelemetryGuard};

use crate::config::Config;

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
