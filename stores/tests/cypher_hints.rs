//! What a user meets on day one with their own graph: refusals that say what to write
//! instead, where the suggestion can be pasted into the query as it stands. Every graph
//! here is written by the test (a triple graph loaded through the embedded store's own
//! loaders, small property graphs built in memory).

use std::io::Write as _;

use kgmesh_schemas::graph::{Rows, Value};
use kgmesh_stores::cypher::{cypher_name, parse, run_read_only, MemoryGraph, PropertyGraph};
use kgmesh_stores::embedded::load::{load_graph, KgFormat, LoadOptions};
use kgmesh_stores::embedded::EmbeddedGraph;
use kgmesh_stores::{QueryLimits, StoreError};

const OPERATED_BY: &str = "http://example.org/operatedBy";

fn s(text: &str) -> Value {
    Value::String(text.into())
}

/// A triple graph as a user writes one: ships operated by lines, in N-Triples with
/// IRIs, `rdfs:label` names and no node labels.
fn fleet() -> (tempfile::TempDir, EmbeddedGraph) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("fleet.nt");
    let mut file = std::fs::File::create(&path).expect("the file is written");
    let label = "http://www.w3.org/2000/01/rdf-schema#label";
    for (ship, name, line) in [
        ("ship1", "Aurora", "line1"),
        ("ship2", "Borealis", "line1"),
        ("ship3", "Cassiopeia", "line2"),
    ] {
        writeln!(
            file,
            "<http://example.org/{ship}> <{OPERATED_BY}> <http://example.org/{line}> ."
        )
        .unwrap();
        writeln!(file, "<http://example.org/{ship}> <{label}> \"{name}\" .").unwrap();
    }
    writeln!(
        file,
        "<http://example.org/line1> <{label}> \"Northern Line\" ."
    )
    .unwrap();
    writeln!(
        file,
        "<http://example.org/line2> <{label}> \"Southern Line\" ."
    )
    .unwrap();
    drop(file);
    let options = LoadOptions {
        format: Some(KgFormat::NTriples),
        ..LoadOptions::default()
    };
    let (graph, _) = load_graph(&path, &options).expect("the N-Triples file loads");
    (dir, graph)
}

fn run(graph: &EmbeddedGraph, query: &str) -> Result<Rows, StoreError> {
    kgmesh_stores::cypher::run_on_embedded(graph, query, &[], &QueryLimits::default())
}

/// `(reason, hint)` of a refused query.
fn refused(result: Result<Rows, StoreError>, query: &str) -> (String, String) {
    match result {
        Err(StoreError::InvalidQuery { reason, hint }) => (reason, hint.unwrap_or_default()),
        other => panic!("`{query}` should be refused with a hint, got {other:?}"),
    }
}

/// The Cypher text a hint offers after `did you mean ` (up to its `?`).
fn suggestion(hint: &str) -> &str {
    let start = hint.find("did you mean ").expect("a suggestion") + "did you mean ".len();
    let end = hint[start..].find('?').expect("the suggestion ends with ?");
    &hint[start..start + end]
}

fn first_column(rows: &Rows) -> Vec<Value> {
    let mut column: Vec<Value> = rows.rows.iter().map(|row| row[0].clone()).collect();
    column.sort_by_key(|value| format!("{value:?}"));
    column
}

#[test]
fn unbounded_variable_length_patterns_are_refused_with_a_bound_to_write() {
    let (_dir, graph) = fleet();
    for (query, written, bounded) in [
        ("MATCH (a)-[*]->(b) RETURN b.name", "[*]", "[*1..3]"),
        ("MATCH (a)-[*2..]->(b) RETURN b.name", "[*2..]", "[*2..3]"),
        (
            "MATCH (a)-[r:`http://example.org/operatedBy`*]->(b) RETURN b.name",
            "[r:`http://example.org/operatedBy`*]",
            "[r:`http://example.org/operatedBy`*1..3]",
        ),
        // Inside a predicate too: every pattern is checked.
        (
            "MATCH (a) WHERE EXISTS { MATCH (a)-[*]-() } RETURN a.name",
            "[*]",
            "[*1..3]",
        ),
    ] {
        let (reason, hint) = refused(run(&graph, query), query);
        assert!(
            reason.contains(&format!("{written} has no upper bound")),
            "{query}: {reason}"
        );
        assert!(hint.contains(&format!("e.g. {bounded}")), "{query}: {hint}");
        // The bound offered runs.
        let repaired = query.replacen(written, bounded, 1);
        assert!(run(&graph, &repaired).is_ok(), "{repaired}");
    }
    // A bound over the depth budget is refused; one within it runs.
    let over = "MATCH (a)-[*1..9]->(b) RETURN b.name";
    assert!(matches!(
        run(&graph, over),
        Err(StoreError::LimitExceeded { .. })
    ));
    let rows = run(
        &graph,
        "MATCH (a {name: 'Aurora'})-[*1..3]->(b) RETURN b.name",
    )
    .unwrap();
    assert_eq!(first_column(&rows), vec![s("Northern Line")]);
}

#[test]
fn a_property_no_node_has_is_refused_with_the_nearest_key() {
    let (_dir, graph) = fleet();
    // A graph of triples: no labels, so the keys come from the graph itself.
    assert!(graph.schema_sync().labels.is_empty());
    let query = "MATCH (s) RETURN s.nme";
    let (reason, hint) = refused(run(&graph, query), query);
    assert!(
        reason.contains("property .nme does not exist on any node"),
        "{reason}"
    );
    assert_eq!(suggestion(&hint), ".name", "{hint}");
    assert!(hint.contains("properties of any node: iri, name"), "{hint}");
    // In WHERE and in a node's property map alike; the key suggested answers.
    let query = "MATCH (s {nme: 'Aurora'}) RETURN s";
    assert_eq!(suggestion(&refused(run(&graph, query), query).1), ".name");
    let rows = run(&graph, "MATCH (s) WHERE s.name = 'Aurora' RETURN s.iri").unwrap();
    assert_eq!(rows.rows, vec![vec![s("http://example.org/ship1")]]);
    // A key some node has is never refused, even where a node lacks it (null there).
    let rows = run(&graph, "MATCH (s {name: 'Northern Line'}) RETURN s.iri").unwrap();
    assert_eq!(rows.rows, vec![vec![s("http://example.org/line1")]]);

    // On a labelled graph: the label's keys, or every label's for an unlabelled variable.
    let mut shop = MemoryGraph::new();
    shop.add_node(
        &["Product"],
        vec![
            ("productName".into(), s("Chai")),
            ("unitPrice".into(), Value::Int(18)),
        ],
    );
    let schema = shop.schema();
    let refusal = |query: &str| {
        refused(
            run_read_only(&shop, &schema, query, &[], &QueryLimits::default()),
            query,
        )
    };
    let (reason, hint) = refusal("MATCH (p:Product) RETURN p.unitPrise");
    assert!(reason.contains("does not exist on :Product"), "{reason}");
    assert_eq!(suggestion(&hint), ".unitPrice");
    let (reason, hint) = refusal("MATCH (p) RETURN p.productname");
    assert!(reason.contains("does not exist on any node"), "{reason}");
    assert_eq!(suggestion(&hint), ".productName");
}

#[test]
fn names_that_are_not_plain_identifiers_are_suggested_back_quoted() {
    let (_dir, graph) = fleet();
    // The local name of an IRI is what a user types.
    let query = "MATCH (s)-[:operatedBy]->(l) RETURN s.name, l.name";
    let (reason, hint) = refused(run(&graph, query), query);
    assert!(
        reason.contains("relationship :operatedBy does not exist"),
        "{reason}"
    );
    let offered = suggestion(&hint);
    assert_eq!(offered, ":`http://example.org/operatedBy`", "{hint}");
    assert!(
        hint.contains("existing relationships: ()-[:`http://example.org/operatedBy`]->()"),
        "{hint}"
    );
    // Pasted where the typo was, the suggestion runs and answers.
    let repaired = query.replace(":operatedBy", offered);
    let rows = run(&graph, &repaired).unwrap_or_else(|e| panic!("{repaired}: {e}"));
    assert_eq!(rows.rows.len(), 3);
    // A misspelt IRI gets the same.
    let query = "MATCH (s)-[:`http://example.org/operatedby`]->(l) RETURN l.name";
    assert_eq!(
        suggestion(&refused(run(&graph, query), query).1),
        ":`http://example.org/operatedBy`"
    );

    // Labels and keys with spaces or backquotes too.
    let mut graph = MemoryGraph::new();
    graph.add_node(
        &["Cargo Ship"],
        vec![("gross `tonnage`".into(), Value::Int(900))],
    );
    let schema = graph.schema();
    let query = "MATCH (s:`Cargo Shp`) RETURN s";
    let hint = refused(
        run_read_only(&graph, &schema, query, &[], &QueryLimits::default()),
        query,
    )
    .1;
    assert_eq!(suggestion(&hint), ":`Cargo Ship`", "{hint}");
    let query = "MATCH (s:`Cargo Ship`) RETURN s.`gross tonnage`";
    let hint = refused(
        run_read_only(&graph, &schema, query, &[], &QueryLimits::default()),
        query,
    )
    .1;
    assert_eq!(suggestion(&hint), ".`gross ``tonnage```", "{hint}");
    assert_eq!(cypher_name("ORDERS"), "ORDERS");
    assert_eq!(cypher_name("_x1"), "_x1");
    assert_eq!(cypher_name("1st"), "`1st`");
    assert_eq!(cypher_name("Côte"), "`Côte`");
    assert_eq!(cypher_name(""), "``");
}

#[test]
fn back_quoted_names_are_read_wherever_a_name_goes() {
    let mut graph = MemoryGraph::new();
    let ship = graph.add_node(
        &["Cargo Ship"],
        vec![
            ("ship name".into(), s("Aurora")),
            ("built in".into(), Value::Int(2014)),
        ],
    );
    let line = graph.add_node(&["Line"], vec![("ship name".into(), s("Northern"))]);
    graph.add_edge(
        ship,
        OPERATED_BY,
        line,
        vec![("since year".into(), Value::Int(2016))],
    );
    let schema = graph.schema();
    let query = "MATCH `p a t h` = (`the ship`:`Cargo Ship` {`ship name`: $`the name`})\
                 -[`the rel`:`http://example.org/operatedBy`*1..1]->(`the line`) \
                 WHERE `the ship`:`Cargo Ship` AND `the ship`.`built in` > 2000 \
                 WITH `the ship`, `the line`, `p a t h` \
                 MATCH (`the ship`)-[`r`:`http://example.org/operatedBy` {`since year`: 2016}]->() \
                 UNWIND [`the line`.`ship name`] AS `line name` \
                 RETURN `the ship` {.`ship name`, `built`: `the ship`.`built in`} AS `the map`, \
                        `line name`, r.`since year` AS `since`, length(`p a t h`) AS `hops`, \
                        [(`the ship`)-[:`http://example.org/operatedBy`]->(`x`) | `x`.`ship name`] AS `lines` \
                 ORDER BY `line name`";
    parse(query).unwrap_or_else(|e| panic!("{e}"));
    let rows = run_read_only(
        &graph,
        &schema,
        query,
        &[("the name".into(), s("Aurora"))],
        &QueryLimits::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        rows.columns,
        ["the map", "line name", "since", "hops", "lines"]
    );
    assert_eq!(
        rows.rows,
        vec![vec![
            Value::Map(vec![
                ("ship name".into(), s("Aurora")),
                ("built".into(), Value::Int(2014)),
            ]),
            s("Northern"),
            Value::Int(2016),
            Value::Int(1),
            Value::List(vec![s("Northern")]),
        ]]
    );
}

#[test]
fn a_label_on_a_graph_without_labels_says_how_to_match_there() {
    let (_dir, graph) = fleet();
    let query = "MATCH (s:Ship) RETURN s.name";
    let (reason, hint) = refused(run(&graph, query), query);
    assert!(reason.contains("label :Ship does not exist"), "{reason}");
    assert!(
        hint.starts_with("this graph has no node labels (loaded from triples)"),
        "{hint}"
    );
    // The examples name the graph's own relationship and one of its nodes, and run.
    let relationship =
        "MATCH (s)-[:`http://example.org/operatedBy`]->(o) RETURN s.name, o.name LIMIT 10";
    assert!(hint.contains(relationship), "{hint}");
    let rows = run(&graph, relationship).unwrap();
    assert_eq!(rows.rows.len(), 3);
    let by_name = hint
        .split(", or ")
        .nth(1)
        .unwrap_or_else(|| panic!("a match by name in {hint}"));
    let rows = run(&graph, by_name).unwrap_or_else(|e| panic!("{by_name}: {e}"));
    assert_eq!(rows.rows.len(), 1, "{by_name}");
    // `WHERE s:Ship` alike.
    let query = "MATCH (s) WHERE s:Ship RETURN s";
    assert!(refused(run(&graph, query), query)
        .1
        .contains("this graph has no node labels"));

    // A graph with labels suggests the nearest one.
    let mut fleet = MemoryGraph::new();
    fleet.add_node(&["Ship"], vec![("name".into(), s("Aurora"))]);
    fleet.add_node(&["Line"], vec![("name".into(), s("Northern"))]);
    let schema = fleet.schema();
    let query = "MATCH (s:Shp) RETURN s";
    let hint = refused(
        run_read_only(&fleet, &schema, query, &[], &QueryLimits::default()),
        query,
    )
    .1;
    assert_eq!(suggestion(&hint), ":Ship", "{hint}");
    assert!(
        hint.contains("existing labels: :Ship, :Line")
            || hint.contains("existing labels: :Line, :Ship"),
        "{hint}"
    );
    // An empty graph knows no names: nothing to refuse.
    let empty = MemoryGraph::new();
    assert!(run_read_only(
        &empty,
        &empty.schema(),
        "MATCH (s:Ship) RETURN s",
        &[],
        &QueryLimits::default()
    )
    .unwrap()
    .rows
    .is_empty());
    assert!(PropertyGraph::property_keys(&empty).is_empty());
}
