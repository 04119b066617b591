//! `kgmesh load`: reads a KG (triples, N-Triples, a mapped CSV directory or a snapshot)
//! and writes it into the embedded store's snapshot file or a Bolt database.
//!
//! ```text
//! kgmesh load --kg data/metaqa/kb.tsv --into embedded:metaqa.kgs
//! kgmesh load --kg examples/northwind/csv --mapping stores/examples/northwind.toml --into embedded:northwind.kgs
//! kgmesh load --kg metaqa.kgs --into bolt://127.0.0.1:7687
//! ```

use std::{
    path::PathBuf,
    time::{Duration, Instant},
};

use anyhow::Context;
use kgmesh_stores::embedded::{
    load::{load_graph, HeaderMode, KgFormat, LoadOptions, LoadReport},
    snapshot, EmbeddedGraph,
};

use crate::config::Config;

#[derive(Debug, clap::Args)]
pub struct LoadArgs {
    /// KG file or directory (format detected from extension and content).
    #[arg(long)]
    pub kg: PathBuf,
    /// Force the input format: tsv, csv, pipe, ntriples, pgcsv, snapshot.
    #[arg(long)]
    pub format: Option<KgFormat>,
    /// TOML mapping for a property-graph CSV directory (default: DIR/kgmesh-mapping.toml).
    #[arg(long)]
    pub mapping: Option<PathBuf>,
    /// Where to: `embedded:PATH` (a snapshot file) or `bolt://HOST:PORT`.
    #[arg(long)]
    pub into: String,
    /// Stop at the first bad line instead of counting and reporting it.
    #[arg(long)]
    pub strict: bool,
    /// Refuse the KG when more than this share of its lines are bad (0 to 1; 1 accepts
    /// any). A KG from which no triple can be read is always refused.
    #[arg(long, default_value_t = 0.5, value_parser = share)]
    pub max_bad_share: f64,
    /// Whether a TSV, CSV or pipe file starts with a header row: auto (the usual
    /// column names, or a first row unlike every row after it; said in the summary),
    /// yes or no.
    #[arg(long, default_value = "auto", value_parser = clap::value_parser!(HeaderMode))]
    pub header: HeaderMode,
    /// No progress lines on stderr.
    #[arg(long)]
    pub quiet: bool,
    /// Nodes or edges per Bolt write statement.
    #[arg(long, default_value_t = 5_000)]
    pub batch_size: usize,
    /// Bolt only: delete everything in the database before writing.
    #[arg(long)]
    pub replace: bool,
}

/// Where a load goes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    Embedded(PathBuf),
    Bolt(String),
}

fn parse_target(into: &str) -> anyhow::Result<Target> {
    if let Some(path) = into.strip_prefix("embedded:") {
        anyhow::ensure!(!path.is_empty(), "`--into embedded:` needs a file path");
        return Ok(Target::Embedded(PathBuf::from(path)));
    }
    if into.starts_with("bolt://") || into.starts_with("neo4j://") {
        return Ok(Target::Bolt(into.to_owned()));
    }
    anyhow::bail!("`--into {into}`: expected `embedded:PATH` or `bolt://HOST:PORT`")
}

fn share(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(share) if (0.0..=1.0).contains(&share) => Ok(share),
        _ => Err(format!("`{text}` is not a share between 0 and 1")),
    }
}

pub fn run(config: Config, args: LoadArgs) -> anyhow::Result<()> {
    let target = parse_target(&args.into)?;
    let options = LoadOptions {
        format: args.format,
        mapping: args.mapping.clone(),
        strict: args.strict,
        progress: !args.quiet,
        max_bad_share: args.max_bad_share,
        header: args.header,
        ..LoadOptions::default()
    };
    let started = Instant::now();
    let (graph, report) = load_graph(&args.kg, &options)
        .with_context(|| format!("cannot load {}", args.kg.display()))?;
    let read_time = started.elapsed();
    let written = match &target {
        Target::Embedded(path) => {
            let bytes = snapshot::save(&graph, path)
                .with_context(|| format!("cannot write the snapshot {}", path.display()))?;
            format!("{} ({:.1} MB snapshot)", path.display(), bytes as f64 / 1e6)
        }
        Target::Bolt(uri) => write_bolt(&config, uri, &graph, args.batch_size, args.replace)?,
    };
    print_summary(
        &args.kg,
        &graph,
        &report,
        read_time,
        started.elapsed(),
        &written,
    );
    Ok(())
}

fn write_bolt(
    config: &Config,
    uri: &str,
    graph: &EmbeddedGraph,
    batch_size: usize,
    replace: bool,
) -> anyhow::Result<String> {
    let password = std::env::var(&config.graph.bolt_password_env).unwrap_or_default();
    let settings = kgmesh_stores::bolt::BoltSettings {
        uri: uri.to_owned(),
        user: config.graph.bolt_user.clone(),
        password,
        database: config.graph.bolt_database.clone(),
        timeout: Duration::from_millis(config.graph.query_timeout_ms.max(30_000)),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let written = runtime
        .block_on(kgmesh_stores::bolt::write_graph(
            &settings, graph, batch_size, replace,
        ))
        .with_context(|| format!("cannot write to {uri}"))?;
    Ok(format!(
        "{uri} ({} nodes, {} relationships written)",
        written.nodes, written.relationships
    ))
}

fn print_summary(
    kg: &std::path::Path,
    graph: &EmbeddedGraph,
    report: &LoadReport,
    read_time: Duration,
    total: Duration,
    written: &str,
) {
    println!("loaded     {} ({})", kg.display(), report.format);
    if report.files.len() > 1 {
        println!("files      {}", report.files.len());
    }
    println!("nodes      {}", graph.node_count());
    println!("edges      {}", graph.edge_count());
    println!("relations  {}", graph.relation_count());
    if graph.label_count() > 0 {
        println!("labels     {}", graph.label_count());
    }
    println!(
        "lines      {} ({:.1} MB)",
        report.lines,
        report.bytes as f64 / 1e6
    );
    println!("bad lines  {}", report.bad_line_count);
    for bad in &report.bad_lines {
        println!("  {bad}");
    }
    if report.bad_line_count > report.bad_lines.len() as u64 {
        println!(
            "  … and {} more",
            report.bad_line_count - report.bad_lines.len() as u64
        );
    }
    if report.repaired_line_count > 0 {
        println!("repaired   {} lines", report.repaired_line_count);
    }
    for header in &report.headers {
        println!("header     {header} (--header no loads it as a triple)");
    }
    println!("written    {written}");
    println!(
        "time       {:.2} s (read and index {:.2} s)",
        total.as_secs_f64(),
        read_time.as_secs_f64()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_or_explain() {
        assert_eq!(
            parse_target("embedded:/tmp/g.kgs").unwrap(),
            Target::Embedded("/tmp/g.kgs".into())
        );
        assert_eq!(
            parse_target("bolt://127.0.0.1:7687").unwrap(),
            Target::Bolt("bolt://127.0.0.1:7687".into())
        );
        assert!(parse_target("embedded:").is_err());
        assert!(parse_target("/tmp/g.kgs")
            .unwrap_err()
            .to_string()
            .contains("embedded:PATH"));
    }

    #[test]
    fn a_tsv_kg_becomes_a_snapshot_that_reloads() {
        let dir = tempfile::tempdir().unwrap();
        let kg = dir.path().join("kb.tsv");
        std::fs::write(&kg, "Heat\tdirected_by\tMichael Mann\nbroken line\n").unwrap();
        let snapshot_path = dir.path().join("kb.kgs");
        let args = LoadArgs {
            kg: kg.clone(),
            format: None,
            mapping: None,
            into: format!("embedded:{}", snapshot_path.display()),
            strict: false,
            max_bad_share: 0.5,
            header: HeaderMode::Auto,
            quiet: true,
            batch_size: 100,
            replace: false,
        };
        run(Config::default(), args).unwrap();
        let graph = snapshot::open(&snapshot_path).unwrap();
        assert_eq!((graph.node_count(), graph.edge_count()), (2, 1));

        let strict = LoadArgs {
            kg,
            format: None,
            mapping: None,
            into: format!("embedded:{}", snapshot_path.display()),
            strict: true,
            max_bad_share: 0.5,
            header: HeaderMode::Auto,
            quiet: true,
            batch_size: 100,
            replace: false,
        };
        let error = run(Config::default(), strict).unwrap_err();
        assert!(format!("{error:#}").contains("kb.tsv:2"), "{error:#}");
    }

    #[test]
    fn a_kg_loads_into_a_bolt_database() {
        let server = kgmesh_testkit::bolt::BoltServer::start();
        let password_env = "KGMESH_TEST_LOAD_INTO_BOLT_PASSWORD";
        std::env::set_var(password_env, server.password());
        let mut config = Config::default();
        config.graph.bolt_user = server.user().to_owned();
        config.graph.bolt_password_env = password_env.to_owned();
        config.graph.bolt_database = Some(server.database().to_owned());
        let dir = tempfile::tempdir().unwrap();
        let kg = dir.path().join("kb.tsv");
        std::fs::write(
            &kg,
            "Heat\tdirected_by\tMichael Mann\nHeat\tstarred_actors\tAl Pacino\n",
        )
        .unwrap();
        let args = LoadArgs {
            kg,
            format: None,
            mapping: None,
            into: server.uri(),
            strict: false,
            max_bad_share: 0.5,
            header: HeaderMode::Auto,
            quiet: true,
            batch_size: 1,
            replace: true,
        };
        run(config, args).unwrap();
        let settings = kgmesh_stores::bolt::BoltSettings {
            uri: server.uri(),
            user: server.user().to_owned(),
            password: server.password().to_owned(),
            database: Some(server.database().to_owned()),
            timeout: Duration::from_secs(30),
        };
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let schema = runtime.block_on(async {
            use kgmesh_stores::GraphStore;
            let store = kgmesh_stores::bolt::BoltGraph::connect(&settings)
                .await
                .unwrap();
            tokio::time::timeout(Duration::from_secs(30), store.schema())
                .await
                .unwrap()
                .unwrap()
        });
        assert_eq!((schema.node_count, schema.edge_count), (3, 2));
    }
}
