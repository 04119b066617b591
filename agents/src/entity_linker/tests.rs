use kgmesh_models::lexical::Gazetteer;
use kgmesh_schemas::{messages::entity_linker::LinkMode, NodeId};

use super::core::{build_name_index, link, normalize, EXACT_SCORE};
use crate::scoring::fixtures::movies;

fn index_of(names: &[&str]) -> Gazetteer {
    Gazetteer::build(
        names
            .iter()
            .enumerate()
            .map(|(i, n)| (NodeId(i as u64), (*n).to_owned())),
    )
}

#[test]
fn normalization_folds_case_and_punctuation() {
    assert_eq!(
        normalize("  Spider-Man:  Far From HOME "),
        "spider man far from home"
    );
}

#[test]
fn exact_matches_rank_first_then_normalized_then_fuzzy() {
    let index = index_of(&["heat", "Heat", "Heath", "Heat Wave", "Cold"]);
    let found = index.lookup("Heat", 3);
    assert_eq!(found[0].entity.name, "Heat", "byte-identical first");
    assert_eq!(found[1].entity.name, "heat", "then normalized");
    assert_eq!(found[0].score, EXACT_SCORE);
    assert!(found[2].score < EXACT_SCORE);
    assert!(["Heath", "Heat Wave"].contains(&found[2].entity.name.as_str()));
}

#[test]
fn misspellings_find_the_intended_name() {
    let index = index_of(&["Michael Mann", "Michael Caine", "Tom Cruise", "Manhattan"]);
    let found = index.lookup("Micheal Man", 2);
    assert_eq!(found[0].entity.name, "Michael Mann");
    assert!(found.len() <= 2);
}

#[test]
fn names_much_shorter_than_the_mention_are_dropped() {
    let index = index_of(&["Al", "Al Pacino"]);
    let found = index.lookup("Alfredo James Pacino", 5);
    assert!(found.iter().all(|c| c.entity.name != "Al"), "{found:?}");
}

#[test]
fn empty_and_unmatched_mentions_give_nothing() {
    let index = index_of(&["Heat"]);
    assert!(index.lookup("", 3).is_empty());
    assert!(index.lookup("!!!", 3).is_empty());
    assert!(index.lookup("zzzz", 3).is_empty());
    assert!(index.lookup("Heat", 0).is_empty());
}

#[tokio::test]
async fn the_index_is_built_from_every_page_of_names() {
    let triples: Vec<(String, String, String)> = (0..25_000)
        .map(|i| {
            (
                format!("node {i}"),
                "next".to_owned(),
                format!("node {}", i + 1),
            )
        })
        .collect();
    let borrowed: Vec<(&str, &str, &str)> = triples
        .iter()
        .map(|(h, r, t)| (h.as_str(), r.as_str(), t.as_str()))
        .collect();
    let graph = crate::scoring::fixtures::graph(&borrowed);
    let index = build_name_index(&graph).await.unwrap();
    assert_eq!(index.len(), 25_001);
    assert_eq!(index.named("Node 24999")[0].name, "node 24999");
}

#[tokio::test]
async fn a_batch_keeps_request_order_and_top_m() {
    let graph = movies();
    let index = build_name_index(&graph).await.unwrap();
    let mentions = vec![
        "top gun".to_owned(),
        "Al Pacno".to_owned(),
        "xyzzy".to_owned(),
    ];
    let links = link(&mentions, &index, None, LinkMode::Fuzzy, 2)
        .await
        .unwrap();
    assert_eq!(links.len(), 3);
    assert_eq!(links[0].mention, "top gun");
    assert_eq!(links[0].candidates[0].entity.name, "Top Gun");
    assert_eq!(links[1].candidates[0].entity.name, "Al Pacino");
    assert!(links.iter().all(|l| l.candidates.len() <= 2));
    assert!(links[2].candidates.is_empty());
}

/// The names of a mention's candidates, best first.
fn candidate_names(links: &kgmesh_schemas::messages::entity_linker::MentionLinks) -> Vec<&str> {
    links
        .candidates
        .iter()
        .map(|c| c.entity.name.as_str())
        .collect()
}

#[tokio::test]
async fn a_mention_naming_a_node_exactly_links_no_near_names() {
    // Relatives share family names: "david carradine" names one node, and his father
    // is another entity, not a second reading of the mention.
    let index = index_of(&[
        "david_carradine",
        "john_carradine",
        "keith_carradine",
        "Cargo",
        "cargo",
    ]);
    let mentions = vec![
        "David Carradine".to_owned(),
        "Cargo".to_owned(),
        "Dave Carradine".to_owned(),
    ];
    let links = link(&mentions, &index, None, LinkMode::Fuzzy, 5)
        .await
        .unwrap();
    let names = |i: usize| candidate_names(&links[i]);
    assert_eq!(names(0), ["david_carradine"]);
    // Namesakes are all exact: both stay.
    assert_eq!(names(1), ["Cargo", "cargo"]);
    // A mention no node is named by keeps its near names to choose from.
    assert!(names(2).len() > 1, "{:?}", names(2));
    assert!(names(2).contains(&"david_carradine"), "{:?}", names(2));
}

#[tokio::test]
async fn among_names_that_read_alike_the_one_spelled_as_written_is_linked() {
    let index = index_of(&["Up", "Up!", "Tarzan the Ape Man", "Tarzan, the Ape Man"]);
    let mentions = vec![
        "Up".to_owned(),
        "Tarzan, the Ape Man".to_owned(),
        "up".to_owned(),
    ];
    let links = link(&mentions, &index, None, LinkMode::Fuzzy, 5)
        .await
        .unwrap();
    let names = |i: usize| candidate_names(&links[i]);
    assert_eq!(names(0), ["Up"]);
    assert_eq!(names(1), ["Tarzan, the Ape Man"]);
    assert_eq!(names(2), ["Up"], "letter case aside");
    // The question's own mentions: a bracketed stop word is a name, as written.
    assert_eq!(
        index.exact_mentions("who wrote the screenplay for [Up]", 6, 2),
        ["Up"]
    );
}

#[tokio::test]
async fn embedding_mode_without_embeddings_is_a_typed_error() {
    let index = index_of(&["Heat"]);
    let result = link(&["Heat".to_owned()], &index, None, LinkMode::Embedding, 3).await;
    assert!(matches!(result, Err(super::core::LinkError::NoEmbeddings)));
}

#[test]
fn the_gazetteer_prefers_long_mentions_and_skips_stop_words() {
    let index = index_of(&["The", "Michael Mann", "Michael", "Heat", "what"]);
    let mentions = index.exact_mentions("What films did Michael Mann direct after Heat?", 6, 2);
    assert_eq!(mentions, vec!["michael mann".to_owned(), "heat".to_owned()]);
}

async fn within<F: std::future::Future>(
    future: F,
) -> Result<F::Output, tokio::time::error::Elapsed> {
    tokio::time::timeout(std::time::Duration::from_secs(30), future).await
}

#[tokio::test]
async fn roles_of_one_process_share_one_name_index() {
    use std::{sync::Arc, time::Duration};

    use kgmesh_bus::LocalBus;
    use kgmesh_schemas::{
        messages::{entity_linker::LinkRequest, kg_linker::KgLinkRequest},
        Budget, Meta, QuestionId, Role,
    };
    use kgmesh_stores::GraphStore;

    use super::names::SharedNames;
    use crate::{
        registry,
        runtime::{AgentDeps, Client, StartOptions},
    };

    let bus = Arc::new(LocalBus::new());
    let graph: Arc<dyn GraphStore> = Arc::new(movies());
    let deps = AgentDeps::new(bus.clone()).with_graph(graph.clone());
    let linker = within(registry::start(
        Role::ENTITY_LINKER,
        &deps,
        StartOptions::default(),
    ))
    .await
    .expect("in time")
    .unwrap();
    let kg_linker = within(registry::start(
        Role::KG_LINKER,
        &deps,
        StartOptions::default(),
    ))
    .await
    .expect("in time")
    .unwrap();
    assert!(
        deps.shared::<SharedNames>().get_built().is_none(),
        "built on first use only"
    );

    let client = Client::new(bus.clone());
    let meta = Meta::new(QuestionId::new_random(), 1, Budget::default());
    let (links, _) = within(client.call(
        &Role::well_known(Role::ENTITY_LINKER),
        &meta,
        &LinkRequest {
            mentions: vec!["Michael Man".to_owned()],
            top_m: 1,
            mode: LinkMode::Fuzzy,
        },
    ))
    .await
    .expect("in time")
    .unwrap();
    assert_eq!(links.links[0].candidates[0].entity.name, "Michael Mann");
    let built = deps
        .shared::<SharedNames>()
        .get_built()
        .expect("the entity linker built it");

    let (linked, _) = within(client.call(
        &Role::well_known(Role::KG_LINKER),
        &meta,
        &KgLinkRequest {
            question: "who directed Heat".to_owned(),
            context: Default::default(),
            repair_hints: Vec::new(),
            examples: Vec::new(),
            cues: Vec::new(),
        },
    ))
    .await
    .expect("in time")
    .unwrap();
    assert_eq!(linked.linked[0].entity.name, "Heat");
    let again = deps
        .shared::<SharedNames>()
        .get(graph.as_ref())
        .await
        .unwrap();
    assert!(Arc::ptr_eq(&built, &again), "one index for every role");

    linker.stop(Duration::from_secs(5)).await;
    kg_linker.stop(Duration::from_secs(5)).await;
}
