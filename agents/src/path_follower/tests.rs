use kgmesh_schemas::graph::Direction;
use kgmesh_stores::GraphStore;

use super::core::{expand_breadth, expand_depth, follow_metapath, shortest_paths, WalkLimits};
use crate::{
    scoring::{
        fixtures::{entity, graph, metapath, movies},
        relevance::Relevance,
    },
    verbalize::verbalize_paths,
};

#[tokio::test]
async fn a_metapath_is_followed_with_inverse_steps_and_intermediates() {
    let graph = movies();
    let mann = entity(&graph, "Michael Mann");
    let path = metapath(&[
        ("directed_by", Direction::In),
        ("in_language", Direction::Out),
    ]);
    let paths = follow_metapath(&graph, &[mann], &path, &WalkLimits::default())
        .await
        .unwrap();
    let mut lines = verbalize_paths(&paths);
    lines.sort();
    assert_eq!(
        lines,
        vec![
            "Michael Mann <- directed_by <- Collateral -> in_language -> English | Spanish",
            "Michael Mann <- directed_by <- Heat -> in_language -> English",
        ]
    );
}

#[tokio::test]
async fn a_step_written_the_wrong_way_round_is_retried_inverted() {
    let graph = movies();
    let mann = entity(&graph, "Michael Mann");
    let path = metapath(&[("directed_by", Direction::Out)]);
    let paths = follow_metapath(&graph, &[mann], &path, &WalkLimits::default())
        .await
        .unwrap();
    assert_eq!(paths.len(), 2);
    assert!(paths.iter().all(|p| p.steps[0].inverse));
}

#[tokio::test]
async fn paths_never_walk_straight_back_and_respect_max_paths() {
    let graph = movies();
    let pacino = entity(&graph, "Al Pacino");
    // Co-stars: films of Al Pacino, then their actors — never Al Pacino himself, who is
    // reached only by walking his own edge back.
    let path = metapath(&[
        ("starred_actors", Direction::In),
        ("starred_actors", Direction::Out),
    ]);
    let paths = follow_metapath(
        &graph,
        std::slice::from_ref(&pacino),
        &path,
        &WalkLimits::default(),
    )
    .await
    .unwrap();
    assert_eq!(paths.len(), 1);
    assert_eq!(paths[0].end().name, "Robert De Niro");
    let limits = WalkLimits {
        max_paths: 1,
        ..WalkLimits::default()
    };
    let one = follow_metapath(
        &graph,
        &[pacino],
        &metapath(&[("starred_actors", Direction::In)]),
        &limits,
    )
    .await
    .unwrap();
    assert_eq!(one.len(), 1);
}

#[tokio::test]
async fn shortest_paths_are_bounded_by_depth() {
    let graph = movies();
    let pacino = entity(&graph, "Al Pacino");
    let mann = entity(&graph, "Michael Mann");
    let cruise = entity(&graph, "Tom Cruise");
    let found = shortest_paths(
        &graph,
        std::slice::from_ref(&pacino),
        std::slice::from_ref(&mann),
        &WalkLimits::default(),
    )
    .await
    .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].len(), 2);
    assert_eq!(found[0].steps[0].node.name, "Heat");
    assert_eq!(found[0].end().name, "Michael Mann");
    // Al Pacino → Heat → Michael Mann → Collateral → Tom Cruise is four hops.
    let none = shortest_paths(&graph, &[pacino], &[cruise], &WalkLimits::default())
        .await
        .unwrap();
    assert!(none.is_empty());
}

#[tokio::test]
async fn depth_expansion_follows_one_relation_and_caps_per_node() {
    let graph = movies();
    let heat = entity(&graph, "Heat");
    let collateral = entity(&graph, "Collateral");
    let expanded = expand_depth(
        &graph,
        &[heat, collateral],
        "in_language",
        Direction::Out,
        1,
        10,
    )
    .await
    .unwrap();
    assert_eq!(expanded.triples.len(), 2, "one edge per frontier node");
    assert!(expanded
        .triples
        .iter()
        .all(|(t, _)| t.relation == "in_language"));
    assert_eq!(
        expanded.frontier.len(),
        expanded
            .frontier
            .iter()
            .map(|e| e.id)
            .collect::<std::collections::HashSet<_>>()
            .len()
    );
}

#[tokio::test]
async fn breadth_expansion_keeps_the_k_most_relevant_neighbours() {
    let graph = movies();
    let heat = entity(&graph, "Heat");
    let relevance = Relevance::lexical("in which year was Heat released", &["Heat"]);
    let expanded = expand_breadth(&graph, &[heat], &relevance, 1, 100)
        .await
        .unwrap();
    assert_eq!(expanded.triples.len(), 1);
    assert_eq!(expanded.triples[0].0.relation, "release_year");
    assert_eq!(expanded.frontier[0].name, "1995");
}

#[tokio::test]
async fn cycles_do_not_trap_a_walk() {
    let cycle = graph(&[("a", "next", "b"), ("b", "next", "c"), ("c", "next", "a")]);
    let a = entity(&cycle, "a");
    let path = metapath(&[
        ("next", Direction::Out),
        ("next", Direction::Out),
        ("next", Direction::Out),
    ]);
    let paths = follow_metapath(&cycle, &[a], &path, &WalkLimits::default())
        .await
        .unwrap();
    // Three different edges lead round the cycle and back to the start, as a Cypher
    // pattern `(a)-[:next]->()-[:next]->()-[:next]->(x)` would find.
    assert_eq!(paths.len(), 1);
    assert_eq!(paths[0].end().name, "a");
    assert_eq!(paths[0].steps.len(), 3);
}

#[tokio::test]
async fn a_path_may_pass_a_node_again_over_a_different_edge() {
    let family = graph(&[
        ("x", "spouse", "y"),
        ("y", "spouse", "x"),
        ("x", "born_in", "z"),
        ("w", "spouse", "v"),
    ]);
    let x = entity(&family, "x");
    // "x's spouse's spouse's birthplace": back to x over y's own spouse edge.
    let there_and_back = metapath(&[
        ("spouse", Direction::Out),
        ("spouse", Direction::Out),
        ("born_in", Direction::Out),
    ]);
    let paths = follow_metapath(
        &family,
        std::slice::from_ref(&x),
        &there_and_back,
        &WalkLimits::default(),
    )
    .await
    .unwrap();
    let lines = verbalize_paths(&paths);
    assert_eq!(
        lines,
        vec!["x -> spouse -> y -> spouse -> x -> born_in -> z"]
    );
    // Straight back over the edge just walked is no path: x -> y, then y <- x over
    // (x, spouse, y) again.
    let walk_back = metapath(&[("spouse", Direction::Out), ("spouse", Direction::In)]);
    let back = follow_metapath(&family, &[x], &walk_back, &WalkLimits::default())
        .await
        .unwrap();
    assert!(back.is_empty(), "{:?}", verbalize_paths(&back));
}

#[tokio::test]
async fn a_path_may_walk_an_edge_again_when_it_does_not_turn_straight_back() {
    // x is y's only child: "x's father's child's father" is y, through x itself.
    let family = graph(&[("x", "father", "y"), ("y", "child", "x")]);
    let x = entity(&family, "x");
    let path = metapath(&[
        ("father", Direction::Out),
        ("child", Direction::Out),
        ("father", Direction::Out),
    ]);
    let paths = follow_metapath(
        &family,
        std::slice::from_ref(&x),
        &path,
        &WalkLimits::default(),
    )
    .await
    .unwrap();
    assert_eq!(
        verbalize_paths(&paths),
        vec!["x -> father -> y -> child -> x -> father -> y"]
    );
    // The store walks metapaths the same way (the plan cache verifies plans with it).
    let stored = family
        .follow_metapaths(&[x.id], &[path], &kgmesh_stores::PathLimits::default())
        .await
        .unwrap();
    assert_eq!(verbalize_paths(&stored), verbalize_paths(&paths));
}
