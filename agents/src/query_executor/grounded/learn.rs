//! Learning to choose among candidates from question/answer pairs (GraphRAFT §4.1,
//! without a model to fine-tune): every candidate of a training question runs, those
//! whose answers equal the known ones are right, and an averaged perceptron learns
//! weights for pairs of a question word and a token of a candidate's shape (its labels,
//! types, keys and clauses), added to the cold score. A word such as "frequently" thus
//! learns to favour counting `ORDERS` relationships, for any value the question names.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::{Candidate, Question};

/// Passes over the training examples.
pub const EPOCHS: usize = 8;
/// The perceptron's step, small beside the cold score's unit so that learning shifts
/// close calls rather than overrides what the question says (calibrated on fold 0/2 of
/// the Northwind pairs: 0.01 / 0.02 / 0.05 / 0.2 / 1.0 gave warm 57.3 / 58.2 / 58.8 /
/// 57.3 / 48.0 %).
const RATE: f32 = 0.05;
/// A right candidate must lead the best wrong one by this much, or the weights move
/// (fold 0/2: margin 0 / 0.5 / 1 gave warm 62.0 / 64.0 / 64.3 %; 8 or 16 epochs
/// within 0.3 points).
const MARGIN: f32 = 0.5;

/// What a verified plan adds to a candidate of its shape, times the similarity of the
/// question it was verified on (fold 0/2 of the Northwind pairs: 0 / 0.5 / 1 / 2 / 4
/// gave warm 69.3 / 70.2 / 70.2 / 67.3 / 61.4 %).
const REPLAY: f32 = 1.0;

/// One training question: its stems, for each tried candidate its shape tokens, cold
/// score and whether its answers were right, and the signatures of the right ones.
#[derive(Serialize, Deserialize)]
struct Example {
    stems: Vec<u32>,
    candidates: Vec<(Vec<u32>, f32, bool)>,
    right: Vec<String>,
    /// The plan-store key of a stored plan: storing it again replaces the example,
    /// deleting it removes the example. `None` for pairs learned directly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    key: Option<String>,
}

#[derive(Default)]
pub(super) struct Ranker {
    ids: HashMap<String, u32>,
    examples: Vec<Example>,
    weights: HashMap<u64, f32>,
    /// Verified plans: a right candidate's signature → the examples it was right for.
    plans: HashMap<String, Vec<usize>>,
    /// Each example's stems weighted by inverse document frequency, unit length.
    vectors: Vec<HashMap<u32, f32>>,
    idf: HashMap<u32, f32>,
}

/// Version of the saved form; a file of another version is refused (its cold scores
/// and tokens came from other code), to be learned again.
pub const SAVED_FORMAT: u32 = 1;

/// What learning kept, as saved: the training questions, their words and tokens by
/// name. Loading refits the weights.
#[derive(Serialize, Deserialize)]
pub(super) struct Saved {
    format: u32,
    /// The labels and keys of the graph learned on ([`super::GroundedCypher`] writes
    /// it): plans learned on one graph are refused on another.
    graph: String,
    words: Vec<String>,
    examples: Vec<Example>,
}

/// The feature of a shape token alone (a bias per token).
const ANY_WORD: u32 = u32::MAX;

fn feature(word: u32, token: u32) -> u64 {
    (u64::from(word) << 32) | u64::from(token)
}

/// The tokens of a candidate's shape: the words of its signature (labels, types, keys,
/// clauses and functions), once each.
fn shape_tokens(candidate: &Candidate) -> Vec<String> {
    let mut tokens: Vec<String> = candidate
        .shape
        .signature
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
        .collect();
    tokens.sort();
    tokens.dedup();
    tokens
}

impl Ranker {
    fn id(&mut self, text: &str) -> u32 {
        let next = self.ids.len() as u32;
        *self.ids.entry(text.to_owned()).or_insert(next)
    }

    pub fn examples(&self) -> usize {
        self.examples.len()
    }

    /// The training questions kept, for [`Ranker::load`].
    pub fn save(&self, graph: String) -> Saved {
        let mut words = vec![String::new(); self.ids.len()];
        for (word, &id) in &self.ids {
            words[id as usize] = word.clone();
        }
        Saved {
            format: SAVED_FORMAT,
            graph,
            words,
            examples: self
                .examples
                .iter()
                .map(|e| Example {
                    stems: e.stems.clone(),
                    candidates: e.candidates.clone(),
                    right: e.right.clone(),
                    key: e.key.clone(),
                })
                .collect(),
        }
    }

    /// Adds saved training questions to those kept (fit again to use them). Returns
    /// how many were added.
    pub fn load(&mut self, saved: Saved, graph: &str) -> Result<usize, String> {
        if saved.format != SAVED_FORMAT {
            return Err(format!(
                "saved in format {}, this version reads format {SAVED_FORMAT}: learn again",
                saved.format
            ));
        }
        if saved.graph != graph {
            return Err(
                "learned on a graph with other labels or property keys: learn again on this one"
                    .to_owned(),
            );
        }
        let size = saved.words.len();
        let mut map = Vec::with_capacity(size);
        for word in &saved.words {
            map.push(self.id(word));
        }
        let remap = |ids: &[u32]| -> Result<Vec<u32>, String> {
            ids.iter()
                .map(|&i| {
                    map.get(i as usize)
                        .copied()
                        .ok_or_else(|| format!("word {i} of {size} is out of range"))
                })
                .collect()
        };
        let mut added = Vec::with_capacity(saved.examples.len());
        for example in saved.examples {
            let stems = remap(&example.stems)?;
            let candidates = example
                .candidates
                .iter()
                .map(|(tokens, cold, right)| Ok((remap(tokens)?, *cold, *right)))
                .collect::<Result<Vec<_>, String>>()?;
            added.push(Example {
                stems,
                candidates,
                right: example.right,
                key: example.key,
            });
        }
        let count = added.len();
        for example in &added {
            if let Some(key) = &example.key {
                self.forget(key);
            }
        }
        self.examples.extend(added);
        Ok(count)
    }

    pub fn trained(&self) -> bool {
        !self.weights.is_empty()
    }

    /// Keeps a training question whose tried candidates include a right one. With a
    /// `key`, it replaces the example kept under that key (which goes even when this
    /// one is not kept).
    pub fn add(
        &mut self,
        question: &Question,
        tried: &[(Candidate, f32, bool)],
        key: Option<&str>,
    ) {
        if let Some(key) = key {
            self.forget(key);
        }
        if !tried.iter().any(|(_, _, right)| *right) {
            return;
        }
        let stems = question.stems.iter().map(|s| self.id(s)).collect();
        let candidates = tried
            .iter()
            .map(|(candidate, cold, right)| {
                let tokens = shape_tokens(candidate).iter().map(|t| self.id(t)).collect();
                (tokens, *cold, *right)
            })
            .collect();
        let mut right: Vec<String> = tried
            .iter()
            .filter(|(_, _, right)| *right)
            .map(|(candidate, _, _)| candidate.shape.signature.clone())
            .collect();
        right.sort();
        right.dedup();
        self.examples.push(Example {
            stems,
            candidates,
            right,
            key: key.map(str::to_owned),
        });
    }

    /// Drops the example kept under `key`; whether there was one. Fit again to stop
    /// using it.
    pub fn forget(&mut self, key: &str) -> bool {
        let before = self.examples.len();
        self.examples.retain(|e| e.key.as_deref() != Some(key));
        self.examples.len() != before
    }

    fn learned(weights: &HashMap<u64, f32>, stems: &[u32], tokens: &[u32]) -> f32 {
        let mut sum = 0.0;
        for &token in tokens {
            sum += weights
                .get(&feature(ANY_WORD, token))
                .copied()
                .unwrap_or(0.0);
            for &stem in stems {
                sum += weights.get(&feature(stem, token)).copied().unwrap_or(0.0);
            }
        }
        sum
    }

    fn update(weights: &mut HashMap<u64, f32>, stems: &[u32], tokens: &[u32], step: f32) {
        for &token in tokens {
            *weights.entry(feature(ANY_WORD, token)).or_default() += step;
            for &stem in stems {
                *weights.entry(feature(stem, token)).or_default() += step;
            }
        }
    }

    /// Trains an averaged perceptron over the kept examples: where the best-scored wrong
    /// candidate comes within [`MARGIN`] of the best-scored right one, the right one
    /// gains and the wrong one loses.
    pub fn fit(&mut self, epochs: usize) {
        let mut weights: HashMap<u64, f32> = HashMap::new();
        let mut total: HashMap<u64, f32> = HashMap::new();
        let mut steps = 0usize;
        for _ in 0..epochs {
            for example in &self.examples {
                let score = |tokens: &[u32], cold: f32| {
                    cold + Self::learned(&weights, &example.stems, tokens)
                };
                let best = |right: bool| {
                    example
                        .candidates
                        .iter()
                        .filter(|(_, _, r)| *r == right)
                        .map(|(tokens, cold, _)| (tokens, score(tokens, *cold)))
                        .max_by(|a, b| a.1.total_cmp(&b.1))
                };
                if let (Some((good, good_score)), Some((bad, bad_score))) =
                    (best(true), best(false))
                {
                    if bad_score + MARGIN >= good_score {
                        let (good, bad) = (good.clone(), bad.clone());
                        Self::update(&mut weights, &example.stems, &good, RATE);
                        Self::update(&mut weights, &example.stems, &bad, -RATE);
                    }
                }
                steps += 1;
                for (key, value) in &weights {
                    *total.entry(*key).or_default() += value;
                }
            }
        }
        let steps = steps.max(1) as f32;
        self.weights = total
            .into_iter()
            .map(|(key, sum)| (key, sum / steps))
            .filter(|(_, w)| w.abs() > 1e-6)
            .collect();
        self.index_plans();
    }

    /// Indexes the verified plans by signature, and the training questions' stems for
    /// the similarity a replayed plan is weighted by.
    fn index_plans(&mut self) {
        let n = self.examples.len() as f32;
        let mut df: HashMap<u32, f32> = HashMap::new();
        for example in &self.examples {
            let mut stems = example.stems.clone();
            stems.sort_unstable();
            stems.dedup();
            for stem in stems {
                *df.entry(stem).or_default() += 1.0;
            }
        }
        self.idf = df
            .into_iter()
            .map(|(stem, df)| (stem, (1.0 + n / df).ln()))
            .collect();
        self.plans.clear();
        self.vectors = Vec::with_capacity(self.examples.len());
        for (i, example) in self.examples.iter().enumerate() {
            for signature in &example.right {
                self.plans.entry(signature.clone()).or_default().push(i);
            }
            let known: Vec<Option<u32>> = example.stems.iter().map(|s| Some(*s)).collect();
            self.vectors.push(self.vector(&known));
        }
    }

    /// Unit-length idf-weighted stems (given once each); a stem no training question
    /// has (`None`) weighs as the rarest and only lengthens the vector.
    fn vector(&self, stems: &[Option<u32>]) -> HashMap<u32, f32> {
        let rarest = (1.0 + self.examples.len() as f32).ln();
        let mut out: HashMap<u32, f32> = HashMap::new();
        let mut unknown = 0.0f32;
        for stem in stems {
            match stem {
                Some(id) => {
                    let weight = self.idf.get(id).copied().unwrap_or(rarest);
                    out.insert(*id, weight);
                }
                None => unknown += rarest * rarest,
            }
        }
        let norm = (out.values().map(|w| w * w).sum::<f32>() + unknown).sqrt();
        if norm > 0.0 {
            out.values_mut().for_each(|w| *w /= norm);
        }
        out
    }

    /// The training questions' similarity to a question, by their index.
    pub fn similarities(&self, question: &Question) -> Vec<f32> {
        let mut stems: Vec<&String> = question.stems.iter().collect();
        stems.sort();
        stems.dedup();
        let known: Vec<Option<u32>> = stems.iter().map(|s| self.ids.get(*s).copied()).collect();
        let query = self.vector(&known);
        self.vectors
            .iter()
            .map(|v| {
                query
                    .iter()
                    .map(|(k, w)| w * v.get(k).copied().unwrap_or(0.0))
                    .sum()
            })
            .collect()
    }

    /// What verified plans add to a candidate: its signature's best-matching training
    /// question's similarity, times [`REPLAY`].
    pub fn replay(&self, similarities: &[f32], candidate: &Candidate) -> f32 {
        self.plans
            .get(&candidate.shape.signature)
            .map(|examples| {
                examples
                    .iter()
                    .map(|&i| similarities.get(i).copied().unwrap_or(0.0))
                    .fold(0.0f32, f32::max)
            })
            .unwrap_or(0.0)
            * REPLAY
    }

    /// What learning adds to a candidate's cold score for this question.
    pub fn score(&self, question: &Question, candidate: &Candidate) -> f32 {
        if self.weights.is_empty() {
            return 0.0;
        }
        let stems: Vec<u32> = question
            .stems
            .iter()
            .filter_map(|s| self.ids.get(s).copied())
            .collect();
        let tokens: Vec<u32> = shape_tokens(candidate)
            .iter()
            .filter_map(|t| self.ids.get(t).copied())
            .collect();
        Self::learned(&self.weights, &stems, &tokens)
    }
}
