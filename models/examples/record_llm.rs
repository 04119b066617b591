//! Records real replies of a local OpenAI-compatible server to the project's prompts,
//! for the replay tests in `models/tests/recorded_replies.rs`.
//!
//! ```text
//! scripts/local-llm serve 8088 &
//! cargo run -p kgmesh-models --example record_llm -- http://127.0.0.1:8088/v1 models/tests/recordings
//! ```
//! Each recording holds the request body sent, the server's raw response, how long it
//! took, and the inputs the matching parser needs. The prompts are built by this crate,
//! so re-recording after a prompt change keeps the replays honest.

use std::{path::PathBuf, time::Instant};

use kgmesh_models::{prompts, ChatRequest};
use kgmesh_schemas::{
    graph::{Entity, GraphSchema, LabelSchema, RelationSchema, Triple},
    messages::{
        context::{Context, Evidence, EvidenceItem},
        judge::JudgeRequest,
        kg_linker::KgLinkRequest,
        summarizer::SummarizeRequest,
    },
    NodeId,
};
use serde_json::{json, Value};

fn entity(id: u64, name: &str) -> Entity {
    Entity {
        id: NodeId(id),
        name: name.into(),
    }
}

fn triple(head: &Entity, relation: &str, tail: &Entity) -> Evidence {
    Evidence {
        source: "fixture".into(),
        score: 1.0,
        item: EvidenceItem::Triple(Triple {
            head: head.clone(),
            relation: relation.into(),
            tail: tail.clone(),
        }),
    }
}

fn movie_schema() -> GraphSchema {
    let relation = |name: &str, head: &str, tail: &str, count: u64, example: &str| RelationSchema {
        name: name.into(),
        count,
        endpoints: vec![(head.into(), tail.into(), count)],
        examples: vec![example.into()],
    };
    GraphSchema {
        labels: vec![
            LabelSchema {
                name: "Movie".into(),
                count: 17_000,
                property_keys: vec!["name".into()],
            },
            LabelSchema {
                name: "Person".into(),
                count: 20_000,
                property_keys: vec!["name".into()],
            },
            LabelSchema {
                name: "Year".into(),
                count: 100,
                property_keys: vec!["name".into()],
            },
            LabelSchema {
                name: "Genre".into(),
                count: 30,
                property_keys: vec!["name".into()],
            },
        ],
        relations: vec![
            relation(
                "starred_actors",
                "Movie",
                "Person",
                30_000,
                "Heat -starred_actors-> Al Pacino",
            ),
            relation(
                "directed_by",
                "Movie",
                "Person",
                18_000,
                "Heat -directed_by-> Michael Mann",
            ),
            relation(
                "written_by",
                "Movie",
                "Person",
                16_000,
                "Heat -written_by-> Michael Mann",
            ),
            relation(
                "release_year",
                "Movie",
                "Year",
                17_000,
                "Heat -release_year-> 1995",
            ),
            relation(
                "has_genre",
                "Movie",
                "Genre",
                17_000,
                "Heat -has_genre-> Crime",
            ),
        ],
        relationship_property_keys: vec![],
        node_count: 37_130,
        edge_count: 98_000,
    }
}

struct Recording {
    name: &'static str,
    kind: &'static str,
    request: ChatRequest,
    inputs: Value,
}

fn recordings() -> Vec<Recording> {
    let schema = movie_schema();
    let relation_names: Vec<String> = schema.relations.iter().map(|r| r.name.clone()).collect();
    let budget = prompts::PromptBudget::default();
    let heat = entity(1, "Heat");
    let mann = entity(2, "Michael Mann");
    let thief = entity(3, "Thief");
    let collateral = entity(4, "Collateral");
    let y1981 = entity(5, "1981");
    let y2004 = entity(6, "2004");

    let first = KgLinkRequest {
        question: "Who directed the movie Heat?".into(),
        context: Context::default(),
        repair_hints: vec![],
        examples: vec![],
        cues: vec![],
    };
    let later_context = Context {
        evidence: vec![
            triple(&thief, "directed_by", &mann),
            triple(&collateral, "directed_by", &mann),
            triple(&heat, "directed_by", &mann),
        ],
        notes: vec![],
    };
    let later = KgLinkRequest {
        question: "When were the movies directed by Michael Mann released?".into(),
        context: later_context.clone(),
        repair_hints: vec!["relation RELEASED does not exist; use release_year".into()],
        examples: vec![],
        cues: vec![],
    };
    let summary_context = Context {
        evidence: vec![
            triple(&thief, "directed_by", &mann),
            triple(&collateral, "directed_by", &mann),
            triple(&thief, "release_year", &y1981),
            triple(&collateral, "release_year", &y2004),
        ],
        notes: vec![],
    };
    let judge = JudgeRequest {
        question: "When were the movies directed by Michael Mann released?".into(),
        context: later_context,
        frontier: vec![thief.clone(), collateral.clone(), heat.clone()],
        depth_expansions_left: 2,
    };
    let summarize = SummarizeRequest {
        question: "When were the movies directed by Michael Mann released?".into(),
        context: summary_context,
        topic_entities: vec![mann.clone()],
        max_answers: 5,
        cues: vec![],
        plan: vec![],
        preferred: Vec::new(),
    };
    let frontier_names: Vec<String> = judge.frontier.iter().map(|e| e.name.clone()).collect();
    vec![
        Recording {
            name: "kg_linker_first_round",
            kind: "kg_linker",
            request: prompts::kg_linker::build(&first, &schema, prompts::Round::First, &budget),
            inputs: json!({"relations": relation_names}),
        },
        Recording {
            name: "kg_linker_later_round",
            kind: "kg_linker",
            request: prompts::kg_linker::build(&later, &schema, prompts::Round::Later, &budget),
            inputs: json!({"relations": relation_names}),
        },
        Recording {
            name: "relation_selection",
            kind: "relation_selection",
            request: prompts::traversal::relation_selection(
                "What genre is the movie Heat?",
                &["Heat".into()],
                &relation_names,
                2,
            ),
            inputs: json!({"offered": relation_names}),
        },
        Recording {
            name: "entity_selection",
            kind: "entity_selection",
            request: prompts::traversal::entity_selection(
                "In which years were the movies directed by Michael Mann released?",
                &[
                    "Michael Mann <-[directed_by]- Thief".into(),
                    "Michael Mann <-[directed_by]- Collateral".into(),
                ],
                &["Thief".into(), "Collateral".into()],
            ),
            inputs: json!({"offered": ["Thief", "Collateral"]}),
        },
        Recording {
            name: "judge",
            kind: "judge",
            request: prompts::judge::build(&judge, &relation_names, budget.context_tokens),
            inputs: json!({"relations": relation_names, "frontier": frontier_names}),
        },
        Recording {
            name: "summarizer",
            kind: "summarizer",
            request: prompts::summarizer::build(&summarize, budget.context_tokens),
            inputs: json!({"evidence_count": 4, "max_answers": 5}),
        },
        Recording {
            name: "isr",
            kind: "isr",
            request: prompts::isr::build(
                "Which films by the director of Heat came out before 1990?",
                &[],
                &[],
            ),
            inputs: json!({}),
        },
    ]
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let base_url = args
        .next()
        .unwrap_or_else(|| "http://127.0.0.1:8088/v1".into());
    let out = PathBuf::from(
        args.next()
            .unwrap_or_else(|| "models/tests/recordings".into()),
    );
    let model =
        std::env::var("RECORD_MODEL").unwrap_or_else(|_| "qwen2.5-coder-0.5b-instruct".into());
    std::fs::create_dir_all(&out)?;
    let http = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(900))
        .build()?;
    for recording in recordings() {
        let body = json!({
            "model": model,
            "messages": recording.request.messages,
            "max_tokens": recording.request.max_tokens,
            "temperature": recording.request.temperature,
            "stream": false,
        });
        let started = Instant::now();
        let response = http
            .post(format!(
                "{}/chat/completions",
                base_url.trim_end_matches('/')
            ))
            .header("content-type", "application/json")
            .body(serde_json::to_vec(&body)?)
            .send()
            .await?;
        let status = response.status().as_u16();
        let raw: Value = serde_json::from_slice(&response.bytes().await?)?;
        let elapsed = started.elapsed();
        let completion_tokens = raw["usage"]["completion_tokens"].as_u64().unwrap_or(0);
        let prompt_tokens = raw["usage"]["prompt_tokens"].as_u64().unwrap_or(0);
        println!(
            "{}: HTTP {status}, {prompt_tokens} prompt + {completion_tokens} completion tokens in {:.1} s",
            recording.name,
            elapsed.as_secs_f64()
        );
        let file = json!({
            "name": recording.name,
            "kind": recording.kind,
            "inputs": recording.inputs,
            "request": body,
            "status": status,
            "response": raw,
            "elapsed_ms": elapsed.as_millis() as u64,
        });
        std::fs::write(
            out.join(format!("{}.json", recording.name)),
            serde_json::to_string_pretty(&file)? + "\n",
        )?;
    }
    Ok(())
}
