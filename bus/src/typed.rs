//! Typed calls over any [`Bus`]: envelopes, content types and schema-version checks.
//!
//! A client calls [`call`] with a request type implementing [`Rpc`]; a server wraps a
//! typed function with [`serve_typed`]-style decoding through [`decode_request`] and
//! [`encode_reply`]. Undecodable payloads and unknown versions become typed
//! [`AgentError`] replies, never panics.

use std::time::Duration;

use kgmesh_schemas::{
    codec, envelope::headers, AgentError, ContentType, Meta, Reply, Request, Role, Rpc,
    SCHEMA_VERSION,
};

use crate::{Bus, BusError, Headers, Message};

/// Why a typed call failed: the transport, or the agent's own typed error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CallError {
    #[error(transparent)]
    Bus(#[from] BusError),
    #[error("{role}: {error}")]
    Agent { role: String, error: AgentError },
}

impl CallError {
    pub fn is_retryable(&self) -> bool {
        match self {
            CallError::Bus(error) => error.is_retryable(),
            CallError::Agent { error, .. } => error.is_retryable(),
        }
    }

    /// The error as it would be reported inside a reply.
    pub fn to_agent_error(&self, subject: &str) -> AgentError {
        match self {
            CallError::Bus(BusError::TimedOut { timeout, .. }) => AgentError::Timeout {
                detail: format!("{subject} did not answer within {timeout:?}"),
            },
            CallError::Bus(BusError::NoResponders { .. }) => AgentError::NoResponders {
                subject: subject.to_owned(),
            },
            CallError::Bus(other) => AgentError::Unavailable {
                detail: other.to_string(),
            },
            CallError::Agent { error, .. } => error.clone(),
        }
    }
}

/// Headers for a message in `content_type`, with the schema version and question id.
pub fn envelope_headers(content_type: ContentType, meta: Option<&Meta>) -> Headers {
    let mut map = Headers::new();
    map.insert(
        headers::CONTENT_TYPE.to_owned(),
        content_type.mime().to_owned(),
    );
    map.insert(
        headers::SCHEMA_VERSION.to_owned(),
        SCHEMA_VERSION.to_string(),
    );
    if let Some(meta) = meta {
        map.insert(
            headers::QUESTION_ID.to_owned(),
            meta.question_id.to_string(),
        );
        if !meta.trace.traceparent.is_empty() {
            map.insert(
                headers::TRACEPARENT.to_owned(),
                meta.trace.traceparent.clone(),
            );
        }
        if !meta.trace.tracestate.is_empty() {
            map.insert(
                headers::TRACESTATE.to_owned(),
                meta.trace.tracestate.clone(),
            );
        }
    }
    map
}

/// Encodes a request for `R` in `content_type`.
pub fn encode_request<R: Rpc>(
    content_type: ContentType,
    meta: Meta,
    body: R,
) -> Result<Message, BusError> {
    let headers = envelope_headers(content_type, Some(&meta));
    let request = Request { meta, body };
    let payload = codec::encode(content_type, &request)
        .map_err(|e| BusError::Other(format!("cannot encode request: {e}")))?;
    Ok(Message { headers, payload })
}

/// Reads the content type and checks the schema version from headers.
pub fn check_headers(message: &Message) -> Result<ContentType, AgentError> {
    let version = message
        .headers
        .get(headers::SCHEMA_VERSION)
        .map(String::as_str)
        .unwrap_or("");
    if version != SCHEMA_VERSION.to_string() {
        return Err(AgentError::UnsupportedVersion {
            got: if version.is_empty() {
                "(none)".to_owned()
            } else {
                version.to_owned()
            },
            supported: SCHEMA_VERSION,
        });
    }
    let mime = message
        .headers
        .get(headers::CONTENT_TYPE)
        .map(String::as_str)
        .unwrap_or(ContentType::BINCODE_MIME);
    ContentType::from_mime(mime).map_err(|e| AgentError::Decode {
        detail: e.to_string(),
    })
}

/// Decodes a request for `R`; on failure, the typed error to reply with and the
/// content type to reply in.
pub fn decode_request<R: Rpc>(
    message: &Message,
) -> Result<(ContentType, Request<R>), (ContentType, AgentError)> {
    let content_type = check_headers(message).map_err(|e| (ContentType::Bincode, e))?;
    let request: Request<R> = codec::decode(content_type, &message.payload).map_err(|e| {
        (
            content_type,
            AgentError::Decode {
                detail: e.to_string(),
            },
        )
    })?;
    if request.meta.schema_version != SCHEMA_VERSION {
        return Err((
            content_type,
            AgentError::UnsupportedVersion {
                got: request.meta.schema_version.to_string(),
                supported: SCHEMA_VERSION,
            },
        ));
    }
    Ok((content_type, request))
}

/// Encodes a reply. Encoding failures turn into an `Internal` error reply.
pub fn encode_reply<T: serde::Serialize>(content_type: ContentType, reply: &Reply<T>) -> Message {
    let mut headers = envelope_headers(content_type, None);
    if let Err(error) = &reply.result {
        headers.insert(headers::ERROR.to_owned(), error.kind().to_owned());
    }
    match codec::encode(content_type, reply) {
        Ok(payload) => Message { headers, payload },
        Err(e) => {
            let fallback: Reply<()> = Reply::err(AgentError::Internal {
                detail: format!("cannot encode reply: {e}"),
            });
            let payload = codec::encode(content_type, &fallback).unwrap_or_default();
            headers.insert(headers::ERROR.to_owned(), "internal".to_owned());
            Message { headers, payload }
        }
    }
}

/// Encodes a request for `R` without taking ownership of the body, so that a client
/// can encode once and resend the same bytes on retries.
pub fn encode_request_ref<R: Rpc>(
    content_type: ContentType,
    meta: &Meta,
    body: &R,
) -> Result<Message, BusError> {
    let headers = envelope_headers(content_type, Some(meta));
    let request = Request {
        meta: meta.clone(),
        body,
    };
    let payload = codec::encode(content_type, &request)
        .map_err(|e| BusError::Other(format!("cannot encode request: {e}")))?;
    Ok(Message { headers, payload })
}

/// Decodes the reply to a request for `R` sent to `subject` on `role`.
pub fn decode_reply<R: Rpc>(
    role: &Role,
    subject: &str,
    reply_message: &Message,
) -> Result<(R::Reply, kgmesh_schemas::budget::Cost), CallError> {
    let reply_type = check_headers(reply_message).map_err(|error| CallError::Agent {
        role: role.to_string(),
        error,
    })?;
    let reply: Reply<R::Reply> =
        codec::decode(reply_type, &reply_message.payload).map_err(|e| {
            let error = BusError::Decode {
                subject: subject.to_owned(),
                detail: e.to_string(),
            };
            crate::count_error(&error);
            CallError::Bus(error)
        })?;
    match reply.result {
        Ok(body) => Ok((body, reply.cost)),
        Err(error) => Err(CallError::Agent {
            role: role.to_string(),
            error,
        }),
    }
}

/// Calls `role`'s operation `R::OP` with `body`, encoded as `content_type`, and waits
/// up to `timeout`.
///
/// Returns the reply body and what the work cost, or a [`CallError`] that says whether
/// the transport or the agent failed.
pub async fn call<R: Rpc>(
    bus: &dyn Bus,
    role: &Role,
    meta: Meta,
    body: R,
    timeout: Duration,
    content_type: ContentType,
) -> Result<(R::Reply, kgmesh_schemas::budget::Cost), CallError> {
    call_to(bus, Target::role(role, content_type), meta, body, timeout).await
}

/// Asks `instance` of `role` to stop the work of call `call_id` (fire and forget: an
/// instance that finished it, or an agent that does not know the operation, ignores
/// it).
pub async fn cancel(
    bus: &dyn Bus,
    role: &Role,
    instance: &str,
    call_id: &str,
) -> Result<(), BusError> {
    let mut message = Message::default();
    message
        .headers
        .insert(headers::CALL_ID.to_owned(), call_id.to_owned());
    let subject =
        crate::direct_subject(&role.subject(kgmesh_schemas::envelope::CANCEL_OP), instance);
    bus.publish(&subject, message).await
}

/// Where a typed call goes: a role (any replica, or one `instance` on its
/// [`crate::direct_subject`]), in which wire format, and under which call id (the
/// [`headers::CALL_ID`] a later [`cancel`] names).
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    pub role: &'a Role,
    pub instance: Option<&'a str>,
    pub content_type: ContentType,
    pub call_id: Option<&'a str>,
}

impl<'a> Target<'a> {
    /// Any replica of `role`, no call id.
    pub fn role(role: &'a Role, content_type: ContentType) -> Self {
        Self {
            role,
            instance: None,
            content_type,
            call_id: None,
        }
    }
}

/// [`call`] to `target`.
pub async fn call_to<R: Rpc>(
    bus: &dyn Bus,
    target: Target<'_>,
    meta: Meta,
    body: R,
    timeout: Duration,
) -> Result<(R::Reply, kgmesh_schemas::budget::Cost), CallError> {
    let Target {
        role,
        instance,
        content_type,
        call_id,
    } = target;
    let subject = match instance {
        Some(instance) => crate::direct_subject(&role.subject(R::OP), instance),
        None => role.subject(R::OP),
    };
    let mut message = encode_request(content_type, meta, body)?;
    if let Some(call_id) = call_id {
        message
            .headers
            .insert(headers::CALL_ID.to_owned(), call_id.to_owned());
    }
    let reply_message = bus.request(&subject, message, timeout).await?;
    decode_reply::<R>(role, &subject, &reply_message)
}
