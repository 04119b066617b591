//! `kgmesh cypher` through the real binary: rows of a read-only query on the bundled
//! sample, parameters, the row budget, and refused queries explained.

#[path = "serve_support/mod.rs"]
mod support;

use support::*;

fn cypher(args: &[&str]) -> (i32, String, String) {
    kgmesh_run(&[&["cypher"], args].concat())
}

#[test]
fn a_read_query_prints_its_rows_by_name() {
    let (code, stdout, stderr) = cypher(&[
        "MATCH (f)-[:directed_by]->(d {name: $who}) RETURN f.name AS film ORDER BY film",
        "--param",
        "who=Michael Mann",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<&str> = stdout.lines().map(str::trim_end).collect();
    assert_eq!(lines.first(), Some(&"film"), "{stdout}");
    assert!(lines.contains(&"Heat"), "{stdout}");
    assert!(lines.contains(&"Collateral"), "{stdout}");
    assert!(
        lines.last().is_some_and(|l| l.ends_with("rows)")),
        "{stdout}"
    );
}

#[test]
fn json_rows_say_when_the_row_budget_cut_them() {
    let (code, stdout, stderr) = cypher(&["MATCH (n) RETURN n.name", "--max-rows", "2", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let rows: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(rows["rows"].as_array().map(Vec::len), Some(2), "{rows}");
    assert_eq!(rows["truncated"], true, "{rows}");
    assert_eq!(rows["columns"][0], "n.name");
}

#[test]
fn writes_and_broken_queries_are_refused_with_the_reason() {
    let (code, stdout, stderr) = cypher(&["MATCH (n) DETACH DELETE n"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stderr.contains("read-only"), "{stderr}");
    assert!(stderr.contains("hint:"), "{stderr}");
    let (code, _, stderr) = cypher(&["MATCH (n RETURN n"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("line 1, column"), "{stderr}");
    let (code, _, stderr) = cypher(&["MATCH (n) RETURN n", "--param", "no-equals-sign"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("NAME=VALUE"), "{stderr}");
}
