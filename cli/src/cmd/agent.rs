//! `kgmesh agent`.

use crate::config::Config;

#[derive(Debug, clap::Args)]
pub struct AgentArgs {}

pub fn run(_config: Config, _args: AgentArgs) -> anyhow::Result<()> {
    anyhow::bail!("`kgmesh agent` is not available in this build yet")
}
