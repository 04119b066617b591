//! Retrieval-agent figures on the MetaQA KB and a synthetic power-law KG: the shared
//! name index (build time, resident memory), entity-link latency per call (fuzzy; with
//! `--embed`, embedding and the union on MetaQA), and the latency of one call of every
//! LLM-free retrieval tool (the cores the roles run, without the bus), the pattern
//! matcher's included.
//!
//! ```text
//! cargo bench -p kgmesh-benches --bench agents                                   # 1M edges
//! KGMESH_BENCH_EDGES=10000000 cargo bench -p kgmesh-benches --bench agents
//! cargo bench -p kgmesh-benches --bench agents -- --embed    # + MiniLM links
//! ```
//! `--embed` embeds every node name with MiniLM (`scripts/fetch-minilm`) and times
//! embedding links and the union too. That is slow on a CPU (about 340 names/s on two
//! cores: 45 minutes for the 10M-edge graph's 875k names), so the
//! name-vector index is kept in `KGMESH_BENCH_VECTOR_CACHE` (default
//! `target/bench-cache`; empty: not kept), one file per graph, and read back by later
//! runs.
//! `KGMESH_METAQA` (default `metaqa/` of `shared/data` beside the workspace) holds `kb.tsv` and the
//! `{1,2,3}-hop/dev.txt` question files; `KGMESH_BENCH_SAMPLES` (default 2,000) sets the
//! link calls timed per figure, `KGMESH_BENCH_TOOL_SAMPLES` (default 600) the questions
//! each tool is timed on; `--skip-metaqa` / `--skip-synthetic` leave a graph out.
//!
//! Link mentions are node names (exact) and the same names with one character changed
//! (misspelled: a substitution, deletion or transposition), so both the exact path and
//! the trigram path of the index are timed; the share of misspellings whose top-3 holds
//! the intended node is printed as a sanity check. Tool questions on MetaQA are dev
//! questions with their bracketed topic entity; on the synthetic KG they are written
//! from a random two-hop walk ("what is the relation 7 of the relation 3 of entity 42").

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use kgmesh_agents::{
    entity_linker::core::{link, scan_all_names, EmbeddingLinker},
    kg_linker::core::{
        graph_relations, link_without_llm, rank_metapaths, EnumerateLimits, LinkerConfig,
    },
    path_follower::core::{
        expand_breadth, expand_depth, follow_metapath, shortest_paths, WalkLimits,
    },
    pattern_matcher::core::{match_question, MatchLimits},
    query_executor::core::execute,
    scoring::{
        core::{score_triples, ScoringConfig},
        relevance::Relevance,
    },
    traverser::core::{traverse, TraverseConfig},
};
use kgmesh_benches::{percentiles, resident_bytes, splitmix64, SyntheticKg};
use kgmesh_models::lexical::Gazetteer;
use kgmesh_schemas::{
    graph::{Direction, Entity, ScoredEntity, Value},
    messages::entity_linker::LinkMode,
    NodeId,
};
use kgmesh_stores::{
    embedded::load::{load_graph, LoadOptions},
    EmbeddedGraph, GraphStore, NeighborQuery, QueryLimits,
};

struct Options {
    samples: usize,
    tool_samples: usize,
    edges: u64,
    metaqa: PathBuf,
    embed: bool,
    /// Where `--embed` keeps name-vector indexes between runs (`None`: not kept).
    cache: Option<PathBuf>,
    skip_metaqa: bool,
    skip_synthetic: bool,
}

fn options() -> Options {
    let args: Vec<String> = std::env::args().collect();
    let env = |name: &str| std::env::var(name).ok();
    Options {
        samples: env("KGMESH_BENCH_SAMPLES")
            .and_then(|v| v.parse().ok())
            .unwrap_or(2_000),
        tool_samples: env("KGMESH_BENCH_TOOL_SAMPLES")
            .and_then(|v| v.parse().ok())
            .unwrap_or(600),
        edges: env("KGMESH_BENCH_EDGES")
            .and_then(|v| v.parse().ok())
            .unwrap_or(1_000_000),
        metaqa: env("KGMESH_METAQA")
            .map(PathBuf::from)
            .unwrap_or_else(|| kgmesh_testkit::data::data_path("metaqa")),
        embed: args.iter().any(|a| a == "--embed"),
        cache: match env("KGMESH_BENCH_VECTOR_CACHE") {
            Some(dir) if dir.is_empty() => None,
            Some(dir) => Some(PathBuf::from(dir)),
            None => Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-cache")),
        },
        skip_metaqa: args.iter().any(|a| a == "--skip-metaqa"),
        skip_synthetic: args.iter().any(|a| a == "--skip-synthetic"),
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn print_latency(what: &str, samples: Vec<Duration>) {
    if samples.is_empty() {
        println!("  {what:<44} no samples");
        return;
    }
    let count = samples.len();
    let p = percentiles(samples);
    println!(
        "  {what:<44} p50 {:>8.3} ms  p99 {:>8.3} ms  max {:>8.3} ms  (n={count})",
        ms(p.p50),
        ms(p.p99),
        ms(p.max)
    );
}

/// One character of `name` changed, deterministically from `state`.
fn misspell(name: &str, state: &mut u64) -> String {
    let mut chars: Vec<char> = name.chars().collect();
    if chars.len() < 4 {
        return name.to_owned();
    }
    let at = 1 + (splitmix64(state) as usize) % (chars.len() - 2);
    match splitmix64(state) % 3 {
        0 => chars[at] = if chars[at] == 'x' { 'q' } else { 'x' },
        1 => {
            chars.remove(at);
        }
        _ => chars.swap(at, at + 1),
    }
    chars.into_iter().collect()
}

/// A question for the tools: its text and linked topic entity.
struct Sample {
    question: String,
    topic: Entity,
}

fn metaqa_samples(graph: &EmbeddedGraph, dir: &Path, count: usize) -> Vec<Sample> {
    let mut out = Vec::new();
    for hop in ["1-hop", "2-hop", "3-hop"] {
        let Ok(text) = std::fs::read_to_string(dir.join(hop).join("dev.txt")) else {
            eprintln!("no {hop} dev questions under {}", dir.display());
            continue;
        };
        let mut state = 7u64;
        let lines: Vec<&str> = text.lines().collect();
        let mut taken = 0;
        for _ in 0..lines.len() {
            if taken >= count / 3 {
                break;
            }
            let line = lines[(splitmix64(&mut state) as usize) % lines.len()];
            let question = line.split('\t').next().unwrap_or_default();
            let (Some(open), Some(close)) = (question.find('['), question.find(']')) else {
                continue;
            };
            let Some(&node) = graph.lookup_exact(&question[open + 1..close]).first() else {
                continue;
            };
            out.push(Sample {
                question: question.replace(['[', ']'], ""),
                topic: graph.entity(node),
            });
            taken += 1;
        }
    }
    out
}

async fn synthetic_samples(graph: &EmbeddedGraph, count: usize) -> Vec<Sample> {
    let mut state = 11u64;
    let mut out = Vec::new();
    let query = NeighborQuery {
        direction: Direction::Out,
        relations: None,
        fanout_cap: 50,
    };
    let nodes = graph.node_count() as u64;
    for _ in 0..count * 20 {
        if out.len() >= count || nodes == 0 {
            break;
        }
        let start = NodeId(splitmix64(&mut state) % nodes);
        let Ok(first) = graph.neighbors(&[start], &query).await else {
            continue;
        };
        if first.triples.is_empty() {
            continue;
        }
        let hop = &first.triples[(splitmix64(&mut state) as usize) % first.triples.len()];
        let Ok(second) = graph.neighbors(&[hop.tail.id], &query).await else {
            continue;
        };
        let Some(next) = second
            .triples
            .get((splitmix64(&mut state) as usize) % second.triples.len().max(1))
        else {
            continue;
        };
        let words = |relation: &str| relation.replace('_', " ");
        out.push(Sample {
            question: format!(
                "what is the {} of the {} of {}",
                words(&next.relation),
                words(&hop.relation),
                hop.head.name
            ),
            topic: hop.head.clone(),
        });
    }
    out
}

async fn build_index(graph: &EmbeddedGraph) -> Arc<Gazetteer> {
    let before = resident_bytes().unwrap_or(0);
    let started = Instant::now();
    let names = scan_all_names(graph).await.expect("names scanned");
    let scanned = started.elapsed();
    let entities = names.len();
    let index = Gazetteer::build(names);
    let total = started.elapsed();
    let after = resident_bytes().unwrap_or(0);
    println!(
        "  name index: {entities} entities, {} distinct names; scan {:.2} s + build {:.2} s = {:.2} s; resident +{:.0} MiB ({:.0} B/entity)",
        index.len(),
        scanned.as_secs_f64(),
        (total - scanned).as_secs_f64(),
        total.as_secs_f64(),
        after.saturating_sub(before) as f64 / (1 << 20) as f64,
        after.saturating_sub(before) as f64 / entities.max(1) as f64,
    );
    Arc::new(index)
}

async fn link_figures(
    index: &Gazetteer,
    embedding_opt: Option<&EmbeddingLinker<'_>>,
    samples: usize,
) {
    let entities = index.entities();
    let mut state = 3u64;
    let picks: Vec<&Entity> = (0..samples)
        .map(|_| &entities[(splitmix64(&mut state) as usize) % entities.len()])
        .collect();
    let exact: Vec<String> = picks.iter().map(|e| e.name.clone()).collect();
    let misspelled: Vec<String> = picks
        .iter()
        .map(|e| misspell(&e.name, &mut state))
        .collect();
    let mut modes = vec![(LinkMode::Fuzzy, "fuzzy")];
    if embedding_opt.is_some() {
        modes.push((LinkMode::Embedding, "embedding"));
        modes.push((LinkMode::Both, "fuzzy ∪ embedding"));
    }
    for (mode, label) in modes {
        for (kind, mentions) in [("exact name", &exact), ("misspelled", &misspelled)] {
            let mut times = Vec::with_capacity(mentions.len());
            let mut found = 0usize;
            for (mention, intended) in mentions.iter().zip(&picks) {
                let started = Instant::now();
                let links = link(std::slice::from_ref(mention), index, embedding_opt, mode, 3)
                    .await
                    .expect("linked");
                times.push(started.elapsed());
                if links[0]
                    .candidates
                    .iter()
                    .any(|c| c.entity.id == intended.id || c.entity.name == intended.name)
                {
                    found += 1;
                }
            }
            print_latency(&format!("link 1 mention, {label}, {kind}"), times);
            println!(
                "      intended node (or a namesake) in the top 3: {:.1}%",
                100.0 * found as f64 / mentions.len().max(1) as f64
            );
        }
        // A request carries a whole batch: 10 mentions, half misspelled.
        let mut times = Vec::new();
        for chunk in exact.chunks(5).zip(misspelled.chunks(5)).take(samples / 10) {
            let batch: Vec<String> = chunk.0.iter().chain(chunk.1).cloned().collect();
            let started = Instant::now();
            link(&batch, index, embedding_opt, mode, 3)
                .await
                .expect("linked");
            times.push(started.elapsed());
        }
        print_latency(&format!("link 10 mentions, {label}"), times);
    }
}

async fn tool_figures(graph: &EmbeddedGraph, index: &Gazetteer, samples: &[Sample]) {
    let walk = WalkLimits::default();
    let enumerate = EnumerateLimits::default();
    let scoring = ScoringConfig {
        top_k: 60,
        ..ScoringConfig::default()
    };
    let traverse_config = TraverseConfig::default();
    let linker = LinkerConfig::default();
    let mut linker_full = Vec::new();
    let mut metapaths_only = Vec::new();
    let mut follower = Vec::new();
    let mut shortest = Vec::new();
    let mut depth = Vec::new();
    let mut breadth = Vec::new();
    let mut scorer = Vec::new();
    let mut traverser = Vec::new();
    let mut query = Vec::new();
    let mut matcher = Vec::new();
    let mut matcher_edges = Vec::new();
    let relations = graph_relations(graph).await;
    let match_limits = MatchLimits::default();
    let mut refusals = 0usize;
    for sample in samples {
        let topics = std::slice::from_ref(&sample.topic);
        let started = Instant::now();
        link_without_llm(graph, index, None, &sample.question, &[], &linker)
            .await
            .expect("kg-linker");
        linker_full.push(started.elapsed());

        let relevance = Relevance::lexical(&sample.question, &[sample.topic.name.as_str()]);
        let started = Instant::now();
        let ranked = rank_metapaths(graph, &relevance, topics, &enumerate, 5)
            .await
            .expect("metapaths");
        metapaths_only.push(started.elapsed());

        let Some(best) = ranked.first() else { continue };
        let started = Instant::now();
        let paths = follow_metapath(graph, topics, &best.metapath, &walk)
            .await
            .expect("paths");
        follower.push(started.elapsed());

        if let Some(target) = paths.first().and_then(|p| p.steps.last()) {
            let started = Instant::now();
            shortest_paths(graph, topics, std::slice::from_ref(&target.node), &walk)
                .await
                .expect("shortest paths");
            shortest.push(started.elapsed());
        }

        let first = &best.metapath.steps[0];
        let started = Instant::now();
        expand_depth(graph, topics, &first.relation, first.direction, 30, 900)
            .await
            .expect("σ_depth");
        depth.push(started.elapsed());

        let started = Instant::now();
        expand_breadth(graph, topics, &relevance, 30, 300)
            .await
            .expect("σ_breadth");
        breadth.push(started.elapsed());

        let started = Instant::now();
        score_triples(graph, &relevance, topics, &scoring)
            .await
            .expect("scoring");
        scorer.push(started.elapsed());

        let started = Instant::now();
        traverse(
            graph,
            &relevance,
            None,
            &sample.question,
            topics,
            &traverse_config,
            None,
        )
        .await
        .expect("traverser");
        traverser.push(started.elapsed());

        let started = Instant::now();
        let matched = match_question(
            graph,
            None,
            &relations,
            &sample.question,
            &[ScoredEntity {
                entity: sample.topic.clone(),
                score: 1.0,
            }],
            &match_limits,
        )
        .await
        .expect("pattern matcher");
        matcher.push(started.elapsed());
        matcher_edges.push(matched.edges_read);

        // The query executor on the query a model would write for the first step.
        let arrow = match first.direction {
            Direction::In => ("<-", "-"),
            _ => ("-", "->"),
        };
        let cypher = format!(
            "MATCH (h {{name: $name}}){}[:`{}`]{}(t) RETURN t.name LIMIT 100",
            arrow.0, first.relation, arrow.1
        );
        let params = [("name".to_owned(), Value::String(sample.topic.name.clone()))];
        let started = Instant::now();
        let result = execute(graph, &cypher, &params, &QueryLimits::default()).await;
        query.push(started.elapsed());
        if let Err(refusal) = result {
            if refusals == 0 {
                eprintln!("  query refused: {cypher}: {}", refusal.reason);
            }
            refusals += 1;
        }
    }
    println!("  tool calls over {} questions:", samples.len());
    print_latency("kg-linker LLM-free (mentions + metapaths)", linker_full);
    print_latency("  of which metapath enumeration + ranking", metapaths_only);
    print_latency("path-follower: follow best metapath", follower);
    print_latency("path-follower: shortest paths ≤ 3 hops", shortest);
    print_latency("σ_depth (one relation, K_degree 30)", depth);
    print_latency("σ_breadth (star scan 300, K_degree 30)", breadth);
    print_latency("scoring retriever (2 hops, top 60)", scorer);
    print_latency("agentic traverser (no LLM, ≤ 3 steps)", traverser);
    print_latency("query executor (1-hop Cypher)", query);
    print_latency("pattern matcher (LLM-free pattern, top 100)", matcher);
    matcher_edges.sort_unstable();
    println!(
        "      edges read per pattern: p50 {}, p99 {}, max {}",
        matcher_edges.get(matcher_edges.len() / 2).unwrap_or(&0),
        matcher_edges
            .get(matcher_edges.len() * 99 / 100)
            .unwrap_or(&0),
        matcher_edges.last().unwrap_or(&0)
    );
    if refusals > 0 {
        println!("      ({refusals} queries refused)");
    }
}

async fn metaqa(options: &Options) {
    let kb = options.metaqa.join("kb.tsv");
    let started = Instant::now();
    let graph = match load_graph(&kb, &LoadOptions::default()) {
        Ok((graph, _)) => graph,
        Err(error) => {
            eprintln!("MetaQA KB not loaded from {}: {error}", kb.display());
            return;
        }
    };
    println!(
        "MetaQA KB ({} nodes, {} edges; loaded in {:.2} s)",
        graph.node_count(),
        graph.edge_count(),
        started.elapsed().as_secs_f64()
    );
    let index = build_index(&graph).await;
    let embeddings = if options.embed {
        embeddings(
            &index,
            options
                .cache
                .as_ref()
                .map(|dir| dir.join("metaqa-minilm.kgv")),
        )
        .await
    } else {
        None
    };
    let linker = embeddings.as_ref().map(NameVectors::linker);
    link_figures(&index, linker.as_ref(), options.samples).await;
    let samples = metaqa_samples(&graph, &options.metaqa, options.tool_samples);
    tool_figures(&graph, &index, &samples).await;
}

/// The embedder and name-vector index that embedding links use.
struct NameVectors {
    embedder: Arc<dyn kgmesh_models::Embedder>,
    vectors: Arc<dyn kgmesh_stores::VectorIndex>,
}

impl NameVectors {
    fn linker(&self) -> EmbeddingLinker<'_> {
        EmbeddingLinker {
            embedder: self.embedder.as_ref(),
            vectors: self.vectors.as_ref(),
        }
    }
}

/// MiniLM name vectors for embedding links: every name embedded (batched, progress on
/// stderr) and indexed (inverted lists), each phase timed. With `cache`, the index is read from
/// that file when it holds one vector per name, and written there after a build, so the
/// long embedding of a million-name graph on a small CPU is paid once.
async fn embeddings(index: &Gazetteer, cache: Option<PathBuf>) -> Option<NameVectors> {
    use kgmesh_models::minilm::MiniLm;
    use kgmesh_stores::{vector::EmbeddedVectorIndex, Metric, VectorIndex};
    let model = match MiniLm::load_async(MiniLm::default_dir()).await {
        Ok(model) => model,
        Err(error) => {
            eprintln!("no embedding figures: {error} (scripts/fetch-minilm fetches the model)");
            return None;
        }
    };
    let embedder: Arc<dyn kgmesh_models::Embedder> = Arc::new(model);
    let names = index.entities().len();
    if let Some(path) = cache.as_deref().filter(|path| path.exists()) {
        let started = Instant::now();
        match EmbeddedVectorIndex::open(path) {
            Ok(cached)
                if cached.dim() == embedder.dim() && cached.len().await.ok() == Some(names) =>
            {
                println!(
                    "  name vectors: {names} read from {} in {:.1} s (delete it to re-embed)",
                    path.display(),
                    started.elapsed().as_secs_f64()
                );
                return Some(NameVectors {
                    embedder,
                    vectors: Arc::new(cached),
                });
            }
            Ok(_) => eprintln!(
                "  {} holds another graph's vectors; re-embedding",
                path.display()
            ),
            Err(error) => eprintln!("  {} not used ({error}); re-embedding", path.display()),
        }
    }
    let vectors = Arc::new(EmbeddedVectorIndex::new(embedder.dim(), Metric::Cosine));
    let started = Instant::now();
    let mut reported = Instant::now();
    let mut progress = |done: usize, total: usize| {
        if reported.elapsed() >= Duration::from_secs(30) || done == total {
            reported = Instant::now();
            let rate = done as f64 / started.elapsed().as_secs_f64().max(1e-3);
            eprintln!(
                "  embedding names: {done} / {total} ({rate:.0} names/s, {:.0} s left)",
                (total - done) as f64 / rate.max(1e-3)
            );
        }
    };
    if let Err(error) = kgmesh_agents::entity_linker::core::index_name_vectors(
        index,
        embedder.as_ref(),
        vectors.as_ref(),
        256,
        &mut progress,
    )
    .await
    {
        eprintln!("no embedding figures: {error}");
        return None;
    }
    let embedded = started.elapsed();
    let started = Instant::now();
    vectors.build_index();
    println!(
        "  name vectors: {names} names embedded in {:.1} s ({:.0} names/s), inverted lists built in {:.1} s",
        embedded.as_secs_f64(),
        names as f64 / embedded.as_secs_f64().max(1e-3),
        started.elapsed().as_secs_f64()
    );
    if let Some(path) = cache {
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .map_err(|error| error.to_string())
            .and_then(|()| vectors.save(&path).map_err(|error| error.to_string()));
        match written {
            Ok(()) => println!("  name vectors cached in {}", path.display()),
            Err(error) => eprintln!("  name vectors not cached in {}: {error}", path.display()),
        }
    }
    Some(NameVectors { embedder, vectors })
}

async fn synthetic(options: &Options) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("synthetic.tsv");
    let started = Instant::now();
    SyntheticKg::with_edges(options.edges)
        .write_tsv(&path)
        .expect("synthetic KG written");
    let written = started.elapsed();
    let started = Instant::now();
    let (graph, _) = load_graph(&path, &LoadOptions::default()).expect("synthetic KG loaded");
    println!(
        "synthetic KG ({} nodes, {} edges; written in {:.1} s, loaded in {:.1} s)",
        graph.node_count(),
        graph.edge_count(),
        written.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    let index = build_index(&graph).await;
    let embeddings = if options.embed {
        let file = format!("synthetic-{}-minilm.kgv", options.edges);
        embeddings(&index, options.cache.as_ref().map(|dir| dir.join(file))).await
    } else {
        None
    };
    let linker = embeddings.as_ref().map(NameVectors::linker);
    link_figures(&index, linker.as_ref(), options.samples).await;
    let samples = synthetic_samples(&graph, options.tool_samples).await;
    tool_figures(&graph, &index, &samples).await;
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let options = options();
    if std::env::args().any(|a| a == "--list") {
        // `cargo test --benches` asks for the list of benchmarks; there are none to run.
        return;
    }
    println!(
        "samples per figure: {}; release build: {}",
        options.samples,
        !cfg!(debug_assertions)
    );
    if !options.skip_metaqa {
        metaqa(&options).await;
    }
    if !options.skip_synthetic {
        synthetic(&options).await;
    }
}
