//! Stage 7: the reply. The answers as the summarizer gave them, cut to what was asked
//! for, with the chance that they are right, the evidence they cite, and a sentence
//! for everything the user should know: a budget that ran out, a name read as the
//! closest one, what the plan cache did.

use kgmesh_schemas::{
    graph::{Entity, Metapath, ScoredEntity},
    messages::{
        ask::AskReply,
        context::EvidenceItem,
        summarizer::{Answer, Decline},
    },
    NodeId,
};

use super::{cache_lookup::CacheFound, link::EXACT_LINK, replay::ReplayReport, RunContext};
use crate::{calls::RunRecord, error::REQUIRED_ROLES};

/// Whether the answers may be incomplete: a budget ran out (noted in the reply), or a
/// role every answer needs failed (its model falling back does not count).
pub(crate) fn cut_short(record: &mut RunRecord) -> bool {
    let required_failed = record.degraded.iter().any(|d| {
        REQUIRED_ROLES.contains(&d.role.as_str())
            && d.reason != kgmesh_schemas::messages::ask::Degradation::MODEL_FALLBACK
    });
    let partial = record.ledger.is_exhausted() || required_failed;
    if let Some(limit) = record.ledger.exhausted() {
        crate::metrics::record_exhausted(limit);
        record.context.note(format!(
            "budget exhausted ({limit}): the answer may be incomplete"
        ));
    }
    partial
}

/// Whether the first answer cites a path that walks `plan`, the plan whose chance the
/// confidence starts from (`AskReply::plan_followed`): `Some(false)` when it cites only
/// other graph paths or edges; `None` without a plan or an answer, or when the answer
/// rests on no path at all (a query's rows, a passage), which the plan's chance says
/// nothing about either way.
pub(crate) fn plan_followed(
    record: &RunRecord,
    plan: Option<&Metapath>,
    answers: &[Answer],
    topic: &[ScoredEntity],
) -> Option<bool> {
    let (plan, first) = (plan?, answers.first()?);
    let evidence = &record.context.context().evidence;
    let is_topic = |entity: &Entity| topic.iter().any(|t| t.entity.id == entity.id);
    let mut on_a_path = false;
    for &line in &first.evidence {
        let follows = match evidence.get(line as usize).map(|e| &e.item) {
            Some(EvidenceItem::Path(path)) => path.follows(plan),
            // A lone edge is walked from the question's entity at its end.
            Some(EvidenceItem::Triple(triple)) => {
                let relation = triple.relation.as_str();
                (is_topic(&triple.head) && plan.walked_by([(relation, false)].into_iter()))
                    || (is_topic(&triple.tail) && plan.walked_by([(relation, true)].into_iter()))
            }
            _ => continue,
        };
        if follows {
            return Some(true);
        }
        on_a_path = true;
    }
    on_a_path.then_some(false)
}

/// Whether the first answer is among the nodes the learned reader's first plan
/// reaches (`AskReply::readings_agree`); `None` without that reading or without a first
/// answer that is a graph node.
pub(crate) fn readings_agree(
    reader_reaches: Option<&[NodeId]>,
    answers: &[Answer],
) -> Option<bool> {
    let reaches = reader_reaches?;
    let first = answers.first()?.entity.as_ref()?;
    Some(reaches.contains(&first.id))
}

/// What the answer's confidence is read from.
pub(crate) struct ConfidenceInput<'a> {
    /// The summarizer's own estimate for its answers (read from document passages):
    /// it stands, the plan's does not apply.
    pub summarized: Option<f32>,
    /// The reader's chance that its first plan is right.
    pub plan: Option<f32>,
    /// That plan is a re-ranking reader's (not calibrated to answers).
    pub reranked: bool,
    /// The answers come from a replayed, verified plan: the estimate for a fresh
    /// reading does not apply.
    pub replayed: bool,
    pub answers: &'a [Answer],
    pub low_confidence: bool,
    /// The first answer follows the plan (see [`plan_followed`]).
    pub plan_followed: Option<bool>,
    /// The plan the learned reader ranks first reaches the first answer too
    /// (`AskReply::readings_agree`).
    pub readings_agree: Option<bool>,
    pub rounds: u8,
    pub linked: usize,
}

/// The chance that the answers are right: the summarizer's own estimate when it made
/// one, else the plan's, turned into the answer's by the answer calibration when there
/// is one ([`crate::confidence`]). Beside it, the plan's chance where the answer
/// calibration read it (`AskReply::plan_chance`).
pub(crate) fn confidence(
    cx: &RunContext<'_>,
    input: ConfidenceInput<'_>,
) -> (Option<f32>, Option<f32>) {
    if input.answers.is_empty() {
        return (None, None);
    }
    if input.summarized.is_some() {
        return (input.summarized, None);
    }
    let Some(plan) = input.plan.filter(|_| !input.replayed) else {
        return (None, None);
    };
    match &cx.config().answer_calibration {
        Some(calibration) if !input.reranked => {
            let texts: Vec<&str> = input.answers.iter().map(|a| a.text.as_str()).collect();
            let chance = calibration.chance(&crate::confidence::signals(
                plan,
                input.plan_followed,
                input.readings_agree,
                input.low_confidence,
                &texts,
                input.rounds,
                input.linked,
            ));
            (Some(chance), Some(plan))
        }
        _ => (Some(plan), None),
    }
}

/// Applies the summarizer's condition on its answers (`SummarizeReply::decline`): they
/// stand when their confidence reaches it, else the reply declines them, naming them as
/// possible; with no confidence estimated they are declined. Returns a note saying
/// which.
pub(crate) fn decline_far(
    decline: &Decline,
    confidence: Option<f32>,
    answers: &mut Vec<Answer>,
    explanation: &mut String,
) -> String {
    let below = decline.below;
    let shown = confidence.map_or_else(|| "none estimated".to_owned(), |c| format!("{c:.2}"));
    if confidence.is_some_and(|c| c >= below) && !answers.is_empty() {
        return format!(
            "summarizer: answers far from the question by meaning kept (confidence {shown}, \
             at least {below:.2})"
        );
    }
    *explanation = if answers.is_empty() {
        format!("I don't know: {}.", decline.why)
    } else {
        format!(
            "I don't know: {}, and the answer's confidence ({shown}) is below {below:.2}; \
             possibly {}.",
            decline.why,
            possibly(answers)
        )
    };
    answers.clear();
    format!(
        "summarizer: answers far from the question by meaning declined (confidence {shown}, \
         below {below:.2})"
    )
}

/// The first answers of a declined reply, named as possible ("A, B, C").
fn possibly(answers: &[Answer]) -> String {
    let first: Vec<&str> = answers.iter().take(3).map(|a| a.text.as_str()).collect();
    first.join(", ")
}

/// Everything the reply says besides what the record holds.
pub(crate) struct ReplyInput<'a> {
    pub answers: Vec<Answer>,
    pub explanation: String,
    pub low_confidence: bool,
    pub partial: bool,
    pub confidence: Option<f32>,
    /// The plan's chance the answer calibration read (`AskReply::plan_chance`).
    pub plan_chance: Option<f32>,
    pub plan_followed: Option<bool>,
    pub readings_agree: Option<bool>,
    pub rounds: u8,
    pub topic: &'a [ScoredEntity],
    pub cache: &'a CacheFound,
    pub replayed: bool,
    pub replay: &'a ReplayReport,
}

/// The reply to the question.
pub(crate) fn assemble(
    cx: &RunContext<'_>,
    record: &mut RunRecord,
    input: ReplyInput<'_>,
) -> AskReply {
    let evidence = record.context.lines(cx.evidence_edges);
    let mut answers = input.answers;
    let mut explanation = input.explanation;
    crate::context::cite_each_line_once(&evidence, &mut answers, &mut explanation);
    let min_confidence = cx.config().min_confidence;
    if let Some(chance) = input.confidence.filter(|c| *c < min_confidence) {
        explanation = format!(
            "I don't know: the best reading of the question is unlikely to be right \
             (confidence {chance:.2}, below {min_confidence:.2}); possibly {}.",
            possibly(&answers)
        );
        answers.clear();
    }
    // A name the question misspells is read as the closest one; the reply says so.
    let nothing_exact = input.topic.iter().all(|t| t.score < EXACT_LINK);
    let read_as: Vec<String> = input
        .topic
        .iter()
        .filter(|t| nothing_exact && t.score > 0.0)
        .take(3)
        .map(|t| format!("\"{}\"", t.entity.name))
        .collect();
    if !read_as.is_empty() && !answers.is_empty() {
        explanation = format!(
            "No name in the graph is written as in the question; read as {} (the closest). {explanation}",
            read_as.join(", ")
        );
    }
    let cache_use = cache_use(input.cache, input.replayed, input.replay, answers.len());
    let question_span = tracing::Span::current();
    question_span.record("kgmesh.rounds_run", input.rounds);
    question_span.record("kgmesh.answers", answers.len());
    let low_confidence = input.low_confidence && !answers.is_empty();
    question_span.record("kgmesh.low_confidence", low_confidence);
    let trace_id = record.ledger.trace().trace_id().map(str::to_owned);
    AskReply {
        question_id: record.ledger.question_id().to_string(),
        answers,
        evidence,
        explanation,
        rounds: input.rounds,
        cost: record.ledger.spent(),
        timings: record.ledger.timings(),
        partial: input.partial,
        low_confidence,
        confidence: input.confidence,
        plan_chance: input.plan_chance,
        plan_followed: input.plan_followed,
        readings_agree: input.readings_agree,
        cache_hit: input.cache.hit,
        cache_use,
        cache_examples: input.cache.examples.len().min(usize::from(u16::MAX)) as u16,
        replay_reached: input.replayed.then_some(input.replay.reached),
        replay_cut: input.replayed && input.replay.cut,
        plan_replayed: input.replayed,
        replay_similarity: input.cache.replay_similarity.filter(|_| input.replayed),
        trace_id,
        notes: record.context.context().notes.clone(),
        degraded: std::mem::take(&mut record.degraded),
        graph: cx.config().graph.clone(),
        topic_entities: input.topic.iter().map(|s| s.entity.clone()).collect(),
        calls: record.ledger.take_calls(),
    }
}

/// What the plan cache did, in a sentence for people (see `AskReply::cache_use`).
fn cache_use(
    cache: &CacheFound,
    replayed: bool,
    replay: &ReplayReport,
    answers: usize,
) -> Option<String> {
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    if replayed {
        let whose = match (&replay.question, cache.replay_similarity) {
            (Some(question), Some(similarity)) => format!(
                "the verified plan of the past question \"{question}\" (a similar \
                 wording, similarity {similarity:.2})"
            ),
            (Some(question), None) => {
                format!("the verified plan of the past question \"{question}\"")
            }
            (None, Some(similarity)) => {
                format!("the verified plan of a similar question (similarity {similarity:.2})")
            }
            (None, None) => "a verified plan of this question's wording".to_owned(),
        };
        let reached = replay.reached as usize;
        let mut sentence = format!(
            "plan cache: answered by replaying {whose}; it reached {}, {} given",
            plural(reached, "node"),
            plural(answers, "answer")
        );
        if replay.cut {
            sentence.push_str(
                "; its retrieval stopped at a limit, so answers may be missing (ask \
                 again without the plan cache for a cold run)",
            );
        }
        return Some(sentence);
    }
    if cache.examples.is_empty() {
        return None;
    }
    Some(format!(
        "plan cache: {} offered to the planner as examples (the closest: \"{}\"); \
         the plan was made for this question",
        plural(cache.examples.len(), "past question"),
        cache.examples[0].question
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(text: &str) -> Answer {
        Answer {
            text: text.to_owned(),
            entity: None,
            score: 1.0,
            evidence: vec![0],
        }
    }

    #[test]
    fn answers_far_from_the_question_stand_only_when_likely_enough() {
        let decline = Decline {
            below: 0.5,
            why: "the path is far from its words by meaning".to_owned(),
        };
        let run = |confidence: Option<f32>| {
            let mut answers = vec![answer("Talk to Her"), answer("Volver")];
            let mut explanation = "2 answers from the graph.".to_owned();
            let note = decline_far(&decline, confidence, &mut answers, &mut explanation);
            (answers, explanation, note)
        };
        let (answers, explanation, note) = run(Some(0.62));
        assert_eq!(answers.len(), 2);
        assert_eq!(explanation, "2 answers from the graph.");
        assert!(note.contains("kept (confidence 0.62"), "{note}");
        for (confidence, shown) in [(Some(0.31), "0.31"), (None, "none estimated")] {
            let (answers, explanation, note) = run(confidence);
            assert!(answers.is_empty(), "{confidence:?}");
            assert_eq!(
                explanation,
                format!(
                    "I don't know: the path is far from its words by meaning, and the \
                     answer's confidence ({shown}) is below 0.50; possibly Talk to Her, Volver."
                )
            );
            assert!(note.contains("declined"), "{note}");
        }
    }
}
