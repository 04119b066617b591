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

/// Property that tags what a text index's skeleton wrote (relationships, and the nodes
/// it had to create), with the index's name as its value.
pub const SKELETON_PROPERTY: &str = "kgmesh_skeleton";

/// The shortest time [`sync_facts`] gives one statement (it scans the database).
const SYNC_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// Names [`sync_facts`] looks up one by one at most; more are read in one scan.
const NAMES_LOOKED_UP: usize = 256;

/// One fact, by names: `head -[relation]-> tail`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NamedFact {
    pub head: String,
    pub relation: String,
    pub tail: String,
}

/// What [`sync_facts`] changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SyncStats {
    /// Tagged relationships already as wanted.
    pub kept: u64,
    /// Facts the graph holds already as untagged relationships (a curated KG's), not
    /// written again.
    pub present: u64,
    pub created: u64,
    pub removed: u64,
    pub nodes_created: u64,
    pub nodes_removed: u64,
}

/// A tagged relationship as the database holds it.
struct Held {
    head: i64,
    tail: i64,
    fact: NamedFact,
}

/// Makes the relationships tagged `tag` ([`SKELETON_PROPERTY`]) exactly `facts`, and
/// writes only the difference:
/// - tagged relationships that are not among `facts` are deleted (the facts of a file
///   that was replaced or removed), and so are duplicates of one fact;
/// - missing facts are created between the nodes of their names: the node with the
///   lowest id when the database has the name already (a curated KG's node, so the
///   skeleton joins that graph), else a new `Entity` node, tagged; a fact the graph
///   already holds untagged is left to that edge;
/// - tagged nodes left without any relationship are deleted.
///
/// Nothing untagged is changed or deleted. Running it twice with the same facts changes
/// nothing the second time.
pub async fn sync_facts(
    settings: &BoltSettings,
    tag: &str,
    facts: &[NamedFact],
    batch_size: usize,
) -> StoreResult<SyncStats> {
    let connection = Pool::connect(settings).await?;
    // Reading every tagged relationship, or every node's name, scans the database: a
    // question's query timeout is too short for that.
    let timeout = settings.timeout.max(SYNC_TIMEOUT);
    let batch_size = batch_size.max(1);
    let mut stats = SyncStats::default();

    // ---- what the database holds -------------------------------------------------------
    let query = neo4rs::query(&format!(
        "MATCH (a)-[r]->(b) WHERE r.{SKELETON_PROPERTY} = $tag \
         RETURN id(a) AS h, a.{NAME_PROPERTY} AS hn, type(r) AS rel, id(b) AS t, b.{NAME_PROPERTY} AS tn"
    ))
    .param("tag", tag);
    let (rows, _) = connection.fetch(query, timeout, usize::MAX).await?;
    let text = |row: &HashMap<String, BoltType>, key: &str| match row.get(key) {
        Some(BoltType::String(s)) => s.value.clone(),
        _ => String::new(),
    };
    let int = |row: &HashMap<String, BoltType>, key: &str| match row.get(key) {
        Some(BoltType::Integer(i)) => Ok(i.value),
        _ => Err(backend_error(format!(
            "the database returned a row without an integer `{key}`"
        ))),
    };
    let mut held: Vec<Held> = Vec::with_capacity(rows.len());
    for row in &rows {
        held.push(Held {
            head: int(row, "h")?,
            tail: int(row, "t")?,
            fact: NamedFact {
                head: text(row, "hn"),
                relation: text(row, "rel"),
                tail: text(row, "tn"),
            },
        });
    }
    let wanted: std::collections::HashSet<&NamedFact> = facts.iter().collect();
    let mut copies: HashMap<&NamedFact, usize> = HashMap::new();
    for h in &held {
        *copies.entry(&h.fact).or_default() += 1;
    }
    // Node ids by name: the ones tagged relationships already use come first.
    let mut node_of: HashMap<String, i64> = HashMap::new();
    for h in &held {
        node_of.entry(h.fact.head.clone()).or_insert(h.head);
        node_of.entry(h.fact.tail.clone()).or_insert(h.tail);
    }

    // ---- delete what is not wanted, and duplicates (one is created again) ---------------
    let mut doomed: HashMap<&str, Vec<(i64, i64)>> = HashMap::new();
    let mut recreate: Vec<&NamedFact> = Vec::new();
    for h in &held {
        let duplicated = copies.get(&h.fact).copied().unwrap_or(0) > 1;
        if !wanted.contains(&h.fact) || duplicated {
            doomed
                .entry(h.fact.relation.as_str())
                .or_default()
                .push((h.head, h.tail));
        }
        if wanted.contains(&h.fact) && duplicated && !recreate.contains(&&h.fact) {
            recreate.push(&h.fact);
        }
    }
    let mut relations: Vec<&&str> = doomed.keys().collect();
    relations.sort();
    for relation in relations {
        let statement = format!(
            "UNWIND $rows AS row MATCH (a)-[r:{}]->(b) WHERE id(a) = row.h AND id(b) = row.t \
             AND r.{SKELETON_PROPERTY} = $tag WITH DISTINCT r DELETE r RETURN count(*) AS c",
            quote_name(relation)
        );
        let mut pairs = doomed[*relation].clone();
        pairs.sort_unstable();
        pairs.dedup();
        for chunk in pairs.chunks(batch_size) {
            let query = neo4rs::query(&statement)
                .param("rows", pair_rows(chunk))
                .param("tag", tag);
            stats.removed += count(&connection.fetch(query, timeout, 1).await?.0);
        }
    }

    // ---- create what is missing ----------------------------------------------------------
    let missing: Vec<&NamedFact> = facts
        .iter()
        .filter(|f| !copies.contains_key(f))
        .chain(recreate)
        .collect();
    let mut seen = std::collections::HashSet::new();
    let missing: Vec<&NamedFact> = missing.into_iter().filter(|f| seen.insert(*f)).collect();
    stats.kept = held
        .iter()
        .filter(|h| wanted.contains(&h.fact) && copies.get(&h.fact) == Some(&1))
        .count() as u64;
    let mut unknown: Vec<String> = Vec::new();
    for fact in &missing {
        for name in [&fact.head, &fact.tail] {
            if !node_of.contains_key(name.as_str()) && !unknown.contains(name) {
                unknown.push(name.clone());
            }
        }
    }
    // A few names are looked up one by one (a scan each where the name has no index);
    // more are found in one pass over every node's name.
    if unknown.len() <= NAMES_LOOKED_UP {
        let lookup = format!(
            "UNWIND $names AS name MATCH (n) WHERE n.{NAME_PROPERTY} = name \
             RETURN name AS name, min(id(n)) AS id"
        );
        let query = neo4rs::query(&lookup).param("names", unknown.clone());
        for row in connection.fetch(query, timeout, usize::MAX).await?.0 {
            if let (name, Ok(id)) = (text(&row, "name"), int(&row, "id")) {
                node_of.insert(name, id);
            }
        }
    } else {
        let wanted: std::collections::HashSet<&str> = unknown.iter().map(String::as_str).collect();
        let scan = format!(
            "MATCH (n) WHERE n.{NAME_PROPERTY} IS NOT NULL RETURN n.{NAME_PROPERTY} AS name, id(n) AS id"
        );
        let (rows, _) = connection
            .fetch(neo4rs::query(&scan), timeout, usize::MAX)
            .await?;
        for row in rows {
            let name = text(&row, "name");
            if !wanted.contains(name.as_str()) {
                continue;
            }
            let id = int(&row, "id")?;
            node_of
                .entry(name)
                .and_modify(|known| *known = (*known).min(id))
                .or_insert(id);
        }
    }
    let new_names: Vec<&String> = unknown
        .iter()
        .filter(|n| !node_of.contains_key(*n))
        .collect();
    let create = format!(
        "UNWIND $rows AS row CREATE (n:{}) SET n = row RETURN row.{NAME_PROPERTY} AS name, id(n) AS id",
        quote_name(DEFAULT_LABEL)
    );
    for chunk in new_names.chunks(batch_size) {
        let rows: Vec<BoltType> = chunk
            .iter()
            .map(|name| {
                map([
                    (NAME_PROPERTY.to_owned(), BoltType::from(name.as_str())),
                    (
                        NORMALIZED_PROPERTY.to_owned(),
                        BoltType::from(normalize_name(name)),
                    ),
                    (SKELETON_PROPERTY.to_owned(), BoltType::from(tag)),
                ])
            })
            .collect();
        let query = neo4rs::query(&create).param("rows", rows);
        for row in connection.fetch(query, timeout, usize::MAX).await?.0 {
            node_of.insert(text(&row, "name"), int(&row, "id")?);
            stats.nodes_created += 1;
        }
    }
    let mut by_relation: HashMap<&str, Vec<(i64, i64)>> = HashMap::new();
    for fact in &missing {
        let (Some(&h), Some(&t)) = (node_of.get(&fact.head), node_of.get(&fact.tail)) else {
            return Err(backend_error(format!(
                "no node for {:?} or {:?} after creating them",
                fact.head, fact.tail
            )));
        };
        by_relation
            .entry(fact.relation.as_str())
            .or_default()
            .push((h, t));
    }
    let mut relations: Vec<&&str> = by_relation.keys().collect();
    relations.sort();
    for relation in relations {
        // A fact the graph holds already, untagged (a curated KG's edge), is not
        // written again beside it.
        let existing = format!(
            "UNWIND $rows AS row MATCH (a)-[r:{}]->(b) WHERE id(a) = row.h AND id(b) = row.t \
             RETURN DISTINCT row.h AS h, row.t AS t",
            quote_name(relation)
        );
        let mut pairs = by_relation[*relation].clone();
        pairs.sort_unstable();
        pairs.dedup();
        let mut present = std::collections::HashSet::new();
        for chunk in pairs.chunks(batch_size) {
            let query = neo4rs::query(&existing).param("rows", pair_rows(chunk));
            for row in connection.fetch(query, timeout, usize::MAX).await?.0 {
                present.insert((int(&row, "h")?, int(&row, "t")?));
            }
        }
        stats.present += present.len() as u64;
        pairs.retain(|pair| !present.contains(pair));
        let statement = format!(
            "UNWIND $rows AS row MATCH (a) WHERE id(a) = row.h MATCH (b) WHERE id(b) = row.t \
             CREATE (a)-[r:{}]->(b) SET r.{SKELETON_PROPERTY} = $tag RETURN count(r) AS c",
            quote_name(relation)
        );
        for chunk in pairs.chunks(batch_size) {
            let query = neo4rs::query(&statement)
                .param("rows", pair_rows(chunk))
                .param("tag", tag);
            stats.created += count(&connection.fetch(query, timeout, 1).await?.0);
        }
    }

    // ---- tagged nodes left alone ----------------------------------------------------------
    if stats.removed > 0 {
        let query = neo4rs::query(&format!(
            "MATCH (n) WHERE n.{SKELETON_PROPERTY} = $tag AND NOT (n)--() DELETE n RETURN count(*) AS c"
        ))
        .param("tag", tag);
        stats.nodes_removed = count(&connection.fetch(query, timeout, 1).await?.0);
    }
    Ok(stats)
}

/// `{h, t}` rows of node id pairs.
fn pair_rows(pairs: &[(i64, i64)]) -> Vec<BoltType> {
    pairs
        .iter()
        .map(|(h, t)| {
            map([
                ("h".to_owned(), BoltType::from(*h)),
                ("t".to_owned(), BoltType::from(*t)),
            ])
        })
        .collect()
}

/// The `c` column of a one-row count.
fn count(rows: &[HashMap<String, BoltType>]) -> u64 {
    rows.first()
        .and_then(|row| match row.get("c") {
            Some(BoltType::Integer(count)) => Some(count.value.max(0) as u64),
            _ => None,
        })
        .unwrap_or(0)
}
