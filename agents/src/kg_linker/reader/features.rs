//! What the reader knows about a candidate plan: domain-independent features of one
//! relation path from the question's entities, read against the question.
//!
//! Nothing here names a graph, a relation or a benchmark: the features compare the
//! question's words with relation names and classes (by the one text toolkit), count
//! hops, and look at what the path reaches (how many nodes, of which class, whether
//! they read as numbers). How much each one counts is learned ([`super::model`]).

use kgmesh_schemas::{
    graph::{Direction, Metapath},
    NodeId,
};

use super::{
    lexicon::Hop,
    types::{is_type_relation, looks_numeric, NodeTypes},
};
use crate::scoring::text::{
    relation_stems, stem, stem_similarity, words, QuestionTerms, CLAIM_MIN,
};

/// The features, in the order of a feature vector (and of a model's weights).
pub const FEATURES: &[&str] = &[
    "relevance_gap",
    "relevance_rank",
    "lexical_gap",
    "unexplained_hops",
    "hops_1",
    "hops_2",
    "hops_3",
    "log_reached",
    "reaches_question_entity",
    "sampled",
    "last_step_inverse",
    "type_step",
    "class_declared",
    "class_signature",
    "class_last_relation",
    "class_declared_other",
    "numeric_asked_time",
    "numeric_not_asked",
    "repeated_relation",
    "class_word_hops_1",
    "hop_explained_min",
    "hop_explained_mean",
    "hops_class_word_only",
    "words_covered",
    "words_left",
    "hop_cosine_min",
    "hop_cosine_mean",
    "words_cosine_covered",
    "class_cosine_last",
    "path_cosine_gap",
    "class_cosine_answer",
    "lexicon_hop_min",
    "lexicon_hop_mean",
    "lexicon_words",
    "lexicon_asking_last",
    "lexicon_asking_direction",
];

/// Cosines of the question's words with relation labels, read by an embedder.
#[derive(Debug, Clone, Default)]
pub struct WordCosines {
    /// Relation name → (best cosine with a relation word of the question, best with a
    /// class word).
    pub per_relation: std::collections::HashMap<String, (f32, f32)>,
    /// Relation name → cosine with each relation word of the question, in order.
    pub per_word: std::collections::HashMap<String, Vec<f32>>,
    /// Per candidate (in the order features are asked for): the cosine of the question
    /// (without its entities' names) with the candidate's verbalized path, less the
    /// best such cosine among the candidates.
    pub path_gap: Vec<f32>,
    /// Class text ([`NodeTypes::class_texts`]) → best cosine with a class word of the
    /// question.
    pub class_text: std::collections::HashMap<String, f32>,
}

/// What the question says about its answer, read once per question.
#[derive(Debug, Clone, Default)]
pub struct AnswerAsk {
    /// The question's content stems that say how the answer relates to its entities:
    /// outside entity names, not class words, not the wh-word.
    pub relation_stems: Vec<String>,
    /// Stems of words naming a class (the answer's or a node's on the way).
    pub class_words: Vec<String>,
    /// The words behind `relation_stems` and `class_words`, as written (what an
    /// embedder reads).
    pub relation_raw: Vec<String>,
    pub class_raw: Vec<String>,
    /// Stems naming the answer's class: the words after "which" / "what" ("which
    /// *ships*") or "how many" ("how many *captains*").
    pub class_stems: Vec<String>,
    /// The question asks for a time ("when", "what year", "which date").
    pub asks_time: bool,
}

/// Question words that ask for a point in time, as such or as the answer's class.
const TIME_WORDS: &[&str] = &["when", "year", "date"];

impl AnswerAsk {
    pub fn read(question: &str, terms: &QuestionTerms) -> Self {
        let mut class_stems: Vec<String> = (0..terms.stems().len())
            .filter(|&i| terms.names_the_answers_class(i) && !terms.asks_a_kind(i))
            .map(|i| terms.stems()[i].clone())
            .collect();
        let all = words(question);
        class_stems.sort();
        class_stems.dedup();
        let asks_time = all.iter().take(3).any(|w| w == "when")
            || class_stems
                .iter()
                .any(|s| TIME_WORDS.iter().any(|t| stem(t) == *s));
        let mut relation_stems = Vec::new();
        let mut class_words = Vec::new();
        let (mut relation_raw, mut class_raw) = (Vec::new(), Vec::new());
        for (i, stem) in terms.stems().iter().enumerate() {
            if terms.asks_a_kind(i) {
                continue;
            }
            let raw = terms.raw_words().get(i).cloned().unwrap_or_default();
            if terms.names_a_class(i) || class_stems.contains(stem) {
                class_words.push(stem.clone());
                class_raw.push(raw);
            } else {
                relation_stems.push(stem.clone());
                relation_raw.push(raw);
            }
        }
        Self {
            relation_stems,
            class_words,
            relation_raw,
            class_raw,
            class_stems,
            asks_time,
        }
    }

    /// Every content stem the question reads by (its relation and class words).
    pub fn all_stems(&self) -> Vec<String> {
        let mut all = self.relation_stems.clone();
        all.extend(self.class_words.iter().cloned());
        all
    }

    /// What the question asks, as an embedder should read it: its relation and class
    /// words, in order, without the entities' names.
    pub fn asked_text(&self) -> String {
        let mut words = self.relation_raw.clone();
        words.extend(self.class_raw.iter().cloned());
        words.join(" ")
    }

    /// Best similarity of any of `stems` with a relation word of the question, and with
    /// a class word.
    fn explains(&self, stems: &[String]) -> (f32, f32) {
        let best = |words: &[String]| {
            stems
                .iter()
                .flat_map(|s| words.iter().map(move |w| stem_similarity(s, w)))
                .fold(0.0f32, f32::max)
        };
        (best(&self.relation_stems), best(&self.class_words))
    }

    fn names_class(&self, stems: impl IntoIterator<Item = impl AsRef<str>>) -> bool {
        stems.into_iter().any(|s| {
            self.class_stems
                .iter()
                .any(|c| stem_similarity(c, s.as_ref()) >= CLAIM_MIN)
        })
    }
}

/// One candidate as the first-stage ranking left it.
pub struct Candidate<'a> {
    /// Its position among the candidates the reader scores.
    pub position: usize,
    pub metapath: &'a Metapath,
    /// Nodes at its end (a sample when not `complete`).
    pub reached: &'a [NodeId],
    pub complete: bool,
    /// The first-stage relevance score and its rank among all candidates.
    pub relevance: f32,
    pub rank: usize,
    /// The lexical (word-only) relevance score.
    pub lexical: f32,
    pub unexplained_hops: usize,
    /// Its hops as the lexicon reads them (each relation's stems).
    pub hops: &'a [Hop],
    /// Its [`super::lexicon::LEXICON_FEATURES`], the feature vector's last ones.
    pub lexicon: &'a [f32],
}

/// Reached nodes whose classes are read at most, per candidate.
pub const CLASS_SAMPLE: usize = 20;

/// The feature vector of `candidate`; `best_relevance` and `best_lexical` are the best
/// first-stage scores among the question's candidates.
pub fn features(
    candidate: &Candidate<'_>,
    best_relevance: f32,
    best_lexical: f32,
    ask: &AnswerAsk,
    sources: &[NodeId],
    types: &NodeTypes,
    cosines: Option<&WordCosines>,
) -> Vec<f32> {
    let steps = &candidate.metapath.steps;
    let hops = steps.len();
    let last = steps.last();
    let last_relation = last.map(|s| s.relation.as_str());
    let sample: Vec<NodeId> = candidate
        .reached
        .iter()
        .take(CLASS_SAMPLE)
        .copied()
        .collect();
    let share = |test: &dyn Fn(NodeId) -> bool| -> f32 {
        if sample.is_empty() {
            0.0
        } else {
            sample.iter().filter(|&&n| test(n)).count() as f32 / sample.len() as f32
        }
    };
    let has_class = !ask.class_stems.is_empty();
    let class_declared = if has_class {
        share(&|n| ask.names_class(types.declared(n)))
    } else {
        0.0
    };
    let class_declared_other = if has_class {
        share(&|n| types.has_declared(n) && !ask.names_class(types.declared(n)))
    } else {
        0.0
    };
    let class_signature = if has_class {
        share(&|n| ask.names_class(types.signature_stems(n, last_relation)))
    } else {
        0.0
    };
    // A relation names the class of its tail ("in_language" → a language): only a
    // last step walked forwards says what it reaches.
    let class_last_relation = match (has_class, last) {
        (true, Some(step)) if step.direction != Direction::In => {
            f32::from(u8::from(ask.names_class(relation_stems(&step.relation))))
        }
        _ => 0.0,
    };
    let numeric = share(&|n| types.name(n).is_some_and(looks_numeric));
    let mut relations: Vec<&str> = steps.iter().map(|s| s.relation.as_str()).collect();
    let distinct = {
        relations.sort_unstable();
        relations.dedup();
        relations.len()
    };
    let flag = |b: bool| f32::from(u8::from(b));
    // How each hop is explained by the question's words.
    let hop_stems: Vec<&[String]> = candidate.hops.iter().map(|h| h.stems.as_slice()).collect();
    let explained: Vec<(f32, f32)> = hop_stems.iter().map(|stems| ask.explains(stems)).collect();
    let hop_min = explained.iter().map(|e| e.0).fold(f32::MAX, f32::min);
    let hop_min = if explained.is_empty() { 0.0 } else { hop_min };
    let hop_mean = if explained.is_empty() {
        0.0
    } else {
        explained.iter().map(|e| e.0).sum::<f32>() / explained.len() as f32
    };
    let class_only = explained
        .iter()
        .filter(|(relation, class)| *relation < CLAIM_MIN && *class >= CLAIM_MIN)
        .count();
    let covered = ask
        .relation_stems
        .iter()
        .filter(|w| {
            hop_stems
                .iter()
                .flat_map(|stems| stems.iter())
                .any(|s| stem_similarity(s, w) >= CLAIM_MIN)
        })
        .count();
    let words_covered = if ask.relation_stems.is_empty() {
        0.0
    } else {
        covered as f32 / ask.relation_stems.len() as f32
    };
    let words_left = (ask.relation_stems.len() - covered) as f32;
    // The same by meaning, with an embedder (zero without one).
    let (mut cos_min, mut cos_mean, mut cos_covered, mut class_cos_last) = (0.0, 0.0, 0.0, 0.0);
    let mut path_gap = 0.0;
    let mut class_cos_answer = 0.0;
    if let Some(cosines) = cosines {
        let hop_cos: Vec<f32> = steps
            .iter()
            .map(|s| cosines.per_relation.get(&s.relation).map_or(0.0, |c| c.0))
            .collect();
        if !hop_cos.is_empty() {
            cos_min = hop_cos.iter().copied().fold(f32::MAX, f32::min);
            cos_mean = hop_cos.iter().sum::<f32>() / hop_cos.len() as f32;
        }
        if !ask.relation_raw.is_empty() {
            let per_word_best: Vec<f32> = (0..ask.relation_raw.len())
                .map(|w| {
                    steps
                        .iter()
                        .filter_map(|s| cosines.per_word.get(&s.relation).and_then(|v| v.get(w)))
                        .copied()
                        .fold(0.0f32, f32::max)
                })
                .collect();
            cos_covered = per_word_best.iter().sum::<f32>() / per_word_best.len() as f32;
        }
        class_cos_last = last
            .filter(|s| s.direction != Direction::In)
            .and_then(|s| cosines.per_relation.get(&s.relation))
            .map_or(0.0, |c| c.1);
        path_gap = cosines
            .path_gap
            .get(candidate.position)
            .copied()
            .unwrap_or(0.0);
        if has_class && !sample.is_empty() {
            class_cos_answer = sample
                .iter()
                .map(|&n| {
                    types
                        .class_texts(n, last_relation)
                        .iter()
                        .filter_map(|t| cosines.class_text.get(t))
                        .copied()
                        .fold(0.0f32, f32::max)
                })
                .sum::<f32>()
                / sample.len() as f32;
        }
    }
    let mut row = vec![
        candidate.relevance - best_relevance,
        1.0 / (1.0 + candidate.rank as f32),
        candidate.lexical - best_lexical,
        candidate.unexplained_hops as f32,
        flag(hops == 1),
        flag(hops == 2),
        flag(hops >= 3),
        (1.0 + candidate.reached.len() as f32).ln(),
        flag(candidate.reached.iter().any(|n| sources.contains(n))),
        flag(!candidate.complete),
        flag(last.is_some_and(|s| s.direction == Direction::In)),
        flag(steps.iter().any(|s| is_type_relation(&s.relation))),
        class_declared,
        class_signature,
        class_last_relation,
        class_declared_other,
        numeric * flag(ask.asks_time),
        numeric * flag(!ask.asks_time),
        flag(distinct < hops),
        flag(has_class && hops == 1),
        hop_min,
        hop_mean,
        class_only as f32,
        words_covered,
        words_left,
        cos_min,
        cos_mean,
        cos_covered,
        class_cos_last,
        path_gap,
        class_cos_answer,
    ];
    row.extend(candidate.lexicon);
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(question: &str, names: &[&str]) -> AnswerAsk {
        AnswerAsk::read(question, &QuestionTerms::new(question, names))
    }

    #[test]
    fn the_answers_class_is_read_after_which_and_how_many() {
        let which = ask("which ships does Tallow Mon operate", &["Tallow Mon"]);
        assert_eq!(which.class_stems, [stem("ships")]);
        assert!(which.relation_stems.contains(&stem("operate")), "{which:?}");
        assert!(!which.asks_time);
        let count = ask("how many captains trained at Port Kell", &["Port Kell"]);
        assert!(count.class_stems.contains(&stem("captains")), "{count:?}");
        assert!(count.relation_stems.contains(&stem("trained")), "{count:?}");
    }

    #[test]
    fn the_features_end_with_the_lexicons() {
        assert!(FEATURES.ends_with(super::super::lexicon::LEXICON_FEATURES));
    }

    #[test]
    fn a_question_asking_when_asks_for_a_time() {
        assert!(ask("when was Heat released", &["Heat"]).asks_time);
        assert!(ask("in what year did Heat come out", &["Heat"]).asks_time);
        assert!(!ask("who directed Heat", &["Heat"]).asks_time);
    }
}
