use std::{sync::Arc, time::Duration};

use kgmesh_models::LlmError;

use super::core::{traverse, Stop, TraverseConfig};
use crate::{
    scoring::{
        fixtures::{entity, movies},
        relevance::Relevance,
    },
    testing::ScriptedModel,
};

/// The walk from the movie-graph node `start` without a model (lexical relevance).
async fn walk_without_model(question: &str, start: &str) -> super::core::Traversal {
    let graph = movies();
    let relevance = Relevance::lexical(question, &[start]);
    traverse(
        &graph,
        &relevance,
        None,
        question,
        &[entity(&graph, start)],
        &TraverseConfig::default(),
        None,
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn without_a_model_the_walk_follows_the_relations_the_question_names() {
    let question = "in which years were the films directed by Michael Mann released";
    let walked = walk_without_model(question, "Michael Mann").await;
    assert!(walked.steps.len() <= 3);
    assert_eq!(
        walked.steps[0].relations_chosen,
        vec!["directed_by (inverse)".to_owned()]
    );
    let mut years: Vec<&str> = walked
        .triples
        .iter()
        .filter(|(t, _)| t.relation == "release_year")
        .map(|(t, _)| t.tail.name.as_str())
        .collect();
    years.sort();
    assert_eq!(years, vec!["1995", "2004"]);
    assert_eq!(walked.cost.llm_calls, 0);
}

#[tokio::test]
async fn model_choices_are_relinked_to_graph_entities_and_finish_stops() {
    let graph = movies();
    let mann = entity(&graph, "Michael Mann");
    let question = "when was the Michael Mann film with Robert De Niro released";
    let model = Arc::new(ScriptedModel::new(vec![
        Ok("<selected>\ndirected_by (inverse)\n</selected>"),
        // "Thief" is not among the reached entities: it must not become a frontier.
        Ok("<next-entities>\nHeat\nThief\n</next-entities>"),
        Ok("<selected>release_year</selected>"),
        Ok("<next-entities>FINISH</next-entities>"),
    ]));
    let relevance = Relevance::lexical(question, &["Michael Mann"]);
    let walked = traverse(
        &graph,
        &relevance,
        Some(model.as_ref()),
        question,
        &[mann],
        &TraverseConfig::default(),
        None,
    )
    .await
    .unwrap();
    assert_eq!(walked.stopped, Some(Stop::Finish));
    assert_eq!(walked.cost.llm_calls, 4);
    assert_eq!(walked.cost.prompt_tokens, 400);
    assert_eq!(walked.steps.len(), 2);
    assert_eq!(walked.steps[1].frontier.len(), 1);
    assert_eq!(walked.steps[1].frontier[0].name, "Heat");
    assert!(walked
        .triples
        .iter()
        .any(|(t, _)| t.relation == "release_year" && t.tail.name == "1995"));
    assert!(model.prompts()[1].contains("Collateral"));
}

#[tokio::test]
async fn a_failing_model_leaves_a_note_and_the_walk_goes_on() {
    let graph = movies();
    let mann = entity(&graph, "Michael Mann");
    let question = "which films did Michael Mann direct";
    let model = ScriptedModel::new(vec![Err(LlmError::Timeout(Duration::from_secs(1)))]);
    let relevance = Relevance::lexical(question, &["Michael Mann"]);
    let walked = traverse(
        &graph,
        &relevance,
        Some(&model),
        question,
        &[mann],
        &TraverseConfig::default(),
        None,
    )
    .await
    .unwrap();
    assert_eq!(walked.notes.len(), 1);
    assert!(walked.notes[0].contains("timed out"));
    assert!(walked.triples.iter().any(|(t, _)| t.head.name == "Heat"));
    assert_eq!(walked.cost.model_fallbacks, 1);
}

#[tokio::test]
async fn a_model_talking_nonsense_is_asked_once_and_the_walk_is_the_llm_free_one() {
    let graph = movies();
    let question = "in which years were the films directed by Michael Mann released";
    let model = ScriptedModel::always(Ok("I am sorry, as an AI I cannot browse the web."));
    let relevance = Relevance::lexical(question, &["Michael Mann"]);
    let walked = traverse(
        &graph,
        &relevance,
        Some(&model),
        question,
        &[entity(&graph, "Michael Mann")],
        &TraverseConfig::default(),
        None,
    )
    .await
    .unwrap();
    let without = walk_without_model(question, "Michael Mann").await;
    assert_eq!(walked.triples, without.triples);
    assert_eq!(walked.steps, without.steps);
    assert_eq!(
        (walked.cost.llm_calls, walked.cost.model_fallbacks),
        (1, 1),
        "{:?}",
        walked.notes
    );
    assert!(
        walked.notes[0].contains("no offered relation"),
        "{:?}",
        walked.notes
    );
}

#[tokio::test]
async fn when_the_question_names_no_relation_the_first_step_keeps_the_whole_star() {
    // No word of the question matches a relation of Heat; the answer lies behind
    // `starred_actors`, which sorts after three other relations.
    let walked = walk_without_model("which people does Heat feature", "Heat").await;
    let mut chosen = walked.steps[0].relations_chosen.clone();
    chosen.sort();
    assert_eq!(
        chosen,
        vec![
            "directed_by",
            "has_genre",
            "in_language",
            "release_year",
            "starred_actors"
        ]
    );
    let mut actors: Vec<&str> = walked
        .triples
        .iter()
        .filter(|(t, _)| t.relation == "starred_actors" && t.head.name == "Heat")
        .map(|(t, _)| t.tail.name.as_str())
        .collect();
    actors.sort();
    assert_eq!(actors, vec!["Al Pacino", "Robert De Niro"]);
    // Later steps still need a relation the question names: none here.
    assert!(walked.steps.len() <= 2, "{:?}", walked.steps);
}
