//! The summarizer prompt: final answers from the retrieved facts only, each citing the
//! evidence lines it rests on.

use kgmesh_schemas::messages::summarizer::SummarizeRequest;

use super::{context, quote};
use crate::{ChatMessage, ChatRequest};

const SYSTEM: &str = "You answer questions from knowledge-graph facts only. You never \
use outside knowledge and never guess; every answer cites the fact lines it comes from.";

/// Longest reply asked of the model.
pub const COMPLETION_TOKENS: u32 = 400;

pub fn build(request: &SummarizeRequest, context_tokens: usize) -> ChatRequest {
    let mut user = format!(
        "Answer the question from the facts below. Each fact line starts with a label such \
as E1.\nWrite the answers in <answers></answers>, one per line, best first, at most {}, \
each a short name or value followed by the labels of the facts it rests on in square \
brackets, for example:\n<answers>\nParis [E2, E5]\n</answers>\n",
        request.max_answers.max(1)
    );
    if !request.topic_entities.is_empty() {
        let names: Vec<String> = request
            .topic_entities
            .iter()
            .map(|e| quote(&e.name))
            .collect();
        user.push_str(&format!(
            "The question is about {}; never give these as answers.\n",
            names.join(", ")
        ));
    }
    user.push_str(
        "If the facts do not answer the question, leave <answers></answers> empty. Then \
explain in one sentence in <explanation></explanation>.\n\n",
    );
    user.push_str(&format!(
        "Question: {}\n\nFacts:\n",
        quote(request.question.trim())
    ));
    user.push_str(&context::evidence_block(&request.context, context_tokens));
    ChatRequest::new(
        vec![ChatMessage::system(SYSTEM), ChatMessage::user(user)],
        COMPLETION_TOKENS,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use kgmesh_schemas::{graph::Entity, messages::context::Context, NodeId};

    #[test]
    fn asks_for_cited_answers_and_excludes_topic_entities() {
        let request = SummarizeRequest {
            question: "Who directed Heat?".into(),
            context: Context::default(),
            topic_entities: vec![Entity {
                id: NodeId(1),
                name: "Heat".into(),
            }],
            max_answers: 3,
            cues: vec![],
            plan: vec![],
        };
        let user = build(&request, 500).messages[1].content.clone();
        assert!(user.contains("at most 3"));
        assert!(user.contains("The question is about Heat; never give these as answers."));
        assert!(user.contains("[E2, E5]"));
    }
}
