//! The same contract, run on every [`GraphStore`] backend: the embedded CSR graph and
//! a real Bolt database (ArcadeDB, started per test). Ids differ between backends, so
//! answers are compared by names.

use std::{collections::BTreeSet, sync::Arc, time::Duration};

use kgmesh_schemas::graph::{Direction, Metapath, RelationStep, Value};
use kgmesh_stores::{
    bolt::{write_graph, BoltGraph, BoltSettings},
    embedded::{EmbeddedGraph, GraphBuilder},
    GraphStore, NameMatch, NeighborQuery, PathLimits, QueryLimits, StoreError,
};
use kgmesh_testkit::bolt::BoltServer;

const T: Duration = Duration::from_secs(60);

async fn within<F: std::future::Future>(future: F) -> F::Output {
    tokio::time::timeout(T, future)
        .await
        .expect("store call timed out")
}

/// Heat -directed_by-> Michael Mann; Heat, The Irishman -starred_actors-> Al Pacino,
/// Robert De Niro; Collateral -directed_by-> Michael Mann.
fn movies() -> EmbeddedGraph {
    let mut builder = GraphBuilder::new();
    for (head, relation, tail) in [
        ("Heat", "directed_by", "Michael Mann"),
        ("Heat", "starred_actors", "Al Pacino"),
        ("Heat", "starred_actors", "Robert De Niro"),
        ("Collateral", "directed_by", "Michael Mann"),
        ("The Irishman", "starred_actors", "Al Pacino"),
        ("The Irishman", "starred_actors", "Robert De Niro"),
    ] {
        let head = builder.node(head);
        let tail = builder.node(tail);
        builder.add_edge(head, relation, tail);
    }
    builder.finish()
}

async fn one(store: &dyn GraphStore, name: &str) -> kgmesh_schemas::NodeId {
    let found = within(store.resolve(&[name.to_owned()], NameMatch::Exact))
        .await
        .unwrap();
    assert_eq!(found[0].len(), 1, "{name} should resolve to one node");
    found[0][0].id
}

fn step(relation: &str, direction: Direction) -> RelationStep {
    RelationStep {
        relation: relation.to_owned(),
        direction,
    }
}

async fn contract(store: &dyn GraphStore) {
    // resolve
    let names = vec![
        "Heat".to_owned(),
        "the_IRISHMAN".to_owned(),
        "Nobody".to_owned(),
    ];
    let exact = within(store.resolve(&names, NameMatch::Exact))
        .await
        .unwrap();
    assert_eq!(exact[0].len(), 1);
    assert!(exact[1].is_empty() && exact[2].is_empty());
    let normalized = within(store.resolve(&names, NameMatch::Normalized))
        .await
        .unwrap();
    assert_eq!(normalized[1][0].name, "The Irishman");
    assert!(normalized[2].is_empty());

    let heat = one(store, "Heat").await;
    let collateral = one(store, "Collateral").await;
    let irishman = one(store, "The Irishman").await;
    let pacino = one(store, "Al Pacino").await;

    // entities
    let entities = within(store.entities(&[pacino, heat])).await.unwrap();
    assert_eq!(
        entities.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(),
        vec!["Al Pacino", "Heat"]
    );

    // neighbours
    let all = NeighborQuery {
        direction: Direction::Both,
        relations: None,
        fanout_cap: 10,
    };
    let hood = within(store.neighbors(&[heat], &all)).await.unwrap();
    let triples: BTreeSet<(String, String, String)> = hood
        .triples
        .iter()
        .map(|t| (t.head.name.clone(), t.relation.clone(), t.tail.name.clone()))
        .collect();
    let expected: BTreeSet<(String, String, String)> = [
        ("Heat", "directed_by", "Michael Mann"),
        ("Heat", "starred_actors", "Al Pacino"),
        ("Heat", "starred_actors", "Robert De Niro"),
    ]
    .iter()
    .map(|(h, r, t)| (h.to_string(), r.to_string(), t.to_string()))
    .collect();
    assert_eq!(triples, expected);
    assert!(hood.truncated.is_empty());
    // The same expansion as ids plus a name table.
    let edges = within(store.neighbor_edges(&[heat, pacino], &all))
        .await
        .unwrap();
    let named: BTreeSet<(String, String, String)> = edges
        .edges
        .iter()
        .map(|edge| {
            (
                edges.head_name(edge).to_owned(),
                edges.relation_name(edge).to_owned(),
                edges.tail_name(edge).to_owned(),
            )
        })
        .collect();
    let mut expected_both = expected.clone();
    expected_both.insert((
        "The Irishman".to_owned(),
        "starred_actors".to_owned(),
        "Al Pacino".to_owned(),
    ));
    assert_eq!(named, expected_both);
    assert!(edges
        .edges
        .iter()
        .all(|edge| edge.head == heat || edge.tail == pacino));
    assert_eq!(
        edges.edges.len(),
        5,
        "Heat → Al Pacino is found from both ends"
    );
    let materialized: BTreeSet<(String, String, String)> = edges
        .into_neighborhood()
        .triples
        .iter()
        .map(|t| (t.head.name.clone(), t.relation.clone(), t.tail.name.clone()))
        .collect();
    assert_eq!(materialized, expected_both);
    let capped = NeighborQuery {
        direction: Direction::Both,
        relations: None,
        fanout_cap: 2,
    };
    let hood = within(store.neighbors(&[heat], &capped)).await.unwrap();
    assert_eq!(hood.triples.len(), 2);
    assert_eq!(hood.truncated, vec![heat]);
    let incoming = NeighborQuery {
        direction: Direction::In,
        relations: Some(vec!["starred_actors".to_owned()]),
        fanout_cap: 10,
    };
    let hood = within(store.neighbors(&[pacino], &incoming)).await.unwrap();
    let heads: BTreeSet<&str> = hood.triples.iter().map(|t| t.head.name.as_str()).collect();
    assert_eq!(heads, BTreeSet::from(["Heat", "The Irishman"]));
    assert!(
        hood.triples.iter().all(|t| t.tail.name == "Al Pacino"),
        "stored direction kept"
    );

    // metapaths
    let metapath = Metapath {
        steps: vec![
            step("directed_by", Direction::Out),
            step("directed_by", Direction::In),
            step("starred_actors", Direction::Out),
        ],
    };
    let paths = within(store.follow_metapaths(
        &[collateral],
        std::slice::from_ref(&metapath),
        &PathLimits::default(),
    ))
    .await
    .unwrap();
    let ends: BTreeSet<&str> = paths.iter().map(|p| p.end().name.as_str()).collect();
    assert_eq!(ends, BTreeSet::from(["Al Pacino", "Robert De Niro"]));
    assert!(paths
        .iter()
        .all(|p| p.steps[1].node.name == "Heat" && p.steps[1].inverse));
    let too_deep = PathLimits {
        max_depth: 4,
        ..PathLimits::default()
    };
    assert!(matches!(
        within(store.follow_metapaths(&[collateral], &[metapath], &too_deep)).await,
        Err(StoreError::LimitExceeded { .. })
    ));

    // shortest paths
    let paths = within(store.shortest_paths(&[heat], &[irishman], &PathLimits::default()))
        .await
        .unwrap();
    assert_eq!(paths.len(), 2);
    assert!(paths
        .iter()
        .all(|p| p.len() == 2 && p.end().name == "The Irishman"));
    let shallow = PathLimits {
        max_depth: 2,
        ..PathLimits::default()
    };
    assert!(
        within(store.shortest_paths(&[collateral], &[pacino], &shallow))
            .await
            .unwrap()
            .is_empty()
    );
    let paths = within(store.shortest_paths(&[collateral], &[pacino], &PathLimits::default()))
        .await
        .unwrap();
    assert_eq!(paths.len(), 1);
    assert_eq!(paths[0].len(), 3);

    // schema
    let schema = within(store.schema()).await.unwrap();
    assert_eq!(schema.node_count, 6);
    assert_eq!(schema.edge_count, 6);
    assert_eq!(schema.relation("starred_actors").unwrap().count, 4);
    assert_eq!(schema.relation("directed_by").unwrap().count, 2);

    // scan names in pages
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = within(store.scan_names(after, 4)).await.unwrap();
        if page.is_empty() {
            break;
        }
        after = page.last().map(|e| e.id);
        seen.extend(page.into_iter().map(|e| e.name));
    }
    seen.sort();
    assert_eq!(
        seen,
        vec![
            "Al Pacino",
            "Collateral",
            "Heat",
            "Michael Mann",
            "Robert De Niro",
            "The Irishman"
        ]
    );

    // stars
    let stars = within(store.sample_stars(3, 2, 7)).await.unwrap();
    assert_eq!(stars.len(), 3);
    assert!(stars
        .iter()
        .all(|s| !s.triples.is_empty() && s.triples.len() <= 2));
    assert!(stars.iter().all(|s| s
        .triples
        .iter()
        .all(|t| t.head.id == s.center.id || t.tail.id == s.center.id)));

    // writes never run
    let write = within(store.cypher(
        "CREATE (n:Evil {name: 'x'}) RETURN n",
        &[],
        &QueryLimits::default(),
    ))
    .await;
    assert!(
        matches!(write, Err(StoreError::InvalidQuery { .. })),
        "{write:?}"
    );
}

#[tokio::test]
async fn embedded_store_meets_the_contract() {
    contract(&movies()).await;
}

/// How to reach `server`, with a 30 s bound on each call.
fn settings_for(server: &BoltServer) -> BoltSettings {
    BoltSettings {
        uri: server.uri(),
        user: server.user().to_owned(),
        password: server.password().to_owned(),
        database: Some(server.database().to_owned()),
        timeout: Duration::from_secs(30),
    }
}

#[tokio::test]
async fn bolt_store_meets_the_contract_against_arcadedb() {
    let server = BoltServer::start();
    let settings = settings_for(&server);
    let written = within(write_graph(&settings, &movies(), 2, true))
        .await
        .unwrap();
    assert_eq!((written.nodes, written.relationships), (6, 6));
    let store: Arc<dyn GraphStore> = Arc::new(within(BoltGraph::connect(&settings)).await.unwrap());
    contract(store.as_ref()).await;

    // Read-only Cypher with parameters.
    let rows = within(store.cypher(
        "MATCH (m)-[:starred_actors]->(a) WHERE a.name = $actor RETURN m.name AS movie ORDER BY movie",
        &[("actor".to_owned(), Value::String("Al Pacino".to_owned()))],
        &QueryLimits::default(),
    ))
    .await
    .unwrap();
    assert_eq!(rows.columns, vec!["movie"]);
    assert_eq!(
        rows.rows,
        vec![
            vec![Value::String("Heat".into())],
            vec![Value::String("The Irishman".into())]
        ]
    );
    // Columns in RETURN order (neo4rs hands rows over as maps, sorted by key).
    let ordered = within(store.cypher(
        "MATCH (m)-[:directed_by]->(d) RETURN m.name AS movie, d.name AS director, 1 AS a, m.name ORDER BY movie",
        &[],
        &QueryLimits::default(),
    ))
    .await
    .unwrap();
    assert_eq!(ordered.columns, vec!["movie", "director", "a", "m.name"]);
    assert_eq!(
        ordered.rows,
        vec![
            vec![
                Value::String("Collateral".into()),
                Value::String("Michael Mann".into()),
                Value::Int(1),
                Value::String("Collateral".into()),
            ],
            vec![
                Value::String("Heat".into()),
                Value::String("Michael Mann".into()),
                Value::Int(1),
                Value::String("Heat".into()),
            ],
        ]
    );
    let empty = within(store.cypher(
        "MATCH (m) WHERE m.name = $nobody RETURN m.name AS zeta, 1 AS alpha",
        &[("nobody".to_owned(), Value::String("Nobody".to_owned()))],
        &QueryLimits::default(),
    ))
    .await
    .unwrap();
    assert_eq!(empty.columns, vec!["zeta", "alpha"]);
    assert!(empty.rows.is_empty());
    let limited = within(store.cypher(
        "MATCH (n) RETURN n.name AS name",
        &[],
        &QueryLimits {
            max_rows: 2,
            ..QueryLimits::default()
        },
    ))
    .await
    .unwrap();
    assert_eq!(limited.rows.len(), 2);
    assert!(limited.truncated);
}

#[tokio::test]
async fn a_wrong_bolt_password_fails_within_the_timeout() {
    let server = BoltServer::start();
    let settings = BoltSettings {
        uri: server.uri(),
        user: server.user().to_owned(),
        password: "not-the-password".to_owned(),
        database: Some(server.database().to_owned()),
        timeout: Duration::from_secs(3),
    };
    let started = std::time::Instant::now();
    let result = within(BoltGraph::connect(&settings)).await;
    assert!(
        matches!(result, Err(StoreError::Unavailable { .. })),
        "{:?}",
        result.err()
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// A query cut off by its timeout would leave a Bolt connection mid-reply. It must not
/// go back into the pool as if clean: the next queries on it would read the stale reply
/// (an answer to another question, or a protocol error) or wait forever. The code
/// before this test read `unexpected response for ROLLBACK: Record` in round 0.
#[tokio::test]
async fn a_bolt_query_cut_off_by_its_timeout_leaves_later_queries_right() {
    let server = BoltServer::start();
    let settings = settings_for(&server);
    within(write_graph(&settings, &movies(), 2, true))
        .await
        .unwrap();
    let store = within(BoltGraph::connect(&settings)).await.unwrap();
    let slow = QueryLimits {
        timeout: Duration::from_millis(40),
        ..QueryLimits::default()
    };
    // The server still runs each cut-off query to its end: later queries may wait
    // behind them on a loaded machine, and must then be right, not fast.
    let quick = QueryLimits {
        timeout: Duration::from_secs(50),
        ..QueryLimits::default()
    };
    let count = "MATCH (m)-[:starred_actors]->(a) WHERE a.name = $actor RETURN count(m) AS films";
    let actor = [("actor".to_owned(), Value::String("Al Pacino".to_owned()))];
    for round in 0..4 {
        let cut = within(store.cypher(
            "UNWIND range(1, 1500) AS i UNWIND range(1, 1500) AS j WITH i, j WHERE (i * j) % 7 = 3 RETURN count(*) AS n",
            &[],
            &slow,
        ))
        .await;
        assert!(
            matches!(cut, Err(StoreError::Timeout { .. })),
            "round {round}: {cut:?}"
        );
        for n in 0..12 {
            let rows = within(store.cypher(count, &actor, &quick))
                .await
                .unwrap_or_else(|error| panic!("round {round}, query {n}: {error:?}"));
            assert_eq!(rows.columns, vec!["films"], "round {round}");
            assert_eq!(rows.rows, vec![vec![Value::Int(2)]], "round {round}");
        }
        let names = within(store.resolve(&["Heat".to_owned()], NameMatch::Exact))
            .await
            .unwrap();
        assert_eq!(names[0].len(), 1, "round {round}: {names:?}");
    }
}
