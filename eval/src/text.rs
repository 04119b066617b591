//! `kgmesh eval --text-index DIR`: question answering from documents alone, through the
//! text retriever's search (no graph). Per channel setting it measures coverage (a gold
//! answer appears in the retrieved context, the paper's measure) and the retrieval
//! latency, and the first answer of a reader (Hits@1): with a model configured, the
//! model reading the context with the summarizer's prompt (its first answer written in
//! the context counts); without one, the summarizer's own rule, which reads passages
//! without a model (`kgmesh_agents::summarizer::reader`). Everything is printed beside
//! the configuration it ran with.

use std::{path::PathBuf, sync::Arc, time::Instant};

use anyhow::Context as _;
use kgmesh_agents::{
    scoring::{answer_type, relevance::TextVectors, TEXT_VECTOR_CACHE},
    summarizer::{
        core::SummaryRule,
        reader,
        spans::{SpanExample, SpanExampleRow},
        Summarizer,
    },
    text_retriever::{
        retrieve::{Channels, SearchSettings},
        role::{excerpts, load_text},
    },
};
use kgmesh_models::{parse, prompts, Embedder, LanguageModel};
use kgmesh_schemas::messages::{context::Context, summarizer::SummarizeRequest};

use super::{
    calibration::{withholding, withholding_table, Calibration, Replied, WITHHOLDING_THRESHOLDS},
    dataset::Question,
    normalize::{contains_phrase, normalize},
};

/// One text evaluation.
pub struct TextRun {
    pub dir: PathBuf,
    pub channels: Vec<Channels>,
    pub settings: SearchSettings,
    pub embedder: Option<Arc<dyn Embedder>>,
    pub llm: Option<Arc<dyn LanguageModel>>,
    /// The summarizer's rule, the reader without a model.
    pub rule: SummaryRule,
    pub progress: bool,
    /// How the questions were chosen, for the printed configuration.
    pub selection: String,
    /// Where to write the reader's candidate spans per question (no model only).
    pub span_examples: Option<PathBuf>,
    /// A folder for `summary.md` (what is printed) and `answers.jsonl` (each question's
    /// answers beside its gold ones), made if missing; nothing is written without one.
    pub out: Option<PathBuf>,
}

/// What the run prints, kept to be written to `summary.md` as well.
#[derive(Default)]
struct Tee {
    text: String,
}

impl Tee {
    fn push(&mut self, text: &str) {
        print!("{text}");
        self.text.push_str(text);
    }
}

/// `println!` onto a [`Tee`].
macro_rules! say {
    ($tee:expr) => {
        $tee.push("\n")
    };
    ($tee:expr, $($arg:tt)*) => {
        $tee.push(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// One question's reply in `answers.jsonl`.
#[derive(serde::Serialize)]
struct AnswerLine<'a> {
    channels: String,
    id: &'a str,
    source: &'a str,
    question: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    asks: Option<&'a str>,
    gold: &'a [String],
    /// The answers given, first first (with a model: its first answer written in the
    /// context, the one scored).
    answers: Vec<String>,
    confidence: Option<f32>,
    /// The first answer is a gold one.
    right: bool,
    /// A gold answer is written in the retrieved context.
    covered: bool,
}

/// Scores of one channel setting.
#[derive(Debug, Default)]
struct Scores {
    covered: usize,
    hits: usize,
    unusable: usize,
    /// Questions with answers (Hits@1 and coverage count these).
    answerable: usize,
    /// Questions the documents cannot answer, and how many of them got no answer.
    unanswerable: usize,
    declined: usize,
    /// Per question type (JSONL's `type`): questions, answerable ones and their hits,
    /// unanswerable ones declined.
    by_kind: std::collections::BTreeMap<String, [usize; 4]>,
    /// Per type asked (JSONL's `asks`): questions, hits, questions whose type the
    /// reader reads as asked, first answers of the type asked, gold answers the reader
    /// types as asked.
    by_asks: std::collections::BTreeMap<String, AsksScores>,
    latencies_ms: Vec<f64>,
    reader_ms: Vec<f64>,
    tokens: usize,
    /// Each answer's confidence, when it carries one, and whether it is right (an
    /// answer to an unanswerable question is wrong).
    confidences: Vec<(f32, bool)>,
    /// Every question's reply, for what `--min-confidence` would withhold.
    replies: Vec<Replied>,
}

/// Answer-typing figures for one asked type.
#[derive(Debug, Default, Clone, Copy)]
struct AsksScores {
    questions: usize,
    answerable: usize,
    hits: usize,
    question_typed: usize,
    answered: usize,
    first_typed: usize,
    gold_typed: usize,
}

impl AsksScores {
    fn add(&mut self, other: &AsksScores) {
        self.questions += other.questions;
        self.answerable += other.answerable;
        self.hits += other.hits;
        self.question_typed += other.question_typed;
        self.answered += other.answered;
        self.first_typed += other.first_typed;
        self.gold_typed += other.gold_typed;
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub async fn run(run: TextRun, questions: Vec<Question>) -> anyhow::Result<()> {
    let loaded = load_text(&run.dir, run.embedder.clone())
        .await
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("cannot open the text index in {}", run.dir.display()))?;
    let index = loaded.searcher.index();
    let mut tee = Tee::default();
    let mut answers_out = match &run.out {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            let path = dir.join("answers.jsonl");
            Some(std::io::BufWriter::new(
                std::fs::File::create(&path)
                    .with_context(|| format!("cannot write {}", path.display()))?,
            ))
        }
        None => None,
    };
    say!(
        tee,
        "text evaluation: answers from documents alone (no graph)"
    );
    say!(
        tee,
        "index      {} ({} files, {:.2} MB, {} chunks, {} passages, {} keywords, {} skeleton triples{})",
        run.dir.display(),
        index.files.len(),
        index.text_bytes() as f64 / 1e6,
        index.chunks.len(),
        index.passages.len(),
        index.keywords.len(),
        index.skeleton.len(),
        index
            .extractor
            .as_ref()
            .map(|m| format!(" by {m}"))
            .unwrap_or_default()
    );
    say!(
        tee,
        "search     L = {} tokens, θ = {}, question vectors: {}",
        run.settings.context_tokens,
        run.settings.theta,
        loaded
            .embedder
            .as_ref()
            .map(|e| e.name().to_owned())
            .unwrap_or_else(|| "none (lexical)".to_owned())
    );
    if let Some(note) = &loaded.note {
        say!(tee, "note       {note}");
    }
    say!(
        tee,
        "reader     {}",
        match (&run.llm, &run.embedder) {
            (Some(m), _) => format!("model {} (summarizer prompt), cache none", m.name()),
            (None, Some(e)) => format!(
                "no model: the summarizer's passage reader, statements by words and {} \
                 (keep within {}, cosine at least {})",
                e.name(),
                run.rule.keep_within,
                reader::MIN_COSINE
            ),
            (None, None) => format!(
                "no model: the summarizer's passage reader, statements by words only (keep \
                 within {})",
                run.rule.keep_within
            ),
        }
    );
    say!(tee, "questions  {} ({})", questions.len(), run.selection);
    let mut rows = Vec::new();
    let mut span_out = match &run.span_examples {
        Some(path) if run.llm.is_none() => Some(std::io::BufWriter::new(
            std::fs::File::create(path)
                .with_context(|| format!("cannot write span examples to {}", path.display()))?,
        )),
        Some(_) => anyhow::bail!(
            "--span-examples reads the passage reader without a model; unset the model"
        ),
        None => None,
    };
    for &channels in &run.channels {
        if channels != Channels::Keyword && index.skeleton.is_empty() {
            say!(
                tee,
                "channels {channels}: skipped, the index has no skeleton (index with a model)"
            );
            continue;
        }
        let settings = SearchSettings {
            channels,
            ..run.settings
        };
        // The reader without a model: the summarizer role's rule, as `kgmesh ask` runs
        // it; its embedding cache starts empty for each channel setting.
        let summarizer = Summarizer {
            llm: None,
            rule: run.rule,
            vectors_opt: run
                .embedder
                .clone()
                .map(|e| Arc::new(TextVectors::new(e, TEXT_VECTOR_CACHE))),
            graph_opt: None,
        };
        let mut by_source: Vec<(String, Scores)> = Vec::new();
        for (n, question) in questions.iter().enumerate() {
            let at = match by_source.iter().position(|(s, _)| *s == question.source) {
                Some(at) => at,
                None => {
                    by_source.push((question.source.clone(), Scores::default()));
                    by_source.len() - 1
                }
            };
            let scores = &mut by_source[at].1;
            let started = Instant::now();
            let vector = match &loaded.embedder {
                Some(embedder) => Some(
                    embedder
                        .embed(std::slice::from_ref(&question.question))
                        .await
                        .context("cannot embed a question")?
                        .remove(0),
                ),
                None => None,
            };
            let hits = loaded
                .searcher
                .search(&question.question, vector.as_deref(), &settings);
            scores
                .latencies_ms
                .push(started.elapsed().as_secs_f64() * 1e3);
            let evidence = excerpts(&loaded.searcher, &hits);
            let context_text: String = evidence
                .iter()
                .map(|e| match &e.item {
                    kgmesh_schemas::messages::context::EvidenceItem::Excerpt(x) => x.text.as_str(),
                    _ => "",
                })
                .collect::<Vec<_>>()
                .join("\n");
            scores.tokens += hits
                .iter()
                .map(|h| loaded.searcher.tokens_of(h))
                .sum::<usize>();
            let context_norm = normalize(&context_text);
            let covered = question
                .answers
                .iter()
                .any(|a| contains_phrase(&context_norm, &normalize(a)));
            scores.covered += usize::from(covered);
            let request = SummarizeRequest {
                question: question.question.clone(),
                context: Context {
                    evidence,
                    notes: Vec::new(),
                },
                topic_entities: Vec::new(),
                max_answers: 5,
                cues: Vec::new(),
                plan: Vec::new(),
                preferred: Vec::new(),
            };
            let started = Instant::now();
            let mut first_text: Option<String> = None;
            let mut given: Vec<String> = Vec::new();
            let mut confidence: Option<f32> = None;
            let first = match &run.llm {
                Some(llm) => {
                    let prompt = prompts::summarizer::build(&request, settings.context_tokens * 2);
                    match llm.chat(prompt).await {
                        Ok(reply) => {
                            let parsed = parse::summarizer::parse(
                                &reply.text,
                                request.context.evidence.len(),
                                5,
                            );
                            // As the summarizer role does: an answer must be written in
                            // the context (a name the model invented is no answer).
                            given = parsed.answers.iter().map(|a| a.text.clone()).collect();
                            parsed
                                .answers
                                .iter()
                                .map(|a| normalize(&a.text))
                                .find(|text| {
                                    !text.is_empty() && contains_phrase(&context_norm, text)
                                })
                        }
                        Err(error) => {
                            tracing::warn!("the model failed on {}: {error}", question.id);
                            None
                        }
                    }
                }
                None => {
                    // Once per question: from the first channel setting measured.
                    if let Some(out) = span_out.as_mut().filter(|_| rows.is_empty()) {
                        write_span_example(out, &summarizer, &request, question).await?;
                    }
                    let reply = summarizer.rule_reply(&request).await;
                    given = reply.answers.iter().map(|a| a.text.clone()).collect();
                    first_text = given.first().cloned();
                    confidence = reply.confidence.filter(|_| first_text.is_some());
                    first_text.as_deref().map(normalize)
                }
            };
            scores.reader_ms.push(started.elapsed().as_secs_f64() * 1e3);
            let hit = matches!(&first, Some(given) if question.answers.iter().any(|a| normalize(a) == *given));
            if let Some(chance) = confidence {
                scores.confidences.push((chance, hit));
            }
            if let Some(out) = answers_out.as_mut() {
                let line = AnswerLine {
                    channels: channels.to_string(),
                    id: &question.id,
                    source: &question.source,
                    question: &question.question,
                    kind: question.kind.as_deref(),
                    asks: question.asks.as_deref(),
                    gold: &question.answers,
                    answers: given,
                    confidence,
                    right: hit,
                    covered,
                };
                serde_json::to_writer(&mut *out, &line).context("cannot write answers.jsonl")?;
                std::io::Write::write_all(out, b"\n").context("cannot write answers.jsonl")?;
            }
            scores.replies.push(Replied {
                answerable: !question.answers.is_empty(),
                answered: first.is_some(),
                confidence,
                right: hit,
            });
            if question.answers.is_empty() {
                scores.unanswerable += 1;
                scores.declined += usize::from(first.is_none());
            } else {
                scores.answerable += 1;
                match first {
                    _ if hit => scores.hits += 1,
                    Some(_) => {}
                    None => scores.unusable += 1,
                }
            }
            if let Some(kind) = question.kind.as_deref() {
                let entry = scores.by_kind.entry(kind.to_owned()).or_default();
                entry[0] += 1;
                if question.answers.is_empty() {
                    entry[3] += usize::from(first.is_none());
                } else {
                    entry[1] += 1;
                    entry[2] += usize::from(hit);
                }
            }
            if let Some(asks) = question.asks.as_deref() {
                let entry = scores.by_asks.entry(asks.to_owned()).or_default();
                entry.questions += 1;
                let asked = answer_type::AnswerType::parse(asks);
                entry.question_typed += usize::from(
                    asked.is_some() && answer_type::asked(&question.question).kind == asked,
                );
                if !question.answers.is_empty() {
                    entry.answerable += 1;
                    entry.hits += usize::from(hit);
                    let gold = &question.answers[0];
                    entry.gold_typed += usize::from(
                        asked.is_some() && Some(reader::type_in_context(&request, gold)) == asked,
                    );
                }
                if let Some(text) = &first_text {
                    entry.answered += 1;
                    entry.first_typed += usize::from(
                        asked.is_some() && Some(reader::type_in_context(&request, text)) == asked,
                    );
                }
            }
            if run.progress && (n + 1).is_multiple_of(100) {
                eprintln!(
                    "channels {channels}: {}/{} questions",
                    n + 1,
                    questions.len()
                );
            }
        }
        rows.push((channels, by_source));
    }
    if let Some(mut out) = span_out {
        std::io::Write::flush(&mut out).context("cannot write span examples")?;
    }
    if let Some(mut out) = answers_out {
        std::io::Write::flush(&mut out).context("cannot write answers.jsonl")?;
    }
    say!(tee);
    say!(tee, "| channels | questions | n | coverage | Hits@1 | no answer | unanswerable declined | context tokens (mean) | retrieval p50 | p99 | reader p50 |");
    say!(tee, "|---|---|---|---|---|---|---|---|---|---|---|");
    let mut typing: Vec<(Channels, std::collections::BTreeMap<String, AsksScores>)> = Vec::new();
    let mut calibrated: Vec<Calibrated> = Vec::new();
    let mut withheld: Vec<(Channels, Vec<Replied>)> = Vec::new();
    let mut kinds: Vec<(
        Channels,
        String,
        std::collections::BTreeMap<String, [usize; 4]>,
    )> = Vec::new();
    for (channels, (source, mut scores)) in rows
        .into_iter()
        .flat_map(|(c, sources)| sources.into_iter().map(move |s| (c, s)))
    {
        let total = scores.latencies_ms.len().max(1) as f64;
        let answerable = scores.answerable.max(1) as f64;
        scores.latencies_ms.sort_by(f64::total_cmp);
        scores.reader_ms.sort_by(f64::total_cmp);
        let hits = format!("{:.1} %", 100.0 * scores.hits as f64 / answerable);
        let unusable = scores.unusable;
        let declined = if scores.unanswerable == 0 {
            "–".to_owned()
        } else {
            format!("{} of {}", scores.declined, scores.unanswerable)
        };
        let reader = format!("{:.2} ms", percentile(&scores.reader_ms, 50.0));
        say!(
            tee,
            "| {channels} | {source} | {} | {:.1} % | {hits} | {unusable} | {declined} | {:.0} | {:.2} ms | {:.2} ms | {reader} |",
            scores.latencies_ms.len(),
            100.0 * scores.covered as f64 / answerable,
            scores.tokens as f64 / total,
            percentile(&scores.latencies_ms, 50.0),
            percentile(&scores.latencies_ms, 99.0),
        );
        if !scores.confidences.is_empty() {
            calibrated.push((
                channels,
                source.clone(),
                std::mem::take(&mut scores.confidences),
            ));
        }
        match withheld.iter_mut().find(|(c, _)| *c == channels) {
            Some((_, all)) => all.append(&mut scores.replies),
            None => withheld.push((channels, std::mem::take(&mut scores.replies))),
        }
        if !scores.by_kind.is_empty() {
            kinds.push((
                channels,
                source.clone(),
                std::mem::take(&mut scores.by_kind),
            ));
        }
        match typing.iter_mut().find(|(c, _)| *c == channels) {
            Some((_, all)) => merge_asks(all, &scores.by_asks),
            None => {
                let mut all = std::collections::BTreeMap::new();
                merge_asks(&mut all, &scores.by_asks);
                typing.push((channels, all));
            }
        }
    }
    if !kinds.is_empty() {
        say!(tee);
        say!(tee, "by question type (JSONL's `type`):");
        say!(
            tee,
            "| channels | questions | type | n | Hits@1 (answerable) | declined (unanswerable) |"
        );
        say!(tee, "|---|---|---|---|---|---|");
        for (channels, source, by_kind) in &kinds {
            for (kind, [n, answerable, hits, declined]) in by_kind {
                let hits = if *answerable == 0 {
                    "–".to_owned()
                } else {
                    format!("{:.1} %", 100.0 * *hits as f64 / *answerable as f64)
                };
                let unanswerable = n - answerable;
                let declined = if unanswerable == 0 {
                    "–".to_owned()
                } else {
                    format!("{declined} of {unanswerable}")
                };
                say!(
                    tee,
                    "| {channels} | {source} | {kind} | {n} | {hits} | {declined} |"
                );
            }
        }
    }
    print_confidence(&mut tee, &calibrated);
    if !calibrated.is_empty() {
        for (channels, replies) in &withheld {
            say!(tee);
            say!(
                tee,
                "answers withheld below a confidence (`--min-confidence`), channels {channels}, all question files together:"
            );
            tee.push(&withholding_table(&withholding(
                replies,
                &WITHHOLDING_THRESHOLDS,
            )));
        }
    }
    for (channels, by_asks) in typing.iter().filter(|(_, b)| !b.is_empty()) {
        say!(tee);
        say!(tee, "answer types, channels {channels} (all question files together; the reader's own typing against the `asks` the files give):");
        say!(tee, "| asks | questions | Hits@1 | question read as asking it | first answers of that type | gold answers typed so |");
        say!(tee, "|---|---|---|---|---|---|");
        let mut total = AsksScores::default();
        for (asks, s) in by_asks {
            print_asks(&mut tee, asks, s);
            total.add(s);
        }
        print_asks(&mut tee, "all", &total);
    }
    if let Some(dir) = &run.out {
        let path = dir.join("summary.md");
        std::fs::write(&path, &tee.text)
            .with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("kgmesh eval: wrote {} and answers.jsonl", path.display());
    }
    Ok(())
}

/// One question's candidate spans as a training example for the span scorer: a span is
/// right when it is one of the gold answers (as Hits@1 compares them).
async fn write_span_example(
    out: &mut impl std::io::Write,
    summarizer: &Summarizer,
    request: &SummarizeRequest,
    question: &Question,
) -> anyhow::Result<()> {
    let gold: Vec<String> = question.answers.iter().map(|a| normalize(a)).collect();
    let (mut rows, mut gated) = (Vec::new(), false);
    if let Some(spans) = summarizer.passage_spans(request).await {
        gated = spans.gated;
        for row in spans.rows {
            rows.push(SpanExampleRow {
                right: gold.contains(&normalize(&row.text)),
                text: row.text,
                sentence: row.sentence,
                features: row.features,
            });
        }
    }
    let example = SpanExample {
        source: question.source.clone(),
        question: question.question.clone(),
        answerable: !gold.is_empty(),
        gated,
        rows,
    };
    serde_json::to_writer(&mut *out, &example)?;
    out.write_all(b"\n")?;
    Ok(())
}

/// One question file's answers with a confidence: (channels, file, (confidence, right)).
type Calibrated = (Channels, String, Vec<(f32, bool)>);

/// How well the passage answers' confidence means what it says, per question file and
/// pooled per channel setting ([`Calibration`]).
fn print_confidence(tee: &mut Tee, calibrated: &[Calibrated]) {
    if calibrated.is_empty() {
        return;
    }
    say!(tee);
    say!(tee, "confidence of the answers that carry one (an answer to an unanswerable question is wrong):");
    say!(tee, "| channels | questions | {} |", Calibration::CELLS);
    say!(
        tee,
        "|---|---|{}",
        "---|".repeat(Calibration::CELLS.split('|').count())
    );
    let mut pooled: Vec<(Channels, Vec<(f32, bool)>)> = Vec::new();
    for (channels, source, pairs) in calibrated {
        if let Some(calibration) = Calibration::of(pairs) {
            say!(tee, "| {channels} | {source} | {} |", calibration.cells());
        }
        match pooled.iter_mut().find(|(c, _)| c == channels) {
            Some((_, all)) => all.extend_from_slice(pairs),
            None => pooled.push((*channels, pairs.clone())),
        }
    }
    for (channels, pairs) in pooled {
        let files = calibrated.iter().filter(|(c, ..)| *c == channels).count();
        if files > 1 {
            if let Some(calibration) = Calibration::of(&pairs) {
                say!(tee, "| {channels} | all | {} |", calibration.cells());
            }
        }
    }
}

fn merge_asks(
    into: &mut std::collections::BTreeMap<String, AsksScores>,
    from: &std::collections::BTreeMap<String, AsksScores>,
) {
    for (asks, s) in from {
        into.entry(asks.clone()).or_default().add(s);
    }
}

fn print_asks(tee: &mut Tee, asks: &str, s: &AsksScores) {
    let share = |n: usize, of: usize| {
        if of == 0 {
            "–".to_owned()
        } else {
            format!("{:.0} % ({n}/{of})", 100.0 * n as f64 / of as f64)
        }
    };
    say!(
        tee,
        "| {asks} | {} | {} | {} | {} | {} |",
        s.questions,
        share(s.hits, s.answerable),
        share(s.question_typed, s.questions),
        share(s.first_typed, s.answered),
        share(s.gold_typed, s.answerable),
    );
}
