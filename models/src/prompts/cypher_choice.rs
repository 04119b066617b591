//! Choosing a query among grounded candidates (GraphRAFT's constrained decoding): the
//! model sees the question and a numbered list of queries that exist around its values,
//! and replies with one number. With a server that enforces choices the reply can be
//! nothing else; [`crate::parse::cypher_choice`] reads it tolerantly either way.

use super::{chat, quote};
use crate::ChatRequest;

const SYSTEM: &str = "You pick the database query that answers a question. Every query \
offered is valid for the graph; pick the one whose result is what the question asks for. \
You answer with its number only.";

/// Longest reply asked of the model: a number, with room for a stray word.
pub const COMPLETION_TOKENS: u32 = 8;

/// `queries` are the candidates' openCypher texts, values written in, best-ranked first;
/// the reply is one of `1..=queries.len()`.
pub fn build(question: &str, queries: &[String]) -> ChatRequest {
    let mut user = format!(
        "Question: {}\n\nQueries (openCypher):\n",
        quote(question.trim())
    );
    for (i, query) in queries.iter().enumerate() {
        user.push_str(&format!("{}. {}\n", i + 1, quote(query)));
    }
    user.push_str(&format!(
        "\nWhich query answers the question? Reply with its number (1 to {}) only.",
        queries.len()
    ));
    let mut request = chat(SYSTEM, user, COMPLETION_TOKENS);
    request.choices = (1..=queries.len()).map(|i| i.to_string()).collect();
    request
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_every_query_and_constrains_the_reply_to_those_numbers() {
        let request = build(
            "Which products does Exotic Liquids supply?",
            &[
                "MATCH (s)-[:SUPPLIES]->(p) RETURN p.name".to_owned(),
                "MATCH (p:Product) RETURN count(p)".to_owned(),
            ],
        );
        let user = &request.messages[1].content;
        assert!(user.contains("1. MATCH (s)-[:SUPPLIES]->(p) RETURN p.name"));
        assert!(user.contains("2. MATCH (p:Product) RETURN count(p)"));
        assert!(user.contains("(1 to 2)"));
        assert_eq!(request.choices, ["1", "2"]);
    }
}
