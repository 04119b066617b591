//! The reader's learned weights: a linear scorer over [`FEATURES`], trained listwise
//! (softmax over a question's candidates) from QA pairs of many domains.
//!
//! Training is plain full-batch gradient descent (Adam) with no randomness, so the
//! same examples give the same weights on every machine. Features are standardized
//! with the training set's mean and spread, which the model keeps.

use std::{path::Path, sync::Arc};

use serde::{Deserialize, Serialize};

use super::{
    features::FEATURES,
    lexicon::{Lexicon, LexiconInput, LEXICON_FEATURES},
};

/// A target from which a candidate counts as reaching the gold answers exactly.
pub const EXACT: f32 = 0.99;

/// The model file's format version.
pub const FORMAT: u32 = 1;

/// The bundled weights, for reading with words only and with an embedder
/// (`scripts/reader-train` writes them; see `docs/reader.md`).
const BUNDLED_LEXICAL: &str = include_str!("weights-lexical.json");
const BUNDLED_EMBEDDED: &str = include_str!("weights-embedded.json");

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReaderModel {
    pub format: u32,
    /// Feature names, in weight order: a file written for other features is refused.
    pub features: Vec<String>,
    pub mean: Vec<f32>,
    pub scale: Vec<f32>,
    pub weights: Vec<f32>,
    /// Candidates (by first-stage relevance) the reader re-ranks per question.
    pub candidates: usize,
    /// What it was trained on: one line per data set, with its question count.
    #[serde(default)]
    pub trained_on: Vec<String>,
    /// How it was trained (for the record).
    #[serde(default)]
    pub training: TrainSettings,
    /// The chance that the plan ranked first is right, from what the ranking saw.
    #[serde(default)]
    pub confidence: Option<Confidence>,
    /// The same chance for the plan the first stage ranks first (what the KG-Linker
    /// follows with re-ranking off): [`Confidence::inputs`] over the first stage's
    /// relevance instead of this model's scores.
    #[serde(default)]
    pub first_stage_confidence: Option<Confidence>,
    /// From the first stage's plan's chance to its answer's chance of being right: a
    /// logistic model over what the whole run knows (the coordinator's
    /// `confidence::SIGNALS`, the plan's log-odds first), fitted by `kgmesh reader
    /// calibrate` on whole runs' answers. `None`: the plan's chance is the answer's.
    #[serde(default)]
    pub answer_calibration: Option<AnswerCalibration>,
    /// Question words against relation-name words, learned from the training graphs'
    /// right plans ([`Lexicon`]); its features are the last of [`FEATURES`].
    #[serde(default)]
    pub lexicon: Lexicon,
}

/// The answer calibration as stored: the signals it reads, by name, and the logistic
/// model over them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerCalibration {
    pub signals: Vec<String>,
    pub model: Confidence,
}

/// A logistic model of "the plan ranked first reaches the right answers" over
/// [`Confidence::inputs`], fitted on out-of-domain rankings: each training domain is
/// ranked by weights trained without it, so the chance is learned as it holds on a
/// graph the ranker has not seen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Confidence {
    pub mean: Vec<f32>,
    pub scale: Vec<f32>,
    pub weights: Vec<f32>,
    pub bias: f32,
}

/// Each column's mean and spread over `rows` (spread 1 where a column is constant),
/// which a model keeps to standardize what it reads.
fn standardization(rows: &[&[f32]], n: usize) -> (Vec<f32>, Vec<f32>) {
    let mut mean = vec![0.0f32; n];
    let mut scale = vec![1.0f32; n];
    if rows.is_empty() {
        return (mean, scale);
    }
    let count = rows.len() as f64;
    for j in 0..n {
        let m = rows.iter().map(|r| r[j] as f64).sum::<f64>() / count;
        let var = rows.iter().map(|r| (r[j] as f64 - m).powi(2)).sum::<f64>() / count;
        mean[j] = m as f32;
        scale[j] = if var > 1e-12 { var.sqrt() as f32 } else { 1.0 };
    }
    (mean, scale)
}

/// Adam's first and second moment estimates: the optimizer of both models.
struct Adam {
    m1: Vec<f64>,
    m2: Vec<f64>,
    steps: i32,
}

impl Adam {
    const BETA1: f64 = 0.9;
    const BETA2: f64 = 0.999;
    const EPS: f64 = 1e-8;

    fn new(n: usize) -> Self {
        Self {
            m1: vec![0.0; n],
            m2: vec![0.0; n],
            steps: 0,
        }
    }

    /// One step of `w` against `grad`.
    fn step(&mut self, w: &mut [f64], grad: &[f64], learning_rate: f32) {
        self.steps += 1;
        for j in 0..w.len() {
            self.m1[j] = Self::BETA1 * self.m1[j] + (1.0 - Self::BETA1) * grad[j];
            self.m2[j] = Self::BETA2 * self.m2[j] + (1.0 - Self::BETA2) * grad[j] * grad[j];
            let m_hat = self.m1[j] / (1.0 - Self::BETA1.powi(self.steps));
            let v_hat = self.m2[j] / (1.0 - Self::BETA2.powi(self.steps));
            w[j] -= learning_rate as f64 * m_hat / (v_hat.sqrt() + Self::EPS);
        }
    }
}

/// One question for fitting the confidence: the ranker's scores of its candidates, their
/// features, and whether the first is right.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    pub inputs: Vec<f32>,
    pub right: bool,
    /// The question has answers (the graph can answer it).
    pub answerable: bool,
}

impl Confidence {
    /// What the confidence reads: the ranker's softmax share of the first candidate and
    /// its margin over the second, then the first candidate's features.
    pub fn inputs(scores: &[f32], features: &[Vec<f32>]) -> Vec<f32> {
        let n = FEATURES.len();
        if scores.is_empty() {
            return vec![0.0; n + 2];
        }
        let mut order: Vec<usize> = (0..scores.len()).collect();
        order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
        let top = scores[order[0]];
        let z: f32 = scores.iter().map(|s| (s - top).exp()).sum();
        let margin = order
            .get(1)
            .map_or(MAX_MARGIN, |&j| (top - scores[j]).min(MAX_MARGIN));
        let mut inputs = vec![1.0 / z, margin];
        inputs.extend_from_slice(&features[order[0]]);
        inputs
    }

    pub fn chance(&self, inputs: &[f32]) -> f32 {
        let logit = self.bias + standardized_dot(inputs, &self.mean, &self.scale, &self.weights);
        1.0 / (1.0 + (-logit).exp())
    }

    /// Fits the logistic model (full-batch Adam, L2; deterministic).
    pub fn fit(data: &[Ranked], settings: TrainSettings) -> Option<Self> {
        let n = data.first()?.inputs.len();
        let rows = data.len() as f64;
        let inputs: Vec<&[f32]> = data.iter().map(|r| r.inputs.as_slice()).collect();
        let (mean, scale) = standardization(&inputs, n);
        let xs: Vec<Vec<f64>> = data
            .iter()
            .map(|r| {
                (0..n)
                    .map(|j| ((r.inputs[j] - mean[j]) / scale[j]) as f64)
                    .collect()
            })
            .collect();
        let ys: Vec<f64> = data.iter().map(|r| f64::from(u8::from(r.right))).collect();
        let mut w = vec![0.0f64; n + 1];
        let mut adam = Adam::new(n + 1);
        for _ in 0..settings.iterations {
            let mut grad: Vec<f64> = w.iter().map(|wj| settings.l2 as f64 * wj).collect();
            grad[n] = 0.0;
            for (x, y) in xs.iter().zip(&ys) {
                let logit = w[n] + x.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>();
                let p = 1.0 / (1.0 + (-logit).exp());
                for j in 0..n {
                    grad[j] += (p - y) * x[j] / rows;
                }
                grad[n] += (p - y) / rows;
            }
            adam.step(&mut w, &grad, settings.learning_rate);
        }
        Some(Self {
            mean,
            scale,
            weights: w[..n].iter().map(|x| *x as f32).collect(),
            bias: w[n] as f32,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TrainSettings {
    pub iterations: usize,
    pub learning_rate: f32,
    pub l2: f32,
}

impl Default for TrainSettings {
    fn default() -> Self {
        Self {
            iterations: 600,
            learning_rate: 0.05,
            l2: 0.001,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("cannot read reader weights {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("reader weights {path} are not a reader model: {source}")]
    Json {
        path: String,
        source: serde_json::Error,
    },
    #[error("reader weights {path} were written for other features ({found}); retrain them with `kgmesh reader train`")]
    Features { path: String, found: String },
}

/// One question's candidates for training: a feature vector and a target share (how
/// well the candidate's answers match the gold answers) each.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Example {
    pub features: Vec<Vec<f32>>,
    pub targets: Vec<f32>,
    /// The question has gold answers.
    pub answerable: bool,
    /// Nodes each candidate reaches, when it reaches all of them (`None`: a sample).
    pub reached: Vec<Option<usize>>,
    /// The gold answer is a count no node is named by: a candidate is right when it
    /// reaches that many nodes.
    pub count: Option<usize>,
    /// Each candidate in words (for reports).
    pub paths: Vec<String>,
    /// What the lexicon reads of the question and its candidates.
    pub lexicon_input: LexiconInput,
}

impl Example {
    /// Which candidates reach the gold answers exactly (what a lexicon learns from).
    pub fn exact(&self) -> Vec<bool> {
        self.targets.iter().map(|&t| t >= EXACT).collect()
    }

    /// Whether some candidate reaches the gold answers exactly (or the gold count): only
    /// such a question teaches the ranker which plan to choose.
    pub fn has_right_plan(&self) -> bool {
        self.targets.iter().any(|&t| t >= EXACT)
    }

    /// Fills the candidates' lexicon features in with `lexicon`'s.
    pub fn apply_lexicon(&mut self, lexicon: &Lexicon) {
        let from = FEATURES.len() - LEXICON_FEATURES.len();
        for (row, values) in self
            .features
            .iter_mut()
            .zip(lexicon.features(&self.lexicon_input))
        {
            row[from..].copy_from_slice(&values);
        }
    }

    /// Whether candidate `i` is right: it reaches the gold answers exactly, or the
    /// gold count of nodes.
    pub fn is_right(&self, i: usize) -> bool {
        self.targets.get(i).is_some_and(|&t| t >= EXACT)
            || self
                .count
                .is_some_and(|n| self.reached.get(i) == Some(&Some(n)))
    }
}

/// The largest margin a confidence reads between the first candidate's score and the
/// next one's (a lone candidate's margin).
pub const MAX_MARGIN: f32 = 10.0;

/// Whether a stored linear model reads `expected` (its `names`, in order) with a mean,
/// a scale and a weight for each: what every weights file is checked for on loading.
pub fn reads(
    names: &[String],
    expected: &[&str],
    mean: &[f32],
    scale: &[f32],
    weights: &[f32],
) -> bool {
    let n = expected.len();
    names == expected && mean.len() == n && scale.len() == n && weights.len() == n
}

/// A linear model's score: each input standardized by `mean` and `scale`, times its
/// weight, summed. What every learned model here reads its inputs with.
pub fn standardized_dot(inputs: &[f32], mean: &[f32], scale: &[f32], weights: &[f32]) -> f32 {
    inputs
        .iter()
        .zip(mean)
        .zip(scale)
        .zip(weights)
        .map(|(((x, m), s), w)| (x - m) / s * w)
        .sum()
}

/// A linear scorer fitted listwise: per list, the softmax over its rows' scores is
/// fitted to its targets' shares (full-batch Adam, L2, no randomness). Features are
/// standardized with the rows' mean and spread, which come back with the weights:
/// `(mean, scale, weights)`. Lists whose targets are all zero teach nothing; pass only
/// lists with a target above zero. Both of kgmesh's learned scorers use it (the graph
/// reader's plans and the passage reader's spans).
pub fn fit_listwise(
    lists: &[(&[Vec<f32>], &[f32])],
    n: usize,
    settings: TrainSettings,
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let rows: Vec<&[f32]> = lists
        .iter()
        .flat_map(|(features, _)| features.iter().map(Vec::as_slice))
        .collect();
    let (mean, scale) = standardization(&rows, n);
    let standardized: Vec<(Vec<Vec<f64>>, Vec<f64>)> = lists
        .iter()
        .map(|(features, targets)| {
            let total: f32 = targets.iter().map(|t| t.max(0.0)).sum();
            let xs = features
                .iter()
                .map(|r| {
                    (0..n)
                        .map(|j| ((r[j] - mean[j]) / scale[j]) as f64)
                        .collect()
                })
                .collect();
            let ps = targets
                .iter()
                .map(|t| (t.max(0.0) / total) as f64)
                .collect();
            (xs, ps)
        })
        .collect();
    let mut w = vec![0.0f64; n];
    let mut adam = Adam::new(n);
    let count = standardized.len().max(1) as f64;
    for _ in 0..settings.iterations {
        let mut grad: Vec<f64> = w.iter().map(|wj| settings.l2 as f64 * wj).collect();
        for (xs, ps) in &standardized {
            let logits: Vec<f64> = xs
                .iter()
                .map(|x| x.iter().zip(&w).map(|(a, b)| a * b).sum())
                .collect();
            let top = logits.iter().copied().fold(f64::MIN, f64::max);
            let exps: Vec<f64> = logits.iter().map(|l| (l - top).exp()).collect();
            let z: f64 = exps.iter().sum();
            for ((x, e), p) in xs.iter().zip(&exps).zip(ps) {
                let q = e / z;
                for j in 0..n {
                    grad[j] += (q - p) * x[j] / count;
                }
            }
        }
        adam.step(&mut w, &grad, settings.learning_rate);
    }
    (mean, scale, w.into_iter().map(|x| x as f32).collect())
}

impl ReaderModel {
    /// The weights shipped with kgmesh, for reading with words only or with an
    /// embedder.
    pub fn bundled(embedded: bool) -> Arc<Self> {
        static LEXICAL: std::sync::OnceLock<Arc<ReaderModel>> = std::sync::OnceLock::new();
        static EMBEDDED: std::sync::OnceLock<Arc<ReaderModel>> = std::sync::OnceLock::new();
        let (cell, text) = if embedded {
            (&EMBEDDED, BUNDLED_EMBEDDED)
        } else {
            (&LEXICAL, BUNDLED_LEXICAL)
        };
        cell.get_or_init(|| {
            Arc::new(Self::parse(text, "bundled").expect("the bundled reader weights are valid"))
        })
        .clone()
    }

    pub fn load(path: &Path) -> Result<Self, ModelError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ModelError::Io {
            path: shown.clone(),
            source,
        })?;
        Self::parse(&text, &shown)
    }

    fn parse(text: &str, shown: &str) -> Result<Self, ModelError> {
        let model: Self = serde_json::from_str(text).map_err(|source| ModelError::Json {
            path: shown.to_owned(),
            source,
        })?;
        if !reads(
            &model.features,
            FEATURES,
            &model.mean,
            &model.scale,
            &model.weights,
        ) {
            return Err(ModelError::Features {
                path: shown.to_owned(),
                found: model.features.join(", "),
            });
        }
        Ok(model)
    }

    /// A model that keeps the first stage's order (the baseline the learned weights are
    /// compared with).
    pub fn first_stage(candidates: usize) -> Self {
        let n = FEATURES.len();
        let mut weights = vec![0.0; n];
        let rank = FEATURES
            .iter()
            .position(|f| *f == "relevance_rank")
            .expect("the rank feature exists");
        weights[rank] = 1.0;
        Self {
            format: FORMAT,
            features: FEATURES.iter().map(|f| (*f).to_owned()).collect(),
            mean: vec![0.0; n],
            scale: vec![1.0; n],
            weights,
            candidates,
            trained_on: vec!["none: the first stage's order".to_owned()],
            training: TrainSettings::default(),
            confidence: None,
            first_stage_confidence: None,
            answer_calibration: None,
            lexicon: Lexicon::default(),
        }
    }

    /// The candidate's score (higher is better; only differences matter).
    pub fn score(&self, features: &[f32]) -> f32 {
        standardized_dot(features, &self.mean, &self.scale, &self.weights)
    }

    /// Trains weights from examples: questions one of whose candidates reaches the gold
    /// answers exactly. The others teach nothing (no candidate is right) or teach noise
    /// (a conjunction's intersection, reached by a path by coincidence), and are skipped.
    pub fn train(
        examples: &[Example],
        candidates: usize,
        settings: TrainSettings,
        trained_on: Vec<String>,
    ) -> Self {
        let useful: Vec<(&[Vec<f32>], &[f32])> = examples
            .iter()
            .filter(|e| e.has_right_plan() && e.features.len() > 1)
            .map(|e| (e.features.as_slice(), e.targets.as_slice()))
            .collect();
        let (mean, scale, w) = fit_listwise(&useful, FEATURES.len(), settings);
        Self {
            format: FORMAT,
            features: FEATURES.iter().map(|f| (*f).to_owned()).collect(),
            mean,
            scale,
            weights: w,
            candidates,
            trained_on,
            training: settings,
            confidence: None,
            first_stage_confidence: None,
            answer_calibration: None,
            lexicon: Lexicon::default(),
        }
    }

    /// What the confidence reads for one question's candidates, ranked by these
    /// weights.
    pub fn confidence_inputs(&self, features: &[Vec<f32>]) -> Vec<f32> {
        let scores: Vec<f32> = features.iter().map(|f| self.score(f)).collect();
        Confidence::inputs(&scores, features)
    }

    /// The chance that this model's first candidate is right; `None` without a fitted
    /// confidence.
    pub fn chance(&self, features: &[Vec<f32>]) -> Option<f32> {
        let confidence = self.confidence.as_ref()?;
        Some(confidence.chance(&self.confidence_inputs(features)))
    }

    /// What the first-stage confidence reads for one question's candidates, given in
    /// the first stage's order.
    pub fn first_stage_inputs(features: &[Vec<f32>]) -> Vec<f32> {
        Confidence::inputs(&first_stage_scores(features), features)
    }

    /// The chance that the first stage's first candidate is right (`features` in the
    /// first stage's order); `None` without a fitted first-stage confidence.
    pub fn first_stage_chance(&self, features: &[Vec<f32>]) -> Option<f32> {
        let confidence = self.first_stage_confidence.as_ref()?;
        Some(confidence.chance(&Self::first_stage_inputs(features)))
    }

    /// The candidate these weights rank first (an index into `features`; ties keep
    /// the earlier): with `features` in the first stage's order, a second reading of
    /// the question beside the first stage's. `None` without candidates.
    pub fn first_choice(&self, features: &[Vec<f32>]) -> Option<usize> {
        let scores: Vec<f32> = features.iter().map(|f| self.score(f)).collect();
        (0..scores.len()).max_by(|&a, &b| scores[a].total_cmp(&scores[b]).then(b.cmp(&a)))
    }

    /// Whether the lexicon learned from other graphs' questions associates a word of the
    /// question with every hop of the candidate `features` describes (its weakest hop's
    /// association is above 0): evidence for it, not only the absence of evidence
    /// against it.
    pub fn lexicon_supports(features: &[f32]) -> bool {
        let index = FEATURES
            .iter()
            .position(|f| *f == "lexicon_hop_min")
            .expect("the lexicon's features are among the reader's");
        features
            .get(index)
            .is_some_and(|&association| association > 0.0)
    }

    /// Whether the first candidate by these weights is right (an exact one).
    pub fn first_is_right(&self, example: &Example) -> bool {
        let scores: Vec<f32> = example.features.iter().map(|f| self.score(f)).collect();
        let first =
            (0..scores.len()).max_by(|&a, &b| scores[a].total_cmp(&scores[b]).then(b.cmp(&a)));
        first.is_some_and(|i| example.is_right(i))
    }

    /// Share of examples whose best-scored candidate has the best target (ties count).
    pub fn accuracy(&self, examples: &[Example]) -> f64 {
        let useful: Vec<&Example> = examples.iter().filter(|e| e.has_right_plan()).collect();
        if useful.is_empty() {
            return 0.0;
        }
        let right = useful
            .iter()
            .filter(|e| {
                let best_target = e.targets.iter().copied().fold(f32::MIN, f32::max);
                let chosen = e
                    .features
                    .iter()
                    .enumerate()
                    .max_by(|a, b| {
                        self.score(a.1)
                            .total_cmp(&self.score(b.1))
                            .then(b.0.cmp(&a.0))
                    })
                    .map(|(i, _)| i);
                chosen.is_some_and(|i| e.targets[i] >= best_target)
            })
            .count();
        right as f64 / useful.len() as f64
    }
}

/// The first stage's scores as the confidence reads them: each candidate's relevance
/// relative to the best ([`FEATURES`]' `relevance_gap`); candidates come in the first
/// stage's order, so ties keep the first first.
fn first_stage_scores(features: &[Vec<f32>]) -> Vec<f32> {
    features
        .iter()
        .map(|f| f.first().copied().unwrap_or(0.0))
        .collect()
}

/// The reader's weights in use, for each way of reading.
#[derive(Debug, Clone)]
pub struct Readers {
    pub lexical: Arc<ReaderModel>,
    pub embedded: Arc<ReaderModel>,
    /// `true`: the weights re-rank the first stage's plans; `false`: the first stage's
    /// order stands and the weights only estimate its first plan's confidence.
    pub rerank: bool,
}

impl Readers {
    /// The bundled weights.
    pub fn bundled() -> Self {
        Self {
            lexical: ReaderModel::bundled(false),
            embedded: ReaderModel::bundled(true),
            rerank: true,
        }
    }

    /// One model for both ways of reading (weights trained for one of them).
    pub fn single(model: Arc<ReaderModel>) -> Self {
        Self {
            lexical: model.clone(),
            embedded: model,
            rerank: true,
        }
    }

    /// The same weights, estimating confidence only (`rerank: false`) or re-ranking too.
    pub fn reranking(mut self, rerank: bool) -> Self {
        self.rerank = rerank;
        self
    }

    /// The same weights with `fitted` as the answer calibration of both ways of
    /// reading: one fitted on a graph's own QA pairs, read with the embedder its runs
    /// used (`reader.calibration`).
    pub fn calibrated(self, fitted: AnswerCalibration) -> Self {
        let with = |model: &Arc<ReaderModel>| {
            let mut model = model.as_ref().clone();
            model.answer_calibration = Some(fitted.clone());
            Arc::new(model)
        };
        Self {
            lexical: with(&self.lexical),
            embedded: with(&self.embedded),
            rerank: self.rerank,
        }
    }

    pub fn for_reading(&self, embedded: bool) -> &Arc<ReaderModel> {
        if embedded {
            &self.embedded
        } else {
            &self.lexical
        }
    }
}

/// The reader in use, as [`install`] set it; none until a process installs one (the
/// CLI does, from `reader.enabled`, `reader.weights` and `KGMESH_READER`).
pub fn active() -> Option<Readers> {
    ACTIVE.get().cloned().flatten()
}

static ACTIVE: std::sync::OnceLock<Option<Readers>> = std::sync::OnceLock::new();

/// Sets the reader for this process (`None`: the first stage's order only); false
/// when one was already in use.
pub fn install(readers: Option<Readers>) -> bool {
    ACTIVE.set(readers).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example(rows: &[(f32, f32)]) -> Example {
        // Feature 0 carries the signal, feature 1 is noise.
        Example {
            features: rows
                .iter()
                .map(|&(signal, noise)| {
                    let mut row = vec![0.0; FEATURES.len()];
                    row[0] = signal;
                    row[1] = noise;
                    row
                })
                .collect(),
            targets: rows
                .iter()
                .map(|&(signal, _)| if signal > 0.5 { 1.0 } else { 0.0 })
                .collect(),
            paths: Vec::new(),
            answerable: true,
            reached: Vec::new(),
            count: None,
            lexicon_input: LexiconInput::default(),
        }
    }

    #[test]
    fn training_learns_the_feature_that_separates_right_from_wrong() {
        let examples = vec![
            example(&[(1.0, 0.2), (0.0, 0.9), (0.0, 0.1)]),
            example(&[(0.0, 0.7), (1.0, 0.3)]),
            example(&[(0.0, 0.5), (0.0, 0.4), (1.0, 0.6)]),
        ];
        let model = ReaderModel::train(&examples, 10, TrainSettings::default(), vec![]);
        assert!(model.weights[0] > 0.5, "{:?}", model.weights);
        assert_eq!(model.accuracy(&examples), 1.0);
        let again = ReaderModel::train(&examples, 10, TrainSettings::default(), vec![]);
        assert_eq!(model, again, "training is deterministic");
    }

    #[test]
    fn the_first_choice_is_the_best_scored_candidate_and_a_tie_keeps_the_earlier() {
        let examples = vec![
            example(&[(1.0, 0.2), (0.0, 0.9), (0.0, 0.1)]),
            example(&[(0.0, 0.7), (1.0, 0.3)]),
        ];
        let model = ReaderModel::train(&examples, 10, TrainSettings::default(), vec![]);
        assert_eq!(model.first_choice(&examples[0].features), Some(0));
        assert_eq!(model.first_choice(&examples[1].features), Some(1));
        let twice = vec![examples[1].features[1].clone(); 2];
        assert_eq!(
            model.first_choice(&twice),
            Some(0),
            "a tie keeps the earlier"
        );
        assert_eq!(model.first_choice(&[]), None);
    }

    #[test]
    fn the_bundled_weights_match_the_features() {
        for embedded in [false, true] {
            assert_eq!(
                ReaderModel::bundled(embedded).features.len(),
                FEATURES.len()
            );
        }
    }

    #[test]
    fn weights_for_other_features_are_refused_with_the_command_to_retrain() {
        let text =
            r#"{"format":1,"features":["x"],"mean":[0],"scale":[1],"weights":[1],"candidates":5}"#;
        let error = ReaderModel::parse(text, "old.json")
            .unwrap_err()
            .to_string();
        assert!(error.contains("kgmesh reader train"), "{error}");
    }
}
