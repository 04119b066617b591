//! `kgmesh config check|show|reference`.

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
    /// Print every configuration key with its default, environment variable and
    /// meaning, as Markdown (docs/configuration.md).
    Reference,
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
            // TOML has no null: the options left unset would not show at all.
            let mut unset = Vec::new();
            unset_keys(&serde_json::to_value(&config)?, "", &mut unset);
            if !unset.is_empty() {
                println!(
                    "\n# Not set (optional; set them in the file or as KGMESH__SECTION__KEY):"
                );
                for key in unset {
                    println!("#   {key}");
                }
            }
            Ok(())
        }
        ConfigAction::Reference => {
            print!("{}", crate::config_reference::reference()?);
            Ok(())
        }
    }
}

/// The keys whose value is unset (`null` once serialized), as `section.key`.
fn unset_keys(value: &serde_json::Value, prefix: &str, out: &mut Vec<String>) {
    if let Some(map) = value.as_object() {
        for (key, value) in map {
            match value {
                serde_json::Value::Null => out.push(format!("{prefix}{key}")),
                serde_json::Value::Object(_) => unset_keys(value, &format!("{prefix}{key}."), out),
                _ => {}
            }
        }
    }
}
