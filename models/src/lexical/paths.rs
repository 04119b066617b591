//! Scores candidate relation paths (`"directed_by -> release_year"`) against a question.
//!
//! Without an embedder the score is BM25 over the paths' relation-name words: names are
//! split on `_`, `-`, `.`, `/`, spaces and camelCase, words are reduced by a small
//! suffix-stripping stemmer ("directed", "director" and "directors" all become
//! "direct"), and stop-words are dropped on both sides. No synonyms: a question that
//! shares no word with a relation name scores it 0, and an embedder is the remedy. With
//! an embedder, the score is the cosine similarity between the question and the path
//! read as words ("directed by, then release year"), with a little of the lexical score
//! added to break near-ties.

use std::collections::{HashMap, HashSet};

use kgmesh_schemas::graph::{Direction, Metapath};

use super::normalize::{is_stopword, normalize};
use crate::{cosine, EmbedError, Embedder};

const K1: f32 = 1.2;
const B: f32 = 0.75;
/// Weight of the (max-normalized) lexical score next to cosine similarity.
const LEXICAL_WEIGHT: f32 = 0.2;

/// `directed_by -> ~release_year`, the notation prompts and parsers use.
pub fn metapath_text(path: &Metapath) -> String {
    path.steps
        .iter()
        .map(|step| match step.direction {
            Direction::In => format!("~{}", step.relation),
            Direction::Out | Direction::Both => step.relation.clone(),
        })
        .collect::<Vec<_>>()
        .join(" -> ")
}

/// The relation names of a path text, `~` markers removed.
fn relations_of(path: &str) -> Vec<String> {
    path.split("->")
        .map(|r| r.trim().trim_start_matches('~').trim().to_owned())
        .filter(|r| !r.is_empty())
        .collect()
}

/// Words of a relation name: `hasReleaseYear` and `has_release_year` give
/// `["releas", "year"]` ("has" is a stop-word).
pub fn relation_words(relation: &str) -> Vec<String> {
    let mut spaced = String::with_capacity(relation.len() + 8);
    let mut previous: Option<char> = None;
    for c in relation.chars() {
        if let Some(p) = previous {
            let camel = p.is_lowercase() && c.is_uppercase();
            let digit_edge = p.is_ascii_digit() != c.is_ascii_digit()
                && p.is_alphanumeric()
                && c.is_alphanumeric();
            if camel || digit_edge {
                spaced.push(' ');
            }
        }
        spaced.push(c);
        previous = Some(c);
    }
    text_words(&spaced)
}

/// Stemmed, stop-word-free words of any text.
pub fn text_words(text: &str) -> Vec<String> {
    normalize(text)
        .split(' ')
        .filter(|w| {
            !is_stopword(w) && (w.chars().count() > 1 || w.chars().all(|c| c.is_ascii_digit()))
        })
        .map(stem)
        .collect()
}

/// A small suffix stripper in the spirit of Porter's first steps; it needs only to map
/// the forms a question and a relation name use for one idea onto one string.
pub fn stem(word: &str) -> String {
    let mut w = word.to_lowercase();
    if w.chars().count() <= 3 || !w.is_ascii() {
        return w;
    }
    if let Some(base) = w.strip_suffix("sses") {
        w = format!("{base}ss");
    } else if let Some(base) = w.strip_suffix("ies") {
        w = format!("{base}i");
    } else if w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") {
        w.pop();
    }
    for suffix in ["ing", "ed"] {
        if let Some(base) = w.strip_suffix(suffix) {
            if base.len() >= 3 {
                w = base.to_owned();
                undouble(&mut w);
                break;
            }
        }
    }
    for (suffix, min_base) in [("ion", 4), ("er", 3), ("or", 3), ("ly", 3)] {
        if let Some(base) = w.strip_suffix(suffix) {
            if base.len() >= min_base {
                w = base.to_owned();
                break;
            }
        }
    }
    if w.len() > 3 && w.ends_with('e') {
        w.pop();
    }
    if w.len() > 3 && w.ends_with('y') {
        w.pop();
        w.push('i');
    }
    w
}

/// `starr` → `star`, `tagg` → `tag` (but `fall`, `pass`, `buzz` stay).
fn undouble(word: &mut String) {
    let bytes = word.as_bytes();
    let n = bytes.len();
    if n >= 2
        && bytes[n - 1] == bytes[n - 2]
        && !matches!(bytes[n - 1], b'l' | b's' | b'z')
        && !b"aeiou".contains(&bytes[n - 1])
    {
        word.pop();
    }
}

/// BM25 of the question's words against each path's relation words (0 when nothing is
/// shared). Scores are comparable within one call only.
pub fn score_paths_lexical(question: &str, paths: &[String]) -> Vec<f32> {
    let query: HashSet<String> = text_words(question).into_iter().collect();
    let documents: Vec<Vec<String>> = paths
        .iter()
        .map(|p| {
            relations_of(p)
                .iter()
                .flat_map(|r| relation_words(r))
                .collect()
        })
        .collect();
    if documents.is_empty() {
        return Vec::new();
    }
    let mut document_frequency: HashMap<&str, usize> = HashMap::new();
    for document in &documents {
        let distinct: HashSet<&str> = document.iter().map(String::as_str).collect();
        for word in distinct {
            *document_frequency.entry(word).or_default() += 1;
        }
    }
    let count = documents.len() as f32;
    let average_length = documents.iter().map(Vec::len).sum::<usize>() as f32 / count;
    documents
        .iter()
        .map(|document| {
            let length = document.len() as f32;
            let mut score = 0.0;
            for word in &query {
                let frequency = document.iter().filter(|w| *w == word).count() as f32;
                if frequency == 0.0 {
                    continue;
                }
                let df = document_frequency.get(word.as_str()).copied().unwrap_or(0) as f32;
                let idf = (1.0 + (count - df + 0.5) / (df + 0.5)).ln();
                let norm = 1.0 - B + B * length / average_length.max(1e-6);
                score += idf * frequency * (K1 + 1.0) / (frequency + K1 * norm);
            }
            score
        })
        .collect()
}

/// A path read as words, for embedding: `directed_by -> ~release_year` becomes
/// "directed by, then release year (reversed)".
pub fn path_sentence(path: &str) -> String {
    path.split("->")
        .map(|relation| {
            let relation = relation.trim();
            let inverse = relation.starts_with('~');
            let words = relation.trim_start_matches('~');
            let mut spaced = String::new();
            let mut previous: Option<char> = None;
            for c in words.chars() {
                if previous.is_some_and(|p| p.is_lowercase() && c.is_uppercase()) {
                    spaced.push(' ');
                }
                spaced.push(if matches!(c, '_' | '-' | '.' | '/') {
                    ' '
                } else {
                    c
                });
                previous = Some(c);
            }
            let spaced = spaced
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase();
            if inverse {
                format!("{spaced} (reversed)")
            } else {
                spaced
            }
        })
        .collect::<Vec<_>>()
        .join(", then ")
}

/// Scores paths by embedding similarity when `embedder` is given, else lexically.
pub async fn score_paths(
    question: &str,
    paths: &[String],
    embedder: Option<&dyn Embedder>,
) -> Result<Vec<f32>, EmbedError> {
    let lexical = score_paths_lexical(question, paths);
    let Some(embedder) = embedder else {
        return Ok(lexical);
    };
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let mut texts = Vec::with_capacity(paths.len() + 1);
    texts.push(question.to_owned());
    texts.extend(paths.iter().map(|p| path_sentence(p)));
    let vectors = embedder.embed(&texts).await?;
    let (question_vector, path_vectors) = vectors
        .split_first()
        .ok_or_else(|| EmbedError::Compute("the embedder returned no vectors".to_owned()))?;
    if path_vectors.len() != paths.len() {
        return Err(EmbedError::Compute(format!(
            "the embedder returned {} vectors for {} texts",
            vectors.len(),
            texts.len()
        )));
    }
    let max_lexical = lexical.iter().copied().fold(0.0f32, f32::max);
    Ok(path_vectors
        .iter()
        .zip(&lexical)
        .map(|(vector, lexical)| {
            let lexical_share = if max_lexical > 0.0 {
                lexical / max_lexical
            } else {
                0.0
            };
            cosine(question_vector, vector) + LEXICAL_WEIGHT * lexical_share
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;

    fn paths(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn best(question: &str, candidates: &[&str]) -> String {
        let candidates = paths(candidates);
        let scores = score_paths_lexical(question, &candidates);
        let (index, _) = scores
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(&a.0)))
            .unwrap();
        candidates[index].clone()
    }

    #[test]
    fn stems_meet_across_word_forms() {
        for (a, b) in [
            ("directed", "director"),
            ("directors", "direct"),
            ("released", "release"),
            ("starred", "stars"),
            ("movies", "movie"),
            ("languages", "language"),
            ("tagged", "tags"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} / {b}");
        }
        assert_ne!(stem("year"), stem("yes"));
    }

    #[test]
    fn relation_names_split_on_separators_and_camel_case() {
        assert_eq!(relation_words("has_releaseYear"), vec!["releas", "year"]);
        assert_eq!(
            relation_words("film.film.directed_by"),
            vec!["film", "film", "direct"]
        );
        assert_eq!(relation_words("born_in_1950s"), vec!["born", "1950"]);
    }

    #[test]
    fn the_path_naming_the_questions_ideas_wins() {
        let candidates = [
            "directed_by",
            "written_by",
            "starred_actors",
            "directed_by -> release_year",
            "has_genre",
        ];
        assert_eq!(best("who directed [Heat]", &candidates), "directed_by");
        assert_eq!(
            best("what movies did [Tom Hanks] act in", &candidates),
            "starred_actors"
        );
        assert_eq!(
            best(
                "when were the movies directed by [Michael Mann] released, which year",
                &candidates
            ),
            "directed_by -> release_year"
        );
        assert_eq!(best("which genres are [Heat]", &candidates), "has_genre");
    }

    #[test]
    fn nothing_shared_scores_zero() {
        let scores =
            score_paths_lexical("what is the capital", &paths(&["directed_by", "has_genre"]));
        assert_eq!(scores, vec![0.0, 0.0]);
        assert!(score_paths_lexical("q", &[]).is_empty());
    }

    #[test]
    fn paths_read_as_words() {
        assert_eq!(
            path_sentence("directed_by -> ~releaseYear"),
            "directed by, then release year (reversed)"
        );
    }

    /// Embeds by counting which of a few key words a text contains.
    struct KeywordEmbedder;

    #[async_trait]
    impl Embedder for KeywordEmbedder {
        fn name(&self) -> &str {
            "keywords"
        }
        fn dim(&self) -> usize {
            2
        }
        async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
            Ok(texts
                .iter()
                .map(|t| {
                    let t = t.to_lowercase();
                    vec![
                        (t.contains("made") || t.contains("directed")) as u8 as f32,
                        (t.contains("year") || t.contains("when")) as u8 as f32 + 0.01,
                    ]
                })
                .collect())
        }
    }

    #[tokio::test]
    async fn an_embedder_bridges_words_the_lexical_score_cannot() {
        let candidates = paths(&["directed_by", "release_year"]);
        // "made" shares no word with "directed_by"; only the embedding connects them.
        let lexical = score_paths("who made Heat", &candidates, None)
            .await
            .unwrap();
        assert_eq!(lexical, vec![0.0, 0.0]);
        let embedded = score_paths("who made Heat", &candidates, Some(&KeywordEmbedder))
            .await
            .unwrap();
        assert!(embedded[0] > embedded[1], "{embedded:?}");
    }
}
