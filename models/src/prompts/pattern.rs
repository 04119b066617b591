//! Question → graph pattern (SimGRAG §4.1): the facts a question states or asks about, as
//! triples in the question's own words, with what it does not name written as
//! `UNKNOWN <kind> <n>`. The examples are from an invented domain, so that no benchmark's
//! wording is taught; the graph's relation names are listed for the model's reference.

use super::{chat, quote, quoted_list};
use crate::ChatRequest;

const SYSTEM: &str = "You turn a question into the graph pattern it describes. \
You answer only in the tagged section asked for.";

/// Relation names listed in the prompt at most.
const MAX_RELATIONS: usize = 40;

const EXAMPLES: &str = "Example 1:
Question: who manages the team that Alice Moreau works in
Named entities: Alice Moreau
<triples>
Alice Moreau | works in | UNKNOWN team 1
UNKNOWN person 2 | manages | UNKNOWN team 1
</triples>

Example 2:
Question: in which city is the office of the company that bought Nimbus Labs
Named entities: Nimbus Labs
<triples>
UNKNOWN company 1 | bought | Nimbus Labs
UNKNOWN company 1 | office | UNKNOWN office 2
UNKNOWN office 2 | in city | UNKNOWN city 3
</triples>

Example 3:
Question: which engineer works in Berlin and reports to Dana Cole
Named entities: Berlin; Dana Cole
<triples>
UNKNOWN engineer 1 | works in | Berlin
UNKNOWN engineer 1 | reports to | Dana Cole
</triples>
";

/// The pattern prompt for `question`, whose linked entities are `entities`, over a
/// graph with `relations`.
pub fn pattern(question: &str, entities: &[String], relations: &[String]) -> ChatRequest {
    let mut user = String::from(
        "Split the question into the facts it states or asks about. Write each fact as a \
triple, head | relation | tail, one per line, inside <triples></triples>. Use the question's \
own words for each relation, never a bare \"of\", \"in\" or \"for\". Copy the named entities \
exactly. Write everything the question does not name as UNKNOWN, its kind and a number \
(UNKNOWN person 1), with the same number wherever the same thing comes back; the thing \
asked for is one of them.\n\n",
    );
    if !relations.is_empty() {
        user.push_str("Relations of this graph, for reference: ");
        user.push_str(&quoted_list(relations.iter().take(MAX_RELATIONS), ", "));
        user.push_str("\n\n");
    }
    user.push_str(EXAMPLES);
    user.push_str(&format!(
        "\nNow your turn.\nQuestion: {}\nNamed entities: {}\n",
        quote(question.trim()),
        quoted_list(entities, "; ")
    ));
    chat(SYSTEM, user, 200)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_names_the_question_its_entities_and_the_graph_relations() {
        let prompt = pattern(
            "who directed <Heat>",
            &["Heat".to_owned()],
            &["directed_by".to_owned(), "starred_actors".to_owned()],
        );
        let user = &prompt.messages[1].content;
        assert!(user.contains("Question: who directed ‹Heat>"), "{user}");
        assert!(user.contains("Named entities: Heat\n"));
        assert!(user.contains("for reference: directed_by, starred_actors\n"));
        assert!(user.ends_with("Named entities: Heat\n"));
    }
}
