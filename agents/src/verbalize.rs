//! One compact, deterministic text form for everything retrieved, so that the context a
//! model (or a person) reads is small and the same evidence always reads the same way:
//!
//! - triplets sharing head and relation are merged: `h -> r -> t1 | t2`;
//! - paths: `a -> r1 -> b <- r2 <- c` (`<- r <-` marks an edge followed tail → head),
//!   paths differing only in their last entity merged the same way;
//! - query results: the query, a header, one line per row, and a note when truncated.
//!
//! Lines are de-duplicated in first-seen order. [`estimate_tokens`] is the budget's
//! yardstick.
//!
//! ```
//! use kgmesh_agents::verbalize::verbalize_triples;
//! use kgmesh_schemas::{graph::{Entity, Triple}, NodeId};
//! let e = |id, name: &str| Entity { id: NodeId(id), name: name.into() };
//! let triples = [
//!     Triple { head: e(1, "Heat"), relation: "starred_actors".into(), tail: e(2, "Al Pacino") },
//!     Triple { head: e(1, "Heat"), relation: "starred_actors".into(), tail: e(3, "Robert De Niro") },
//! ];
//! assert_eq!(verbalize_triples(&triples), vec!["Heat -> starred_actors -> Al Pacino | Robert De Niro"]);
//! ```

use std::collections::{HashMap, HashSet};

use kgmesh_schemas::{
    graph::{Entity, Path, Rows, Triple, Value},
    messages::context::{Evidence, EvidenceItem},
    render::{self, Style},
    NodeId,
};

/// A rough token count (about four characters per token for English and names).
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// Groups items by key in first-seen order, de-duplicating values per key.
struct Grouped<V> {
    order: Vec<String>,
    values: HashMap<String, (Vec<V>, HashSet<V>)>,
}

impl<V: Clone + Eq + std::hash::Hash> Grouped<V> {
    fn new() -> Self {
        Self {
            order: Vec::new(),
            values: HashMap::new(),
        }
    }

    fn push(&mut self, key: String, value: V) {
        let entry = self.values.entry(key.clone()).or_insert_with(|| {
            self.order.push(key);
            (Vec::new(), HashSet::new())
        });
        if entry.1.insert(value.clone()) {
            entry.0.push(value);
        }
    }

    fn into_groups(mut self) -> Vec<(String, Vec<V>)> {
        self.order
            .into_iter()
            .filter_map(|key| self.values.remove(&key).map(|(values, _)| (key, values)))
            .collect()
    }
}

/// `h -> r -> t1 | t2`, one line per (head, relation) in first-seen order.
pub fn verbalize_triples(triples: &[Triple]) -> Vec<String> {
    let mut grouped = Grouped::new();
    for triple in triples {
        let mut prefix = triple.head.name.clone();
        Style::CONTEXT.push_edge(&mut prefix, &triple.relation, false);
        grouped.push(prefix, triple.tail.name.clone());
    }
    grouped
        .into_groups()
        .into_iter()
        .map(|(prefix, tails)| format!("{prefix}{}", tails.join(" | ")))
        .collect()
}

/// One path as text (no merging).
pub fn verbalize_path(path: &Path) -> String {
    render::path_line(path, &Style::CONTEXT)
}

/// Paths as text, those that differ only in their last entity merged with `|`.
pub fn verbalize_paths(paths: &[Path]) -> Vec<String> {
    let mut grouped = Grouped::new();
    for path in paths {
        if path.steps.is_empty() {
            grouped.push(path.start.name.clone(), String::new());
        } else {
            grouped.push(
                render::path_prefix(path, &Style::CONTEXT),
                path.end().name.clone(),
            );
        }
    }
    grouped
        .into_groups()
        .into_iter()
        .map(|(prefix, ends)| {
            let ends: Vec<String> = ends.into_iter().filter(|e| !e.is_empty()).collect();
            format!("{prefix}{}", ends.join(" | "))
        })
        .collect()
}

/// `Graph Query: …`, a header line, up to [`Style::CONTEXT`]'s `max_rows` rows, and a
/// note when rows were left out (by the store's row budget or here).
pub fn verbalize_rows(cypher: &str, rows: &Rows) -> String {
    render::rows_text(cypher, rows, &Style::CONTEXT)
}

/// Evidence as context lines: triplets merged together, then paths merged, then query
/// results, each line once, in first-seen order within its kind.
pub fn verbalize_evidence(evidence: &[Evidence]) -> Vec<String> {
    let mut triples = Vec::new();
    let mut paths = Vec::new();
    let mut queries = Vec::new();
    for item in evidence {
        match &item.item {
            EvidenceItem::Triple(triple) => triples.push(triple.clone()),
            EvidenceItem::Path(path) => paths.push(path.clone()),
            EvidenceItem::Query { cypher, rows, .. } => queries.push(verbalize_rows(cypher, rows)),
            EvidenceItem::Excerpt(_) => queries.push(render::line(&item.item, &Style::CONTEXT)),
        }
    }
    let mut seen = HashSet::new();
    verbalize_triples(&triples)
        .into_iter()
        .chain(verbalize_paths(&paths))
        .chain(queries)
        .filter(|line| seen.insert(line.clone()))
        .collect()
}

/// The context as one text, and its estimated size in tokens.
pub fn context_text(evidence: &[Evidence]) -> (String, usize) {
    let text = verbalize_evidence(evidence).join("\n");
    let tokens = estimate_tokens(&text);
    (text, tokens)
}

/// Every graph entity named by the evidence (heads, tails, path nodes, node values in
/// rows), de-duplicated in first-seen order. Answer candidates for summarizers and
/// recall measurements.
pub fn evidence_entities(evidence: &[Evidence]) -> Vec<Entity> {
    let mut seen: HashSet<NodeId> = HashSet::new();
    let mut out = Vec::new();
    let mut push = |entity: &Entity| {
        if seen.insert(entity.id) {
            out.push(entity.clone());
        }
    };
    for item in evidence {
        match &item.item {
            EvidenceItem::Triple(triple) => {
                push(&triple.head);
                push(&triple.tail);
            }
            EvidenceItem::Path(path) => {
                push(&path.start);
                for step in &path.steps {
                    push(&step.node);
                }
            }
            EvidenceItem::Query { rows, .. } => {
                for value in rows.rows.iter().flatten() {
                    if let Value::Node(node) = value {
                        if let Some(name) = node.name() {
                            push(&Entity { id: node.id, name });
                        }
                    }
                }
            }
            EvidenceItem::Excerpt(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use kgmesh_schemas::graph::PathStep;

    use super::*;

    fn e(id: u64, name: &str) -> Entity {
        Entity {
            id: NodeId(id),
            name: name.to_owned(),
        }
    }

    fn t(h: (u64, &str), r: &str, tl: (u64, &str)) -> Triple {
        Triple {
            head: e(h.0, h.1),
            relation: r.to_owned(),
            tail: e(tl.0, tl.1),
        }
    }

    #[test]
    fn triples_merge_by_head_and_relation_in_first_seen_order() {
        let triples = vec![
            t((1, "Heat"), "directed_by", (2, "Michael Mann")),
            t((1, "Heat"), "starred_actors", (3, "Al Pacino")),
            t((1, "Heat"), "directed_by", (2, "Michael Mann")),
            t((1, "Heat"), "starred_actors", (4, "Robert De Niro")),
        ];
        assert_eq!(
            verbalize_triples(&triples),
            vec![
                "Heat -> directed_by -> Michael Mann",
                "Heat -> starred_actors -> Al Pacino | Robert De Niro",
            ]
        );
    }

    #[test]
    fn paths_mark_inverse_edges_and_merge_their_ends() {
        let path = |end: (u64, &str)| Path {
            start: e(2, "Michael Mann"),
            steps: vec![
                PathStep {
                    relation: "directed_by".into(),
                    inverse: true,
                    node: e(1, "Heat"),
                },
                PathStep {
                    relation: "starred_actors".into(),
                    inverse: false,
                    node: e(end.0, end.1),
                },
            ],
        };
        let paths = vec![
            path((3, "Al Pacino")),
            path((4, "Robert De Niro")),
            path((3, "Al Pacino")),
        ];
        assert_eq!(
            verbalize_path(&paths[0]),
            "Michael Mann <- directed_by <- Heat -> starred_actors -> Al Pacino"
        );
        assert_eq!(
            verbalize_paths(&paths),
            vec!["Michael Mann <- directed_by <- Heat -> starred_actors -> Al Pacino | Robert De Niro"]
        );
    }

    #[test]
    fn rows_show_a_header_and_say_when_truncated() {
        let rows = Rows {
            columns: vec!["m.name".into(), "year".into()],
            rows: (0..3)
                .map(|i| vec![Value::String(format!("m{i}")), Value::Int(2000 + i)])
                .collect(),
            truncated: true,
        };
        assert_eq!(
            render::rows_text(
                "MATCH (m) RETURN m.name, m.year",
                &rows,
                &Style {
                    max_rows: 2,
                    ..Style::CONTEXT
                }
            ),
            "Graph Query: MATCH (m) RETURN m.name, m.year\nm.name | year\nm0 | 2000\nm1 | 2001\n(truncated: 2 rows shown, more exist)"
        );
    }

    #[test]
    fn evidence_lines_are_deduplicated_and_tokens_estimated() {
        let evidence = |item| Evidence {
            source: "test".into(),
            score: 1.0,
            item,
        };
        let items = vec![
            evidence(EvidenceItem::Triple(t(
                (1, "Heat"),
                "directed_by",
                (2, "Michael Mann"),
            ))),
            evidence(EvidenceItem::Triple(t(
                (1, "Heat"),
                "directed_by",
                (2, "Michael Mann"),
            ))),
        ];
        let (text, tokens) = context_text(&items);
        assert_eq!(text, "Heat -> directed_by -> Michael Mann");
        assert_eq!(tokens, 9);
        assert_eq!(
            evidence_entities(&items),
            vec![e(1, "Heat"), e(2, "Michael Mann")]
        );
    }
}
