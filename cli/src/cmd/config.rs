//! `kgmesh config check|show`.

use crate::config::Config;

#[derive(Debug, clap::Args)]
pub struct ConfigArgs {
    #[command(subcommand)]
    action: ConfigAction,
}

#[derive(Debug, clap::Subcommand)]
enum ConfigAction {
    /// Validate the configuration (file + environment) and exit 0 when it is valid.
    Check,
    /// Print the effective configuration as TOML.
    Show,
}

pub fn run(config: Config, args: ConfigArgs) -> anyhow::Result<()> {
    match args.action {
        // Loading already validated it; reaching here means it is valid.
        ConfigAction::Check => {
            println!("configuration is valid");
            Ok(())
        }
        ConfigAction::Show => {
            print!("{}", toml::to_string_pretty(&config)?);
            Ok(())
        }
    }
}
