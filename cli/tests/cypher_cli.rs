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

/// Ships operated by lines, as a user's N-Triples file: IRIs, `rdfs:label` names, no
/// node labels.
fn fleet(dir: &std::path::Path) -> String {
    let path = dir.join("fleet.nt");
    let label = "<http://www.w3.org/2000/01/rdf-schema#label>";
    let text = format!(
        "<http://example.org/ship1> <http://example.org/operatedBy> <http://example.org/line1> .\n\
         <http://example.org/ship2> <http://example.org/operatedBy> <http://example.org/line1> .\n\
         <http://example.org/ship1> {label} \"Aurora\" .\n\
         <http://example.org/ship2> {label} \"Borealis\" .\n\
         <http://example.org/line1> {label} \"Northern Line\" .\n"
    );
    std::fs::write(&path, text).expect("the N-Triples file is written");
    path.display().to_string()
}

/// The `hint:` line of a refusal.
fn hint_line(stderr: &str) -> &str {
    stderr
        .lines()
        .find_map(|line| line.strip_prefix("hint: "))
        .unwrap_or_else(|| panic!("no hint in {stderr}"))
}

/// What the hint offers after `did you mean ` (up to its `?`).
fn suggested(hint: &str) -> &str {
    let start = hint.find("did you mean ").expect("a suggestion") + "did you mean ".len();
    let end = hint[start..].find('?').expect("the suggestion ends with ?");
    &hint[start..start + end]
}

#[test]
fn an_unbounded_pattern_is_refused_with_the_bound_to_write() {
    for (query, written) in [
        ("MATCH (f {name: 'Heat'})-[*]->(x) RETURN x.name", "[*]"),
        (
            "MATCH (f {name: 'Heat'})-[*2..]->(x) RETURN x.name",
            "[*2..]",
        ),
        (
            "MATCH (f {name: 'Heat'})-[:directed_by*]->(x) RETURN x.name",
            "[:directed_by*]",
        ),
    ] {
        let (code, stdout, stderr) = cypher(&[query]);
        assert_eq!(code, 1, "{query}: {stdout}");
        assert!(
            stderr.contains(&format!("{written} has no upper bound")),
            "{stderr}"
        );
        let hint = hint_line(&stderr);
        let bounded = hint
            .rsplit("e.g. ")
            .next()
            .unwrap_or_else(|| panic!("no example in {hint}"));
        assert!(bounded.starts_with('[') && bounded.ends_with(']'), "{hint}");
        // The bound the hint writes runs.
        let (code, stdout, stderr) = cypher(&[&query.replacen(written, bounded, 1)]);
        assert_eq!(code, 0, "{bounded}: {stderr}");
        // One hop and more reach Heat's director; two and more go past him.
        if !written.contains("2..") {
            assert!(
                stdout.lines().any(|l| l.trim() == "Michael Mann"),
                "{stdout}"
            );
        }
    }
}

#[test]
fn a_property_typo_is_refused_with_the_key_meant() {
    // The sample is a graph of triples: its nodes have their `name` and nothing else.
    let (code, stdout, stderr) = cypher(&["MATCH (s) RETURN s.nme LIMIT 3"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stderr.contains("property .nme does not exist on any node"),
        "{stderr}"
    );
    let hint = hint_line(&stderr);
    assert_eq!(suggested(hint), ".name", "{hint}");
    let (code, stdout, stderr) = cypher(&["MATCH (s {name: 'Heat'}) RETURN s.name", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("\"Heat\""), "{stdout}");
}

#[test]
fn an_iri_relationship_is_suggested_back_quoted_and_pastes() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let kg = fleet(dir.path());
    let query = "MATCH (s)-[:operatedBy]->(l) RETURN s.name AS ship ORDER BY ship";
    let (code, stdout, stderr) = cypher(&["--kg", &kg, query]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stderr.contains("relationship :operatedBy does not exist"),
        "{stderr}"
    );
    let offered = suggested(hint_line(&stderr));
    assert_eq!(offered, ":`http://example.org/operatedBy`", "{stderr}");
    let (code, stdout, stderr) = cypher(&["--kg", &kg, &query.replace(":operatedBy", offered)]);
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<&str> = stdout.lines().map(str::trim_end).collect();
    assert_eq!(lines[..3], ["ship", "Aurora", "Borealis"], "{stdout}");
}

#[test]
fn a_label_on_a_graph_of_triples_says_the_graph_has_none() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let kg = fleet(dir.path());
    let (code, stdout, stderr) = cypher(&["--kg", &kg, "MATCH (s:Ship) RETURN s.name"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stderr.contains("label :Ship does not exist"), "{stderr}");
    let hint = hint_line(&stderr);
    assert!(
        hint.starts_with("this graph has no node labels (loaded from triples)"),
        "{hint}"
    );
    // Its examples are queries of this graph, and they answer.
    let example = hint
        .split("e.g. ")
        .nth(1)
        .and_then(|rest| rest.split(", or ").next())
        .unwrap_or_else(|| panic!("no example in {hint}"));
    let (code, stdout, stderr) = cypher(&["--kg", &kg, example]);
    assert_eq!(code, 0, "{example}: {stderr}");
    assert!(stdout.contains("Northern Line"), "{stdout}");
    // The same on the bundled TSV sample.
    let (code, _, stderr) = cypher(&["MATCH (f:Film) RETURN f.name"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("this graph has no node labels"), "{stderr}");
}

#[test]
fn ask_turns_a_comparative_into_its_operator_and_keeps_a_year_an_integer() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    std::fs::write(
        dir.path().join("films.csv"),
        "title,year\nHeat,1995\nDrive,2011\nSkyfall,2012\nGravity,2013\nArrival,2016\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("kgmesh-mapping.toml"),
        "[[nodes]]\nlabel = \"Film\"\nfile = \"films.csv\"\nkey = \"title\"\nname = \"title\"\ntypes = { year = \"int\" }\n",
    )
    .unwrap();
    let kg = dir.path().display().to_string();
    for (question, operator, value, answers) in [
        (
            "Which films were released after 2012?",
            ">",
            "2012",
            &["Arrival", "Gravity"][..],
        ),
        (
            "Which films were released since 2012?",
            ">=",
            "2012",
            &["Arrival", "Gravity", "Skyfall"][..],
        ),
        (
            "Which films were released before 2012?",
            "<",
            "2012",
            &["Drive", "Heat"][..],
        ),
    ] {
        let mut command = kgmesh();
        command
            .env("KGMESH__EMBEDDER__KIND", "none")
            .args(["cypher", "--kg", &kg, "--ask", question]);
        let (code, stdout, stderr) = run(command);
        assert_eq!(code, 0, "{question}: {stderr}");
        let query = stderr
            .lines()
            .find_map(|l| l.strip_prefix("query:"))
            .unwrap_or_else(|| panic!("no query in {stderr}"));
        assert!(
            query.contains(&format!("x.`year` {operator} $x")),
            "{question}: {query}"
        );
        assert!(
            stderr.contains(&format!("params: $x = {value}\n")),
            "{question}: {stderr}"
        );
        let mut rows: Vec<&str> = stdout
            .lines()
            .skip(1)
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('('))
            .collect();
        rows.sort_unstable();
        assert_eq!(rows, answers, "{question}: {stderr}");
    }
}
