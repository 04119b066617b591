//! Which question words go with which relation-name words: associations learned from
//! the plans that answered QA pairs of other domains.
//!
//! The first stage and the reader's other features see a relation as explaining a
//! question word when the two share letters ("directed" and `directed_by`) or, with an
//! embedder, a meaning. Graphs name relations in their own words, and questions
//! paraphrase them: "who *makes* X" asks for `manufacturer`, "where was X *born*" for
//! `place of birth`, "*where* is …" for a relation that reaches a place (`based_in`,
//! `headquarters location`). Such pairs recur across domains, so they can be learned:
//! in every training question that has a right plan, each question word is counted
//! with each word of each candidate plan's relations, and with the right plans apart.
//! A pair's **association** is how much more often than a candidate at large a
//! candidate holding that relation word is the right one when the question holds that
//! word (a smoothed log ratio; 0 for a pair never seen). The opening wh-word is counted
//! with the words of the last hop, the one that reaches the answer, and with the
//! direction that hop is walked.
//!
//! What is learned from a domain must not score that domain: `kgmesh reader train`
//! fits each training graph's lexicon features with a lexicon learned from the other
//! graphs (cross-fitting), as a graph the reader has never seen will be read.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::scoring::text::{relation_stems, words, WH_WORDS};

/// Pseudo-candidates by which a pair's ratio is drawn towards the prior: a pair seen
/// with a handful of candidates counts for little. Chosen before any measurement.
pub const SMOOTHING: f64 = 2.0;

/// Pairs kept in a lexicon: those seen in a right plan, or with at least this many
/// candidates (what is never right is worth knowing only when seen often).
pub const KEEP_UNSEEN_FROM: f64 = 5.0;

/// The features the lexicon gives a candidate, in order ([`super::features::FEATURES`]
/// ends with them).
pub const LEXICON_FEATURES: &[&str] = &[
    "lexicon_hop_min",
    "lexicon_hop_mean",
    "lexicon_words",
    "lexicon_asking_last",
    "lexicon_asking_direction",
];

/// The opening of "how many" / "how much", which asks for an amount: an asking word
/// beside the text toolkit's [`WH_WORDS`].
const HOW: &str = "how";

/// The token of a last hop's direction, counted with the asking word.
fn direction_token(inverse: bool) -> &'static str {
    if inverse {
        "\u{2190}"
    } else {
        "\u{2192}"
    }
}

/// One hop of a candidate plan as the lexicon reads it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Hop {
    pub stems: Vec<String>,
    pub inverse: bool,
}

impl Hop {
    pub fn new(relation: &str, inverse: bool) -> Self {
        let mut stems = relation_stems(relation);
        stems.sort();
        stems.dedup();
        Self { stems, inverse }
    }
}

/// What the lexicon reads of one question and its candidates.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LexiconInput {
    /// The question's content stems outside its entities' names, each once.
    pub words: Vec<String>,
    /// The opening wh-word ("" when the question has none).
    pub asking: String,
    /// Each candidate's hops, in the candidates' order.
    pub candidates: Vec<Vec<Hop>>,
}

impl LexiconInput {
    pub fn new(question: &str, stems: &[String], candidates: Vec<Vec<Hop>>) -> Self {
        let mut words_once: Vec<String> = stems.to_vec();
        words_once.sort();
        words_once.dedup();
        Self {
            words: words_once,
            asking: asking_word(question).to_owned(),
            candidates,
        }
    }
}

/// The wh-word ([`WH_WORDS`] or "how") among a question's first three words ("" when
/// none).
pub fn asking_word(question: &str) -> &'static str {
    words(question)
        .iter()
        .take(3)
        .find_map(|w| {
            WH_WORDS
                .iter()
                .chain(std::iter::once(&HOW))
                .find(|a| **a == w.as_str())
        })
        .copied()
        .unwrap_or("")
}

/// Learned associations; empty (every feature 0) until trained.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Lexicon {
    /// "question stem\trelation stem" → association.
    #[serde(default)]
    pub words: BTreeMap<String, f32>,
    /// "asking word\tlast-hop stem or direction token" → association.
    #[serde(default)]
    pub asking: BTreeMap<String, f32>,
}

/// Counts of one kind of pair: (weight in right plans, candidates).
#[derive(Default)]
struct Counts(HashMap<String, (f64, f64)>);

impl Counts {
    fn add(&mut self, key: String, right: f64) {
        let entry = self.0.entry(key).or_default();
        entry.0 += right;
        entry.1 += 1.0;
    }

    fn associations(self) -> BTreeMap<String, f32> {
        let (right, all) = self
            .0
            .values()
            .fold((0.0, 0.0), |(r, a), (pr, pa)| (r + pr, a + pa));
        if right <= 0.0 || all <= 0.0 {
            return BTreeMap::new();
        }
        let prior = right / all;
        self.0
            .into_iter()
            .filter(|(_, (r, a))| *r > 0.0 || *a >= KEEP_UNSEEN_FROM)
            .map(|(key, (r, a))| {
                let share = (r + SMOOTHING * prior) / (a + SMOOTHING);
                // Four decimals: the file stays readable and the same on every machine.
                let value = ((share / prior).ln() * 1e4).round() / 1e4;
                (key, value as f32)
            })
            .collect()
    }
}

fn key(a: &str, b: &str) -> String {
    format!("{a}\t{b}")
}

impl Lexicon {
    /// Learns from questions with their candidates and which of them are right (a
    /// question none of whose candidates is right teaches nothing).
    pub fn learn<'a>(questions: impl IntoIterator<Item = (&'a LexiconInput, Vec<bool>)>) -> Self {
        let mut word_counts = Counts::default();
        let mut asking_counts = Counts::default();
        for (input, right) in questions {
            let count = right.iter().filter(|r| **r).count();
            if count == 0 {
                continue;
            }
            let share = 1.0 / count as f64;
            for (hops, &is_right) in input.candidates.iter().zip(&right) {
                let weight = if is_right { share } else { 0.0 };
                let mut stems: Vec<&str> = hops
                    .iter()
                    .flat_map(|h| h.stems.iter().map(String::as_str))
                    .collect();
                stems.sort_unstable();
                stems.dedup();
                for w in &input.words {
                    for s in &stems {
                        word_counts.add(key(w, s), weight);
                    }
                }
                if let (false, Some(last)) = (input.asking.is_empty(), hops.last()) {
                    for s in &last.stems {
                        asking_counts.add(key(&input.asking, s), weight);
                    }
                    asking_counts.add(key(&input.asking, direction_token(last.inverse)), weight);
                }
            }
        }
        Self {
            words: word_counts.associations(),
            asking: asking_counts.associations(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_empty() && self.asking.is_empty()
    }

    fn word(&self, w: &str, s: &str) -> Option<f32> {
        self.words.get(&key(w, s)).copied()
    }

    /// The best association of any question word with any of `stems` (0 when no pair
    /// is known).
    fn best(&self, words: &[String], stems: &[String]) -> f32 {
        let mut best: Option<f32> = None;
        for w in words {
            for s in stems {
                if let Some(a) = self.word(w, s) {
                    best = Some(best.map_or(a, |b| b.max(a)));
                }
            }
        }
        best.unwrap_or(0.0)
    }

    /// [`LEXICON_FEATURES`] of each candidate of `input`.
    pub fn features(&self, input: &LexiconInput) -> Vec<Vec<f32>> {
        input
            .candidates
            .iter()
            .map(|hops| {
                if hops.is_empty() || self.is_empty() {
                    return vec![0.0; LEXICON_FEATURES.len()];
                }
                let per_hop: Vec<f32> = hops
                    .iter()
                    .map(|h| self.best(&input.words, &h.stems))
                    .collect();
                let min = per_hop.iter().copied().fold(f32::MAX, f32::min);
                let mean = per_hop.iter().sum::<f32>() / per_hop.len() as f32;
                let all: Vec<String> = hops.iter().flat_map(|h| h.stems.clone()).collect();
                let words = if input.words.is_empty() {
                    0.0
                } else {
                    input
                        .words
                        .iter()
                        .map(|w| self.best(std::slice::from_ref(w), &all).max(0.0))
                        .sum::<f32>()
                        / input.words.len() as f32
                };
                let last = hops.last().expect("hops is not empty");
                let asking_last = last
                    .stems
                    .iter()
                    .filter_map(|s| self.asking.get(&key(&input.asking, s)).copied())
                    .fold(None, |b: Option<f32>, a| Some(b.map_or(a, |b| b.max(a))))
                    .unwrap_or(0.0);
                let direction = self
                    .asking
                    .get(&key(&input.asking, direction_token(last.inverse)))
                    .copied()
                    .unwrap_or(0.0);
                vec![min, mean, words, asking_last, direction]
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(question: &str, stems: &[&str], candidates: &[&[(&str, bool)]]) -> LexiconInput {
        LexiconInput::new(
            question,
            &stems.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>(),
            candidates
                .iter()
                .map(|hops| hops.iter().map(|(r, inv)| Hop::new(r, *inv)).collect())
                .collect(),
        )
    }

    #[test]
    fn a_paraphrase_seen_in_right_plans_is_associated_and_a_decoy_is_not() {
        // "makes" is answered by `manufacturer` in five questions, never by `fleet`.
        let seen: Vec<LexiconInput> = ["Corvid", "Migrastat", "Heron", "Stratos", "Tern"]
            .iter()
            .map(|name| {
                input(
                    &format!("who makes {name}"),
                    &["make"],
                    &[&[("fleet", true)], &[("manufacturer", false)]],
                )
            })
            .collect();
        let lexicon = Lexicon::learn(seen.iter().map(|q| (q, vec![false, true])));
        let unseen = input(
            "who makes the Albatross",
            &["make"],
            &[
                &[("fleet", true)],
                &[("manufacturer", false)],
                &[("hub", false)],
            ],
        );
        let features = lexicon.features(&unseen);
        let hop_min = |i: usize| features[i][0];
        assert!(hop_min(1) > 0.5, "{features:?}");
        assert!(hop_min(0) < -0.5, "{features:?}");
        assert_eq!(hop_min(2), 0.0, "a pair never seen says nothing");
        // The asking word goes with the right plan's last hop and its direction.
        assert!(features[1][3] > 0.0 && features[1][4] > 0.0, "{features:?}");
        assert!(features[0][4] < 0.0, "{features:?}");
        // Learning is deterministic and keeps four decimals.
        assert_eq!(
            lexicon,
            Lexicon::learn(seen.iter().map(|q| (q, vec![false, true])))
        );
    }

    #[test]
    fn questions_without_a_right_plan_teach_nothing_and_an_empty_lexicon_gives_zeros() {
        let q = input("who makes X", &["make"], &[&[("manufacturer", false)]]);
        let lexicon = Lexicon::learn([(&q, vec![false])]);
        assert!(lexicon.is_empty());
        assert_eq!(
            lexicon.features(&q),
            vec![vec![0.0; LEXICON_FEATURES.len()]]
        );
    }

    #[test]
    fn the_asking_word_is_read_from_the_opening_words() {
        assert_eq!(asking_word("Where was Hal born?"), "where");
        assert_eq!(asking_word("In which city is X?"), "which");
        assert_eq!(asking_word("Tell me the city of X"), "");
    }
}
