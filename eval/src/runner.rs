//! Asks every question, `concurrency` at a time, scoring each reply as it lands.
//!
//! An interrupt (Ctrl-C in the CLI, any future in tests) stops the run at once: questions
//! still in flight are dropped, not counted, and the outcome holds what completed.

use std::{
    future::Future,
    io::IsTerminal,
    sync::{atomic::Ordering, Arc},
    time::{Duration, Instant},
};

use futures::StreamExt;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use kgmesh_schemas::messages::ask::{AskOptions, AskReply, AskRequest};

use super::{
    answerer::{AnswerError, Answerer},
    dataset::Question,
    metrics::{score, Prediction, QuestionCost, QuestionResult, Score},
};

#[derive(Debug, Clone)]
pub struct RunSettings {
    pub concurrency: usize,
    pub options: AskOptions,
    /// The harness gives up on a question after this long.
    pub question_timeout: Duration,
    pub progress: bool,
}

#[derive(Debug)]
pub struct RunOutcome {
    /// In dataset order.
    pub results: Vec<QuestionResult>,
    pub wall: Duration,
    pub interrupted: bool,
}

pub async fn run_questions(
    answerer: Arc<dyn Answerer>,
    questions: Vec<Question>,
    settings: &RunSettings,
    interrupt: impl Future<Output = ()>,
) -> RunOutcome {
    let planned = questions.len();
    let progress = Progress::new(planned as u64, settings.progress);
    let started = Instant::now();
    let mut pending = futures::stream::iter(questions.into_iter().enumerate())
        .map(|(index, question)| {
            let answerer = Arc::clone(&answerer);
            let options = settings.options.clone();
            let timeout = settings.question_timeout;
            async move {
                (
                    index,
                    ask_one(answerer.as_ref(), question, options, timeout).await,
                )
            }
        })
        .buffer_unordered(settings.concurrency.max(1));

    let mut finished: Vec<(usize, QuestionResult)> = Vec::with_capacity(planned);
    let mut hits = 0usize;
    let mut errors = 0usize;
    let mut interrupted = false;
    tokio::pin!(interrupt);
    loop {
        tokio::select! {
            biased;
            () = &mut interrupt => {
                interrupted = true;
                break;
            }
            next = pending.next() => match next {
                Some((index, result)) => {
                    hits += usize::from(result.score.hits_at_1);
                    errors += usize::from(result.error.is_some());
                    finished.push((index, result));
                    progress.advance(finished.len(), hits, errors);
                }
                None => break,
            },
        }
    }
    // Dropping the stream cancels whatever is still in flight.
    drop(pending);
    let wall = started.elapsed();
    progress.finish(finished.len(), hits, errors, interrupted);
    finished.sort_by_key(|(index, _)| *index);
    RunOutcome {
        results: finished.into_iter().map(|(_, result)| result).collect(),
        wall,
        interrupted,
    }
}

async fn ask_one(
    answerer: &dyn Answerer,
    question: Question,
    options: AskOptions,
    timeout: Duration,
) -> QuestionResult {
    let request = AskRequest {
        question: question.question.clone(),
        options,
    };
    let started = Instant::now();
    let outcome = match tokio::time::timeout(timeout, answerer.ask(request)).await {
        Ok(outcome) => outcome,
        Err(_) => Err(AnswerError::TimedOut(timeout)),
    };
    let latency_ms = started.elapsed().as_secs_f64() * 1e3;
    match outcome {
        Ok(reply) => scored(question, reply, latency_ms),
        Err(error) => QuestionResult {
            error: Some(error.to_string()),
            ..unanswered(question, latency_ms)
        },
    }
}

/// The record of `question` before (or without) an answer: its gold answers, no
/// prediction, no cost.
fn unanswered(question: Question, latency_ms: f64) -> QuestionResult {
    QuestionResult {
        id: question.id,
        question: question.question,
        source: question.source,
        hops: question.hops,
        kind: question.kind,
        gold: question.answers,
        predictions: Vec::new(),
        score: Score::default(),
        cost: QuestionCost::default(),
        latency_ms,
        server_ms: None,
        stage_ms: Vec::new(),
        evidence_lines: 0,
        question_id: None,
        trace_id: None,
        notes: Vec::new(),
        degraded: Vec::new(),
        confidence: None,
        plan_chance: None,
        plan_followed: None,
        readings_agree: None,
        topic_entities: 0,
        error: None,
    }
}

/// The result of a question the system answered.
pub fn scored(question: Question, reply: AskReply, latency_ms: f64) -> QuestionResult {
    let predictions: Vec<Prediction> = reply
        .answers
        .iter()
        .map(|answer| {
            let mut surface_forms = vec![answer.text.clone()];
            if let Some(entity) = &answer.entity {
                surface_forms.push(entity.name.clone());
            }
            Prediction { surface_forms }
        })
        .collect();
    let evidence: Vec<String> = reply.evidence.iter().map(|e| e.text.clone()).collect();
    let score = score(&question.answers, &predictions, &evidence);
    QuestionResult {
        predictions: reply.answers.iter().map(|a| a.text.clone()).collect(),
        score,
        cost: QuestionCost {
            rounds: reply.rounds,
            llm_calls: reply.cost.llm_calls,
            prompt_tokens: reply.cost.prompt_tokens,
            completion_tokens: reply.cost.completion_tokens,
            llm_ms: reply.cost.llm_us as f64 / 1e3,
            bus_messages: reply.cost.bus_messages,
            graph_rows: reply.cost.graph_rows,
            cache_hit: reply.cache_hit,
            plan_replayed: reply.plan_replayed,
            partial: reply.partial,
            low_confidence: reply.low_confidence,
        },
        server_ms: Some(reply.timings.total_us as f64 / 1e3),
        stage_ms: stage_times(&reply.timings.stages),
        evidence_lines: reply.evidence.len(),
        question_id: Some(reply.question_id),
        trace_id: reply.trace_id,
        notes: reply.notes,
        degraded: reply
            .degraded
            .iter()
            .map(|d| format!("{} {}", d.role, d.reason))
            .collect(),
        confidence: reply.confidence,
        plan_chance: reply.plan_chance,
        plan_followed: reply.plan_followed,
        readings_agree: reply.readings_agree,
        topic_entities: reply.topic_entities.len(),
        ..unanswered(question, latency_ms)
    }
}

/// A reply's stage times in milliseconds, each round's stages summed under the stage's
/// own name ("round2.retrieve" counts as "retrieve"), in the order stages first ran.
fn stage_times(stages: &[(String, u64)]) -> Vec<(String, f64)> {
    let mut times: Vec<(String, f64)> = Vec::new();
    for (stage, us) in stages {
        let name = match stage.split_once('.') {
            Some((round, name)) if round.starts_with("round") => name,
            _ => stage.as_str(),
        };
        let ms = *us as f64 / 1e3;
        match times.iter_mut().find(|(s, _)| s == name) {
            Some((_, total)) => *total += ms,
            None => times.push((name.to_owned(), ms)),
        }
    }
    times
}

/// A bar with running Hits@1 on a terminal; a line every 10% otherwise, so that logs of
/// long unattended runs still show progress.
struct Progress {
    bar: Option<ProgressBar>,
    total: u64,
    enabled: bool,
    next_line_at: std::sync::atomic::AtomicU64,
}

impl Progress {
    fn new(total: u64, enabled: bool) -> Self {
        let on_terminal = enabled && std::io::stderr().is_terminal();
        let bar = on_terminal.then(|| {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30}] {pos}/{len} {per_sec} eta {eta} {msg}",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar
        });
        Self {
            bar,
            total,
            enabled,
            next_line_at: std::sync::atomic::AtomicU64::new(total.div_ceil(10).max(1)),
        }
    }

    fn message(done: usize, hits: usize, errors: usize) -> String {
        let rate = if done == 0 {
            0.0
        } else {
            hits as f64 / done as f64
        };
        format!("Hits@1 {rate:.3} errors {errors}")
    }

    fn advance(&self, done: usize, hits: usize, errors: usize) {
        if let Some(bar) = &self.bar {
            bar.set_position(done as u64);
            bar.set_message(Self::message(done, hits, errors));
        } else if self.enabled && done as u64 >= self.next_line_at.load(Ordering::Relaxed) {
            eprintln!(
                "kgmesh eval: {done}/{} {}",
                self.total,
                Self::message(done, hits, errors)
            );
            self.next_line_at
                .fetch_add(self.total.div_ceil(10).max(1), Ordering::Relaxed);
        }
    }

    fn finish(&self, done: usize, hits: usize, errors: usize, interrupted: bool) {
        let message = Self::message(done, hits, errors);
        if let Some(bar) = &self.bar {
            if interrupted {
                bar.abandon_with_message(format!("{message} (interrupted)"));
            } else {
                bar.finish_with_message(message);
            }
        } else if self.enabled && interrupted {
            eprintln!(
                "kgmesh eval: interrupted after {done}/{} {message}",
                self.total
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use async_trait::async_trait;
    use kgmesh_schemas::{
        budget::Cost,
        messages::{
            ask::{AskReply, AskRequest, Timings},
            summarizer::Answer,
        },
    };

    use super::*;
    use crate::answerer::{AnswererConfig, AnswererMode};

    #[test]
    fn stage_times_sum_a_stages_rounds_under_its_name_in_the_order_they_first_ran() {
        let stages = [
            ("cache".to_owned(), 500),
            ("round1.kg-linker".to_owned(), 3_000),
            ("round1.retrieve".to_owned(), 1_000),
            ("round2.retrieve".to_owned(), 1_500),
            ("summarizer".to_owned(), 250),
        ];
        assert_eq!(
            stage_times(&stages),
            vec![
                ("cache".to_owned(), 0.5),
                ("kg-linker".to_owned(), 3.0),
                ("retrieve".to_owned(), 2.5),
                ("summarizer".to_owned(), 0.25),
            ]
        );
    }

    /// Answers "yes" at once, except questions containing "hang", which never answer.
    struct Scripted;

    #[async_trait]
    impl Answerer for Scripted {
        async fn ask(&self, request: AskRequest) -> Result<AskReply, AnswerError> {
            if request.question.contains("hang") {
                std::future::pending::<()>().await;
            }
            Ok(AskReply {
                question_id: "q".into(),
                answers: vec![Answer {
                    text: "yes".into(),
                    entity: None,
                    score: 1.0,
                    evidence: vec![],
                }],
                evidence: vec![],
                explanation: String::new(),
                rounds: 1,
                cost: Cost::default(),
                timings: Timings::default(),
                partial: false,
                low_confidence: false,
                confidence: None,
                plan_chance: None,
                plan_followed: None,
                readings_agree: None,
                cache_hit: false,
                cache_use: None,
                cache_examples: 0,
                replay_reached: None,
                replay_cut: false,
                plan_replayed: false,
                replay_similarity: None,
                trace_id: None,
                notes: vec![],
                degraded: vec![],
                graph: None,
                topic_entities: vec![],
                calls: vec![],
            })
        }

        fn describe(&self) -> AnswererConfig {
            AnswererConfig {
                mode: AnswererMode::Scripted,
                server_url: None,
                llm: "none".into(),
                embedder: "none".into(),
                budget: None,
                k_values: None,
                cache: "none".into(),
                roles: vec![],
                setup_ms: None,
                config: None,
                server_info: None,
            }
        }
    }

    fn question(id: &str, text: &str) -> Question {
        Question {
            id: id.into(),
            question: text.into(),
            answers: vec!["yes".into()],
            hops: None,
            kind: None,
            source: "s".into(),
            asks: None,
        }
    }

    #[tokio::test]
    async fn a_question_past_its_timeout_is_an_error_and_the_run_goes_on() {
        let settings = RunSettings {
            concurrency: 2,
            options: AskOptions::default(),
            question_timeout: Duration::from_millis(50),
            progress: false,
        };
        let questions = vec![
            question("1", "a"),
            question("2", "please hang"),
            question("3", "b"),
        ];
        let outcome = tokio::time::timeout(
            Duration::from_secs(10),
            run_questions(
                Arc::new(Scripted),
                questions,
                &settings,
                std::future::pending(),
            ),
        )
        .await
        .expect("the run finishes");
        assert!(!outcome.interrupted);
        let ids: Vec<&str> = outcome.results.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["1", "2", "3"]);
        assert!(outcome.results[0].score.hits_at_1);
        let error = outcome.results[1].error.as_deref().expect("timed out");
        assert!(error.contains("no answer within"), "{error}");
        assert!(outcome.results[2].score.hits_at_1);
    }

    #[tokio::test]
    async fn an_interrupt_keeps_what_completed() {
        let settings = RunSettings {
            concurrency: 1,
            options: AskOptions::default(),
            question_timeout: Duration::from_secs(60),
            progress: false,
        };
        let questions = vec![
            question("1", "a"),
            question("2", "hang"),
            question("3", "b"),
        ];
        let (interrupt_tx, interrupt_rx) = tokio::sync::oneshot::channel::<()>();
        let run = run_questions(Arc::new(Scripted), questions, &settings, async move {
            let _ = interrupt_rx.await;
        });
        let interrupter = async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let _ = interrupt_tx.send(());
        };
        let (outcome, ()) = tokio::time::timeout(Duration::from_secs(10), async {
            tokio::join!(run, interrupter)
        })
        .await
        .expect("the interrupt ends the run");
        assert!(outcome.interrupted);
        assert_eq!(outcome.results.len(), 1);
        assert_eq!(outcome.results[0].id, "1");
    }
}
