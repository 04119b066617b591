//! openCypher semantics on small graphs whose answers are known by construction, and on
//! Northwind facts known from the data set (not from this code).

#[path = "cypher_common.rs"]
mod common;

use kgmesh_schemas::graph::{Rows, Value};
use kgmesh_stores::cypher::{run_read_only, MemoryGraph};
use kgmesh_stores::{QueryLimits, StoreError};

fn s(text: &str) -> Value {
    Value::String(text.into())
}

fn run_on(graph: &MemoryGraph, query: &str) -> Rows {
    run_read_only(graph, &graph.schema(), query, &[], &QueryLimits::default())
        .unwrap_or_else(|error| panic!("`{query}` failed: {error}"))
}

fn scalar(graph: &MemoryGraph, query: &str) -> Vec<Vec<Value>> {
    run_on(graph, query).rows
}

/// a -KNOWS-> b -KNOWS-> c -KNOWS-> d, and a -LIKES-> c; e has no edges.
fn chain() -> MemoryGraph {
    let mut graph = MemoryGraph::new();
    let mut people = Vec::new();
    for (name, age) in [
        ("a", Value::Int(30)),
        ("b", Value::Int(40)),
        ("c", Value::Null),
        ("d", Value::Float(25.5)),
        ("e", Value::Int(30)),
    ] {
        people.push(graph.add_node(
            &["Person"],
            vec![("name".into(), s(name)), ("age".into(), age)],
        ));
    }
    graph.add_edge(
        people[0],
        "KNOWS",
        people[1],
        vec![("since".into(), Value::Int(2001))],
    );
    graph.add_edge(
        people[1],
        "KNOWS",
        people[2],
        vec![("since".into(), Value::Int(2002))],
    );
    graph.add_edge(
        people[2],
        "KNOWS",
        people[3],
        vec![("since".into(), Value::Int(2003))],
    );
    graph.add_edge(people[0], "LIKES", people[2], Vec::new());
    graph
}

#[test]
fn expressions_follow_opencypher() {
    let graph = chain();
    let rows = scalar(
        &graph,
        "RETURN null = null, 1 = 1.0, 1 < 'a', 7 / 2, 7 / 2.0, 7 % 3, 2 ^ 3, 'a' + 1, [1, 2] + 3, \
         null IS NULL, 'abc' STARTS WITH 'ab', 'abc' =~ 'a.c', 3 IN [1, null], 1 IN [1, null], \
         NOT null, true XOR false, toString(1.0), toInteger('42'), toFloat('x'), size('héllo'), \
         coalesce(null, 2), CASE WHEN 1 > 2 THEN 'x' ELSE 'y' END, [x IN range(1, 5) WHERE x % 2 = 1 | x * 10], \
         round(2.5), round(-2.5), round(2.71828, 2), abs(-3), toUpper('ab'), trim('  x ')",
    );
    assert_eq!(
        rows[0],
        vec![
            Value::Null,
            Value::Bool(true),
            Value::Null,
            Value::Int(3),
            Value::Float(3.5),
            Value::Int(1),
            Value::Float(8.0),
            s("a1"),
            Value::List(vec![Value::Int(1), Value::Int(2), Value::Int(3)]),
            Value::Bool(true),
            Value::Bool(true),
            Value::Bool(true),
            Value::Null,
            Value::Bool(true),
            Value::Null,
            Value::Bool(true),
            s("1.0"),
            Value::Int(42),
            Value::Null,
            Value::Int(5),
            Value::Int(2),
            s("y"),
            Value::List(vec![Value::Int(10), Value::Int(30), Value::Int(50)]),
            Value::Float(3.0),
            Value::Float(-2.0),
            Value::Float(2.72),
            Value::Int(3),
            s("AB"),
            s("x"),
        ]
    );
}

#[test]
fn patterns_directions_and_variable_length() {
    let graph = chain();
    let names = |query: &str| -> Vec<Value> {
        scalar(&graph, query)
            .into_iter()
            .map(|mut row| row.remove(0))
            .collect()
    };
    assert_eq!(
        names("MATCH (:Person {name: 'a'})-[:KNOWS*1..3]->(x) RETURN x.name ORDER BY x.name"),
        vec![s("b"), s("c"), s("d")]
    );
    assert_eq!(
        names("MATCH (:Person {name: 'd'})<-[:KNOWS*2]-(x) RETURN x.name"),
        vec![s("b")]
    );
    assert_eq!(
        names("MATCH (x)-[:KNOWS|LIKES]->(:Person {name: 'c'}) RETURN x.name ORDER BY x.name"),
        vec![s("a"), s("b")]
    );
    assert_eq!(
        names("MATCH (:Person {name: 'b'})-[:KNOWS]-(x) RETURN x.name ORDER BY x.name"),
        vec![s("a"), s("c")]
    );
    // Relationship uniqueness: a 2-hop undirected walk never reuses its first edge.
    assert_eq!(
        names("MATCH (:Person {name: 'b'})-[:KNOWS]-()-[:KNOWS]-(x) RETURN x.name ORDER BY x.name"),
        vec![s("d")]
    );
    assert_eq!(
        names(
            "MATCH p = (:Person {name: 'a'})-[:KNOWS*1..3]->(:Person {name: 'd'}) RETURN length(p)"
        ),
        vec![Value::Int(3)]
    );
    assert_eq!(
        names("MATCH (a:Person {name: 'a'})-[r:KNOWS]->(b) RETURN r.since"),
        vec![Value::Int(2001)]
    );
    assert_eq!(
        names("MATCH (x:Person) WHERE (x)-[:LIKES]->() RETURN x.name"),
        vec![s("a")]
    );
    assert_eq!(
        names("MATCH (x:Person) WHERE NOT EXISTS { MATCH (x)-[:KNOWS]-() } RETURN x.name"),
        vec![s("e")]
    );
    assert_eq!(
        names("MATCH (x:Person) RETURN COUNT { (x)-[:KNOWS]-() } AS n ORDER BY n DESC LIMIT 1"),
        vec![Value::Int(2)]
    );
}

#[test]
fn optional_match_aggregation_ordering_and_nulls() {
    let graph = chain();
    let rows = scalar(
        &graph,
        "MATCH (x:Person) OPTIONAL MATCH (x)-[:LIKES]->(y) RETURN x.name, y.name ORDER BY x.name",
    );
    assert_eq!(rows.len(), 5);
    assert_eq!(rows[0], vec![s("a"), s("c")]);
    assert_eq!(rows[1], vec![s("b"), Value::Null]);
    // Nulls sort last ascending and first descending.
    let ages = scalar(&graph, "MATCH (x:Person) RETURN x.age ORDER BY x.age");
    assert_eq!(ages.last().unwrap()[0], Value::Null);
    assert_eq!(ages[0][0], Value::Float(25.5));
    let ages = scalar(&graph, "MATCH (x:Person) RETURN x.age ORDER BY x.age DESC");
    assert_eq!(ages[0][0], Value::Null);
    // Aggregates skip nulls; empty input still gives one row.
    let rows = scalar(&graph, "MATCH (x:Person) RETURN count(*), count(x.age), sum(x.age), min(x.age), max(x.age), collect(DISTINCT x.age)");
    assert_eq!(
        rows[0],
        vec![
            Value::Int(5),
            Value::Int(4),
            Value::Float(125.5),
            Value::Float(25.5),
            Value::Int(40),
            Value::List(vec![Value::Int(30), Value::Int(40), Value::Float(25.5)]),
        ]
    );
    let rows = scalar(
        &graph,
        "MATCH (x:Person {name: 'nobody'}) RETURN count(x), sum(x.age), avg(x.age), collect(x)",
    );
    assert_eq!(
        rows[0],
        vec![
            Value::Int(0),
            Value::Int(0),
            Value::Null,
            Value::List(vec![])
        ]
    );
    // Grouping on a key, then a WITH filter, then ORDER BY an aggregate not projected.
    let rows = scalar(
        &graph,
        "MATCH (x:Person) WITH x.age AS age, count(*) AS n WHERE n > 1 RETURN age, n",
    );
    assert_eq!(rows, vec![vec![Value::Int(30), Value::Int(2)]]);
    let rows = scalar(&graph, "MATCH (x:Person)-[:KNOWS]-(y) RETURN x.name, count(y) ORDER BY count(y) DESC, x.name LIMIT 2");
    assert_eq!(
        rows,
        vec![vec![s("b"), Value::Int(2)], vec![s("c"), Value::Int(2)]]
    );
    let rows = scalar(
        &graph,
        "UNWIND [3, 1, 2, 1] AS v RETURN DISTINCT v ORDER BY v SKIP 1 LIMIT 1",
    );
    assert_eq!(rows, vec![vec![Value::Int(2)]]);
}

#[test]
fn northwind_facts() {
    let graph = common::load_northwind();
    assert_eq!(
        scalar(&graph, "MATCH (p:Product) RETURN count(p)"),
        vec![vec![Value::Int(77)]]
    );
    assert_eq!(
        scalar(&graph, "MATCH (c:Category) RETURN count(*)"),
        vec![vec![Value::Int(8)]]
    );
    assert_eq!(
        scalar(&graph, "MATCH (o:Order) RETURN count(o)"),
        vec![vec![Value::Int(830)]]
    );
    assert_eq!(
        scalar(&graph, "MATCH ()-[r:ORDERS]->() RETURN count(r)"),
        vec![vec![Value::Int(2155)]]
    );
    assert_eq!(
        scalar(&graph, "MATCH (:Supplier {companyName: 'Exotic Liquids'})-[:SUPPLIES]->(p) RETURN p.productName ORDER BY p.productName"),
        vec![vec![s("Aniseed Syrup")], vec![s("Chai")], vec![s("Chang")]]
    );
    // Côte de Blaye is the most expensive product (263.50).
    assert_eq!(
        scalar(
            &graph,
            "MATCH (p:Product) RETURN p.productName, p.unitPrice ORDER BY p.unitPrice DESC LIMIT 1"
        ),
        vec![vec![s("Côte de Blaye"), Value::Float(263.5)]]
    );
    // Order 10248 has three lines: 12 + 10 + 5 units.
    assert_eq!(
        scalar(&graph, "MATCH (o:Order {orderID: '10248'})-[r:ORDERS]->(:Product) RETURN sum(r.quantity), count(r)"),
        vec![vec![Value::Int(27), Value::Int(3)]]
    );
}

#[test]
fn unknown_names_get_repair_hints() {
    let graph = common::load_northwind();
    let schema = graph.schema();
    let error =
        |query: &str| match run_read_only(&graph, &schema, query, &[], &QueryLimits::default()) {
            Err(StoreError::InvalidQuery { reason, hint }) => (reason, hint.unwrap_or_default()),
            other => panic!("`{query}` should be refused, got {other:?}"),
        };
    let (reason, hint) = error("MATCH (o:Order)-[:ORDERED]->(p:Product) RETURN p");
    assert!(
        reason.contains("relationship :ORDERED does not exist"),
        "{reason}"
    );
    assert!(
        hint.starts_with("did you mean :ORDERS? (:Order)-[:ORDERS]->(:Product)"),
        "{hint}"
    );
    let (reason, hint) = error("MATCH (p:product) RETURN p");
    assert!(reason.contains("label :product does not exist"), "{reason}");
    assert!(hint.starts_with("did you mean :Product?"), "{hint}");
    let (reason, hint) = error("MATCH (p:Product) RETURN p.ProductName");
    assert!(
        reason.contains("property .ProductName does not exist on :Product"),
        "{reason}"
    );
    assert!(hint.starts_with("did you mean .productName?"), "{hint}");
    let (_, hint) = error("MATCH (p:Product)<-[r:ORDERS]-() RETURN r.qty");
    assert!(
        hint.contains("relationship properties: discount, orderID, productID, quantity, unitPrice"),
        "{hint}"
    );
    let (reason, hint) = error("MATCH (p:Product) RETURN toLowr(p.productName)");
    assert!(
        reason.contains("unknown function tolowr()") && hint.contains("did you mean tolower()?"),
        "{reason} {hint}"
    );
    let (reason, _) = error("MATCH (p:Product) RETURN q.productName");
    assert!(reason.contains("variable `q` is not defined"), "{reason}");
}

#[test]
fn parameters_bind_values() {
    let graph = common::load_northwind();
    let rows = run_read_only(
        &graph,
        &graph.schema(),
        "MATCH (p:Product) WHERE p.unitPrice > $min AND p.productName STARTS WITH $prefix RETURN p.productName ORDER BY p.productName",
        &[("min".into(), Value::Float(20.0)), ("prefix".into(), s("C"))],
        &QueryLimits::default(),
    )
    .unwrap();
    let names: Vec<Value> = rows.rows.into_iter().map(|mut row| row.remove(0)).collect();
    // From products.csv: C… products priced over 20.
    assert_eq!(
        names,
        vec![
            s("Camembert Pierrot"),
            s("Carnarvon Tigers"),
            s("Chef Anton's Cajun Seasoning"),
            s("Chef Anton's Gumbo Mix"),
            s("Côte de Blaye")
        ]
    );
}
