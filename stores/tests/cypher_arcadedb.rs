//! Differential test: the 822 Northwind queries on the embedded store (loaded with the
//! Northwind mapping) and on ArcadeDB (the `arcadedb-embedded` Python package, which
//! bundles ArcadeDB and a JRE), loaded with the very same nodes, relationships and typed
//! properties. Rows are compared as multisets, in order only where the query's final
//! RETURN has ORDER BY. Prints the identical share, the mismatch categories and both
//! engines' execution times.
//!
//! Needs `pip install arcadedb-embedded`; fails with that instruction when it is missing.
//! Run with `cargo test -p kgmesh-stores --test cypher_arcadedb -- --ignored --nocapture`.

#[path = "cypher_common.rs"]
mod common;
#[path = "cypher_compare.rs"]
mod compare;

use compare::{compare, value_json, CompareOptions};

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use kgmesh_schemas::graph::Value;
use kgmesh_stores::cypher::PropertyGraph;
use kgmesh_stores::embedded::load::{load_graph, KgFormat, LoadOptions};
use kgmesh_stores::embedded::EmbeddedGraph;
use serde_json::{json, Value as Json};

const ORACLE: &str = r#"
import json, sys, time, os, tempfile
try:
    import arcadedb_embedded as arcadedb
except ImportError:
    print("arcadedb-embedded is not installed: pip install arcadedb-embedded", file=sys.stderr)
    sys.exit(3)
graph = json.load(open(sys.argv[1]))
queries = json.load(open(sys.argv[2]))
db = arcadedb.create_database(os.path.join(tempfile.mkdtemp(), "northwind"))
for label in graph["labels"]:
    db.command("sql", "CREATE VERTEX TYPE `%s`" % label)
for rel in graph["types"]:
    db.command("sql", "CREATE EDGE TYPE `%s`" % rel)
vertices = []
with db.transaction():
    for node in graph["nodes"]:
        vertex = db.new_vertex(node["label"])
        for key, value in node["props"].items():
            vertex.set(key, value)
        vertex.save()
        vertices.append(vertex)
with db.transaction():
    for edge in graph["edges"]:
        created = vertices[edge["start"]].new_edge(edge["type"], vertices[edge["end"]])
        for key, value in edge["props"].items():
            created.set(key, value)
        created.save()

def java_class(value):
    try:
        return str(value.getClass().getName())
    except Exception:
        return ""

def canon(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [canon(item) for item in value]
    if isinstance(value, dict):
        return {str(key): canon(item) for key, item in value.items()}
    name = java_class(value)
    if "Vertex" in name:
        return {"$node": str(value.getTypeName()), "props": canon(arcadedb.convert_java_to_python(value.propertiesAsMap()))}
    if "Edge" in name:
        return {"$rel": str(value.getTypeName()), "props": canon(arcadedb.convert_java_to_python(value.propertiesAsMap()))}
    try:
        converted = arcadedb.convert_java_to_python(value)
        if converted is not value:
            return canon(converted)
    except Exception:
        pass
    return {"$other": str(value)}

def run(query):
    rows, columns = [], None
    for result in db.query("opencypher", query):
        record = result.to_dict()
        if columns is None:
            columns = list(record.keys())
        rows.append([canon(record[column]) for column in columns])
    return rows, columns or []

out = []
for query in queries:
    try:
        rows, columns = run(query)
        out.append({"rows": rows, "columns": columns})
    except Exception as error:
        out.append({"error": str(error).splitlines()[0][:300] if str(error) else type(error).__name__})
# A second, timed pass over the queries that ran: warm caches and JIT, as a server would be.
for query, entry in zip(queries, out):
    if "error" in entry:
        continue
    started = time.perf_counter()
    produced = 0
    for _ in db.query("opencypher", query):
        produced += 1
    entry["millis"] = (time.perf_counter() - started) * 1000
json.dump(out, open(sys.argv[3], "w"))
db.close()
"#;

fn northwind_embedded() -> EmbeddedGraph {
    let mapping = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/northwind.toml");
    let options = LoadOptions {
        format: Some(KgFormat::PropertyCsv),
        mapping: Some(mapping),
        ..LoadOptions::default()
    };
    let (graph, _) = load_graph(&common::data_dir().join("csv"), &options)
        .expect("Northwind loads with its mapping");
    graph
}

/// The graph as the oracle script loads it.
fn export(graph: &EmbeddedGraph) -> Json {
    let props = |properties: Vec<(String, Value)>| -> Json {
        Json::Object(
            properties
                .iter()
                .map(|(k, v)| (k.clone(), value_json(v)))
                .collect(),
        )
    };
    let mut labels: Vec<String> = Vec::new();
    let mut types: Vec<String> = Vec::new();
    let mut nodes = Vec::new();
    let mut edges = Vec::new();
    for node in 0..PropertyGraph::node_count(graph) as u32 {
        let label = PropertyGraph::node_labels(graph, node)
            .first()
            .map(|label| PropertyGraph::label_name(graph, *label).to_string())
            .unwrap_or_else(|| "Node".into());
        if !labels.contains(&label) {
            labels.push(label.clone());
        }
        nodes.push(
            json!({"label": label, "props": props(PropertyGraph::node_properties(graph, node))}),
        );
        let mut out = Vec::new();
        PropertyGraph::edges(graph, node, true, None, &mut out);
        for edge in out {
            let rel_type = PropertyGraph::rel_type_name(graph, edge.rel_type).to_string();
            if !types.contains(&rel_type) {
                types.push(rel_type.clone());
            }
            edges.push(
                json!({"start": edge.start, "end": edge.end, "type": rel_type,
                "props": props(PropertyGraph::edge_properties(graph, &edge))}),
            );
        }
    }
    json!({"labels": labels, "types": types, "nodes": nodes, "edges": edges})
}

#[test]
#[ignore = "starts ArcadeDB (JVM); run with --ignored"]
fn embedded_matches_arcadedb_on_northwind() {
    let graph = northwind_embedded();
    let queries: Vec<String> = common::northwind_queries()
        .into_iter()
        .map(|(_, cypher)| cypher)
        .collect();
    let dir = tempfile::tempdir().expect("temp dir");
    let graph_file = dir.path().join("graph.json");
    let queries_file = dir.path().join("queries.json");
    let script_file = dir.path().join("oracle.py");
    let out_file = dir.path().join("out.json");
    std::fs::write(&graph_file, export(&graph).to_string()).unwrap();
    std::fs::write(&queries_file, Json::from(queries.clone()).to_string()).unwrap();
    std::fs::write(&script_file, ORACLE).unwrap();
    let python = std::env::var("KGMESH_PYTHON").unwrap_or_else(|_| "python3".into());
    let started = Instant::now();
    let status = Command::new(&python)
        .arg(&script_file)
        .arg(&graph_file)
        .arg(&queries_file)
        .arg(&out_file)
        .status()
        .unwrap_or_else(|error| panic!("cannot run {python} ({error}); install Python 3 and `pip install arcadedb-embedded`"));
    assert!(
        status.success(),
        "the ArcadeDB oracle failed ({status}); is `pip install arcadedb-embedded` done?"
    );
    println!(
        "arcadedb: loaded and ran {} queries in {:.1?}",
        queries.len(),
        started.elapsed()
    );
    let theirs: Vec<Json> =
        serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
    assert_eq!(theirs.len(), queries.len());

    let options = CompareOptions {
        sort_columns: false,
        strip_node_properties: &[],
        their_timing: "query + iterating its result set from Python",
    };
    let (ran, identical, equivalent) = compare(&graph, &queries, &theirs, "arcadedb", &options);
    assert!(ran > 0, "ArcadeDB ran nothing: the oracle is broken");
    assert!(identical * 100 >= ran * 75, "identical share under 75%");
    assert!(
        equivalent * 100 >= ran * 90,
        "identical-or-tie-equivalent share under 90%"
    );
}
