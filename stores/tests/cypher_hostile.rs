//! Hostile and malformed queries: every one is refused with an error that says why, and
//! none panics, hangs or writes.

#[path = "cypher_common.rs"]
mod common;

use std::time::Duration;

use kgmesh_stores::cypher::{self, run_read_only, MemoryGraph};
use kgmesh_stores::{QueryLimits, StoreError};

fn northwind() -> (MemoryGraph, kgmesh_schemas::graph::GraphSchema) {
    let graph = common::load_northwind();
    let schema = graph.schema();
    (graph, schema)
}

fn run(query: &str, limits: &QueryLimits) -> Result<kgmesh_schemas::graph::Rows, StoreError> {
    let (graph, schema) = northwind();
    run_read_only(&graph, &schema, query, &[], limits)
}

fn refusal(query: &str) -> String {
    match run(query, &QueryLimits::default()) {
        Ok(rows) => panic!(
            "`{query}` was not refused; it returned {} rows",
            rows.rows.len()
        ),
        Err(StoreError::InvalidQuery { reason, hint }) => {
            format!("{reason} | {}", hint.unwrap_or_default())
        }
        Err(StoreError::LimitExceeded { detail }) => format!("limit: {detail}"),
        Err(other) => format!("{other}"),
    }
}

#[test]
fn write_clauses_are_refused_by_clause_not_by_text() {
    for (query, clause) in [
        (
            "MATCH (n:Product) CREATE (m:Product {productName: 'x'}) RETURN n",
            "CREATE is refused",
        ),
        (
            "MATCH (n:Product) /* harmless */ MERGE (m:Category {categoryName: 'x'}) RETURN n",
            "MERGE is refused",
        ),
        (
            "MATCH (n:Product) SET n.unitPrice = 0 RETURN n",
            "SET is refused",
        ),
        ("MATCH (n:Product) DELETE n", "DELETE is refused"),
        (
            "MATCH (n:Product) DETACH DELETE n",
            "DETACH DELETE is refused",
        ),
        (
            "MATCH (n:Product) REMOVE n.unitPrice RETURN n",
            "REMOVE is refused",
        ),
        (
            "mErGe (n:Product {productName: 'x'}) RETURN n",
            "MERGE is refused",
        ),
        (
            "LOAD CSV FROM 'file:///etc/passwd' AS line RETURN line",
            "LOAD CSV is refused",
        ),
        (
            "MATCH (n:Product) FOREACH (x IN [1] | SET n.unitPrice = x) RETURN n",
            "FOREACH is refused",
        ),
        ("DROP INDEX product_name", "DROP is refused"),
        ("SHOW DATABASES", "administration command is refused"),
        ("USE system MATCH (n) RETURN n", "USE is refused"),
        // A write inside a subquery is still a write.
        (
            "MATCH (p:Product) WHERE EXISTS { MATCH (p) SET p.unitPrice = 1 } RETURN p",
            "SET is refused",
        ),
    ] {
        let message = refusal(query);
        assert!(message.contains(clause), "`{query}` → {message}");
        assert!(
            message.contains("read"),
            "hint names what is allowed: {message}"
        );
    }
}

#[test]
fn comments_and_strings_neither_hide_nor_invent_writes() {
    // Text that merely mentions a write runs.
    let limits = QueryLimits::default();
    let rows = run("MATCH (p:Product {productName: 'Chai'}) // CREATE (x)\nRETURN p.productName /* DELETE p */", &limits)
        .expect("a comment is not a clause");
    assert_eq!(rows.rows.len(), 1);
    let rows = run(
        "MATCH (p:Product) WHERE p.productName = 'CREATE (x) // */' RETURN p",
        &limits,
    )
    .expect("a string is not a clause");
    assert!(rows.rows.is_empty());
    // A write after a closed comment is a write.
    let message = refusal("MATCH (p:Product) /* comment */ CREATE (x:Product) RETURN p");
    assert!(message.contains("CREATE is refused"), "{message}");
    // Comments do not nest: the CREATE after the first */ is real, and refused.
    let message = refusal("MATCH (p:Product) /* /* */ CREATE (x:Product) */ RETURN p");
    assert!(
        message.contains("CREATE") || message.contains("line 1"),
        "{message}"
    );
    let message = refusal("MATCH (p:Product) RETURN p /* CREATE (x)");
    assert!(message.contains("unterminated /* comment"), "{message}");
    // A second statement after `;` is refused, whatever it is.
    let message =
        refusal("MATCH (p:Product) RETURN '/*' + p.productName; MATCH (m) DETACH DELETE m");
    assert!(message.contains("only one statement"), "{message}");
}

#[test]
fn unicode_look_alikes_are_named() {
    // Cyrillic М (U+041C) in MATCH.
    let message = refusal("\u{41C}ATCH (p:Product) RETURN p");
    assert!(
        message.contains("U+041C") && message.contains("line 1, column 1"),
        "{message}"
    );
    // Cyrillic о (U+043E) in a label.
    let message = refusal("MATCH (p:Pr\u{43E}duct) RETURN p");
    assert!(message.contains("U+043E"), "{message}");
    // Quoted, the look-alike is a name that does not exist; the hint names the real one.
    let message = refusal("MATCH (p:`Pr\u{43E}duct`) RETURN p");
    assert!(
        message.contains("does not exist") && message.contains("did you mean :Product?"),
        "{message}"
    );
    // Cyrillic С (U+0421) in CREATE does not smuggle a write past anything: it is not a keyword.
    let message = refusal("MATCH (p:Product) \u{421}REATE (x) RETURN p");
    assert!(message.contains("U+0421"), "{message}");
}

#[test]
fn labels_cannot_be_computed_from_strings() {
    let message = refusal("MATCH (p:'Prod' + 'uct') RETURN p");
    assert!(message.contains("expected a label name"), "{message}");
    let message = refusal("MATCH (p:Prod+uct) RETURN p");
    assert!(message.contains("not strings to concatenate"), "{message}");
    let message = refusal("MATCH (p)-[:ORD+ERS]->(o) RETURN p");
    assert!(message.contains("not strings to concatenate"), "{message}");
}

#[test]
fn procedures_and_plugin_functions_are_refused() {
    let message = refusal("CALL db.labels()");
    assert!(message.contains("CALL db.labels is refused"), "{message}");
    let message = refusal("MATCH (n:Product) CALL { MATCH (m) DETACH DELETE m } RETURN n");
    assert!(
        message.contains("CALL { subquery } is refused"),
        "{message}"
    );
    let message = refusal("CALL apoc.periodic.iterate('MATCH (n) RETURN n', 'DETACH DELETE n', {}) YIELD batches RETURN batches");
    assert!(
        message.contains("CALL apoc.periodic.iterate is refused"),
        "{message}"
    );
    let message = refusal("RETURN apoc.cypher.runFirstColumn('CREATE (n)', {}) AS x");
    assert!(
        message.contains("apoc.cypher.runfirstcolumn() is refused"),
        "{message}"
    );
}

#[test]
fn huge_variable_length_ranges_are_refused_or_capped() {
    let message = refusal("MATCH (a:Product)-[*1..1000000]->(b) RETURN count(*)");
    assert!(
        message.contains("longer than the depth budget of 3") && message.contains("*1..3"),
        "{message}"
    );
    let message = refusal("MATCH (a:Product)-[*5..]->(b) RETURN count(*)");
    assert!(message.contains("at least 5 hops"), "{message}");
    let message = refusal("MATCH (a:Product)-[*1..99999999999999999999]->(b) RETURN count(*)");
    assert!(message.contains("out of range"), "{message}");
    // Unbounded is refused, with the bound to write in the hint.
    let message =
        refusal("MATCH (s:Supplier {companyName: 'Exotic Liquids'})-[*]->(x) RETURN count(*) AS n");
    assert!(
        message.contains("[*] has no upper bound") && message.contains("e.g. [*1..3]"),
        "{message}"
    );
}

#[test]
fn cartesian_products_beyond_the_budget_are_refused() {
    let message = refusal("MATCH (a:Order), (b:Order), (c:Order) RETURN count(*)");
    assert!(
        message.contains("cartesian product") && message.contains("connect the patterns"),
        "{message}"
    );
    // Under the static estimate but over the work budget at run time: stopped, not hung.
    let small = QueryLimits {
        max_rows: 100,
        ..QueryLimits::default()
    };
    match run(
        "MATCH (a:Product), (b:Product) WITH a, b MATCH (c:Category) RETURN count(*)",
        &small,
    ) {
        Err(StoreError::LimitExceeded { detail }) => {
            assert!(detail.contains("units of work"), "{detail}")
        }
        other => panic!("expected the work budget to stop the query, got {other:?}"),
    }
}

#[test]
fn the_deadline_stops_long_queries() {
    let limits = QueryLimits {
        max_rows: 10_000,
        timeout: Duration::from_millis(1),
        max_depth: 3,
    };
    let started = std::time::Instant::now();
    match run("MATCH (a:Order)-[*1..3]-(b) RETURN count(*)", &limits) {
        Err(StoreError::Timeout { millis }) => assert_eq!(millis, 1),
        Err(StoreError::LimitExceeded { detail }) => {
            panic!("expected the deadline first, got the work budget: {detail}")
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn the_result_row_cap_truncates() {
    let limits = QueryLimits {
        max_rows: 10,
        ..QueryLimits::default()
    };
    let rows = run("MATCH (p:Product) RETURN p.productName", &limits).unwrap();
    assert_eq!(rows.rows.len(), 10);
    assert!(rows.truncated);
}

#[test]
fn pathological_text_is_refused_without_overflowing_the_stack() {
    let deep = format!("RETURN {}1{}", "(".repeat(20_000), ")".repeat(20_000));
    let message = refusal(&deep);
    assert!(message.contains("nests deeper"), "{message}");
    let nots = format!(
        "MATCH (p:Product) WHERE {} true RETURN p",
        "NOT ".repeat(10_000)
    );
    assert!(refusal(&nots).contains("nests deeper"));
    let lists = format!("RETURN {}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert!(refusal(&lists).contains("nests deeper"));
    // Long operator chains build deep trees too.
    let sum = format!("RETURN {}1", "1 + ".repeat(15_000));
    assert!(refusal(&sum).contains("nests deeper"));
    let properties = format!("MATCH (p:Product) RETURN p{}", ".a".repeat(5_000));
    assert!(refusal(&properties).contains("nests deeper"));
    let long_pattern = format!("MATCH (a){} RETURN a", "-->()".repeat(100));
    let message = refusal(&long_pattern);
    assert!(message.contains("at most 32 relationships"), "{message}");
    // Doubling a string per step is charged for what it builds.
    let doubling = "RETURN size(reduce(s = 'xxxxxxxxxxxxxxxx', i IN range(1, 64) | s + s)) AS n";
    assert!(
        refusal(doubling).contains("units of work"),
        "{}",
        refusal(doubling)
    );
    let huge = format!(
        "MATCH (p:Product) WHERE p.productName = '{}' RETURN p",
        "x".repeat(100_000)
    );
    assert!(refusal(&huge).contains("bytes long"));
    assert!(cypher::parse("").is_err());
    assert!(cypher::parse("MATCH (p:Product").is_err());
}
