//! The local embedder's speed: kgmesh's encoder against candle's BERT over the same
//! all-MiniLM-L6-v2 files, in the same run.
//!
//! ```text
//! bash scripts/fetch-minilm
//! cargo bench -p kgmesh-benches --bench embed [-- --calls N]
//! ```
//!
//! For texts of 1, 5, 10 and 25 words it prints the p50 and p90 of one call with one
//! text (what a question waits for), then sentences per second embedding 1,000 texts
//! in one call (what indexing a graph's names costs), each for both forward passes with
//! the ratio, and the largest difference between their vectors.

use std::time::Instant;

use kgmesh_models::minilm::{reference::CandleMiniLm, MiniLm};

const WORDS: [&str; 25] = [
    "which", "films", "did", "the", "director", "of", "heat", "also", "write", "and", "who",
    "starred", "in", "them", "during", "years", "when", "their", "studio", "released", "several",
    "award", "winning", "crime", "dramas",
];

fn text(words: usize, variant: usize) -> String {
    (0..words)
        .map(|i| WORDS[(i + variant) % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ")
        + &format!(" {variant}")
}

fn percentile(sorted: &[f64], share: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * share).round() as usize]
}

/// p50 and p90 milliseconds of `calls` one-text calls.
fn single_calls(
    embed: &dyn Fn(&[String]) -> Vec<Vec<f32>>,
    words: usize,
    calls: usize,
) -> (f64, f64) {
    embed(&[text(words, 0)]);
    let mut times: Vec<f64> = (0..calls)
        .map(|variant| {
            let input = [text(words, variant)];
            let started = Instant::now();
            embed(&input);
            started.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    (percentile(&times, 0.5), percentile(&times, 0.9))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let calls: usize = args
        .iter()
        .position(|a| a == "--calls")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(200);
    let dir = MiniLm::default_dir();
    let (ours, theirs) = match (MiniLm::load(&dir), CandleMiniLm::load(&dir)) {
        (Ok(ours), Ok(theirs)) => (ours, theirs),
        (Err(error), _) | (_, Err(error)) => {
            eprintln!("no embedder figures: {error} (scripts/fetch-minilm fetches the model)");
            return;
        }
    };
    let ours_embed = |texts: &[String]| ours.embed_blocking(texts).expect("kgmesh encoder");
    let theirs_embed = |texts: &[String]| theirs.embed_blocking(texts).expect("candle BERT");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "all-MiniLM-L6-v2 from {}, {cores} cores, {calls} calls per row",
        dir.display()
    );
    println!("| one text of | kgmesh p50 / p90 ms | candle p50 / p90 ms | p50 ratio |");
    println!("|---|---|---|---|");
    for words in [1, 5, 10, 25] {
        let (a50, a90) = single_calls(&ours_embed, words, calls);
        let (b50, b90) = single_calls(&theirs_embed, words, calls);
        println!(
            "| {words} words | {a50:.2} / {a90:.2} | {b50:.2} / {b90:.2} | {:.2}× faster |",
            b50 / a50
        );
    }
    let batch: Vec<String> = (0..1000).map(|i| text(2 + i % 9, i)).collect();
    let started = Instant::now();
    let a = ours_embed(&batch);
    let ours_rate = batch.len() as f64 / started.elapsed().as_secs_f64();
    let started = Instant::now();
    let b = theirs_embed(&batch);
    let theirs_rate = batch.len() as f64 / started.elapsed().as_secs_f64();
    println!(
        "1,000 texts of 3-11 words in one call: kgmesh {ours_rate:.0}/s, candle {theirs_rate:.0}/s ({:.2}×)",
        ours_rate / theirs_rate
    );
    let largest = a
        .iter()
        .zip(&b)
        .flat_map(|(x, y)| x.iter().zip(y).map(|(p, q)| (p - q).abs()))
        .fold(0.0f32, f32::max);
    println!("largest difference between the two passes' vector components: {largest:.2e}");
}
