//! `kgmesh eval`.

use crate::config::Config;

#[derive(Debug, clap::Args)]
pub struct EvalArgs {}

pub fn run(_config: Config, _args: EvalArgs) -> anyhow::Result<()> {
    anyhow::bail!("`kgmesh eval` is not available in this build yet")
}
