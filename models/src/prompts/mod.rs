//! The project's prompts. Each module builds a [`ChatRequest`](crate::ChatRequest) whose
//! reply the matching module of [`crate::parse`] reads.
//!
//! Every prompt asks for tagged sections (`<name>…</name>`), one item per line, because
//! small local models follow that more reliably than JSON; the parsers accept JSON too.
//! What goes into a prompt is bounded by a [`PromptBudget`]: the schema is sampled and
//! cut to its share, and evidence is cut to its share, so a large graph never produces
//! a prompt the model cannot take.

pub mod context;
pub mod cypher_choice;
pub mod extract;
pub mod isr;
pub mod judge;
pub mod kg_linker;
pub mod pattern;
pub mod schema;
pub mod summarizer;
pub mod traversal;

use crate::{ChatMessage, ChatRequest};

/// Which KG-Linker variant: the first round sees no graph context; later rounds see the
/// context so far and may answer FINISH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Round {
    First,
    Later,
}

/// Token shares of one prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptBudget {
    pub schema_tokens: usize,
    pub context_tokens: usize,
    /// Past plans shown as examples.
    pub max_examples: usize,
    /// Reply length limit passed to the model.
    pub max_reply_tokens: u32,
}

impl Default for PromptBudget {
    fn default() -> Self {
        Self {
            schema_tokens: 1_000,
            context_tokens: 2_500,
            max_examples: 5,
            max_reply_tokens: 600,
        }
    }
}

/// A request of the `system` prompt and one `user` message, the reply bounded by
/// `max_tokens`.
pub(crate) fn chat(system: &str, user: String, max_tokens: u32) -> ChatRequest {
    ChatRequest::new(
        vec![ChatMessage::system(system), ChatMessage::user(user)],
        max_tokens,
    )
}

/// Each of `items` [quoted](quote), joined by `separator`.
pub(crate) fn quoted_list<S: AsRef<str>>(
    items: impl IntoIterator<Item = S>,
    separator: &str,
) -> String {
    items
        .into_iter()
        .map(|item| quote(item.as_ref()))
        .collect::<Vec<_>>()
        .join(separator)
}

/// Appends each of `items`, [quoted](quote), on a line of its own.
pub(crate) fn push_quoted_lines<S: AsRef<str>>(
    out: &mut String,
    items: impl IntoIterator<Item = S>,
) {
    for item in items {
        out.push_str(&quote(item.as_ref()));
        out.push('\n');
    }
}

/// Text the model must not mistake for tags: a `<` that could open or close a section in
/// a graph name or a question becomes `‹`. Arrows (`<-`, `->`) are left alone.
pub(crate) fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let opens_tag = c == '<'
            && chars
                .peek()
                .is_some_and(|next| next.is_ascii_alphabetic() || *next == '/' || *next == '!');
        out.push(if opens_tag { '‹' } else { c });
    }
    out
}
