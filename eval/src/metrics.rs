//! Scores of one question and their aggregates.
//!
//! Per question (gold answers G, distinct predictions P, both under
//! [`normalize`](super::normalize::normalize)):
//! - **Hits@1**: the first prediction is in G.
//! - **Hits@any**: some prediction is in G.
//! - **precision** = |P ∩ G| / |P|, **recall** = |G ∩ P| / |G|, **F1** their harmonic
//!   mean; all 0 when P is empty.
//! - **context hit**: some gold answer occurs, as whole words, in some evidence line
//!   (did retrieval find it, whatever the final answer); **context recall**: the share of
//!   G that occurs in the evidence.
//!
//! A question whose call failed scores 0 everywhere and counts in every mean: an error
//! is a wrong answer. Latency percentiles use the nearest-rank method.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};

use super::{
    calibration::Calibration,
    normalize::{contains_phrase, normalize},
};

/// One answer as the system gave it, with every spelling that may name it (its text
/// and the name of the graph entity it links to).
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    pub surface_forms: Vec<String>,
}

#[cfg(test)]
impl Prediction {
    pub fn text(text: &str) -> Self {
        Self {
            surface_forms: vec![text.to_owned()],
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Score {
    pub hits_at_1: bool,
    pub hits_at_any: bool,
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    pub context_hit: bool,
    pub context_recall: f64,
}

/// Scores predictions (best first) and evidence lines against the gold answers. With
/// no gold answer (a question the graph cannot answer), the reply is right when it
/// answers nothing ("I don't know").
pub fn score(gold: &[String], predictions: &[Prediction], evidence: &[String]) -> Score {
    if gold.is_empty() {
        let abstained = predictions
            .iter()
            .all(|p| p.surface_forms.iter().all(|f| normalize(f).is_empty()));
        let flag = if abstained { 1.0 } else { 0.0 };
        return Score {
            hits_at_1: abstained,
            hits_at_any: abstained,
            precision: flag,
            recall: flag,
            f1: flag,
            context_hit: abstained,
            context_recall: flag,
        };
    }
    let gold_forms: Vec<String> = distinct(gold.iter().map(|g| normalize(g)));
    let gold_set: HashSet<&str> = gold_forms.iter().map(String::as_str).collect();

    // One entry per distinct prediction: the normalized spellings it may go by.
    let mut seen_predictions = HashSet::new();
    let mut prediction_forms: Vec<Vec<String>> = Vec::new();
    for prediction in predictions {
        let forms = distinct(prediction.surface_forms.iter().map(|f| normalize(f)));
        let forms: Vec<String> = forms.into_iter().filter(|f| !f.is_empty()).collect();
        if forms.is_empty() {
            continue;
        }
        if forms.iter().any(|f| seen_predictions.contains(f)) {
            continue;
        }
        seen_predictions.extend(forms.iter().cloned());
        prediction_forms.push(forms);
    }

    let matches_gold = |forms: &Vec<String>| forms.iter().any(|f| gold_set.contains(f.as_str()));
    let hits_at_1 = prediction_forms.first().is_some_and(matches_gold);
    let correct_predictions = prediction_forms.iter().filter(|p| matches_gold(p)).count();
    let found_gold = gold_forms
        .iter()
        .filter(|g| prediction_forms.iter().any(|p| p.contains(g)))
        .count();

    let precision = ratio(correct_predictions, prediction_forms.len());
    let recall = ratio(found_gold, gold_forms.len());
    let f1 = if precision + recall > 0.0 {
        2.0 * precision * recall / (precision + recall)
    } else {
        0.0
    };

    let evidence_forms: Vec<String> = evidence.iter().map(|line| normalize(line)).collect();
    let gold_in_context = gold_forms
        .iter()
        .filter(|g| evidence_forms.iter().any(|line| contains_phrase(line, g)))
        .count();

    Score {
        hits_at_1,
        hits_at_any: correct_predictions > 0,
        precision,
        recall,
        f1,
        context_hit: gold_in_context > 0,
        context_recall: ratio(gold_in_context, gold_forms.len()),
    }
}

fn distinct(forms: impl Iterator<Item = String>) -> Vec<String> {
    let mut seen = HashSet::new();
    forms.filter(|f| seen.insert(f.clone())).collect()
}

pub(crate) fn ratio(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// What one question cost, from the reply (zero when the call failed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct QuestionCost {
    pub rounds: u8,
    pub llm_calls: u32,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Time the roles spent waiting on a language model, in milliseconds (reports from
    /// before this field read 0).
    #[serde(default)]
    pub llm_ms: f64,
    pub bus_messages: u32,
    pub graph_rows: u64,
    pub cache_hit: bool,
    /// A verified plan was replayed (reports from before this field read false).
    #[serde(default)]
    pub plan_replayed: bool,
    pub partial: bool,
    /// The answers rest on a path no word of the question names (reports from before
    /// this field read false).
    #[serde(default)]
    pub low_confidence: bool,
}

/// Everything recorded about one question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionResult {
    pub id: String,
    pub question: String,
    pub source: String,
    pub hops: Option<u8>,
    pub kind: Option<String>,
    pub gold: Vec<String>,
    /// Answer texts, best first.
    pub predictions: Vec<String>,
    pub score: Score,
    pub cost: QuestionCost,
    /// Wall time of the call as the harness saw it.
    pub latency_ms: f64,
    /// The system's own total time (`timings.total_us`), when it answered.
    pub server_ms: Option<f64>,
    /// The system's own time by stage (`timings.stages`, a round's stages summed under
    /// the stage's name: `kg-linker`, `retrieve`, `summarizer`, …), in the order the
    /// stages first ran.
    #[serde(default)]
    pub stage_ms: Vec<(String, f64)>,
    pub evidence_lines: usize,
    pub question_id: Option<String>,
    pub trace_id: Option<String>,
    pub notes: Vec<String>,
    /// `role reason` for each role that failed, timed out, was missing or answered
    /// without its model (the reply's `degraded`).
    #[serde(default)]
    pub degraded: Vec<String>,
    /// The reply's estimate that its answer is right (none without answers, or when
    /// nothing estimated it).
    #[serde(default)]
    pub confidence: Option<f32>,
    /// The plan's chance before the answer calibration (the reply's `plan_chance`):
    /// what `kgmesh reader calibrate` fits a calibration for this graph from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_chance: Option<f32>,
    /// Whether the first answer lies at the end of the plan the confidence starts from
    /// (the reply's `plan_followed`).
    #[serde(default)]
    pub plan_followed: Option<bool>,
    /// Whether the plan the learned reader ranks first reaches the first answer too
    /// (the reply's `readings_agree`).
    #[serde(default)]
    pub readings_agree: Option<bool>,
    /// Graph nodes the question's names were linked to (the reply's `topic_entities`).
    #[serde(default)]
    pub topic_entities: usize,
    /// Why no answer came back.
    pub error: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub min: f64,
    pub max: f64,
}

impl LatencySummary {
    /// `None` for an empty sample.
    pub fn of(samples: &[f64]) -> Option<Self> {
        if samples.is_empty() {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        Some(Self {
            mean: sorted.iter().sum::<f64>() / sorted.len() as f64,
            p50: percentile(&sorted, 50.0),
            p95: percentile(&sorted, 95.0),
            p99: percentile(&sorted, 99.0),
            min: sorted[0],
            max: sorted[sorted.len() - 1],
        })
    }
}

/// Nearest rank: the smallest sample with at least `p`% of the samples at or below it.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Means over a group of questions (errors count as wrong answers).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Aggregate {
    pub questions: usize,
    pub errors: usize,
    /// Questions answered with no answer at all ("I don't know").
    pub empty: usize,
    pub hits_at_1: f64,
    pub hits_at_any: f64,
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    pub context_hit: f64,
    pub context_recall: f64,
    pub partial_rate: f64,
    pub cache_hit_rate: f64,
    /// Share of questions answered by replaying a verified plan.
    #[serde(default)]
    pub replay_rate: f64,
    /// Hits@1 among the questions answered by a replayed plan (plan precision); none
    /// when no plan was replayed.
    #[serde(default)]
    pub replay_hits_at_1: Option<f64>,
    /// Share of questions answered with the low-confidence flag.
    #[serde(default)]
    pub low_confidence_rate: f64,
    /// Hits@1 among the flagged answers and among the other answers (none when there
    /// are none): how much the flag tells.
    #[serde(default)]
    pub low_confidence_hits_at_1: Option<f64>,
    #[serde(default)]
    pub confident_hits_at_1: Option<f64>,
    pub rounds_mean: f64,
    pub llm_calls_mean: f64,
    pub llm_calls_total: u64,
    pub prompt_tokens_total: u64,
    pub completion_tokens_total: u64,
    pub tokens_mean: f64,
    /// Time waiting on a language model over the questions' own time (server-side when
    /// known, else the harness's), summed over the answered questions.
    #[serde(default)]
    pub model_time_share: f64,
    pub bus_messages_mean: f64,
    pub graph_rows_mean: f64,
    pub latency_ms: Option<LatencySummary>,
    pub server_ms: Option<LatencySummary>,
    /// The system's own time by stage, over the questions that ran it, in the order
    /// stages first ran.
    #[serde(default)]
    pub stage_ms: Vec<(String, LatencySummary)>,
    /// Share of questions answered degraded (some role failed, was missing, or
    /// answered without its model).
    #[serde(default)]
    pub degraded_rate: f64,
    /// Questions degraded, by `role reason`.
    #[serde(default)]
    pub degraded_by: BTreeMap<String, usize>,
    /// How well the answers' confidences say which are right (first answer a gold
    /// one): over the answers that carried one; none when no answer did.
    #[serde(default)]
    pub calibration: Option<Calibration>,
}

/// (confidence, first answer right) of each answered question that carried a
/// confidence.
pub fn confidence_pairs(results: &[&QuestionResult]) -> Vec<(f32, bool)> {
    results
        .iter()
        .filter(|r| r.error.is_none() && !r.predictions.is_empty())
        .filter_map(|r| Some((r.confidence?, r.score.hits_at_1)))
        .collect()
}

/// Hits@1 among the answered questions that `chosen` picks; none when it picks none.
fn hits_among(
    results: &[&QuestionResult],
    chosen: impl Fn(&QuestionResult) -> bool,
) -> Option<f64> {
    let picked: Vec<&&QuestionResult> = results.iter().filter(|r| chosen(r)).collect();
    (!picked.is_empty())
        .then(|| picked.iter().filter(|r| r.score.hits_at_1).count() as f64 / picked.len() as f64)
}

impl Aggregate {
    pub fn of<'a>(results: impl IntoIterator<Item = &'a QuestionResult>) -> Self {
        let results: Vec<&QuestionResult> = results.into_iter().collect();
        let n = results.len();
        let mean = |value: &dyn Fn(&QuestionResult) -> f64| {
            if n == 0 {
                0.0
            } else {
                results.iter().map(|r| value(r)).sum::<f64>() / n as f64
            }
        };
        let flag = |b: bool| if b { 1.0 } else { 0.0 };
        let latencies: Vec<f64> = results
            .iter()
            .filter(|r| r.error.is_none())
            .map(|r| r.latency_ms)
            .collect();
        let server: Vec<f64> = results.iter().filter_map(|r| r.server_ms).collect();
        let llm_calls_total = results.iter().map(|r| u64::from(r.cost.llm_calls)).sum();
        let prompt_tokens_total = results.iter().map(|r| r.cost.prompt_tokens).sum();
        let completion_tokens_total = results.iter().map(|r| r.cost.completion_tokens).sum();
        Self {
            questions: n,
            errors: results.iter().filter(|r| r.error.is_some()).count(),
            empty: results
                .iter()
                .filter(|r| r.error.is_none() && r.predictions.is_empty())
                .count(),
            hits_at_1: mean(&|r| flag(r.score.hits_at_1)),
            hits_at_any: mean(&|r| flag(r.score.hits_at_any)),
            precision: mean(&|r| r.score.precision),
            recall: mean(&|r| r.score.recall),
            f1: mean(&|r| r.score.f1),
            context_hit: mean(&|r| flag(r.score.context_hit)),
            context_recall: mean(&|r| r.score.context_recall),
            partial_rate: mean(&|r| flag(r.cost.partial)),
            cache_hit_rate: mean(&|r| flag(r.cost.cache_hit)),
            replay_rate: mean(&|r| flag(r.cost.plan_replayed)),
            replay_hits_at_1: {
                let replayed: Vec<&&QuestionResult> =
                    results.iter().filter(|r| r.cost.plan_replayed).collect();
                (!replayed.is_empty()).then(|| {
                    replayed.iter().filter(|r| r.score.hits_at_1).count() as f64
                        / replayed.len() as f64
                })
            },
            low_confidence_rate: mean(&|r| flag(r.cost.low_confidence)),
            low_confidence_hits_at_1: hits_among(&results, |r| r.cost.low_confidence),
            confident_hits_at_1: hits_among(&results, |r| {
                !r.cost.low_confidence && r.error.is_none() && !r.predictions.is_empty()
            }),
            rounds_mean: mean(&|r| f64::from(r.cost.rounds)),
            llm_calls_mean: mean(&|r| f64::from(r.cost.llm_calls)),
            llm_calls_total,
            prompt_tokens_total,
            completion_tokens_total,
            tokens_mean: mean(&|r| (r.cost.prompt_tokens + r.cost.completion_tokens) as f64),
            model_time_share: {
                let answered = results.iter().filter(|r| r.error.is_none());
                let (model, total) = answered.fold((0.0, 0.0), |(model, total), r| {
                    (
                        model + r.cost.llm_ms,
                        total + r.server_ms.unwrap_or(r.latency_ms),
                    )
                });
                if total > 0.0 {
                    (model / total).min(1.0)
                } else {
                    0.0
                }
            },
            calibration: Calibration::of(&confidence_pairs(&results)),
            bus_messages_mean: mean(&|r| f64::from(r.cost.bus_messages)),
            graph_rows_mean: mean(&|r| r.cost.graph_rows as f64),
            latency_ms: LatencySummary::of(&latencies),
            server_ms: LatencySummary::of(&server),
            stage_ms: {
                let mut order: Vec<&str> = Vec::new();
                for (stage, _) in results.iter().flat_map(|r| &r.stage_ms) {
                    if !order.contains(&stage.as_str()) {
                        order.push(stage);
                    }
                }
                order
                    .into_iter()
                    .filter_map(|stage| {
                        let times: Vec<f64> = results
                            .iter()
                            .flat_map(|r| &r.stage_ms)
                            .filter(|(s, _)| s == stage)
                            .map(|(_, ms)| *ms)
                            .collect();
                        Some((stage.to_owned(), LatencySummary::of(&times)?))
                    })
                    .collect()
            },
            degraded_rate: mean(&|r| flag(!r.degraded.is_empty())),
            degraded_by: {
                let mut by: BTreeMap<String, usize> = BTreeMap::new();
                for kind in results.iter().flat_map(|r| &r.degraded) {
                    *by.entry(kind.clone()).or_default() += 1;
                }
                by
            },
        }
    }
}

/// Aggregates per group, for the attributes the dataset provides.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    /// Keyed `1-hop`, `2-hop`, …
    pub by_hops: BTreeMap<String, Aggregate>,
    pub by_type: BTreeMap<String, Aggregate>,
    /// Only when the run read more than one file.
    pub by_source: BTreeMap<String, Aggregate>,
}

impl Breakdown {
    pub fn of(results: &[QuestionResult]) -> Self {
        let group = |key: &dyn Fn(&QuestionResult) -> Option<String>| {
            let mut groups: BTreeMap<String, Vec<&QuestionResult>> = BTreeMap::new();
            for result in results {
                if let Some(name) = key(result) {
                    groups.entry(name).or_default().push(result);
                }
            }
            groups
                .into_iter()
                .map(|(name, members)| (name, Aggregate::of(members)))
                .collect::<BTreeMap<_, _>>()
        };
        let by_source = group(&|r| Some(r.source.clone()));
        Self {
            by_hops: group(&|r| r.hops.map(|h| format!("{h}-hop"))),
            by_type: group(&|r| r.kind.clone()),
            by_source: if by_source.len() > 1 {
                by_source
            } else {
                BTreeMap::new()
            },
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn predictions(items: &[&str]) -> Vec<Prediction> {
        items.iter().map(|s| Prediction::text(s)).collect()
    }

    #[test]
    fn single_answer_right_and_wrong() {
        let gold = strings(&["Mexico"]);
        let right = score(&gold, &predictions(&["Mexico"]), &[]);
        assert!(right.hits_at_1 && right.hits_at_any);
        assert_eq!((right.precision, right.recall, right.f1), (1.0, 1.0, 1.0));
        let wrong = score(&gold, &predictions(&["Spain"]), &[]);
        assert!(!wrong.hits_at_1 && !wrong.hits_at_any);
        assert_eq!(wrong.f1, 0.0);
    }

    #[test]
    fn multi_answer_questions_score_sets() {
        // Gold {A, B, C}; predicted [D, A, B]: miss at 1, 2 of 3 predictions right,
        // 2 of 3 gold answers found.
        let gold = strings(&["Once Were Warriors", "Tracker", "River Queen"]);
        let s = score(
            &gold,
            &predictions(&["Whale Rider", "Once Were Warriors", "tracker"]),
            &[],
        );
        assert!(!s.hits_at_1);
        assert!(s.hits_at_any);
        assert!((s.precision - 2.0 / 3.0).abs() < 1e-12);
        assert!((s.recall - 2.0 / 3.0).abs() < 1e-12);
        assert!((s.f1 - 2.0 / 3.0).abs() < 1e-12);
        // One right answer out of three gold: P = 1, R = 1/3, F1 = 0.5.
        let s = score(&gold, &predictions(&["River Queen"]), &[]);
        assert!(s.hits_at_1);
        assert_eq!(s.precision, 1.0);
        assert!((s.recall - 1.0 / 3.0).abs() < 1e-12);
        assert!((s.f1 - 0.5).abs() < 1e-12);
    }

    #[test]
    fn case_punctuation_and_underscores_do_not_matter() {
        let gold = strings(&["Club_America", "Some Mother's Son"]);
        let s = score(
            &gold,
            &predictions(&["club america", "SOME MOTHERS SON"]),
            &[],
        );
        assert!(s.hits_at_1);
        // "mothers" is one word, "mother s" two: the apostrophe only separates.
        assert_eq!(s.precision, 0.5);
        let s = score(
            &gold,
            &predictions(&["Club America!", "some mother's-son"]),
            &[],
        );
        assert_eq!(s.f1, 1.0);
    }

    #[test]
    fn duplicate_spellings_of_one_answer_count_once() {
        let gold = strings(&["Club_America", "Chivas"]);
        let s = score(&gold, &predictions(&["Club America", "club_america"]), &[]);
        assert_eq!(s.precision, 1.0);
        assert_eq!(s.recall, 0.5);
    }

    #[test]
    fn an_entity_name_may_match_when_the_text_does_not() {
        let gold = strings(&["River Queen"]);
        let linked = Prediction {
            surface_forms: vec!["the 2005 film".into(), "River_Queen".into()],
        };
        assert!(score(&gold, &[linked], &[]).hits_at_1);
    }

    #[test]
    fn an_unanswerable_question_is_right_only_when_nothing_is_answered() {
        assert!(score(&[], &[], &[]).hits_at_1);
        assert!(!score(&[], &predictions(&["Heat"]), &[]).hits_at_1);
    }

    #[test]
    fn empty_predictions_score_zero_but_context_still_counts() {
        let gold = strings(&["Tracker", "River Queen"]);
        let evidence = strings(&["Temuera Morrison starred in River Queen"]);
        let s = score(&gold, &[], &evidence);
        assert!(!s.hits_at_1 && !s.hits_at_any);
        assert_eq!((s.precision, s.recall, s.f1), (0.0, 0.0, 0.0));
        assert!(s.context_hit);
        assert_eq!(s.context_recall, 0.5);
        let blank = score(&gold, &predictions(&["", "  "]), &[]);
        assert_eq!(blank, Score::default());
    }

    #[test]
    fn context_matching_needs_whole_words() {
        let gold = strings(&["Queen"]);
        let evidence = strings(&["Queens Park Rangers FC"]);
        assert!(!score(&gold, &[], &evidence).context_hit);
    }

    #[test]
    fn percentiles_use_nearest_rank() {
        let samples: Vec<f64> = (1..=100).map(f64::from).collect();
        let summary = LatencySummary::of(&samples).unwrap();
        assert_eq!((summary.p50, summary.p95, summary.p99), (50.0, 95.0, 99.0));
        assert_eq!((summary.min, summary.max, summary.mean), (1.0, 100.0, 50.5));
        let one = LatencySummary::of(&[7.0]).unwrap();
        assert_eq!((one.p50, one.p99), (7.0, 7.0));
        assert!(LatencySummary::of(&[]).is_none());
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 50.0), 2.0);
    }

    pub(crate) fn result(
        id: &str,
        hops: u8,
        hit: bool,
        error: bool,
        latency: f64,
    ) -> QuestionResult {
        QuestionResult {
            id: id.into(),
            question: "q".into(),
            source: if hops == 1 { "a".into() } else { "b".into() },
            hops: Some(hops),
            kind: None,
            gold: strings(&["x"]),
            predictions: if hit { strings(&["x"]) } else { vec![] },
            score: Score {
                hits_at_1: hit,
                hits_at_any: hit,
                f1: if hit { 1.0 } else { 0.0 },
                ..Score::default()
            },
            cost: QuestionCost {
                llm_calls: 2,
                prompt_tokens: 100,
                completion_tokens: 10,
                ..QuestionCost::default()
            },
            latency_ms: latency,
            server_ms: None,
            stage_ms: Vec::new(),
            evidence_lines: 0,
            question_id: None,
            trace_id: None,
            notes: vec![],
            degraded: vec![],
            confidence: None,
            plan_chance: None,
            plan_followed: None,
            readings_agree: None,
            topic_entities: 0,
            error: error.then(|| "timed out".to_owned()),
        }
    }

    #[test]
    fn the_model_time_share_sums_answered_questions_own_time() {
        let mut results = vec![
            result("1", 1, true, false, 100.0),
            result("2", 1, true, false, 300.0),
            result("3", 1, false, true, 1000.0),
        ];
        results[0].cost.llm_ms = 80.0;
        results[1].cost.llm_ms = 20.0;
        results[1].server_ms = Some(300.0);
        results[2].cost.llm_ms = 900.0;
        // (80 + 20) / (100 + 300); the failed question counts in neither.
        assert_eq!(Aggregate::of(&results).model_time_share, 0.25);
    }

    #[test]
    fn aggregates_count_errors_as_wrong_and_break_down_by_hops() {
        let results = vec![
            result("1", 1, true, false, 10.0),
            result("2", 1, false, false, 20.0),
            result("3", 2, true, false, 30.0),
            result("4", 2, false, true, 1000.0),
        ];
        let all = Aggregate::of(&results);
        assert_eq!(all.questions, 4);
        assert_eq!(all.errors, 1);
        assert_eq!(all.empty, 1);
        assert_eq!(all.hits_at_1, 0.5);
        assert_eq!(all.llm_calls_total, 8);
        assert_eq!(all.tokens_mean, 110.0);
        // The failed call's latency is left out of the distribution.
        assert_eq!(all.latency_ms.unwrap().max, 30.0);
        assert_eq!(all.model_time_share, 0.0);
        let breakdown = Breakdown::of(&results);
        assert_eq!(breakdown.by_hops["1-hop"].hits_at_1, 0.5);
        assert_eq!(breakdown.by_hops["2-hop"].hits_at_1, 0.5);
        assert_eq!(breakdown.by_hops["2-hop"].errors, 1);
        assert!(breakdown.by_type.is_empty());
        assert_eq!(breakdown.by_source.len(), 2);
    }

    #[test]
    fn degraded_answers_are_counted_by_role_and_reason() {
        let mut results = vec![
            result("1", 1, true, false, 10.0),
            result("2", 1, true, false, 10.0),
            result("3", 1, false, false, 10.0),
            result("4", 1, true, false, 10.0),
        ];
        results[1].degraded = strings(&["summarizer model_fallback"]);
        results[2].degraded = strings(&["summarizer model_fallback", "judge timeout"]);
        let all = Aggregate::of(&results);
        assert_eq!(all.degraded_rate, 0.5);
        assert_eq!(all.degraded_by["summarizer model_fallback"], 2);
        assert_eq!(all.degraded_by["judge timeout"], 1);
        assert_eq!(all.degraded_by.len(), 2);
    }

    #[test]
    fn the_aggregate_calibrates_the_answers_that_carry_a_confidence() {
        let mut results: Vec<QuestionResult> = vec![
            result("1", 1, true, false, 1.0),
            result("2", 1, false, false, 1.0),
            result("3", 1, true, false, 1.0),
            result("4", 1, false, false, 1.0),
        ];
        results[0].confidence = Some(0.9);
        results[2].confidence = Some(0.6);
        results[3].confidence = Some(0.2);
        // Questions 2 and 4 have no answer: left out, whatever their confidence.
        let c = Aggregate::of(&results).calibration.expect("calibrated");
        assert_eq!((c.answers, c.right), (2, 2));
        assert_eq!(c.auroc, None);
        results[1].predictions = strings(&["y"]);
        results[1].confidence = Some(0.7);
        let c = Aggregate::of(&results).calibration.unwrap();
        assert_eq!((c.answers, c.right), (3, 2));
        assert_eq!(c.auroc, Some(0.5));
        assert!(Aggregate::of(&[result("5", 1, true, false, 1.0)])
            .calibration
            .is_none());
    }

    #[test]
    fn low_confidence_answers_are_scored_apart_from_the_others() {
        let mut results = vec![
            result("1", 1, true, false, 10.0),
            result("2", 1, false, false, 10.0),
            result("3", 1, true, false, 10.0),
            result("4", 1, true, false, 10.0),
            result("5", 1, false, false, 10.0),
        ];
        // Two flagged answers, one right; of the other three answered, two right; one
        // question has no answer and counts in neither.
        results[0].cost.low_confidence = true;
        results[1].cost.low_confidence = true;
        results[1].predictions = strings(&["y"]);
        results[4].predictions = strings(&["y"]);
        results.push(result("6", 1, false, false, 10.0));
        let all = Aggregate::of(&results);
        assert_eq!(all.low_confidence_rate, 2.0 / 6.0);
        assert_eq!(all.low_confidence_hits_at_1, Some(0.5));
        assert_eq!(all.confident_hits_at_1, Some(2.0 / 3.0));
        let none = Aggregate::of(&results[2..4]);
        assert_eq!(none.low_confidence_hits_at_1, None);
        assert_eq!(none.confident_hits_at_1, Some(1.0));
    }
}
