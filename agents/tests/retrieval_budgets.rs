//! Budgets hold on adversarial graphs: a hub with a million neighbours, cycles, and
//! random multigraphs. Every call returns within a bound and never more than its caps.

use std::{sync::OnceLock, time::Duration};

use kgmesh_agents::{
    kg_linker::core::{enumerate_metapaths, EnumerateLimits},
    path_follower::core::{expand_breadth, follow_metapath, shortest_paths, WalkLimits},
    scoring::{
        core::{score_triples, ScoringConfig},
        relevance::Relevance,
    },
    traverser::core::{traverse, TraverseConfig},
};
use kgmesh_schemas::graph::{Direction, Entity, Metapath, RelationStep};
use kgmesh_stores::{embedded::GraphBuilder, EmbeddedGraph};
use proptest::prelude::*;

const HUB_DEGREE: usize = 1_000_000;

/// `hub -link-> leaf i` for a million leaves, plus a three-cycle through the hub.
fn hub_graph() -> &'static EmbeddedGraph {
    static GRAPH: OnceLock<EmbeddedGraph> = OnceLock::new();
    GRAPH.get_or_init(|| {
        let mut builder = GraphBuilder::new();
        let hub = builder.node("hub");
        for i in 0..HUB_DEGREE {
            let leaf = builder.node(&format!("leaf {i}"));
            builder.add_edge(hub, "link", leaf);
        }
        let a = builder.node("a");
        let b = builder.node("b");
        builder.add_edge(hub, "next", a);
        builder.add_edge(a, "next", b);
        builder.add_edge(b, "next", hub);
        builder.finish()
    })
}

fn entity(graph: &EmbeddedGraph, name: &str) -> Entity {
    graph.entity(graph.lookup_exact(name)[0])
}

fn step(relation: &str, direction: Direction) -> RelationStep {
    RelationStep {
        relation: relation.to_owned(),
        direction,
    }
}

async fn prompt<F: std::future::Future>(future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(60), future)
        .await
        .expect("a bounded call did not return promptly")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_million_neighbours_stay_within_every_cap() {
    let graph = hub_graph();
    let hub = entity(graph, "hub");
    let leaf = entity(graph, "leaf 17");
    let limits = WalkLimits::default();

    let paths = prompt(follow_metapath(
        graph,
        std::slice::from_ref(&leaf),
        &Metapath {
            steps: vec![step("link", Direction::In), step("link", Direction::Out)],
        },
        &limits,
    ))
    .await
    .unwrap();
    assert!(!paths.is_empty() && paths.len() <= limits.max_paths);
    assert!(paths.iter().all(|p| p.len() == 2));

    let unreachable = Entity {
        id: kgmesh_schemas::NodeId(u64::MAX),
        name: "nowhere".into(),
    };
    let none = prompt(shortest_paths(
        graph,
        std::slice::from_ref(&leaf),
        &[unreachable],
        &limits,
    ))
    .await
    .unwrap();
    assert!(none.is_empty());

    let relevance = Relevance::lexical("which link leads on", &[]);
    let breadth = prompt(expand_breadth(
        graph,
        std::slice::from_ref(&hub),
        &relevance,
        30,
        1_000,
    ))
    .await
    .unwrap();
    assert_eq!(breadth.triples.len(), 30);

    let scoring = ScoringConfig::default();
    let scored = prompt(score_triples(
        graph,
        &relevance,
        std::slice::from_ref(&leaf),
        &scoring,
    ))
    .await
    .unwrap();
    assert!(scored.len() <= scoring.top_k);

    let config = TraverseConfig::default();
    let walked = prompt(traverse(
        graph,
        &relevance,
        None,
        "which link leads on",
        std::slice::from_ref(&hub),
        &config,
        None,
    ))
    .await
    .unwrap();
    assert!(walked.steps.len() <= 3);
    assert!(walked.triples.len() <= 3 * config.max_triplets);

    let enumerate = EnumerateLimits::default();
    let metapaths = prompt(enumerate_metapaths(graph, &[hub.id, leaf.id], &enumerate))
        .await
        .unwrap();
    assert!(metapaths.len() <= enumerate.max_metapaths);
    assert!(metapaths.iter().all(|m| (1..=3).contains(&m.steps.len())));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cycles_end_at_the_depth_limit() {
    let graph = hub_graph();
    let a = entity(graph, "a");
    let around = Metapath {
        steps: vec![
            step("next", Direction::Out),
            step("next", Direction::Out),
            step("next", Direction::Out),
        ],
    };
    let paths = prompt(follow_metapath(
        graph,
        &[a],
        &around,
        &WalkLimits::default(),
    ))
    .await
    .unwrap();
    // a → b → hub → a walks three different edges (a Cypher pattern would find it);
    // the walk ends there, at the metapath's length, however long the cycle goes on.
    assert!(!paths.is_empty(), "the cycle back to a is a path");
    assert!(paths.iter().all(|p| p.steps.len() == 3), "{paths:?}");
    assert!(paths.iter().any(|p| p.end().name == "a"), "{paths:?}");
}

fn random_graph(edges: &[(u8, u8, u8)]) -> EmbeddedGraph {
    let mut builder = GraphBuilder::new();
    for (head, relation, tail) in edges {
        let head = builder.node(&format!("n{head}"));
        let tail = builder.node(&format!("n{tail}"));
        builder.add_edge(head, ["r0", "r1", "r2"][*relation as usize % 3], tail);
    }
    builder.finish()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn walks_respect_caps_on_random_cyclic_graphs(
        edges in prop::collection::vec((0u8..40, 0u8..3, 0u8..40), 1..300),
        relations in prop::collection::vec((0u8..3, any::<bool>()), 1..4),
        fanout_cap in 1usize..20,
        max_paths in 1usize..50,
        k_degree in 1usize..10,
    ) {
        let graph = random_graph(&edges);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let start = graph.entity(graph.lookup_exact(&format!("n{}", edges[0].0))[0]);
        let target = graph.entity(graph.lookup_exact(&format!("n{}", edges[edges.len() - 1].2))[0]);
        let metapath = Metapath {
            steps: relations
                .iter()
                .map(|(r, inverse)| step(["r0", "r1", "r2"][*r as usize], if *inverse { Direction::In } else { Direction::Out }))
                .collect(),
        };
        let limits = WalkLimits { fanout_cap, max_paths, max_frontier: max_paths, ..WalkLimits::default() };
        let (paths, shortest, breadth) = runtime.block_on(async {
            let paths = follow_metapath(&graph, std::slice::from_ref(&start), &metapath, &limits).await.unwrap();
            let shortest = shortest_paths(&graph, std::slice::from_ref(&start), std::slice::from_ref(&target), &limits).await.unwrap();
            let relevance = Relevance::lexical("r1", &[]);
            let breadth = expand_breadth(&graph, std::slice::from_ref(&start), &relevance, k_degree, fanout_cap).await.unwrap();
            (paths, shortest, breadth)
        });
        prop_assert!(paths.len() <= max_paths);
        for path in &paths {
            prop_assert_eq!(path.len(), metapath.steps.len());
            // Nodes and edges may repeat, but no step walks straight back over the
            // edge the step before it walked.
            let mut from = path.start.id;
            let mut last_edge = None;
            for step in &path.steps {
                let edge = if step.inverse {
                    (step.node.id, step.relation.clone(), from)
                } else {
                    (from, step.relation.clone(), step.node.id)
                };
                let turned_back = last_edge.as_ref() == Some(&edge);
                prop_assert!(!turned_back, "a path walks straight back over an edge");
                last_edge = Some(edge);
                from = step.node.id;
            }
        }
        prop_assert!(shortest.len() <= 1);
        prop_assert!(shortest.iter().all(|p| p.len() <= 3 && p.end().id == target.id));
        prop_assert!(breadth.triples.len() <= k_degree);
    }
}
