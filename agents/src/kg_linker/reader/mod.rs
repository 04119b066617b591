//! The question reader's learned stage: candidate plans (relation paths from the
//! question's entities) re-ranked by a model over domain-independent features, with
//! node classes read from the graph.
//!
//! The KG-Linker's first stage ranks every relation path that leaves the question's
//! entities by how its relation names read against the question (words, and meaning
//! with an embedder). The reader takes the best [`ReaderModel::candidates`] of them,
//! reads what each reaches (how many nodes, their classes: declared by a type relation
//! or induced from the relations they have, whether they read as numbers), and orders
//! them by the learned weights. `kgmesh reader train` fits the weights from QA pairs
//! of many domains ([`train`]); `docs/reader.md` says how they were made.

pub mod features;
pub mod lexicon;
pub mod model;
pub mod train;
pub mod types;

use kgmesh_schemas::{graph::Direction, NodeId};
use kgmesh_stores::{GraphStore, StoreResult};

pub use model::{active, install, Example, ReaderModel, Readers, TrainSettings};

use self::{
    features::{features, AnswerAsk, Candidate, WordCosines, CLASS_SAMPLE},
    lexicon::{Hop, Lexicon, LexiconInput, LEXICON_FEATURES},
    types::NodeTypes,
};
use crate::{
    kg_linker::core::{metapath_text, Reaching},
    scoring::{
        relevance::{cosine, TextVectors},
        text::{relation_label, SequenceFit},
    },
};

/// Edges read per node to know its class (or the classes pointing to it).
pub(crate) const TYPE_FANOUT: usize = 50;

/// The first stage's view of every candidate, aligned with `reaching`.
pub struct FirstStage<'a> {
    pub reaching: &'a [Reaching],
    pub fits: &'a [SequenceFit],
    pub lexical: &'a [f32],
    /// Candidate indexes, best first by the first stage.
    pub order: &'a [usize],
}

/// The candidates the reader scores for one question.
pub struct Candidates {
    /// Indexes into the first stage's candidates, in its order.
    pub picked: Vec<usize>,
    /// The features of each of `picked`.
    pub rows: Vec<Vec<f32>>,
    pub types: NodeTypes,
    /// What the lexicon reads of them (to fill in their lexicon features again with
    /// another lexicon, as training does).
    pub lexicon_input: LexiconInput,
}

/// Feature vectors of the first `limit` candidates of `first.order`, in that order,
/// with the lexicon features `lexicon` gives them (zeros without one).
#[allow(clippy::too_many_arguments)]
pub async fn candidate_features(
    store: &dyn GraphStore,
    question: &str,
    terms: &crate::scoring::text::QuestionTerms,
    vectors_opt: Option<&TextVectors>,
    sources: &[NodeId],
    first: &FirstStage<'_>,
    limit: usize,
    lexicon: Option<&Lexicon>,
) -> StoreResult<Candidates> {
    let nodes: Vec<NodeId> = first
        .order
        .iter()
        .take(limit)
        .flat_map(|&i| first.reaching[i].reached.iter().take(CLASS_SAMPLE).copied())
        .collect();
    let types = NodeTypes::read(store, &nodes).await?;
    Ok(candidate_features_read(
        question,
        terms,
        vectors_opt,
        sources,
        first,
        limit,
        lexicon,
        types,
    )
    .await)
}

/// [`candidate_features`] with the classes of what the candidates reach already read
/// (`types`): the same first `limit` candidates in another order read no class again.
#[allow(clippy::too_many_arguments)]
pub async fn candidate_features_read(
    question: &str,
    terms: &crate::scoring::text::QuestionTerms,
    vectors_opt: Option<&TextVectors>,
    sources: &[NodeId],
    first: &FirstStage<'_>,
    limit: usize,
    lexicon: Option<&Lexicon>,
    types: NodeTypes,
) -> Candidates {
    let picked: Vec<usize> = first.order.iter().take(limit).copied().collect();
    let ask = AnswerAsk::read(question, terms);
    let cosines = match vectors_opt {
        Some(vectors) => {
            let mut relations: Vec<&str> = picked
                .iter()
                .flat_map(|&i| {
                    first.reaching[i]
                        .metapath
                        .steps
                        .iter()
                        .map(|s| s.relation.as_str())
                })
                .collect();
            relations.sort_unstable();
            relations.dedup();
            let paths: Vec<String> = picked
                .iter()
                .map(|&i| metapath_text(&first.reaching[i].metapath))
                .collect();
            let mut class_texts: Vec<String> = Vec::new();
            if !ask.class_raw.is_empty() {
                for &i in &picked {
                    let reaching = &first.reaching[i];
                    let last = reaching.metapath.steps.last().map(|s| s.relation.as_str());
                    for &node in reaching.reached.iter().take(CLASS_SAMPLE) {
                        class_texts.extend(types.class_texts(node, last));
                    }
                }
                class_texts.sort();
                class_texts.dedup();
            }
            word_cosines(vectors, &ask, &relations, &paths, &class_texts).await
        }
        None => None,
    };
    let best_relevance = picked
        .iter()
        .map(|&i| first.fits[i].score)
        .fold(f32::MIN, f32::max);
    let best_lexical = picked
        .iter()
        .map(|&i| first.lexical[i])
        .fold(f32::MIN, f32::max);
    let lexicon_input = LexiconInput::new(
        question,
        &ask.all_stems(),
        picked
            .iter()
            .map(|&i| {
                first.reaching[i]
                    .metapath
                    .steps
                    .iter()
                    .map(|s| Hop::new(&s.relation, s.direction == Direction::In))
                    .collect()
            })
            .collect(),
    );
    let lexicon_rows = match lexicon {
        Some(lexicon) => lexicon.features(&lexicon_input),
        None => vec![vec![0.0; LEXICON_FEATURES.len()]; picked.len()],
    };
    let rows = picked
        .iter()
        .enumerate()
        .map(|(rank, &i)| {
            let reaching = &first.reaching[i];
            let candidate = Candidate {
                position: rank,
                metapath: &reaching.metapath,
                reached: &reaching.reached,
                complete: reaching.complete,
                relevance: first.fits[i].score,
                rank,
                lexical: first.lexical[i],
                unexplained_hops: first.fits[i].unexplained_hops,
                hops: &lexicon_input.candidates[rank],
                lexicon: &lexicon_rows[rank],
            };
            features(
                &candidate,
                best_relevance,
                best_lexical,
                &ask,
                sources,
                &types,
                cosines.as_ref(),
            )
        })
        .collect();
    Candidates {
        picked,
        rows,
        types,
        lexicon_input,
    }
}

/// `first.order` with its first [`ReaderModel::candidates`] re-ordered by `model`, and
/// the chance that the new first is right (when the model has a fitted confidence).
pub async fn rerank(
    store: &dyn GraphStore,
    model: &ReaderModel,
    question: &str,
    terms: &crate::scoring::text::QuestionTerms,
    vectors_opt: Option<&TextVectors>,
    sources: &[NodeId],
    first: &FirstStage<'_>,
) -> StoreResult<(Vec<usize>, Option<f32>)> {
    let Candidates { picked, rows, .. } = candidate_features(
        store,
        question,
        terms,
        vectors_opt,
        sources,
        first,
        model.candidates,
        Some(&model.lexicon),
    )
    .await?;
    let scores: Vec<f32> = rows.iter().map(|row| model.score(row)).collect();
    let mut by_model: Vec<usize> = (0..picked.len()).collect();
    // Ties keep the first stage's order.
    by_model.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    let mut order: Vec<usize> = by_model.into_iter().map(|k| picked[k]).collect();
    order.extend(first.order.iter().skip(picked.len()).copied());
    Ok((order, model.chance(&rows)))
}

/// Cosines of the question's relation and class words with each relation's label; `None`
/// when the embedder fails (the reader then reads words only, and says so in the log).
async fn word_cosines(
    vectors: &TextVectors,
    ask: &AnswerAsk,
    relations: &[&str],
    paths: &[String],
    class_texts: &[String],
) -> Option<WordCosines> {
    if relations.is_empty() {
        return None;
    }
    let labels: Vec<String> = relations.iter().map(|r| relation_label(r)).collect();
    let mut texts: Vec<String> = labels.clone();
    texts.extend(ask.relation_raw.iter().cloned());
    texts.extend(ask.class_raw.iter().cloned());
    texts.extend(paths.iter().cloned());
    texts.extend(class_texts.iter().cloned());
    let asked = ask.asked_text();
    texts.push(asked);
    let found = match vectors.vectors(&texts).await {
        Ok(found) => found,
        Err(error) => {
            tracing::warn!(%error, "reader: words not embedded; read by their letters only");
            return None;
        }
    };
    let (label_vectors, rest) = found.split_at(labels.len());
    let (relation_words, rest) = rest.split_at(ask.relation_raw.len());
    let (class_words, rest) = rest.split_at(ask.class_raw.len());
    let (path_vectors, rest) = rest.split_at(paths.len());
    let (class_vectors, question) = rest.split_at(class_texts.len());
    let mut cosines = WordCosines::default();
    for (text, vector) in class_texts.iter().zip(class_vectors) {
        let best = class_words
            .iter()
            .map(|w| cosine(vector, w))
            .fold(0.0f32, f32::max);
        cosines.class_text.insert(text.clone(), best);
    }
    if let Some(question) = question.first() {
        let path_cos: Vec<f32> = path_vectors.iter().map(|p| cosine(p, question)).collect();
        let best = path_cos.iter().copied().fold(f32::MIN, f32::max);
        cosines.path_gap = path_cos.iter().map(|c| c - best).collect();
    }
    for (relation, label) in relations.iter().zip(label_vectors) {
        let per_word: Vec<f32> = relation_words.iter().map(|w| cosine(label, w)).collect();
        let best = per_word.iter().copied().fold(0.0f32, f32::max);
        let class = class_words
            .iter()
            .map(|w| cosine(label, w))
            .fold(0.0f32, f32::max);
        cosines
            .per_relation
            .insert((*relation).to_owned(), (best, class));
        cosines.per_word.insert((*relation).to_owned(), per_word);
    }
    Some(cosines)
}
