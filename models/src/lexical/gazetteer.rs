//! Entity mentions found by matching a question against the graph's names.
//!
//! Exact matching works on normalized word n-grams: every span of up to
//! [`MAX_NAME_TOKENS`] words of the question is looked up in a hash map of normalized
//! names, and the longest non-overlapping matches win ("Tom Hanks" over "Tom"). Word
//! boundaries hold by construction. Near-misses ("Tom Hank", "Amelie") are found through
//! a character-trigram index: a span's trigrams are looked up, names sharing enough of
//! them are scored by Dice similarity. Nothing scans all names per question, so the
//! index serves millions of names; very common trigrams are left out of the index since
//! they discriminate nothing.

use std::collections::HashMap;

use kgmesh_schemas::{
    graph::{Entity, ScoredEntity},
    NodeId,
};

use super::normalize::{is_stopword, normalize, tokens};

/// Names longer than this (in words) are matched only through [`Gazetteer::lookup`].
pub const MAX_NAME_TOKENS: usize = 12;
/// Trigrams shared by more names than this are not indexed.
const MAX_POSTING: usize = 50_000;
/// Dice similarity a fuzzy match inside a question must reach.
const QUESTION_FUZZY_MIN: f32 = 0.8;

/// A span of the question that names graph entities.
#[derive(Debug, Clone, PartialEq)]
pub struct Mention {
    /// Byte range in the question.
    pub start: usize,
    pub end: usize,
    /// The question's text for the span.
    pub text: String,
    /// Every entity with the matched name (several when names are shared), best first.
    pub candidates: Vec<ScoredEntity>,
    /// Exact (normalized) match rather than fuzzy.
    pub exact: bool,
}

/// Name index over a graph's entities; build once, share read-only.
pub struct Gazetteer {
    /// Normalized distinct names.
    names: Vec<Box<str>>,
    /// Entities per distinct name.
    entities: Vec<Vec<Entity>>,
    exact: HashMap<Box<str>, u32>,
    trigram_counts: Vec<u16>,
    postings: HashMap<u64, Vec<u32>>,
}

impl Gazetteer {
    /// Indexes `(id, display name)` pairs. Names that normalize to nothing are skipped.
    pub fn build(entries: impl IntoIterator<Item = (NodeId, String)>) -> Self {
        let mut gazetteer = Self {
            names: Vec::new(),
            entities: Vec::new(),
            exact: HashMap::new(),
            trigram_counts: Vec::new(),
            postings: HashMap::new(),
        };
        for (id, name) in entries {
            let key = normalize(&name);
            if key.is_empty() {
                continue;
            }
            let entity = Entity { id, name };
            if let Some(&index) = gazetteer.exact.get(key.as_str()) {
                gazetteer.entities[index as usize].push(entity);
                continue;
            }
            let index = gazetteer.names.len() as u32;
            let grams = trigrams(&key);
            for gram in &grams {
                gazetteer.postings.entry(*gram).or_default().push(index);
            }
            gazetteer
                .trigram_counts
                .push(grams.len().min(u16::MAX as usize) as u16);
            gazetteer.exact.insert(key.clone().into_boxed_str(), index);
            gazetteer.names.push(key.into_boxed_str());
            gazetteer.entities.push(vec![entity]);
        }
        gazetteer
            .postings
            .retain(|_, list| list.len() <= MAX_POSTING);
        gazetteer
            .postings
            .values_mut()
            .for_each(|list| list.shrink_to_fit());
        gazetteer
    }

    /// Distinct normalized names.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Entity mentions in a question, sorted by position. Spans covering more words win;
    /// among equally long ones exact beats fuzzy, then higher similarity, then earlier.
    pub fn find_mentions(&self, question: &str) -> Vec<Mention> {
        let words = tokens(question);
        // (start, length, name index, score, exact)
        let mut found: Vec<(usize, usize, u32, f32, bool)> = Vec::new();
        for start in 0..words.len() {
            let mut key = String::new();
            for length in 1..=MAX_NAME_TOKENS.min(words.len() - start) {
                if length > 1 {
                    key.push(' ');
                }
                key.push_str(&words[start + length - 1].0);
                if length == 1 && is_stopword(&key) {
                    continue;
                }
                if let Some(&index) = self.exact.get(key.as_str()) {
                    found.push((start, length, index, 1.0, true));
                    continue;
                }
                // Fuzzy candidates: short spans that neither start nor end on a stop-word.
                let last = &words[start + length - 1].0;
                if length <= 6
                    && !is_stopword(&words[start].0)
                    && !is_stopword(last)
                    && key.chars().count() >= 5
                {
                    if let Some((index, score)) = self.best_fuzzy(&key, length) {
                        found.push((start, length, index, score, false));
                    }
                }
            }
        }
        found.sort_by(|a, b| {
            b.1.cmp(&a.1)
                .then(b.4.cmp(&a.4))
                .then(b.3.total_cmp(&a.3))
                .then(a.0.cmp(&b.0))
        });
        let mut taken = vec![false; words.len()];
        let mut mentions = Vec::new();
        for (start, length, index, score, exact) in found {
            if taken[start..start + length].iter().any(|t| *t) {
                continue;
            }
            taken[start..start + length]
                .iter_mut()
                .for_each(|t| *t = true);
            mentions.push(self.mention(question, &words, start, length, index, score, exact));
        }
        mentions.sort_by_key(|m| m.start);
        mentions
    }

    /// Entities for a mention written by someone else (a model, a user): the exact
    /// normalized match first (score 1), then fuzzy matches, at most `top_k`.
    pub fn lookup(&self, mention: &str, top_k: usize) -> Vec<ScoredEntity> {
        let key = normalize(mention);
        let mut out: Vec<ScoredEntity> = Vec::new();
        if let Some(&index) = self.exact.get(key.as_str()) {
            out.extend(self.scored(index, 1.0));
        }
        if out.len() < top_k {
            for (index, score) in self.fuzzy_candidates(&key, top_k, 0.5) {
                if self.names[index as usize].as_ref() == key.as_str() {
                    continue;
                }
                out.extend(self.scored(index, score));
                if out.len() >= top_k {
                    break;
                }
            }
        }
        out.truncate(top_k);
        out
    }

    fn best_fuzzy(&self, key: &str, span_tokens: usize) -> Option<(u32, f32)> {
        self.fuzzy_candidates(key, 5, QUESTION_FUZZY_MIN)
            .into_iter()
            .find(|(index, _)| {
                // Equal word counts: a span with an extra word ("tom hanks act") is not a
                // misspelling of the shorter name.
                self.names[*index as usize].split(' ').count() == span_tokens
            })
    }

    /// Names sharing trigrams with `key`, by Dice similarity, at least `min_score`.
    fn fuzzy_candidates(&self, key: &str, top_k: usize, min_score: f32) -> Vec<(u32, f32)> {
        let grams = trigrams(key);
        if grams.is_empty() {
            return Vec::new();
        }
        let mut shared: HashMap<u32, u16> = HashMap::new();
        for gram in &grams {
            if let Some(list) = self.postings.get(gram) {
                for &index in list {
                    *shared.entry(index).or_default() += 1;
                }
            }
        }
        let query_count = grams.len() as f32;
        let mut scored: Vec<(u32, f32)> = shared
            .into_iter()
            .map(|(index, common)| {
                let total = query_count + self.trigram_counts[index as usize] as f32;
                (index, 2.0 * common as f32 / total)
            })
            .filter(|(_, score)| *score >= min_score)
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.truncate(top_k);
        scored
    }

    fn scored(&self, index: u32, score: f32) -> impl Iterator<Item = ScoredEntity> + '_ {
        self.entities[index as usize]
            .iter()
            .map(move |entity| ScoredEntity {
                entity: entity.clone(),
                score,
            })
    }

    #[allow(clippy::too_many_arguments)]
    fn mention(
        &self,
        question: &str,
        words: &[(String, std::ops::Range<usize>)],
        start: usize,
        length: usize,
        index: u32,
        score: f32,
        exact: bool,
    ) -> Mention {
        let first = words[start].1.start;
        let last = words[start + length - 1].1.end;
        Mention {
            start: first,
            end: last,
            text: question[first..last].to_owned(),
            candidates: self.scored(index, score).collect(),
            exact,
        }
    }
}

/// Distinct character trigrams of ` key ` (padded so word starts and ends count).
fn trigrams(key: &str) -> Vec<u64> {
    let chars: Vec<char> = std::iter::once(' ')
        .chain(key.chars())
        .chain(std::iter::once(' '))
        .collect();
    let mut grams: Vec<u64> = chars
        .windows(3)
        .map(|w| ((w[0] as u64) << 42) | ((w[1] as u64) << 21) | (w[2] as u64))
        .collect();
    grams.sort_unstable();
    grams.dedup();
    grams
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gazetteer() -> Gazetteer {
        let names = [
            "Tom Hanks",
            "Tom",
            "Big",
            "The Green Mile",
            "Green",
            "Heat",
            "Schindler's List",
            "Amélie",
            "It",
            "Meg Ryan",
            "Sleepless in Seattle",
            "1993",
        ];
        Gazetteer::build(
            names
                .iter()
                .enumerate()
                .map(|(i, n)| (NodeId(i as u64), n.to_string())),
        )
    }

    fn texts(mentions: &[Mention]) -> Vec<&str> {
        mentions.iter().map(|m| m.text.as_str()).collect()
    }

    #[test]
    fn longest_matches_win_and_word_boundaries_hold() {
        let g = gazetteer();
        let mentions = g.find_mentions("Did tom hanks act in The Green Mile or near a heater?");
        assert_eq!(texts(&mentions), vec!["tom hanks", "The Green Mile"]);
        assert!(mentions.iter().all(|m| m.exact));
        assert_eq!(mentions[0].candidates[0].entity.name, "Tom Hanks");
    }

    #[test]
    fn punctuation_case_accents_and_brackets_do_not_matter() {
        let g = gazetteer();
        let mentions = g.find_mentions("who directed [SCHINDLERS LIST] and amelie in 1993?");
        assert_eq!(texts(&mentions), vec!["SCHINDLERS LIST", "amelie", "1993"]);
        assert_eq!(mentions[1].candidates[0].entity.name, "Amélie");
    }

    #[test]
    fn stopword_names_are_not_matched_alone() {
        let g = gazetteer();
        assert!(g.find_mentions("what is it about").is_empty());
        assert_eq!(g.lookup("it", 3)[0].entity.name, "It");
    }

    #[test]
    fn near_misses_are_found_fuzzily() {
        let g = gazetteer();
        let mentions = g.find_mentions("films with Tom Hank and Meg Ryann in Sleepless in Seatle");
        assert_eq!(
            texts(&mentions),
            vec!["Tom Hank", "Meg Ryann", "Sleepless in Seatle"]
        );
        assert!(mentions.iter().all(|m| !m.exact));
        assert_eq!(
            mentions[2].candidates[0].entity.name,
            "Sleepless in Seattle"
        );
        assert!(mentions[0].candidates[0].score < 1.0);
    }

    #[test]
    fn lookup_puts_the_exact_name_first_then_similar_ones() {
        let g = gazetteer();
        let found = g.lookup("tom hanks", 3);
        assert_eq!(found[0].entity.name, "Tom Hanks");
        assert_eq!(found[0].score, 1.0);
        let fuzzy = g.lookup("Sleepless Seattle", 2);
        assert_eq!(fuzzy[0].entity.name, "Sleepless in Seattle");
        assert!(g.lookup("zzzz qqqq", 3).is_empty());
    }

    #[test]
    fn shared_names_return_every_entity() {
        let g = Gazetteer::build(vec![
            (NodeId(1), "Heat".to_string()),
            (NodeId(2), "heat".to_string()),
        ]);
        let mentions = g.find_mentions("Who directed Heat?");
        assert_eq!(mentions[0].candidates.len(), 2);
        assert_eq!(g.len(), 1);
    }
}
