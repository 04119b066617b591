//! Prints the cosine of each word against each label (MiniLM), for looking at which
//! question words sit near which relation names.
//!
//!   cargo run --release -p kgmesh-models --example word_cosines -- \
//!       "directed by,written by,starred actors" movies mom kid

use kgmesh_models::minilm::MiniLm;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let labels: Vec<String> = args
        .next()
        .unwrap_or_default()
        .split(',')
        .map(|l| l.trim().to_owned())
        .collect();
    let words: Vec<String> = args.collect();
    let model = MiniLm::load(MiniLm::default_dir())?;
    let label_vectors = model.embed_blocking(&labels)?;
    let word_vectors = model.embed_blocking(&words)?;
    for (word, w) in words.iter().zip(&word_vectors) {
        let mut row: Vec<(f32, &str)> = labels
            .iter()
            .zip(&label_vectors)
            .map(|(l, v)| (w.iter().zip(v).map(|(a, b)| a * b).sum(), l.as_str()))
            .collect();
        row.sort_by(|a, b| b.0.total_cmp(&a.0));
        let shown: Vec<String> = row.iter().map(|(c, l)| format!("{l} {c:.2}")).collect();
        println!("{word:>12}: {}", shown.join(" | "));
    }
    Ok(())
}
