use kgmesh_schemas::graph::{Direction, RelationStep};

use super::core::{
    enumerate_metapaths, link_without_llm, rank_metapaths, EnumerateLimits, LinkerConfig,
};
use crate::{
    entity_linker::core::build_name_index,
    scoring::{
        fixtures::{entity, movies},
        relevance::Relevance,
    },
};

fn step(relation: &str, direction: Direction) -> RelationStep {
    RelationStep {
        relation: relation.to_owned(),
        direction,
    }
}

#[tokio::test]
async fn only_relation_sequences_present_in_the_graph_are_enumerated() {
    let graph = movies();
    let mann = entity(&graph, "Michael Mann");
    let found = enumerate_metapaths(&graph, &[mann.id], &EnumerateLimits::default())
        .await
        .unwrap();
    assert!(found
        .iter()
        .any(|m| m.steps == vec![step("directed_by", Direction::In)]));
    assert!(found.iter().any(|m| m.steps
        == vec![
            step("directed_by", Direction::In),
            step("in_language", Direction::Out)
        ]));
    assert!(!found
        .iter()
        .any(|m| m.steps[0] == step("directed_by", Direction::Out)));
    assert!(found.iter().all(|m| (1..=3).contains(&m.steps.len())));
}

#[tokio::test]
async fn the_sequence_the_question_describes_ranks_first() {
    let graph = movies();
    let mann = entity(&graph, "Michael Mann");
    let relevance = Relevance::lexical(
        "what languages are the films directed by Michael Mann in",
        &["Michael Mann"],
    );
    let ranked = rank_metapaths(&graph, &relevance, &[mann], &EnumerateLimits::default(), 3)
        .await
        .unwrap();
    assert_eq!(ranked.len(), 3);
    assert_eq!(
        ranked[0].metapath.steps,
        vec![
            step("directed_by", Direction::In),
            step("in_language", Direction::Out)
        ]
    );
}

#[tokio::test]
async fn the_llm_free_linker_links_entities_and_proposes_metapaths() {
    let graph = movies();
    let index = build_name_index(&graph).await.unwrap();
    let reply = link_without_llm(
        &graph,
        &index,
        None,
        "Who starred in the films of Michael Mann?",
        &LinkerConfig::default(),
    )
    .await
    .unwrap();
    assert_eq!(reply.mentions, vec!["michael mann".to_owned()]);
    assert_eq!(reply.linked[0].entity.name, "Michael Mann");
    assert_eq!(
        reply.metapaths[0].steps,
        vec![
            step("directed_by", Direction::In),
            step("starred_actors", Direction::Out)
        ]
    );
    assert!(!reply.finish);
}

#[tokio::test]
async fn a_question_naming_no_entity_links_nothing() {
    let graph = movies();
    let index = build_name_index(&graph).await.unwrap();
    let reply = link_without_llm(
        &graph,
        &index,
        None,
        "what is the meaning of life",
        &LinkerConfig::default(),
    )
    .await
    .unwrap();
    assert!(reply.linked.is_empty());
    assert!(reply.metapaths.is_empty());
}
