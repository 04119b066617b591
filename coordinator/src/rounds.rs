//! The round loop (ByoKG-RAG Algorithm 2 with CacheRAG's dispatcher, Algorithm 3).
//!
//! ```text
//! cache lookup ─┐
//!               ▼
//! round t: kg-linker ─► entity-linker ─► every retriever (parallel) ─► merge
//!               ▲                                                       │
//!               │            judge ◄──── σ_depth / σ_breadth expansion ◄┤
//!               └──── next round ◄── NextRound        COMPLETE ──► summarizer ─► cache store
//! ```
//!
//! Each box is a stage of [`crate::stages`]; this file only decides which runs next,
//! over a small run state. The coordinator only talks to the bus: it cannot tell
//! in-process roles from remote ones, and every role it fans out to is discovered,
//! not configured.

use std::time::Instant;

use kgmesh_schemas::{
    graph::Metapath,
    messages::{ask::AskReply, cache::Plan},
    NodeId,
};
use tracing::Instrument;

use crate::{
    calls::RunRecord,
    ledger::Ledger,
    stages::{
        cache_lookup::{self, CacheFound},
        judge::{self, JudgeInput},
        link::{self, Findings, RoundWork},
        replay::{self, ReplayReport},
        reply::{self, ConfidenceInput, ReplyInput},
        retrieve::{self, RetrieveInput},
        store::{self, StoreInput},
        summarize::{self, SummarizeInput},
        RunContext,
    },
};

/// One question in flight.
pub(crate) struct Run<'a> {
    cx: RunContext<'a>,
    record: RunRecord,
    found: Findings,
    cache: CacheFound,
    /// A cached plan was replayed in round 1.
    plan_replayed: bool,
    /// What the replayed plan was and what it reached.
    replay: ReplayReport,
    rounds_run: u8,
    complete: bool,
    /// A language model judged the retrieval complete (rather than the rule-based
    /// judge): the plan counts as verified and may be replayed without a model.
    model_verified: bool,
    /// The reader's chance that its first plan is right (the first LLM-free plan that
    /// came with one).
    plan_confidence: Option<f32>,
    /// The plan that chance is for (the first stage's, or the reader's, first plan).
    plan_first: Option<Metapath>,
    /// The plan the confidence is for is a re-ranking reader's (not calibrated).
    plan_reranked: bool,
    /// What the plan the learned reader ranks first reaches (a second reading of the
    /// question, `KgLinkReply::reader_reaches`).
    reader_reaches: Option<Vec<NodeId>>,
    /// The first LLM-free plan, when the learned reader chose it among plans the first
    /// stage ranked equally first (`KgLinkReply::reader_tie`): the summarizer prefers it
    /// among the paths its own reading ties.
    preferred: Vec<Metapath>,
}

impl<'a> Run<'a> {
    pub(crate) fn new(cx: RunContext<'a>, ledger: Ledger) -> Self {
        Self {
            cx,
            record: RunRecord::new(ledger),
            found: Findings::default(),
            cache: CacheFound::default(),
            plan_replayed: false,
            replay: ReplayReport::default(),
            rounds_run: 0,
            complete: false,
            model_verified: false,
            plan_confidence: None,
            plan_first: None,
            plan_reranked: false,
            reader_reaches: None,
            preferred: Vec::new(),
        }
    }

    pub(crate) async fn run(mut self) -> AskReply {
        let max_rounds = self.record.ledger.budget().rounds.max(1);
        let (cache, mut replay) = cache_lookup::cache_lookup(&self.cx, &mut self.record).await;
        self.cache = cache;
        let mut round: u8 = 0;
        while round < max_rounds {
            if self.complete || self.record.ledger.is_exhausted() {
                break;
            }
            round += 1;
            self.rounds_run = round;
            self.record.ledger.begin_round(round, max_rounds);
            let budget = self.record.ledger.budget();
            let round_span = tracing::info_span!(
                "round",
                round,
                kgmesh.round = round,
                kgmesh.question_id = %self.record.ledger.question_id(),
                kgmesh.budget.rounds_left = budget.rounds,
                kgmesh.budget.llm_calls_left = budget.llm_calls,
                kgmesh.budget.tokens_left = budget.tokens,
            );
            let round_started = Instant::now();
            let keep_going = if let Some(plan) = replay.take() {
                self.plan_replayed = true;
                self.replay_round(round, plan).instrument(round_span).await
            } else {
                self.linker_round(round).instrument(round_span).await
            };
            crate::metrics::record_round(round, round_started.elapsed());
            if !keep_going {
                break;
            }
        }
        self.finish().await
    }

    /// ByoKG-RAG's round: link, retrieve, judge. Returns whether another round may
    /// help.
    async fn linker_round(&mut self, round: u8) -> bool {
        let Some(link) = link::plan(
            &self.cx,
            &mut self.record,
            round,
            &mut self.found,
            &self.cache,
        )
        .await
        else {
            return false;
        };
        if self.plan_confidence.is_none() && !link.model_plan {
            self.plan_confidence = link.confidence;
            self.plan_first = link.metapaths.first().cloned();
            self.plan_reranked = link.reader_plan;
            self.reader_reaches = link
                .reader_reaches
                .clone()
                .filter(|_| link.confidence.is_some());
            if let Some(chosen) = &link.reader_tie {
                self.record.context.note(format!(
                    "round {round}: the learned reader chose {chosen} among plans the \
                     question's words read alike"
                ));
            }
            self.preferred = link.reader_tie.iter().cloned().collect();
        }
        let finish = link.finish;
        let work = link::adopt(&self.cx, &mut self.record, round, &mut self.found, link).await;
        let Some(work) = work else {
            let why = if finish {
                "the kg-linker answered FINISH"
            } else {
                "the kg-linker found nothing new"
            };
            tracing::debug!(round, why, "rounds end");
            // Retrievers that read the question itself (documents) still get the first
            // round, even when nothing in it names a graph entity.
            if round == 1
                && !finish
                && self.record.context.is_empty()
                && !self.record.ledger.is_exhausted()
            {
                self.retrieve_and_judge(round, RoundWork::default()).await;
            }
            return false;
        };
        if self.record.ledger.is_exhausted() {
            return false;
        }
        self.retrieve_and_judge(round, work).await;
        !finish
    }

    /// A cached plan replayed without the kg-linker (the 0-LLM-call fast path); the
    /// rounds after it use the linker only when the replay was not enough.
    async fn replay_round(&mut self, round: u8, plan: Plan) -> bool {
        self.replay.question = replay::past_question(&self.cache.examples, &plan);
        let work = replay::adopt(&mut self.found, plan);
        let first_new = self.record.context.len();
        self.retrieve(round, work).await;
        let (reached, cut) = replay::measure(&self.cx, &self.record, &self.found.topic, first_new);
        self.replay.reached = reached;
        self.replay.cut = cut;
        if !self.record.ledger.is_exhausted() {
            self.judge(round, first_new).await;
        }
        true
    }

    async fn retrieve_and_judge(&mut self, round: u8, work: RoundWork) {
        let first_new = self.record.context.len();
        self.retrieve(round, work).await;
        if self.record.ledger.is_exhausted() {
            return;
        }
        self.judge(round, first_new).await;
    }

    async fn retrieve(&mut self, round: u8, work: RoundWork) {
        let input = RetrieveInput {
            round,
            entities: &self.found.topic,
            drafts: &self.found.drafts,
            work,
            cues: &self.cache.cues,
        };
        let hints = retrieve::retrieve(&self.cx, &mut self.record, input).await;
        self.found.repair_hints.extend(hints);
    }

    async fn judge(&mut self, round: u8, first_new: usize) {
        let input = JudgeInput {
            round,
            first_new,
            topic: &self.found.topic,
            replayed: self.plan_replayed && round == 1,
        };
        let judged = judge::judge_and_expand(&self.cx, &mut self.record, input).await;
        if judged.complete {
            self.complete = true;
            self.model_verified = judged.model_verified;
        }
    }

    /// Summarize, store the plan that answered, reply.
    async fn finish(mut self) -> AskReply {
        let input = SummarizeInput {
            round: self.rounds_run,
            topic: &self.found.topic,
            cues: &self.cache.cues,
            trusted: &self.found.trusted_metapaths,
            preferred: &self.preferred,
        };
        let summary = summarize::summarize(&self.cx, &mut self.record, input).await;
        let mut answers = summary.answers;
        answers.truncate(usize::from(self.cx.max_answers));
        let partial = reply::cut_short(&mut self.record);
        // The plan's chance and what is read beside it apply to a fresh graph reading,
        // not to a passage answer with its own estimate or a replayed plan.
        let plan_estimated = summary.confidence.is_none() && !self.plan_replayed;
        let mut plan_followed = self
            .plan_confidence
            .and(reply::plan_followed(
                &self.record,
                self.plan_first.as_ref(),
                &answers,
                &self.found.topic,
            ))
            .filter(|_| plan_estimated);
        let mut readings_agree = reply::readings_agree(self.reader_reaches.as_deref(), &answers)
            .filter(|_| plan_estimated);
        let (mut confidence, mut plan_chance) = reply::confidence(
            &self.cx,
            ConfidenceInput {
                summarized: summary.confidence,
                plan: self.plan_confidence,
                reranked: self.plan_reranked,
                replayed: self.plan_replayed,
                answers: &answers,
                low_confidence: summary.low_confidence,
                plan_followed,
                readings_agree,
                rounds: self.rounds_run,
                linked: self.found.topic.len(),
            },
        );
        let mut explanation = summary.explanation;
        if let Some(decline) = &summary.decline {
            let note = reply::decline_far(decline, confidence, &mut answers, &mut explanation);
            if answers.is_empty() {
                // Declined, the reply gives no answer to be confident in: as for any
                // reply without answers, the model cascade then asks the model (the
                // low-confidence flag `assemble` drops by itself without answers).
                (confidence, plan_chance) = (None, None);
                (plan_followed, readings_agree) = (None, None);
            }
            self.record.context.note(note);
        }
        // The cascade's LLM-free run stores only an answer it will keep.
        let kept = self
            .cx
            .store_at
            .is_none_or(|at| self.plan_replayed || confidence.is_some_and(|c| c >= at));
        if self.complete && !partial && !answers.is_empty() && kept {
            if self.record.ran_without_a_role() {
                tracing::info!("plan not stored: a role failed or was missing");
            } else {
                let input = StoreInput {
                    round: self.rounds_run,
                    plan: &self.found.plan,
                    topic: &self.found.topic,
                    isr: self.cache.isr.as_ref(),
                    answers: &answers,
                    model_verified: self.model_verified,
                };
                store::cache_store(&self.cx, &mut self.record, input).await;
            }
        }
        let input = ReplyInput {
            answers,
            explanation,
            low_confidence: summary.low_confidence,
            partial,
            confidence,
            plan_chance,
            plan_followed,
            readings_agree,
            rounds: self.rounds_run,
            topic: &self.found.topic,
            cache: &self.cache,
            replayed: self.plan_replayed,
            replay: &self.replay,
        };
        reply::assemble(&self.cx, &mut self.record, input)
    }
}
