//! Writes an [`EmbeddedGraph`] (whatever it was loaded from) into a Bolt database in
//! batches: nodes grouped by label set, then relationships grouped by type, one
//! `UNWIND $rows` statement per batch. Endpoints are matched by database id, which the
//! node batches return, so no index on a key property is needed.

use std::collections::HashMap;

use neo4rs::{BoltMap, BoltString, BoltType};

use super::{
    backend_error, quote_name, to_bolt, BoltSettings, Pool, NAME_PROPERTY, NORMALIZED_PROPERTY,
};
use crate::{
    embedded::{normalize_name, EdgeId, EmbeddedGraph, NodeIdx},
    StoreError, StoreResult,
};

/// Property holding the node's index in the graph it was written from.
pub const KEY_PROPERTY: &str = "kgmesh_key";
/// Label given to nodes of a graph without labels (plain triple KGs).
pub const DEFAULT_LABEL: &str = "Entity";

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteStats {
    pub nodes: u64,
    pub relationships: u64,
}

fn map(entries: impl IntoIterator<Item = (String, BoltType)>) -> BoltType {
    BoltType::Map(BoltMap {
        value: entries
            .into_iter()
            .map(|(key, value)| (BoltString::from(key.as_str()), value))
            .collect(),
    })
}

/// Writes every node and edge of `graph`. With `clear`, deletes everything in the
/// database first (the target is meant to hold this one KG).
pub async fn write_graph(
    settings: &BoltSettings,
    graph: &EmbeddedGraph,
    batch_size: usize,
    clear: bool,
) -> StoreResult<WriteStats> {
    let connection = Pool::connect(settings).await?;
    let timeout = settings.timeout;
    let batch_size = batch_size.max(1);
    if clear {
        connection
            .fetch(neo4rs::query("MATCH (n) DETACH DELETE n"), timeout, 0)
            .await?;
    }

    // ---- nodes, grouped by label set -------------------------------------------------
    let mut groups: HashMap<String, Vec<NodeIdx>> = HashMap::new();
    for node in 0..graph.node_count() as NodeIdx {
        let labels: Vec<String> = graph
            .labels(node)
            .iter()
            .map(|label| quote_name(graph.label_name(*label)))
            .collect();
        let key = if labels.is_empty() {
            quote_name(DEFAULT_LABEL)
        } else {
            labels.join(":")
        };
        groups.entry(key).or_default().push(node);
    }
    let mut database_id: Vec<i64> = vec![-1; graph.node_count()];
    let mut stats = WriteStats::default();
    let mut group_keys: Vec<&String> = groups.keys().collect();
    group_keys.sort();
    for labels in group_keys {
        let statement = format!(
            "UNWIND $rows AS row CREATE (n:{labels}) SET n = row RETURN row.{KEY_PROPERTY} AS k, id(n) AS id"
        );
        for chunk in groups[labels].chunks(batch_size) {
            let rows: Vec<BoltType> = chunk
                .iter()
                .map(|node| {
                    let mut properties: Vec<(String, BoltType)> = graph
                        .node_properties(*node)
                        .map(|(key, value)| {
                            (graph.property_key_name(key).to_owned(), to_bolt(value))
                        })
                        .filter(|(key, _)| key != NAME_PROPERTY)
                        .collect();
                    let name = graph.name(*node);
                    properties.push((NAME_PROPERTY.to_owned(), BoltType::from(name)));
                    properties.push((
                        NORMALIZED_PROPERTY.to_owned(),
                        BoltType::from(normalize_name(name)),
                    ));
                    properties.push((KEY_PROPERTY.to_owned(), BoltType::from(i64::from(*node))));
                    map(properties)
                })
                .collect();
            let query = neo4rs::query(&statement).param("rows", rows);
            let (returned, _) = connection.fetch(query, timeout, usize::MAX).await?;
            for row in returned {
                let (Some(BoltType::Integer(key)), Some(BoltType::Integer(id))) =
                    (row.get("k"), row.get("id"))
                else {
                    return Err(backend_error("node creation returned no ids"));
                };
                let slot = usize::try_from(key.value)
                    .ok()
                    .and_then(|index| database_id.get_mut(index))
                    .ok_or_else(|| backend_error("node creation returned an unknown key"))?;
                *slot = id.value;
                stats.nodes += 1;
            }
        }
    }
    if database_id.iter().any(|id| *id < 0) {
        return Err(StoreError::Backend {
            detail: "some nodes were not created".to_owned(),
        });
    }

    // ---- relationships, grouped by type ------------------------------------------------
    let mut by_relation: Vec<Vec<(NodeIdx, NodeIdx, EdgeId)>> =
        vec![Vec::new(); graph.relation_count()];
    for node in 0..graph.node_count() as NodeIdx {
        for (relation, tail, edge) in graph.out_edges(node).iter() {
            by_relation[relation.0 as usize].push((node, tail, edge));
        }
    }
    for (relation, edges) in graph.relations().zip(&by_relation) {
        let statement = format!(
            "UNWIND $rows AS row MATCH (a) WHERE id(a) = row.h MATCH (b) WHERE id(b) = row.t \
             CREATE (a)-[r:{}]->(b) SET r = row.p RETURN count(r) AS c",
            quote_name(relation.1)
        );
        for chunk in edges.chunks(batch_size) {
            let rows: Vec<BoltType> = chunk
                .iter()
                .map(|(head, tail, edge)| {
                    let properties: Vec<(String, BoltType)> = graph
                        .edge_properties(*edge)
                        .map(|(key, value)| {
                            (graph.property_key_name(key).to_owned(), to_bolt(value))
                        })
                        .collect();
                    map([
                        ("h".to_owned(), BoltType::from(database_id[*head as usize])),
                        ("t".to_owned(), BoltType::from(database_id[*tail as usize])),
                        ("p".to_owned(), map(properties)),
                    ])
                })
                .collect();
            let query = neo4rs::query(&statement).param("rows", rows);
            let (returned, _) = connection.fetch(query, timeout, usize::MAX).await?;
            let created = returned
                .first()
                .and_then(|row| match row.get("c") {
                    Some(BoltType::Integer(count)) => Some(count.value),
                    _ => None,
                })
                .unwrap_or(0);
            stats.relationships += created.max(0) as u64;
        }
    }
    Ok(stats)
}
