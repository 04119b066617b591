//! `kgmesh ask`: one question, answered in this process. Loads the KG, starts every
//! role this build has on the in-process bus, asks the coordinator, prints the answers
//! with their evidence (or the whole reply as JSON).
//!
//! Without `--kg` (and no `graph.path` configured) it uses the small movie KG bundled
//! in the binary, so the first command works anywhere.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{bail, Context as _};
use kgmesh_agents::{
    cache_manager::persist::{FilePlanStore, SharedPlanStore},
    registry,
    runtime::{start_role_with, AgentDeps, RoleBuildError, RoleHandle, StartOptions},
};
use kgmesh_bus::{Bus, LocalBus};
use kgmesh_coordinator::{AllowedRoles, Coordinator, CoordinatorConfig};
use kgmesh_models::{
    minilm::MiniLm,
    openai::{OpenAiChat, OpenAiConfig, OpenAiEmbedder},
    Embedder, LanguageModel,
};
use kgmesh_schemas::{
    messages::ask::{AskOptions, AskReply, AskRequest},
    Role,
};
use kgmesh_stores::{
    embedded::load::{load_graph, LoadOptions},
    GraphStore,
};

use crate::config::{Config, EmbedderKind, GraphBackend};

/// The bundled sample KG (hand-written movie triples; see examples/movies/).
const SAMPLE_KG: &str = include_str!("../../../examples/movies/kg.tsv");
const SAMPLE_KG_NAME: &str = "kgmesh-sample-movies-v1.tsv";

#[derive(Debug, clap::Args)]
pub struct AskArgs {
    /// The question, in plain words (quotes are optional: the words are joined).
    #[arg(required = true, num_args = 1..)]
    pub question: Vec<String>,
    /// KG file or directory for the embedded store (TSV/CSV triples, N-Triples,
    /// property-graph CSV with a mapping, or a snapshot). Default: `graph.path`, else
    /// the bundled sample movie KG.
    #[arg(long, conflicts_with = "store")]
    pub kg: Option<PathBuf>,
    /// A graph database (`bolt://host:port`) instead of a file; user, password and
    /// database come from the `graph` section (default: `graph.backend = "bolt"` with
    /// `graph.bolt_uri`).
    #[arg(long)]
    pub store: Option<String>,
    /// Print the whole reply as JSON.
    #[arg(long)]
    pub json: bool,
    /// TOML mapping of a property-graph CSV directory given as `--kg` (default:
    /// `graph.mapping`, else `kgmesh-mapping.toml` in the directory).
    #[arg(long, value_name = "FILE")]
    pub mapping: Option<PathBuf>,
    /// A text index (`kgmesh index --text FILES --into embedded:DIR`) to answer from as
    /// well (overrides `text.index`); without --kg or a configured graph, the answer
    /// comes from the documents alone.
    #[arg(long, value_name = "DIR")]
    pub text_index: Option<PathBuf>,
    /// Plan cache file to read and extend (`kgmesh cache warm` fills one; default:
    /// `cache.path`, else an in-process cache that ends with the command).
    #[arg(long, value_name = "PATH")]
    pub cache_file: Option<PathBuf>,
    /// Refinement rounds, 1 to 10 (default: `budget.rounds`).
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=10))]
    pub rounds: Option<u8>,
    /// Give up after this many milliseconds (default: `budget.timeout_ms`).
    #[arg(long)]
    pub timeout_ms: Option<u64>,
    /// Answers shown at most.
    #[arg(long)]
    pub max_answers: Option<u16>,
    /// Say "I don't know" (with the answers as possibilities, exit status 4) when the
    /// answers' confidence is below this, 0 to 1 (default: `reader.min_confidence`).
    #[arg(long, value_name = "P", value_parser = parse_probability)]
    pub min_confidence: Option<f32>,
    /// Evidence lines printed at most in text output (a number, or `all`; also
    /// `--evidence all`).
    #[arg(long, alias = "evidence", default_value = "12", value_parser = parse_show_evidence)]
    pub show_evidence: usize,
    /// Also print the roles' notes (how the traverser walked, how many paths were
    /// cut); a failed or missing role is always shown, as a DEGRADED line.
    #[arg(long)]
    pub verbose: bool,
}

/// Exit status of `kgmesh ask` when the reply has no answer ("I don't know"), so that
/// scripts can tell it from an answer (0) and from an error (1).
pub const NO_ANSWER_EXIT: u8 = 3;

/// Exit status of `kgmesh ask` when answers were found but withheld because their
/// confidence is below `--min-confidence` (the reply names them as possibilities).
pub const LOW_CONFIDENCE_EXIT: u8 = 4;

/// The reply was printed and says "I don't know": not an error, but not an answer
/// either (`main` exits with [`NO_ANSWER_EXIT`]).
#[derive(Debug, thiserror::Error)]
#[error("no answer")]
pub struct NoAnswer;

/// The reply was printed and withholds answers whose confidence is too low (`main`
/// exits with [`LOW_CONFIDENCE_EXIT`]).
#[derive(Debug, thiserror::Error)]
#[error("answers withheld: confidence below the minimum")]
pub struct Withheld;

/// A probability given on the command line: a number from 0 to 1.
pub(crate) fn parse_probability(text: &str) -> Result<f32, String> {
    match text.trim().parse::<f32>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        _ => Err(format!("expected a number from 0 to 1, not {text:?}")),
    }
}

pub fn run(config: Config, args: AskArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(ask(config, args))
}

async fn ask(mut config: Config, args: AskArgs) -> anyhow::Result<()> {
    if let Some(path) = &args.cache_file {
        config.cache.path = Some(path.clone());
    }
    if let Some(mapping) = &args.mapping {
        config.graph.mapping = Some(mapping.clone());
    }
    use_text_index(&mut config, args.text_index.as_deref())?;
    if let Some(min) = args.min_confidence {
        config.reader.min_confidence = min;
    }
    let started = Instant::now();
    let question = args.question.join(" ");
    let bus: Arc<dyn Bus> = Arc::new(LocalBus::new());
    let graph_source = GraphSource::from_args(&config, args.kg.clone(), args.store.clone())?;
    let embedded = EmbeddedRoles::start(&config, bus.clone(), &graph_source).await?;
    let setup = started.elapsed();

    let mut settings = coordinator_config(&config);
    settings.graph = Some(graph_source.describe());
    let coordinator = Coordinator::new(bus, settings);
    let request = AskRequest {
        question: question.clone(),
        options: AskOptions {
            max_rounds: args.rounds,
            timeout_ms: args.timeout_ms,
            max_answers: args.max_answers,
            no_cache: false,
            evidence_edges: false,
        },
    };
    let result = coordinator.ask(request).await;
    embedded.stop().await;
    let reply = result?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&reply)?);
    } else {
        print_text(
            &question,
            &reply,
            args.show_evidence,
            args.verbose,
            setup,
            &config.embedder.describe(),
        );
    }
    if reply.answers.is_empty() {
        let min = config.reader.min_confidence;
        if reply.confidence.is_some_and(|c| c < min) {
            return Err(Withheld.into());
        }
        return Err(NoAnswer.into());
    }
    Ok(())
}

/// The coordinator's settings from the configuration tree.
pub(crate) fn coordinator_config(config: &Config) -> CoordinatorConfig {
    CoordinatorConfig {
        budget: config.budget(),
        summarizer_llm_calls: config.summarizer_llm_calls(),
        question_timeout: Duration::from_millis(config.budget.timeout_ms),
        call_timeout: Duration::from_millis(config.bus.request_timeout_ms),
        retries: config.bus.retries,
        hedge: kgmesh_coordinator::HedgePolicy {
            enabled: config.bus.hedge,
            min_delay: Duration::from_millis(config.bus.hedge_min_ms),
            max_delay: Duration::from_millis(config.bus.hedge_max_ms),
            first_delay: Duration::from_millis(config.bus.hedge_first_ms),
        },
        max_question_chars: config.http.max_question_chars,
        allowed_roles: AllowedRoles::default()
            .and(&registry::names())
            .and(&config.bus.allowed_roles),
        min_confidence: config.reader.min_confidence,
        cascade_below: config
            .llm
            .cascade_below
            .filter(|_| config.reader.confidence),
        cascade_calls: config.llm.cascade_calls,
        answer_calibration: answer_calibration(config),
        ..CoordinatorConfig::default()
    }
}

/// The installed reader's answer calibration for the way the KG-Linker reads (with an
/// embedder or by words), when answers carry a confidence and the first stage's order
/// stands (a re-ranking reader's plans are not calibrated that way).
fn answer_calibration(
    config: &Config,
) -> Option<kgmesh_coordinator::confidence::AnswerCalibration> {
    let readers = kgmesh_agents::reader::active()?;
    if readers.rerank || !config.reader.confidence {
        return None;
    }
    let embedded = config.embedder.kind != EmbedderKind::None;
    let model = readers
        .for_reading(embedded)
        .answer_calibration
        .clone()?
        .model;
    Some(kgmesh_coordinator::confidence::AnswerCalibration::new(
        move |signals| model.chance(signals),
    ))
}

/// `--text-index DIR` into the configuration, once DIR is known to hold an index, so
/// that a typo is an error here rather than a text retriever that finds nothing.
pub(crate) fn use_text_index(config: &mut Config, dir: Option<&Path>) -> anyhow::Result<()> {
    let Some(dir) = dir.or(config.text.index.as_deref()) else {
        return Ok(());
    };
    let file = dir.join(kgmesh_stores::text::TEXT_FILE);
    if !file.is_file() {
        bail!(
            "{} holds no text index ({} is missing): build one with `kgmesh index --text \
             FILES --into embedded:{}`",
            dir.display(),
            kgmesh_stores::text::TEXT_FILE,
            dir.display()
        );
    }
    config.text.index = Some(dir.to_owned());
    Ok(())
}

/// Where the graph comes from.
pub(crate) enum GraphSource {
    File(PathBuf),
    Sample,
    /// No graph: a text index was given and no KG, so the documents alone answer.
    Empty,
    /// A graph database over Bolt (`bolt://host:port`), with the credentials of the
    /// `graph` section.
    Bolt(String),
}

impl GraphSource {
    /// `--store URL` first, then `--kg FILE`, then the configuration: `graph.backend =
    /// "bolt"` with `graph.bolt_uri`, else `graph.path`, else the bundled sample.
    pub(crate) fn from_args(
        config: &Config,
        kg: Option<PathBuf>,
        store: Option<String>,
    ) -> anyhow::Result<Self> {
        if let Some(url) = store {
            return Ok(GraphSource::Bolt(bolt_url(&url)?));
        }
        if let Some(path) = kg {
            return Ok(GraphSource::File(path));
        }
        if config.graph.backend == GraphBackend::Bolt {
            let Some(url) = &config.graph.bolt_uri else {
                bail!("graph.backend = \"bolt\" needs graph.bolt_uri (bolt://host:port)");
            };
            return Ok(GraphSource::Bolt(bolt_url(url)?));
        }
        Ok(match config.graph.path.clone() {
            Some(path) => GraphSource::File(path),
            // Documents only: answering them from the sample movies would be a guess.
            None if config.text.index.is_some() => GraphSource::Empty,
            None => GraphSource::Sample,
        })
    }

    /// The graph in words, for logs and answers.
    pub(crate) fn describe(&self) -> String {
        match self {
            GraphSource::File(path) => path.display().to_string(),
            GraphSource::Sample => "the bundled sample movie KG".to_owned(),
            GraphSource::Empty => "no graph (documents only)".to_owned(),
            GraphSource::Bolt(url) => url.clone(),
        }
    }

    /// Opens the graph: a file is loaded into the embedded store; a Bolt database is
    /// connected to (the client fails at once on a refused address) and asked for its
    /// schema, so that a wrong address or password fails here, not at the first
    /// question. Either way the graph and its size are logged.
    pub(crate) async fn open(&self, config: &Config) -> anyhow::Result<Arc<dyn GraphStore>> {
        let (graph, nodes, edges): (Arc<dyn GraphStore>, u64, u64) = match self {
            GraphSource::File(path) => load_kg(path, config.graph.mapping.as_deref()).await?,
            GraphSource::Sample => load_kg(&write_sample()?, None).await?,
            GraphSource::Empty => (
                Arc::new(kgmesh_stores::embedded::GraphBuilder::new().finish()),
                0,
                0,
            ),
            GraphSource::Bolt(url) => {
                let settings = bolt_settings(config, url);
                let store = kgmesh_stores::bolt::BoltGraph::connect(&settings)
                    .await
                    .with_context(|| format!("cannot connect to the graph database {url}"))?;
                let schema = store
                    .schema()
                    .await
                    .with_context(|| format!("cannot read the graph database {url}"))?;
                (Arc::new(store), schema.node_count, schema.edge_count)
            }
        };
        tracing::info!(
            kg = %self.describe(),
            backend = graph.backend(),
            nodes,
            edges,
            "graph ready"
        );
        Ok(graph)
    }
}

/// A graph database address as the Bolt client takes it; anything else is refused with
/// the forms that work.
fn bolt_url(url: &str) -> anyhow::Result<String> {
    let trimmed = url.trim();
    let rest = trimmed
        .strip_prefix("bolt://")
        .or_else(|| trimmed.strip_prefix("neo4j://"));
    match rest {
        Some(address) if !address.is_empty() => Ok(format!("bolt://{address}")),
        _ => bail!("{url:?} is no graph database address: write bolt://host:port"),
    }
}

/// How to reach a Bolt database: the address, and the user, password (read from the
/// environment variable `graph.bolt_password_env` names), database and query timeout of
/// the `graph` section.
pub(crate) fn bolt_settings(config: &Config, url: &str) -> kgmesh_stores::bolt::BoltSettings {
    kgmesh_stores::bolt::BoltSettings {
        uri: url.to_owned(),
        user: config.graph.bolt_user.clone(),
        password: std::env::var(&config.graph.bolt_password_env).unwrap_or_default(),
        database: config.graph.bolt_database.clone(),
        timeout: Duration::from_millis(config.graph.query_timeout_ms),
    }
}

/// Writes the bundled sample once per machine (the loaders read files).
fn write_sample() -> anyhow::Result<PathBuf> {
    let path = std::env::temp_dir().join(SAMPLE_KG_NAME);
    let current = std::fs::read_to_string(&path).ok();
    if current.as_deref() != Some(SAMPLE_KG) {
        let partial = path.with_extension(format!("{}.tmp", std::process::id()));
        std::fs::write(&partial, SAMPLE_KG)
            .with_context(|| format!("cannot write the sample KG to {}", partial.display()))?;
        std::fs::rename(&partial, &path)
            .with_context(|| format!("cannot write the sample KG to {}", path.display()))?;
    }
    Ok(path)
}

/// Every role of this build, running in this process on one bus.
pub(crate) struct EmbeddedRoles {
    handles: Vec<RoleHandle>,
}

impl EmbeddedRoles {
    pub(crate) async fn start(
        config: &Config,
        bus: Arc<dyn Bus>,
        source: &GraphSource,
    ) -> anyhow::Result<Self> {
        let graph = source.open(config).await?;
        let mut deps = config.role_settings(AgentDeps::new(bus.clone()).with_graph(graph));
        if let Some(llm) = language_model(config)? {
            deps = deps.with_llm(llm).with_llm_roles(config.llm.roles.clone());
        }
        if let Some(embedder) = embedder(config).await? {
            deps = deps.with_embedder(embedder);
        }
        let vectors =
            crate::vectors::vector_index(config, deps.embedder.as_ref(), deps.graph.as_ref())
                .await?;
        if let Some(vectors) = vectors {
            deps = deps.with_vectors(vectors);
        }
        if let Some(path) = &config.cache.path {
            deps = deps.with::<SharedPlanStore>(Arc::new(FilePlanStore::new(path)));
        }
        let mut handles = Vec::new();
        for entry in registry::roles() {
            if entry.smoke_test
                || (entry.name == Role::PATTERN_MATCHER && !config.retrieval.pattern_matcher)
            {
                continue;
            }
            let spec = match (entry.build)(&deps) {
                Ok(spec) => spec,
                // A role needing what this process lacks (e.g. a model) is left out.
                Err(RoleBuildError::MissingDependency { role, dependency }) => {
                    tracing::info!(role, dependency, "role not started: missing dependency");
                    continue;
                }
                Err(error) => return Err(error).context("cannot build a role"),
            };
            let handle = start_role_with(bus.clone(), spec, StartOptions::default())
                .await
                .with_context(|| format!("cannot start role {}", entry.name))?;
            handles.push(handle);
        }
        Ok(Self { handles })
    }

    pub(crate) fn role_names(&self) -> Vec<String> {
        self.handles
            .iter()
            .map(|h| h.info().role.to_string())
            .collect()
    }

    pub(crate) async fn stop(self) {
        for handle in self.handles {
            handle.stop(Duration::from_secs(2)).await;
        }
    }
}

/// Loads a KG file or directory into the embedded store, off the async threads; lines
/// it could not read are reported, not fatal.
/// Returns the store with its node and edge counts.
pub(crate) async fn load_kg(
    path: &Path,
    mapping: Option<&Path>,
) -> anyhow::Result<(Arc<dyn GraphStore>, u64, u64)> {
    let owned = path.to_owned();
    let options = LoadOptions {
        mapping: mapping.map(Path::to_path_buf),
        ..LoadOptions::default()
    };
    let (graph, report) = tokio::task::spawn_blocking(move || load_graph(&owned, &options))
        .await
        .context("the KG loader panicked")?
        .with_context(|| format!("cannot load the KG from {}", path.display()))?;
    if report.bad_line_count > 0 {
        tracing::warn!(
            bad_lines = report.bad_line_count,
            path = %path.display(),
            "some KG lines could not be read and were skipped"
        );
    }
    for header in &report.headers {
        tracing::info!("{header} (`kgmesh load --header no` loads it as a triple into a snapshot)");
    }
    // Predicates the graph labels (N-Triples `rdfs:label`) read by their labels in
    // this process: in evidence, and where question words meet relation names.
    kgmesh_schemas::relation_text::learn_relation_labels(
        graph
            .relation_labels()
            .iter()
            .map(|(relation, label)| (relation.as_str(), label.as_str())),
    );
    let (nodes, edges) = (graph.node_count() as u64, graph.edge_count() as u64);
    Ok((Arc::new(graph), nodes, edges))
}

pub(crate) fn language_model(config: &Config) -> anyhow::Result<Option<Arc<dyn LanguageModel>>> {
    let base_url = config.llm.base_url.clone().or_else(|| {
        std::env::var("OPENAI_BASE_URL")
            .ok()
            .filter(|u| !u.trim().is_empty())
    });
    let Some(base_url) = base_url else {
        return Ok(None);
    };
    let mut llm = OpenAiConfig::new(base_url, config.llm.model.clone());
    llm.api_key = std::env::var(&config.llm.api_key_env)
        .ok()
        .filter(|k| !k.is_empty());
    llm.timeout = Duration::from_millis(config.llm.timeout_ms);
    llm.max_retries = config.llm.max_retries;
    llm.max_concurrency = config.llm.max_concurrency as usize;
    llm.requests_per_minute = config.llm.requests_per_minute;
    llm.breaker_failures = config.llm.breaker_failures;
    llm.breaker_cooldown = Duration::from_millis(config.llm.breaker_cooldown_ms);
    llm.context_tokens = config.llm.context_tokens.map(|t| t as usize);
    llm.choice_constraint = config.llm.choice_constraint;
    llm.record_prompts = config.telemetry.record_prompts;
    let chat = OpenAiChat::new(llm).context("cannot configure the language model")?;
    Ok(Some(Arc::new(chat)))
}

pub(crate) async fn embedder(config: &Config) -> anyhow::Result<Option<Arc<dyn Embedder>>> {
    // Commands resolve `auto` at start; a configuration built in code may not have.
    let mut settings = config.embedder.clone();
    settings.resolve_auto();
    match settings.kind {
        EmbedderKind::Auto | EmbedderKind::None => Ok(None),
        EmbedderKind::Minilm => {
            let dir = settings.model_dir.unwrap_or_else(MiniLm::default_dir);
            let model = MiniLm::load_async(dir)
                .await
                .context("cannot load the MiniLM embedder")?;
            Ok(Some(Arc::new(model)))
        }
        EmbedderKind::Openai => {
            let Some(base_url) = settings.base_url else {
                bail!("embedder.kind = \"openai\" needs embedder.base_url");
            };
            let remote = OpenAiEmbedder::connect(OpenAiConfig::new(base_url, settings.model))
                .await
                .context("cannot reach the embeddings endpoint")?
                .with_batch_size(settings.batch_size);
            Ok(Some(Arc::new(remote)))
        }
    }
}

/// `--show-evidence`: a number of lines, or `all`.
fn parse_show_evidence(value: &str) -> Result<usize, String> {
    if value.eq_ignore_ascii_case("all") {
        return Ok(usize::MAX);
    }
    value
        .parse()
        .map_err(|_| format!("{value:?} is neither a number of lines nor `all`"))
}

/// The evidence the answers cite first, then the rest, up to `show` distinct lines;
/// a line several retrievers found is printed once with every source, numbered by its
/// first index (the number answers cite it by; JSON index `i` is line `i + 1`).
fn print_evidence(reply: &AskReply, show: usize) {
    if reply.evidence.is_empty() {
        return;
    }
    let mut order: Vec<usize> = Vec::new();
    for answer in &reply.answers {
        for &index in &answer.evidence {
            let index = index as usize;
            if index < reply.evidence.len() && !order.contains(&index) {
                order.push(index);
            }
        }
    }
    let cited = order.len();
    let rest: Vec<usize> = (0..reply.evidence.len())
        .filter(|i| !order.contains(i))
        .collect();
    order.extend(rest);
    // text → (indices, sources), in the order first met.
    let mut lines: Vec<(&str, Vec<usize>, Vec<&str>)> = Vec::new();
    for index in order {
        let line = &reply.evidence[index];
        match lines.iter_mut().find(|(text, _, _)| *text == line.text) {
            Some((_, indices, sources)) => {
                indices.push(index);
                if !sources.contains(&line.source.as_str()) {
                    sources.push(&line.source);
                }
            }
            None => lines.push((&line.text, vec![index], vec![&line.source])),
        }
    }
    println!(
        "Evidence ({} lines, {} distinct; {} cited):",
        reply.evidence.len(),
        lines.len(),
        cited
    );
    for (text, indices, sources) in lines.iter().take(show) {
        let first = indices.iter().min().copied().unwrap_or(0);
        println!("  [{}] {text}  ({})", first + 1, sources.join(", "));
    }
    if lines.len() > show {
        println!(
            "  … {} more (--evidence all, --show-evidence N, or --json)",
            lines.len() - show
        );
    }
}

fn print_text(
    question: &str,
    reply: &AskReply,
    show_evidence: usize,
    verbose: bool,
    setup: Duration,
    embedder_in_words: &str,
) {
    println!("Q: {question}");
    if reply.answers.is_empty() {
        println!("A: (no answer) {}", reply.explanation);
    } else {
        println!(
            "A:{}{}{}",
            reply
                .confidence
                .map(|c| format!(" (confidence {c:.2})"))
                .unwrap_or_default(),
            if reply.readings_agree == Some(false) {
                " (a second reading of the question reaches other answers)"
            } else {
                ""
            },
            if reply.low_confidence {
                " (low confidence: check the evidence)"
            } else {
                ""
            }
        );
        for (rank, answer) in reply.answers.iter().enumerate() {
            let cited: Vec<String> = answer
                .evidence
                .iter()
                .map(|i| format!("[{}]", i + 1))
                .collect();
            println!("  {}. {}  {}", rank + 1, answer.text, cited.join(" "));
        }
        if !reply.explanation.is_empty() {
            println!("   {}", reply.explanation);
        }
    }
    print_evidence(reply, show_evidence);
    if verbose {
        for note in &reply.notes {
            println!("note: {note}");
        }
    } else if !reply.notes.is_empty() {
        println!(
            "({} note{} from the roles: --verbose shows them)",
            reply.notes.len(),
            if reply.notes.len() == 1 { "" } else { "s" }
        );
    }
    if !reply.degraded.is_empty() {
        let parts: Vec<String> = reply
            .degraded
            .iter()
            .map(|d| format!("{} ({})", d.role, d.reason.replace('_', " ")))
            .collect();
        println!("DEGRADED: {}", parts.join(", "));
    }
    if let Some(cache_use) = &reply.cache_use {
        println!("{cache_use}");
    } else if let (true, Some(similarity)) = (reply.plan_replayed, reply.replay_similarity) {
        println!(
            "plan: replayed from the plan cache (the verified plan of a similar question, \
             similarity {similarity:.2})"
        );
    } else if reply.plan_replayed {
        println!(
            "plan: replayed from the plan cache (a verified plan of this question's template)"
        );
    } else if reply.cache_hit {
        println!("plan: the plan cache supplied examples; the plan was made for this question");
    }
    if let Some(graph) = &reply.graph {
        println!("graph: {graph}");
    }
    println!("embedder: {embedder_in_words}");
    let cost = &reply.cost;
    println!(
        "rounds {} · LLM calls {} · tokens {} (prompt {}, completion {}) · graph rows {} · bus messages {}{}",
        reply.rounds,
        cost.llm_calls,
        cost.prompt_tokens + cost.completion_tokens,
        cost.prompt_tokens,
        cost.completion_tokens,
        cost.graph_rows,
        cost.bus_messages,
        if reply.partial { " · PARTIAL (budget exhausted or a required role failed)" } else { "" }
    );
    let stages: Vec<String> = reply
        .timings
        .stages
        .iter()
        .map(|(stage, us)| format!("{stage} {:.1} ms", *us as f64 / 1000.0))
        .collect();
    println!(
        "time {:.1} ms (load and start {:.0} ms): {}",
        reply.timings.total_us as f64 / 1000.0,
        setup.as_secs_f64() * 1000.0,
        stages.join(", ")
    );
}
