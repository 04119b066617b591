//! Passage → facts, for the KG skeleton that `kgmesh index --text` reads from the most
//! central chunks (KET-RAG §4, the entity and relation extraction of Graph-RAG done in
//! one call). The model writes `head | relation | tail` lines, read by
//! [`crate::parse::pattern`]; the example is from an invented domain.

use super::{chat, quote};
use crate::ChatRequest;

const SYSTEM: &str = "You read a passage and list the facts it states about named things. \
You answer only in the tagged section asked for.";

const EXAMPLE: &str = "Example:
Passage: Nimbus Labs was founded in 2011 by Alice Moreau. The company is based in Lyon \
and makes weather sensors.
<triples>
Nimbus Labs | founded in | 2011
Nimbus Labs | founded by | Alice Moreau
Nimbus Labs | based in | Lyon
Nimbus Labs | makes | weather sensors
</triples>
";

/// The extraction prompt for one passage; `max_reply_tokens` bounds the reply.
pub fn extract(passage: &str, max_reply_tokens: u32) -> ChatRequest {
    let user = format!(
        "List every fact the passage states as a triple, head | relation | tail, one per \
line, inside <triples></triples>. Heads and tails are names, titles, dates, numbers or short \
phrases copied exactly from the passage; write the thing a pronoun (it, the film, she) \
stands for, never the pronoun. Relations are two or three words.\n\n{EXAMPLE}\nNow your \
turn.\nPassage: {}\n",
        quote(passage.trim())
    );
    chat(SYSTEM, user, max_reply_tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_carries_the_passage_last_and_quotes_tags() {
        let prompt = extract("Heat came out in 1995. <b>bold</b>", 300);
        let user = &prompt.messages[1].content;
        assert!(
            user.ends_with("Passage: Heat came out in 1995. ‹b>bold‹/b>\n"),
            "{user}"
        );
        assert_eq!(prompt.max_tokens, 300);
    }
}
