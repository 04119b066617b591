//! Training examples for the reader from QA pairs: the question is linked and its
//! candidate plans ranked exactly as at question time, and each candidate is labelled
//! by how well what it reaches matches the gold answers (F1 over names). A count's gold
//! answer is a number no node is named by: such a question teaches nothing.

use std::sync::Arc;

use kgmesh_models::lexical::Gazetteer;
use kgmesh_stores::{GraphStore, StoreResult};

use super::{
    candidate_features,
    lexicon::{Lexicon, LexiconInput},
    model::Example,
    types::NodeTypes,
    Candidates, FirstStage,
};
use crate::{
    kg_linker::core::{first_stage, link_entities, read_by_the_graph, LinkerConfig, Reaching},
    scoring::{
        relevance::{returning_steps, Relevance, TextVectors},
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
    pub lexicon_input: LexiconInput,
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
    lexicon: Option<&Lexicon>,
) -> StoreResult<(Vec<String>, Option<Reading>)> {
    let (mentions, linked) = link_entities(store, question, index, config).await?;
    if linked.is_empty() {
        return Ok((mentions, None));
    }
    let names: Vec<&str> = mentions.iter().map(String::as_str).collect();
    let relevance = Relevance::for_metapaths(question, &names, vectors_opt.clone());
    let sources: Vec<_> = linked.iter().map(|s| s.entity.id).collect();
    let relevance = read_by_the_graph(store, relevance, &sources, vectors_opt.as_deref()).await;
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
    let Candidates {
        picked,
        rows,
        types,
        lexicon_input,
    } = candidate_features(
        store,
        question,
        relevance.terms(),
        relevance.word_vectors().map(|v| v.as_ref()),
        &sources,
        &first,
        candidates,
        lexicon,
    )
    .await?;
    Ok((
        mentions,
        Some(Reading {
            reaching,
            picked,
            rows,
            types,
            lexicon_input,
        }),
    ))
}

/// Fills every group's examples' lexicon features in with a lexicon learned from the
/// other groups only, as a graph the reader has not seen is read (cross-fitting), and
/// returns the lexicon learned from all groups (the one a model trained on them keeps).
/// A group is one graph's questions: entries with the same key are one group.
pub fn cross_fit_lexicon<G: PartialEq>(groups: &mut [(G, Vec<Example>)]) -> Lexicon {
    let learn = |skip: Option<&G>, groups: &[(G, Vec<Example>)]| {
        let inputs: Vec<(&LexiconInput, Vec<bool>)> = groups
            .iter()
            .filter(|(g, _)| Some(g) != skip)
            .flat_map(|(_, examples)| examples.iter().map(|e| (&e.lexicon_input, e.exact())))
            .collect();
        Lexicon::learn(inputs)
    };
    let folds: Vec<Lexicon> = groups.iter().map(|(g, _)| learn(Some(g), groups)).collect();
    for ((_, examples), lexicon) in groups.iter_mut().zip(&folds) {
        for example in examples {
            example.apply_lexicon(lexicon);
        }
    }
    learn(None, groups)
}

/// One QA pair as a training example; `None` when no entity of the question is found
/// in the graph or no relation path leaves it. Its lexicon features are zeros until
/// [`cross_fit_lexicon`] fills them in.
pub async fn example(
    store: &dyn GraphStore,
    index: &Gazetteer,
    vectors_opt: Option<Arc<TextVectors>>,
    question: &str,
    answers: &[String],
    config: &LinkerConfig,
    candidates: usize,
) -> StoreResult<Option<Example>> {
    let (_, reading) = read_question(
        store,
        index,
        vectors_opt,
        question,
        config,
        candidates,
        None,
    )
    .await?;
    let Some(Reading {
        reaching,
        picked,
        rows,
        types,
        lexicon_input,
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
    // Of the candidates that reach the gold answers exactly, one that walks a relation
    // there and back reaches them by coincidence when one without such a return reaches
    // them too: it would teach that unexplained hops are harmless. Paths that reach the
    // same answers by different relations are all right: which of them the question
    // asks for is what the reader must learn from the question's words ("X's gender"
    // and "X's mother's father's gender" may both be "male"), not from their length.
    let returns = |i: usize| returning_steps(&reaching[i].metapath).contains(&true);
    let straight_exact = picked
        .iter()
        .zip(&targets)
        .any(|(&i, &t)| t >= super::model::EXACT && !returns(i));
    if straight_exact {
        for (&i, target) in picked.iter().zip(targets.iter_mut()) {
            if returns(i) {
                *target = 0.0;
            }
        }
    }
    // A count's gold answer: one number that no candidate reaches as a node.
    let count = match answers {
        [one] if targets.iter().all(|&t| t == 0.0) => one.trim().parse::<usize>().ok(),
        _ => None,
    };
    // A count is answered by a path that reaches that many nodes, all of them known:
    // those are its plans (by the same rule on returns as above).
    if let Some(n) = count.filter(|&n| n > 0) {
        let counts = |i: usize| reaching[i].complete && reaching[i].reached.len() == n;
        let straight = picked.iter().any(|&i| counts(i) && !returns(i));
        for (&i, target) in picked.iter().zip(targets.iter_mut()) {
            if counts(i) && !(straight && returns(i)) {
                *target = 1.0;
            }
        }
    }
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
        lexicon_input,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::{features::FEATURES, lexicon::Hop};

    /// A question whose second candidate (`manufacturer`) is right.
    fn example(question: &str, stem: &str) -> Example {
        let candidates = vec![
            vec![Hop::new("fleet", true)],
            vec![Hop::new("manufacturer", false)],
        ];
        Example {
            features: vec![vec![0.0; FEATURES.len()]; 2],
            targets: vec![0.0, 1.0],
            answerable: true,
            reached: vec![Some(1), Some(1)],
            count: None,
            paths: Vec::new(),
            lexicon_input: LexiconInput::new(question, &[stem.to_owned()], candidates),
        }
    }

    #[test]
    fn a_graphs_lexicon_features_come_from_the_other_graphs_only() {
        let makes: Vec<Example> = (0..5)
            .map(|i| example(&format!("who makes X{i}"), "make"))
            .collect();
        let builds: Vec<Example> = (0..5)
            .map(|i| example(&format!("who builds Y{i}"), "build"))
            .collect();
        // Two entries of one graph are one group.
        let (first, second) = makes.split_at(3);
        let mut groups = vec![
            ("makes", first.to_vec()),
            ("builds", builds),
            ("makes", second.to_vec()),
        ];
        let all = cross_fit_lexicon(&mut groups);
        let lexicon_at = FEATURES.len() - crate::reader::lexicon::LEXICON_FEATURES.len();
        // "make" is learned only from the first graph, so the first graph's own rows
        // know nothing of it; the lexicon of both graphs does.
        for (_, examples) in &groups {
            for example in examples {
                assert_eq!(
                    example.features[1][lexicon_at], 0.0,
                    "{:?}",
                    example.features[1]
                );
            }
        }
        let unseen = example("who makes Z", "make");
        let mut scored = unseen.clone();
        scored.apply_lexicon(&all);
        assert!(
            scored.features[1][lexicon_at] > 0.0,
            "{:?}",
            scored.features[1]
        );
    }
}
