//! `kgmesh load`.

use crate::config::Config;

#[derive(Debug, clap::Args)]
pub struct LoadArgs {}

pub fn run(_config: Config, _args: LoadArgs) -> anyhow::Result<()> {
    anyhow::bail!("`kgmesh load` is not available in this build yet")
}
