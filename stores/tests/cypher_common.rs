//! Shared by the Cypher tests: Northwind loaded into a [`MemoryGraph`] from the CSVs, with
//! the property types of the Neo4j Northwind example graph the text2cypher queries were
//! written against.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use kgmesh_schemas::graph::Value;
use kgmesh_stores::cypher::MemoryGraph;

pub fn data_dir() -> PathBuf {
    let dir = std::env::var("KGMESH_NORTHWIND_DIR")
        .unwrap_or_else(|_| "/work/shared/data/northwind".into());
    PathBuf::from(dir)
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

/// RFC 4180 fields; quoted fields may hold commas, doubled quotes and newlines.
pub fn read_csv(path: &Path) -> Vec<HashMap<String, String>> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
    let mut records: Vec<Vec<String>> = Vec::new();
    let mut record = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if quoted {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    field.push('"');
                    chars.next();
                } else {
                    quoted = false;
                }
            } else {
                field.push(c);
            }
            continue;
        }
        match c {
            '"' => quoted = true,
            ',' => record.push(std::mem::take(&mut field)),
            '\r' => {}
            '\n' => {
                record.push(std::mem::take(&mut field));
                records.push(std::mem::take(&mut record));
            }
            other => field.push(other),
        }
    }
    if !field.is_empty() || !record.is_empty() {
        record.push(field);
        records.push(record);
    }
    let header = records.remove(0);
    records
        .into_iter()
        .filter(|record| record.len() > 1)
        .map(|record| header.iter().cloned().zip(record).collect())
        .collect()
}

#[derive(Clone, Copy)]
enum Kind {
    Str,
    Int,
    Float,
    Bool,
}

fn typed(raw: &str, kind: Kind) -> Value {
    if raw == "NULL" || raw.is_empty() {
        return Value::Null;
    }
    match kind {
        Kind::Str => Value::String(raw.to_string()),
        Kind::Int => raw.parse().map(Value::Int).unwrap_or(Value::Null),
        Kind::Float => raw.parse().map(Value::Float).unwrap_or(Value::Null),
        Kind::Bool => Value::Bool(raw != "0"),
    }
}

fn properties(
    row: &HashMap<String, String>,
    kinds: &[(&str, Kind)],
    skip: &[&str],
) -> Vec<(String, Value)> {
    let mut props: Vec<(String, Value)> = row
        .iter()
        .filter(|(key, _)| !skip.contains(&key.as_str()))
        .map(|(key, raw)| {
            let kind = kinds
                .iter()
                .find(|(name, _)| name == key)
                .map(|(_, kind)| *kind)
                .unwrap_or(Kind::Str);
            (key.clone(), typed(raw, kind))
        })
        .collect();
    props.sort_by(|a, b| a.0.cmp(&b.0));
    props
}

/// Northwind as a property graph: Product, Category, Supplier, Customer, Order, Employee;
/// (Product)-[:PART_OF]->(Category), (Supplier)-[:SUPPLIES]->(Product),
/// (Customer)-[:PURCHASED]->(Order), (Order)-[:ORDERS {unitPrice, quantity, discount}]->(Product),
/// (Employee)-[:PROCESSED]->(Order), (Employee)-[:REPORTS_TO]->(Employee).
pub fn load_northwind() -> MemoryGraph {
    let dir = data_dir().join("csv");
    let mut graph = MemoryGraph::new();
    let mut index: HashMap<(&str, String), u32> = HashMap::new();
    let product_kinds = [
        ("unitPrice", Kind::Float),
        ("unitsInStock", Kind::Int),
        ("unitsOnOrder", Kind::Int),
        ("reorderLevel", Kind::Int),
        ("discontinued", Kind::Bool),
    ];
    for (file, label, id_key, kinds, skip) in [
        (
            "categories.csv",
            "Category",
            "categoryID",
            &[][..],
            &["picture"][..],
        ),
        ("suppliers.csv", "Supplier", "supplierID", &[][..], &[][..]),
        (
            "products.csv",
            "Product",
            "productID",
            &product_kinds[..],
            &[][..],
        ),
        ("customers.csv", "Customer", "customerID", &[][..], &[][..]),
        ("orders.csv", "Order", "orderID", &[][..], &[][..]),
        (
            "employees.csv",
            "Employee",
            "employeeID",
            &[][..],
            &["photo"][..],
        ),
    ] {
        for row in read_csv(&dir.join(file)) {
            let id = row.get(id_key).cloned().unwrap_or_default();
            let node = graph.add_node(&[label], properties(&row, kinds, skip));
            index.insert((label, id), node);
        }
    }
    let link = |graph: &mut MemoryGraph,
                from: Option<&u32>,
                rel: &str,
                to: Option<&u32>,
                props: Vec<(String, Value)>| {
        if let (Some(from), Some(to)) = (from, to) {
            graph.add_edge(*from, rel, *to, props);
        }
    };
    for row in read_csv(&dir.join("products.csv")) {
        let product = index.get(&("Product", row["productID"].clone())).copied();
        let category = index.get(&("Category", row["categoryID"].clone())).copied();
        let supplier = index.get(&("Supplier", row["supplierID"].clone())).copied();
        link(
            &mut graph,
            product.as_ref(),
            "PART_OF",
            category.as_ref(),
            Vec::new(),
        );
        link(
            &mut graph,
            supplier.as_ref(),
            "SUPPLIES",
            product.as_ref(),
            Vec::new(),
        );
    }
    for row in read_csv(&dir.join("orders.csv")) {
        let order = index.get(&("Order", row["orderID"].clone())).copied();
        let customer = index.get(&("Customer", row["customerID"].clone())).copied();
        let employee = index.get(&("Employee", row["employeeID"].clone())).copied();
        link(
            &mut graph,
            customer.as_ref(),
            "PURCHASED",
            order.as_ref(),
            Vec::new(),
        );
        link(
            &mut graph,
            employee.as_ref(),
            "PROCESSED",
            order.as_ref(),
            Vec::new(),
        );
    }
    for row in read_csv(&dir.join("order-details.csv")) {
        let order = index.get(&("Order", row["orderID"].clone())).copied();
        let product = index.get(&("Product", row["productID"].clone())).copied();
        let props = properties(&row, &[("quantity", Kind::Int)], &[]);
        link(
            &mut graph,
            order.as_ref(),
            "ORDERS",
            product.as_ref(),
            props,
        );
    }
    for row in read_csv(&dir.join("employees.csv")) {
        let employee = index.get(&("Employee", row["employeeID"].clone())).copied();
        let boss = index.get(&("Employee", row["reportsTo"].clone())).copied();
        link(
            &mut graph,
            employee.as_ref(),
            "REPORTS_TO",
            boss.as_ref(),
            Vec::new(),
        );
    }
    graph
}
