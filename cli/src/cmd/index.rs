//! `kgmesh index --text`: indexes documents for the text retriever (KET-RAG). Files are
//! cut into chunks and passages, every passage is linked to its keywords, the chunks
//! are ranked by PageRank over their neighbour graph, and with a model the most central
//! share β of them is read for a KG skeleton, which is written as a graph beside the
//! index (or into a Bolt database).
//!
//! ```text
//! kgmesh index --text docs/ notes.md --into embedded:text-index
//! kgmesh index --text more.md --into embedded:text-index        # adds to it
//! kgmesh index --text docs/ --into bolt://127.0.0.1:7687 --index-dir text-index
//! ```

use std::{
    path::{Path, PathBuf},
    sync::{atomic::AtomicBool, Arc},
    time::Instant,
};

use anyhow::{bail, Context as _};
use kgmesh_agents::text_retriever::{
    build::{add_files, describe, rank_chunks, FileLimits, FileStatus},
    skeleton::{core_count, extract_skeleton, link_triples, ExtractPlan},
};
use kgmesh_stores::{
    bolt::{NamedFact, SKELETON_PROPERTY},
    embedded::{
        load::{load_graph, LoadOptions},
        snapshot, GraphBuilder, NodeIdx,
    },
    text::{TextIndex, TextSettings, TEXT_FILE},
};

use crate::config::Config;

/// The skeleton graph's file name inside an index folder.
pub const SKELETON_FILE: &str = "skeleton.kgs";

#[derive(Debug, clap::Args)]
#[command(after_help = "Use the index:\n  \
kgmesh ask \"who designed the Sparrow engine\" --text-index DIR        (documents only)\n  \
kgmesh ask \"...\" --kg graph.tsv --text-index DIR                      (graph and documents)\n  \
kgmesh serve --embedded --kg graph.tsv --text-index DIR\n\
or set `text.index = \"DIR\"` in the configuration (KGMESH__TEXT__INDEX). \
See docs/text-retrieval.md.")]
pub struct IndexArgs {
    /// Files or folders (read recursively, in name order) to index.
    #[arg(long, required = true, num_args = 1..)]
    pub text: Vec<PathBuf>,
    /// `embedded:DIR` (index and skeleton graph in DIR) or `bolt://HOST:PORT` (the
    /// skeleton into that database, the index into --index-dir).
    #[arg(long)]
    pub into: String,
    /// Where the text index goes when --into is a Bolt database.
    #[arg(long)]
    pub index_dir: Option<PathBuf>,
    /// Tokens per chunk (a new index only).
    #[arg(long)]
    pub chunk_tokens: Option<u32>,
    /// Tokens shared by consecutive chunks (a new index only).
    #[arg(long)]
    pub overlap_tokens: Option<u32>,
    /// Times each chunk is halved into passages, m (a new index only).
    #[arg(long)]
    pub splits: Option<u32>,
    /// Neighbours per chunk in the chunk graph, lexical and by embedding each (k).
    #[arg(long)]
    pub knn: Option<u32>,
    /// Share of chunks, most central first, the model reads for the skeleton (β).
    #[arg(long, default_value_t = 0.8, value_parser = share)]
    pub beta: f32,
    /// Model calls this run may make at most (the skeleton stops there, most central
    /// chunks read; run again to go on).
    #[arg(long)]
    pub max_calls: Option<u64>,
    /// Skip the skeleton even when a model is configured.
    #[arg(long)]
    pub no_skeleton: bool,
    /// Add the triples of this KG file (any format `kgmesh load` reads) to the skeleton,
    /// each linked to the chunks that write both its ends: a curated KG of the same
    /// documents, or a gold KG to measure the entity channel with a perfect extractor.
    #[arg(long, value_name = "KG")]
    pub skeleton_from: Option<PathBuf>,
    /// No vectors even when an embedder is configured (lexical search only).
    #[arg(long)]
    pub no_vectors: bool,
    /// Files larger than this many MB are skipped and reported.
    #[arg(long, default_value_t = 64)]
    pub max_file_mb: u64,
    /// Start a new index instead of adding to the one in the folder.
    #[arg(long)]
    pub rebuild: bool,
    /// No progress lines on stderr.
    #[arg(long)]
    pub quiet: bool,
}

fn share(text: &str) -> Result<f32, String> {
    match text.parse::<f32>() {
        Ok(share) if (0.0..=1.0).contains(&share) => Ok(share),
        _ => Err(format!("`{text}` is not a share between 0 and 1")),
    }
}

enum Target {
    Embedded(PathBuf),
    Bolt { url: String, dir: PathBuf },
}

fn target(args: &IndexArgs) -> anyhow::Result<Target> {
    if let Some(dir) = args.into.strip_prefix("embedded:") {
        anyhow::ensure!(!dir.is_empty(), "`--into embedded:` needs a folder");
        return Ok(Target::Embedded(PathBuf::from(dir)));
    }
    if args.into.starts_with("bolt://") || args.into.starts_with("neo4j://") {
        let Some(dir) = args.index_dir.clone() else {
            bail!(
                "--into {} needs --index-dir DIR for the text index",
                args.into
            );
        };
        return Ok(Target::Bolt {
            url: args.into.clone(),
            dir,
        });
    }
    bail!(
        "`--into {}`: expected `embedded:DIR` or `bolt://HOST:PORT`",
        args.into
    )
}

/// Every file under `paths`, folders read recursively in name order; a path that does
/// not exist is reported, not fatal.
fn files_under(paths: &[PathBuf], missing: &mut Vec<String>) -> Vec<PathBuf> {
    fn walk(path: &Path, out: &mut Vec<PathBuf>, missing: &mut Vec<String>) {
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => {
                let mut entries: Vec<PathBuf> = match std::fs::read_dir(path) {
                    Ok(entries) => entries.filter_map(|e| e.ok().map(|e| e.path())).collect(),
                    Err(error) => {
                        missing.push(format!("{}: cannot list it: {error}", path.display()));
                        return;
                    }
                };
                entries.sort();
                for entry in entries {
                    walk(&entry, out, missing);
                }
            }
            Ok(_) => out.push(path.to_owned()),
            Err(error) => missing.push(format!("{}: {error}", path.display())),
        }
    }
    let mut out = Vec::new();
    for path in paths {
        walk(path, &mut out, missing);
    }
    out
}

pub fn run(config: Config, args: IndexArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(index(config, args))
}

async fn index(config: Config, args: IndexArgs) -> anyhow::Result<()> {
    let target = target(&args)?;
    // What to read, before anything is written: a path that does not exist is a typo to
    // fix, not an empty index to save.
    let mut unreadable = Vec::new();
    let files = files_under(&args.text, &mut unreadable);
    if let Some(first) = args.text.iter().find(|path| !path.exists()) {
        bail!(
            "--text {}: no such file or folder; nothing was indexed{}",
            first.display(),
            if unreadable.len() > 1 {
                format!(
                    " ({} paths cannot be read: {})",
                    unreadable.len(),
                    unreadable.join("; ")
                )
            } else {
                String::new()
            }
        );
    }
    if files.is_empty() {
        bail!(
            "--text {}: no files to index (the folders are empty{}); nothing was written",
            args.text
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" "),
            if unreadable.is_empty() {
                String::new()
            } else {
                format!(" or unreadable: {}", unreadable.join("; "))
            }
        );
    }
    let dir = match &target {
        Target::Embedded(dir) | Target::Bolt { dir, .. } => dir.clone(),
    };
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create the index folder {}", dir.display()))?;
    let index_path = dir.join(TEXT_FILE);
    let quiet = args.quiet;
    let mut progress = |line: String| {
        if !quiet {
            eprintln!("{line}");
        }
    };
    let mut index = match TextIndex::open_in(&dir) {
        _ if args.rebuild => None,
        Ok(index) => index,
        Err(error) => {
            return Err(error).with_context(|| {
                format!(
                    "cannot read the text index in {} (--rebuild starts anew)",
                    dir.display()
                )
            })
        }
    }
    .unwrap_or_else(|| {
        let defaults = TextSettings::default();
        TextIndex::new(TextSettings {
            chunk_tokens: args.chunk_tokens.unwrap_or(defaults.chunk_tokens),
            overlap_tokens: args.overlap_tokens.unwrap_or(defaults.overlap_tokens),
            splits: args.splits.unwrap_or(defaults.splits),
            knn: args.knn.unwrap_or(defaults.knn),
        })
    });
    if !index.files.is_empty() {
        let s = &index.settings;
        for (flag, given, have) in [
            ("--chunk-tokens", args.chunk_tokens, s.chunk_tokens),
            ("--overlap-tokens", args.overlap_tokens, s.overlap_tokens),
            ("--splits", args.splits, s.splits),
        ] {
            if given.is_some_and(|g| g != have) {
                bail!(
                    "{flag} {} differs from the index's {have}: add with the same chunking, or --rebuild",
                    given.unwrap_or_default()
                );
            }
        }
        progress(format!(
            "adding to the index in {} ({} files, {} passages)",
            dir.display(),
            index.files.len(),
            index.passages.len()
        ));
    }
    if let Some(k) = args.knn {
        index.settings.knn = k;
    }
    anyhow::ensure!(
        args.max_file_mb <= 4_000,
        "--max-file-mb {} is more than the 4000 MB a file may have",
        args.max_file_mb
    );
    let embedder = if args.no_vectors {
        None
    } else {
        super::ask::embedder(&config).await?
    };
    let llm = if args.no_skeleton {
        None
    } else {
        super::ask::language_model(&config)?
    };

    let started = Instant::now();
    for line in &unreadable {
        progress(format!("skipped {line}"));
    }
    let reports = add_files(
        &mut index,
        &files,
        embedder.as_deref(),
        FileLimits {
            max_bytes: args.max_file_mb * 1_000_000,
        },
        &mut progress,
    )
    .await?;
    let read_seconds = started.elapsed().as_secs_f64();
    if index.passages.is_empty() {
        let skipped: Vec<String> = reports
            .iter()
            .map(|r| format!("{}: {}", r.path, describe(&r.status)))
            .chain(unreadable.iter().cloned())
            .collect();
        bail!(
            "none of the {} files holds text to index, so no index was written:\n  {}",
            files.len(),
            skipped.join("\n  ")
        );
    }
    progress(format!(
        "ranking {} chunks (PageRank over the chunk graph)",
        index.chunks.len()
    ));
    rank_chunks(&mut index, &mut progress).await?;
    let indexed_seconds = started.elapsed().as_secs_f64();
    index
        .save(&index_path)
        .with_context(|| format!("cannot write {}", index_path.display()))?;

    // The skeleton, anytime: Ctrl-C, the call budget or a failing server stops it, and
    // what was read is saved.
    let mut extraction = None;
    match &llm {
        Some(llm) if !index.chunks.is_empty() => {
            let stop = Arc::new(AtomicBool::new(false));
            let flag = stop.clone();
            tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    flag.store(true, std::sync::atomic::Ordering::Relaxed);
                }
            });
            progress(format!(
                "skeleton: the model {} reads {} of {} chunks (β = {}), most central first",
                llm.name(),
                core_count(args.beta, index.chunks.len()),
                index.chunks.len(),
                args.beta
            ));
            let report = extract_skeleton(
                &mut index,
                llm.as_ref(),
                ExtractPlan {
                    beta: args.beta,
                    max_calls: args.max_calls,
                    max_reply_tokens: 400,
                },
                &stop,
                &mut progress,
            )
            .await;
            index
                .save(&index_path)
                .with_context(|| format!("cannot write {}", index_path.display()))?;
            extraction = Some(report);
        }
        _ => {}
    }
    let mut linked = None;
    if let Some(kg) = &args.skeleton_from {
        let owned = kg.clone();
        let (graph, _) =
            tokio::task::spawn_blocking(move || load_graph(&owned, &LoadOptions::default()))
                .await
                .context("the KG loader panicked")?
                .with_context(|| format!("cannot load {}", kg.display()))?;
        let mut triples = Vec::with_capacity(graph.edge_count());
        for node in 0..graph.node_count() {
            let node = node as NodeIdx;
            for (_, tail, edge) in graph.out_edges(node).iter() {
                let (_, relation, _) = graph.edge(edge);
                triples.push((
                    graph.name(node).to_owned(),
                    graph.relation_name(relation).to_owned(),
                    graph.name(tail).to_owned(),
                ));
            }
        }
        progress(format!(
            "skeleton: linking {} triples of {} to the chunks that write them",
            triples.len(),
            kg.display()
        ));
        let report = link_triples(
            &mut index,
            &triples,
            &format!("triples of {}", kg.display()),
        );
        index
            .save(&index_path)
            .with_context(|| format!("cannot write {}", index_path.display()))?;
        linked = Some(report);
    }
    let skeleton_written = write_skeleton(&config, &target, &dir, &index).await?;

    // Report.
    let count = |pick: fn(&FileStatus) -> bool| reports.iter().filter(|r| pick(&r.status)).count();
    println!("index      {}", index_path.display());
    println!(
        "files      {} indexed, {} replaced, {} unchanged, {} skipped",
        count(|s| matches!(s, FileStatus::Indexed { .. })),
        count(|s| matches!(s, FileStatus::Replaced { .. })),
        count(|s| matches!(s, FileStatus::Unchanged)),
        count(|s| matches!(s, FileStatus::Skipped(_))) + unreadable.len()
    );
    for report in &reports {
        if let FileStatus::Skipped(_) = report.status {
            println!("  {}: {}", report.path, describe(&report.status));
        }
    }
    for line in &unreadable {
        println!("  {line}");
    }
    let bytes = std::fs::metadata(&index_path)
        .with_context(|| format!("cannot read {}", index_path.display()))?
        .len();
    let text_mb = index.text_bytes() as f64 / 1e6;
    let s = &index.settings;
    println!(
        "settings   chunks of {} tokens (overlap {}), m = {} ({} passages per chunk), k = {}",
        s.chunk_tokens,
        s.overlap_tokens,
        s.splits,
        1u32 << s.splits,
        s.knn
    );
    println!(
        "text       {} files, {:.2} MB, {} chunks, {} passages, {} keywords",
        index.files.len(),
        text_mb,
        index.chunks.len(),
        index.passages.len(),
        index.keywords.len()
    );
    println!(
        "vectors    {}",
        match &index.embedder {
            Some(name) => format!("{name} ({} dimensions)", index.dim),
            None => "none (lexical search only)".to_owned(),
        }
    );
    let new_mb = new_bytes(&reports, &index) as f64 / 1e6;
    println!(
        "time       {:.1} s to read, cut, embed and rank{}",
        indexed_seconds,
        if new_mb > 0.0 {
            format!(
                " ({:.2} s per MB of the {new_mb:.2} MB this run read)",
                read_seconds / new_mb
            )
        } else {
            " (no new text)".to_owned()
        }
    );
    println!(
        "size       {:.2} MB{}",
        bytes as f64 / 1e6,
        if text_mb > 0.0 {
            format!(" ({:.2} MB per MB of text)", bytes as f64 / 1e6 / text_mb)
        } else {
            String::new()
        }
    );
    match (&extraction, &llm) {
        (Some(report), Some(llm)) => {
            println!(
                "skeleton   {} of {} core chunks read (β = {}), {} triples in all; this run: {} model calls ({}), {} prompt + {} completion tokens, {} unusable replies, {} facts dropped as not in their chunk{}",
                report.already_read + report.read_now,
                report.core_chunks,
                args.beta,
                index.skeleton.len(),
                report.calls,
                llm.name(),
                report.prompt_tokens,
                report.completion_tokens,
                report.failed,
                report.ungrounded,
                report
                    .stopped
                    .as_ref()
                    .map(|why| format!("; stopped early: {why}"))
                    .unwrap_or_default()
            );
        }
        _ if args.no_skeleton => println!("skeleton   skipped (--no-skeleton)"),
        _ => println!(
            "skeleton   skipped: no model configured (llm.base_url); the keyword channel works without one{}",
            if index.skeleton.is_empty() {
                String::new()
            } else {
                format!(", the skeleton holds {} triples", index.skeleton.len())
            }
        ),
    }
    if let (Some(report), Some(kg)) = (&linked, &args.skeleton_from) {
        println!(
            "linked     {} triples of {} to their chunks, {} written in none, {} held already",
            report.linked,
            kg.display(),
            report.unlinked,
            report.known
        );
    }
    if let Some(written) = skeleton_written {
        println!("graph      {written}");
    }
    Ok(())
}

/// Bytes of the files this run indexed.
fn new_bytes(
    reports: &[kgmesh_agents::text_retriever::build::FileReport],
    index: &TextIndex,
) -> u64 {
    reports
        .iter()
        .filter(|r| {
            matches!(
                r.status,
                FileStatus::Indexed { .. } | FileStatus::Replaced { .. }
            )
        })
        .filter_map(|r| index.files.iter().find(|f| f.path == r.path))
        .map(|f| f.bytes)
        .sum()
}

/// Writes the skeleton as a graph: the whole of it to `DIR/skeleton.kgs`, or into the
/// Bolt database, where the relationships tagged with the index folder's name are made
/// exactly the index's facts (only the difference is written: facts of replaced files
/// are deleted, new ones created, nodes found by name).
async fn write_skeleton(
    config: &Config,
    target: &Target,
    dir: &Path,
    index: &TextIndex,
) -> anyhow::Result<Option<String>> {
    match target {
        Target::Embedded(_) => {
            if index.skeleton.is_empty() {
                return Ok(None);
            }
            let mut builder = GraphBuilder::new();
            for fact in &index.skeleton {
                let head = builder.node(&fact.head);
                let tail = builder.node(&fact.tail);
                builder.add_edge(head, &fact.relation, tail);
            }
            let graph = builder.finish();
            let path = dir.join(SKELETON_FILE);
            let bytes = snapshot::save(&graph, &path)
                .with_context(|| format!("cannot write {}", path.display()))?;
            Ok(Some(format!(
                "{} ({} nodes, {} edges, {:.2} MB)",
                path.display(),
                graph.node_count(),
                graph.edge_count(),
                bytes as f64 / 1e6
            )))
        }
        Target::Bolt { url, .. } => {
            let tag = skeleton_tag(dir);
            let facts: Vec<NamedFact> = index
                .skeleton
                .iter()
                .map(|fact| NamedFact {
                    head: fact.head.clone(),
                    relation: fact.relation.clone(),
                    tail: fact.tail.clone(),
                })
                .collect();
            let settings = super::ask::bolt_settings(config, url);
            let stats = kgmesh_stores::bolt::sync_facts(&settings, &tag, &facts, 5_000)
                .await
                .with_context(|| format!("cannot write the skeleton to {url}"))?;
            Ok(Some(format!(
                "{url}, tagged {SKELETON_PROPERTY} = {tag:?}: {} facts created, {} removed, {} \
                 kept, {} held by the graph already; {} nodes created, {} removed",
                stats.created,
                stats.removed,
                stats.kept,
                stats.present,
                stats.nodes_created,
                stats.nodes_removed
            )))
        }
    }
}

/// The value that tags a text index's skeleton in a Bolt database: its folder's name,
/// so that two indexes in one database keep their facts apart.
fn skeleton_tag(dir: &Path) -> String {
    let absolute = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    absolute
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "text-index".to_owned())
}
