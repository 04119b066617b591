//! The judge prompt (CacheRAG Algorithm 3): is the retrieved context enough to answer?
//! If not, name one relation to follow from some frontier entities (a bounded depth
//! expansion), ask for a scan of their neighbours (breadth), or ask for another round.

use kgmesh_schemas::messages::judge::JudgeRequest;

use super::{chat, context, push_quoted_lines, quote};
use crate::ChatRequest;

const SYSTEM: &str = "You check whether retrieved knowledge-graph facts are enough to \
answer a question, and if not, how to retrieve what is missing. You answer only in the \
tagged sections asked for.";

/// Longest reply asked of the model.
pub const COMPLETION_TOKENS: u32 = 200;

/// `relations` are the relations around the frontier (the only ones a depth expansion
/// may name).
pub fn build(request: &JudgeRequest, relations: &[String], context_tokens: usize) -> ChatRequest {
    let depth_allowed = request.depth_expansions_left > 0 && !relations.is_empty();
    let mut user = String::from(
        "Decide whether the facts below are enough to answer the question, and write your \
decision in <verdict></verdict> as one of:\n\
COMPLETE - the facts contain the answer.\n",
    );
    if depth_allowed {
        user.push_str(
            "EXPAND_DEPTH - one more relation from some frontier entities would reach the \
answer. Then also write the relation in <relation></relation> (copied from the relation \
list), its direction in <direction></direction> (out, in or both), and the entities to \
start from in <from></from>, one per line, copied from the frontier.\n",
        );
    }
    user.push_str(
        "EXPAND_BREADTH - the answer is probably next to some frontier entities but no \
single relation is clear. Then write those entities in <from></from>, one per line.\n\
NEXT_ROUND - the facts are off track and a fresh retrieval is needed.\n\
Finally give a one-sentence reason in <reason></reason>.\n\n",
    );
    user.push_str(&format!(
        "Question: {}\n\nFacts:\n",
        quote(request.question.trim())
    ));
    user.push_str(&context::evidence_block(&request.context, context_tokens));
    user.push_str("\nFrontier entities:\n");
    push_quoted_lines(
        &mut user,
        request.frontier.iter().map(|entity| entity.name.as_str()),
    );
    if depth_allowed {
        user.push_str("\nRelations around the frontier:\n");
        push_quoted_lines(&mut user, relations);
    }
    chat(SYSTEM, user, COMPLETION_TOKENS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kgmesh_schemas::{graph::Entity, messages::context::Context, NodeId};

    fn request(depth_left: u8) -> JudgeRequest {
        JudgeRequest {
            question: "When was the director of Heat born?".into(),
            context: Context::default(),
            frontier: vec![Entity {
                id: NodeId(7),
                name: "Michael Mann".into(),
            }],
            depth_expansions_left: depth_left,
        }
    }

    #[test]
    fn depth_is_offered_only_while_allowed() {
        let relations = vec!["born_in_year".to_string()];
        let with_depth = build(&request(1), &relations, 500);
        assert!(with_depth.messages[1].content.contains("EXPAND_DEPTH"));
        assert!(with_depth.messages[1]
            .content
            .contains("Relations around the frontier:\nborn_in_year\n"));
        let without = build(&request(0), &relations, 500);
        assert!(!without.messages[1].content.contains("EXPAND_DEPTH"));
        assert!(without.messages[1]
            .content
            .contains("Frontier entities:\nMichael Mann\n"));
    }
}
