//! Tolerant parsers: from what a model wrote to the typed values agents use.
//!
//! Every parser accepts the reply shapes [`sections::extract`] reads (tags with or
//! without closing tags, code fences, prose around them, JSON, headings), drops what it
//! cannot use, and never panics. Names a model writes for graph things (relations,
//! frontier entities, evidence lines) are checked against what the prompt offered, so a
//! made-up relation never reaches a store.

pub mod cypher_choice;
pub mod isr;
pub mod judge;
pub mod kg_linker;
pub mod pattern;
pub mod sections;
pub mod summarizer;
pub mod traversal;

pub use sections::{extract, SectionName, Sections};

/// A reply that holds nothing usable for the task.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("the model reply is empty")]
    Empty,
    #[error("the model reply has no {0} section")]
    Missing(&'static str),
}

/// Case, spacing and separators ignored: `Directed_By` and `directed by` are one name.
pub(crate) fn squash(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// The offered name a model meant, if any: exact, then ignoring case and separators.
pub(crate) fn match_offered<'a>(written: &str, offered: &'a [String]) -> Option<&'a String> {
    let written = written.trim();
    if let Some(exact) = offered.iter().find(|o| o.as_str() == written) {
        return Some(exact);
    }
    let key = squash(written);
    if key.is_empty() {
        return None;
    }
    offered.iter().find(|o| squash(o) == key)
}

/// Whether a line is the bare FINISH signal (any case, punctuation around it allowed).
pub(crate) fn is_finish(line: &str) -> bool {
    squash(line) == "finish"
}
