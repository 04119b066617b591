//! Gazetteer build time and question latency at scale, and how often it finds a
//! question's topic entity.
//!
//! ```text
//! cargo run --release -p kgmesh-models --example gazetteer_scale -- KB_TSV QUESTIONS [EXTRA_NAMES]
//! ```
//! KB_TSV holds `head<TAB>relation<TAB>tail` lines (every head and tail is a name);
//! QUESTIONS holds `question<TAB>answers` lines with the topic entity in `[brackets]`
//! (the MetaQA format; the brackets are only used to score, the gazetteer sees the
//! question without them). EXTRA_NAMES (default 1,000,000) synthetic names are added to
//! show the index at millions of names.

use std::{collections::BTreeSet, time::Instant};

use kgmesh_models::lexical::{normalize, Gazetteer};
use kgmesh_schemas::NodeId;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let kb = args
        .next()
        .ok_or("usage: gazetteer_scale KB_TSV QUESTIONS [EXTRA_NAMES]")?;
    let questions = args
        .next()
        .ok_or("usage: gazetteer_scale KB_TSV QUESTIONS [EXTRA_NAMES]")?;
    let extra: usize = args
        .next()
        .map(|n| n.parse())
        .transpose()?
        .unwrap_or(1_000_000);

    let mut names: BTreeSet<String> = BTreeSet::new();
    for line in std::fs::read_to_string(&kb)?.lines() {
        let mut parts = line.split('\t');
        if let (Some(head), Some(_), Some(tail)) = (parts.next(), parts.next(), parts.next()) {
            names.insert(head.to_owned());
            names.insert(tail.to_owned());
        }
    }
    let graph_names = names.len();
    let syllables = [
        "ka", "lo", "mi", "ne", "ru", "ta", "vo", "shi", "den", "mar", "tel", "quo",
    ];
    let mut entries: Vec<(NodeId, String)> = names
        .into_iter()
        .enumerate()
        .map(|(i, n)| (NodeId(i as u64), n))
        .collect();
    for i in 0..extra {
        let mut name = String::new();
        let mut x = i * 7919 + 13;
        for word in 0..(2 + i % 3) {
            if word > 0 {
                name.push(' ');
            }
            for _ in 0..3 {
                name.push_str(syllables[x % syllables.len()]);
                x /= syllables.len();
                x += i + word;
            }
        }
        name.push_str(&format!(" {i}"));
        entries.push((NodeId((graph_names + i) as u64), name));
    }
    let total = entries.len();

    let started = Instant::now();
    let gazetteer = Gazetteer::build(entries);
    println!(
        "built over {total} names ({graph_names} from the graph, {extra} synthetic; {} distinct) in {:.2} s",
        gazetteer.len(),
        started.elapsed().as_secs_f64()
    );

    let mut asked = 0usize;
    let mut found = 0usize;
    let started = Instant::now();
    for line in std::fs::read_to_string(&questions)?.lines() {
        let Some(question) = line.split('\t').next() else {
            continue;
        };
        let (Some(open), Some(close)) = (question.find('['), question.find(']')) else {
            continue;
        };
        let topic = normalize(&question[open + 1..close]);
        let plain = question.replace(['[', ']'], "");
        asked += 1;
        let mentions = gazetteer.find_mentions(&plain);
        if mentions.iter().any(|m| {
            m.candidates
                .iter()
                .any(|c| normalize(&c.entity.name) == topic)
        }) {
            found += 1;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "{asked} questions: topic entity among the mentions in {found} ({:.1}%), {:.2} ms per question",
        100.0 * found as f64 / asked.max(1) as f64,
        1000.0 * seconds / asked.max(1) as f64
    );
    Ok(())
}
