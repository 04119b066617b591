//! `kgmesh cypher`: runs one read-only openCypher query against the graph `ask` would
//! use (a KG file, the bundled sample, or a Bolt database) and prints the rows. The
//! query is validated first (read-only, bounded variable-length patterns); a refused
//! query is an error that says why and, where it can, how to repair it.
//!
//! `kgmesh cypher --ask QUESTION` writes the query instead (grounded Cypher, GraphRAFT):
//! the question's values are found in the graph, the queries that exist around them are
//! enumerated from the schema, and the best ranked runs, its values as parameters.
//! `--learn PAIRS` first learns the ranking from questions with known answers.

use std::time::Duration;

use anyhow::Context as _;
use kgmesh_schemas::graph::{Rows, Value};
use kgmesh_stores::{QueryLimits, StoreError};

use super::ask::GraphSource;
use crate::config::Config;

#[derive(Debug, clap::Args)]
pub struct CypherArgs {
    /// The query, e.g. "MATCH (f)-[:directed_by]->(d) RETURN f.name, d.name LIMIT 5".
    #[arg(required_unless_present_any = ["ask", "learn"], conflicts_with_all = ["ask", "learn", "plans"])]
    pub query: Option<String>,
    /// Write the query from a question instead (grounded Cypher): e.g. "which products
    /// does Exotic Liquids supply?". Prints the chosen query, then its rows.
    #[arg(long, value_name = "QUESTION")]
    pub ask: Option<String>,
    /// With --ask: learn the ranking first from question/answer pairs, one JSON object a
    /// line with "question" and either "answers" (a list) or "cypher" (a query whose
    /// rows are the answers), e.g. Northwind's text2cypher.jsonl.
    #[arg(long, value_name = "PAIRS")]
    pub learn: Option<std::path::PathBuf>,
    /// Keep learned plans in FILE: read before --ask when it exists, and written after
    /// --learn with what it held and what was learned (so `--learn PAIRS --plans FILE`
    /// alone learns once, and later `--plans FILE --ask …` starts warm).
    #[arg(long, value_name = "FILE")]
    pub plans: Option<std::path::PathBuf>,
    /// With --ask: also print the next best candidate queries.
    #[arg(long, value_name = "N", default_value_t = 0, requires = "ask")]
    pub candidates: usize,
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
        match (&args.query, &args.ask) {
            (Some(query), _) => graph
                .cypher(query, &params, &limits)
                .await
                .map(Some)
                .map_err(refused),
            (None, question) => {
                if !params.is_empty() {
                    anyhow::bail!("--param applies to a query, not to --ask");
                }
                if question.is_none() && args.plans.is_none() {
                    anyhow::bail!(
                        "--learn without --ask keeps nothing: add --plans FILE to save what is learned, or --ask QUESTION"
                    );
                }
                ask(graph.as_ref(), question.as_deref(), &args, &limits, &config).await
            }
        }
    })?;
    let Some(rows) = rows else {
        return Ok(());
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows.to_json())?);
    } else {
        print_table(&rows);
    }
    Ok(())
}

/// Chooses, prints and runs the grounded query for a question.
async fn ask(
    graph: &dyn kgmesh_stores::GraphStore,
    question: Option<&str>,
    args: &CypherArgs,
    limits: &QueryLimits,
    config: &Config,
) -> anyhow::Result<Option<Rows>> {
    use kgmesh_agents::query_executor::grounded::{GroundedCypher, EXISTENCE_TRIES, MODEL_CHOICES};

    if question.is_some_and(|q| q.trim().is_empty()) {
        anyhow::bail!("--ask needs a question");
    }
    let schema = graph
        .schema()
        .await
        .context("cannot read the graph's schema")?;
    let read_limits = QueryLimits {
        timeout: Duration::from_secs(30),
        ..*limits
    };
    let mut planner = GroundedCypher::read(graph, (*schema).clone(), &read_limits)
        .await
        .context("cannot read the graph's values")?;
    if question.is_some() || args.learn.is_some() {
        kgmesh_eval::text2cypher::use_embedder(
            &mut planner,
            super::ask::embedder(config).await?,
            "kgmesh cypher",
        )
        .await;
    }
    if let Some(path) = args.plans.as_ref().filter(|p| p.exists()) {
        let file = std::fs::File::open(path)
            .with_context(|| format!("cannot read learned plans from {}", path.display()))?;
        let added = planner
            .load_learned(file)
            .map_err(|why| anyhow::anyhow!("{}: {why}", path.display()))?;
        eprintln!("read {added} learned questions from {}", path.display());
    } else if let Some(path) = args.plans.as_ref().filter(|_| args.learn.is_none()) {
        eprintln!(
            "no learned plans at {} yet (--learn PAIRS --plans FILE writes them): the ranking is cold",
            path.display()
        );
    }
    if let Some(path) = &args.learn {
        use kgmesh_eval::text2cypher::{learn_from, read_pairs, reference_for};
        let pairs = read_pairs(path)?;
        let mut references = Vec::with_capacity(pairs.len());
        for pair in &pairs {
            references.push(reference_for(graph, &planner, pair, &read_limits).await);
        }
        let questions: Vec<_> = pairs
            .iter()
            .zip(&references)
            .map(|(pair, reference)| (pair.question.as_str(), reference.as_ref()))
            .collect();
        let (usable, learned) =
            learn_from(graph, &mut planner, &questions, &read_limits, None).await?;
        eprintln!(
            "learned from {learned} of {} pairs ({} without usable answers; the others had no right candidate)",
            pairs.len(),
            pairs.len() - usable
        );
        if let Some(plans) = &args.plans {
            save_plans(&planner, plans)?;
            eprintln!(
                "wrote {} learned questions to {}",
                planner.learned_examples(),
                plans.display()
            );
        }
    }
    let Some(question) = question else {
        return Ok(None);
    };
    let parsed = planner.read_question(question).await;
    let ranked = planner.ranked(&parsed);
    // With a model configured it picks among the best candidates; without one, or
    // when its reply is unusable, the LLM-free ranking chooses (and says so).
    let llm = super::ask::language_model(config)?;
    let (choice, how) = match &llm {
        Some(llm) => match planner
            .choose_with_model(llm.as_ref(), graph, &parsed, &ranked, MODEL_CHOICES, limits)
            .await
        {
            Some(picked) => {
                let how = match (&picked.fallback, picked.picked) {
                    (Some(why), _) => {
                        format!("LLM-free, as the model {} gave none: {why}", llm.name())
                    }
                    (None, Some(k)) => format!(
                        "by the model {} (its pick: #{} of the {} best)",
                        llm.name(),
                        k + 1,
                        picked.offered
                    ),
                    (None, None) => {
                        "LLM-free (a single candidate; the model was not asked)".to_owned()
                    }
                };
                (Some(picked.choice), how)
            }
            None => (None, String::new()),
        },
        None => (
            planner
                .choose_existing(graph, &parsed, &ranked, true, EXISTENCE_TRIES, limits)
                .await
                .map(|(choice, _)| choice),
            "LLM-free".to_owned(),
        ),
    };
    let Some(choice) = choice else {
        anyhow::bail!(
            "no query fits {question:?}: it names no value of the graph, no label, and nothing \
             to count or rank (name a label such as {}, or a value the graph holds)",
            planner
                .values()
                .labels
                .iter()
                .take(3)
                .map(|l| l.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    };
    let params = |params: &[(String, Value)]| {
        params
            .iter()
            .map(|(name, value)| format!("${name} = {}", value.to_json()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    eprintln!("query:  {}", choice.candidate.cypher);
    if !choice.candidate.params.is_empty() {
        eprintln!("params: {}", params(&choice.candidate.params));
    }
    eprintln!(
        "chosen {how} among {} candidates (score {:.2}{})",
        choice.candidates,
        choice.score,
        choice
            .learned
            .map(|w| format!(", {w:+.2} learned"))
            .unwrap_or_default()
    );
    for (candidate, score) in ranked
        .iter()
        .filter(|(c, _)| c.cypher != choice.candidate.cypher || c.params != choice.candidate.params)
        .take(args.candidates)
    {
        eprintln!("  also {score:6.2}  {}", candidate.cypher);
    }
    graph
        .cypher(&choice.candidate.cypher, &choice.candidate.params, limits)
        .await
        .map(Some)
        .map_err(refused)
}

/// Writes the learned plans beside their final place, then moves them there: a failed
/// write never leaves a torn file where the old one was.
fn save_plans(
    planner: &kgmesh_agents::query_executor::grounded::GroundedCypher,
    path: &std::path::Path,
) -> anyhow::Result<()> {
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    let partial = std::path::PathBuf::from(partial);
    let write = || -> anyhow::Result<()> {
        let mut file = std::io::BufWriter::new(std::fs::File::create(&partial)?);
        planner.save_learned(&mut file)?;
        use std::io::Write as _;
        file.flush()?;
        file.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&partial, path)?;
        Ok(())
    };
    write().map_err(|error| {
        let _ = std::fs::remove_file(&partial);
        error.context(format!("cannot write learned plans to {}", path.display()))
    })
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
        .map(|row| row.iter().map(Value::text).collect())
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
