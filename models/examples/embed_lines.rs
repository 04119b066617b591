//! Embeds each line of standard input with MiniLM and prints its vector as a JSON array,
//! one per line, for looking at cosines offline.
//!
//!   cargo run --release -p kgmesh-models --example embed_lines < texts.txt > vectors.jsonl

use std::io::{BufRead, Write};

use kgmesh_models::minilm::MiniLm;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let model = MiniLm::load(MiniLm::default_dir())?;
    let lines: Vec<String> = std::io::stdin().lock().lines().collect::<Result<_, _>>()?;
    let mut out = std::io::stdout().lock();
    for chunk in lines.chunks(64) {
        for vector in model.embed_blocking(chunk)? {
            let shown: Vec<String> = vector.iter().map(|x| format!("{x:.5}")).collect();
            writeln!(out, "[{}]", shown.join(","))?;
        }
    }
    Ok(())
}
