//! Plan-cache figures: lookup latency (BM25 + MMR + exact-template replay) at 10k and
//! 1M entries, insert throughput and memory, on synthetic but realistic entries:
//! question templates composed from a vocabulary of relation names (1 to 3 hops,
//! varied wording), routed to aspect buckets as an ISR would route them.
//!
//! ```text
//! cargo bench -p kgmesh-benches --bench cache                    # figures, then criterion
//! cargo bench -p kgmesh-benches --bench cache -- --figures-only
//! cargo bench -p kgmesh-benches --bench cache -- --file-store     # the file log only
//! KGMESH_BENCH_CACHE_SIZES=10000,100000 cargo bench -p kgmesh-benches --bench cache -- --figures-only
//! ```
//! Lookups come in two kinds, each timed over many random questions: a question whose
//! template is cached (the replay path) and a reworded question (a new template whose
//! words mostly are cached: BM25 + MMR examples only). The reworded questions are
//! also timed through the replay of a similar template (stand-in embeddings, see
//! `near_replay_figures`). Caches are routed two ways: by
//! aspect buckets, as a model's ISR routes them, and into one bucket, as the LLM-free
//! configuration does (one bucket holds at most `bucket_capacity` entries, so that
//! case stops at 10k).

use std::time::{Duration, Instant};

use criterion::Criterion;
use kgmesh_agents::cache_manager::{CacheConfig, PlanCache};
use kgmesh_benches::{percentiles, resident_bytes, splitmix64};
use kgmesh_schemas::{
    graph::{Direction, Entity, Metapath, RelationStep},
    messages::cache::{CacheEntry, Isr, Plan},
    NodeId,
};

const LOOKUPS: usize = 2_000;

/// Relation names as knowledge graphs spell them (several naming conventions).
const RELATIONS: &[&str] = &[
    "directed_by",
    "written_by",
    "starred_actors",
    "has_genre",
    "release_year",
    "in_language",
    "has_tags",
    "produced_by",
    "composed_by",
    "edited_by",
    "based_on",
    "sequel_of",
    "filmed_in",
    "distributed_by",
    "nominated_for",
    "won_award",
    "birthPlace",
    "deathPlace",
    "spouse",
    "child",
    "parent",
    "almaMater",
    "employer",
    "memberOf",
    "nationality",
    "occupation",
    "instrument",
    "recordLabel",
    "genre",
    "album",
    "performer",
    "capital",
    "country",
    "located_in",
    "population",
    "official_language",
    "currency",
    "head_of_state",
    "team",
    "coach",
    "position",
    "league",
    "stadium",
    "founded_by",
    "headquarters",
    "industry",
    "subsidiary",
    "ceo",
    "author",
    "publisher",
    "illustrator",
    "series",
    "character",
    "voiced_by",
    "developer",
    "platform",
    "designer",
    "architect",
    "owner",
    "operator",
];

const WH: &[&str] = &["what", "which", "who", "when", "where", "how many"];
const NOUNS: &[&str] = &[
    "movies",
    "films",
    "people",
    "actors",
    "songs",
    "albums",
    "books",
    "cities",
    "countries",
    "teams",
    "players",
    "companies",
    "games",
    "languages",
    "genres",
    "years",
    "awards",
    "writers",
    "directors",
    "artists",
];
const JOIN: &[&str] = &["of", "for", "in", "by", "with", "from", "that", "whose"];
const FILLER: &[&str] = &[
    "the", "also", "did", "were", "was", "are", "is", "has", "have", "same", "other", "first",
    "famous", "recent", "known", "listed",
];

fn words(relation: &str) -> String {
    let mut out = String::new();
    let mut previous_lower = false;
    for c in relation.chars() {
        if c == '_' {
            out.push(' ');
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower {
            out.push(' ');
        }
        previous_lower = c.is_lowercase();
        out.extend(c.to_lowercase());
    }
    out
}

fn pick<'a>(items: &[&'a str], state: &mut u64) -> &'a str {
    items[(splitmix64(state) % items.len() as u64) as usize]
}

/// One synthetic question: a template over 1–3 relations with one entity slot, its
/// plan.
struct Synthetic {
    template: String,
    relations: Vec<usize>,
}

fn synthetic(state: &mut u64) -> Synthetic {
    let hops = 1 + (splitmix64(state) % 3) as usize;
    let relations: Vec<usize> = (0..hops)
        .map(|_| (splitmix64(state) % RELATIONS.len() as u64) as usize)
        .collect();
    let mut parts: Vec<String> = vec![pick(WH, state).to_owned(), pick(NOUNS, state).to_owned()];
    for (i, relation) in relations.iter().rev().enumerate() {
        if i > 0 || splitmix64(state).is_multiple_of(2) {
            parts.push(pick(FILLER, state).to_owned());
        }
        parts.push(words(RELATIONS[*relation]));
        parts.push(pick(JOIN, state).to_owned());
        if i + 1 < relations.len() {
            parts.push(pick(FILLER, state).to_owned());
            parts.push(pick(NOUNS, state).to_owned());
        }
    }
    parts.push("<e>".to_owned());
    Synthetic {
        template: parts.join(" "),
        relations,
    }
}

/// What an ISR would call the question's intent: its first two relations.
fn aspect_of(relations: &[usize]) -> String {
    relations
        .iter()
        .take(2)
        .map(|r| words(RELATIONS[*r]))
        .collect::<Vec<_>>()
        .join(" / ")
}

fn entry(synthetic: &Synthetic, id: u64, aspect: bool) -> CacheEntry {
    let name = format!("Entity {id}");
    let question = synthetic.template.replace("<e>", &name);
    CacheEntry {
        question,
        template: synthetic.template.clone(),
        isr: Isr {
            aspect: if aspect {
                aspect_of(&synthetic.relations)
            } else {
                String::new()
            },
            ..Isr::default()
        },
        plan: Plan {
            entities: vec![Entity {
                id: NodeId(id),
                name,
            }],
            metapaths: vec![Metapath {
                steps: synthetic
                    .relations
                    .iter()
                    .map(|r| RelationStep {
                        relation: RELATIONS[*r].to_owned(),
                        direction: Direction::Out,
                    })
                    .collect(),
            }],
            cypher: Vec::new(),
        },
        answers: vec![format!("Answer {id}")],
        hits: 1,
        failures: 0,
    }
}

/// A cache of `size` distinct templates, and the templates it holds.
fn build(size: usize, aspects: bool, capacity: usize) -> (PlanCache, Vec<Synthetic>, Duration) {
    let mut cache = PlanCache::new(CacheConfig {
        bucket_capacity: capacity,
        ..CacheConfig::default()
    });
    let mut state = 0x5eed_u64;
    let mut held = Vec::with_capacity(size);
    let mut seen = std::collections::HashSet::with_capacity(size);
    let started = Instant::now();
    let mut id = 0u64;
    while held.len() < size {
        let question = synthetic(&mut state);
        if !seen.insert(question.template.clone()) {
            continue;
        }
        id += 1;
        cache.insert(entry(&question, id, aspects));
        held.push(question);
    }
    (cache, held, started.elapsed())
}

struct Query {
    question: String,
    entity: Entity,
    isr: Isr,
    /// The stored template the question was made from.
    base: String,
}

fn queries(held: &[Synthetic], kind: &str, aspects: bool, state: &mut u64) -> Vec<Query> {
    (0..LOOKUPS)
        .map(|i| {
            let base = &held[(splitmix64(state) % held.len() as u64) as usize];
            let template = match kind {
                // Same template, new entity: the replay path.
                "cached" => base.template.clone(),
                // A word swapped for another: a template never stored.
                _ => {
                    let mut tokens: Vec<&str> = base.template.split(' ').collect();
                    let position = (splitmix64(state) % (tokens.len() as u64 - 1)) as usize;
                    tokens[position] = pick(FILLER, state);
                    tokens.insert(1, "exactly");
                    tokens.join(" ")
                }
            };
            let name = format!("Queried {i}");
            Query {
                question: template.replace("<e>", &name),
                entity: Entity {
                    id: NodeId(10_000_000 + i as u64),
                    name,
                },
                isr: Isr {
                    aspect: if aspects {
                        aspect_of(&base.relations)
                    } else {
                        String::new()
                    },
                    ..Isr::default()
                },
                base: base.template.clone(),
            }
        })
        .collect()
}

fn figures(size: usize, aspects: bool) -> PlanCache {
    let before = resident_bytes();
    let (mut cache, held, took) = build(size, aspects, CacheConfig::default().bucket_capacity);
    let after = resident_bytes();
    let routing = if aspects {
        "aspect buckets by the first two relations (an ISR's routing)".to_owned()
    } else {
        "one bucket (LLM-free ISR)".to_owned()
    };
    println!(
        "\n{size} entries, {routing}: built in {:.2} s ({:.1} µs/insert){}",
        took.as_secs_f64(),
        took.as_secs_f64() * 1e6 / size as f64,
        match (before, after) {
            (Some(b), Some(a)) if a > b =>
                format!(", ≈{} bytes/entry resident", (a - b) / size as u64),
            _ => String::new(),
        }
    );
    assert_eq!(cache.len(), size, "no entry evicted");
    let mut state = 42u64;
    for kind in ["cached", "reworded"] {
        let asked = queries(&held, kind, aspects, &mut state);
        let mut samples = Vec::with_capacity(asked.len());
        let (mut replays, mut with_examples) = (0usize, 0usize);
        for query in &asked {
            let started = Instant::now();
            let found = cache.lookup(
                &query.question,
                std::slice::from_ref(&query.entity),
                &query.isr,
                5,
            );
            samples.push(started.elapsed());
            replays += usize::from(found.replay.is_some());
            with_examples += usize::from(!found.examples.is_empty());
        }
        let p = percentiles(samples);
        println!(
            "  lookup, {kind:<8} question: p50 {:>8.1} µs  p99 {:>8.1} µs  max {:>8.1} µs  (replay {:.0} %, examples {:.0} %)",
            p.p50.as_secs_f64() * 1e6,
            p.p99.as_secs_f64() * 1e6,
            p.max.as_secs_f64() * 1e6,
            100.0 * replays as f64 / asked.len() as f64,
            100.0 * with_examples as f64 / asked.len() as f64,
        );
    }
    near_replay_figures(&mut cache, &held, aspects, &mut state);
    cache
}

/// MiniLM's dimension.
const DIMENSION: usize = 384;

/// A stand-in template embedding: a pseudo-random unit vector fixed by the text.
fn stand_in_vector(text: &str) -> Vec<f32> {
    let mut state = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let vector: Vec<f32> = (0..DIMENSION)
        .map(|_| (splitmix64(&mut state) >> 40) as f32 / (1u64 << 24) as f32 - 0.5)
        .collect();
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    vector.into_iter().map(|x| x / norm).collect()
}

/// Replays of similar templates ([`PlanCache::near_replay`]): every template gets a
/// stand-in embedding, and reworded questions are asked with their stored template's
/// vector (cosine 1, so the BM25 share and the lexicon's checks decide). Times the
/// cache's part alone; embedding the question is the embedder's (MiniLM: a few ms).
fn near_replay_figures(cache: &mut PlanCache, held: &[Synthetic], aspects: bool, state: &mut u64) {
    let started = Instant::now();
    for (key, text) in cache.unembedded(usize::MAX) {
        cache.set_vector(&key, stand_in_vector(&text));
    }
    let embedded = started.elapsed();
    let asked = queries(held, "reworded", aspects, state);
    let mut samples = Vec::with_capacity(asked.len());
    let mut replays = 0usize;
    for query in &asked {
        let vector = stand_in_vector(&kgmesh_agents::cache_manager::core::embedding_text(
            &query.base,
        ));
        let entities = std::slice::from_ref(&query.entity);
        let started = Instant::now();
        let candidates = cache.near_candidates(&query.question, entities, &query.isr);
        let near = cache.near_replay(&candidates, entities, &vector);
        samples.push(started.elapsed());
        replays += usize::from(near.is_some());
    }
    let p = percentiles(samples);
    println!(
        "  near replay, reworded question: p50 {:>8.1} µs  p99 {:>8.1} µs  max {:>8.1} µs  (replayed {:.0} %; {} stand-in vectors of {DIMENSION} set in {:.1} s)",
        p.p50.as_secs_f64() * 1e6,
        p.p99.as_secs_f64() * 1e6,
        p.max.as_secs_f64() * 1e6,
        100.0 * replays as f64 / asked.len() as f64,
        cache.len(),
        embedded.as_secs_f64(),
    );
}

/// The embedded mode's plan-cache file: synced appends per second, and the load of a
/// log that needs compacting (20 writes of each of 2,000 entries), on this machine's
/// disk.
fn file_store_figures() {
    use kgmesh_agents::cache_manager::persist::{FilePlanStore, PlanStore};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("plans.jsonl");
    let mut state = 11u64;
    let entries: Vec<CacheEntry> = (0..2_000)
        .map(|id| entry(&synthetic(&mut state), id, true))
        .collect();
    let store = FilePlanStore::new(&path);
    let started = Instant::now();
    runtime.block_on(async {
        for (id, entry) in entries.iter().enumerate() {
            store.put(&format!("k{id}"), entry).await.expect("put");
        }
    });
    let appends = started.elapsed();
    println!(
        "\nplan cache file: {} synced appends in {:.2} s ({:.0} per second)",
        entries.len(),
        appends.as_secs_f64(),
        entries.len() as f64 / appends.as_secs_f64()
    );
    // 20 versions of every entry: the load compacts 40,000 lines into 2,000.
    let mut log = String::new();
    for round in 0..20 {
        for (id, entry) in entries.iter().enumerate() {
            let mut entry = entry.clone();
            entry.hits = round;
            let line = serde_json::json!({"op": "put", "key": format!("k{id}"), "entry": entry});
            log.push_str(&line.to_string());
            log.push('\n');
        }
    }
    std::fs::write(&path, log).expect("write the log");
    let started = Instant::now();
    let loaded = runtime
        .block_on(FilePlanStore::new(&path).load_all())
        .expect("load");
    println!(
        "plan cache file: load with compaction of 40,000 lines into {} entries: {:.0} ms",
        loaded.len(),
        started.elapsed().as_secs_f64() * 1e3
    );
}

fn main() {
    if std::env::args().any(|arg| arg == "--file-store") {
        file_store_figures();
        return;
    }
    let figures_only = std::env::args().any(|arg| arg == "--figures-only");
    let sizes: Vec<usize> = std::env::var("KGMESH_BENCH_CACHE_SIZES")
        .ok()
        .map(|value| {
            value
                .split(',')
                .filter_map(|s| s.trim().parse().ok())
                .collect()
        })
        .unwrap_or_else(|| vec![10_000, 1_000_000]);
    println!("plan cache lookup figures ({LOOKUPS} lookups per kind, k = 5, λ = 0.5)");
    let mut small = None;
    let capacity = CacheConfig::default().bucket_capacity;
    for size in &sizes {
        for aspects in [true, false] {
            if !aspects && *size > capacity {
                // One bucket holds at most `bucket_capacity` entries (LRU beyond), so a
                // single-bucket cache never reaches this size.
                println!(
                    "\n{size} entries, one bucket: not a reachable state (bucket capacity {capacity})"
                );
                continue;
            }
            let cache = figures(*size, aspects);
            if small.is_none() && aspects {
                small = Some(cache);
            }
        }
    }
    if figures_only {
        return;
    }
    let Some(mut cache) = small else { return };
    let mut criterion = Criterion::default()
        .configure_from_args()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    let mut state = 7u64;
    let template = synthetic(&mut state);
    let entity = Entity {
        id: NodeId(99_999_999),
        name: "Queried".to_owned(),
    };
    let isr = Isr {
        aspect: aspect_of(&template.relations),
        ..Isr::default()
    };
    let question = template.template.replace("<e>", &entity.name);
    criterion.bench_function(
        &format!("plan cache lookup ({} entries)", cache.len()),
        |b| b.iter(|| cache.lookup(&question, std::slice::from_ref(&entity), &isr, 5)),
    );
    criterion.final_summary();
}
