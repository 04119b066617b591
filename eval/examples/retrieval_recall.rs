//! Answer recall of the LLM-free retrieval tools, and their latency per call.
//!
//! For each dev question the gold topic entity is given (MetaQA: the bracketed name;
//! IRN sets: the first entity of the gold path — a hint used only here, to measure
//! retrieval apart from linking). The tools then run as the coordinator would run them
//! without a model: KG-Linker metapaths → path follower, the scoring retriever and the
//! agentic traverser. A question counts as recalled when any gold answer is among the
//! entities of the retrieved context (the topic entity only where a path leads back to
//! it); the context's size is measured in tokens. Figures: docs/evaluation.md.
//!
//! ```text
//! cargo run --release -p kgmesh-eval --example retrieval_recall -- \
//!     [--data DIR] --sample 0 --top-metapaths 5 --scoring-k 60 \
//!     [--synonym-cosine 0.5 [--embed-tools]] [--datasets pathquestion-3h] [--dump-misses DIR]
//! ```
//!
//! `--data` holds `metaqa/`, `pathquestion-2h/`, …; by default `KGMESH_DATA_DIR`, else
//! `shared/data` beside the workspace.

use std::{collections::HashSet, path::Path, sync::Arc, time::Instant};

use kgmesh_agents::{
    entity_linker::core::normalize,
    kg_linker::core::{graph_relations, metapath_text, rank_metapaths, EnumerateLimits},
    path_follower::core::{follow_metapath, WalkLimits},
    scoring::{
        core::{score_triples, ScoringConfig},
        relevance::{Relevance, TextVectors},
    },
    traverser::core::{traverse, TraverseConfig},
    verbalize::{context_text, evidence_entities},
};
use kgmesh_eval::qa::{self, QaFormat};
use kgmesh_models::minilm::MiniLm;
use kgmesh_schemas::{
    graph::{Entity, Triple},
    messages::context::{Evidence, EvidenceItem},
};
use kgmesh_stores::{embedded::GraphBuilder, EmbeddedGraph, GraphStore, NameMatch};

struct Question {
    text: String,
    topics: Vec<String>,
    answers: Vec<String>,
}

struct Options {
    data: String,
    sample: usize,
    seed: u64,
    top_metapaths: usize,
    scoring_k: usize,
    datasets: Vec<String>,
    /// Where to write the questions no tool recalled, with the metapaths tried.
    dump_misses_opt: Option<String>,
    /// Nodes per relation prefix expanded while enumerating metapaths.
    sample_per_prefix: usize,
    /// MiniLM word embeddings for metapath ranking (lexical + synonyms), with the
    /// cosine from which two words count as synonyms.
    synonym_cosine_opt: Option<f32>,
    /// Scoring retriever and traverser score by MiniLM question similarity, as the
    /// roles do with an embedder configured (needs `--synonym-cosine`).
    embed_tools: bool,
}

fn parse_options() -> Options {
    let mut options = Options {
        data: kgmesh_testkit::data::data_dir().display().to_string(),
        sample: 1000,
        seed: 7,
        top_metapaths: 3,
        scoring_k: 30,
        datasets: vec![
            "metaqa/1-hop".into(),
            "metaqa/2-hop".into(),
            "metaqa/3-hop".into(),
            "pathquestion-2h".into(),
            "pathquestion-3h".into(),
            "wc2014-2h".into(),
            "wc2014-conj".into(),
        ],
        dump_misses_opt: None,
        sample_per_prefix: EnumerateLimits::default().sample_per_prefix,
        synonym_cosine_opt: None,
        embed_tools: false,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut index = 0;
    while index < args.len() {
        let value = args.get(index + 1).cloned().unwrap_or_default();
        match args[index].as_str() {
            "--data" => options.data = value,
            "--sample" => options.sample = value.parse().unwrap_or(options.sample),
            "--seed" => options.seed = value.parse().unwrap_or(options.seed),
            "--top-metapaths" => {
                options.top_metapaths = value.parse().unwrap_or(options.top_metapaths)
            }
            "--scoring-k" => options.scoring_k = value.parse().unwrap_or(options.scoring_k),
            "--datasets" => options.datasets = value.split(',').map(str::to_owned).collect(),
            "--dump-misses" => options.dump_misses_opt = Some(value),
            "--synonym-cosine" => options.synonym_cosine_opt = value.parse().ok(),
            "--embed-tools" => {
                options.embed_tools = true;
                index += 1;
                continue;
            }
            "--sample-per-prefix" => {
                options.sample_per_prefix = value.parse().unwrap_or(options.sample_per_prefix)
            }
            other => eprintln!("ignoring unknown option {other}"),
        }
        index += 2;
    }
    options
}

fn load_kb(path: &Path) -> std::io::Result<EmbeddedGraph> {
    let text = std::fs::read_to_string(path)?;
    let mut builder = GraphBuilder::new();
    for line in text.lines() {
        let mut parts = line.split('\t');
        let (Some(head), Some(relation), Some(tail)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let head = builder.node(head.trim());
        let tail = builder.node(tail.trim());
        builder.add_edge(head, relation.trim(), tail);
    }
    Ok(builder.finish())
}

/// The questions of a dev file that name a topic entity, read by the parser `kgmesh
/// eval` uses (MetaQA: the bracketed name; IRN: the first node of each part of the gold
/// path). Unreadable lines are left out.
fn read_questions(text: &str, format: QaFormat) -> Vec<Question> {
    qa::read_lines(text, format)
        .filter_map(|(_line, record)| record.ok())
        .filter(|record| !record.topics.is_empty())
        .map(|record| Question {
            text: record.question.replace(['[', ']'], ""),
            topics: record.topics,
            answers: record.answers,
        })
        .collect()
}

/// A seeded Fisher–Yates sample (xorshift64*), so runs are repeatable.
fn sample<T>(mut items: Vec<T>, count: usize, seed: u64) -> Vec<T> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    let count = count.min(items.len());
    for i in 0..count {
        let j = i + (next() % (items.len() - i) as u64) as usize;
        items.swap(i, j);
    }
    items.truncate(count);
    items
}

fn percentile(sorted_us: &[u64], p: f64) -> f64 {
    if sorted_us.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * (sorted_us.len() - 1) as f64).round() as usize;
    sorted_us[rank.min(sorted_us.len() - 1)] as f64 / 1000.0
}

#[derive(Default)]
struct Tally {
    questions: usize,
    unresolved: usize,
    recalled_paths: usize,
    recalled_scoring: usize,
    recalled_traverser: usize,
    recalled_union: usize,
    tokens_union: Vec<usize>,
    linker_us: Vec<u64>,
    follower_us: Vec<u64>,
    scoring_us: Vec<u64>,
    traverser_us: Vec<u64>,
    /// Questions no tool recalled: question, gold answers, metapaths tried.
    misses: Vec<String>,
}

/// Whether the evidence holds a gold answer. A topic entity is in every piece of
/// evidence, so it counts only where a path leads back to it ("X's son's mother" is X).
fn hit(evidence: &[Evidence], starts: &HashSet<String>, gold: &HashSet<String>) -> bool {
    let other = evidence_entities(evidence)
        .iter()
        .map(|e| normalize(&e.name))
        .any(|name| !starts.contains(&name) && gold.contains(&name));
    other
        || evidence.iter().any(|e| match &e.item {
            EvidenceItem::Path(path) => {
                !path.steps.is_empty() && gold.contains(&normalize(&path.end().name))
            }
            _ => false,
        })
}

fn triples_evidence(source: &str, triples: Vec<(Triple, f32)>) -> Vec<Evidence> {
    triples
        .into_iter()
        .map(|(triple, score)| Evidence {
            source: source.to_owned(),
            score,
            item: EvidenceItem::Triple(triple),
        })
        .collect()
}

async fn run_dataset(
    store: &EmbeddedGraph,
    questions: Vec<Question>,
    options: &Options,
    words_opt: Option<&Arc<TextVectors>>,
) -> Tally {
    let mut tally = Tally::default();
    let walk = WalkLimits::default();
    let enumerate = EnumerateLimits {
        sample_per_prefix: options.sample_per_prefix,
        ..EnumerateLimits::default()
    };
    let scoring = ScoringConfig {
        top_k: options.scoring_k,
        ..ScoringConfig::default()
    };
    let traverse_config = TraverseConfig::default();
    for question in questions {
        tally.questions += 1;
        let resolved = store
            .resolve(&question.topics, NameMatch::Exact)
            .await
            .unwrap_or_default();
        let topics: Vec<Entity> = resolved.into_iter().flatten().collect();
        if topics.is_empty() {
            tally.unresolved += 1;
            continue;
        }
        let names: Vec<&str> = question.topics.iter().map(String::as_str).collect();
        let relevance = match words_opt.filter(|_| options.embed_tools) {
            Some(words) => Relevance::new(&question.text, &names, Some(words.clone())).await,
            None => Relevance::lexical(&question.text, &names),
        };
        let starts: HashSet<String> = topics.iter().map(|t| normalize(&t.name)).collect();
        let gold: HashSet<String> = question.answers.iter().map(|a| normalize(a)).collect();

        let started = Instant::now();
        let metapath_relevance = match (words_opt, options.synonym_cosine_opt) {
            (Some(words), Some(cosine)) => Relevance::lexical(&question.text, &names)
                .with_word_vectors(words.clone(), cosine)
                .with_graph_relations(graph_relations(store).await),
            _ => Relevance::lexical(&question.text, &names),
        };
        let metapaths = rank_metapaths(
            store,
            &metapath_relevance,
            &topics,
            &enumerate,
            options.top_metapaths,
        )
        .await
        .unwrap_or_default();
        tally.linker_us.push(started.elapsed().as_micros() as u64);

        let started = Instant::now();
        let mut path_evidence = Vec::new();
        for (rank, scored) in metapaths.iter().enumerate() {
            let paths = follow_metapath(store, &topics, &scored.metapath, &walk)
                .await
                .unwrap_or_default();
            path_evidence.extend(paths.into_iter().map(|path| Evidence {
                source: "path-follower".to_owned(),
                score: 1.0 / (1.0 + rank as f32),
                item: EvidenceItem::Path(path),
            }));
        }
        tally.follower_us.push(started.elapsed().as_micros() as u64);

        let started = Instant::now();
        let scored = score_triples(store, &relevance, &topics, &scoring)
            .await
            .unwrap_or_default();
        tally.scoring_us.push(started.elapsed().as_micros() as u64);
        let scoring_evidence = triples_evidence("scoring-retriever", scored);

        let started = Instant::now();
        let walked = traverse(
            store,
            &relevance,
            None,
            &question.text,
            &topics,
            &traverse_config,
            None,
        )
        .await
        .map(|t| t.triples)
        .unwrap_or_default();
        tally
            .traverser_us
            .push(started.elapsed().as_micros() as u64);
        let traverser_evidence = triples_evidence("agentic-traverser", walked);

        let by_paths = hit(&path_evidence, &starts, &gold);
        let by_scoring = hit(&scoring_evidence, &starts, &gold);
        let by_traverser = hit(&traverser_evidence, &starts, &gold);
        tally.recalled_paths += by_paths as usize;
        tally.recalled_scoring += by_scoring as usize;
        tally.recalled_traverser += by_traverser as usize;
        let mut union = path_evidence;
        union.extend(scoring_evidence);
        union.extend(traverser_evidence);
        tally.recalled_union += (by_paths || by_scoring || by_traverser) as usize;
        if !(by_paths || by_scoring || by_traverser) {
            let tried: Vec<String> = metapaths
                .iter()
                .map(|m| format!("{:.2} {}", m.score, metapath_text(&m.metapath)))
                .collect();
            tally.misses.push(format!(
                "{}\t{}\t{}",
                question.text,
                question.answers.join("|"),
                tried.join(" ; ")
            ));
        }
        tally.tokens_union.push(context_text(&union).1);
    }
    tally
}

fn report(name: &str, tally: &mut Tally) {
    let n = tally.questions.max(1) as f64;
    let pct = |x: usize| 100.0 * x as f64 / n;
    tally.tokens_union.sort_unstable();
    let mean_tokens =
        tally.tokens_union.iter().sum::<usize>() as f64 / tally.tokens_union.len().max(1) as f64;
    let median_tokens = tally
        .tokens_union
        .get(tally.tokens_union.len() / 2)
        .copied()
        .unwrap_or(0);
    println!(
        "{name:<18} n={:<5} unresolved={:<3} recall paths={:>6.2}% scoring={:>6.2}% traverser={:>6.2}% union={:>6.2}%  context tokens mean={:.0} median={}",
        tally.questions,
        tally.unresolved,
        pct(tally.recalled_paths),
        pct(tally.recalled_scoring),
        pct(tally.recalled_traverser),
        pct(tally.recalled_union),
        mean_tokens,
        median_tokens,
    );
    for (tool, samples) in [
        ("kg-linker (metapaths)", &mut tally.linker_us),
        ("path-follower", &mut tally.follower_us),
        ("scoring-retriever", &mut tally.scoring_us),
        ("agentic-traverser", &mut tally.traverser_us),
    ] {
        samples.sort_unstable();
        println!(
            "    {tool:<24} p50={:>8.3} ms  p99={:>8.3} ms",
            percentile(samples, 50.0),
            percentile(samples, 99.0)
        );
    }
}

#[tokio::main]
async fn main() {
    let options = parse_options();
    println!(
        "config: sample={} seed={} top_metapaths={} walk={:?} enumerate={:?} scoring={:?} traverser={:?} tool relevance={}",
        options.sample,
        options.seed,
        options.top_metapaths,
        WalkLimits::default(),
        EnumerateLimits {
            sample_per_prefix: options.sample_per_prefix,
            ..EnumerateLimits::default()
        },
        ScoringConfig {
            top_k: options.scoring_k,
            ..ScoringConfig::default()
        },
        TraverseConfig::default(),
        if options.embed_tools && options.synonym_cosine_opt.is_some() {
            "MiniLM question similarity"
        } else {
            "lexical"
        },
    );
    let words: Option<Arc<TextVectors>> = match options.synonym_cosine_opt {
        Some(cosine) => match MiniLm::load_async(MiniLm::default_dir()).await {
            Ok(model) => {
                println!("metapath relevance: lexical + MiniLM word synonyms (cosine >= {cosine})");
                Some(Arc::new(TextVectors::new(Arc::new(model), 200_000)))
            }
            Err(error) => {
                eprintln!("MiniLM not loaded ({error}); lexical metapath relevance");
                None
            }
        },
        None => None,
    };
    let mut loaded: Option<(String, Arc<EmbeddedGraph>)> = None;
    for dataset in &options.datasets {
        let dir = Path::new(&options.data).join(dataset);
        let kb_dir = if dataset.starts_with("metaqa") {
            Path::new(&options.data).join("metaqa")
        } else {
            dir.clone()
        };
        let kb_path = kb_dir.join("kb.tsv");
        let kb_key = kb_path.display().to_string();
        if loaded.as_ref().map(|(k, _)| k != &kb_key).unwrap_or(true) {
            let started = Instant::now();
            let graph = match load_kb(&kb_path) {
                Ok(graph) => graph,
                Err(error) => {
                    eprintln!("cannot read {kb_key}: {error}");
                    continue;
                }
            };
            println!(
                "loaded {kb_key}: {} nodes, {} edges in {:.2?}",
                graph.node_count(),
                graph.edge_count(),
                started.elapsed()
            );
            loaded = Some((kb_key, Arc::new(graph)));
        }
        let Some((_, graph)) = loaded.as_ref() else {
            continue;
        };
        let dev = match std::fs::read_to_string(dir.join("dev.txt")) {
            Ok(text) => text,
            Err(error) => {
                eprintln!("cannot read {}: {error}", dir.display());
                continue;
            }
        };
        let format = if dataset.starts_with("metaqa") {
            QaFormat::Metaqa
        } else {
            QaFormat::Irn
        };
        let questions = read_questions(&dev, format);
        let total = questions.len();
        let questions = if options.sample == 0 {
            questions
        } else {
            sample(questions, options.sample, options.seed)
        };
        let started = Instant::now();
        let mut tally = run_dataset(graph, questions, &options, words.as_ref()).await;
        println!(
            "{dataset}: {} of {total} dev questions in {:.1?}",
            tally.questions,
            started.elapsed()
        );
        report(dataset, &mut tally);
        if let Some(dir) = &options.dump_misses_opt {
            let file = Path::new(dir).join(format!("{}.misses.tsv", dataset.replace('/', "_")));
            if let Err(error) = std::fs::create_dir_all(dir)
                .and_then(|_| std::fs::write(&file, tally.misses.join("\n")))
            {
                eprintln!("cannot write {}: {error}", file.display());
            }
        }
    }
}
