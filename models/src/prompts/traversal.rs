//! Agentic traversal prompts (ByoKG-RAG Algorithm 1): pick the relations worth following
//! from the current entities, then pick which reached entities to explore next.

use super::{chat, push_quoted_lines, quote, quoted_list};
use crate::ChatRequest;

const SYSTEM: &str = "You explore a knowledge graph step by step to answer a question. \
You choose only from the options you are given and answer in the tagged section asked for.";

/// Which of `relations` (around `entities`) help answer `question`.
pub fn relation_selection(
    question: &str,
    entities: &[String],
    relations: &[String],
    max_select: usize,
) -> ChatRequest {
    let mut user = format!(
        "Choose the relations that lead from the entities towards the answer of the question. \
Choose as few as possible, but every relation the answer needs (at most {max_select}). \
Copy relation names exactly from the list, one per line, inside <selected></selected>. \
Always choose at least one.\n\nExample:\nQuestion: Which language is spoken in the country \
where the Eiffel Tower stands?\nEntities: Eiffel Tower\nRelations:\nlocated_in\narchitect\nheight\n\
<selected>\nlocated_in\n</selected>\n\nNow your turn.\nQuestion: {}\nEntities: {}\nRelations:\n",
        quote(question.trim()),
        quoted_list(entities, "; "),
    );
    push_quoted_lines(&mut user, relations);
    chat(SYSTEM, user, 200)
}

/// Which of `candidates` to explore next, given the triples seen so far; FINISH when the
/// seen triples already answer the question.
pub fn entity_selection(
    question: &str,
    context_lines: &[String],
    candidates: &[String],
) -> ChatRequest {
    let mut user = String::from(
        "Given the question and the facts found so far, choose the entities to explore next: \
only those whose further facts are needed for the answer, the most important first, one \
per line, copied exactly from the candidates, inside <next-entities></next-entities>. \
If the facts already answer the question, write <next-entities>FINISH</next-entities>.\n\n\
Example:\nQuestion: Which language is spoken in the country where the Eiffel Tower stands?\n\
Facts:\nEiffel Tower -[located_in]-> France\nCandidates:\nFrance\n\
<next-entities>\nFrance\n</next-entities>\n\nNow your turn.\n",
    );
    user.push_str(&format!("Question: {}\nFacts:\n", quote(question.trim())));
    push_quoted_lines(&mut user, context_lines);
    user.push_str("Candidates:\n");
    push_quoted_lines(&mut user, candidates);
    chat(SYSTEM, user, 200)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relation_selection_lists_every_offered_relation() {
        let prompt = relation_selection(
            "Who directed Heat?",
            &["Heat".into()],
            &["directed_by".into(), "has_genre".into()],
            3,
        );
        let user = &prompt.messages[1].content;
        assert!(user.contains(
            "Question: Who directed Heat?\nEntities: Heat\nRelations:\ndirected_by\nhas_genre\n"
        ));
        assert!(user.contains("<selected>"));
    }

    #[test]
    fn entity_selection_offers_finish() {
        let prompt = entity_selection("q", &["A -[r]-> B".into()], &["B".into()]);
        let user = &prompt.messages[1].content;
        assert!(user.contains("FINISH"));
        assert!(user.ends_with("Facts:\nA -[r]-> B\nCandidates:\nB\n"));
    }
}
