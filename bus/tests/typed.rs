//! The typed layer's refusals: what a server answers to bytes it cannot trust.

use kgmesh_bus::{typed, Message};
use kgmesh_schemas::{
    codec, envelope::headers, messages::echo::EchoRequest, AgentError, Budget, ContentType, Meta,
    QuestionId, Request, SCHEMA_VERSION,
};

fn meta() -> Meta {
    Meta::new(QuestionId::new_random(), 1, Budget::default())
}

fn request(content_type: ContentType) -> Message {
    typed::encode_request(content_type, meta(), EchoRequest { text: "hi".into() }).unwrap()
}

#[test]
fn a_good_request_decodes_in_both_content_types() {
    for content_type in [ContentType::Bincode, ContentType::Json] {
        let (got_type, decoded) =
            typed::decode_request::<EchoRequest>(&request(content_type)).unwrap();
        assert_eq!(got_type, content_type);
        assert_eq!(decoded.body.text, "hi");
    }
}

#[test]
fn an_unknown_version_in_the_header_is_refused_by_name() {
    let mut message = request(ContentType::Json);
    message
        .headers
        .insert(headers::SCHEMA_VERSION.to_owned(), next_version());
    let (_, error) = typed::decode_request::<EchoRequest>(&message).unwrap_err();
    assert_eq!(
        error,
        AgentError::UnsupportedVersion {
            got: next_version(),
            supported: SCHEMA_VERSION
        }
    );
    message.headers.remove(headers::SCHEMA_VERSION);
    let (_, error) = typed::decode_request::<EchoRequest>(&message).unwrap_err();
    assert!(matches!(error, AgentError::UnsupportedVersion { got, .. } if got == "(none)"));
}

#[test]
fn an_unknown_version_inside_the_envelope_is_refused_in_its_content_type() {
    let mut meta = meta();
    meta.schema_version = SCHEMA_VERSION + 1;
    let payload = codec::encode(
        ContentType::Json,
        &Request {
            meta,
            body: EchoRequest {
                text: "from the future".into(),
            },
        },
    )
    .unwrap();
    let message = Message {
        headers: typed::envelope_headers(ContentType::Json, None),
        payload,
    };
    let (reply_type, error) = typed::decode_request::<EchoRequest>(&message).unwrap_err();
    assert_eq!(reply_type, ContentType::Json);
    assert!(
        matches!(error, AgentError::UnsupportedVersion { .. }),
        "{error:?}"
    );
}

#[test]
fn garbage_and_unknown_content_types_are_decode_errors() {
    let garbage = Message {
        headers: typed::envelope_headers(ContentType::Bincode, None),
        payload: vec![0xde, 0xad, 0xbe, 0xef].into(),
    };
    let (_, error) = typed::decode_request::<EchoRequest>(&garbage).unwrap_err();
    assert!(matches!(error, AgentError::Decode { .. }), "{error:?}");

    let mut message = request(ContentType::Bincode);
    message.headers.insert(
        headers::CONTENT_TYPE.to_owned(),
        "application/x-protobuf".to_owned(),
    );
    let (_, error) = typed::decode_request::<EchoRequest>(&message).unwrap_err();
    assert!(matches!(error, AgentError::Decode { detail } if detail.contains("x-protobuf")));
}

#[test]
fn error_replies_carry_the_error_kind_header() {
    let reply = typed::encode_reply(
        ContentType::Bincode,
        &kgmesh_schemas::Reply::<()>::err(AgentError::BadRequest {
            detail: "no".into(),
        }),
    );
    assert_eq!(
        reply.headers.get(headers::ERROR).map(String::as_str),
        Some("bad_request")
    );
    let role = kgmesh_schemas::Role::well_known(kgmesh_schemas::Role::ECHO);
    let error = typed::decode_reply::<EchoRequest>(&role, "s", &reply).unwrap_err();
    assert!(matches!(
        error,
        typed::CallError::Agent {
            error: AgentError::BadRequest { .. },
            ..
        }
    ));
}

/// A schema version this build does not speak.
fn next_version() -> String {
    (SCHEMA_VERSION + 1).to_string()
}
