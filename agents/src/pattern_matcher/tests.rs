use std::collections::{HashMap, HashSet};

use kgmesh_schemas::{
    graph::{Entity, ScoredEntity},
    NodeId,
};
use proptest::prelude::*;

use super::{
    core::{match_question, MatchLimits},
    pattern::{pattern_without_model, PatternNode},
    search::{top_k, LocalGraph, SearchLimits, SearchPattern},
};
use crate::{kg_linker::core::graph_relations, scoring::fixtures};

fn entity(id: u64) -> Entity {
    Entity {
        id: NodeId(id),
        name: format!("n{id}"),
    }
}

/// The phrases of the pattern's edges, in edge order.
fn phrases(question: &str, names: &[&str]) -> Vec<Option<String>> {
    let pattern = pattern_without_model(question, names, 3, &[]).expect("a pattern");
    pattern.edges.iter().map(|e| e.phrase.clone()).collect()
}

fn some(texts: &[&str]) -> Vec<Option<String>> {
    texts.iter().map(|t| Some((*t).to_owned())).collect()
}

#[test]
fn a_chain_runs_from_the_named_entity_outwards() {
    assert_eq!(
        phrases("who directed the movies starring Tom Hanks", &["Tom Hanks"]),
        some(&["movies starring", "directed"])
    );
    assert_eq!(
        phrases(
            "what languages are spoken in the films directed by Joel Coen",
            &["Joel Coen"]
        ),
        some(&["films directed", "spoken"])
    );
    // A possessive chain comes first, then the words before the name.
    assert_eq!(
        phrases("what is the nationality of Anna's mom", &["Anna"]),
        some(&["mom", "nationality"])
    );
    let pattern = pattern_without_model("who directed Heat", &["Heat"], 3, &[]).unwrap();
    assert_eq!(pattern.nodes[0], PatternNode::Known("Heat".to_owned()));
    assert_eq!(pattern.answer, 1);
    assert_eq!(pattern.to_string(), "(Heat) -[directed]- (?answer)");
}

#[test]
fn words_after_the_name_come_first_and_the_asked_class_last() {
    let with = |question: &str, name: &str, classes: &[&str]| {
        let classes: Vec<String> = classes.iter().map(|c| (*c).to_owned()).collect();
        let pattern = pattern_without_model(question, &[name], 3, &classes).expect("a pattern");
        pattern
            .edges
            .iter()
            .map(|e| e.phrase.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        with(
            "where is the football club that Saphir_TAIDER plays for",
            "Saphir_TAIDER",
            &[]
        ),
        some(&["plays", "football club"])
    );
    assert_eq!(
        with(
            "which country does Mario_GAVRANOVIC play in",
            "Mario_GAVRANOVIC",
            &["country"]
        ),
        some(&["play", "country"])
    );
    assert_eq!(
        with(
            "the films that share directors with the film [Black Snake Moan] were in which genres",
            "Black Snake Moan",
            &["genres"]
        ),
        some(&["directors", "directors", "genres"])
    );
}

#[test]
fn class_words_alone_name_no_relation_and_shared_values_go_there_and_back() {
    // "which films" names the answer's class: one hop, "direct".
    assert_eq!(
        phrases("which films did Joel Coen direct", &["Joel Coen"]),
        some(&["direct"])
    );
    // "same director" is a round trip through the shared director.
    let pattern = pattern_without_model(
        "which films have the same director as Heat",
        &["Heat"],
        3,
        &[],
    )
    .unwrap();
    assert_eq!(pattern.edges.len(), 2);
    assert_eq!(pattern.edges[0].phrase.as_deref(), Some("director"));
    assert_eq!(pattern.edges[1].phrase.as_deref(), Some("director"));
    assert_eq!(pattern.answer, 2);
    // No words left: one hop of unknown relation.
    assert_eq!(phrases("Heat?", &["Heat"]), vec![None]);
    // The depth budget caps the edges.
    let short = pattern_without_model(
        "who directed the movies starring Tom Hanks",
        &["Tom Hanks"],
        1,
        &[],
    )
    .unwrap();
    assert_eq!(short.edges.len(), 1);
    assert!(pattern_without_model("who directed Heat", &[], 3, &[]).is_none());
}

#[test]
fn two_named_entities_make_a_star_around_the_answer() {
    let pattern = pattern_without_model(
        "who plays position midfielder for club Arsenal",
        &["midfielder", "Arsenal"],
        3,
        &[],
    )
    .unwrap();
    assert_eq!(pattern.answer, 0);
    assert_eq!(pattern.nodes[0], PatternNode::Unknown);
    assert_eq!(pattern.edges.len(), 2);
    assert_eq!(pattern.edges[0].phrase.as_deref(), Some("plays position"));
    assert_eq!(pattern.edges[1].phrase.as_deref(), Some("club"));
    assert!(pattern.edges.iter().all(|e| e.to == 0));
}

/// A stored edge (head, relation, tail) and what it costs a pattern edge.
type EdgeChoice = ((NodeId, String, NodeId), f32);

/// Every match's distance, by enumerating every mapping of pattern nodes to graph nodes
/// and every choice of graph edge per pattern edge; the `k` smallest.
fn brute_force(graph: &LocalGraph, pattern: &SearchPattern, k: usize) -> Vec<f32> {
    let mut universe: Vec<NodeId> = graph.nodes().collect();
    universe.sort();
    let n = pattern.nodes.len();
    if !pattern.nodes.iter().any(Option::is_some) {
        return Vec::new();
    }
    let mut distances = Vec::new();
    let mut assignment = vec![0usize; n];
    'mappings: loop {
        let nodes: Vec<NodeId> = assignment.iter().map(|&i| universe[i]).collect();
        let mut node_cost = Some(0.0f32);
        for (v, candidates) in pattern.nodes.iter().enumerate() {
            if let Some(c) = candidates {
                match c
                    .iter()
                    .filter(|(id, _)| *id == nodes[v])
                    .map(|(_, d)| *d)
                    .reduce(f32::min)
                {
                    Some(d) => node_cost = node_cost.map(|x| x + d),
                    None => node_cost = None,
                }
            }
        }
        if let Some(node_cost) = node_cost {
            // Per pattern edge: every stored edge between the images with its cost.
            let options: Vec<Vec<EdgeChoice>> = pattern
                .edges
                .iter()
                .map(|(a, b, candidates)| {
                    let mut out = Vec::new();
                    for (r, name) in graph.relations().iter().enumerate() {
                        let cost = match candidates {
                            Some(c) => match c.get(&(r as u32)) {
                                Some(&d) => d,
                                None => continue,
                            },
                            None => 0.0,
                        };
                        for (h, t) in [(nodes[*a], nodes[*b]), (nodes[*b], nodes[*a])] {
                            if graph.has_edge(h, name, t)
                                && !out.iter().any(|(e, _)| *e == (h, name.clone(), t))
                            {
                                out.push(((h, name.clone(), t), cost));
                            }
                        }
                    }
                    out
                })
                .collect();
            // Every combination of distinct edges.
            let mut choice = vec![0usize; options.len()];
            if options.iter().all(|o| !o.is_empty()) {
                loop {
                    let picked: Vec<&(NodeId, String, NodeId)> = choice
                        .iter()
                        .enumerate()
                        .map(|(e, &c)| &options[e][c].0)
                        .collect();
                    let distinct = picked
                        .iter()
                        .enumerate()
                        .all(|(i, x)| picked[..i].iter().all(|y| y != x));
                    if distinct {
                        let cost: f32 = choice
                            .iter()
                            .enumerate()
                            .map(|(e, &c)| options[e][c].1)
                            .sum();
                        distances.push(node_cost + cost);
                    }
                    let mut e = 0;
                    while e < choice.len() {
                        choice[e] += 1;
                        if choice[e] < options[e].len() {
                            break;
                        }
                        choice[e] = 0;
                        e += 1;
                    }
                    if e == choice.len() {
                        break;
                    }
                }
            }
        }
        let mut v = 0;
        while v < n {
            assignment[v] += 1;
            if assignment[v] < universe.len() {
                continue 'mappings;
            }
            assignment[v] = 0;
            v += 1;
        }
        break;
    }
    distances.sort_by(f32::total_cmp);
    distances.truncate(k);
    distances
}

/// A random small graph and a random connected pattern with random distances.
fn graph_and_pattern() -> impl Strategy<Value = (LocalGraph, SearchPattern, usize)> {
    let edges = prop::collection::vec((0u64..8, 0u32..3, 0u64..8), 1..24);
    let shape = prop::collection::vec((any::<bool>(), 0usize..8), 1..4);
    let node_distances =
        prop::collection::vec(prop::collection::vec((0u64..8, 0.0f32..1.0), 1..4), 4);
    let relation_distances =
        prop::collection::vec(prop::option::of(prop::collection::vec(0.0f32..1.0, 3)), 4);
    let unknown = prop::collection::vec(any::<bool>(), 4);
    (
        edges,
        shape,
        node_distances,
        relation_distances,
        unknown,
        1usize..6,
    )
        .prop_map(
            |(edges, shape, node_distances, relation_distances, unknown, k)| {
                let mut graph = LocalGraph::new();
                for r in 0..3 {
                    graph.relation_id(&format!("r{r}"));
                }
                for (h, r, t) in edges {
                    graph.add(&entity(h), &format!("r{r}"), &entity(t));
                }
                // Pattern node 0 is known; every new node hangs off an earlier one, and
                // `(false, j)` adds a cycle edge to an earlier node j when there is one.
                let mut node_count = 1;
                let mut pattern_edges = Vec::new();
                for (new_node, j) in shape {
                    if new_node || node_count < 2 {
                        pattern_edges.push((j % node_count, node_count));
                        node_count += 1;
                    } else {
                        let a = j % node_count;
                        let b = (j + 1) % node_count;
                        if a != b {
                            pattern_edges.push((a, b));
                        }
                    }
                }
                let nodes = (0..node_count)
                    .map(|v| {
                        (v == 0 || !unknown[v]).then(|| {
                            node_distances[v]
                                .iter()
                                .map(|&(id, d)| (NodeId(id), d))
                                .collect()
                        })
                    })
                    .collect();
                let edges = pattern_edges
                    .into_iter()
                    .enumerate()
                    .map(|(e, (a, b))| {
                        let candidates = relation_distances[e].as_ref().map(|d| {
                            d.iter()
                                .enumerate()
                                .map(|(r, &d)| (r as u32, d))
                                .collect::<HashMap<u32, f32>>()
                        });
                        (a, b, candidates)
                    })
                    .collect();
                (graph, SearchPattern { nodes, edges }, k)
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// The pruned search finds exactly the brute-force top-k distances.
    #[test]
    fn pruned_search_equals_brute_force((graph, pattern, k) in graph_and_pattern()) {
        let limits = SearchLimits { k, max_steps: usize::MAX };
        let fast = top_k(&graph, &pattern, limits);
        let slow_d = brute_force(&graph, &pattern, k);
        let fast_d: Vec<f32> = fast.matches.iter().map(|m| m.distance).collect();
        prop_assert_eq!(fast_d.len(), slow_d.len());
        for (f, s) in fast_d.iter().zip(&slow_d) {
            prop_assert!((f - s).abs() < 1e-4, "{:?} vs {:?}", fast_d, slow_d);
        }
        prop_assert!(!fast.truncated);
        // Every match is a real one: each pattern edge a distinct graph edge with a
        // candidate relation, each known node one of its candidates.
        for m in &fast.matches {
            let mut used = Vec::new();
            for (e, (a, b, candidates)) in pattern.edges.iter().enumerate() {
                let (relation, reversed) = m.edges[e];
                let (head, tail) = if reversed { (m.nodes[*b], m.nodes[*a]) } else { (m.nodes[*a], m.nodes[*b]) };
                let name = &graph.relations()[relation as usize];
                prop_assert!(graph.has_edge(head, name, tail));
                used.push((head, relation, tail));
                if let Some(c) = candidates {
                    prop_assert!(c.contains_key(&relation));
                }
            }
            let count = used.len();
            used.sort();
            used.dedup();
            prop_assert_eq!(used.len(), count);
            for (v, candidates) in pattern.nodes.iter().enumerate() {
                if let Some(c) = candidates {
                    prop_assert!(c.iter().any(|(id, _)| *id == m.nodes[v]));
                }
            }
        }
    }

    /// The step limit is never exceeded.
    #[test]
    fn the_step_budget_holds((graph, pattern, k) in graph_and_pattern(), steps in 1usize..20) {
        let outcome = top_k(&graph, &pattern, SearchLimits { k, max_steps: steps });
        prop_assert!(outcome.steps <= steps);
        prop_assert!(outcome.matches.len() <= k);
    }
}

#[test]
fn a_pattern_without_known_nodes_or_candidates_matches_nothing() {
    let mut graph = LocalGraph::new();
    graph.add(&entity(1), "r", &entity(2));
    let unknown_only = SearchPattern {
        nodes: vec![None, None],
        edges: vec![(0, 1, None)],
    };
    let limits = SearchLimits {
        k: 5,
        max_steps: 1_000,
    };
    assert!(top_k(&graph, &unknown_only, limits).matches.is_empty());
    let no_candidates = SearchPattern {
        nodes: vec![Some(vec![(NodeId(9), 0.0)]), None],
        edges: vec![(0, 1, None)],
    };
    assert!(top_k(&graph, &no_candidates, limits).matches.is_empty());
    let matched = SearchPattern {
        nodes: vec![Some(vec![(NodeId(2), 0.1)]), None],
        edges: vec![(0, 1, None)],
    };
    let found = top_k(&graph, &matched, limits);
    assert_eq!(found.matches.len(), 1);
    assert_eq!(found.matches[0].nodes, vec![NodeId(2), NodeId(1)]);
    // The stored edge points from node 1's image to node 0's.
    assert_eq!(found.matches[0].edges, vec![(0, true)]);
    assert!((found.matches[0].distance - 0.1).abs() < 1e-6);
}

#[tokio::test]
async fn the_closest_subgraph_answers_a_three_hop_question() {
    let store = fixtures::movies();
    let heat = fixtures::entity(&store, "Heat");
    let relations = graph_relations(&store).await;
    let matched = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        match_question(
            &store,
            None,
            &relations,
            "what languages are the films directed by the director of Heat in",
            &[ScoredEntity {
                entity: heat,
                score: 1.0,
            }],
            &MatchLimits::default(),
        ),
    )
    .await
    .expect("in time")
    .expect("matched");
    assert!(
        matched.notes[0].starts_with(
            "pattern matcher: (Heat) -[director]- (?1); (?1) -[films directed]- (?2); (?2) -[languages]- (?answer)"
        ),
        "{:?}",
        matched.notes
    );
    let (best, distance) = matched.paths.first().expect("a path");
    let relations: Vec<(&str, bool)> = best
        .steps
        .iter()
        .map(|s| (s.relation.as_str(), s.inverse))
        .collect();
    assert_eq!(
        relations,
        vec![
            ("directed_by", false),
            ("directed_by", true),
            ("in_language", false)
        ]
    );
    // "director" is near `directed_by` by its letters only: 1 − 0.8.
    assert!((*distance - 0.2).abs() < 1e-4, "{distance}");
    // Heat's director also made Collateral: its languages are the closest answers.
    let ends: HashSet<&str> = matched
        .paths
        .iter()
        .filter(|(_, d)| (*d - *distance).abs() < 1e-4)
        .map(|(p, _)| p.end().name.as_str())
        .collect();
    assert_eq!(ends, HashSet::from(["English", "Spanish"]));
}
