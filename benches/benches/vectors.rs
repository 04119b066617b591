//! The embedded vector index at scale: build time of its inverted lists, search latency
//! against exact search in the same run, recall@10 of the lists against exact search
//! over 32-bit rows (and of exact search over the index's own rows, what holding them
//! at a lower precision alone loses), the rows' memory and the size of the saved index
//! — with rows held as 32-bit floats, half floats and 8-bit codes (`vectors.precision`).
//!
//! ```text
//! cargo bench -p kgmesh-benches --bench vectors                       # 100k and 875k vectors
//! KGMESH_BENCH_VECTORS=20000,100000 cargo bench -p kgmesh-benches --bench vectors
//! cargo bench -p kgmesh-benches --bench vectors -- --hnsw             # + the HNSW graph used before
//! cargo bench -p kgmesh-benches --bench vectors -- --minilm           # + MiniLM vectors of MetaQA
//! ```
//!
//! Vectors are synthetic, 384-dimensional (MiniLM's size), unit length, scattered
//! around one centre per 200 vectors the way embeddings of names cluster; queries are
//! drawn the same way, apart from the indexed vectors. `--hnsw` also builds the HNSW
//! graph (`instant-distance`, what the index used until 2026-11-26) over the smallest
//! collection, for the build-time ratio. `--minilm` embeds every node name of the MetaQA
//! KB (`KGMESH_METAQA`, default `metaqa/` of the data sets beside the workspace) with the
//! local MiniLM (`scripts/fetch-minilm`; a few minutes on two cores) and searches them
//! with the embeddings of 1-hop dev questions, the way an embedding link does: recall on
//! real embeddings rather than synthetic clusters. `KGMESH_BENCH_QUERIES` (default 200)
//! sets the queries per figure.

use std::time::{Duration, Instant};

use kgmesh_benches::{percentiles, splitmix64, Percentiles};
use kgmesh_stores::{
    vector::{EmbeddedVectorIndex, Precision},
    Metric, VectorIndex, VectorItem,
};

const DIM: usize = 384;
const PER_CENTRE: usize = 200;
const K: usize = 10;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let hnsw = args.iter().any(|a| a == "--hnsw");
    let sizes: Vec<usize> = std::env::var("KGMESH_BENCH_VECTORS")
        .unwrap_or_else(|_| "100000,875000".to_owned())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let queries: usize = std::env::var("KGMESH_BENCH_QUERIES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    println!(
        "vector index: {DIM}-d unit vectors, one centre per {PER_CENTRE}, {queries} queries, k = {K}, {} CPUs",
        std::thread::available_parallelism().map_or(1, usize::from)
    );
    println!("recall@10: of the search, against exact search over 32-bit rows; exact: every row of the same index scored");
    println!("| vectors | rows | lists | build | search p50 / p99 | exact p50 / p99 | recall@10 | exact recall@10 | row memory | file |");
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for &size in &sizes {
        runtime.block_on(measure(size, queries));
    }
    if args.iter().any(|a| a == "--minilm") {
        runtime.block_on(minilm(queries));
    }
    if hnsw {
        if let Some(&smallest) = sizes.iter().min() {
            hnsw_build(smallest);
        }
    }
}

/// The table's row for MiniLM embeddings of MetaQA's node names, searched with the
/// embeddings of dev questions.
async fn minilm(query_count: usize) {
    use kgmesh_models::{minilm::MiniLm, Embedder};
    use kgmesh_stores::embedded::load::{load_graph, LoadOptions};

    let dir = std::env::var_os("KGMESH_METAQA")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| kgmesh_testkit::data::data_path("metaqa"));
    let model = match MiniLm::load_async(MiniLm::default_dir()).await {
        Ok(model) => model,
        Err(error) => {
            eprintln!("no MiniLM row: {error} (scripts/fetch-minilm fetches the model)");
            return;
        }
    };
    let (graph, _) = match load_graph(&dir.join("kb.tsv"), &LoadOptions::default()) {
        Ok(loaded) => loaded,
        Err(error) => {
            eprintln!("no MiniLM row: {error}");
            return;
        }
    };
    let names: Vec<String> = (0..graph.node_count())
        .map(|node| {
            graph
                .name(node as kgmesh_stores::embedded::NodeIdx)
                .to_owned()
        })
        .collect();
    let mut items: Vec<VectorItem> = Vec::with_capacity(names.len());
    let started = Instant::now();
    for (batch, chunk) in names.chunks(256).enumerate() {
        let vectors = model.embed(chunk).await.expect("embed names");
        items.extend(
            vectors
                .into_iter()
                .enumerate()
                .map(|(i, vector)| VectorItem {
                    id: (batch * 256 + i) as u64,
                    vector,
                    payload: Vec::new(),
                }),
        );
        if batch % 40 == 0 {
            eprintln!("  embedding names: {} / {}", batch * 256, names.len());
        }
    }
    let embedded = started.elapsed();
    let questions: Vec<String> = std::fs::read_to_string(dir.join("1-hop/dev.txt"))
        .expect("MetaQA 1-hop dev questions")
        .lines()
        .filter_map(|line| line.split('\t').next())
        .map(|q| q.replace(['[', ']'], ""))
        .take(query_count)
        .collect();
    let queries = model.embed(&questions).await.expect("embed questions");
    let label = format!(
        "{} MiniLM names (MetaQA; embedded in {:.0} s)",
        names.len(),
        embedded.as_secs_f64()
    );
    rows_for(&label, model.dim(), &items, &queries).await;
}

/// One table row per precision for the same vectors and queries.
async fn rows_for(label: &str, dim: usize, items: &[VectorItem], queries: &[Vec<f32>]) {
    let truth = EmbeddedVectorIndex::new(dim, Metric::Cosine);
    truth.upsert(items.to_vec()).await.expect("upsert");
    for precision in [Precision::F32, Precision::F16, Precision::Int8] {
        let index = EmbeddedVectorIndex::new(dim, Metric::Cosine).with_precision(precision);
        for chunk in items.chunks(10_000) {
            index.upsert(chunk.to_vec()).await.expect("upsert");
        }
        let started = Instant::now();
        index.build_index();
        let build = started.elapsed();
        let (fast, exact, recall, exact_recall) = compare(&index, &truth, queries).await;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("bench.kgv");
        index.save(&path).expect("save");
        let bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
        println!(
            "| {label} | {precision} | {} | {:.1} s | {} / {} | {} / {} | {:.3} | {:.3} | {:.0} MB | {:.0} MB |",
            index.list_count(),
            build.as_secs_f64(),
            ms(fast.p50),
            ms(fast.p99),
            ms(exact.p50),
            ms(exact.p99),
            recall,
            exact_recall,
            index.row_bytes() as f64 / 1e6,
            bytes as f64 / 1e6
        );
    }
}

async fn measure(size: usize, query_count: usize) {
    let items: Vec<VectorItem> = clustered(size, 1)
        .into_iter()
        .enumerate()
        .map(|(id, vector)| VectorItem {
            id: id as u64,
            vector,
            payload: Vec::new(),
        })
        .collect();
    let queries = clustered(query_count, 2);
    rows_for(&size.to_string(), DIM, &items, &queries).await;
}

/// Each query searched through the index and exactly (the same index, every row
/// scored): the latencies of both, and recall@K of each against exact search over
/// `truth` (the same vectors in 32-bit rows).
async fn compare(
    index: &EmbeddedVectorIndex,
    truth: &EmbeddedVectorIndex,
    queries: &[Vec<f32>],
) -> (Percentiles, Percentiles, f64, f64) {
    let (mut fast, mut exact) = (Vec::new(), Vec::new());
    let (mut found, mut exact_found) = (0usize, 0usize);
    for query in queries {
        let started = Instant::now();
        let hits = index.search(query, K, None).await.expect("search");
        fast.push(started.elapsed());
        let started = Instant::now();
        let exact_hits = index.exact_search(query, K).expect("exact search");
        exact.push(started.elapsed());
        let truth: Vec<u64> = truth
            .exact_search(query, K)
            .expect("exact search")
            .iter()
            .map(|hit| hit.id)
            .collect();
        found += hits.iter().filter(|hit| truth.contains(&hit.id)).count();
        exact_found += exact_hits
            .iter()
            .filter(|hit| truth.contains(&hit.id))
            .count();
    }
    let total = (queries.len() * K).max(1) as f64;
    (
        percentiles(fast),
        percentiles(exact),
        found as f64 / total,
        exact_found as f64 / total,
    )
}

fn ms(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1e3)
}

/// `count` unit vectors around `count / PER_CENTRE` centres (noise half a centre's
/// length per dimension on average), deterministic for a seed; the centres are the
/// same for every seed.
fn clustered(count: usize, seed: u64) -> Vec<Vec<f32>> {
    let centres = (count / PER_CENTRE).max(1);
    let mut centre_state = 0x6b67_6d65_7368;
    let centre_vectors: Vec<Vec<f32>> = (0..centres.max(4_375))
        .map(|_| random_vector(&mut centre_state))
        .collect();
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (0..count)
        .map(|_| {
            let centre = &centre_vectors[(splitmix64(&mut state) % centres as u64) as usize];
            let noise = random_vector(&mut state);
            let mut vector: Vec<f32> = centre.iter().zip(noise).map(|(c, n)| c + 0.5 * n).collect();
            let norm = vector.iter().map(|v| v * v).sum::<f32>().sqrt();
            vector.iter_mut().for_each(|v| *v /= norm);
            vector
        })
        .collect()
}

fn random_vector(state: &mut u64) -> Vec<f32> {
    (0..DIM)
        .map(|_| (splitmix64(state) >> 40) as f32 / (1u64 << 23) as f32 - 1.0)
        .collect()
}

/// Build time of the HNSW graph the index used before, over `size` of the same vectors.
fn hnsw_build(size: usize) {
    #[derive(Clone)]
    struct Point(Vec<f32>);
    impl instant_distance::Point for Point {
        fn distance(&self, other: &Self) -> f32 {
            1.0 - self.0.iter().zip(&other.0).map(|(a, b)| a * b).sum::<f32>()
        }
    }
    let points: Vec<Point> = clustered(size, 1).into_iter().map(Point).collect();
    let ids: Vec<u64> = (0..size as u64).collect();
    let started = Instant::now();
    let _map = instant_distance::Builder::default()
        .seed(0x6b67_6d65_7368)
        .build(points, ids);
    println!(
        "HNSW (instant-distance) over the {size} vectors: built in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
