//! The KG skeleton (KET-RAG Alg. 3, steps 3–4): a model reads the most central chunks,
//! in PageRank order, and writes the facts they state. The work is anytime: chunks are
//! read most central first and every reply is kept as soon as it is parsed, so stopping
//! early (a call budget, a failing server, Ctrl-C) leaves the most central chunks read.
//! A chunk whose reply cannot be used stays unread and is counted. A fact is kept only
//! when both its ends are written in the chunk (a small model also "extracts" the
//! prompt's example, or facts it knows from elsewhere); the dropped ones are counted.

use std::{
    collections::HashMap,
    sync::atomic::{AtomicBool, Ordering},
};

use kgmesh_models::{parse, prompts, LanguageModel};
use kgmesh_stores::text::{SkeletonTriple, TextIndex};

use super::build::by_rank;

/// How much of the corpus the model reads.
#[derive(Debug, Clone, Copy)]
pub struct ExtractPlan {
    /// Share of chunks that are core chunks (β; 1 reads every chunk, as full Graph-RAG
    /// extraction does).
    pub beta: f32,
    /// Model calls this run may make at most.
    pub max_calls: Option<u64>,
    pub max_reply_tokens: u32,
}

/// What one extraction run did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExtractReport {
    pub core_chunks: usize,
    /// Core chunks read by an earlier run.
    pub already_read: usize,
    pub read_now: usize,
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub failed: u64,
    pub triples: usize,
    /// Facts dropped because an end of them is not in the chunk.
    pub ungrounded: usize,
    /// Why the run stopped before reading every core chunk.
    pub stopped: Option<ExtractStop>,
}

/// Why an extraction run stopped early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExtractStop {
    /// Interrupted (Ctrl-C); the next run goes on where this one stopped.
    Interrupted,
    /// The run's call budget is spent, after this many calls.
    CallBudget(u64),
    /// Three model calls in a row failed, the last with this error.
    Failing(String),
}

impl std::fmt::Display for ExtractStop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExtractStop::Interrupted => f.write_str("interrupted"),
            ExtractStop::CallBudget(calls) => write!(f, "the call budget ({calls}) is spent"),
            ExtractStop::Failing(error) => write!(f, "three calls in a row failed ({error})"),
        }
    }
}

/// The number of core chunks for `beta` over `chunks` chunks.
pub fn core_count(beta: f32, chunks: usize) -> usize {
    ((beta.clamp(0.0, 1.0) as f64) * chunks as f64).ceil() as usize
}

/// Reads the unread core chunks with `llm`, most central first.
pub async fn extract_skeleton(
    index: &mut TextIndex,
    llm: &dyn LanguageModel,
    plan: ExtractPlan,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(String),
) -> ExtractReport {
    let order = by_rank(index);
    let core = core_count(plan.beta, order.len());
    let mut report = ExtractReport {
        core_chunks: core,
        ..ExtractReport::default()
    };
    index.extractor = Some(llm.name().to_owned());
    let mut consecutive_errors = 0;
    for &chunk in &order[..core] {
        if index.chunks[chunk].extracted {
            report.already_read += 1;
            continue;
        }
        if stop.load(Ordering::Relaxed) {
            report.stopped = Some(ExtractStop::Interrupted);
            break;
        }
        if plan.max_calls.is_some_and(|max| report.calls >= max) {
            report.stopped = Some(ExtractStop::CallBudget(report.calls));
            break;
        }
        let own = index.passages_of(chunk);
        let text = index.passages[own.clone()]
            .iter()
            .map(|p| p.text.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        report.calls += 1;
        index.extraction.calls += 1;
        let reply = match llm
            .chat(prompts::extract::extract(&text, plan.max_reply_tokens))
            .await
        {
            Ok(reply) => reply,
            Err(error) => {
                report.failed += 1;
                index.extraction.failed += 1;
                consecutive_errors += 1;
                progress(format!("chunk {chunk}: the model call failed: {error}"));
                if consecutive_errors >= 3 {
                    report.stopped = Some(ExtractStop::Failing(error.to_string()));
                    break;
                }
                continue;
            }
        };
        consecutive_errors = 0;
        report.prompt_tokens += reply.usage.prompt_tokens;
        report.completion_tokens += reply.usage.completion_tokens;
        index.extraction.prompt_tokens += reply.usage.prompt_tokens;
        index.extraction.completion_tokens += reply.usage.completion_tokens;
        let triples = match parse::pattern::parse(&reply.text) {
            Ok(triples) => triples,
            Err(error) => {
                report.failed += 1;
                index.extraction.failed += 1;
                progress(format!("chunk {chunk}: unusable reply ({error})"));
                continue;
            }
        };
        let passages: Vec<(u32, String)> = own
            .map(|p| (p as u32, index.passages[p].text.to_lowercase()))
            .collect();
        let chunk_text = text.to_lowercase();
        for triple in triples {
            let (head, relation, tail) = (
                triple.head.trim().to_owned(),
                triple.relation.trim().to_owned(),
                triple.tail.trim().to_owned(),
            );
            if head.is_empty()
                || relation.is_empty()
                || tail.is_empty()
                || parse::pattern::is_unknown(&head)
                || parse::pattern::is_unknown(&tail)
            {
                continue;
            }
            // Both ends must be in the chunk; the fact is linked to the passages
            // that name either.
            let (h, t) = (head.to_lowercase(), tail.to_lowercase());
            if !chunk_text.contains(&h) || !chunk_text.contains(&t) {
                report.ungrounded += 1;
                continue;
            }
            let linked: Vec<u32> = passages
                .iter()
                .filter(|(_, text)| text.contains(&h) || text.contains(&t))
                .map(|(p, _)| *p)
                .collect();
            index.skeleton.push(SkeletonTriple {
                head,
                relation,
                tail,
                passages: linked,
            });
            report.triples += 1;
        }
        index.chunks[chunk].extracted = true;
        report.read_now += 1;
        if report.read_now.is_multiple_of(10) {
            progress(format!(
                "skeleton: {} of {} core chunks read, {} triples",
                report.read_now + report.already_read,
                core,
                index.skeleton.len()
            ));
        }
    }
    report
}

/// What [`link_triples`] did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LinkReport {
    pub linked: usize,
    /// Triples no chunk writes both ends of.
    pub unlinked: usize,
    /// Triples the skeleton already held (added by an earlier run).
    pub known: usize,
}

/// Adds known triples (a curated KG of the same documents, or a gold one to measure the
/// entity channel with a perfect extractor) to the skeleton: each is linked, like a
/// model's fact, to the chunks that write both its ends and there to the passages that
/// name either. No chunk counts as read by a model.
pub fn link_triples(
    index: &mut TextIndex,
    triples: &[(String, String, String)],
    source: &str,
) -> LinkReport {
    let positions = index.keyword_positions();
    let mut lowered: HashMap<u32, String> = HashMap::new();
    let mut report = LinkReport::default();
    let mut held: std::collections::HashSet<(String, String, String)> = index
        .skeleton
        .iter()
        .map(|f| (f.head.clone(), f.relation.clone(), f.tail.clone()))
        .collect();
    for (head, relation, tail) in triples {
        if !held.insert((head.clone(), relation.clone(), tail.clone())) {
            report.known += 1;
            continue;
        }
        let (h, t) = (head.to_lowercase(), tail.to_lowercase());
        // Candidate chunks: those holding the head's rarest keyword (or the tail's).
        let rarest = |name: &str| {
            kgmesh_models::lexical::text::keywords(name)
                .iter()
                .filter_map(|k| positions.get(k))
                .map(|&k| &index.postings[k as usize])
                .min_by_key(|p| p.len())
        };
        let Some(posting) = rarest(head).or_else(|| rarest(tail)) else {
            report.unlinked += 1;
            continue;
        };
        let mut chunks: Vec<u32> = posting
            .iter()
            .map(|&p| index.passages[p as usize].chunk)
            .collect();
        chunks.dedup();
        let mut linked = Vec::new();
        for chunk in chunks {
            let own = index.passages_of(chunk as usize);
            let text = lowered.entry(chunk).or_insert_with(|| {
                index.passages[own.clone()]
                    .iter()
                    .map(|p| p.text.to_lowercase())
                    .collect::<Vec<_>>()
                    .join(" ")
            });
            if !text.contains(&h) || !text.contains(&t) {
                continue;
            }
            for p in own {
                let passage = index.passages[p].text.to_lowercase();
                if passage.contains(&h) || passage.contains(&t) {
                    linked.push(p as u32);
                }
            }
        }
        if linked.is_empty() {
            report.unlinked += 1;
            continue;
        }
        linked.sort_unstable();
        linked.dedup();
        index.skeleton.push(SkeletonTriple {
            head: head.clone(),
            relation: relation.clone(),
            tail: tail.clone(),
            passages: linked,
        });
        report.linked += 1;
    }
    index.extractor = Some(source.to_owned());
    report
}
