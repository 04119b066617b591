//! `kgmesh cache warm`: fills the plan cache before the first question (CacheRAG §4.4),
//! from star schemas sampled from the graph or from imported, verified QA pairs;
//! `kgmesh cache stats`: what a plan cache holds.
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
    core::entry_key,
    persist::{FilePlanStore, KvPlanStore, PlanStore},
    warm::{self, Candidate, SkipReason, Warmer},
    CacheConfig as PlanCacheConfig,
};
use kgmesh_agents::qa::QaFormat;
use kgmesh_bus::{NatsBus, NatsOptions};
use kgmesh_models::LanguageModel;
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
    /// Count the entries of a plan cache, per domain and aspect.
    Stats(StoreArgs),
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
    store: StoreArgs,

    /// KG file or directory (default: `graph.path`).
    #[arg(long)]
    kg: Option<PathBuf>,

    /// Verified QA pairs, in any format `kgmesh eval` reads: MetaQA
    /// `question<TAB>answer1|answer2` lines (the topic entity in [brackets] when known),
    /// IRN lines of PathQuestion and WC2014 `question<TAB>answer(s)<TAB>gold path…` (the
    /// topic entity is the gold path's first node; the plan is still found from the
    /// answers), or JSON lines `{"question", "answers", ["topic"]}`.
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
        CacheCommand::Stats(args) => runtime.block_on(stats_command(config, args)),
    }
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
        let credentials = match &config.bus.nats_credentials_env {
            Some(variable) => Some(std::env::var(variable).with_context(|| {
                format!("bus.nats_credentials_env names {variable}, which is not set")
            })?),
            None => None,
        };
        let options = NatsOptions {
            connect_timeout: Duration::from_secs(5),
            client_name: Some("kgmesh cache".to_owned()),
            credentials,
        };
        let nats = NatsBus::connect(&url, options)
            .await
            .with_context(|| format!("is nats-server running at {url}?"))?;
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
        let domain = if entry.isr.domain.trim().is_empty() {
            "default".to_owned()
        } else {
            entry.isr.domain.trim().to_lowercase()
        };
        *buckets
            .entry((domain, entry.isr.aspect.trim().to_lowercase()))
            .or_default() += 1;
    }
    println!("{} entries in {}", entries.len(), target.shown);
    for ((domain, aspect), count) in buckets {
        let aspect = if aspect.is_empty() { "-" } else { &aspect };
        println!("  {domain} / {aspect}: {count}");
    }
    Ok(())
}

async fn load_kg(config: &Config, kg: Option<PathBuf>) -> anyhow::Result<Arc<dyn GraphStore>> {
    let Some(path) = kg.or_else(|| config.graph.path.clone()) else {
        bail!("cache warm needs the graph: pass --kg PATH (or set graph.path)");
    };
    super::ask::load_kg(&path).await
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

/// Verifies `pairs`, `args.concurrency` at a time, with progress on stderr.
async fn verify_pairs(
    warmer: &Warmer,
    pairs: &[warm::QaPair],
    args: &WarmArgs,
    what: &'static str,
) -> (Vec<Candidate>, BTreeMap<SkipReason, usize>) {
    let mut progress = Progress::new(!args.no_progress, what, pairs.len());
    let mut verified = Vec::new();
    let mut skipped: BTreeMap<SkipReason, usize> = BTreeMap::new();
    let mut done = 0usize;
    let mut results = futures::stream::iter(pairs.iter())
        .map(|pair| warmer.verify_pair(pair))
        .buffered(args.concurrency);
    while let Some(result) = results.next().await {
        done += 1;
        match result {
            Ok(candidate) => verified.push(candidate),
            Err(reason) => *skipped.entry(reason).or_default() += 1,
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
    // Read the input before the (slower) graph load, so a bad file fails fast.
    let import = match &args.import {
        Some(path) => Some(read_pairs(path, args.format.into())?),
        None => None,
    };
    let target = if args.dry_run {
        None
    } else {
        Some(open_store(&config, &args.store).await?)
    };
    let graph = load_kg(&config, args.kg.clone()).await?;
    let llm: Option<Arc<dyn LanguageModel>> = super::ask::language_model(&config)?;
    let gazetteer = Arc::new(
        warm::build_gazetteer(graph.as_ref())
            .await
            .context("cannot index the graph's names")?,
    );
    let warmer = Warmer::new(graph.clone(), gazetteer.clone());
    let mut skipped: BTreeMap<SkipReason, usize> = BTreeMap::new();
    let mut llm_calls = 0u32;

    let (candidates, inputs) = match import {
        Some(Pairs { format, pairs, bad }) => {
            let path = args.import.as_deref().unwrap_or(Path::new(""));
            if !bad.is_empty() {
                for (line, why) in bad.iter().take(5) {
                    eprintln!("kgmesh cache warm: {}:{line}: {why}", path.display());
                }
                *skipped.entry(SkipReason::BadLine).or_default() += bad.len();
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
            let (verified, reasons) =
                verify_pairs(&warmer, &pairs, &args, "pairs (pass 2 of 2)").await;
            for (reason, count) in reasons {
                *skipped.entry(reason).or_default() += count;
            }
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
                for (reason, count) in skips {
                    *skipped.entry(reason).or_default() += count;
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
            let domain = if candidate.entry.isr.domain.trim().is_empty() {
                "default".to_owned()
            } else {
                candidate.entry.isr.domain.trim().to_lowercase()
            };
            candidate.key = entry_key(&domain, &candidate.entry.template);
        }
        entries = warm::consolidate(entries);
    }

    println!("checked      {inputs}");
    println!("verified     {verified}");
    let skipped_total: usize = skipped.values().sum();
    println!("skipped      {skipped_total}");
    for (reason, count) in &skipped {
        println!("  {count:>6}  {reason}");
    }
    if llm_calls > 0 {
        println!("LLM calls    {llm_calls}");
    }
    println!("entries      {} (one per question template)", entries.len());
    let Some(target) = target else {
        println!("dry run: nothing written");
        return Ok(());
    };
    let stats = warm::write_entries(target.store.as_ref(), PlanCacheConfig::default(), entries)
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
    let (pairs, bad) = warm::parse_pairs(&text, format);
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

/// Entries in a plan cache file, for reports (`None` when it cannot be read).
pub async fn count_file_entries(path: &Path) -> Option<usize> {
    FilePlanStore::new(path)
        .load_all()
        .await
        .ok()
        .map(|entries| entries.len())
}
