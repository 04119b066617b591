//! One module per subcommand. Each exposes `XArgs` (clap) and `run(config, args)`.

pub mod agent;
pub mod ask;
pub mod config;
pub mod eval;
pub mod load;
pub mod serve;

use tracing_subscriber::EnvFilter;

use crate::config::Config;

/// Logs go to stderr so that stdout stays clean for answers and JSON.
pub fn init_logging(config: &Config) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&config.telemetry.log));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if config.telemetry.log_json {
        builder.json().init();
    } else {
        builder.init();
    }
}
