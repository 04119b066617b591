//! The wire: every message survives both content types, the bytes of a sample
//! request are frozen, and hostile bytes give typed errors instead of panics.

use std::fmt::Debug;

use kgmesh_schemas::{
    budget::{Cost, Limit},
    codec::{self, CodecError},
    graph::{
        Direction, Entity, GraphSchema, LabelSchema, Metapath, NodeValue, Path, PathStep,
        PathValue, RelationSchema, RelationStep, RelationshipValue, Rows, ScoredEntity, Triple,
        Value,
    },
    messages::{
        ask::{
            AskOptions, AskReply, AskRequest, Degradation, EvidenceEdge, EvidenceLine, RoleCall,
            Timings,
        },
        cache::{
            CacheEntry, CacheFeedback, CacheFeedbackReply, CacheLookup, CacheLookupReply,
            CacheStore, CacheStoreReply, Feedback, FeedbackOutcome, FewShotExample, Isr, Plan,
            RelationCue,
        },
        context::{Context, Evidence, EvidenceItem},
        echo::{EchoReply, EchoRequest},
        entity_linker::{LinkMode, LinkReply, LinkRequest, MentionLinks},
        judge::{JudgeReply, JudgeRequest, Verdict},
        kg_linker::{KgLinkReply, KgLinkRequest},
        path_follower::{ExpandReply, ExpandRequest, Expansion},
        query_executor::{QueryReply, QueryRequest, SchemaReply, SchemaRequest},
        retrieve::{RetrieveReply, RetrieveRequest},
        summarizer::{Answer, Decline, SummarizeReply, SummarizeRequest},
        traverser::TraversalStep,
    },
    AgentError, Budget, ContentType, Deadline, Depth, Meta, NodeId, QuestionId, Reply, Request,
    TraceContext, SCHEMA_VERSION,
};
use proptest::prelude::*;
use serde::{de::DeserializeOwned, Serialize};

fn round_trip<T>(value: &T)
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    for content_type in [ContentType::Bincode, ContentType::Json] {
        let bytes = codec::encode(content_type, value)
            .unwrap_or_else(|e| panic!("{content_type:?} cannot encode {value:?}: {e}"));
        let back: T = codec::decode(content_type, &bytes)
            .unwrap_or_else(|e| panic!("{content_type:?} cannot decode {value:?}: {e}"));
        assert_eq!(&back, value, "{content_type:?} changed the value");
    }
}

/// A request of `body` and a success and an error reply of `reply`, through both codecs.
fn round_trip_rpc<Q, P>(body: Q, reply: P)
where
    Q: Serialize + DeserializeOwned + PartialEq + Debug + Clone,
    P: Serialize + DeserializeOwned + PartialEq + Debug + Clone,
{
    round_trip(&body);
    round_trip(&reply);
    round_trip(&Request {
        meta: sample_meta(),
        body,
    });
    round_trip(&Reply::ok(reply, sample_cost()));
    round_trip(&Reply::<P>::err(AgentError::BudgetExhausted {
        limit: Limit::Tokens,
    }));
}

fn entity(id: u64, name: &str) -> Entity {
    Entity {
        id: NodeId(id),
        name: name.to_owned(),
    }
}

fn scored(id: u64, name: &str, score: f32) -> ScoredEntity {
    ScoredEntity {
        entity: entity(id, name),
        score,
    }
}

fn metapath() -> Metapath {
    Metapath {
        steps: vec![
            RelationStep {
                relation: "directed_by".into(),
                direction: Direction::Out,
            },
            RelationStep {
                relation: "starred_actors".into(),
                direction: Direction::In,
            },
        ],
    }
}

fn path() -> Path {
    Path {
        start: entity(1, "Inception"),
        steps: vec![PathStep {
            relation: "directed_by".into(),
            inverse: false,
            node: entity(2, "Christopher Nolan"),
        }],
    }
}

fn node_value() -> NodeValue {
    NodeValue {
        id: NodeId(9),
        labels: vec!["Product".into()],
        properties: vec![("unitPrice".into(), Value::Float(18.5))],
    }
}

fn relationship_value() -> RelationshipValue {
    RelationshipValue {
        start: NodeId(9),
        end: NodeId(10),
        rel_type: "PART_OF".into(),
        properties: vec![("since".into(), Value::Int(1996))],
    }
}

fn rows() -> Rows {
    Rows {
        columns: vec!["p".into(), "n".into(), "x".into()],
        rows: vec![
            vec![
                Value::Node(node_value()),
                Value::Int(-3),
                Value::List(vec![Value::Null, Value::Bool(true)]),
            ],
            vec![
                Value::Relationship(relationship_value()),
                Value::String("Chai ☕".into()),
                Value::Map(vec![("k".into(), Value::Float(-0.25))]),
            ],
            vec![
                Value::Path(PathValue {
                    nodes: vec![node_value()],
                    relationships: vec![relationship_value()],
                }),
                Value::Int(i64::MAX),
                Value::Null,
            ],
        ],
        truncated: true,
    }
}

fn context() -> Context {
    Context {
        evidence: vec![
            Evidence {
                source: "path-follower".into(),
                score: 0.75,
                item: EvidenceItem::Triple(Triple {
                    head: entity(1, "Inception"),
                    relation: "directed_by".into(),
                    tail: entity(2, "Christopher Nolan"),
                }),
            },
            Evidence {
                source: "agentic-traverser".into(),
                score: 0.5,
                item: EvidenceItem::Path(path()),
            },
            Evidence {
                source: "query-executor".into(),
                score: 1.0,
                item: EvidenceItem::Query {
                    cypher: "MATCH (p:Product) RETURN p LIMIT 1".into(),
                    rows: rows(),
                    grounded: true,
                },
            },
        ],
        notes: vec!["round 1".into()],
    }
}

fn plan() -> Plan {
    Plan {
        entities: vec![entity(1, "Inception")],
        metapaths: vec![metapath()],
        cypher: vec!["MATCH (m) RETURN m".into()],
    }
}

fn isr() -> Isr {
    Isr {
        topic_entities: vec!["Inception".into()],
        constraints: vec!["after 2000".into()],
        domain: "movies".into(),
        aspect: "director".into(),
    }
}

fn answer() -> Answer {
    Answer {
        text: "Christopher Nolan".into(),
        entity: Some(entity(2, "Christopher Nolan")),
        score: 0.875,
        evidence: vec![0, 2],
    }
}

fn sample_cost() -> Cost {
    Cost {
        llm_calls: 2,
        prompt_tokens: 1_500,
        completion_tokens: 120,
        graph_rows: 42,
        bus_messages: 3,
        elapsed_us: 12_345,
        llm_us: 9_000,
        store_us: 800,
        model_fallbacks: 1,
    }
}

/// A fixed request meta: nothing random, nothing from the clock.
fn sample_meta() -> Meta {
    Meta {
        schema_version: SCHEMA_VERSION,
        question_id: QuestionId(uuid::Uuid::from_u128(
            0x0123_4567_89ab_cdef_0011_2233_4455_6677,
        )),
        round: 2,
        budget: Budget {
            rounds: 2,
            depth: Depth::new(3).unwrap(),
            breadth: 30,
            depth_expansions: 3,
            llm_calls: 12,
            tokens: 60_000,
            result_rows: 1_000,
            deadline: Deadline {
                unix_ms: 1_700_000_000_000,
            },
        },
        trace: TraceContext {
            traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into(),
            tracestate: String::new(),
        },
    }
}

#[test]
fn every_rpc_round_trips_in_both_content_types() {
    round_trip_rpc(
        EchoRequest {
            text: "héllo".into(),
        },
        EchoReply {
            text: "héllo".into(),
            served_by: "42/echo-1".into(),
        },
    );
    round_trip_rpc(
        KgLinkRequest {
            question: "who directed Inception?".into(),
            context: context(),
            repair_hints: vec!["unknown relation directed; use directed_by".into()],
            examples: vec![FewShotExample {
                question: "who directed Memento?".into(),
                plan: plan(),
                answers: vec!["Christopher Nolan".into()],
                similarity: 0.625,
            }],
            cues: vec![RelationCue {
                word: "direct".into(),
                relation: "directed_by".into(),
                inverse: false,
                weight: 0.75,
            }],
        },
        KgLinkReply {
            mentions: vec!["Inception".into()],
            linked: vec![scored(1, "Inception", 1.0)],
            metapaths: vec![metapath()],
            cypher: vec!["MATCH (m {name:'Inception'}) RETURN m".into()],
            draft_answers: vec!["Nolan".into()],
            finish: false,
            model_plan: true,
            confidence: Some(0.75),
            reader_plan: false,
            reader_reaches: Some(vec![NodeId(4), NodeId(9)]),
            reader_tie: Some(metapath()),
        },
    );
    for mode in [LinkMode::Fuzzy, LinkMode::Embedding, LinkMode::Both] {
        round_trip_rpc(
            LinkRequest {
                mentions: vec!["Inceptoin".into(), "Nolan".into()],
                top_m: 3,
                mode,
            },
            LinkReply {
                links: vec![MentionLinks {
                    mention: "Inceptoin".into(),
                    candidates: vec![scored(1, "Inception", 0.9)],
                }],
            },
        );
    }
    round_trip_rpc(
        RetrieveRequest {
            question: "q".into(),
            entities: vec![scored(1, "Inception", 1.0)],
            draft_answers: vec![scored(2, "Christopher Nolan", 0.5)],
            metapaths: vec![metapath()],
            cypher: vec![],
            max_evidence: 50,
            cues: vec![],
        },
        RetrieveReply {
            evidence: context().evidence,
            repair_hints: vec!["hint".into()],
            notes: vec![],
        },
    );
    for expansion in [
        Expansion::Depth {
            relation: "directed_by".into(),
            direction: Direction::Both,
        },
        Expansion::Breadth { k_degree: 30 },
    ] {
        round_trip_rpc(
            ExpandRequest {
                question: "q".into(),
                frontier: vec![entity(1, "Inception")],
                expansion,
            },
            ExpandReply {
                evidence: context().evidence,
                frontier: vec![entity(2, "Christopher Nolan")],
            },
        );
    }
    for outcome in [
        Ok(rows()),
        Err(AgentError::InvalidQuery {
            reason: "unknown label Prodcut".into(),
            hint: Some("did you mean Product?".into()),
        }),
    ] {
        round_trip_rpc(
            QueryRequest {
                cypher: "MATCH (p:Product) WHERE p.unitPrice > $min RETURN p".into(),
                params: vec![("min".into(), Value::Float(10.0))],
                max_rows: 100,
                timeout_ms: 5_000,
            },
            QueryReply { outcome },
        );
    }
    round_trip_rpc(
        SchemaRequest {},
        SchemaReply {
            schema: GraphSchema {
                relations: vec![RelationSchema {
                    name: "directed_by".into(),
                    count: 3,
                    endpoints: vec![("Movie".into(), "Person".into(), 3)],
                    examples: vec!["Heat -[directed_by]-> Michael Mann".into()],
                }],
                node_count: 4,
                edge_count: 3,
                ..GraphSchema::default()
            },
        },
    );
    for verdict in [
        Verdict::Complete,
        Verdict::ExpandDepth {
            relation: "starred_actors".into(),
            direction: Direction::In,
            frontier: vec![entity(1, "Inception")],
        },
        Verdict::ExpandBreadth {
            frontier: vec![entity(2, "Christopher Nolan")],
        },
        Verdict::NextRound,
    ] {
        round_trip_rpc(
            JudgeRequest {
                question: "q".into(),
                context: context(),
                frontier: vec![entity(1, "Inception")],
                depth_expansions_left: 2,
            },
            JudgeReply {
                verdict,
                reason: "the director is in the evidence".into(),
            },
        );
    }
    round_trip_rpc(
        SummarizeRequest {
            question: "q".into(),
            context: context(),
            topic_entities: vec![entity(1, "Inception")],
            max_answers: 5,
            cues: vec![],
            plan: vec![],
            preferred: vec![metapath()],
        },
        SummarizeReply {
            low_confidence: false,
            answers: vec![
                answer(),
                Answer {
                    entity: None,
                    ..answer()
                },
            ],
            explanation: "from evidence 0".into(),
            confidence: None,
            decline: Some(Decline {
                below: 0.5,
                why: "the path is far from the question".into(),
            }),
        },
    );
    round_trip_rpc(
        CacheLookup {
            question: "q".into(),
            entities: vec![entity(1, "Inception")],
            k: 3,
        },
        CacheLookupReply {
            isr: isr(),
            examples: vec![],
            replay: Some(plan()),
            replay_similarity: Some(0.9),
            cues: vec![RelationCue {
                word: "star".into(),
                relation: "starred_actors".into(),
                inverse: true,
                weight: 0.5,
            }],
        },
    );
    round_trip_rpc(
        CacheStore {
            entry: CacheEntry {
                question: "who directed Inception?".into(),
                template: "who directed <e0>?".into(),
                isr: isr(),
                plan: plan(),
                answers: vec!["Christopher Nolan".into()],
                hits: 3,
                failures: 1,
            },
        },
        CacheStoreReply { stored: true },
    );
    for (verdict, outcome) in [
        (Feedback::Correct, FeedbackOutcome::Confirmed),
        (Feedback::Incorrect, FeedbackOutcome::Dropped),
        (
            Feedback::Answers(vec!["Christopher Nolan".into(), "Emma Thomas".into()]),
            FeedbackOutcome::Learned,
        ),
    ] {
        round_trip_rpc(
            CacheFeedback {
                question: "who directed Inception?".into(),
                verdict,
                principal: kgmesh_schemas::messages::cache::Principal::anonymous(),
            },
            CacheFeedbackReply {
                outcome,
                key: Some("p0123456789abcdef".into()),
                detail: "hits 2, failures 0".into(),
                confirmations: None,
            },
        );
    }
    for (need, flagged) in [
        (Some(3), None),
        (
            None,
            Some("starred_actors explains no word of the question".to_owned()),
        ),
    ] {
        round_trip_rpc(
            CacheFeedback {
                question: "who directed Heat".into(),
                verdict: Feedback::Answers(vec!["Al Pacino".into()]),
                principal: kgmesh_schemas::messages::cache::Principal {
                    name: "reviewer-2".into(),
                    admin: false,
                },
            },
            CacheFeedbackReply {
                outcome: FeedbackOutcome::Pending,
                key: Some("p0123456789abcdef".into()),
                detail: "held".into(),
                confirmations: Some(kgmesh_schemas::messages::cache::Confirmations {
                    have: 1,
                    need,
                    flagged,
                }),
            },
        );
    }
    round_trip_rpc(
        CacheFeedback {
            question: "hello".into(),
            verdict: Feedback::Incorrect,
            principal: kgmesh_schemas::messages::cache::Principal::anonymous(),
        },
        CacheFeedbackReply {
            outcome: FeedbackOutcome::NoPlan,
            key: None,
            detail: String::new(),
            confirmations: None,
        },
    );
    round_trip_rpc(
        AskRequest {
            question: "who directed Inception?".into(),
            options: AskOptions {
                max_rounds: Some(2),
                timeout_ms: None,
                max_answers: Some(3),
                no_cache: true,
                evidence_edges: true,
            },
        },
        AskReply {
            question_id: "q-1".into(),
            answers: vec![answer()],
            evidence: vec![EvidenceLine {
                source: "path-follower".into(),
                text: "Inception directed_by Christopher Nolan".into(),
                edges: vec![EvidenceEdge {
                    head: entity(1, "Inception"),
                    relation: "directed_by".into(),
                    tail: entity(2, "Christopher Nolan"),
                }],
            }],
            explanation: "e".into(),
            rounds: 1,
            cost: sample_cost(),
            timings: Timings {
                total_us: 10,
                stages: vec![("link".into(), 4)],
            },
            partial: false,
            low_confidence: false,
            confidence: Some(0.75),
            plan_chance: Some(0.6),
            plan_followed: Some(true),
            readings_agree: Some(false),
            cache_hit: true,
            cache_use: Some("plan cache: 2 past questions offered as examples".into()),
            cache_examples: 2,
            replay_reached: None,
            replay_cut: false,
            plan_replayed: false,
            replay_similarity: None,
            trace_id: Some("0af7651916cd43dd8448eb211c80319c".into()),
            notes: vec!["round 1: summarizer fell back".into()],
            degraded: vec![Degradation {
                role: "summarizer".into(),
                reason: Degradation::MODEL_FALLBACK.into(),
                round: 1,
            }],
            graph: Some("movies.tsv".into()),
            topic_entities: vec![entity(1, "Inception")],
            calls: vec![
                RoleCall {
                    round: 1,
                    role: "kg-linker".into(),
                    op: "link".into(),
                    elapsed_us: 1_200,
                    cost: Some(sample_cost()),
                    outcome: RoleCall::OK.into(),
                },
                RoleCall {
                    round: 1,
                    role: "path-follower".into(),
                    op: "retrieve".into(),
                    elapsed_us: 30_000,
                    cost: None,
                    outcome: "timeout".into(),
                },
            ],
        },
    );
}

#[test]
fn replies_from_before_degradation_was_reported_still_decode() {
    let cost: Cost = serde_json::from_str(
        r#"{"llm_calls":1,"prompt_tokens":2,"completion_tokens":3,"graph_rows":4,
            "bus_messages":5,"elapsed_us":6,"llm_us":7,"store_us":8}"#,
    )
    .expect("a cost without model_fallbacks");
    assert_eq!((cost.llm_calls, cost.model_fallbacks), (1, 0));
    let reply: AskReply = serde_json::from_str(
        r#"{"question_id":"q","answers":[],"evidence":[],"explanation":"",
            "rounds":1,"cost":{"llm_calls":0,"prompt_tokens":0,"completion_tokens":0,
            "graph_rows":0,"bus_messages":0,"elapsed_us":0,"llm_us":0,"store_us":0},
            "timings":{"total_us":0,"stages":[]},"partial":false,"cache_hit":false,
            "trace_id":null,"notes":[]}"#,
    )
    .expect("a reply without degraded");
    assert!(reply.degraded.is_empty());
}

#[test]
fn the_other_wire_types_round_trip() {
    round_trip(&TraversalStep {
        frontier: vec![entity(1, "Inception")],
        relations_chosen: vec!["directed_by".into()],
        triples_kept: 4,
    });
    round_trip(&GraphSchema {
        labels: vec![LabelSchema {
            name: "Product".into(),
            count: 77,
            property_keys: vec!["unitPrice".into()],
        }],
        relations: vec![RelationSchema {
            name: "PART_OF".into(),
            count: 77,
            endpoints: vec![("Product".into(), "Category".into(), 77)],
            examples: vec!["Chai PART_OF Beverages".into()],
        }],
        relationship_property_keys: vec![],
        node_count: 1_035,
        edge_count: 3_139,
    });
    round_trip(&path());
    round_trip(&sample_meta());
    for error in all_errors() {
        round_trip(&error);
        round_trip(&Reply::<EchoReply>::err(error));
    }
}

fn all_errors() -> Vec<AgentError> {
    vec![
        AgentError::Timeout { detail: "t".into() },
        AgentError::NoResponders {
            subject: "kgmesh.v1.judge.judge".into(),
        },
        AgentError::Decode { detail: "d".into() },
        AgentError::UnsupportedVersion {
            got: "2".into(),
            supported: SCHEMA_VERSION,
        },
        AgentError::BudgetExhausted {
            limit: Limit::Deadline,
        },
        AgentError::InvalidQuery {
            reason: "r".into(),
            hint: None,
        },
        AgentError::BadRequest { detail: "b".into() },
        AgentError::Unavailable { detail: "u".into() },
        AgentError::Internal { detail: "i".into() },
    ]
}

/// The frozen wire format of the current SCHEMA_VERSION: a fixed echo request in bincode.
///
/// If this test fails, a change altered the bytes on the wire, and agents built
/// before it can no longer talk to agents built after it. Either undo the change, or
/// make it deliberately: bump `SCHEMA_VERSION` (so old and new agents refuse each
/// other with a typed `UnsupportedVersion` error instead of misreading each other)
/// and freeze the new bytes here.
///
/// How the start reads (bincode 2, standard config: little-endian varints):
/// `0a` schema_version 10 · `10` + 16 bytes: the question id (uuid as bytes) ·
/// `02` round · `02` rounds · `03` depth · `1e` breadth 30 · `03` depth expansions ·
/// `0c` llm calls 12 · `fb 60 ea` tokens 60000 · `fb e8 03` result rows 1000 ·
/// `fd` + 8 bytes: the deadline · `37` + 55 bytes: traceparent · `00` empty tracestate ·
/// `0c` + 12 bytes: the UTF-8 text.
const GOLDEN_ECHO_REQUEST_V10: &str =
    "0a100123456789abcdef00112233445566770202031e030cfb60eafbe803fd0068e5cf8b010000373030\
2d30616637363531393136636434336464383434386562323131633830333139632d6237616436623731\
36393230333333312d3031000c68c3a96c6c6f2c2077697265";

const GOLDEN_ECHO_REQUEST_V10_JSON: &str = r#"{"meta":{"schema_version":10,"question_id":"01234567-89ab-cdef-0011-223344556677","round":2,"budget":{"rounds":2,"depth":3,"breadth":30,"depth_expansions":3,"llm_calls":12,"tokens":60000,"result_rows":1000,"deadline":{"unix_ms":1700000000000}},"trace":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tracestate":""}},"body":{"text":"héllo, wire"}}"#;

fn golden_request() -> Request<EchoRequest> {
    Request {
        meta: sample_meta(),
        body: EchoRequest {
            text: "héllo, wire".into(),
        },
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn golden_bytes_of_schema_version_10() {
    assert_eq!(SCHEMA_VERSION, 10, "a new version needs new golden bytes");
    let bincode = codec::encode(ContentType::Bincode, &golden_request()).unwrap();
    assert_eq!(hex(&bincode), GOLDEN_ECHO_REQUEST_V10);
    let json = codec::encode(ContentType::Json, &golden_request()).unwrap();
    assert_eq!(
        std::str::from_utf8(&json).unwrap(),
        GOLDEN_ECHO_REQUEST_V10_JSON
    );
    // And the frozen bytes still decode into the same request.
    let decoded: Request<EchoRequest> = codec::decode(ContentType::Bincode, &bincode).unwrap();
    assert_eq!(decoded, golden_request());
}

#[test]
fn garbage_truncation_and_padding_are_typed_errors() {
    let good = codec::encode(ContentType::Bincode, &golden_request()).unwrap();
    for cut in [0, 1, 5, good.len() / 2, good.len() - 1] {
        let result = codec::decode::<Request<EchoRequest>>(ContentType::Bincode, &good[..cut]);
        assert!(matches!(result, Err(CodecError::Decode(_))), "cut at {cut}");
    }
    let mut padded = good.to_vec();
    padded.push(0);
    let result = codec::decode::<Request<EchoRequest>>(ContentType::Bincode, &padded);
    assert!(
        matches!(&result, Err(CodecError::Decode(detail)) if detail.contains("trailing")),
        "{result:?}"
    );
    // A length prefix that claims 2^60 bytes must not allocate them.
    let hostile = [0xffu8, 0, 0, 0, 0, 0, 0, 0, 0x10];
    let result = codec::decode::<EchoRequest>(ContentType::Bincode, &hostile);
    assert!(matches!(result, Err(CodecError::Decode(_))), "{result:?}");
    let result = codec::decode::<Request<EchoRequest>>(ContentType::Json, b"{\"meta\": 3}");
    assert!(matches!(result, Err(CodecError::Decode(_))), "{result:?}");
    // A depth outside 1..=3 is refused at decode time, not later.
    let bad_depth = GOLDEN_ECHO_REQUEST_V10_JSON.replace("\"depth\":3", "\"depth\":9");
    let result = codec::decode::<Request<EchoRequest>>(ContentType::Json, bad_depth.as_bytes());
    assert!(matches!(result, Err(CodecError::Decode(_))), "{result:?}");
    assert!(matches!(
        ContentType::from_mime("text/plain"),
        Err(CodecError::UnknownContentType(_))
    ));
}

#[test]
fn a_newer_schema_version_still_decodes_so_it_can_be_refused_by_name() {
    // The version check happens after decoding the envelope (kgmesh-bus::typed turns
    // it into `AgentError::UnsupportedVersion`); the envelope itself must stay readable.
    let mut request = golden_request();
    request.meta.schema_version = SCHEMA_VERSION + 1;
    let bytes = codec::encode(ContentType::Bincode, &request).unwrap();
    let decoded: Request<EchoRequest> = codec::decode(ContentType::Bincode, &bytes).unwrap();
    assert_eq!(decoded.meta.schema_version, SCHEMA_VERSION + 1);
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic_the_decoders(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        for content_type in [ContentType::Bincode, ContentType::Json] {
            let _ = codec::decode::<Request<RetrieveRequest>>(content_type, &bytes);
            let _ = codec::decode::<Request<QueryRequest>>(content_type, &bytes);
            let _ = codec::decode::<Reply<QueryReply>>(content_type, &bytes);
            let _ = codec::decode::<Reply<JudgeReply>>(content_type, &bytes);
            let _ = codec::decode::<Request<EchoRequest>>(content_type, &bytes);
        }
    }

    #[test]
    fn mutated_golden_bytes_never_panic(position in 0usize..120, byte in any::<u8>()) {
        let mut bytes = codec::encode(ContentType::Bincode, &golden_request()).unwrap().to_vec();
        let position = position % bytes.len();
        bytes[position] = byte;
        let _ = codec::decode::<Request<EchoRequest>>(ContentType::Bincode, &bytes);
    }

    #[test]
    fn echo_requests_round_trip(text in ".{0,200}", round in any::<u8>()) {
        let mut request = golden_request();
        request.body.text = text;
        request.meta.round = round;
        for content_type in [ContentType::Bincode, ContentType::Json] {
            let bytes = codec::encode(content_type, &request).unwrap();
            let back: Request<EchoRequest> = codec::decode(content_type, &bytes).unwrap();
            prop_assert_eq!(&back, &request);
        }
    }
}
