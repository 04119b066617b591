//! `kgmesh cache warm`: fills the plan cache before the first question (CacheRAG §4.4),
//! from star schemas sampled from the graph or from imported, verified QA pairs;
//! `kgmesh cache feedback`: applies users' verdicts on answers (right, wrong, or the
//! right answers) as the cache manager's `feedback` op does; `kgmesh cache stats`: what
//! a plan cache holds; `kgmesh cache history`: who changed which plan, when, from what
//! to what (the store's audit); `kgmesh cache revert`: undoes one audited change.
//!
//! Writes go to the configured plan store: the file `cache.path` (or `--cache-file`)
//! that embedded mode reads, or with `--nats` the JetStream KV bucket
//! `cache.kv_bucket` every cache-manager replica follows.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{bail, Context as _};
use futures::StreamExt;
use kgmesh_agents::cache_manager::{
    audit::{self, AuditEntry},
    core::{domain_of, entry_key},
    feedback::{self, Asked, Gate, Gatekeeper},
    persist::{FilePlanStore, KvPlanStore, PlanStore},
    template,
    warm::{self, Candidate, SkipReason, Warmer},
    CacheConfig as PlanCacheConfig, PlanCache,
};
use kgmesh_eval::qa::QaFormat;
use kgmesh_models::LanguageModel;
use kgmesh_schemas::messages::cache::{CacheEntry, Feedback, FeedbackOutcome, Isr, Principal};
use kgmesh_stores::GraphStore;

use super::fold::FoldArgs;
use crate::config::Config;

#[derive(Debug, clap::Args)]
pub struct CacheArgs {
    #[command(subcommand)]
    command: CacheCommand,
}

#[derive(Debug, clap::Subcommand)]
enum CacheCommand {
    /// Fill the plan cache with verified plans: star schemas sampled from the graph
    /// (default) or QA pairs imported with --import.
    Warm(WarmArgs),
    /// Apply feedback on answers to the plan cache: JSON lines `{"question": ...,
    /// "correct": true|false}` or `{"question": ..., "answers": [...]}`.
    Feedback(FeedbackArgs),
    /// Count the entries of a plan cache, per domain and aspect.
    Stats(StoreArgs),
    /// List the plan cache's audit, newest first: who changed which plan, when, and the
    /// plan before and after.
    History(HistoryArgs),
    /// Restore the plan one audit entry changed to what it was before that change
    /// (audited too). A running `serve --embedded` reads the file at its next start;
    /// replicas following the KV bucket see it at once.
    Revert(RevertArgs),
}

#[derive(Debug, clap::Args)]
struct HistoryArgs {
    #[command(flatten)]
    store: StoreArgs,

    /// Only the entries of this cache key (feedback replies and this list show keys).
    #[arg(long, value_name = "KEY")]
    key: Option<String>,

    /// At most N entries.
    #[arg(long, value_name = "N", default_value_t = 20)]
    limit: usize,

    /// A JSON array of the entries (with the plans before and after in full).
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
struct RevertArgs {
    /// The id of the audit entry whose change to undo (`kgmesh cache history`).
    #[arg(value_name = "ENTRY-ID")]
    id: u64,

    #[command(flatten)]
    store: StoreArgs,

    /// The name the revert is audited under.
    #[arg(long = "as", value_name = "NAME", default_value = "local")]
    principal: String,
}

#[derive(Debug, clap::Args)]
struct FeedbackArgs {
    /// JSON lines, one verdict each: `{"question": "...", "correct": false}` (the
    /// answer was right or wrong) or `{"question": "...", "answers": ["..."]}` (the
    /// right answers, verified against the graph). Applied in file order.
    #[arg(value_name = "FILE")]
    file: PathBuf,

    #[command(flatten)]
    store: StoreArgs,

    /// KG file or directory (default: `graph.path`): its name index finds each
    /// question's entities, as lookups do, and corrections are verified against it.
    #[arg(long)]
    kg: Option<PathBuf>,

    /// Print every line's outcome.
    #[arg(long)]
    verbose: bool,

    /// The name the verdicts are given and audited under (an admin: the operator holds
    /// the cache's files).
    #[arg(long = "as", value_name = "NAME", default_value = "local")]
    principal: String,
}

#[derive(Debug, clap::Args)]
struct StoreArgs {
    /// Plan cache file (default: `cache.path`).
    #[arg(long, value_name = "PATH", conflicts_with = "nats")]
    cache_file: Option<PathBuf>,
    /// Use the JetStream KV bucket `cache.kv_bucket` on this NATS server instead of a
    /// file (no value: `bus.nats_url`).
    #[arg(long, value_name = "URL", num_args = 0..=1, default_missing_value = "")]
    nats: Option<String>,
}

#[derive(Debug, clap::Args)]
struct WarmArgs {
    #[command(flatten)]
    plans: StoreArgs,

    /// KG file or directory (default: `graph.path`).
    #[arg(long, conflicts_with = "store")]
    kg: Option<PathBuf>,

    /// A graph database (`bolt://host:port`) instead of --kg; user, password and
    /// database come from the `graph` section (default: `graph.backend = "bolt"` with
    /// `graph.bolt_uri`).
    #[arg(long, value_name = "URL")]
    store: Option<String>,

    /// TOML mapping of a property-graph CSV directory (default: `graph.mapping`). On a
    /// property graph (nodes with labels or properties besides their names: a mapped
    /// CSV directory or its snapshot), warming learns grounded Cypher plans from
    /// --import.
    #[arg(long, value_name = "FILE")]
    mapping: Option<PathBuf>,

    /// Verified QA pairs, in any format `kgmesh eval` reads: MetaQA
    /// `question<TAB>answer1|answer2` lines (the topic entity in [brackets] when known),
    /// IRN lines of PathQuestion and WC2014 `question<TAB>answer(s)<TAB>gold path…` (the
    /// topic entity is the gold path's first node; the plan is still found from the
    /// answers), or JSON lines `{"question", "answers", ["topic"]}`. On a property
    /// graph (--mapping): JSON lines `{"question", "answers"}` or `{"question",
    /// "cypher"}` (a query whose rows are the answers; the query itself is not learned),
    /// from which grounded Cypher plans are learned.
    #[arg(long, value_name = "FILE")]
    import: Option<PathBuf>,

    /// Format of --import (auto: JSON when the first line starts with `{`, IRN when
    /// its third tab-separated field is a `#`-joined gold path, MetaQA otherwise).
    #[arg(long, value_enum, default_value_t = ImportFormat::Auto)]
    format: ImportFormat,

    #[command(flatten)]
    fold: FoldArgs,

    /// At most N QA pairs (the first N, after --fold) or, without --import, N sampled
    /// stars.
    #[arg(long, value_name = "N")]
    limit: Option<usize>,

    /// Star schemas sampled when not importing.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 200,
        conflicts_with = "import"
    )]
    stars: usize,

    /// Edges kept per sampled star.
    #[arg(long, value_name = "M", default_value_t = 20)]
    max_neighbors: usize,

    /// Seed of the star sample.
    #[arg(long, value_name = "S", default_value_t = 0)]
    seed: u64,

    /// Pairs verified at once.
    #[arg(long, value_name = "C", default_value_t = 4)]
    concurrency: usize,

    /// Verify and count, write nothing.
    #[arg(long)]
    dry_run: bool,

    /// No progress lines on stderr.
    #[arg(long)]
    no_progress: bool,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ImportFormat {
    /// Decided by the first non-empty line.
    Auto,
    /// `question<TAB>answer1|answer2` (MetaQA; `tsv` is accepted too).
    #[value(alias = "tsv")]
    Metaqa,
    /// `question<TAB>answer(s)<TAB>gold path…` (PathQuestion, WC2014).
    Irn,
    /// `{"question": ..., "answers": [...]}` per line.
    Jsonl,
}

impl From<ImportFormat> for QaFormat {
    fn from(format: ImportFormat) -> Self {
        match format {
            ImportFormat::Auto => QaFormat::Auto,
            ImportFormat::Metaqa => QaFormat::Metaqa,
            ImportFormat::Irn => QaFormat::Irn,
            ImportFormat::Jsonl => QaFormat::Jsonl,
        }
    }
}

pub fn run(config: Config, args: CacheArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    match args.command {
        CacheCommand::Warm(args) => runtime.block_on(warm_command(config, args)),
        CacheCommand::Feedback(args) => runtime.block_on(feedback_command(config, args)),
        CacheCommand::Stats(args) => runtime.block_on(stats_command(config, args)),
        CacheCommand::History(args) => runtime.block_on(history_command(config, args)),
        CacheCommand::Revert(args) => runtime.block_on(revert_command(config, args)),
    }
}

/// The operator at the command line, under `name`.
fn operator(name: &str) -> anyhow::Result<Principal> {
    let name = name.trim();
    if name.is_empty() {
        bail!("--as needs a name");
    }
    Ok(Principal {
        name: name.to_owned(),
        admin: true,
    })
}

async fn history_command(config: Config, args: HistoryArgs) -> anyhow::Result<()> {
    let target = open_store(&config, &args.store).await?;
    let entries = target
        .store
        .history(args.key.as_deref(), args.limit)
        .await
        .with_context(|| format!("cannot read the audit of {}", target.shown))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&entries)?);
        return Ok(());
    }
    if entries.is_empty() {
        println!("no audited change in {}", target.shown);
        return Ok(());
    }
    for entry in &entries {
        print!("{}", history_text(entry));
    }
    Ok(())
}

/// One audit entry as text: id, time, action, key and who; the template and the plan
/// before → after; what happened.
fn history_text(entry: &AuditEntry) -> String {
    let plan = |entry: Option<&CacheEntry>| match entry {
        Some(entry) => feedback::plan_text(&entry.plan.metapaths),
        None => "(none)".to_owned(),
    };
    let template = entry
        .after
        .as_ref()
        .or(entry.before.as_ref())
        .or(entry.proposed.as_ref())
        .map(|e| e.template.as_str())
        .unwrap_or("-");
    let mut text = format!(
        "{:>5}  {}  {:<9} {}  by {}{}\n       `{template}`: {} => {}",
        entry.id,
        kgmesh_eval::report::rfc3339(entry.at_unix_ms / 1000),
        entry.action.as_str(),
        entry.key,
        entry.principal.name,
        if entry.principal.admin {
            " (admin)"
        } else {
            ""
        },
        plan(entry.before.as_ref()),
        plan(entry.after.as_ref()),
    );
    if let Some(proposed) = &entry.proposed {
        text.push_str(&format!(
            " (proposed: {})",
            feedback::plan_text(&proposed.plan.metapaths)
        ));
    }
    text.push_str(&format!("\n       {}\n", entry.detail));
    text
}

async fn revert_command(config: Config, args: RevertArgs) -> anyhow::Result<()> {
    let principal = operator(&args.principal)?;
    let target = open_store(&config, &args.store).await?;
    let entry = audit::revert(target.store.as_ref(), args.id, &principal)
        .await
        .with_context(|| format!("cannot revert in {}", target.shown))?;
    println!("reverted entry {} in {}", args.id, target.shown);
    print!("{}", history_text(&entry));
    Ok(())
}

/// Where entries are written, and how to say so.
struct Target {
    store: Arc<dyn PlanStore>,
    shown: String,
}

async fn open_store(config: &Config, args: &StoreArgs) -> anyhow::Result<Target> {
    if let Some(url) = &args.nats {
        let url = if url.is_empty() {
            config.bus.nats_url.clone()
        } else {
            url.clone()
        };
        let nats = super::connect_nats(config, &url, "kgmesh cache").await?;
        let bucket = &config.cache.kv_bucket;
        let store = KvPlanStore::open(nats.client().clone(), bucket)
            .await
            .context(
            "cannot open the plan cache in JetStream KV (is JetStream enabled: nats-server -js?)",
        )?;
        return Ok(Target {
            store: Arc::new(store),
            shown: format!("JetStream KV bucket {bucket} at {url}"),
        });
    }
    let Some(path) = args
        .cache_file
        .clone()
        .or_else(|| config.cache.path.clone())
    else {
        bail!(
            "no plan cache to write: pass --cache-file PATH (or set cache.path), or --nats \
             for the shared JetStream KV bucket"
        );
    };
    Ok(Target {
        shown: path.display().to_string(),
        store: Arc::new(FilePlanStore::new(path)),
    })
}

async fn stats_command(config: Config, args: StoreArgs) -> anyhow::Result<()> {
    let target = open_store(&config, &args).await?;
    let entries = target
        .store
        .load_all()
        .await
        .with_context(|| format!("cannot read {}", target.shown))?;
    let mut buckets: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (_, entry) in &entries {
        *buckets
            .entry((
                domain_of(&entry.isr),
                entry.isr.aspect.trim().to_lowercase(),
            ))
            .or_default() += 1;
    }
    println!("{} entries in {}", entries.len(), target.shown);
    for ((domain, aspect), count) in buckets {
        let aspect = if aspect.is_empty() { "-" } else { &aspect };
        println!("  {domain} / {aspect}: {count}");
    }
    let cypher = target
        .store
        .load_cypher()
        .await
        .with_context(|| format!("cannot read {}", target.shown))?;
    if !cypher.is_empty() {
        println!("{} grounded Cypher plans", cypher.len());
    }
    Ok(())
}

/// `cache warm` on a property graph: each imported question's candidates run (GraphRAFT
/// §4.1), and those that give its answers are stored as its grounded Cypher plan, for
/// every query executor to learn from.
async fn warm_cypher(
    config: &Config,
    args: &WarmArgs,
    target: Option<Target>,
    graph: Arc<dyn GraphStore>,
    schema: kgmesh_schemas::graph::GraphSchema,
) -> anyhow::Result<()> {
    use kgmesh_agents::query_executor::grounded::{plans, GroundedCypher};
    let Some(path) = &args.import else {
        bail!(
            "on a property graph, cache warm learns grounded Cypher plans from --import PAIRS \
             (JSON lines with \"question\" and \"answers\" or \"cypher\"); sampling star \
             schemas is for graphs of triples"
        );
    };
    let pairs = kgmesh_eval::text2cypher::read_pairs(path)?;
    let read = pairs.len();
    let mut pairs: Vec<_> = match args.fold.fold() {
        Some(fold) => fold.select(pairs),
        None => pairs,
    };
    if let Some(limit) = args.limit {
        pairs.truncate(limit);
    }
    if pairs.is_empty() {
        bail!(
            "{}: no question pairs left to import (of {read})",
            path.display()
        );
    }
    let limits = kgmesh_eval::text2cypher::learning_limits();
    let mut planner = GroundedCypher::read(graph.as_ref(), schema, &limits)
        .await
        .context("cannot read the graph's values")?;
    kgmesh_eval::text2cypher::use_embedder(
        &mut planner,
        super::ask::embedder(config).await?,
        "kgmesh cache warm",
    )
    .await;
    println!(
        "read {} question pairs from {}{}; learning grounded Cypher plans",
        pairs.len(),
        path.display(),
        match args.fold.fold() {
            Some(fold) => format!(" (fold {fold} of {read})"),
            None => String::new(),
        }
    );
    let mut progress = Progress::new(!args.no_progress, "pairs", pairs.len());
    let mut skipped = Skipped::default();
    let mut entries = Vec::new();
    for (done, pair) in pairs.iter().enumerate() {
        let reference =
            kgmesh_eval::text2cypher::reference_for(graph.as_ref(), &planner, pair, &limits).await;
        let what = || format!("\"{}\"", pair.question);
        match reference {
            None => skipped.add_reason(
                what(),
                "no answers (its query gives no rows or does not run)",
            ),
            Some(reference) => {
                let right = planner
                    .learn(graph.as_ref(), &pair.question, &reference, &limits)
                    .await
                    .context("a candidate query failed")?;
                if right.is_empty() {
                    skipped.add_reason(what(), "no candidate query gives its answers");
                } else {
                    entries.push((
                        plans::key(&pair.question),
                        plans::entry(&pair.question, reference.answers, &right),
                    ));
                }
            }
        }
        progress.tick(done + 1, entries.len());
    }
    println!("checked      {}", pairs.len());
    println!("verified     {}", entries.len());
    skipped.print();
    let Some(target) = target else {
        println!("dry run: nothing written");
        return Ok(());
    };
    let held: BTreeMap<String, kgmesh_schemas::messages::cache::CacheEntry> = target
        .store
        .load_cypher()
        .await
        .with_context(|| format!("cannot read {}", target.shown))?
        .into_iter()
        .collect();
    let (mut written, mut unchanged) = (0usize, 0usize);
    for (key, entry) in &entries {
        if held.get(key).is_some_and(|old| old.plan == entry.plan) {
            unchanged += 1;
            continue;
        }
        target
            .store
            .put(key, entry)
            .await
            .with_context(|| format!("cannot write to {}", target.shown))?;
        let audited = AuditEntry::now(
            &Principal::local(),
            audit::AuditAction::Warmed,
            key,
            held.get(key).cloned(),
            Some(entry.clone()),
            "grounded Cypher plan imported by cache warm",
        );
        target
            .store
            .append_audit(&audited)
            .await
            .with_context(|| format!("cannot audit in {}", target.shown))?;
        written += 1;
    }
    let total = held
        .keys()
        .chain(entries.iter().map(|(key, _)| key))
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    println!("written      {written}");
    println!("unchanged    {unchanged}");
    println!(
        "cache now holds {total} grounded Cypher plans in {}",
        target.shown
    );
    Ok(())
}

async fn load_kg(
    config: &Config,
    kg: Option<PathBuf>,
    command: &str,
) -> anyhow::Result<Arc<dyn GraphStore>> {
    let Some(path) = kg.or_else(|| config.graph.path.clone()) else {
        bail!("cache {command} needs the graph: pass --kg PATH (or set graph.path)");
    };
    let (graph, _, _) = super::ask::load_kg(&path, config.graph.mapping.as_deref()).await?;
    Ok(graph)
}

/// One line of a feedback file.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FeedbackLine {
    question: String,
    correct: Option<bool>,
    answers: Option<Vec<String>>,
}

/// A readable feedback line.
#[derive(Debug, PartialEq)]
struct FeedbackItem {
    /// 1-based, for reports.
    line: usize,
    question: String,
    verdict: Feedback,
}

/// Reads feedback lines in file order, and the unreadable lines with their numbers and
/// why. Blank lines are skipped.
fn parse_feedback(text: &str) -> (Vec<FeedbackItem>, Vec<(usize, String)>) {
    let mut verdicts = Vec::new();
    let mut bad = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        let parsed = serde_json::from_str::<FeedbackLine>(line)
            .map_err(|e| e.to_string())
            .and_then(|line| {
                let question = line.question.trim().to_owned();
                if question.is_empty() {
                    return Err("`question` is empty".to_owned());
                }
                Ok((question, Feedback::from_parts(line.correct, line.answers)?))
            });
        match parsed {
            Ok((question, verdict)) => verdicts.push(FeedbackItem {
                line: number,
                question,
                verdict,
            }),
            Err(why) => bad.push((number, why)),
        }
    }
    (verdicts, bad)
}

async fn feedback_command(config: Config, args: FeedbackArgs) -> anyhow::Result<()> {
    // Read the input before the (slower) graph load, so a bad file fails fast.
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("cannot read feedback from {}", args.file.display()))?;
    let (verdicts, bad) = parse_feedback(&text);
    let shown_file = args.file.display();
    if verdicts.is_empty() {
        for (line, why) in &bad {
            eprintln!("kgmesh cache feedback: {shown_file}:{line}: {why}");
        }
        bail!(
            "{shown_file}: no readable feedback ({} unreadable lines; expected JSON lines              {{\"question\": ..., \"correct\": true|false}} or {{\"question\": ..., \"answers\": [...]}})",
            bad.len()
        );
    }
    let principal = operator(&args.principal)?;
    let keeper = Gatekeeper::default();
    let target = open_store(&config, &args.store).await?;
    let graph = load_kg(&config, args.kg.clone(), "feedback").await?;
    let llm = intent_model(&config)?;
    let gazetteer = Arc::new(
        warm::build_gazetteer(graph.as_ref())
            .await
            .context("cannot index the graph's names")?,
    );
    let warmer = Warmer::new(graph, gazetteer.clone());
    let mut cache = PlanCache::new(config.cache_rule());
    for (_, entry) in target
        .store
        .load_all()
        .await
        .with_context(|| format!("cannot read {}", target.shown))?
    {
        cache.insert(entry);
    }
    let cache = std::sync::Mutex::new(cache);
    println!(
        "read {} feedback lines from {shown_file}{}",
        verdicts.len(),
        if bad.is_empty() {
            String::new()
        } else {
            format!(" ({} unreadable)", bad.len())
        }
    );

    let mut counts: BTreeMap<FeedbackOutcome, usize> = BTreeMap::new();
    for FeedbackItem {
        line,
        question,
        verdict,
    } in &verdicts
    {
        let mentions = template::linked_mentions(&gazetteer, question);
        // Lookups route by the model's ISR when one is configured; so does feedback.
        let isr = match &llm {
            Some(model) => warm::isr_for(model.as_ref(), question)
                .await
                .unwrap_or_else(|error| {
                    tracing::warn!(%error, "ISR extraction failed; using the default bucket");
                    Isr::default()
                }),
            None => Isr::default(),
        };
        // No embedder here: a verdict reaches the plan of the question's own template
        // (the role's feedback also reaches a similar template's plan it replayed).
        let asked = Asked {
            question,
            mentions: &mentions,
            isr: &isr,
            similar: None,
        };
        let gate = Gate {
            principal: &principal,
            keeper: &keeper,
        };
        let reply = feedback::apply(
            &cache,
            Some(target.store.as_ref()),
            Some(&warmer),
            gate,
            asked,
            verdict,
        )
        .await
        .with_context(|| {
            format!(
                "{shown_file}:{line}: cannot write to {} (the lines before it were applied)",
                target.shown
            )
        })?;
        if args.verbose {
            println!("  {shown_file}:{line}: {}: {}", reply.outcome, reply.detail);
        }
        *counts.entry(reply.outcome).or_default() += 1;
    }

    for outcome in FeedbackOutcome::ALL {
        println!(
            "{:<13}{}",
            outcome.as_str(),
            counts.get(&outcome).copied().unwrap_or(0)
        );
    }
    println!("{:<13}{}", "unreadable", bad.len());
    for (line, why) in &bad {
        println!("  {shown_file}:{line}: {why}");
    }
    let total = cache
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .len();
    println!("cache now holds {total} entries in {}", target.shown);
    Ok(())
}

/// Progress on stderr, at most every two seconds and at the end.
struct Progress {
    enabled: bool,
    what: &'static str,
    total: usize,
    started: Instant,
    last: Instant,
}

impl Progress {
    fn new(enabled: bool, what: &'static str, total: usize) -> Self {
        let now = Instant::now();
        Self {
            enabled,
            what,
            total,
            started: now,
            last: now,
        }
    }

    fn tick(&mut self, done: usize, verified: usize) {
        if !self.enabled {
            return;
        }
        if done < self.total && self.last.elapsed() < Duration::from_secs(2) {
            return;
        }
        self.last = Instant::now();
        eprintln!(
            "kgmesh cache warm: {done}/{} {} checked, {verified} verified ({:.1} s)",
            self.total,
            self.what,
            self.started.elapsed().as_secs_f64()
        );
    }
}

/// Skipped items shown by name, at most this many (the counts cover them all).
const SKIPPED_SHOWN: usize = 10;

/// What `cache warm` skipped: a count per reason, and the items in the order met
/// (a QA pair by its line and question, a star group by its centre and relation).
#[derive(Default)]
struct Skipped {
    counts: BTreeMap<String, usize>,
    items: Vec<(String, String)>,
}

impl Skipped {
    fn add(&mut self, what: String, reason: SkipReason) {
        self.add_reason(what, reason.describe());
    }

    fn add_reason(&mut self, what: String, reason: &str) {
        *self.counts.entry(reason.to_owned()).or_default() += 1;
        self.items.push((what, reason.to_owned()));
    }

    fn extend(&mut self, other: Skipped) {
        for (reason, count) in other.counts {
            *self.counts.entry(reason).or_default() += count;
        }
        self.items.extend(other.items);
    }

    /// `skipped N`, the count per reason, then the first items with theirs.
    fn print(&self) {
        println!("skipped      {}", self.items.len());
        for (reason, count) in &self.counts {
            println!("  {count:>6}  {reason}");
        }
        if self.items.is_empty() {
            return;
        }
        let shown = self.items.len().min(SKIPPED_SHOWN);
        if shown < self.items.len() {
            println!("skipped items (the first {shown} of {}):", self.items.len());
        } else {
            println!("skipped items:");
        }
        for (what, reason) in &self.items[..shown] {
            println!("  {what}: {reason}");
        }
    }
}

/// Verifies `pairs`, `args.concurrency` at a time, with progress on stderr.
async fn verify_pairs(
    warmer: &Warmer,
    pairs: &[warm::QaPair],
    args: &WarmArgs,
    what: &'static str,
) -> (Vec<Candidate>, Skipped) {
    let mut progress = Progress::new(!args.no_progress, what, pairs.len());
    let mut verified = Vec::new();
    let mut skipped = Skipped::default();
    let mut done = 0usize;
    let mut results = futures::stream::iter(pairs.iter())
        .map(|pair| async move { (pair, warmer.verify_pair(pair).await) })
        .buffered(args.concurrency);
    while let Some((pair, result)) = results.next().await {
        done += 1;
        match result {
            Ok(candidate) => verified.push(candidate),
            Err(reason) => {
                skipped.add(format!("line {}: \"{}\"", pair.line, pair.question), reason)
            }
        }
        progress.tick(done, verified.len());
    }
    (verified, skipped)
}

async fn warm_command(config: Config, args: WarmArgs) -> anyhow::Result<()> {
    if args.concurrency == 0 {
        bail!("--concurrency must be at least 1");
    }
    if args.limit == Some(0) {
        bail!("--limit must be at least 1");
    }
    let fold = args.fold.fold();
    if fold.is_some() && args.import.is_none() {
        bail!("--fold and --fold-complement select QA pairs of --import FILE");
    }
    let target = if args.dry_run {
        None
    } else {
        Some(open_store(&config, &args.plans).await?)
    };
    use super::ask::GraphSource;
    let source = match (&args.store, &args.kg) {
        (Some(url), _) => GraphSource::from_args(&config, None, Some(url.clone()))?,
        (None, Some(kg)) => GraphSource::File(kg.clone()),
        (None, None) => match GraphSource::from_args(&config, None, None)? {
            GraphSource::Sample => bail!(
                "cache warm needs the graph: pass --kg PATH or --store bolt://HOST:PORT (or set graph.path)"
            ),
            source => source,
        },
    };
    let mapping = args
        .mapping
        .clone()
        .or_else(|| config.graph.mapping.clone());
    if args.mapping.is_some() && matches!(source, GraphSource::Bolt(_)) {
        bail!("--mapping describes CSV files; a graph database (--store) brings its own labels");
    }
    let graph = match &source {
        GraphSource::File(kg) => super::ask::load_kg(kg, mapping.as_deref()).await?.0,
        _ => source.open(&config).await?,
    };
    let schema = graph
        .schema()
        .await
        .context("cannot read the graph's schema")?;
    // A property graph (a CSV directory with its mapping, or its snapshot) learns
    // grounded Cypher plans; a graph of triples relation-path plans.
    if kgmesh_agents::query_executor::grounded::is_property_graph(&schema) {
        return warm_cypher(&config, &args, target, graph, (*schema).clone()).await;
    }
    if mapping.is_some() && matches!(source, GraphSource::File(_)) {
        bail!(
            "{}: no labels or properties besides names, so no grounded Cypher to learn",
            source.describe()
        );
    }
    let import = match &args.import {
        Some(path) => Some(read_pairs(path, args.format.into())?),
        None => None,
    };
    let llm = intent_model(&config)?;
    let gazetteer = Arc::new(
        warm::build_gazetteer(graph.as_ref())
            .await
            .context("cannot index the graph's names")?,
    );
    let warmer = Warmer::new(graph.clone(), gazetteer.clone());
    let mut skipped = Skipped::default();
    let mut llm_calls = 0u32;

    let (candidates, inputs) = match import {
        Some(Pairs { format, pairs, bad }) => {
            let path = args.import.as_deref().unwrap_or(Path::new(""));
            for (line, why) in bad.iter().take(5) {
                eprintln!("kgmesh cache warm: {}:{line}: {why}", path.display());
            }
            for (line, why) in &bad {
                skipped.add(format!("line {line} ({why})"), SkipReason::BadLine);
            }
            let read = pairs.len();
            let mut pairs = match fold {
                Some(fold) => fold.select(pairs),
                None => pairs,
            };
            if let Some(limit) = args.limit {
                pairs.truncate(limit);
            }
            let mut notes = Vec::new();
            if let Some(fold) = fold {
                notes.push(format!("fold {fold} of {read}"));
            }
            if !bad.is_empty() {
                notes.push(format!("{} unreadable lines", bad.len()));
            }
            println!(
                "read {} QA pairs ({format}) from {}{}",
                pairs.len(),
                path.display(),
                if notes.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", notes.join(", "))
                }
            );
            if pairs.is_empty() {
                bail!("no QA pairs left to import (--fold keeps none of {read})");
            }
            // Two passes: the first chooses each pair's plan by the words of relation
            // names alone; the second with the lexicon the first pass's plans teach,
            // so that paraphrases ("heir", "darling") count as the relations they
            // stand for when telling a question's path from a shortcut to its answer.
            let first = verify_pairs(&warmer, &pairs, &args, "pairs (pass 1 of 2)").await;
            let lexicon = Arc::new(warm::lexicon_of(&first.0));
            let warmer = Warmer::new(graph.clone(), gazetteer.clone()).with_lexicon(lexicon);
            let (verified, second) =
                verify_pairs(&warmer, &pairs, &args, "pairs (pass 2 of 2)").await;
            skipped.extend(second);
            (verified, pairs.len() + bad.len())
        }
        None => {
            let count = args.limit.unwrap_or(args.stars);
            let stars = graph
                .sample_stars(count, args.max_neighbors, args.seed)
                .await
                .context("cannot sample star schemas from the graph")?;
            let groups: usize = stars.iter().map(|s| warm::star_groups(s).len()).sum();
            println!(
                "sampled {} star schemas ({groups} relation groups, seed {}); questions {}",
                stars.len(),
                args.seed,
                if llm.is_some() {
                    "written by the language model"
                } else {
                    "from relation names (no language model configured)"
                }
            );
            let mut progress = Progress::new(!args.no_progress, "stars", stars.len());
            let mut verified = Vec::new();
            for (index, chunk) in stars.chunks(16).enumerate() {
                let (found, skips, calls) = warmer.star_entries(chunk, llm.as_deref()).await;
                llm_calls += calls;
                verified.extend(found);
                for (what, reason) in skips {
                    skipped.add(what, reason);
                }
                progress.tick(((index + 1) * 16).min(stars.len()), verified.len());
            }
            (verified, groups)
        }
    };
    let verified = candidates.len();
    let mut entries = warm::consolidate(candidates);
    if let Some(model) = &llm {
        // Lookups route by the model's ISR; warmed entries must sit in those buckets.
        for candidate in &mut entries {
            llm_calls += 1;
            match warm::isr_for(model.as_ref(), &candidate.entry.question).await {
                Ok(mut isr) => {
                    if isr.topic_entities.is_empty() {
                        isr.topic_entities = candidate.entry.isr.topic_entities.clone();
                    }
                    candidate.entry.isr = isr;
                }
                Err(error) => {
                    tracing::warn!(%error, "ISR extraction failed; entry kept in the default bucket")
                }
            }
            candidate.key = entry_key(&domain_of(&candidate.entry.isr), &candidate.entry.template);
        }
        entries = warm::consolidate(entries);
    }

    println!("checked      {inputs}");
    println!("verified     {verified}");
    skipped.print();
    if llm_calls > 0 {
        println!("LLM calls    {llm_calls}");
    }
    println!("entries      {} (one per question template)", entries.len());
    let Some(target) = target else {
        println!("dry run: nothing written");
        return Ok(());
    };
    let stats = warm::write_entries(
        target.store.as_ref(),
        PlanCacheConfig::default(),
        entries,
        &Principal::local(),
    )
    .await
    .with_context(|| format!("cannot write to {}", target.shown))?;
    println!("written      {}", stats.written);
    println!("unchanged    {}", stats.unchanged);
    if stats.evicted > 0 {
        println!("evicted      {}", stats.evicted);
    }
    println!(
        "cache now holds {} entries in {}",
        stats.total, target.shown
    );
    Ok(())
}

/// An import file read: the format it was read in, its pairs in file order, and its
/// unreadable lines with why.
struct Pairs {
    format: QaFormat,
    pairs: Vec<warm::QaPair>,
    bad: Vec<(usize, String)>,
}

fn read_pairs(path: &Path, format: QaFormat) -> anyhow::Result<Pairs> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read QA pairs from {}", path.display()))?;
    let format = format.resolve(&text);
    let (pairs, bad) = kgmesh_eval::import::parse_pairs(&text, format);
    if pairs.is_empty() {
        bail!(
            "{}: no readable QA pairs in {format} format ({} unreadable lines; expected \
             `question<TAB>answer1|answer2` (MetaQA), `question<TAB>answer(s)<TAB>gold path` \
             (IRN) or JSON lines {{\"question\": ..., \"answers\": [...]}})",
            path.display(),
            bad.len()
        );
    }
    Ok(Pairs { format, pairs, bad })
}

/// Entries in a plan cache file, of both kinds, for reports (`None` when it cannot be
/// read).
pub async fn count_file_entries(path: &Path) -> Option<usize> {
    FilePlanStore::new(path)
        .load_every()
        .await
        .ok()
        .map(|entries| entries.len())
}

/// The model that sorts plans by the question's intent (domain and aspect), as the
/// cache manager's lookups do: only when `llm.roles` lists the cache manager, so that
/// warmed plans and feedback land where lookups look.
fn intent_model(config: &Config) -> anyhow::Result<Option<Arc<dyn LanguageModel>>> {
    let asks_intent = config
        .llm
        .roles
        .iter()
        .any(|role| role == kgmesh_schemas::Role::CACHE_MANAGER);
    if asks_intent {
        super::ask::language_model(config)
    } else {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feedback_lines_parse_with_their_line_numbers() {
        let text = "{\"question\": \"who directed Heat\", \"correct\": false}\n\
                    \n\
                    {\"question\": \"who directed Heat\", \"answers\": [\"Michael Mann\"]}\n\
                    not json\n\
                    {\"question\": \"who directed Heat\"}\n\
                    {\"question\": \" \", \"correct\": true}\n\
                    {\"question\": \"q\", \"correct\": true, \"answers\": [\"a\"]}\n";
        let (verdicts, bad) = parse_feedback(text);
        assert_eq!(
            verdicts,
            vec![
                FeedbackItem {
                    line: 1,
                    question: "who directed Heat".to_owned(),
                    verdict: Feedback::Incorrect,
                },
                FeedbackItem {
                    line: 3,
                    question: "who directed Heat".to_owned(),
                    verdict: Feedback::Answers(vec!["Michael Mann".to_owned()]),
                },
            ]
        );
        let lines: Vec<usize> = bad.iter().map(|(line, _)| *line).collect();
        assert_eq!(lines, vec![4, 5, 6, 7], "{bad:?}");
        assert!(bad[3].1.contains("not both"), "{bad:?}");
    }
}
