//! The passage reader's span scorer: which candidate span of the passages answers the
//! question.
//!
//! The reader ([`super::reader`]) lists, per question, every span a sentence about the
//! entity offers (its names, numbers and dates, their parts, a number with its unit,
//! runs of lower-case words for a "what" question, and the names a two-sentence chain
//! reaches), each with the domain-independent [`SPAN_FEATURES`] below. A linear scorer
//! ranks them. Whether to answer at all is not the scorer's: the reader answers only
//! when some statement says enough of the question (its words or meaning gate), and
//! "I don't know" otherwise.
//!
//! The bundled weights (`span-weights.json`) are hand-set, chosen on the document
//! zoo's development corpora; they read a name's parts, a number with its unit and
//! lower-case runs only where nothing else answers. Weights can also be learned:
//! `kgmesh eval --span-examples` writes each question's spans with their features, and
//! `kgmesh reader passages` fits the scorer's softmax over them listwise
//! ([`fit_listwise`], the graph reader's trainer); `KGMESH_PASSAGE_WEIGHTS=FILE` reads
//! with such weights. Learned on the document zoo, they read its corpora left out
//! better than the bundled ones but the corpus written from MetaQA worse
//! (docs/results.md), so they are not the default.
//!
//! The weights file may also carry a [`PassageConfidence`]: the chance that the first
//! answer is right, from how the scorer ranked the spans ([`passage_signals`]), fitted
//! by `kgmesh reader passages --calibrate`. The bundled weights carry one.

use std::{path::Path, sync::Arc};

use serde::{Deserialize, Serialize};

use crate::kg_linker::reader::model::{
    fit_listwise, reads, standardized_dot, Confidence, Ranked, TrainSettings, MAX_MARGIN,
};

/// What the span scorer reads of each row, in weight order.
pub const SPAN_FEATURES: &[&str] = &[
    // The statement's idf-weighted share of the question it (or its paragraph) writes.
    "coverage",
    // The share of the question's explainable words its words match (a chain: both
    // statements').
    "share",
    // The statement's cosine to the question (0 with words only).
    "cosine",
    // The statement writes enough of the question by words (the reader's words gate).
    "by_words",
    // The statement reads near the question by embedding (the reader's meaning gate).
    "by_meaning",
    // How the statement names the entity asked about: 1 in its sentence, 0.5 in its
    // paragraph, 0 not (or no entity).
    "names_entity",
    // The span's type fit to what is asked (0.5 when nothing is).
    "type_fit",
    // The span's type is exactly the one asked.
    "type_exact",
    // The question's words written near the span, nearer counting more.
    "near",
    // The question's class word written right beside the span.
    "class_near",
    // A single capitalized word opening its sentence (maybe no name).
    "weak",
    // The span stands in a list of names after its first.
    "listed",
    // The span is the name its paragraph opens with, not one of its sentence's.
    "opener",
    // The same, and its sentence writes the question's class word ("which films":
    // "… star in the film").
    "opener_by_class",
    // ln(1 + how many rows propose the same name).
    "repeated",
    // 1 / (1 + the statement's rank by coverage among the question's statements).
    "statement_rank",
    // The span comes from a two-sentence chain.
    "chain",
    // How much more of the question the chain's two statements explain than its
    // first alone (0 for one statement).
    "chain_gain",
    // The span is a number, amount, date or year.
    "numeric",
    // The span is a part of a name joined by a preposition.
    "part",
    // The span is a number with the word after it.
    "with_unit",
    // The span is a run of lower-case words, and with its article.
    "phrase",
    "phrase_article",
    // 1 / (1 + tokens between the span and the entity's name / 3); 0 when the
    // sentence does not write the entity.
    "entity_near",
    // The span is its sentence's first name.
    "first_name",
    // 1 / the number of spans its statement offers.
    "statement_spans",
    // With an embedder, when a person, an organization or a place is asked: how well
    // the span's words read as that kind rather than another ([`super::typing`]), for
    // the spans it could bring first (scored within its reach of the best without it);
    // 0 otherwise.
    "type_meaning",
];

/// The index of a feature in [`SPAN_FEATURES`].
pub fn feature(name: &str) -> usize {
    SPAN_FEATURES
        .iter()
        .position(|f| *f == name)
        .unwrap_or_else(|| panic!("no span feature {name}"))
}

/// What a passage answer's confidence reads of the scorer's ranking, in order
/// ([`passage_signals`]): the first span's softmax share, the share of every span with
/// its text, its score's margin over the best span with another text, and the first
/// span's statement coverage, cosine to the question and type fit. Chosen among three
/// sets by the zoo's corpora left out; the corpus written from MetaQA, never fitted on,
/// was looked at too (docs/results.md).
pub const PASSAGE_SIGNALS: &[&str] = &[
    "share",
    "name_share",
    "margin",
    "coverage",
    "cosine",
    "type_fit",
];

/// [`PASSAGE_SIGNALS`] for one question's spans (`texts` and `features` by row) as
/// `scores` rank them; `None` without spans. The first span is the best scored, ties
/// to the earlier, as the reader answers.
pub fn passage_signals(scores: &[f32], texts: &[&str], features: &[&[f32]]) -> Option<Vec<f32>> {
    let top = (0..scores.len()).fold(None, |best: Option<usize>, i| match best {
        Some(b) if scores[b] >= scores[i] => Some(b),
        _ => Some(i),
    })?;
    let shares = shares(scores);
    let first_text = texts[top].to_lowercase();
    let same = |i: usize| texts[i].to_lowercase() == first_text;
    let name_share: f32 = (0..scores.len())
        .filter(|&i| same(i))
        .map(|i| shares[i])
        .sum();
    let margin = (0..scores.len())
        .filter(|&i| !same(i))
        .map(|i| scores[top] - scores[i])
        .fold(MAX_MARGIN, f32::min);
    let first = features[top];
    Some(vec![
        shares[top],
        name_share,
        margin,
        first[feature("coverage")],
        first[feature("cosine")],
        first[feature("type_fit")],
    ])
}

/// The chance that a passage answer is right, from [`passage_signals`]: a logistic
/// model fitted by `kgmesh reader passages --calibrate` on the first answers the
/// scorer gives to questions of many corpora.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassageConfidence {
    /// Signal names, in weight order: a file written for other signals is refused.
    pub signals: Vec<String>,
    pub model: Confidence,
    /// What it was fitted on: one line per corpus, with its answer count.
    #[serde(default)]
    pub fitted_on: Vec<String>,
}

/// The model file's format version.
pub const FORMAT: u32 = 1;

const BUNDLED: &str = include_str!("span-weights.json");

/// A linear span scorer, as `kgmesh reader passages` writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpanModel {
    pub format: u32,
    /// Feature names, in weight order: a file written for other features is refused.
    pub features: Vec<String>,
    pub mean: Vec<f32>,
    pub scale: Vec<f32>,
    pub weights: Vec<f32>,
    /// What it was trained on: one line per corpus, with its question count.
    #[serde(default)]
    pub trained_on: Vec<String>,
    #[serde(default)]
    pub training: TrainSettings,
    /// The chance that a first answer of these weights is right; without it, passage
    /// answers carry no confidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<PassageConfidence>,
}

#[derive(Debug, thiserror::Error)]
pub enum SpanModelError {
    #[error("cannot read passage weights {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("passage weights {path} are not a span model: {source}")]
    Json {
        path: String,
        source: serde_json::Error,
    },
    #[error("passage weights {path} were written for other features ({found}); retrain them with `kgmesh reader passages`")]
    Features { path: String, found: String },
    #[error("passage weights {path} carry a confidence for other signals ({found}); fit it again with `kgmesh reader passages --calibrate`")]
    Signals { path: String, found: String },
}

/// One question's spans for training: each span's features and whether it is right.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpanExample {
    /// The corpus it comes from (what leave-one-out leaves out).
    pub source: String,
    pub question: String,
    pub answerable: bool,
    /// Some statement says enough of the question for the reader to answer at all.
    pub gated: bool,
    pub rows: Vec<SpanExampleRow>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpanExampleRow {
    pub text: String,
    /// The sentence the span is read from, for reading the examples (not trained on).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sentence: String,
    pub right: bool,
    pub features: Vec<f32>,
}

impl SpanExample {
    /// Whether some span is right: only such a question teaches the scorer.
    pub fn teaches(&self) -> bool {
        self.rows.iter().any(|r| r.right)
    }
}

impl SpanModel {
    /// The bundled weights, unless `KGMESH_PASSAGE_WEIGHTS` names others (read once per
    /// process; weights that cannot be read are logged and the bundled ones used).
    pub fn active() -> Arc<Self> {
        static CHOSEN: std::sync::OnceLock<Arc<SpanModel>> = std::sync::OnceLock::new();
        CHOSEN
            .get_or_init(|| {
                let Some(path) = std::env::var_os("KGMESH_PASSAGE_WEIGHTS") else {
                    return Self::bundled();
                };
                match Self::load(Path::new(&path)) {
                    Ok(model) => Arc::new(model),
                    Err(error) => {
                        tracing::error!(%error, "KGMESH_PASSAGE_WEIGHTS not used; the bundled passage weights read instead");
                        Self::bundled()
                    }
                }
            })
            .clone()
    }

    /// The weights shipped with kgmesh (`span-weights.json`).
    pub fn bundled() -> Arc<Self> {
        static BUNDLED_MODEL: std::sync::OnceLock<Arc<SpanModel>> = std::sync::OnceLock::new();
        BUNDLED_MODEL
            .get_or_init(|| {
                Arc::new(
                    Self::parse(BUNDLED, "bundled").expect("the bundled passage weights are valid"),
                )
            })
            .clone()
    }

    pub fn load(path: &Path) -> Result<Self, SpanModelError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| SpanModelError::Io {
            path: shown.clone(),
            source,
        })?;
        Self::parse(&text, &shown)
    }

    fn parse(text: &str, shown: &str) -> Result<Self, SpanModelError> {
        let model: Self = serde_json::from_str(text).map_err(|source| SpanModelError::Json {
            path: shown.to_owned(),
            source,
        })?;
        if !reads(
            &model.features,
            SPAN_FEATURES,
            &model.mean,
            &model.scale,
            &model.weights,
        ) {
            return Err(SpanModelError::Features {
                path: shown.to_owned(),
                found: model.features.join(", "),
            });
        }
        if let Some(confidence) = &model.confidence {
            let fitted = &confidence.model;
            if !reads(
                &confidence.signals,
                PASSAGE_SIGNALS,
                &fitted.mean,
                &fitted.scale,
                &fitted.weights,
            ) {
                return Err(SpanModelError::Signals {
                    path: shown.to_owned(),
                    found: confidence.signals.join(", "),
                });
            }
        }
        Ok(model)
    }

    /// A row's score (only differences within a question matter).
    pub fn score(&self, features: &[f32]) -> f32 {
        standardized_dot(features, &self.mean, &self.scale, &self.weights)
    }

    /// How far a feature read in `[0, 1]` can move a span's score, from 0 to 1:
    /// spans scored further than this below the best cannot be brought first by it.
    pub fn reach(&self, feature: usize) -> f32 {
        let (weight, scale) = (self.weights[feature], self.scale[feature]);
        if scale > 0.0 && scale.is_finite() {
            (weight / scale).abs()
        } else {
            f32::INFINITY
        }
    }

    /// The chance that the first of these spans is right, when the weights carry a
    /// confidence.
    pub fn chance(&self, scores: &[f32], texts: &[&str], features: &[&[f32]]) -> Option<f32> {
        let confidence = self.confidence.as_ref()?;
        let signals = passage_signals(scores, texts, features)?;
        Some(confidence.model.chance(&signals))
    }

    /// What the confidence is fitted on for one question: its signals under these
    /// weights and whether their first span is right; `None` when the reader declines
    /// it (no statement says enough of the question, or no span).
    pub fn answered(&self, example: &SpanExample) -> Option<Ranked> {
        if !example.gated {
            return None;
        }
        let scores: Vec<f32> = example
            .rows
            .iter()
            .map(|r| self.score(&r.features))
            .collect();
        let texts: Vec<&str> = example.rows.iter().map(|r| r.text.as_str()).collect();
        let features: Vec<&[f32]> = example.rows.iter().map(|r| r.features.as_slice()).collect();
        let inputs = passage_signals(&scores, &texts, &features)?;
        let top = self.first(&example.rows)?;
        Some(Ranked {
            inputs,
            right: example.rows[top].right,
            answerable: example.answerable,
        })
    }

    /// Fits the confidence of these weights on the questions of `examples` they answer.
    /// Returns how many answers it was fitted on (0: none, and no confidence).
    pub fn calibrate(&mut self, examples: &[SpanExample], settings: TrainSettings) -> usize {
        let answered: Vec<(&str, Ranked)> = examples
            .iter()
            .filter_map(|e| Some((e.source.as_str(), self.answered(e)?)))
            .collect();
        let data: Vec<Ranked> = answered.iter().map(|(_, r)| r.clone()).collect();
        self.confidence = Confidence::fit(&data, settings).map(|model| PassageConfidence {
            signals: PASSAGE_SIGNALS.iter().map(|s| (*s).to_owned()).collect(),
            model,
            fitted_on: counted(answered.iter().map(|(s, _)| *s), "answers"),
        });
        data.len()
    }

    /// Fits weights on the examples that teach (some row right).
    pub fn train(examples: &[SpanExample], settings: TrainSettings) -> Self {
        let targets: Vec<Vec<f32>> = examples
            .iter()
            .map(|e| {
                e.rows
                    .iter()
                    .map(|r| f32::from(u8::from(r.right)))
                    .collect()
            })
            .collect();
        let features: Vec<Vec<Vec<f32>>> = examples
            .iter()
            .map(|e| e.rows.iter().map(|r| r.features.clone()).collect())
            .collect();
        let lists: Vec<(&[Vec<f32>], &[f32])> = examples
            .iter()
            .enumerate()
            .filter(|(_, e)| e.teaches() && e.rows.len() > 1)
            .map(|(i, _)| (features[i].as_slice(), targets[i].as_slice()))
            .collect();
        let (mean, scale, weights) = fit_listwise(&lists, SPAN_FEATURES.len(), settings);
        let trained_on = counted(examples.iter().map(|e| e.source.as_str()), "questions");
        Self {
            format: FORMAT,
            features: SPAN_FEATURES.iter().map(|f| (*f).to_owned()).collect(),
            mean,
            scale,
            weights,
            trained_on,
            training: settings,
            confidence: None,
        }
    }

    /// The span these weights rank first (ties to the earlier one).
    pub fn first(&self, rows: &[SpanExampleRow]) -> Option<usize> {
        let mut best: Option<(usize, f32)> = None;
        for (i, row) in rows.iter().enumerate() {
            let s = self.score(&row.features);
            if best.is_none_or(|(_, b)| s > b) {
                best = Some((i, s));
            }
        }
        best.map(|(i, _)| i)
    }
}

/// "corpus: N what" per corpus, in order of first appearance.
fn counted<'a>(sources: impl Iterator<Item = &'a str>, what: &str) -> Vec<String> {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for source in sources {
        match counts.iter_mut().find(|(s, _)| *s == source) {
            Some((_, n)) => *n += 1,
            None => counts.push((source, 1)),
        }
    }
    counts
        .into_iter()
        .map(|(source, n)| format!("{source}: {n} {what}"))
        .collect()
}

/// Each row's softmax share of `scores`.
pub fn shares(scores: &[f32]) -> Vec<f32> {
    let top = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let exps: Vec<f32> = scores.iter().map(|s| (s - top).exp()).collect();
    let z: f32 = exps.iter().sum();
    exps.iter().map(|e| e / z).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(text: &str, right: bool, coverage: f32) -> SpanExampleRow {
        let mut features = vec![0.0; SPAN_FEATURES.len()];
        features[feature("coverage")] = coverage;
        SpanExampleRow {
            text: text.to_owned(),
            sentence: String::new(),
            right,
            features,
        }
    }

    #[test]
    fn the_bundled_weights_read_the_current_features() {
        let model = SpanModel::bundled();
        assert_eq!(model.weights.len(), SPAN_FEATURES.len());
        // A statement covering more of the question ranks its span higher; a run of
        // lower-case words ranks below a name.
        assert!(model.weights[feature("coverage")] > 0.0);
        assert!(model.weights[feature("phrase")] < 0.0);
    }

    #[test]
    fn a_features_reach_is_how_far_it_moves_a_score_from_0_to_1() {
        let mut model = SpanModel::bundled().as_ref().clone();
        let at = feature("type_meaning");
        let mut row = vec![0.0; SPAN_FEATURES.len()];
        let without = model.score(&row);
        row[at] = 1.0;
        let with = model.score(&row);
        assert!(((with - without).abs() - model.reach(at)).abs() < 1e-6);
        assert!(model.reach(at) > 0.0);
        model.weights[at] = -2.0;
        model.scale[at] = 4.0;
        assert!((model.reach(at) - 0.5).abs() < 1e-6);
        model.scale[at] = 0.0;
        assert_eq!(model.reach(at), f32::INFINITY);
    }

    #[test]
    fn training_learns_that_covering_the_question_answers_it() {
        // The right span's statement covers more of the question; a question without a
        // right span teaches nothing.
        let mut examples = Vec::new();
        for i in 0..20 {
            let answerable = i % 4 != 0;
            examples.push(SpanExample {
                source: format!("c{}", i % 2),
                question: format!("q{i}"),
                answerable,
                gated: true,
                rows: vec![
                    row("B", false, 0.3),
                    row("A", answerable, if answerable { 0.8 } else { 0.9 }),
                ],
            });
        }
        let model = SpanModel::train(&examples, TrainSettings::default());
        let test = [row("B", false, 0.2), row("A", true, 0.9)];
        assert_eq!(model.first(&test), Some(1));
        assert_eq!(
            model.trained_on,
            vec!["c0: 10 questions", "c1: 10 questions"]
        );
    }

    #[test]
    fn the_passage_signals_read_the_ranking() {
        let f = |coverage: f32| {
            let mut features = vec![0.0; SPAN_FEATURES.len()];
            features[feature("coverage")] = coverage;
            features[feature("type_fit")] = 1.0;
            features
        };
        let (a, b) = (f(0.8), f(0.3));
        // Two rows propose "Ann" (the second ranked lower), one "Bo".
        let scores = [2.0, 1.0, 0.0];
        let texts = ["Ann", "Bo", "ann"];
        let signals = passage_signals(&scores, &texts, &[&a, &b, &b]).expect("spans give signals");
        assert_eq!(signals.len(), PASSAGE_SIGNALS.len());
        let z = 1.0 + (-1f32).exp() + (-2f32).exp();
        assert!((signals[0] - 1.0 / z).abs() < 1e-6, "{signals:?}");
        assert!((signals[1] - (1.0 + (-2f32).exp()) / z).abs() < 1e-6);
        assert!((signals[2] - 1.0).abs() < 1e-6, "the margin over Bo");
        assert_eq!(&signals[3..], &[0.8, 0.0, 1.0]);
        // A lone text has the largest margin; no spans, no signals.
        let lone = passage_signals(&[1.0, 0.5], &["Ann", "Ann"], &[&a, &b]).expect("signals");
        assert_eq!(lone[2], MAX_MARGIN);
        assert!(passage_signals(&[], &[], &[]).is_none());
    }

    #[test]
    fn a_calibrated_confidence_rises_with_what_tells_right_from_wrong() {
        // First spans with a statement covering more of the question are right more
        // often; a question the reader declines (not gated) is not fitted on.
        let mut examples = Vec::new();
        for i in 0..40 {
            let right = i % 2 == 0;
            let coverage = if right { 0.9 } else { 0.4 };
            examples.push(SpanExample {
                source: format!("c{}", i % 3),
                question: format!("q{i}"),
                answerable: true,
                gated: i != 39,
                rows: vec![row("A", right, coverage), row("B", false, 0.1)],
            });
        }
        let mut model = SpanModel::bundled().as_ref().clone();
        model.confidence = None;
        assert_eq!(model.chance(&[1.0], &["A"], &[&[0.0; 26]]), None);
        assert_eq!(model.calibrate(&examples, TrainSettings::default()), 39);
        let confidence = model.confidence.as_ref().expect("fitted");
        assert_eq!(confidence.signals, PASSAGE_SIGNALS);
        assert_eq!(confidence.fitted_on[0], "c0: 13 answers");
        let chance = |coverage: f32| {
            let rows = [row("A", true, coverage), row("B", false, 0.1)];
            let scores: Vec<f32> = rows.iter().map(|r| model.score(&r.features)).collect();
            let features: Vec<&[f32]> = rows.iter().map(|r| r.features.as_slice()).collect();
            model
                .chance(&scores, &["A", "B"], &features)
                .expect("a chance")
        };
        assert!(
            chance(0.9) > 0.7 && chance(0.4) < 0.3,
            "{} {}",
            chance(0.9),
            chance(0.4)
        );
        // Written and read back whole.
        let text = serde_json::to_string(&model).expect("json");
        assert_eq!(SpanModel::parse(&text, "x.json").expect("valid"), model);
    }

    #[test]
    fn the_bundled_weights_carry_a_confidence_for_the_current_signals() {
        let model = SpanModel::bundled();
        let confidence = model.confidence.as_ref().expect("a bundled confidence");
        assert_eq!(confidence.signals, PASSAGE_SIGNALS);
        assert!(!confidence.fitted_on.is_empty());
    }

    #[test]
    fn a_confidence_for_other_signals_is_refused() {
        let mut model = SpanModel::bundled().as_ref().clone();
        if let Some(confidence) = model.confidence.as_mut() {
            confidence.signals.pop();
        }
        let text = serde_json::to_string(&model).expect("json");
        let error = SpanModel::parse(&text, "x.json").expect_err("refused");
        assert!(error.to_string().contains("--calibrate"), "{error}");
    }

    #[test]
    fn weights_for_other_features_are_refused() {
        let mut model = SpanModel::bundled().as_ref().clone();
        model.features.pop();
        let text = serde_json::to_string(&model).expect("json");
        let error = SpanModel::parse(&text, "x.json").expect_err("refused");
        assert!(error.to_string().contains("retrain them"), "{error}");
    }
}
