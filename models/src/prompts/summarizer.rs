//! The summarizer prompt: final answers from the retrieved facts only, each citing the
//! evidence lines it rests on.

use kgmesh_schemas::messages::summarizer::SummarizeRequest;

use super::{chat, context, quote, quoted_list};
use crate::ChatRequest;

const SYSTEM: &str = "You answer questions from knowledge-graph facts only. You never \
use outside knowledge and never guess; every answer cites the fact lines it comes from.";

/// Longest reply asked of the model.
pub const COMPLETION_TOKENS: u32 = 400;

/// The answers of the prompt's format example. A small model often copies the example
/// (Qwen2.5 0.5B answered "Paris", the example's name when it was one, to MetaQA
/// questions whose evidence held a film called Paris), so they are placeholders that
/// name nothing, and the summarizer drops them ([`is_example_answer`]).
pub const EXAMPLE_ANSWERS: [&str; 2] = ["first answer", "second answer"];

/// Whether `answer` is one of [`EXAMPLE_ANSWERS`], copied from the prompt.
pub fn is_example_answer(answer: &str) -> bool {
    let answer = answer.trim();
    EXAMPLE_ANSWERS
        .iter()
        .any(|example| answer.eq_ignore_ascii_case(example))
}

pub fn build(request: &SummarizeRequest, context_tokens: usize) -> ChatRequest {
    let mut user = format!(
        "Answer the question from the facts below. Each fact line starts with a label such \
as E1.\nWrite the answers in <answers></answers>, one per line, best first, at most {}, \
each a short name or value copied from the facts, followed by the labels of the facts \
it rests on in square brackets. The format, with placeholders for the answers:\n\
<answers>\n{} [E2, E5]\n{} [E3]\n</answers>\n",
        request.max_answers.max(1),
        EXAMPLE_ANSWERS[0],
        EXAMPLE_ANSWERS[1]
    );
    if !request.topic_entities.is_empty() {
        let names = quoted_list(request.topic_entities.iter().map(|e| e.name.as_str()), ", ");
        user.push_str(&format!(
            "The question is about {names}; never give these as answers.\n"
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
    chat(SYSTEM, user, COMPLETION_TOKENS)
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
            preferred: Vec::new(),
        };
        let user = build(&request, 500).messages[1].content.clone();
        assert!(user.contains("at most 3"));
        assert!(user.contains("The question is about Heat; never give these as answers."));
        assert!(user.contains("first answer [E2, E5]"));
        assert!(is_example_answer(" First Answer "));
        assert!(!is_example_answer("Paris"));
    }
}
