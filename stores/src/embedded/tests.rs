//! Unit tests of the embedded graph's structure and operations on small graphs whose
//! answers are worked out by hand.

use kgmesh_schemas::{
    graph::{Direction, Metapath, RelationStep, Value},
    NodeId,
};

use super::*;
use crate::{NameMatch, NeighborQuery, PathLimits, StoreError};

/// A small movie graph:
/// Heat -directed_by-> Michael Mann; Heat -starred_actors-> Al Pacino, Robert De Niro;
/// Collateral -directed_by-> Michael Mann; The Irishman -starred_actors-> Al Pacino, Robert De Niro
fn movies() -> (EmbeddedGraph, Vec<NodeIdx>) {
    let mut builder = GraphBuilder::new();
    let names = [
        "Heat",
        "Michael Mann",
        "Al Pacino",
        "Robert De Niro",
        "Collateral",
        "The Irishman",
    ];
    let nodes: Vec<NodeIdx> = names.iter().map(|name| builder.node(name)).collect();
    let [heat, mann, pacino, deniro, collateral, irishman] = nodes[..] else {
        unreachable!()
    };
    builder.add_edge(heat, "starred_actors", pacino);
    builder.add_edge(heat, "directed_by", mann);
    builder.add_edge(heat, "starred_actors", deniro);
    builder.add_edge(collateral, "directed_by", mann);
    builder.add_edge(irishman, "starred_actors", deniro);
    builder.add_edge(irishman, "starred_actors", pacino);
    // Duplicate: kept once.
    builder.add_edge(heat, "directed_by", mann);
    (builder.finish(), nodes)
}

#[test]
fn csr_rows_are_grouped_by_relation_in_both_directions() {
    let (graph, nodes) = movies();
    let [heat, mann, pacino, deniro, collateral, irishman] = nodes[..] else {
        unreachable!()
    };
    assert_eq!(graph.node_count(), 6);
    assert_eq!(graph.edge_count(), 6, "the duplicate edge is stored once");
    let starred = graph.relation_id("starred_actors").unwrap();
    let directed = graph.relation_id("directed_by").unwrap();
    assert_eq!(graph.out_neighbors(heat, starred), &[pacino, deniro]);
    assert_eq!(graph.out_neighbors(heat, directed), &[mann]);
    assert_eq!(graph.in_neighbors(mann, directed), &[heat, collateral]);
    assert_eq!(graph.in_neighbors(pacino, starred), &[heat, irishman]);
    assert!(graph.out_neighbors(mann, directed).is_empty());
    assert_eq!(graph.out_degree(heat), 3);
    assert_eq!(graph.in_degree(deniro), 2);
    // Edge ids agree between the two directions.
    let incoming = graph.in_edges_via(deniro, starred);
    for index in 0..incoming.len() {
        let (head, relation, tail) = graph.edge(incoming.edge_id(index));
        assert_eq!(
            (head, relation, tail),
            (incoming.nodes[index], starred, deniro)
        );
    }
    assert_eq!(graph.relation_name(directed), "directed_by");
    assert_eq!(graph.relation_edge_counts()[starred.0 as usize], 4);
}

#[test]
fn names_resolve_exactly_and_normalized() {
    let (graph, nodes) = movies();
    assert_eq!(graph.lookup_exact("Al Pacino"), vec![nodes[2]]);
    assert!(graph.lookup_exact("al pacino").is_empty());
    assert_eq!(graph.lookup_normalized("al_pacino"), vec![nodes[2]]);
    assert_eq!(graph.lookup_normalized("  THE irishman!"), vec![nodes[5]]);
    assert!(graph.lookup_normalized("Pacino").is_empty());
    let resolved = graph.resolve_sync(&["robert de niro".to_owned()], NameMatch::Normalized);
    assert_eq!(resolved[0][0].name, "Robert De Niro");
}

#[test]
fn labels_and_typed_properties_of_a_property_graph() {
    let mut builder = GraphBuilder::new();
    let order = builder.add_node("10248");
    let product = builder.add_node("Chai");
    let other = builder.add_node("Chai");
    builder.add_label(order, "Order");
    builder.add_label(product, "Product");
    builder.add_label(other, "Product");
    builder.set_property(product, "unitPrice", Value::Float(18.0));
    builder.set_property(product, "discontinued", Value::Bool(false));
    builder.set_property(product, "unitPrice", Value::Float(19.0));
    let edge = builder.add_edge(order, "ORDERS", product);
    builder.set_edge_property(edge, "quantity", Value::Int(12));
    // A parallel edge with properties is a different relationship, not a duplicate.
    let second = builder.add_edge(order, "ORDERS", product);
    builder.set_edge_property(second, "quantity", Value::Int(3));
    let graph = builder.finish();

    let product_label = graph.label_id("Product").unwrap();
    assert_eq!(graph.nodes_with_label(product_label), &[product, other]);
    assert!(graph.has_label(product, product_label));
    assert!(!graph.has_label(order, product_label));
    assert_eq!(graph.label_name(graph.labels(order)[0]), "Order");
    assert_eq!(
        graph.node_property_by_name(product, "unitPrice"),
        Some(&Value::Float(19.0))
    );
    assert_eq!(
        graph.node_property_by_name(product, "discontinued"),
        Some(&Value::Bool(false))
    );
    assert_eq!(graph.node_property_by_name(order, "unitPrice"), None);
    assert_eq!(graph.lookup_exact("Chai"), vec![product, other]);

    let orders = graph.relation_id("ORDERS").unwrap();
    let edges = graph.out_edges_via(order, orders);
    assert_eq!(edges.len(), 2);
    let mut quantities: Vec<Value> = (0..2)
        .map(|index| {
            graph
                .edge_property_by_name(edges.edge_id(index), "quantity")
                .cloned()
                .unwrap()
        })
        .collect();
    quantities.sort_by_key(|value| format!("{value:?}"));
    assert_eq!(quantities, vec![Value::Int(12), Value::Int(3)]);
    let incoming = graph.in_edges_via(product, orders);
    assert_eq!(incoming.len(), 2);
    assert!(graph
        .edge_property_by_name(incoming.edge_id(0), "quantity")
        .is_some());

    let schema = graph.schema_sync();
    assert_eq!(schema.label("Product").unwrap().count, 2);
    // Every node answers to `name` in Cypher, so the schema lists it first.
    assert_eq!(
        schema.label("Product").unwrap().property_keys,
        vec!["name", "unitPrice", "discontinued"]
    );
    assert_eq!(
        schema.relation("ORDERS").unwrap().endpoints,
        vec![("Order".to_owned(), "Product".to_owned(), 2)]
    );
    assert_eq!(schema.relationship_property_keys, vec!["quantity"]);
}

fn ids(nodes: &[NodeIdx]) -> Vec<NodeId> {
    nodes.iter().map(|node| NodeId(u64::from(*node))).collect()
}

#[test]
fn neighbors_respect_direction_filter_and_fanout_cap() {
    let (graph, nodes) = movies();
    let [heat, mann, ..] = nodes[..] else {
        unreachable!()
    };
    let query = NeighborQuery {
        direction: Direction::Both,
        relations: None,
        fanout_cap: 10,
    };
    let result = graph.neighbors_sync(&ids(&[heat, mann]), &query).unwrap();
    assert_eq!(result.triples.len(), 5);
    assert!(result.truncated.is_empty());
    // In-edges are reported in stored direction.
    assert!(result
        .triples
        .iter()
        .any(|t| t.head.name == "Collateral" && t.tail.name == "Michael Mann"));

    let capped = NeighborQuery {
        direction: Direction::Out,
        relations: None,
        fanout_cap: 2,
    };
    let result = graph.neighbors_sync(&ids(&[heat]), &capped).unwrap();
    assert_eq!(result.triples.len(), 2);
    assert_eq!(result.truncated, ids(&[heat]));

    let filtered = NeighborQuery {
        direction: Direction::Out,
        relations: Some(vec![
            "directed_by".to_owned(),
            "no_such_relation".to_owned(),
        ]),
        fanout_cap: 10,
    };
    let result = graph.neighbors_sync(&ids(&[heat]), &filtered).unwrap();
    assert_eq!(result.triples.len(), 1);
    assert_eq!(result.triples[0].tail.name, "Michael Mann");

    let error = graph.neighbors_sync(&[NodeId(99)], &query).unwrap_err();
    assert!(matches!(error, StoreError::NotFound { .. }));
}

fn metapath(steps: &[(&str, Direction)]) -> Metapath {
    Metapath {
        steps: steps
            .iter()
            .map(|(relation, direction)| RelationStep {
                relation: (*relation).to_owned(),
                direction: *direction,
            })
            .collect(),
    }
}

#[test]
fn metapaths_follow_relations_in_the_given_directions() {
    let (graph, nodes) = movies();
    let collateral = nodes[4];
    // Collateral -directed_by-> Mann <-directed_by- Heat -starred_actors-> actors
    let path = metapath(&[
        ("directed_by", Direction::Out),
        ("directed_by", Direction::In),
        ("starred_actors", Direction::Out),
    ]);
    let paths = graph
        .follow_metapaths_sync(
            &ids(&[collateral]),
            std::slice::from_ref(&path),
            &PathLimits::default(),
        )
        .unwrap();
    let mut ends: Vec<&str> = paths.iter().map(|path| path.end().name.as_str()).collect();
    ends.sort_unstable();
    assert_eq!(ends, vec!["Al Pacino", "Robert De Niro"]);
    assert_eq!(paths[0].steps[1].node.name, "Heat");
    assert!(paths[0].steps[1].inverse);

    let limited = PathLimits {
        max_paths: 1,
        ..PathLimits::default()
    };
    assert_eq!(
        graph
            .follow_metapaths_sync(&ids(&[collateral]), std::slice::from_ref(&path), &limited)
            .unwrap()
            .len(),
        1
    );

    let shallow = PathLimits {
        max_depth: 2,
        ..PathLimits::default()
    };
    assert!(matches!(
        graph.follow_metapaths_sync(&ids(&[collateral]), &[path], &shallow),
        Err(StoreError::LimitExceeded { .. })
    ));
    let too_deep = PathLimits {
        max_depth: 4,
        ..PathLimits::default()
    };
    assert!(graph
        .follow_metapaths_sync(&ids(&[collateral]), &[], &too_deep)
        .is_err());
}

#[test]
fn shortest_paths_are_bounded_and_complete() {
    let (graph, nodes) = movies();
    let [heat, mann, pacino, deniro, collateral, irishman] = nodes[..] else {
        unreachable!()
    };
    let paths = graph
        .shortest_paths_sync(&ids(&[collateral]), &ids(&[pacino]), &PathLimits::default())
        .unwrap();
    // Collateral - Mann - Heat - Pacino is the only shortest (3 hops).
    assert_eq!(paths.len(), 1);
    let names: Vec<&str> = paths[0]
        .steps
        .iter()
        .map(|step| step.node.name.as_str())
        .collect();
    assert_eq!(names, vec!["Michael Mann", "Heat", "Al Pacino"]);

    // Heat to The Irishman: two shortest paths of length 2 (via each actor).
    let paths = graph
        .shortest_paths_sync(&ids(&[heat]), &ids(&[irishman]), &PathLimits::default())
        .unwrap();
    assert_eq!(paths.len(), 2);
    assert!(paths.iter().all(|path| path.len() == 2));
    let via: Vec<&str> = paths
        .iter()
        .map(|path| path.steps[0].node.name.as_str())
        .collect();
    assert!(via.contains(&"Al Pacino") && via.contains(&"Robert De Niro"));

    let shallow = PathLimits {
        max_depth: 2,
        ..PathLimits::default()
    };
    assert!(graph
        .shortest_paths_sync(&ids(&[collateral]), &ids(&[pacino]), &shallow)
        .unwrap()
        .is_empty());
    let one = PathLimits {
        max_paths: 1,
        ..PathLimits::default()
    };
    assert_eq!(
        graph
            .shortest_paths_sync(&ids(&[heat]), &ids(&[irishman]), &one)
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        graph
            .shortest_paths_sync(&ids(&[mann]), &ids(&[mann, deniro]), &one)
            .unwrap()[0]
            .len(),
        0
    );
}

#[test]
fn stars_and_scans_cover_the_graph_deterministically() {
    let (graph, _) = movies();
    let stars = graph.sample_stars_sync(3, 2, 7);
    assert_eq!(stars.len(), 3);
    assert!(stars
        .iter()
        .all(|star| star.triples.len() <= 2 && !star.triples.is_empty()));
    assert_eq!(stars, graph.sample_stars_sync(3, 2, 7));
    let first = graph.scan_names_sync(None, 4);
    let rest = graph.scan_names_sync(Some(first[3].id), 100);
    assert_eq!(first.len() + rest.len(), 6);
    assert_eq!(rest[0].id, NodeId(4));
}

#[tokio::test]
async fn graph_store_trait_answers_like_the_sync_methods() {
    use crate::GraphStore;
    let (graph, nodes) = movies();
    let store: std::sync::Arc<dyn GraphStore> = std::sync::Arc::new(graph.clone());
    let timeout = std::time::Duration::from_secs(10);
    let schema = tokio::time::timeout(timeout, store.schema())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(schema.edge_count, 6);
    assert_eq!(schema.relation("starred_actors").unwrap().count, 4);
    let paths = tokio::time::timeout(
        timeout,
        store.shortest_paths(&ids(&[nodes[4]]), &ids(&[nodes[2]]), &PathLimits::default()),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(paths.len(), 1);
}

/// Every shortest path by brute force: BFS depths over the same capped expansion
/// (out-edges then in-edges, first `cap`), then every chain that climbs one level per
/// hop from a source to a target at the least target depth.
fn reference_shortest(
    graph: &EmbeddedGraph,
    sources: &[NodeIdx],
    targets: &[NodeIdx],
    max_depth: u8,
    cap: usize,
) -> std::collections::BTreeSet<Vec<(NodeIdx, RelationId, bool)>> {
    let expansion = |node: NodeIdx| -> Vec<(RelationId, NodeIdx, bool)> {
        let out = graph.out_edges(node);
        let inn = graph.in_edges(node);
        out.relations
            .iter()
            .zip(out.nodes)
            .map(|(r, n)| (*r, *n, false))
            .chain(
                inn.relations
                    .iter()
                    .zip(inn.nodes)
                    .map(|(r, n)| (*r, *n, true)),
            )
            .take(cap)
            .collect()
    };
    let mut depth = std::collections::HashMap::new();
    let mut level: Vec<NodeIdx> = sources.to_vec();
    for source in sources {
        depth.insert(*source, 0u8);
    }
    for d in 1..=max_depth {
        let mut next = Vec::new();
        for node in &level {
            for (_, other, _) in expansion(*node) {
                if let std::collections::hash_map::Entry::Vacant(slot) = depth.entry(other) {
                    slot.insert(d);
                    next.push(other);
                }
            }
        }
        level = next;
    }
    let Some(length) = targets.iter().filter_map(|t| depth.get(t)).min().copied() else {
        return Default::default();
    };
    let mut found = std::collections::BTreeSet::new();
    let mut chains: Vec<Vec<(NodeIdx, RelationId, bool)>> = sources
        .iter()
        .map(|s| vec![(*s, RelationId(u32::MAX), false)])
        .collect();
    for d in 1..=length {
        let mut longer = Vec::new();
        for chain in chains {
            let here = chain.last().unwrap().0;
            for (relation, other, inverse) in expansion(here) {
                if depth.get(&other) == Some(&d) {
                    let mut next = chain.clone();
                    next.push((other, relation, inverse));
                    longer.push(next);
                }
            }
        }
        chains = longer;
    }
    for chain in chains {
        if targets.contains(&chain.last().unwrap().0) {
            found.insert(chain);
        }
    }
    found
}

#[test]
fn shortest_paths_match_brute_force_on_random_graphs() {
    let mut state = 5u64;
    for round in 0..60 {
        let node_count = 8 + (splitmix64(&mut state) % 30) as usize;
        let mut builder = GraphBuilder::new();
        let nodes: Vec<NodeIdx> = (0..node_count)
            .map(|n| builder.node(&format!("n{n}")))
            .collect();
        for _ in 0..node_count * 2 {
            let head = nodes[(splitmix64(&mut state) % node_count as u64) as usize];
            let tail = nodes[(splitmix64(&mut state) % node_count as u64) as usize];
            let relation = ["a", "b", "c"][(splitmix64(&mut state) % 3) as usize];
            builder.add_edge(head, relation, tail);
        }
        let graph = builder.finish();
        let pick = |state: &mut u64| nodes[(splitmix64(state) % node_count as u64) as usize];
        let sources = vec![pick(&mut state), pick(&mut state)];
        let targets = vec![pick(&mut state)];
        if sources.contains(&targets[0]) {
            continue;
        }
        for (max_depth, cap) in [(1, 100), (2, 3), (3, 100), (3, 2)] {
            let limits = PathLimits {
                max_depth,
                fanout_cap: cap,
                max_paths: 100_000,
            };
            let paths = graph
                .shortest_paths_sync(&ids(&sources), &ids(&targets), &limits)
                .unwrap();
            let got: std::collections::BTreeSet<Vec<(NodeIdx, RelationId, bool)>> = paths
                .iter()
                .map(|path| {
                    let mut chain = vec![(path.start.id.0 as NodeIdx, RelationId(u32::MAX), false)];
                    chain.extend(path.steps.iter().map(|step| {
                        (
                            step.node.id.0 as NodeIdx,
                            graph.relation_id(&step.relation).unwrap(),
                            step.inverse,
                        )
                    }));
                    chain
                })
                .collect();
            assert_eq!(got.len(), paths.len(), "round {round}: a path twice");
            assert_eq!(
                got,
                reference_shortest(&graph, &sources, &targets, max_depth, cap),
                "round {round}, depth {max_depth}, cap {cap}"
            );
        }
    }
}
