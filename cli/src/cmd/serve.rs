//! `kgmesh serve`.

use crate::config::Config;

#[derive(Debug, clap::Args)]
pub struct ServeArgs {}

pub fn run(_config: Config, _args: ServeArgs) -> anyhow::Result<()> {
    anyhow::bail!("`kgmesh serve` is not available in this build yet")
}
