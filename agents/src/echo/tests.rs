use std::{sync::Arc, time::Duration};

use kgmesh_bus::{typed, Bus, LocalBus, Message};
use kgmesh_schemas::{
    envelope::headers, messages::echo::EchoRequest, AgentError, Budget, ContentType, Meta,
    QuestionId, Role,
};

use super::core;
use crate::{
    registry,
    runtime::{AgentDeps, Client, StartOptions},
};

const WAIT: Duration = Duration::from_secs(10);

fn meta() -> Meta {
    Meta::new(QuestionId::new_random(), 1, Budget::default())
}

#[test]
fn core_echoes_and_names_the_server() {
    let reply = core::echo(
        &EchoRequest {
            text: "héllo".into(),
        },
        "42/a",
    )
    .unwrap();
    assert_eq!(reply.text, "héllo");
    assert_eq!(reply.served_by, "42/a");
}

#[test]
fn core_refuses_oversized_text() {
    let text = "x".repeat(core::MAX_TEXT_BYTES + 1);
    let error = core::echo(&EchoRequest { text }, "me").unwrap_err();
    assert_eq!(error.kind(), "bad_request");
}

#[tokio::test]
async fn echo_role_answers_on_the_local_bus() {
    let bus = Arc::new(LocalBus::new());
    let deps = AgentDeps::new(bus.clone());
    let options = StartOptions {
        instance_name: Some("echo-a".into()),
        ..StartOptions::default()
    };
    let handle = tokio::time::timeout(WAIT, registry::start(Role::ECHO, &deps, options))
        .await
        .unwrap()
        .unwrap();
    let client = Client::new(bus.clone());
    let (reply, cost) = tokio::time::timeout(
        WAIT,
        client.call_default(
            &meta(),
            &EchoRequest {
                text: "ping".into(),
            },
        ),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(reply.text, "ping");
    assert_eq!(reply.served_by, format!("{}/echo-a", std::process::id()));
    assert_eq!(cost.bus_messages, 1);

    let discovered = tokio::time::timeout(WAIT, bus.discover(Duration::from_millis(10)))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(discovered.len(), 1);
    assert_eq!(discovered[0].info.role.as_str(), Role::ECHO);
    assert_eq!(discovered[0].info.ops, vec!["echo".to_owned()]);
    assert_eq!(discovered[0].requests, 1);
    tokio::time::timeout(WAIT, handle.stop(Duration::from_secs(5)))
        .await
        .unwrap();
}

#[tokio::test]
async fn echo_role_answers_json_in_json() {
    let bus = Arc::new(LocalBus::new());
    let deps = AgentDeps::new(bus.clone());
    let handle = tokio::time::timeout(
        WAIT,
        registry::start(Role::ECHO, &deps, StartOptions::default()),
    )
    .await
    .unwrap()
    .unwrap();
    let role = Role::well_known(Role::ECHO);
    let message = typed::encode_request(
        ContentType::Json,
        meta(),
        EchoRequest {
            text: "json please".into(),
        },
    )
    .unwrap();
    let reply = tokio::time::timeout(WAIT, bus.request(&role.subject("echo"), message, WAIT))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        reply.headers.get(headers::CONTENT_TYPE).map(String::as_str),
        Some(ContentType::JSON_MIME)
    );
    let json: serde_json::Value = serde_json::from_slice(&reply.payload).unwrap();
    assert_eq!(json["result"]["Ok"]["text"], "json please");
    tokio::time::timeout(WAIT, handle.stop(Duration::from_secs(5)))
        .await
        .unwrap();
}

#[tokio::test]
async fn garbage_gets_a_typed_decode_error() {
    let bus = Arc::new(LocalBus::new());
    let deps = AgentDeps::new(bus.clone());
    let handle = tokio::time::timeout(
        WAIT,
        registry::start(Role::ECHO, &deps, StartOptions::default()),
    )
    .await
    .unwrap()
    .unwrap();
    let role = Role::well_known(Role::ECHO);
    let subject = role.subject("echo");
    let mut garbage = Message {
        headers: typed::envelope_headers(ContentType::Bincode, None),
        payload: bytes::Bytes::from_static(&[0xff, 0xfe, 0x00, 0x13, 0x37]),
    };
    let reply = tokio::time::timeout(WAIT, bus.request(&subject, garbage.clone(), WAIT))
        .await
        .unwrap()
        .unwrap();
    let error = typed::decode_reply::<EchoRequest>(&role, &subject, &reply).unwrap_err();
    assert!(
        matches!(
            &error,
            typed::CallError::Agent {
                error: AgentError::Decode { .. },
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(
        reply.headers.get(headers::ERROR).map(String::as_str),
        Some("decode")
    );

    garbage
        .headers
        .insert(headers::SCHEMA_VERSION.to_owned(), "999".to_owned());
    let reply = tokio::time::timeout(WAIT, bus.request(&subject, garbage, WAIT))
        .await
        .unwrap()
        .unwrap();
    let error = typed::decode_reply::<EchoRequest>(&role, &subject, &reply).unwrap_err();
    assert!(
        matches!(
            &error,
            typed::CallError::Agent {
                error: AgentError::UnsupportedVersion { .. },
                ..
            }
        ),
        "{error:?}"
    );
    tokio::time::timeout(WAIT, handle.stop(Duration::from_secs(5)))
        .await
        .unwrap();
}
