//! JSON Schemas of every request and reply on the bus, for agents written in other
//! languages (feature `json-schema`). They are generated from the Rust types, committed
//! under `docs/schemas/`, and `cli/tests/json_schemas.rs` fails when the two differ.

use schemars::{schema_for, JsonSchema};

use crate::{
    messages::{
        cache::{CacheFeedback, CacheLookup, CacheStore},
        echo::EchoRequest,
        entity_linker::LinkRequest,
        judge::JudgeRequest,
        kg_linker::KgLinkRequest,
        path_follower::ExpandRequest,
        query_executor::{QueryRequest, SchemaRequest},
        retrieve::RetrieveRequest,
        summarizer::SummarizeRequest,
    },
    Reply, Request, Rpc,
};

/// The request envelope of `R` and the reply envelope of its answer, as
/// (`<Type>.request.json`, schema) and (`<Type>.reply.json`, schema).
fn pair<R>(name: &str) -> [(String, serde_json::Value); 2]
where
    R: Rpc + JsonSchema,
    R::Reply: JsonSchema,
{
    let request = schema_for!(Request<R>);
    let reply = schema_for!(Reply<R::Reply>);
    [
        (format!("{name}.request.json"), request.to_value()),
        (format!("{name}.reply.json"), reply.to_value()),
    ]
}

/// Every wire schema by file name, in name order.
pub fn wire_schemas() -> Vec<(String, serde_json::Value)> {
    let mut schemas: Vec<(String, serde_json::Value)> = [
        pair::<CacheFeedback>("CacheFeedback"),
        pair::<CacheLookup>("CacheLookup"),
        pair::<CacheStore>("CacheStore"),
        pair::<EchoRequest>("EchoRequest"),
        pair::<ExpandRequest>("ExpandRequest"),
        pair::<JudgeRequest>("JudgeRequest"),
        pair::<KgLinkRequest>("KgLinkRequest"),
        pair::<LinkRequest>("LinkRequest"),
        pair::<QueryRequest>("QueryRequest"),
        pair::<RetrieveRequest>("RetrieveRequest"),
        pair::<SchemaRequest>("SchemaRequest"),
        pair::<SummarizeRequest>("SummarizeRequest"),
    ]
    .into_iter()
    .flatten()
    .collect();
    schemas.sort_by(|a, b| a.0.cmp(&b.0));
    schemas
}
