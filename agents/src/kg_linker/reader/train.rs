//! Training examples for the reader from QA pairs: the question is linked and its
//! candidate plans ranked exactly as at question time, and each candidate is labelled
//! by how well what it reaches matches the gold answers (F1 over names). A count's gold
//! answer is a number no node is named by: such a question teaches nothing.

use std::sync::Arc;

use kgmesh_models::lexical::Gazetteer;
use kgmesh_stores::{GraphStore, StoreResult};

use super::{candidate_features, model::Example, types::NodeTypes, FirstStage};
use crate::{
    kg_linker::core::{first_stage, graph_relations, link_entities, LinkerConfig, Reaching},
    scoring::{
        relevance::{Relevance, TextVectors},
        text::words,
    },
};

fn comparable(name: &str) -> String {
    words(name).join(" ")
}

/// A question read as the LLM-free KG-Linker reads it with the reader on: its
/// entities, every relation path leaving them, and the features of the first stage's
/// best `candidates` of them.
pub struct Reading {
    /// Every path found, in enumeration order.
    pub reaching: Vec<Reaching>,
    /// Indexes into `reaching` of the candidates, in the first stage's order.
    pub picked: Vec<usize>,
    /// The features of each of `picked`.
    pub rows: Vec<Vec<f32>>,
    pub types: NodeTypes,
}

/// Reads `question`; `None` when no entity of it is found in the graph or no relation
/// path leaves one (the mentions tried come back either way).
pub async fn read_question(
    store: &dyn GraphStore,
    index: &Gazetteer,
    vectors_opt: Option<Arc<TextVectors>>,
    question: &str,
    config: &LinkerConfig,
    candidates: usize,
) -> StoreResult<(Vec<String>, Option<Reading>)> {
    let (mentions, linked) = link_entities(store, question, index, config).await?;
    if linked.is_empty() {
        return Ok((mentions, None));
    }
    let names: Vec<&str> = mentions.iter().map(String::as_str).collect();
    let mut relevance = Relevance::for_metapaths(question, &names, vectors_opt.clone());
    if vectors_opt.is_some() {
        relevance = relevance.with_graph_relations(graph_relations(store).await);
    }
    let sources: Vec<_> = linked.iter().map(|s| s.entity.id).collect();
    let (reaching, fits, lexical, order) =
        first_stage(store, &relevance, &sources, &config.enumerate, true).await?;
    if reaching.is_empty() {
        return Ok((mentions, None));
    }
    let first = FirstStage {
        reaching: &reaching,
        fits: &fits,
        lexical: &lexical,
        order: &order,
    };
    let (picked, rows, types) = candidate_features(
        store,
        question,
        relevance.terms(),
        relevance.word_vectors().map(|v| v.as_ref()),
        &sources,
        &first,
        candidates,
    )
    .await?;
    Ok((
        mentions,
        Some(Reading {
            reaching,
            picked,
            rows,
            types,
        }),
    ))
}

/// One QA pair as a training example; `None` when no entity of the question is found
/// in the graph or no relation path leaves it.
pub async fn example(
    store: &dyn GraphStore,
    index: &Gazetteer,
    vectors_opt: Option<Arc<TextVectors>>,
    question: &str,
    answers: &[String],
    config: &LinkerConfig,
    candidates: usize,
) -> StoreResult<Option<Example>> {
    let (_, reading) =
        read_question(store, index, vectors_opt, question, config, candidates).await?;
    let Some(Reading {
        reaching,
        picked,
        rows,
        types,
        ..
    }) = reading
    else {
        return Ok(None);
    };
    let gold: Vec<String> = answers.iter().map(|a| comparable(a)).collect();
    let mut targets: Vec<f32> = picked
        .iter()
        .map(|&i| {
            let reached: Vec<String> = reaching[i]
                .reached
                .iter()
                .filter_map(|&n| types.name(n))
                .map(comparable)
                .collect();
            if reached.is_empty() || gold.is_empty() {
                return 0.0;
            }
            let right = reached.iter().filter(|r| gold.contains(r)).count() as f32;
            let found = gold.iter().filter(|g| reached.contains(g)).count() as f32;
            let (precision, recall) = (right / reached.len() as f32, found / gold.len() as f32);
            if precision + recall > 0.0 {
                2.0 * precision * recall / (precision + recall)
            } else {
                0.0
            }
        })
        .collect();
    // Of the candidates that reach the gold answers exactly, the shortest are the plan;
    // a longer one reaching the same nodes does so by coincidence (walking a relation
    // there and back) and would teach that unexplained hops are harmless.
    let shortest = picked
        .iter()
        .zip(&targets)
        .filter(|(_, &t)| t >= super::model::EXACT)
        .map(|(&i, _)| reaching[i].metapath.steps.len())
        .min();
    if let Some(shortest) = shortest {
        for (&i, target) in picked.iter().zip(targets.iter_mut()) {
            if reaching[i].metapath.steps.len() > shortest {
                *target = 0.0;
            }
        }
    }
    // A count's gold answer: one number that no candidate reaches as a node.
    let count = match answers {
        [one] if targets.iter().all(|&t| t == 0.0) => one.trim().parse::<usize>().ok(),
        _ => None,
    };
    let paths = picked
        .iter()
        .map(|&i| crate::kg_linker::core::metapath_text(&reaching[i].metapath))
        .collect();
    Ok(Some(Example {
        features: rows,
        targets,
        paths,
        answerable: !answers.is_empty(),
        reached: picked
            .iter()
            .map(|&i| reaching[i].complete.then_some(reaching[i].reached.len()))
            .collect(),
        count,
    }))
}
