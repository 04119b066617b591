//! `kgmesh eval`: run a benchmark and write a report; `compare`, `plot` and `table`
//! read reports back.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use anyhow::{bail, Context as _};
use async_trait::async_trait;
use kgmesh_eval::{
    self as eval,
    answerer::{AnswerError, Answerer, AnswererConfig, AnswererMode, HttpAnswerer},
    compare,
    dataset::{Brackets, DatasetKind},
    embedded::{CacheStart, EmbeddedAnswerer, RunningRoles},
    plot,
    report::{self, Report, Versions},
    runner::{self, RunSettings},
    QuestionPlan, RunContext,
};
use kgmesh_schemas::messages::ask::AskOptions;

use super::{
    ask::{coordinator_config, EmbeddedRoles, GraphSource},
    fold::FoldArgs,
};
use crate::config::Config;

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct EvalArgs {
    #[command(subcommand)]
    command: Option<EvalCommand>,

    // Boxed: the run's flags are most of the size of the whole command line.
    #[command(flatten)]
    run: Box<RunArgs>,
}

#[derive(Debug, clap::Subcommand)]
enum EvalCommand {
    /// Print what changed between two reports (configuration, scores, flipped questions).
    Compare(CompareArgs),
    /// Draw one SVG (Hits@1 by dataset/hop, latency CDF) from one or more reports.
    Plot(PlotArgs),
    /// Print one Markdown results table for several reports.
    Table(TableArgs),
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// Format of the questions file(s).
    #[arg(long, value_enum, required = true)]
    dataset: Option<DatasetKind>,

    /// KG for the embedded pipeline (default: graph.path from the configuration). With
    /// --server it is only recorded in the report.
    #[arg(long)]
    kg: Option<PathBuf>,

    /// TOML mapping of a property-graph CSV directory given as --kg (as for `ask`).
    #[arg(long, value_name = "FILE")]
    mapping: Option<PathBuf>,

    /// text2cypher only: a graph database (`bolt://host:port`) instead of --kg.
    #[arg(long, value_name = "URL", conflicts_with = "kg")]
    store: Option<String>,

    /// Questions file; repeat to evaluate several (e.g. MetaQA 1-, 2- and 3-hop).
    #[arg(long = "questions", required = true)]
    questions: Vec<PathBuf>,

    #[command(flatten)]
    fold: FoldArgs,

    /// At most N questions from each file.
    #[arg(long, value_name = "N")]
    limit: Option<usize>,

    /// Draw the --limit questions at random with this seed instead of taking the first.
    #[arg(long, value_name = "S", requires = "limit")]
    sample_seed: Option<u64>,

    /// Questions in flight at once.
    #[arg(long, value_name = "C", default_value_t = 1)]
    concurrency: usize,

    /// Evaluate a running `kgmesh serve` (e.g. http://127.0.0.1:8080) instead of the
    /// embedded pipeline.
    #[arg(long, value_name = "URL")]
    server: Option<String>,

    /// Folder for report.json, summary.md and plot.svg
    /// (default: eval-results/<name>-<time>). Documents alone (`--text-index` without a
    /// graph): summary.md (the printed tables) and answers.jsonl (each question's answers
    /// beside its gold ones), written only when given.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,

    /// MetaQA only: keep the [topic entity] brackets (a linking hint) or strip them.
    #[arg(long, value_enum)]
    metaqa_brackets: Option<Brackets>,

    /// Name of the run in tables and plots (default: from the questions' folder).
    #[arg(long)]
    name: Option<String>,

    /// Per-question option: refinement rounds.
    #[arg(long)]
    max_rounds: Option<u8>,

    /// Per-question option: answers returned.
    #[arg(long)]
    max_answers: Option<u16>,

    /// Per-question option: the system's own deadline.
    #[arg(long, value_name = "MS")]
    timeout_ms: Option<u64>,

    /// Per-question option: skip the plan cache (no lookup, no store).
    #[arg(long)]
    no_cache: bool,

    /// Start from this pre-warmed plan cache file (`kgmesh cache warm`). The run works
    /// on a copy in the output folder, so the file stays as warmed and runs repeat.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["no_cache", "server"])]
    cache_file: Option<PathBuf>,

    /// text2cypher only: also ask each scored question through the whole embedded
    /// pipeline (every role, as `kgmesh ask` starts them, with --cache-file as its
    /// plan cache) and score its answers the same way.
    #[arg(long)]
    pipeline: bool,

    /// The harness gives up on a question after this long
    /// (default: budget.timeout_ms + 5 s).
    #[arg(long, value_name = "MS")]
    question_timeout_ms: Option<u64>,

    /// No progress bar or progress lines on stderr.
    #[arg(long)]
    no_progress: bool,

    /// A text index (`kgmesh index --text`). With --kg (or `graph.path`) the questions
    /// are answered from the graph and the documents together, as `ask --text-index`
    /// does; without a graph, from the documents alone: coverage per channel setting,
    /// and Hits@1 when a model is configured.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["server", "store"])]
    text_index: Option<PathBuf>,

    /// With --text-index: the channel settings to measure, comma-separated (keyword,
    /// skeleton, both).
    #[arg(long, value_delimiter = ',', default_value = "keyword,skeleton,both")]
    channels: Vec<kgmesh_agents::text_retriever::retrieve::Channels>,

    /// With --text-index and no model: also write every question's candidate spans
    /// (read from the first channel setting's passages), with the passage reader's
    /// features and whether each is right, as JSON lines (what `kgmesh reader passages`
    /// trains the span scorer on).
    #[arg(long, value_name = "FILE", requires = "text_index")]
    span_examples: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
struct CompareArgs {
    /// The baseline report.
    a: PathBuf,
    /// The report compared with it.
    b: PathBuf,
    /// Flipped questions listed per direction.
    #[arg(long, default_value_t = 20)]
    max_listed: usize,
}

#[derive(Debug, clap::Args)]
struct PlotArgs {
    /// report.json files.
    #[arg(required = true)]
    reports: Vec<PathBuf>,
    /// Where to write the SVG.
    #[arg(long, default_value = "eval-plot.svg")]
    out: PathBuf,
}

#[derive(Debug, clap::Args)]
struct TableArgs {
    /// report.json files.
    #[arg(required = true)]
    reports: Vec<PathBuf>,
    /// Columns for plan-cache comparisons: cache state at start, plan-cache hits, LLM
    /// calls per question, latency p50/p99.
    #[arg(long)]
    cache: bool,
    /// Columns for the answers' confidence: ECE, AUROC, right and coverage at ≥ 0.8,
    /// per run and for every run's answers pooled.
    #[arg(long, conflicts_with = "cache")]
    confidence: bool,
}

pub fn run(config: Config, args: EvalArgs) -> anyhow::Result<()> {
    match args.command {
        Some(EvalCommand::Compare(compare_args)) => run_compare(&compare_args),
        Some(EvalCommand::Plot(plot_args)) => run_plot(&plot_args),
        Some(EvalCommand::Table(table_args)) => run_table(&table_args),
        None => run_evaluation(config, *args.run),
    }
}

fn run_compare(args: &CompareArgs) -> anyhow::Result<()> {
    let a = Report::load(&args.a)?;
    let b = Report::load(&args.b)?;
    print!(
        "{}",
        compare::render(
            &a,
            &b,
            &args.a.display().to_string(),
            &args.b.display().to_string(),
            args.max_listed
        )
    );
    Ok(())
}

fn run_plot(args: &PlotArgs) -> anyhow::Result<()> {
    let reports = load_all(&args.reports)?;
    let refs: Vec<&Report> = reports.iter().collect();
    write_file(&args.out, &plot::render(&refs))?;
    eprintln!("kgmesh eval: wrote {}", args.out.display());
    Ok(())
}

fn run_table(args: &TableArgs) -> anyhow::Result<()> {
    let reports = load_all(&args.reports)?;
    if args.cache {
        print!("{}", cache_table(&reports));
        return Ok(());
    }
    if args.confidence {
        print!("{}", confidence_table(&reports));
        return Ok(());
    }
    println!(
        "| run | questions | sample | LLM | Hits@1 | Hits@any | F1 | context hit | p50 ms | p95 ms | q/s |"
    );
    println!("|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for report in &reports {
        let mut rows = vec![(report.name.clone(), &report.aggregate)];
        if report.breakdown.by_hops.len() > 1 {
            for (hops, aggregate) in &report.breakdown.by_hops {
                rows.push((format!("{} · {hops}", report.name), aggregate));
            }
        }
        let sample = match (report.dataset.limit, report.dataset.sample_seed) {
            (None, _) => "all".to_owned(),
            (Some(limit), None) => format!("first {limit}/file"),
            (Some(limit), Some(seed)) => format!("{limit}/file, seed {seed}"),
        };
        let sample = match report.dataset.fold {
            Some(fold) => format!("fold {fold}, {sample}"),
            None => sample,
        };
        for (name, a) in rows {
            let latency = a.latency_ms.unwrap_or_default();
            println!(
                "| {name} | {} | {sample} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
                a.questions,
                report.system.llm.replace('|', "\\|"),
                100.0 * a.hits_at_1,
                100.0 * a.hits_at_any,
                100.0 * a.f1,
                100.0 * a.context_hit,
                latency.p50,
                latency.p95,
                report.run.throughput_qps
            );
        }
    }
    Ok(())
}

/// One row per run, then every run's answers pooled: how well the confidences say which
/// answers are right.
fn confidence_table(reports: &[Report]) -> String {
    use kgmesh_eval::{
        calibration::Calibration,
        metrics::{confidence_pairs, QuestionResult},
    };
    let mut out = format!(
        "| run | LLM | embedder | Hits@1 | {} |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        Calibration::CELLS
    );
    let row = |name: &str, llm: &str, embedder: &str, hits: String, c: Option<Calibration>| {
        let cells = c.map_or_else(|| "0 | - | - | - | - | - | -".to_owned(), |c| c.cells());
        format!("| {name} | {llm} | {embedder} | {hits} | {cells} |\n")
    };
    let mut pooled = Vec::new();
    let mut questions = 0usize;
    let mut hits = 0usize;
    for report in reports {
        let results: Vec<&QuestionResult> = report.results.iter().collect();
        let pairs = confidence_pairs(&results);
        questions += results.len();
        hits += results.iter().filter(|r| r.score.hits_at_1).count();
        out.push_str(&row(
            &report.name,
            &report.system.llm.replace('|', "\\|"),
            &report.system.embedder.replace('|', "\\|"),
            format!("{:.1}", 100.0 * report.aggregate.hits_at_1),
            Calibration::of(&pairs),
        ));
        pooled.extend(pairs);
    }
    if reports.len() > 1 {
        out.push_str(&row(
            &format!("all {} runs pooled", reports.len()),
            "",
            "",
            format!("{:.1}", 100.0 * hits as f64 / questions.max(1) as f64),
            Calibration::of(&pooled),
        ));
    }
    out
}

/// One row per run and per hop count: how the plan cache started, how often a lookup
/// returned something (few-shot examples or a plan), how often a verified plan was
/// replayed, and what that did to accuracy, model calls and latency.
fn cache_table(reports: &[Report]) -> String {
    let mut out = String::from(
        "| run | cache at start | questions | Hits@1 | lookups answered | plans replayed | LLM calls/q | p50 ms | p99 ms |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for report in reports {
        // "warm: 120 entries at start, from …" → "warm: 120 entries".
        let state = report
            .system
            .cache
            .split([',', '('])
            .next()
            .unwrap_or_default()
            .replace(" at start", "")
            .trim()
            .to_owned();
        let mut rows = vec![(report.name.clone(), &report.aggregate)];
        // One hop group is the whole run: a second row would only repeat it.
        if report.breakdown.by_hops.len() > 1 {
            for (hops, aggregate) in &report.breakdown.by_hops {
                rows.push((format!("{} · {hops}", report.name), aggregate));
            }
        }
        for (name, a) in rows {
            let latency = a.latency_ms.unwrap_or_default();
            out.push_str(&format!(
                "| {name} | {state} | {} | {:.1} | {:.1} % | {:.1} % | {:.2} | {:.1} | {:.1} |\n",
                a.questions,
                100.0 * a.hits_at_1,
                100.0 * a.cache_hit_rate,
                100.0 * a.replay_rate,
                a.llm_calls_mean,
                latency.p50,
                latency.p99
            ));
        }
    }
    out
}

fn load_all(paths: &[PathBuf]) -> anyhow::Result<Vec<Report>> {
    paths
        .iter()
        .map(|path| Report::load(path).map_err(anyhow::Error::from))
        .collect()
}

fn write_file(path: &Path, contents: &str) -> anyhow::Result<()> {
    std::fs::write(path, contents).with_context(|| format!("cannot write {}", path.display()))
}

/// Copies a pre-warmed plan cache into the run's output folder: the run works on the
/// copy, so the file stays as warmed and runs repeat. Returns the copy's path.
fn copy_warm_cache(warm: &Path, out: &Path) -> anyhow::Result<PathBuf> {
    if !warm.is_file() {
        bail!(
            "--cache-file {}: no such file (create it with `kgmesh cache warm`)",
            warm.display()
        );
    }
    let copy = out.join("plan-cache.jsonl");
    std::fs::copy(warm, &copy)
        .with_context(|| format!("cannot copy {} to {}", warm.display(), copy.display()))?;
    Ok(copy)
}

/// Execution accuracy of grounded Cypher on question/query pairs.
fn run_text2cypher(config: Config, args: RunArgs) -> anyhow::Result<()> {
    let [questions] = args.questions.as_slice() else {
        bail!("--dataset text2cypher reads one --questions file");
    };
    if args.limit == Some(0) {
        bail!("--limit must be at least 1");
    }
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("eval-results").join(format!(
            "text2cypher-{}",
            report::now_rfc3339().replace([':', '-'], "")
        ))
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let source = GraphSource::from_args(&config, args.kg.clone(), args.store.clone())?;
        let store = source.open(&config).await?;
        // A configured model picks among the best candidates, scored beside them.
        let llm = crate::cmd::ask::language_model(&config)?;
        let pipeline = if args.pipeline {
            let mut config = config.clone();
            let cache = match &args.cache_file {
                Some(warm) => {
                    std::fs::create_dir_all(&out)
                        .with_context(|| format!("cannot create {}", out.display()))?;
                    let copy = copy_warm_cache(warm, &out)?;
                    config.cache.path = Some(copy.clone());
                    CacheStart::File {
                        entries: crate::cmd::cache::count_file_entries(&copy)
                            .await
                            .unwrap_or(0),
                        path: copy,
                        warmed_from: Some(warm.clone()),
                    }
                }
                None if args.no_cache => {
                    config.cache.path = None;
                    CacheStart::Disabled
                }
                None => {
                    config.cache.path = None;
                    CacheStart::Cold
                }
            };
            let described = format!(
                "embedded on {}, plan cache {}",
                source.describe(),
                cache.describe()
            );
            let answerer: Arc<dyn Answerer> =
                Arc::new(start_embedded(&config, &source, cache).await?);
            Some((answerer, described))
        } else {
            None
        };
        eval::text2cypher::run(
            store,
            eval::text2cypher::Text2CypherRun {
                questions: questions.clone(),
                fold: args.fold.fold(),
                limit: args.limit,
                out,
                graph: source.describe(),
                progress: !args.no_progress,
                llm,
                constraint: config.llm.choice_constraint.as_str(),
                pipeline,
                max_answers: args.max_answers.unwrap_or(1000),
                embedder: crate::cmd::ask::embedder(&config).await?,
            },
        )
        .await
    })
}

/// The questions `args` select from their files.
fn question_plan(args: &RunArgs, kind: DatasetKind) -> QuestionPlan {
    QuestionPlan {
        kind,
        files: args.questions.clone(),
        brackets: args.metaqa_brackets.unwrap_or_default(),
        fold: args.fold.fold(),
        limit: args.limit,
        sample_seed: args.sample_seed,
    }
}

/// Coverage and Hits@1 from documents alone ([`eval::text`]).
fn run_text(config: Config, args: RunArgs, kind: DatasetKind) -> anyhow::Result<()> {
    let Some(dir) = args.text_index.clone() else {
        bail!("--text-index is required here");
    };
    if args.limit == Some(0) {
        bail!("--limit must be at least 1");
    }
    let plan = question_plan(&args, kind);
    let (questions, available) = eval::load_questions(&plan)?;
    let selection = format!(
        "of {available} in {}; {}{}",
        args.questions
            .iter()
            .map(|q| q.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        match (args.limit, args.sample_seed) {
            (Some(n), Some(seed)) => format!("{n} per file sampled with seed {seed}"),
            (Some(n), None) => format!("first {n} per file"),
            _ => "all".to_owned(),
        },
        plan.fold.map(|f| format!(", fold {f}")).unwrap_or_default()
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let mut settings = config.text().map(|t| t.search).unwrap_or_default();
        settings.context_tokens = config.text.context_tokens;
        settings.theta = config.text.theta;
        eval::text::run(
            eval::text::TextRun {
                dir,
                channels: args.channels.clone(),
                settings,
                embedder: crate::cmd::ask::embedder(&config).await?,
                llm: crate::cmd::ask::language_model(&config)?,
                rule: config.summarizer,
                progress: !args.no_progress,
                selection,
                span_examples: args.span_examples.clone(),
                out: args.out.clone(),
            },
            questions,
        )
        .await
    })
}

fn run_evaluation(config: Config, args: RunArgs) -> anyhow::Result<()> {
    let Some(kind) = args.dataset else {
        bail!("--dataset is required");
    };
    let mut config = config;
    if let Some(mapping) = &args.mapping {
        config.graph.mapping = Some(mapping.clone());
    }
    if kind == DatasetKind::Text2cypher {
        return run_text2cypher(config, args);
    }
    if args.text_index.is_some() && args.kg.is_none() && config.graph.path.is_none() {
        return run_text(config, args, kind);
    }
    crate::cmd::ask::use_text_index(&mut config, args.text_index.as_deref())?;
    if args.store.is_some() {
        bail!("--store applies to --dataset text2cypher only (evaluate a server with --server)");
    }
    let mut problems = Vec::new();
    if args.concurrency == 0 {
        problems.push("--concurrency must be at least 1".to_owned());
    }
    if args.limit == Some(0) {
        problems.push("--limit must be at least 1".to_owned());
    }
    if args.metaqa_brackets.is_some() && kind != DatasetKind::Metaqa {
        problems.push("--metaqa-brackets applies to --dataset metaqa only".to_owned());
    }
    let kg = args.kg.clone().or_else(|| config.graph.path.clone());
    if args.server.is_none() && kg.is_none() {
        problems.push(
            "the embedded pipeline needs a KG: pass --kg PATH (or set graph.path), or \
             evaluate a server with --server URL"
                .to_owned(),
        );
    }
    if !problems.is_empty() {
        bail!("invalid arguments:\n  - {}", problems.join("\n  - "));
    }

    let plan = question_plan(&args, kind);
    let (questions, available) = eval::load_questions(&plan)?;
    if let Some(fold) = plan.fold.filter(|_| questions.is_empty()) {
        bail!("fold {fold} keeps none of the {available} questions");
    }
    let name = args
        .name
        .clone()
        .unwrap_or_else(|| eval::default_name(&questions, kind));
    let name = if plan.kind == DatasetKind::Metaqa && plan.brackets == Brackets::Strip {
        format!("{name} (stripped)")
    } else {
        name
    };
    let started_at = report::now_rfc3339();
    let out_dir = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("eval-results").join(format!(
            "{}-{}",
            sanitize(&name),
            started_at.replace([':', '-'], "")
        ))
    });
    std::fs::create_dir_all(&out_dir)
        .with_context(|| format!("cannot create {}", out_dir.display()))?;
    let versions = Versions::collect();
    if let Some(warm) = &args.cache_file {
        config.cache.path = Some(copy_warm_cache(warm, &out_dir)?);
    } else if args.no_cache {
        // Nothing is looked up or stored; a configured file would only be misreported.
        config.cache.path = None;
    }

    let settings = RunSettings {
        concurrency: args.concurrency,
        options: AskOptions {
            max_rounds: args.max_rounds,
            timeout_ms: args.timeout_ms,
            max_answers: args.max_answers,
            no_cache: args.no_cache,
            evidence_edges: false,
        },
        question_timeout: Duration::from_millis(
            args.question_timeout_ms
                .unwrap_or(config.budget.timeout_ms.saturating_add(5_000)),
        ),
        progress: !args.no_progress,
    };
    let selected = questions.len();
    let fold = plan
        .fold
        .map(|fold| format!(" (fold {fold} of each file)"))
        .unwrap_or_default();
    eprintln!(
        "kgmesh eval: {name}: {selected} of {}{fold}, concurrency {}",
        count_questions(available),
        settings.concurrency
    );

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let (report, interrupted) = runtime.block_on(async {
        let mut embedded = None;
        let answerer: Arc<dyn Answerer> = match &args.server {
            Some(url) => Arc::new(HttpAnswerer::new(url, settings.question_timeout).await?),
            None => {
                let kg = kg.as_deref().context("no KG")?;
                eprintln!(
                    "kgmesh eval: loading {} and starting the roles",
                    kg.display()
                );
                let cache = match (&config.cache.path, args.no_cache) {
                    (_, true) => CacheStart::Disabled,
                    (None, false) => CacheStart::Cold,
                    (Some(path), false) => CacheStart::File {
                        entries: crate::cmd::cache::count_file_entries(path)
                            .await
                            .unwrap_or(0),
                        path: path.clone(),
                        warmed_from: args.cache_file.clone(),
                    },
                };
                let source = GraphSource::File(kg.to_owned());
                let started = Arc::new(start_embedded(&config, &source, cache).await?);
                embedded = Some(Arc::clone(&started));
                started
            }
        };
        let system = answerer.describe();
        let interrupt = async {
            match tokio::signal::ctrl_c().await {
                Ok(()) => eprintln!(
                    "\nkgmesh eval: interrupted; dropping questions in flight and writing the \
                     partial report"
                ),
                // Without a signal handler the run simply cannot be interrupted.
                Err(_) => std::future::pending::<()>().await,
            }
        };
        let outcome = runner::run_questions(answerer, questions, &settings, interrupt).await;
        if let Some(embedded) = embedded {
            embedded.stop().await;
        }
        let interrupted = outcome.interrupted;
        let context = RunContext {
            name,
            plan,
            kg,
            available,
            selected,
            settings: settings.clone(),
            started_at,
            system,
            versions,
        };
        anyhow::Ok((eval::assemble_report(context, outcome), interrupted))
    })?;

    let json_path = out_dir.join("report.json");
    let markdown_path = out_dir.join("summary.md");
    let svg_path = out_dir.join("plot.svg");
    report.write_json(&json_path)?;
    let markdown = report.markdown();
    write_file(&markdown_path, &markdown)?;
    write_file(&svg_path, &plot::render(&[&report]))?;
    print!("{markdown}");
    eprintln!(
        "kgmesh eval: wrote {}, {} and {}",
        json_path.display(),
        markdown_path.display(),
        svg_path.display()
    );
    if interrupted {
        bail!(
            "interrupted after {} of {} (partial report written)",
            report.run.completed,
            count_questions(report.dataset.selected)
        );
    }
    let failed = report.results.iter().filter(|r| r.error.is_some()).count();
    if failed > 0 && failed == report.results.len() {
        let first = report
            .results
            .iter()
            .find_map(|r| r.error.as_deref())
            .unwrap_or_default();
        let what = if failed == 1 {
            "the one question failed".to_owned()
        } else {
            format!("every one of the {failed} questions failed")
        };
        bail!("{what} (the first: {first}); report written");
    }
    Ok(())
}

/// A folder-name-safe form of a run name.
fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// "1 question", "2 questions".
fn count_questions(count: usize) -> String {
    if count == 1 {
        "1 question".to_owned()
    } else {
        format!("{count} questions")
    }
}

/// The embedded pipeline as the harness's answerer: every role started on a graph file
/// or database exactly as `kgmesh ask` starts them.
async fn start_embedded(
    config: &Config,
    source: &GraphSource,
    cache: CacheStart,
) -> Result<EmbeddedAnswerer, AnswerError> {
    let kg = match source {
        GraphSource::File(path) => Some(path.as_path()),
        _ => None,
    };
    let description = describe_config(config, kg, &cache);
    EmbeddedAnswerer::start(
        |bus| async move {
            let roles = EmbeddedRoles::start(config, bus, source).await?;
            anyhow::Ok(Box::new(roles) as Box<dyn RunningRoles>)
        },
        coordinator_config(config),
        description,
    )
    .await
}

#[async_trait]
impl RunningRoles for EmbeddedRoles {
    fn role_names(&self) -> Vec<String> {
        EmbeddedRoles::role_names(self)
    }

    async fn stop(self: Box<Self>) {
        EmbeddedRoles::stop(*self).await;
    }
}

/// What the report says about a system configured by `config`.
fn describe_config(config: &Config, kg: Option<&Path>, cache: &CacheStart) -> AnswererConfig {
    // `kgmesh ask` also takes the endpoint from OPENAI_BASE_URL.
    let llm_base_url = config.llm.base_url.clone().or_else(|| {
        std::env::var("OPENAI_BASE_URL")
            .ok()
            .filter(|url| !url.trim().is_empty())
    });
    let llm = match llm_base_url {
        Some(base_url) => format!(
            "{} @ {} (temperature {}, max_tokens {})",
            config.llm.model, base_url, config.llm.temperature, config.llm.max_tokens
        ),
        None => "none (LLM-free strategy)".to_owned(),
    };
    let embedder = config.embedder.describe();
    let mut effective = config.clone();
    if let Some(kg) = kg {
        effective.graph.path = Some(PathBuf::from(kg));
    }
    // The model calls a question may make, as resolved from `llm.roles` when unset.
    effective.budget.llm_calls = Some(config.llm_calls());
    AnswererConfig {
        mode: AnswererMode::Embedded,
        server_url: None,
        llm,
        embedder,
        budget: serde_json::to_value(&effective.budget).ok(),
        k_values: None,
        cache: cache.describe(),
        roles: Vec::new(),
        setup_ms: None,
        config: serde_json::to_value(&effective).ok(),
        server_info: None,
    }
}
