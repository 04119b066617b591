//! Shared by the Cypher tests: the Northwind data set and its 822 queries.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use kgmesh_stores::cypher::{MemoryGraph, PropertyGraph};
use kgmesh_stores::embedded::load::{load_graph, KgFormat, LoadOptions};

/// `KGMESH_NORTHWIND_DIR`, else `northwind/` of the shared data sets.
pub fn data_dir() -> PathBuf {
    std::env::var_os("KGMESH_NORTHWIND_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(kgmesh_testkit::data::northwind_dir)
}

/// The 822 question/Cypher pairs.
pub fn northwind_queries() -> Vec<(String, String)> {
    let path = data_dir().join("text2cypher.jsonl");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| {
        panic!(
            "cannot read {}: {error}; set KGMESH_NORTHWIND_DIR",
            path.display()
        )
    });
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).expect("valid JSON line");
            (
                value["question"].as_str().unwrap_or_default().to_string(),
                value["cypher"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// Northwind as loaded by the embedded store with its mapping file
/// (`examples/northwind.toml`: the labels, relationship types and property types of the
/// Neo4j Northwind example graph), copied into a [`MemoryGraph`] so that tests can run
/// the executor on the simplest [`PropertyGraph`] implementation.
pub fn load_northwind() -> MemoryGraph {
    let mapping = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/northwind.toml");
    let options = LoadOptions {
        format: Some(KgFormat::PropertyCsv),
        mapping: Some(mapping),
        ..LoadOptions::default()
    };
    let (embedded, _) =
        load_graph(&data_dir().join("csv"), &options).expect("Northwind loads with its mapping");
    let mut graph = MemoryGraph::new();
    let count = PropertyGraph::node_count(&embedded) as u32;
    for node in 0..count {
        let labels: Vec<String> = PropertyGraph::node_labels(&embedded, node)
            .into_iter()
            .map(|label| PropertyGraph::label_name(&embedded, label).to_string())
            .collect();
        let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
        let added = graph.add_node(&labels, PropertyGraph::node_properties(&embedded, node));
        assert_eq!(added, node);
    }
    for node in 0..count {
        let mut edges = Vec::new();
        PropertyGraph::edges(&embedded, node, true, None, &mut edges);
        for edge in edges {
            let rel_type = PropertyGraph::rel_type_name(&embedded, edge.rel_type).to_string();
            graph.add_edge(
                edge.start,
                &rel_type,
                edge.end,
                PropertyGraph::edge_properties(&embedded, &edge),
            );
        }
    }
    graph
}
