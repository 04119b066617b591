//! What each path of the evidence found, read against the question by embedding: a
//! path's relations and the names it ends at, as one text ("has genre: Drama,
//! Comedy"). SimGRAG's graph semantic distance compares the labels of a subgraph's
//! edges and nodes with the question's pattern; here the labels of the nodes a path
//! found count too, and they are what tells "what kind of movie is X" from the film's
//! director when no word of the question names `has_genre`.
//!
//! Two uses in the summarizer's rule, both only with an embedder:
//! - [`Profiles::break_tie`]: among the best-scored paths, when no question word
//!   explains any of them, the one whose profile and relations together read nearest
//!   to the question; when words explain them all alike, the one whose relations alone
//!   read clearly nearest;
//! - [`Profiles::nearness_below`]: how near the path that explains the question best is to
//!   it, so that a question the graph has no relation for ("which football club has a
//!   player from Spain", asked of a film graph) ends in "I don't know".

use kgmesh_models::EmbedError;

use super::core::{EXPLAINED_TIE, TIE_BREAK_BONUS};
use crate::scoring::relevance::{cosine, TextVectors};

/// Names a path ends at shown in its profile at most (the first in evidence order).
const PROFILE_ENDS: usize = 5;

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
    ///   in "what kind of movie is X" over a film's relations), the sequence nearest to
    ///   the question by the sum of two cosines: its profile's (its relations and what
    ///   it found) and its relations' alone. The profile tells a film's genres from its
    ///   director where no relation name reads near the question; the relations keep
    ///   the names found from outweighing them ("who acted in X" reads nearer
    ///   `director: <a name>` than `cast member: <three names>`, but nearer `cast
    ///   member` than `director`);
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
        // The question, each candidate's relations, then (unexplained) their profiles.
        let mut inputs = vec![self.question.to_owned()];
        inputs.extend(candidates.iter().map(|text| text.to_string()));
        if !explained {
            inputs.extend(candidates.iter().map(|text| self.profile(text)));
        }
        let vectors = vectors.vectors(&inputs).await?;
        let Some((question, rest)) = vectors.split_first() else {
            return Ok(());
        };
        let (relations, profiles) = rest.split_at(candidates.len());
        let mut ranked: Vec<(f32, &str)> = candidates
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let found = profiles.get(i).map_or(0.0, |p| cosine(question, p));
                (cosine(question, &relations[i]) + found, *text)
            })
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

    /// How near the relation sequence `text` is to the question, when its relations alone
    /// read less than `relations_min` near it; `None` when they read at least that near.
    /// The profile, which names what the path found and so is new with every question,
    /// is embedded only in the first case: a forward pass of the embedder costs more
    /// than everything else the summarizer does.
    pub async fn nearness_below(
        &self,
        vectors: &TextVectors,
        text: &str,
        relations_min: f32,
    ) -> Result<Option<Nearness>, EmbedError> {
        let inputs = [self.question.to_owned(), text.to_owned()];
        let found = vectors.vectors(&inputs).await?;
        let relations = cosine(&found[0], &found[1]);
        if relations >= relations_min {
            return Ok(None);
        }
        let profile = vectors.vectors(&[self.profile(text)]).await?;
        Ok(Some(Nearness {
            found: cosine(&found[0], &profile[0]),
            relations,
        }))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::scoring::fixtures::TYPES_MEAN_GENRE;

    /// The table embedder of the fixtures, keeping every text it is asked to embed.
    struct Recording(Mutex<Vec<String>>);

    #[async_trait::async_trait]
    impl kgmesh_models::Embedder for Recording {
        fn name(&self) -> &str {
            "recording"
        }

        fn dim(&self) -> usize {
            TYPES_MEAN_GENRE.dim()
        }

        async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
            self.0.lock().unwrap().extend(texts.iter().cloned());
            TYPES_MEAN_GENRE.embed(texts).await
        }
    }

    #[tokio::test]
    async fn an_unexplained_tie_goes_to_the_path_nearest_by_relations_and_profile() {
        use crate::scoring::fixtures::ACTED_NEARER_DIRECTOR_BY_PROFILE;
        let vectors = TextVectors::new(Arc::new(ACTED_NEARER_DIRECTOR_BY_PROFILE), 100);
        let texts = [
            "director".to_owned(),
            "cast member".to_owned(),
            "cast member".to_owned(),
        ];
        let ends = [
            "Iain Softley".to_owned(),
            "Angelina Jolie".to_owned(),
            "Jonny Lee Miller".to_owned(),
        ];
        let profiles = Profiles::new("acted in", &texts, &ends);
        // No word explains either relation: both score below zero, tied.
        let mut scores = [-0.5, -0.5, -0.5];
        tokio::time::timeout(
            std::time::Duration::from_secs(5),
            profiles.break_tie(&vectors, &mut scores),
        )
        .await
        .expect("in time")
        .expect("embedded");
        assert_eq!(
            scores[0], -0.5,
            "the director's path is not raised: {scores:?}"
        );
        assert!(
            scores[1] > -0.5 && scores[1] == scores[2],
            "every line of the cast's path is raised: {scores:?}"
        );
    }

    #[tokio::test]
    async fn the_profile_is_embedded_only_when_the_relations_read_far() {
        let recording = Arc::new(Recording(Mutex::new(Vec::new())));
        let vectors = TextVectors::new(recording.clone(), 100);
        let texts = ["has genre".to_owned(), "directed by".to_owned()];
        let ends = ["Drama".to_owned(), "Michael Mann".to_owned()];

        // "types" and "has genre" are one vector in the table: cosine 1.
        let profiles = Profiles::new("types", &texts, &ends);
        let near = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            profiles.nearness_below(&vectors, "has genre", 0.1),
        )
        .await
        .expect("in time")
        .expect("embedded");
        assert_eq!(near, None);
        let embedded = recording.0.lock().unwrap().clone();
        assert!(
            !embedded.iter().any(|t| t.contains("Drama")),
            "the profile was embedded: {embedded:?}"
        );

        // "directed by" is apart from "types" (cosine 0): its profile is read too, and
        // the table places that apart as well.
        let far = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            profiles.nearness_below(&vectors, "directed by", 0.1),
        )
        .await
        .expect("in time")
        .expect("embedded");
        assert_eq!(
            far,
            Some(Nearness {
                found: 0.0,
                relations: 0.0
            })
        );
        let embedded = recording.0.lock().unwrap().clone();
        assert!(
            embedded.contains(&"directed by: Michael Mann".to_owned()),
            "{embedded:?}"
        );
    }
}
