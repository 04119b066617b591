//! [`GraphStore`] over Bolt (Neo4j, or any server speaking Bolt 4 such as ArcadeDB),
//! through neo4rs 0.8.
//!
//! - Every connect and every query runs under a timeout: neo4rs waits forever on, for
//!   example, a wrong password.
//! - Values always travel as parameters. Labels and relationship types cannot be
//!   parameters in Cypher, so the few statements that need one (schema counts, writes)
//!   quote it with backticks, doubling any backtick inside.
//! - Frontier operations are one `UNWIND $ids` query per hop; metapaths and shortest
//!   paths run hop by hop from this client with the same per-node fan-out caps as the
//!   embedded store, so both backends answer alike.
//! - [`GraphStore::cypher`] is read-only twice over: statements with write clauses are
//!   refused, and the rest run inside an explicit transaction that is always rolled back.
//! - Node identity is the database's integer id (`id(n)`); display names come from the
//!   `name` property (what [`write_graph`] stores).
//!
//! Cypher dialect notes from running against ArcadeDB 26.10 (Bolt plugin):
//! - `id(n)` values are large 64-bit integers (140737488355328 for the first node of a
//!   fresh database), not small counters: never assume dense ids.
//! - `CALL db.labels()` yields the column `label`, `CALL db.relationshipTypes()` yields
//!   `relationshipType`, as in Neo4j; nothing here relies on APOC.
//! - `MATCH (n) WHERE id(n) > $after RETURN id(n) AS id ORDER BY id LIMIT 2` returned no
//!   rows in a probe; the form `MATCH (n) WITH id(n) AS id … WHERE id > $after` used by
//!   `scan_names` works.
//! - `CREATE INDEX FOR (n:L) ON (n.p)` returns no error (whether it builds an index
//!   was not checked); writes match endpoints by `id(n)` instead, which needs no index
//!   in either database.
//! - `SET n = $map` and `SET r = $map` work for whole property maps; relationship types
//!   with spaces work when backtick-quoted.
//! - A wrong password is never answered: the connection waits (hence the timeouts).
//! - A query cut off by the client's timeout keeps running on the server until it ends
//!   (closing its connection does not stop it). Four 36M-row queries cut off in turn
//!   held up an unrelated one-row query for 22 s. While a cut-off call dropped its
//!   connection back into the pool, the next query on it read the stale reply
//!   (`unexpected response for ROLLBACK: Record`); see [`Pool`].
//! - Neo4j drivers' read/write access mode is not sent by neo4rs 0.8; read-only is
//!   enforced here by refusing writes and rolling back.

mod write;

use std::{collections::HashMap, sync::Arc, time::Duration};

use async_trait::async_trait;
use kgmesh_schemas::{
    graph::{
        Direction, Entity, GraphSchema, LabelSchema, Metapath, NodeValue, Path, PathStep,
        RelationSchema, RelationshipValue, Rows, Triple, Value,
    },
    NodeId,
};
use neo4rs::{BoltType, ConfigBuilder, Graph, Query};
use tokio::sync::OnceCell;

pub use write::{sync_facts, write_graph, NamedFact, SyncStats, WriteStats, SKELETON_PROPERTY};

use crate::{
    common::{
        check_depth, check_metapath, invalid_query, level_end, node_not_found, order_schema,
        previous_node, ranked_endpoints,
    },
    embedded::normalize_name,
    GraphStore, NameMatch, NeighborQuery, Neighborhood, PathLimits, QueryLimits, Star, StoreError,
    StoreResult,
};

/// Property holding a node's display name.
pub const NAME_PROPERTY: &str = "name";
/// Property holding [`normalize_name`] of the name (written by [`write_graph`]).
pub const NORMALIZED_PROPERTY: &str = "kgmesh_norm";

/// How to reach a Bolt server. `Debug` leaves the password out.
#[derive(Clone)]
pub struct BoltSettings {
    /// `bolt://host:port` (or `host:port`).
    pub uri: String,
    pub user: String,
    pub password: String,
    pub database: Option<String>,
    /// Bound on connecting and on each query.
    pub timeout: Duration,
}

impl std::fmt::Debug for BoltSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoltSettings")
            .field("uri", &self.uri)
            .field("user", &self.user)
            .field("password", &"<redacted>")
            .field("database", &self.database)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// A Bolt database as a [`GraphStore`].
pub struct BoltGraph {
    pool: Pool,
    timeout: Duration,
    schema: OnceCell<Arc<GraphSchema>>,
}

pub(crate) fn backend_error(error: impl std::fmt::Display) -> StoreError {
    StoreError::Backend {
        detail: error.to_string(),
    }
}

/// A query the database refused or failed on, with its reason.
fn refused_query(error: impl std::fmt::Display) -> StoreError {
    invalid_query(error.to_string())
}

/// The connection pool, whose connections are never dropped mid-reply.
///
/// A call cut off mid-reply would leave its connection with the rest of that reply
/// unread, and neo4rs hands such a connection out again: the next query on it reads
/// the stale reply, or waits behind the query still running on the server. So each
/// call runs as a task of its own: when its timeout passes, the caller gets
/// [`StoreError::Timeout`] at once, and the task reads the reply to its end (at most
/// `max_rows` rows), rolls back and gives the connection back clean. Dropping the
/// connection instead, in a fresh pool, made the next query on a new connection read
/// an extra reply under load (ArcadeDB 26.10): a cause not found, so not relied on.
/// A server that never answers keeps a connection busy until it does; the pool holds 8.
pub(crate) struct Pool {
    graph: Graph,
}

impl Pool {
    /// Opens a connection pool and proves it works with `RETURN 1`, all within the
    /// timeout.
    pub(crate) async fn connect(settings: &BoltSettings) -> StoreResult<Self> {
        let address = settings
            .uri
            .trim_start_matches("bolt://")
            .trim_start_matches("neo4j://")
            .to_owned();
        // A refused or unroutable address fails in moments, not after `settings.timeout`
        // (the Bolt client does not tell a refused connection from a slow one).
        let host_port = address.split('/').next().unwrap_or(&address);
        let host_port = if host_port.contains(':') {
            host_port.to_owned()
        } else {
            format!("{host_port}:7687")
        };
        let probe = settings.timeout.min(std::time::Duration::from_secs(3));
        match tokio::time::timeout(probe, tokio::net::TcpStream::connect(&host_port)).await {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => {
                return Err(StoreError::Unavailable {
                    detail: format!("cannot connect to {}: {error}", settings.uri),
                })
            }
            Err(_) => {
                return Err(StoreError::Unavailable {
                    detail: format!(
                        "no answer from {} within {} ms",
                        settings.uri,
                        probe.as_millis()
                    ),
                })
            }
        }
        let mut config = ConfigBuilder::default()
            .uri(address)
            .user(settings.user.as_str())
            .password(settings.password.as_str())
            .fetch_size(1_000)
            .max_connections(8);
        if let Some(database) = &settings.database {
            config = config.db(database.as_str());
        }
        let config = config.build().map_err(backend_error)?;
        let timeout = settings.timeout;
        let connect = async {
            let graph = Graph::connect(config)
                .await
                .map_err(|error| StoreError::Unavailable {
                    detail: format!("cannot connect to {}: {error}", settings.uri),
                })?;
            graph
                .run(neo4rs::query("RETURN 1"))
                .await
                .map_err(|error| StoreError::Unavailable {
                    detail: format!("{} refused a query: {error}", settings.uri),
                })?;
            Ok::<_, StoreError>(graph)
        };
        let graph = match tokio::time::timeout(timeout, connect).await {
            Ok(result) => result?,
            Err(_) => return Err(StoreError::Unavailable {
                detail: format!(
                    "no answer from {} within {} ms (wrong address, or wrong credentials: the Bolt client waits forever on those)",
                    settings.uri,
                    timeout.as_millis()
                ),
            }),
        };
        Ok(Self { graph })
    }

    /// Runs `work` as a task of its own, waiting at most `timeout` for it; a task cut
    /// off runs on to the end of its reply, so its connection goes back clean.
    pub(crate) async fn bounded<T, F, Fut>(&self, timeout: Duration, work: F) -> StoreResult<T>
    where
        F: FnOnce(Graph) -> Fut,
        Fut: std::future::Future<Output = StoreResult<T>> + Send + 'static,
        T: Send + 'static,
    {
        let mut task = tokio::spawn(work(self.graph.clone()));
        match tokio::time::timeout(timeout, &mut task).await {
            Ok(Ok(result)) => result,
            Ok(Err(error)) => Err(backend_error(format!("the Bolt call failed: {error}"))),
            Err(_) => {
                tracing::debug!("bolt: a call timed out; it finishes in the background");
                Err(StoreError::Timeout {
                    millis: timeout.as_millis() as u64,
                })
            }
        }
    }

    /// Runs a query and collects its rows as maps, bounded by `timeout` and `max_rows`.
    pub(crate) async fn fetch(
        &self,
        query: Query,
        timeout: Duration,
        max_rows: usize,
    ) -> StoreResult<(Vec<HashMap<String, BoltType>>, bool)> {
        self.bounded(timeout, |graph| async move {
            let mut stream = graph.execute(query).await.map_err(backend_error)?;
            let mut rows = Vec::new();
            let mut truncated = false;
            while let Some(row) = stream.next().await.map_err(backend_error)? {
                if rows.len() >= max_rows {
                    truncated = true;
                    break;
                }
                let map: HashMap<String, BoltType> = row.to().map_err(backend_error)?;
                rows.push(map);
            }
            Ok((rows, truncated))
        })
        .await
    }
}

/// Backtick-quotes a label or relationship type for the places Cypher allows no parameter.
pub(crate) fn quote_name(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

fn int(value: Option<&BoltType>) -> Option<i64> {
    match value? {
        BoltType::Integer(integer) => Some(integer.value),
        _ => None,
    }
}

fn text(value: Option<&BoltType>) -> String {
    match value {
        Some(BoltType::String(string)) => string.value.clone(),
        Some(BoltType::Null(_)) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn node_id(value: Option<&BoltType>) -> StoreResult<NodeId> {
    int(value)
        .and_then(|id| u64::try_from(id).ok())
        .map(NodeId)
        .ok_or_else(|| {
            backend_error("the database returned a node id that is not a non-negative integer")
        })
}

/// The node a row names in its `id` and `name` columns.
fn row_entity(row: &HashMap<String, BoltType>) -> StoreResult<Entity> {
    Ok(Entity {
        id: node_id(row.get("id"))?,
        name: text(row.get("name")),
    })
}

/// Node `id` with its name from `names`, which must hold it.
fn named(id: NodeId, names: &HashMap<NodeId, String>) -> Entity {
    Entity {
        id,
        name: names[&id].clone(),
    }
}

fn ids_param(ids: &[NodeId]) -> StoreResult<Vec<BoltType>> {
    ids.iter()
        .map(|id| {
            i64::try_from(id.0)
                .map(BoltType::from)
                .map_err(|_| node_not_found(*id))
        })
        .collect()
}

/// Converts a Bolt value to the wire [`Value`].
pub(crate) fn to_value(value: &BoltType) -> Value {
    match value {
        BoltType::Null(_) => Value::Null,
        BoltType::Boolean(boolean) => Value::Bool(boolean.value),
        BoltType::Integer(integer) => Value::Int(integer.value),
        BoltType::Float(float) => Value::Float(float.value),
        BoltType::String(string) => Value::String(string.value.clone()),
        BoltType::List(list) => Value::List(list.value.iter().map(to_value).collect()),
        BoltType::Map(map) => Value::Map(sorted_properties(&map.value)),
        BoltType::Node(node) => Value::Node(NodeValue {
            id: NodeId(node.id.value as u64),
            labels: node
                .labels
                .value
                .iter()
                .map(|label| text(Some(label)))
                .collect(),
            properties: sorted_properties(&node.properties.value),
        }),
        BoltType::Relation(relation) => Value::Relationship(RelationshipValue {
            start: NodeId(relation.start_node_id.value as u64),
            end: NodeId(relation.end_node_id.value as u64),
            rel_type: relation.typ.value.clone(),
            properties: sorted_properties(&relation.properties.value),
        }),
        other => Value::String(other.to_string()),
    }
}

fn sorted_properties(map: &HashMap<neo4rs::BoltString, BoltType>) -> Vec<(String, Value)> {
    let mut properties: Vec<(String, Value)> = map
        .iter()
        .map(|(key, value)| (key.value.clone(), to_value(value)))
        .collect();
    properties.sort_by(|a, b| a.0.cmp(&b.0));
    properties
}

/// Converts a wire [`Value`] to a Bolt parameter.
pub(crate) fn to_bolt(value: &Value) -> BoltType {
    match value {
        Value::Null => BoltType::Null(neo4rs::BoltNull),
        Value::Bool(boolean) => BoltType::from(*boolean),
        Value::Int(integer) => BoltType::from(*integer),
        Value::Float(float) => BoltType::from(*float),
        Value::String(string) => BoltType::from(string.as_str()),
        Value::List(items) => BoltType::from(items.iter().map(to_bolt).collect::<Vec<_>>()),
        Value::Map(entries) => BoltType::Map(neo4rs::BoltMap {
            value: entries
                .iter()
                .map(|(key, value)| (neo4rs::BoltString::from(key.as_str()), to_bolt(value)))
                .collect(),
        }),
        Value::Node(node) => BoltType::from(node.id.0 as i64),
        Value::Relationship(_) | Value::Path(_) => BoltType::Null(neo4rs::BoltNull),
    }
}

/// One hop of a frontier: `(from, relation, other, other's name, followed backwards)`.
type Hop = (NodeId, String, NodeId, String, bool);

impl BoltGraph {
    pub async fn connect(settings: &BoltSettings) -> StoreResult<Self> {
        Ok(Self {
            pool: Pool::connect(settings).await?,
            timeout: settings.timeout,
            schema: OnceCell::new(),
        })
    }

    async fn rows(&self, query: Query) -> StoreResult<Vec<HashMap<String, BoltType>>> {
        Ok(self.pool.fetch(query, self.timeout, usize::MAX).await?.0)
    }

    /// One hop from each node of `frontier`, at most `cap` edges per node per direction
    /// (`cap + 1` are fetched to tell whether the cap cut anything).
    async fn expand(
        &self,
        frontier: &[NodeId],
        relations: Option<&[String]>,
        direction: Direction,
        cap: usize,
    ) -> StoreResult<(Vec<Hop>, Vec<NodeId>)> {
        let mut hops = Vec::new();
        let mut truncated = Vec::new();
        if frontier.is_empty() {
            return Ok((hops, truncated));
        }
        let patterns: &[(&str, bool)] = match direction {
            Direction::Out => &[("(n)-[r]->(m)", false)],
            Direction::In => &[("(n)<-[r]-(m)", true)],
            Direction::Both => &[("(n)-[r]->(m)", false), ("(n)<-[r]-(m)", true)],
        };
        let mut remaining: HashMap<NodeId, usize> = frontier.iter().map(|id| (*id, cap)).collect();
        for (pattern, backwards) in patterns {
            let filter = if relations.is_some() {
                "WHERE type(r) IN $relations"
            } else {
                ""
            };
            let statement = format!(
                "UNWIND $ids AS i MATCH (n) WHERE id(n) = i MATCH {pattern} {filter} \
                 WITH i, collect([type(r), id(m), m.{NAME_PROPERTY}])[0..$take] AS edges RETURN i, edges"
            );
            let mut query = neo4rs::query(&statement)
                .param("ids", ids_param(frontier)?)
                .param("take", (cap as i64).saturating_add(1));
            if let Some(relations) = relations {
                query = query.param("relations", relations.to_vec());
            }
            for row in self.rows(query).await? {
                let from = node_id(row.get("i"))?;
                let Some(BoltType::List(edges)) = row.get("edges") else {
                    continue;
                };
                let budget = remaining.entry(from).or_insert(cap);
                for edge in &edges.value {
                    let BoltType::List(parts) = edge else {
                        continue;
                    };
                    if *budget == 0 {
                        if !truncated.contains(&from) {
                            truncated.push(from);
                        }
                        break;
                    }
                    *budget -= 1;
                    hops.push((
                        from,
                        text(parts.value.first()),
                        node_id(parts.value.get(1))?,
                        text(parts.value.get(2)),
                        *backwards,
                    ));
                }
            }
        }
        Ok((hops, truncated))
    }

    async fn names(&self, ids: &[NodeId]) -> StoreResult<HashMap<NodeId, String>> {
        let query = neo4rs::query(&format!(
            "UNWIND $ids AS i MATCH (n) WHERE id(n) = i RETURN i, n.{NAME_PROPERTY} AS name"
        ))
        .param("ids", ids_param(ids)?);
        let mut names = HashMap::new();
        for row in self.rows(query).await? {
            names.insert(node_id(row.get("i"))?, text(row.get("name")));
        }
        Ok(names)
    }

    /// The text of `column` in each row `statement` returns.
    async fn texts(&self, statement: &str, column: &str) -> StoreResult<Vec<String>> {
        Ok(self
            .rows(neo4rs::query(statement))
            .await?
            .iter()
            .map(|row| text(row.get(column)))
            .collect())
    }

    /// The count `statement` returns in its column `c` (0 when it returns none).
    async fn count(&self, statement: &str) -> StoreResult<i64> {
        Ok(self
            .rows(neo4rs::query(statement))
            .await?
            .first()
            .and_then(|row| int(row.get("c")))
            .unwrap_or(0))
    }

    /// The names of `ids`, every one of which must be a node.
    async fn known_names(&self, ids: &[NodeId]) -> StoreResult<HashMap<NodeId, String>> {
        let names = self.names(ids).await?;
        match ids.iter().find(|id| !names.contains_key(id)) {
            Some(missing) => Err(node_not_found(*missing)),
            None => Ok(names),
        }
    }

    async fn compute_schema(&self) -> StoreResult<GraphSchema> {
        let labels = self.texts("CALL db.labels()", "label").await?;
        let relation_types = self
            .texts("CALL db.relationshipTypes()", "relationshipType")
            .await?;
        let mut label_schemas = Vec::new();
        for label in &labels {
            let quoted = quote_name(label);
            let count = self
                .count(&format!("MATCH (n:{quoted}) RETURN count(n) AS c"))
                .await?;
            let mut keys: Vec<String> = Vec::new();
            for row in self
                .rows(neo4rs::query(&format!(
                    "MATCH (n:{quoted}) RETURN keys(n) AS k LIMIT 100"
                )))
                .await?
            {
                if let Some(BoltType::List(list)) = row.get("k") {
                    keys.extend(list.value.iter().map(|key| text(Some(key))));
                }
            }
            keys.sort();
            keys.dedup();
            keys.retain(|key| key != NORMALIZED_PROPERTY && key != write::KEY_PROPERTY);
            label_schemas.push(LabelSchema {
                name: label.clone(),
                count: count as u64,
                property_keys: keys,
            });
        }
        let mut relations = Vec::new();
        let mut relationship_keys: Vec<String> = Vec::new();
        let mut edge_count = 0u64;
        for relation in &relation_types {
            let quoted = quote_name(relation);
            let count = self
                .count(&format!("MATCH ()-[r:{quoted}]->() RETURN count(r) AS c"))
                .await? as u64;
            edge_count += count;
            let sample = self
                .rows(neo4rs::query(&format!(
                    "MATCH (a)-[r:{quoted}]->(b) RETURN labels(a) AS la, labels(b) AS lb, keys(r) AS k, \
                     a.{NAME_PROPERTY} AS an, b.{NAME_PROPERTY} AS bn LIMIT 1000"
                )))
                .await?;
            let mut endpoints: HashMap<(String, String), u64> = HashMap::new();
            let mut examples = Vec::new();
            for row in &sample {
                let first = |key: &str| match row.get(key) {
                    Some(BoltType::List(list)) => text(list.value.first()),
                    _ => String::new(),
                };
                *endpoints.entry((first("la"), first("lb"))).or_insert(0) += 1;
                if examples.len() < 3 {
                    examples.push(format!(
                        "{} -[{relation}]-> {}",
                        text(row.get("an")),
                        text(row.get("bn"))
                    ));
                }
                if let Some(BoltType::List(list)) = row.get("k") {
                    relationship_keys.extend(list.value.iter().map(|key| text(Some(key))));
                }
            }
            relations.push(RelationSchema {
                name: relation.clone(),
                count,
                endpoints: ranked_endpoints(endpoints),
                examples,
            });
        }
        order_schema(&mut label_schemas, &mut relations);
        relationship_keys.sort();
        relationship_keys.dedup();
        let node_count = self.count("MATCH (n) RETURN count(n) AS c").await? as u64;
        Ok(GraphSchema {
            labels: label_schemas,
            relations,
            relationship_property_keys: relationship_keys,
            node_count,
            edge_count,
        })
    }

    fn triple_of(&self, hop: &Hop, from_name: &str) -> Triple {
        let (from, relation, other, other_name, backwards) = hop;
        let from = Entity {
            id: *from,
            name: from_name.to_owned(),
        };
        let other = Entity {
            id: *other,
            name: other_name.clone(),
        };
        if *backwards {
            Triple {
                head: other,
                relation: relation.clone(),
                tail: from,
            }
        } else {
            Triple {
                head: from,
                relation: relation.clone(),
                tail: other,
            }
        }
    }
}

#[async_trait]
impl GraphStore for BoltGraph {
    fn backend(&self) -> &'static str {
        "bolt"
    }

    async fn schema(&self) -> StoreResult<Arc<GraphSchema>> {
        self.schema
            .get_or_try_init(|| async { Ok(Arc::new(self.compute_schema().await?)) })
            .await
            .cloned()
    }

    async fn resolve(&self, names: &[String], mode: NameMatch) -> StoreResult<Vec<Vec<Entity>>> {
        let (property, keys): (&str, Vec<String>) = match mode {
            NameMatch::Exact => (NAME_PROPERTY, names.to_vec()),
            NameMatch::Normalized => (
                NORMALIZED_PROPERTY,
                names.iter().map(|name| normalize_name(name)).collect(),
            ),
        };
        let query = neo4rs::query(&format!(
            "UNWIND range(0, size($keys) - 1) AS k MATCH (n) WHERE n.{property} = $keys[k] \
             RETURN k, id(n) AS id, n.{NAME_PROPERTY} AS name"
        ))
        .param("keys", keys);
        let mut resolved = vec![Vec::new(); names.len()];
        for row in self.rows(query).await? {
            let Some(index) = int(row.get("k")).and_then(|k| usize::try_from(k).ok()) else {
                continue;
            };
            if let Some(slot) = resolved.get_mut(index) {
                slot.push(row_entity(&row)?);
            }
        }
        for entities in &mut resolved {
            entities.sort();
        }
        Ok(resolved)
    }

    async fn entities(&self, ids: &[NodeId]) -> StoreResult<Vec<Entity>> {
        let names = self.names(ids).await?;
        ids.iter()
            .map(|id| {
                names
                    .get(id)
                    .map(|name| Entity {
                        id: *id,
                        name: name.clone(),
                    })
                    .ok_or_else(|| node_not_found(*id))
            })
            .collect()
    }

    async fn scan_names(&self, after: Option<NodeId>, limit: usize) -> StoreResult<Vec<Entity>> {
        let after = after.map_or(-1, |id| i64::try_from(id.0).unwrap_or(i64::MAX));
        let query = neo4rs::query(&format!(
            "MATCH (n) WITH id(n) AS id, n.{NAME_PROPERTY} AS name WHERE id > $after \
             RETURN id, name ORDER BY id LIMIT $limit"
        ))
        .param("after", after)
        .param("limit", limit.min(i64::MAX as usize) as i64);
        self.rows(query).await?.iter().map(row_entity).collect()
    }

    async fn neighbors(
        &self,
        frontier: &[NodeId],
        query: &NeighborQuery,
    ) -> StoreResult<Neighborhood> {
        let mut unique = frontier.to_vec();
        unique.sort_unstable();
        unique.dedup();
        let names = self.known_names(&unique).await?;
        // The cap is per node over both directions, as in the embedded store.
        let (hops, mut truncated) = self
            .expand(
                &unique,
                query.relations.as_deref(),
                query.direction,
                query.fanout_cap,
            )
            .await?;
        let mut per_node: HashMap<NodeId, usize> = HashMap::new();
        let mut triples = Vec::new();
        for hop in &hops {
            let used = per_node.entry(hop.0).or_insert(0);
            if *used >= query.fanout_cap {
                if !truncated.contains(&hop.0) {
                    truncated.push(hop.0);
                }
                continue;
            }
            *used += 1;
            triples.push(self.triple_of(hop, names.get(&hop.0).map_or("", String::as_str)));
        }
        truncated.sort_unstable();
        Ok(Neighborhood { triples, truncated })
    }

    async fn follow_metapaths(
        &self,
        sources: &[NodeId],
        metapaths: &[Metapath],
        limits: &PathLimits,
    ) -> StoreResult<Vec<Path>> {
        check_depth(limits.max_depth)?;
        let start_names = self.known_names(sources).await?;
        let mut paths = Vec::new();
        for metapath in metapaths {
            check_metapath(metapath, limits.max_depth)?;
            // Partial paths: (start, steps so far).
            let mut partial: Vec<Path> = sources
                .iter()
                .map(|id| Path {
                    start: named(*id, &start_names),
                    steps: Vec::new(),
                })
                .collect();
            for step in &metapath.steps {
                let mut frontier: Vec<NodeId> = partial.iter().map(|path| path.end().id).collect();
                frontier.sort_unstable();
                frontier.dedup();
                let (hops, _) = self
                    .expand(
                        &frontier,
                        Some(std::slice::from_ref(&step.relation)),
                        step.direction,
                        limits.fanout_cap,
                    )
                    .await?;
                let mut by_node: HashMap<NodeId, Vec<&Hop>> = HashMap::new();
                for hop in &hops {
                    by_node.entry(hop.0).or_default().push(hop);
                }
                let mut next = Vec::new();
                for path in &partial {
                    for hop in by_node
                        .get(&path.end().id)
                        .map(Vec::as_slice)
                        .unwrap_or(&[])
                    {
                        // Never straight back over the edge just walked (see
                        // `GraphStore::follow_metapaths`).
                        let previous =
                            previous_node(path.start.id, &path.steps, |step| step.node.id);
                        let straight_back = previous == Some(hop.2)
                            && path.steps.last().is_some_and(|last| {
                                last.relation == hop.1 && last.inverse != hop.4
                            });
                        if straight_back {
                            continue;
                        }
                        let mut extended = path.clone();
                        extended.steps.push(PathStep {
                            relation: hop.1.clone(),
                            inverse: hop.4,
                            node: Entity {
                                id: hop.2,
                                name: hop.3.clone(),
                            },
                        });
                        next.push(extended);
                    }
                }
                partial = next;
            }
            for path in partial {
                if paths.len() >= limits.max_paths {
                    return Ok(paths);
                }
                paths.push(path);
            }
        }
        Ok(paths)
    }

    async fn shortest_paths(
        &self,
        sources: &[NodeId],
        targets: &[NodeId],
        limits: &PathLimits,
    ) -> StoreResult<Vec<Path>> {
        check_depth(limits.max_depth)?;
        let mut all = sources.to_vec();
        all.extend_from_slice(targets);
        all.sort_unstable();
        all.dedup();
        let names = self.known_names(&all).await?;
        if limits.max_paths == 0 {
            return Ok(Vec::new());
        }
        let target_set: std::collections::HashSet<NodeId> = targets.iter().copied().collect();
        let direct: Vec<Path> = sources
            .iter()
            .filter(|id| target_set.contains(id))
            .take(limits.max_paths)
            .map(|id| Path {
                start: named(*id, &names),
                steps: Vec::new(),
            })
            .collect();
        if !direct.is_empty() {
            return Ok(direct);
        }
        let mut depth_of: HashMap<NodeId, u8> = sources.iter().map(|id| (*id, 0)).collect();
        let mut parents: HashMap<NodeId, Vec<(NodeId, String, bool, String)>> = HashMap::new();
        let mut frontier: Vec<NodeId> = sources.to_vec();
        frontier.sort_unstable();
        frontier.dedup();
        let mut reached = Vec::new();
        let mut node_names: HashMap<NodeId, String> = names.clone();
        for depth in 1..=limits.max_depth {
            let (hops, _) = self
                .expand(&frontier, None, Direction::Both, limits.fanout_cap)
                .await?;
            let mut next = Vec::new();
            for (from, relation, other, other_name, backwards) in hops {
                match depth_of.get(&other) {
                    Some(known) if *known < depth => continue,
                    Some(_) => {}
                    None => {
                        depth_of.insert(other, depth);
                        next.push(other);
                    }
                }
                node_names.insert(other, other_name.clone());
                parents
                    .entry(other)
                    .or_default()
                    .push((from, relation, backwards, other_name));
            }
            if let Some(found) = level_end(&next, |id| target_set.contains(id)) {
                reached = found;
                break;
            }
            frontier = next;
        }
        reached.sort_unstable();
        let mut paths = Vec::new();
        for target in reached {
            let mut stack: Vec<(NodeId, Vec<PathStep>)> = vec![(target, Vec::new())];
            while let Some((node, suffix)) = stack.pop() {
                if paths.len() >= limits.max_paths {
                    return Ok(paths);
                }
                if depth_of.get(&node) == Some(&0) {
                    let mut steps = suffix;
                    steps.reverse();
                    paths.push(Path {
                        start: named(node, &node_names),
                        steps,
                    });
                    continue;
                }
                let depth = depth_of[&node];
                for (parent, relation, backwards, name) in
                    parents.get(&node).map(Vec::as_slice).unwrap_or(&[])
                {
                    if depth_of.get(parent).map(|d| d + 1) != Some(depth) {
                        continue;
                    }
                    let mut extended = suffix.clone();
                    extended.push(PathStep {
                        relation: relation.clone(),
                        inverse: *backwards,
                        node: Entity {
                            id: node,
                            name: name.clone(),
                        },
                    });
                    stack.push((*parent, extended));
                }
            }
        }
        Ok(paths)
    }

    async fn sample_stars(
        &self,
        count: usize,
        max_neighbors: usize,
        seed: u64,
    ) -> StoreResult<Vec<Star>> {
        let total = self.count("MATCH (n) RETURN count(n) AS c").await?;
        if total <= 0 {
            return Ok(Vec::new());
        }
        let mut state = seed;
        let mut offsets: Vec<i64> = (0..count.min(total as usize) * 3)
            .map(|_| (crate::embedded::splitmix64(&mut state) % total as u64) as i64)
            .collect();
        offsets.sort_unstable();
        offsets.dedup();
        offsets.truncate(count);
        let mut centers = Vec::new();
        for offset in offsets {
            let query = neo4rs::query(&format!(
                "MATCH (n) WITH id(n) AS id, n.{NAME_PROPERTY} AS name RETURN id, name ORDER BY id SKIP $skip LIMIT 1"
            ))
            .param("skip", offset);
            for row in self.rows(query).await? {
                centers.push(row_entity(&row)?);
            }
        }
        let ids: Vec<NodeId> = centers.iter().map(|entity| entity.id).collect();
        let neighborhood = self
            .neighbors(
                &ids,
                &NeighborQuery {
                    direction: Direction::Both,
                    relations: None,
                    fanout_cap: max_neighbors,
                },
            )
            .await?;
        Ok(centers
            .into_iter()
            .map(|center| {
                let triples = neighborhood
                    .triples
                    .iter()
                    .filter(|triple| triple.head.id == center.id || triple.tail.id == center.id)
                    .take(max_neighbors)
                    .cloned()
                    .collect();
                Star { center, triples }
            })
            .collect())
    }

    async fn cypher(
        &self,
        query: &str,
        params: &[(String, Value)],
        limits: &QueryLimits,
    ) -> StoreResult<Rows> {
        // The same AST-level validator as the embedded backend: write and admin clauses,
        // unknown labels, types and keys are refused with a repair hint before the
        // database sees the query. The rolled-back transaction below is the second wall.
        let schema = self.schema().await?;
        let parsed = crate::cypher::check_read_only(query, &schema, limits)?;
        let mut statement = neo4rs::query(query);
        for (key, value) in params {
            statement = statement.param(key, to_bolt(value));
        }
        let max_rows = limits.max_rows;
        let (rows, truncated) = self
            .pool
            .bounded(limits.timeout, |graph| async move {
                let mut transaction = graph.start_txn().await.map_err(backend_error)?;
                let mut stream = transaction
                    .execute(statement)
                    .await
                    .map_err(refused_query)?;
                let mut rows: Vec<HashMap<String, BoltType>> = Vec::new();
                let mut truncated = false;
                while let Some(row) = stream
                    .next(transaction.handle())
                    .await
                    .map_err(refused_query)?
                {
                    if rows.len() >= max_rows {
                        truncated = true;
                        break;
                    }
                    rows.push(row.to().map_err(backend_error)?);
                }
                drop(stream);
                // Always rolled back: nothing a query does can persist.
                transaction.rollback().await.map_err(backend_error)?;
                Ok((rows, truncated))
            })
            .await?;
        // neo4rs 0.8 hands rows over as maps and hides the column order: it is taken
        // from the query's own RETURN clause instead.
        let keys: Vec<String> = rows
            .first()
            .map(|row| row.keys().cloned().collect())
            .unwrap_or_default();
        let columns = column_order(&parsed, &keys);
        let rows = rows
            .iter()
            .map(|row| {
                columns
                    .iter()
                    .map(|column| row.get(column).map_or(Value::Null, to_value))
                    .collect()
            })
            .collect();
        Ok(Rows {
            columns,
            rows,
            truncated,
        })
    }
}

/// The result columns of `query` in the order its final `RETURN` lists them, matched
/// against the `keys` a row came back with.
///
/// `RETURN *` columns (not in the AST: they are whatever variables are in scope) come
/// first and sorted, as Neo4j orders them. Keys the projection does not account for
/// (a server that names an unaliased expression differently) are matched ignoring
/// whitespace, and any still left over are appended sorted, so no column is ever lost.
/// With no rows, the projection's names alone give the columns.
fn column_order(query: &crate::cypher::ast::Query, keys: &[String]) -> Vec<String> {
    use crate::cypher::ast::Clause;
    let projection = query.parts.first().and_then(|part| {
        part.clauses.iter().rev().find_map(|clause| match clause {
            Clause::Return(projection) => Some(projection),
            _ => None,
        })
    });
    let Some(projection) = projection else {
        let mut columns = keys.to_vec();
        columns.sort();
        return columns;
    };
    let named: Vec<&str> = projection
        .items
        .iter()
        .map(|item| item.column_name())
        .collect();
    let compact = |text: &str| -> String { text.chars().filter(|c| !c.is_whitespace()).collect() };
    let mut remaining: Vec<&String> = keys.iter().collect();
    let mut take = |wanted: &str| -> Option<String> {
        let position = remaining
            .iter()
            .position(|key| key.as_str() == wanted)
            .or_else(|| {
                let wanted = compact(wanted);
                remaining.iter().position(|key| compact(key) == wanted)
            })?;
        Some(remaining.remove(position).clone())
    };
    let mut item_columns = Vec::with_capacity(named.len());
    for name in &named {
        match take(name) {
            Some(key) => item_columns.push(key),
            // No rows came back (or the server dropped the column): the query's name.
            None if keys.is_empty() || !projection.star => item_columns.push((*name).to_owned()),
            None => {}
        }
    }
    let mut rest: Vec<String> = remaining.into_iter().cloned().collect();
    rest.sort();
    if projection.star {
        rest.extend(item_columns);
        rest
    } else {
        item_columns.extend(rest);
        item_columns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    fn order(query: &str, row_keys: &[&str]) -> Vec<String> {
        column_order(&crate::cypher::parse(query).unwrap(), &keys(row_keys))
    }

    #[test]
    fn columns_follow_the_return_clause_not_the_alphabet() {
        assert_eq!(
            order(
                "MATCH (m)-[:directed_by]->(d) RETURN m.name AS movie, d.name AS director, 1 AS a",
                &["a", "director", "movie"]
            ),
            keys(&["movie", "director", "a"])
        );
    }

    #[test]
    fn unaliased_items_keep_their_text_and_empty_results_still_have_columns() {
        assert_eq!(
            order("MATCH (m) RETURN m.name, count(*)", &["count(*)", "m.name"]),
            keys(&["m.name", "count(*)"])
        );
        assert_eq!(
            order("MATCH (m) RETURN m.name AS zeta, 1 AS alpha", &[]),
            keys(&["zeta", "alpha"])
        );
        // A server that spells an expression without spaces still lines up.
        assert_eq!(
            order("MATCH (m) RETURN size( m.name ), m", &["m", "size(m.name)"]),
            keys(&["size(m.name)", "m"])
        );
    }

    #[test]
    fn star_columns_come_first_sorted_and_unknown_keys_are_kept() {
        assert_eq!(
            order(
                "MATCH (m)-[r]->(a) RETURN *, 1 AS one",
                &["one", "r", "a", "m"]
            ),
            keys(&["a", "m", "r", "one"])
        );
        assert_eq!(
            order("MATCH (m) RETURN m.name AS name", &["name", "extra"]),
            keys(&["name", "extra"])
        );
        // UNION: the first part names the columns.
        assert_eq!(
            order(
                "MATCH (m) RETURN m.name AS b, 1 AS a UNION MATCH (n) RETURN n.name AS b, 2 AS a",
                &["a", "b"]
            ),
            keys(&["b", "a"])
        );
    }

    #[test]
    fn names_are_backtick_quoted() {
        assert_eq!(quote_name("directed`by"), "`directed``by`");
    }
}

#[cfg(test)]
mod secret_tests {
    use std::time::Duration;

    use super::BoltSettings;
    use crate::vector::qdrant::QdrantOptions;

    #[test]
    fn debug_output_leaves_passwords_and_keys_out() {
        let bolt = BoltSettings {
            uri: "bolt://db:7687".into(),
            user: "neo4j".into(),
            password: "hunter2-password".into(),
            database: None,
            timeout: Duration::from_secs(1),
        };
        let shown = format!("{bolt:?}");
        assert!(
            !shown.contains("hunter2") && shown.contains("neo4j"),
            "{shown}"
        );
        let mut qdrant = QdrantOptions::new("http://q:6334", "names", 384, crate::Metric::Cosine);
        qdrant.api_key = Some("qdrant-api-key".into());
        let shown = format!("{qdrant:?}");
        assert!(
            !shown.contains("qdrant-api-key") && shown.contains("names"),
            "{shown}"
        );
    }
}
