//! The KG-Linker prompt (ByoKG-RAG §3.1): one call proposes the question's entities,
//! relation paths, an openCypher query and draft answers. Later rounds see the context
//! retrieved so far, ask for what is still missing, and may answer FINISH.

use kgmesh_schemas::{
    graph::{Direction, GraphSchema, Metapath},
    messages::{cache::FewShotExample, kg_linker::KgLinkRequest},
};

use super::{chat, context, quote, quoted_list, schema::schema_text, PromptBudget, Round};
use crate::ChatRequest;

const SYSTEM: &str = "You link questions to a knowledge graph. You never invent relation \
names: you only use relations listed in the schema. You answer in the tagged sections you \
are asked for, one item per line, and nothing else.";

const TASKS_FIRST: &str = "\
Do four tasks.

1. Entities. List every entity named in the question (people, places, works, \
organizations, dates, concepts) exactly as written there, one per line. If a name is \
ambiguous or abbreviated, also list its likely full name or alias on its own line.
Write them in <entities></entities>.

2. Relation paths. List relation paths from the question's entities towards the answer, \
one per line. A path is one relation or several joined by ->, at most 3 relations, for \
example: relation_a -> relation_b. Only use relation names from the schema. Prefix a \
relation with ~ when it must be followed backwards (from its tail to its head). Give \
up to 3 different plausible paths, the most likely first.
Write them in <paths></paths>.

3. Query. Write one read-only openCypher query that returns the answer, using only the \
labels, relations and properties of the schema. Match entities by their name property.
Write it in <cypher></cypher>.

4. Draft answers. Give the answers you expect, one per line, as short names without \
explanation. Leave the section empty if you do not know.
Write them in <answers></answers>.";

const TASKS_LATER: &str = "\
The graph context below is what has been retrieved so far. First decide whether it \
already answers the question.

If it does, write <status>FINISH</status> and give the answers, one per line, in \
<answers></answers>. Nothing else is needed.

If it does not, write <status>CONTINUE</status> and do these tasks for what is still \
missing:

1. Entities. List the entities to look up next, the most important first: entities of \
the question not found yet, and entities from the context that lead towards the answer. \
Do not list entities whose facts are already all in the context.
Write them in <entities></entities>.

2. Relation paths. List relation paths (relations joined by ->, at most 3, ~ for a \
relation followed backwards, only relation names from the schema) that would retrieve \
the missing facts.
Write them in <paths></paths>.

3. Query. Write one read-only openCypher query that returns the answer, using only the \
schema. If repair hints are given below, fix the problems they describe.
Write it in <cypher></cypher>.

4. Draft answers. Give the answers the context supports so far, one per line.
Write them in <answers></answers>.";

/// The KG-Linker prompt for `request`, with the schema and context cut to `budget`.
pub fn build(
    request: &KgLinkRequest,
    schema: &GraphSchema,
    round: Round,
    budget: &PromptBudget,
) -> ChatRequest {
    let mut user = String::new();
    user.push_str(match round {
        Round::First => TASKS_FIRST,
        Round::Later => TASKS_LATER,
    });
    user.push_str("\n\nSchema:\n");
    user.push_str(&schema_text(schema, budget.schema_tokens));

    let examples: Vec<&FewShotExample> =
        request.examples.iter().take(budget.max_examples).collect();
    if !examples.is_empty() {
        user.push_str("\nSolved questions on this graph, for reference:\n");
        for example in examples {
            user.push_str(&format_example(example));
        }
    }

    if round == Round::Later || !request.context.evidence.is_empty() {
        user.push_str("\nGraph context:\n");
        user.push_str(&context::evidence_block(
            &request.context,
            budget.context_tokens,
        ));
    }
    let notes = context::notes_block(&request.context);
    if !notes.is_empty() {
        user.push_str("\nNotes from earlier retrieval:\n");
        user.push_str(&notes);
    }
    if !request.repair_hints.is_empty() {
        user.push_str("\nRepair hints for earlier queries that were refused:\n");
        for hint in request.repair_hints.iter().take(5) {
            user.push_str(&format!("- {}\n", quote(hint)));
        }
    }
    user.push_str(&format!("\nQuestion: {}\n", quote(request.question.trim())));

    chat(SYSTEM, user, budget.max_reply_tokens)
}

/// A past plan in the same tagged shape the reply should take.
fn format_example(example: &FewShotExample) -> String {
    let mut out = format!("Question: {}\n", quote(&example.question));
    let entities = quoted_list(example.plan.entities.iter().map(|e| e.name.as_str()), "\n");
    out.push_str(&format!("<entities>\n{entities}\n</entities>\n"));
    let paths: Vec<String> = example.plan.metapaths.iter().map(format_metapath).collect();
    out.push_str(&format!("<paths>\n{}\n</paths>\n", paths.join("\n")));
    if let Some(cypher) = example.plan.cypher.first() {
        out.push_str(&format!("<cypher>\n{}\n</cypher>\n", quote(cypher)));
    }
    let answers = quoted_list(example.answers.iter().take(5), "\n");
    out.push_str(&format!("<answers>\n{answers}\n</answers>\n\n"));
    out
}

/// `a -> ~b`, the notation the prompt asks for.
pub fn format_metapath(path: &Metapath) -> String {
    path.steps
        .iter()
        .map(|step| match step.direction {
            Direction::In => format!("~{}", quote(&step.relation)),
            Direction::Out | Direction::Both => quote(&step.relation),
        })
        .collect::<Vec<_>>()
        .join(" -> ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use kgmesh_schemas::{
        graph::{Entity, RelationSchema, RelationStep},
        messages::{cache::Plan, context::Context},
        NodeId,
    };

    fn request() -> KgLinkRequest {
        KgLinkRequest {
            question: "Who directed Inception?".into(),
            context: Context::default(),
            repair_hints: vec![],
            examples: vec![],
            cues: vec![],
        }
    }

    fn schema() -> GraphSchema {
        GraphSchema {
            relations: vec![RelationSchema {
                name: "directed_by".into(),
                count: 10,
                endpoints: vec![],
                examples: vec![],
            }],
            ..GraphSchema::default()
        }
    }

    #[test]
    fn first_round_asks_all_four_tasks_without_finish() {
        let prompt = build(
            &request(),
            &schema(),
            Round::First,
            &PromptBudget::default(),
        );
        let user = &prompt.messages[1].content;
        for tag in ["<entities>", "<paths>", "<cypher>", "<answers>"] {
            assert!(user.contains(tag), "missing {tag}");
        }
        assert!(!user.contains("FINISH"));
        assert!(user.contains("directed_by"));
        assert!(user
            .trim_end()
            .ends_with("Question: Who directed Inception?"));
        assert_eq!(prompt.temperature, 0.0);
    }

    #[test]
    fn later_rounds_offer_finish_and_show_context_hints_and_examples() {
        let mut request = request();
        request.repair_hints = vec!["unknown relation DIRECTED".into()];
        request.examples = vec![FewShotExample {
            question: "Who directed Heat?".into(),
            plan: Plan {
                entities: vec![Entity {
                    id: NodeId(1),
                    name: "Heat".into(),
                }],
                metapaths: vec![Metapath {
                    steps: vec![RelationStep {
                        relation: "directed_by".into(),
                        direction: Direction::In,
                    }],
                }],
                cypher: vec![],
            },
            answers: vec!["Michael Mann".into()],
            similarity: 0.8,
        }];
        let prompt = build(&request, &schema(), Round::Later, &PromptBudget::default());
        let user = &prompt.messages[1].content;
        assert!(user.contains("<status>FINISH</status>"));
        assert!(user.contains("(no graph context yet)"));
        assert!(user.contains("- unknown relation DIRECTED"));
        assert!(user.contains("Question: Who directed Heat?\n<entities>\nHeat\n</entities>\n<paths>\n~directed_by\n</paths>"));
    }
}
