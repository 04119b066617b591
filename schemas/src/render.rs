//! One way to write evidence as text, in a style for each reader, so that a triple, a
//! path, a query's rows or a passage reads the same wherever it is shown:
//!
//! | style | who reads it | a path | rows |
//! |---|---|---|---|
//! | [`Style::SHOWN`] | people: replies, the console | `Heat -> directed by -> Michael Mann` (relations as [`relation_shown`]) | `Graph Query: q \| Result (c): a; b` |
//! | [`Style::CONTEXT`] | the LLM-free roles' context (and its token estimate) | `Heat -> directed_by -> Michael Mann` | `Graph Query: q`, a header line, a line per row |
//! | a prompt's style | a language model | `Heat -[directed_by]-> Michael Mann`, every graph text through the prompt's quoting | `query q returned (c): [a] [b]` |
//!
//! A triple is a path of one step; a value is [`Value::text_quoting`] with the style's
//! quoting.
//!
//! ```
//! use kgmesh_schemas::{graph::{Entity, Triple}, messages::context::EvidenceItem, render::{line, Style}, NodeId};
//! let e = |id, name: &str| Entity { id: NodeId(id), name: name.into() };
//! let triple = EvidenceItem::Triple(Triple { head: e(1, "Heat"), relation: "directed_by".into(), tail: e(2, "Michael Mann") });
//! assert_eq!(line(&triple, &Style::CONTEXT), "Heat -> directed_by -> Michael Mann");
//! ```

use crate::{
    graph::{Path, Rows, Triple, Value},
    messages::context::EvidenceItem,
    relation_text::relation_shown,
};

/// How evidence reads for one kind of reader.
#[derive(Clone, Copy)]
pub struct Style {
    /// Applied to every text taken from the graph or the documents (names, values,
    /// passages, queries): identity, or a prompt's quoting.
    pub text: fn(&str) -> String,
    /// A relation name as this reader reads it.
    pub relation: fn(&str) -> String,
    /// Written around a relation followed from head to tail, and from tail to head.
    pub forward: (&'static str, &'static str),
    pub backward: (&'static str, &'static str),
    /// Written before a passage's citation, and between it and the passage.
    pub passage: (&'static str, &'static str),
    /// How a query's result is laid out, with at most this many rows.
    pub rows: RowsLayout,
    pub max_rows: usize,
}

/// How a query's rows are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowsLayout {
    /// `Graph Query: q | Result (c1, c2): a, b; c, d …` on one line.
    Inline,
    /// `Graph Query: q`, the columns and each row on lines of their own, cells joined
    /// by ` | `, and a note when rows were left out.
    Table,
    /// `query q returned (c1, c2): [a, b] [c, d] …more rows` (or `no rows`).
    Bracketed,
}

fn same(text: &str) -> String {
    text.to_owned()
}

impl Style {
    /// What people read: relations as [`relation_shown`] (an IRI by its label or local
    /// name), arrows both ways, rows on one line.
    pub const SHOWN: Style = Style {
        text: same,
        relation: relation_shown,
        forward: (" -> ", " -> "),
        backward: (" <- ", " <- "),
        passage: ("Passage (", "): "),
        rows: RowsLayout::Inline,
        max_rows: 20,
    };

    /// The LLM-free roles' context: relations as stored, rows as a small table.
    pub const CONTEXT: Style = Style {
        text: same,
        relation: same,
        forward: (" -> ", " -> "),
        backward: (" <- ", " <- "),
        passage: ("passage ", ": "),
        rows: RowsLayout::Table,
        max_rows: 50,
    };

    /// A prompt's style: relations as stored, every graph text through `quote`.
    pub const fn prompt(quote: fn(&str) -> String) -> Style {
        Style {
            text: quote,
            relation: quote,
            forward: (" -[", "]-> "),
            backward: (" <-[", "]- "),
            passage: ("passage from ", ": "),
            rows: RowsLayout::Bracketed,
            max_rows: 20,
        }
    }

    fn value(&self, value: &Value) -> String {
        value.text_quoting(&self.text)
    }

    /// Appends one hop: the relation with its direction, then the node it reaches.
    pub fn push_edge(&self, out: &mut String, relation: &str, inverse: bool) {
        let (before, after) = if inverse { self.backward } else { self.forward };
        out.push_str(before);
        out.push_str(&(self.relation)(relation));
        out.push_str(after);
    }
}

/// One evidence item as one text.
pub fn line(item: &EvidenceItem, style: &Style) -> String {
    match item {
        EvidenceItem::Triple(triple) => triple_line(triple, style),
        EvidenceItem::Path(path) => path_line(path, style),
        EvidenceItem::Query { cypher, rows, .. } => rows_text(cypher, rows, style),
        EvidenceItem::Excerpt(excerpt) => format!(
            "{}{}{}{}",
            style.passage.0,
            (style.text)(&excerpt.citation()),
            style.passage.1,
            (style.text)(excerpt.text.trim())
        ),
    }
}

/// A triple, as a path of one step.
pub fn triple_line(triple: &Triple, style: &Style) -> String {
    let mut out = (style.text)(&triple.head.name);
    style.push_edge(&mut out, &triple.relation, false);
    out.push_str(&(style.text)(&triple.tail.name));
    out
}

/// A path: its start, then each hop and the node it reaches.
pub fn path_line(path: &Path, style: &Style) -> String {
    let mut out = path_prefix(path, style);
    if !path.steps.is_empty() {
        out.push_str(&(style.text)(&path.end().name));
    }
    out
}

/// A path up to its last node: the start and every hop, the last one's relation
/// included (paths that differ only in their last node share it).
pub fn path_prefix(path: &Path, style: &Style) -> String {
    let mut out = (style.text)(&path.start.name);
    let Some((last, inner)) = path.steps.split_last() else {
        return out;
    };
    for step in inner {
        style.push_edge(&mut out, &step.relation, step.inverse);
        out.push_str(&(style.text)(&step.node.name));
    }
    style.push_edge(&mut out, &last.relation, last.inverse);
    out
}

/// A query and its rows, laid out as the style says.
pub fn rows_text(cypher: &str, rows: &Rows, style: &Style) -> String {
    let max = style.max_rows;
    let cells = |row: &Vec<Value>, separator: &str| {
        row.iter()
            .map(|value| style.value(value))
            .collect::<Vec<_>>()
            .join(separator)
    };
    let hidden = rows.rows.len().saturating_sub(max);
    let shown = rows.rows.iter().take(max);
    match style.rows {
        RowsLayout::Inline => {
            let lines: Vec<String> = shown.map(|row| cells(row, ", ")).collect();
            let more = if rows.truncated || hidden > 0 {
                " …"
            } else {
                ""
            };
            format!(
                "Graph Query: {} | Result ({}): {}{more}",
                (style.text)(cypher),
                rows.columns.join(", "),
                lines.join("; ")
            )
        }
        RowsLayout::Table => {
            let mut out = format!(
                "Graph Query: {}\n{}",
                (style.text)(cypher),
                rows.columns.join(" | ")
            );
            for row in shown {
                out.push('\n');
                out.push_str(&cells(row, " | "));
            }
            if rows.rows.is_empty() {
                out.push_str("\n(no rows)");
            }
            if hidden > 0 || rows.truncated {
                out.push_str(&format!(
                    "\n(truncated: {} rows shown{})",
                    rows.rows.len().min(max),
                    if rows.truncated { ", more exist" } else { "" }
                ));
            }
            out
        }
        RowsLayout::Bracketed => {
            let mut out = format!("query {} returned", (style.text)(cypher.trim()));
            if rows.rows.is_empty() {
                out.push_str(" no rows");
                return out;
            }
            out.push_str(&format!(" ({}):", rows.columns.join(", ")));
            for row in shown {
                out.push_str(&format!(" [{}]", cells(row, ", ")));
            }
            if hidden > 0 || rows.truncated {
                out.push_str(" …more rows");
            }
            out
        }
    }
}
