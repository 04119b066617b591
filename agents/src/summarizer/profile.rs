//! What each path of the evidence found, read against the question by embedding: a
//! path's relations and the names it ends at, as one text ("has genre: Drama,
//! Comedy"). SimGRAG's graph semantic distance compares the labels of a subgraph's
//! edges and nodes with the question's pattern; here the labels of the nodes a path
//! found count too, and they are what tells "what kind of movie is X" from the film's
//! director when no word of the question names `has_genre`.
//!
//! Two uses in the summarizer's rule, both only with an embedder:
//! - [`Profiles::break_tie`]: among the best-scored paths, when no question word
//!   explains any of them, the one whose profile reads nearest to the question; when
//!   words explain them all alike, the one whose relations alone read clearly nearest;
//! - [`Profiles::nearness`]: how near the path that explains the question best is to
//!   it, so that a question the graph has no relation for ("which football club has a
//!   player from Spain", asked of a film graph) ends in "I don't know".

use kgmesh_models::EmbedError;

use super::core::EXPLAINED_TIE;
use crate::scoring::relevance::{cosine, TextVectors};

/// Names a path ends at shown in its profile at most (the first in evidence order).
const PROFILE_ENDS: usize = 5;

/// What the path a tie break chose gains over the others tied with it: more than
/// [`EXPLAINED_TIE`], so that it alone explains the question.
const TIE_BREAK_BONUS: f32 = 10.0 * EXPLAINED_TIE;

/// How much nearer to the question the relations of the chosen sequence must read than
/// those of any other tied with it, where words explain the tied paths alike. Chosen
/// on dev from 0, 0.03 and 0.05 (§ "With MiniLM" of docs/evaluation.md).
const LABEL_TIE_MARGIN: f32 = 0.03;

/// The paths of a question's evidence, each as its relation sequence in words and the
/// name it ends at (in evidence order, as `path_evidence` gives them).
pub(crate) struct Profiles<'a> {
    /// The question's words outside its entities' names.
    question: &'a str,
    texts: &'a [String],
    ends: &'a [String],
}

/// How near one path is to the question: the cosine of the question's words to the
/// path's profile (its relations and what it found), and to its relations alone.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Nearness {
    pub found: f32,
    pub relations: f32,
}

impl<'a> Profiles<'a> {
    pub fn new(question: &'a str, texts: &'a [String], ends: &'a [String]) -> Self {
        Self {
            question,
            texts,
            ends,
        }
    }

    /// The profile of relation sequence `text`: the words, then the first distinct
    /// names its paths end at.
    fn profile(&self, text: &str) -> String {
        let mut names: Vec<&str> = Vec::new();
        for (_, end) in self.texts.iter().zip(self.ends).filter(|(t, _)| *t == text) {
            if names.len() == PROFILE_ENDS {
                break;
            }
            if !end.is_empty() && !names.contains(&end.as_str()) {
                names.push(end);
            }
        }
        format!("{text}: {}", names.join(", "))
    }

    /// Breaks a tie among the best of `scores` (one per path) that the question's
    /// words cannot break; the paths of the relation sequence chosen gain
    /// [`TIE_BREAK_BONUS`]:
    /// - when the best score is below zero (no word explains any of the best paths, as
    ///   in "what kind of movie is X" over a film's relations), the sequence whose
    ///   profile (its relations and what it found) is nearest to the question;
    /// - when words explain the tied paths alike ("which football team do players from
    ///   X play for": "players" and "play" name `plays_in_club` as well as
    ///   `plays_position`), the sequence whose relations alone read nearest to the
    ///   question, if they lead every other by [`LABEL_TIE_MARGIN`]. Not by profiles
    ///   there: the names a path found outweigh its relations, and WC2014 2-hop dev lost
    ///   14 points when these ties were broken by profile ("team" reads as near
    ///   `plays_position`'s profile as `plays_in_club`'s, but nearer `plays in club`
    ///   than `plays position`).
    pub async fn break_tie(
        &self,
        vectors: &TextVectors,
        scores: &mut [f32],
    ) -> Result<(), EmbedError> {
        let Some(best) = scores.iter().copied().reduce(f32::max) else {
            return Ok(());
        };
        if self.question.is_empty() {
            return Ok(());
        }
        let explained = best >= 0.0;
        let tied = |score: f32| score >= best - EXPLAINED_TIE;
        let mut candidates: Vec<&'a str> = Vec::new();
        for (text, _) in self
            .texts
            .iter()
            .zip(scores.iter())
            .filter(|(_, s)| tied(**s))
        {
            if !candidates.contains(&text.as_str()) {
                candidates.push(text);
            }
        }
        if candidates.len() < 2 {
            return Ok(());
        }
        let mut inputs = vec![self.question.to_owned()];
        inputs.extend(candidates.iter().map(|text| {
            if explained {
                text.to_string()
            } else {
                self.profile(text)
            }
        }));
        let vectors = vectors.vectors(&inputs).await?;
        let mut ranked: Vec<(f32, &str)> = vectors[1..]
            .iter()
            .zip(&candidates)
            .map(|(vector, text)| (cosine(&vectors[0], vector), *text))
            .collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
        let Some(&(nearest, chosen)) = ranked.first() else {
            return Ok(());
        };
        let second = ranked
            .get(1)
            .map_or(f32::NEG_INFINITY, |(cosine, _)| *cosine);
        if explained && nearest - second < LABEL_TIE_MARGIN {
            return Ok(());
        }
        for (score, text) in scores.iter_mut().zip(self.texts) {
            if tied(*score) && text == chosen {
                *score += TIE_BREAK_BONUS;
            }
        }
        Ok(())
    }

    /// How near the relation sequence `text` is to the question.
    pub async fn nearness(
        &self,
        vectors: &TextVectors,
        text: &str,
    ) -> Result<Nearness, EmbedError> {
        let inputs = [
            self.question.to_owned(),
            self.profile(text),
            text.to_owned(),
        ];
        let vectors = vectors.vectors(&inputs).await?;
        Ok(Nearness {
            found: cosine(&vectors[0], &vectors[1]),
            relations: cosine(&vectors[0], &vectors[2]),
        })
    }
}
