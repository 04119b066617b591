//! Property tests: no input string makes the parser, the validator or the executor panic
//! or run past its deadline. Case counts scale with `PROPTEST_CASES` for long runs, e.g.
//! `PROPTEST_CASES=20000 cargo test -p kgmesh-stores --release --test cypher_fuzz`.

#[path = "cypher_common.rs"]
mod common;

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use kgmesh_schemas::graph::GraphSchema;
use kgmesh_stores::cypher::{self, MemoryGraph};
use kgmesh_stores::QueryLimits;
use proptest::prelude::*;

fn northwind() -> &'static (MemoryGraph, GraphSchema, Vec<String>) {
    static GRAPH: OnceLock<(MemoryGraph, GraphSchema, Vec<String>)> = OnceLock::new();
    GRAPH.get_or_init(|| {
        let graph = common::load_northwind();
        let schema = graph.schema();
        let queries = common::northwind_queries()
            .into_iter()
            .map(|(_, cypher)| cypher)
            .collect();
        (graph, schema, queries)
    })
}

const DEADLINE: Duration = Duration::from_millis(200);

/// Every stage on one input; returns normally whatever the input (errors are fine).
fn exercise(text: &str) {
    let (graph, schema, _) = northwind();
    let limits = QueryLimits {
        max_rows: 100,
        timeout: DEADLINE,
        max_depth: 3,
    };
    let started = Instant::now();
    let Ok(query) = cypher::parse(text) else {
        return;
    };
    // The executor must also survive queries the validator would refuse.
    let _ = cypher::validate(&query, schema, &limits);
    let _ = cypher::execute(graph, &query, &[], &limits);
    let elapsed = started.elapsed();
    assert!(
        elapsed < DEADLINE * 10,
        "took {elapsed:?} (deadline {DEADLINE:?}) on: {text}"
    );
}

const VOCABULARY: &[&str] = &[
    "MATCH",
    "OPTIONAL MATCH",
    "WHERE",
    "RETURN",
    "WITH",
    "UNWIND",
    "AS",
    "ORDER BY",
    "DESC",
    "SKIP",
    "LIMIT",
    "DISTINCT",
    "AND",
    "OR",
    "NOT",
    "XOR",
    "IN",
    "IS NULL",
    "IS NOT NULL",
    "STARTS WITH",
    "CONTAINS",
    "=~",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
    "EXISTS",
    "COUNT",
    "count(*)",
    "collect(",
    "sum(",
    "size(",
    "toLower(",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ".",
    ":",
    "|",
    "-",
    "->",
    "<-",
    "*",
    "..",
    "=",
    "<>",
    "<",
    ">",
    "+",
    "/",
    "%",
    "^",
    "p",
    "o",
    "c",
    "n",
    "x",
    "Product",
    "Order",
    "Category",
    "Supplier",
    "ORDERS",
    "PART_OF",
    "SUPPLIES",
    "productName",
    "unitPrice",
    "quantity",
    "'Chai'",
    "'a'",
    "0",
    "1",
    "3",
    "2.5",
    "null",
    "true",
    "$p",
    "*1..3",
    "CREATE",
    "DELETE",
    "SET",
    "CALL",
    "//",
    "/*",
    "*/",
    ";",
    "\"",
    "`",
    "\u{41C}",
    "é",
];

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(VOCABULARY), 0..40)
        .prop_map(|tokens| tokens.join(" "))
}

/// A Northwind query with a few random edits.
fn mutated_query() -> impl Strategy<Value = String> {
    let count = 822usize;
    (
        0..count,
        prop::collection::vec(
            (0usize..400, 0usize..12, prop::sample::select(VOCABULARY)),
            1..4,
        ),
    )
        .prop_map(|(index, edits)| {
            let (_, _, queries) = northwind();
            let mut text: Vec<char> = queries[index % queries.len()].chars().collect();
            for (at, delete, insert) in edits {
                let at = at.min(text.len());
                let end = (at + delete).min(text.len());
                text.splice(at..end, format!(" {insert} ").chars());
            }
            text.into_iter().collect()
        })
}

fn expression() -> impl Strategy<Value = String> {
    let leaf = prop::sample::select(vec![
        "a.productName",
        "a.unitPrice",
        "a.unitsInStock",
        "a.discontinued",
        "b.categoryName",
        "b.companyName",
        "r.quantity",
        "r.discount",
        "a",
        "b",
        "r",
        "1",
        "0",
        "-3",
        "2.5",
        "'Chai'",
        "''",
        "null",
        "true",
        "[1, 2, 3]",
        "{k: 1}",
        "count(*)",
        "$p",
        "x",
    ])
    .prop_map(str::to_string);
    leaf.prop_recursive(4, 24, 3, |inner| {
        let operators = prop::sample::select(vec![
            "+",
            "-",
            "*",
            "/",
            "%",
            "^",
            "=",
            "<>",
            "<",
            ">=",
            "AND",
            "OR",
            "XOR",
            "IN",
            "STARTS WITH",
            "CONTAINS",
            "=~",
        ]);
        let functions = prop::sample::select(vec![
            "toLower",
            "toUpper",
            "size",
            "toString",
            "toInteger",
            "toFloat",
            "abs",
            "round",
            "coalesce",
            "labels",
            "type",
            "id",
            "head",
            "collect",
            "sum",
            "avg",
            "min",
            "max",
            "count",
            "length",
            "nodes",
            "keys",
            "exists",
        ]);
        prop_oneof![
            (inner.clone(), operators, inner.clone())
                .prop_map(|(l, o, r)| format!("({l} {o} {r})")),
            (functions, inner.clone()).prop_map(|(f, x)| format!("{f}({x})")),
            inner.clone().prop_map(|x| format!("NOT {x}")),
            inner.clone().prop_map(|x| format!("{x} IS NULL")),
            (inner.clone(), inner.clone())
                .prop_map(|(c, x)| format!("CASE WHEN {c} THEN {x} ELSE 0 END")),
            inner
                .clone()
                .prop_map(|x| format!("[x IN [1, 2, null] WHERE x > 1 | {x}]")),
            inner
                .clone()
                .prop_map(|x| format!("all(x IN [1, 2] WHERE {x})")),
            inner.clone().prop_map(|x| format!("{x}[0]")),
            inner.prop_map(|x| format!("EXISTS {{ MATCH (a)-[:ORDERS]-(z) WHERE {x} }}")),
        ]
    })
}

/// Syntactically plausible queries over Northwind's names: they get past the parser and
/// often the validator, so the executor is what they exercise.
fn structured_query() -> impl Strategy<Value = String> {
    let labels = prop::sample::select(vec![
        "Product", "Order", "Category", "Supplier", "Customer", "Employee", "Nope",
    ]);
    let rels = prop::sample::select(vec![
        ":ORDERS",
        ":PART_OF",
        ":SUPPLIES|PART_OF",
        "",
        ":PURCHASED",
        ":NOPE",
    ]);
    let ranges = prop::sample::select(vec!["", "", "*", "*1..2", "*0..3", "*2", "*..9"]);
    let arrows = prop::sample::select(vec![("-", "->"), ("<-", "-"), ("-", "-")]);
    (
        (labels.clone(), rels, ranges, arrows, labels),
        prop::option::of(expression()),
        prop::collection::vec(expression(), 1..4),
        prop::option::of((expression(), any::<bool>())),
        prop::option::of(0u32..20),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(
                (from, rel, range, (left, right), to),
                filter,
                items,
                order,
                limit,
                optional,
                distinct,
            )| {
                let mut text = format!(
                    "{}MATCH (a:{from}){left}[r{rel}{range}]{right}(b:{to})",
                    if optional { "OPTIONAL " } else { "" }
                );
                if let Some(filter) = filter {
                    text.push_str(&format!(" WHERE {filter}"));
                }
                text.push_str(&format!(" WITH a, b, r, {} AS e", items[0]));
                text.push_str(if distinct {
                    " RETURN DISTINCT "
                } else {
                    " RETURN "
                });
                let columns: Vec<String> = items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| format!("{item} AS c{i}"))
                    .collect();
                text.push_str(&columns.join(", "));
                if let Some((key, descending)) = order {
                    text.push_str(&format!(
                        " ORDER BY {key}{}",
                        if descending { " DESC" } else { "" }
                    ));
                }
                if let Some(limit) = limit {
                    text.push_str(&format!(" LIMIT {limit}"));
                }
                text
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_strings_never_panic(text in any::<String>()) {
        exercise(&text);
    }

    #[test]
    fn token_soup_never_panics_or_hangs(text in token_soup()) {
        exercise(&text);
    }

    #[test]
    fn structured_queries_never_panic_or_hang(text in structured_query()) {
        exercise(&text);
    }

    #[test]
    fn mutated_northwind_queries_never_panic_or_hang(text in mutated_query()) {
        exercise(&text);
    }
}

#[test]
fn every_northwind_query_survives_every_truncation_point() {
    // Cutting a real query anywhere must give an error or a result, never a panic.
    let (_, _, queries) = northwind();
    for query in queries.iter().step_by(7) {
        let boundaries: Vec<usize> = query.char_indices().map(|(index, _)| index).collect();
        for cut in boundaries.into_iter().step_by(3) {
            let _ = cypher::parse(&query[..cut]);
        }
    }
}
