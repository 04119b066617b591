//! `kgmesh cypher`: runs one read-only openCypher query against the graph `ask` would
//! use (a KG file, the bundled sample, or a Bolt database) and prints the rows. The
//! query is validated first (read-only, bounded variable-length patterns); a refused
//! query is an error that says why and, where it can, how to repair it.

use std::time::Duration;

use anyhow::Context as _;
use kgmesh_agents::verbalize::value_text;
use kgmesh_schemas::graph::{Rows, Value};
use kgmesh_stores::{QueryLimits, StoreError};

use super::ask::GraphSource;
use crate::config::Config;

#[derive(Debug, clap::Args)]
pub struct CypherArgs {
    /// The query, e.g. "MATCH (f)-[:directed_by]->(d) RETURN f.name, d.name LIMIT 5".
    pub query: String,
    /// KG file or directory (as for `ask`). Default: `graph.path`, else the bundled
    /// sample movie KG.
    #[arg(long, conflicts_with = "store")]
    pub kg: Option<std::path::PathBuf>,
    /// A graph database (`bolt://host:port`) instead of a file.
    #[arg(long)]
    pub store: Option<String>,
    /// TOML mapping of a property-graph CSV directory (as for `ask`).
    #[arg(long, value_name = "FILE")]
    pub mapping: Option<std::path::PathBuf>,
    /// A query parameter, `NAME=VALUE` (repeatable); the value is read as JSON when it
    /// parses (`n=3`, `names=["a","b"]`), else as a string (`title=Heat`).
    #[arg(long = "param", value_name = "NAME=VALUE")]
    pub params: Vec<String>,
    /// Rows returned at most; more are reported as truncated.
    #[arg(long, default_value_t = 1_000)]
    pub max_rows: usize,
    /// Give up after this many milliseconds.
    #[arg(long, default_value_t = 5_000)]
    pub timeout_ms: u64,
    /// Print `{columns, rows, truncated}` as JSON instead of a table (strings bare,
    /// nodes as `{id, labels, properties}`).
    #[arg(long)]
    pub json: bool,
}

pub fn run(mut config: Config, args: CypherArgs) -> anyhow::Result<()> {
    if let Some(mapping) = &args.mapping {
        config.graph.mapping = Some(mapping.clone());
    }
    let params = args
        .params
        .iter()
        .map(|param| parse_param(param))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let rows = runtime.block_on(async {
        let source = GraphSource::from_args(&config, args.kg.clone(), args.store.clone())?;
        let graph = source.open(&config).await?;
        let limits = QueryLimits {
            max_rows: args.max_rows,
            timeout: Duration::from_millis(args.timeout_ms),
            ..QueryLimits::default()
        };
        graph
            .cypher(&args.query, &params, &limits)
            .await
            .map_err(refused)
    })?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows.to_json())?);
    } else {
        print_table(&rows);
    }
    Ok(())
}

/// A store error as the user should read it: a refused query with its repair hint.
fn refused(error: StoreError) -> anyhow::Error {
    match error {
        StoreError::InvalidQuery { reason, hint } => match hint {
            Some(hint) => anyhow::anyhow!("query refused: {reason}\nhint: {hint}"),
            None => anyhow::anyhow!("query refused: {reason}"),
        },
        other => anyhow::Error::new(other).context("the query failed"),
    }
}

/// `NAME=VALUE`: the value as JSON when it parses, else as a string.
fn parse_param(param: &str) -> anyhow::Result<(String, Value)> {
    let Some((name, raw)) = param.split_once('=') else {
        anyhow::bail!("--param {param:?}: write NAME=VALUE");
    };
    let name = name.trim();
    if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
        anyhow::bail!("--param {param:?}: a parameter name is letters, digits and _");
    }
    let value = match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(json) => Value::from_json(&json),
        Err(_) => Value::String(raw.to_owned()),
    };
    Ok((name.to_owned(), value))
}

/// Columns aligned, one row per line, then the count (and whether rows were cut).
fn print_table(rows: &Rows) {
    let cells: Vec<Vec<String>> = rows
        .rows
        .iter()
        .map(|row| row.iter().map(value_text).collect())
        .collect();
    let widths: Vec<usize> = rows
        .columns
        .iter()
        .enumerate()
        .map(|(i, column)| {
            cells
                .iter()
                .filter_map(|row| row.get(i))
                .map(|cell| cell.chars().count())
                .chain([column.chars().count()])
                .max()
                .unwrap_or(0)
                .min(60)
        })
        .collect();
    let line = |values: &[String]| {
        values
            .iter()
            .zip(&widths)
            .map(|(value, width)| format!("{value:<width$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_owned()
    };
    println!("{}", line(&rows.columns));
    for row in &cells {
        println!("{}", line(row));
    }
    let count = rows.rows.len();
    println!(
        "({count} row{}{})",
        if count == 1 { "" } else { "s" },
        if rows.truncated {
            "; more exist: raise --max-rows"
        } else {
            ""
        }
    );
}
