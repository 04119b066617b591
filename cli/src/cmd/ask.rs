//! `kgmesh ask`.

use crate::config::Config;

#[derive(Debug, clap::Args)]
pub struct AskArgs {}

pub fn run(_config: Config, _args: AskArgs) -> anyhow::Result<()> {
    anyhow::bail!("`kgmesh ask` is not available in this build yet")
}
