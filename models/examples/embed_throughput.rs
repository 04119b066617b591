//! Embedding throughput of the local all-MiniLM-L6-v2 on this machine.
//!
//! ```text
//! cargo run --release -p kgmesh-models --example embed_throughput -- [QUESTIONS_FILE] [COUNT]
//! ```
//! Embeds COUNT sentences (default 2,000): the first column of QUESTIONS_FILE when given
//! (e.g. a MetaQA dev file), else generated questions, and prints sentences per second
//! for the whole run and for single-sentence calls (the latency a question sees).

use std::time::Instant;

use kgmesh_models::minilm::MiniLm;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let file = args.next();
    let count: usize = args.next().map(|c| c.parse()).transpose()?.unwrap_or(2_000);
    let mut sentences: Vec<String> = match &file {
        Some(path) => std::fs::read_to_string(path)?
            .lines()
            .filter_map(|line| line.split('\t').next())
            .map(|q| q.replace(['[', ']'], ""))
            .filter(|q| !q.trim().is_empty())
            .take(count)
            .collect(),
        None => Vec::new(),
    };
    let subjects = [
        "movies",
        "films",
        "actors",
        "directors",
        "writers",
        "songs",
        "cities",
        "players",
    ];
    let mut i = 0;
    while sentences.len() < count {
        let subject = subjects[i % subjects.len()];
        sentences.push(format!(
            "which {subject} are related to item number {i} in the collection"
        ));
        i += 1;
    }

    let started = Instant::now();
    let model = MiniLm::load(MiniLm::default_dir())?;
    println!("load: {:.2} s", started.elapsed().as_secs_f64());

    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let mean_words = sentences
        .iter()
        .map(|s| s.split_whitespace().count())
        .sum::<usize>() as f64
        / sentences.len().max(1) as f64;
    println!(
        "{} sentences ({mean_words:.1} words on average), {threads} CPU threads",
        sentences.len()
    );

    // Warm-up: first calls allocate and fault pages in.
    model.embed_blocking(&sentences[..sentences.len().min(64)])?;

    let started = Instant::now();
    let vectors = model.embed_blocking(&sentences)?;
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "batched (32 per forward pass): {:.0} sentences/s ({} vectors in {seconds:.2} s)",
        vectors.len() as f64 / seconds,
        vectors.len()
    );

    let singles = sentences.len().min(200);
    let started = Instant::now();
    for sentence in &sentences[..singles] {
        model.embed_blocking(std::slice::from_ref(sentence))?;
    }
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "one sentence per call: {:.0} sentences/s ({:.1} ms per call)",
        singles as f64 / seconds,
        1000.0 * seconds / singles as f64
    );
    Ok(())
}
