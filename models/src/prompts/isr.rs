//! CacheRAG's ISR extraction prompt: the question's topic entity, its constraints in the
//! user's own words (never graph vocabulary), a domain and an aspect. These key the plan
//! cache, so they must not depend on how a particular graph names its relations.

use super::{chat, quote, quoted_list};
use crate::ChatRequest;

const SYSTEM: &str = "You analyse questions. You use only words from the question or \
plain everyday words, never database or schema terms.";

/// `known_domains` and `known_aspects` are labels already in the cache; reusing one keeps
/// similar questions in one bucket.
pub fn build(question: &str, known_domains: &[String], known_aspects: &[String]) -> ChatRequest {
    let mut user = String::from(
        "Read the question and write:\n\
<entity></entity> the main entity (or entities, one per line) the question is about, as written in the question.\n\
<constraints></constraints> the conditions the answer must meet, one per line, in the question's own words.\n\
<domain></domain> the subject area in one or two plain words (for example: movies, music, sports, geography).\n\
<aspect></aspect> what is asked about the entity, in one or two plain words (for example: director, release date, award, cast).\n\
Do not invent relation or property names of any database.\n\n\
Example:\nQuestion: Which other films by the director of Inception were nominated for Best Picture?\n\
<entity>\nInception\n</entity>\n<constraints>\ndirected by the director of Inception\nother films\n\
nominated for Best Picture\n</constraints>\n<domain>movies</domain>\n<aspect>award</aspect>\n\n",
    );
    for (what, known) in [("Domains", known_domains), ("Aspects", known_aspects)] {
        if !known.is_empty() {
            user.push_str(&format!(
                "{what} used so far (reuse one if it fits): {}\n",
                quoted_list(known.iter().take(30), ", ")
            ));
        }
    }
    user.push_str(&format!("Question: {}\n", quote(question.trim())));
    chat(SYSTEM, user, 200)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asks_for_the_four_parts_and_offers_known_labels() {
        let user = build("Who directed Heat?", &["movies".into()], &[]).messages[1]
            .content
            .clone();
        for tag in ["<entity>", "<constraints>", "<domain>", "<aspect>"] {
            assert!(user.contains(tag));
        }
        assert!(user.contains("Domains used so far (reuse one if it fits): movies\n"));
        assert!(!user.contains("Aspects used so far"));
        assert!(user.ends_with("Question: Who directed Heat?\n"));
    }
}
