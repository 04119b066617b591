//! Answer types by meaning: how near a candidate span's own words read, by embedding,
//! to the kind of name a question asks for (a person, an organization, a place) rather
//! than to the other kinds; and, for the graph, what kind of name a class the graph
//! declares is ([`kinds_by_meaning`]: a "building" is a place).
//!
//! A name's form types it ([`crate::scoring::answer_type::form_type`]) where it shows a
//! designator, a title or a preposition; otherwise two or three plain capitalized words
//! read as a person. "Customer Care", "Talent Acquisition" and "Okaro Highlands" are
//! such names, and the words in them say what they are: a team, a department, a region.
//! Each span's text is compared with a few plain English descriptions of each kind
//! ([`KIND_DESCRIPTIONS`]); its nearness to a kind is its nearest description's cosine,
//! and the span scorer reads how much of the softmax over the kinds the kind asked
//! holds, full from half of it ([`fit_of_kind`]; [`super::spans::SPAN_FEATURES`]:
//! `type_meaning`), for the spans it could bring first (the summarizer types those
//! scored within the feature's reach of the best). Only with an embedder; nothing here
//! knows a corpus.
//!
//! The share's form and its weight in the bundled span weights (0.75) were chosen by
//! leaving each of the document zoo's ten corpora out in turn: among the share itself,
//! its square root, 1 for the nearest kind alone, and the share doubled or tripled and
//! capped at 1, each weighted 0.25 to 1, the choice made on the other nine corpora was
//! the doubled share for all ten, at 0.75 for eight (docs/results.md).

use kgmesh_models::EmbedError;

use crate::scoring::{
    answer_type::AnswerType,
    relevance::{cosine, TextVectors},
};

/// Plain descriptions of each kind of name, the last kind standing for every other
/// (a product, a document, an event): four per kind, written before anything was
/// measured and not tuned on any corpus.
pub const KIND_DESCRIPTIONS: &[(AnswerType, &[&str])] = &[
    (
        AnswerType::Person,
        &["a person", "a man", "a woman", "someone's full name"],
    ),
    (
        AnswerType::Organization,
        &[
            "a company",
            "an organization",
            "a business firm",
            "a team or department",
        ],
    ),
    (
        AnswerType::Place,
        &["a place", "a city", "a town", "a region"],
    ),
    (
        AnswerType::Thing,
        &["a product", "a thing", "a document", "an event"],
    ),
];

/// The softmax temperature over the kinds' cosines: MiniLM's cosines of a short name to
/// the descriptions differ by a few hundredths, so a share needs a low temperature to
/// say anything (0.05 turns a lead of 0.05 into a share of e ≈ 2.7 to 1). Set before
/// measuring, not tuned.
const KIND_TEMPERATURE: f32 = 0.05;

/// Whether a question asking for `asked` is one the kinds by meaning can tell: a
/// person, an organization or a place.
pub fn typed_by_meaning(asked: Option<AnswerType>) -> bool {
    matches!(
        asked,
        Some(AnswerType::Person | AnswerType::Organization | AnswerType::Place)
    )
}

/// How well a span whose words give the kind asked `share` of the softmax over the
/// kinds reads as that kind: fully from half of it, which no other kind can then
/// outweigh.
pub fn fit_of_kind(share: f32) -> f32 {
    (2.0 * share).min(1.0)
}

/// The kind each of `texts` (a class's name, "building", "research group") reads as by
/// meaning: the kind whose nearest description holds at least half of the softmax over
/// the kinds (see the module's doc; from half, [`fit_of_kind`] reads a kind as fully
/// fitting), else `None`. What the graph's class names say when no class word of
/// [`crate::scoring::answer_type::CLASS_WORDS`] names them.
pub async fn kinds_by_meaning(
    vectors: &TextVectors,
    texts: &[String],
) -> Result<Vec<Option<AnswerType>>, EmbedError> {
    if texts.is_empty() {
        return Ok(Vec::new());
    }
    let nearness = nearness_to_kinds(vectors, texts).await?;
    Ok(nearness
        .iter()
        .map(|near| {
            let best = near.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let total: f32 = near
                .iter()
                .map(|n| ((n - best) / KIND_TEMPERATURE).exp())
                .sum();
            let at = near.iter().position(|&n| n == best)?;
            (1.0 / total >= 0.5).then_some(KIND_DESCRIPTIONS[at].0)
        })
        .collect())
}

/// Each of `texts`' cosine to its nearest description of each kind, in
/// [`KIND_DESCRIPTIONS`]' order.
async fn nearness_to_kinds(
    vectors: &TextVectors,
    texts: &[String],
) -> Result<Vec<Vec<f32>>, EmbedError> {
    let mut inputs: Vec<String> = KIND_DESCRIPTIONS
        .iter()
        .flat_map(|(_, descriptions)| descriptions.iter().map(|d| (*d).to_owned()))
        .collect();
    let described = inputs.len();
    inputs.extend(texts.iter().cloned());
    let found = vectors.vectors(&inputs).await?;
    let (descriptions, spans) = found.split_at(described);
    Ok(spans
        .iter()
        .map(|span| {
            let mut at = 0;
            KIND_DESCRIPTIONS
                .iter()
                .map(|(_, words)| {
                    let near = descriptions[at..at + words.len()]
                        .iter()
                        .map(|d| cosine(span, d))
                        .fold(f32::NEG_INFINITY, f32::max);
                    at += words.len();
                    near
                })
                .collect()
        })
        .collect())
}

/// For each of `texts`, the softmax share of `asked` among the kinds by meaning
/// (see the module's doc); `None` when `asked` is not such a kind.
pub async fn shares_of_kind(
    vectors: &TextVectors,
    asked: Option<AnswerType>,
    texts: &[String],
) -> Result<Option<Vec<f32>>, EmbedError> {
    let Some(asked) = asked.filter(|&a| typed_by_meaning(Some(a))) else {
        return Ok(None);
    };
    if texts.is_empty() {
        return Ok(Some(Vec::new()));
    }
    let at = KIND_DESCRIPTIONS
        .iter()
        .position(|(kind, _)| *kind == asked)
        .unwrap_or(0);
    let shares = nearness_to_kinds(vectors, texts)
        .await?
        .iter()
        .map(|near| {
            let total: f32 = near
                .iter()
                .map(|n| ((n - near[at]) / KIND_TEMPERATURE).exp())
                .sum();
            1.0 / total
        })
        .collect();
    Ok(Some(shares))
}

#[cfg(test)]
mod tests {
    use std::{sync::Arc, time::Duration};

    use super::*;
    use crate::scoring::fixtures::KINDS_OF_NAMES;

    #[test]
    fn a_kind_holding_half_the_share_fits_fully() {
        assert_eq!(fit_of_kind(0.6), 1.0);
        assert_eq!(fit_of_kind(0.5), 1.0);
        assert!((fit_of_kind(0.2) - 0.4).abs() < 1e-6);
        assert_eq!(fit_of_kind(0.0), 0.0);
    }

    #[test]
    fn only_a_person_an_organization_or_a_place_is_typed_by_meaning() {
        assert!(typed_by_meaning(Some(AnswerType::Person)));
        assert!(typed_by_meaning(Some(AnswerType::Organization)));
        assert!(typed_by_meaning(Some(AnswerType::Place)));
        assert!(!typed_by_meaning(Some(AnswerType::Date)));
        assert!(!typed_by_meaning(Some(AnswerType::Thing)));
        assert!(!typed_by_meaning(None));
    }

    #[tokio::test]
    async fn a_name_reading_as_a_team_gets_a_small_share_of_a_person() {
        let vectors = TextVectors::new(Arc::new(KINDS_OF_NAMES), 64);
        let texts = vec!["Beatrix Nwosu".to_owned(), "Customer Care".to_owned()];
        let shares = tokio::time::timeout(
            Duration::from_secs(10),
            shares_of_kind(&vectors, Some(AnswerType::Person), &texts),
        )
        .await
        .expect("embedding timed out")
        .expect("embedded")
        .expect("a person is typed by meaning");
        assert!(shares[0] > 0.99, "{shares:?}");
        assert!(shares[1] < 0.01, "{shares:?}");
        let by_team = shares_of_kind(&vectors, Some(AnswerType::Organization), &texts)
            .await
            .expect("embedded")
            .expect("an organization is typed by meaning");
        assert!(by_team[1] > 0.99 && by_team[0] < 0.01, "{by_team:?}");
        let year = shares_of_kind(&vectors, Some(AnswerType::Year), &texts)
            .await
            .expect("nothing to embed");
        assert_eq!(year, None);
    }
}
