//! Real replies of a local Qwen2.5-Coder-0.5B-Instruct (llama.cpp) to this crate's
//! prompts, recorded with `scripts/local-llm record`, replayed over HTTP through the
//! client and read by the parsers. The expectations below were written by reading the
//! recorded replies: a 0.5B model skips sections, cites relation names instead of
//! evidence labels and answers in bare prose, and the parsers must cope with all of it.

mod support;

use std::path::PathBuf;

use kgmesh_models::{
    openai::{OpenAiChat, OpenAiConfig},
    parse::{self, traversal::EntitySelection, ParseError},
    ChatMessage, ChatRequest, ChatResponse, LanguageModel,
};
use kgmesh_schemas::{graph::Entity, NodeId};
use serde_json::Value;
use support::{within, ReplayServer, Step};

struct Recorded {
    inputs: Value,
    response: ChatResponse,
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Serves the recorded response and sends the recorded request through the client.
async fn replay(name: &str) -> Recorded {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/recordings")
        .join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; re-record with scripts/local-llm record",
            path.display()
        )
    });
    let recording: Value = serde_json::from_str(&text).expect("recording is JSON");
    let status = recording["status"].as_u64().expect("status") as u16;
    let server = ReplayServer::start(vec![Step::json(status, recording["response"].clone())]).await;

    let messages: Vec<ChatMessage> =
        serde_json::from_value(recording["request"]["messages"].clone())
            .expect("recorded messages");
    let request = ChatRequest::new(
        messages,
        recording["request"]["max_tokens"].as_u64().unwrap_or(256) as u32,
    );
    let client = OpenAiChat::new(OpenAiConfig::new(
        server.base_url(),
        "qwen2.5-coder-0.5b-instruct",
    ))
    .unwrap();
    let response = within(client.chat(request))
        .await
        .expect("replayed call succeeds");
    // The llama.cpp server reports usage; it must come through unestimated.
    assert!(!response.usage.estimated);
    assert_eq!(
        response.usage.completion_tokens,
        recording["response"]["usage"]["completion_tokens"]
            .as_u64()
            .unwrap()
    );
    Recorded {
        inputs: recording["inputs"].clone(),
        response,
    }
}

#[tokio::test]
async fn kg_linker_first_round_without_an_entities_section() {
    let recorded = replay("kg_linker_first_round").await;
    let reply = parse::kg_linker::parse(
        &recorded.response.text,
        &strings(&recorded.inputs["relations"]),
    );
    // The model left out <entities> and gave an empty <paths>.
    assert!(reply.mentions.is_empty());
    assert!(reply.metapaths.is_empty());
    assert_eq!(
        reply.cypher,
        vec!["MATCH (m:Movie {name: \"Heat\"})\nRETURN m.directed_by"]
    );
    assert_eq!(reply.draft_answers, vec!["Heat directed by Michael Mann"]);
    assert!(!reply.finish);
}

#[tokio::test]
async fn kg_linker_later_round_with_nested_tags_and_entity_paths() {
    let recorded = replay("kg_linker_later_round").await;
    let reply = parse::kg_linker::parse(
        &recorded.response.text,
        &strings(&recorded.inputs["relations"]),
    );
    // "<paths><path>Heat -> Michael Mann</path></paths>": entities, not relations.
    assert!(reply.metapaths.is_empty());
    assert!(!reply.finish, "the model wrote CONTINUE");
    assert_eq!(
        reply.cypher,
        vec!["MATCH (m:Movie {name: 'Heat'})\nRETURN m.release_year"]
    );
    assert_eq!(reply.draft_answers, vec!["1995"]);
}

#[tokio::test]
async fn relation_selection_reply() {
    let recorded = replay("relation_selection").await;
    let chosen = parse::traversal::parse_relation_selection(
        &recorded.response.text,
        &strings(&recorded.inputs["offered"]),
    );
    assert_eq!(chosen, vec!["starred_actors"]);
}

#[tokio::test]
async fn entity_selection_reply() {
    let recorded = replay("entity_selection").await;
    let chosen = parse::traversal::parse_entity_selection(
        &recorded.response.text,
        &strings(&recorded.inputs["offered"]),
    );
    assert_eq!(chosen, EntitySelection::Explore(vec!["Collateral".into()]));
}

#[tokio::test]
async fn a_judge_reply_without_a_verdict_is_a_typed_error() {
    let recorded = replay("judge").await;
    let frontier: Vec<Entity> = strings(&recorded.inputs["frontier"])
        .into_iter()
        .enumerate()
        .map(|(i, name)| Entity {
            id: NodeId(i as u64),
            name,
        })
        .collect();
    let result = parse::judge::parse(
        &recorded.response.text,
        &frontier,
        &strings(&recorded.inputs["relations"]),
    );
    assert_eq!(result, Err(ParseError::Missing("verdict")));
}

#[tokio::test]
async fn summarizer_reply_citing_relation_names() {
    let recorded = replay("summarizer").await;
    let count = recorded.inputs["evidence_count"].as_u64().unwrap() as usize;
    let reply = parse::summarizer::parse(&recorded.response.text, count, 5);
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts, vec!["1981", "2004"]);
    // "[release_year]" is not an evidence label: no citations.
    assert!(reply.answers.iter().all(|a| a.evidence.is_empty()));
}

#[tokio::test]
async fn an_isr_reply_in_bare_prose_is_a_typed_error() {
    let recorded = replay("isr").await;
    assert_eq!(
        parse::isr::parse(&recorded.response.text),
        Err(ParseError::Missing("entity"))
    );
}
