//! One module per subcommand. Each exposes `XArgs` (clap) and `run(config, args)`.

pub mod agent;
pub mod ask;
pub mod config;
pub mod eval;
pub mod load;
pub mod serve;

use tracing_subscriber::EnvFilter;

use crate::config::Config;

/// Logs go to stderr so that stdout stays clean for answers and JSON. `interactive`
/// commands log warnings only, unless `RUST_LOG` or a non-default `telemetry.log` asks
/// for more.
pub fn init_logging(config: &Config, interactive: bool) {
    let configured = config.telemetry.log.as_str();
    let default_filter = crate::config::TelemetryConfig::default().log;
    let directive = if interactive && configured == default_filter {
        "warn"
    } else {
        configured
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(directive));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if config.telemetry.log_json {
        builder.json().init();
    } else {
        builder.init();
    }
}
