//! Echo's pure core.

use kgmesh_schemas::{
    messages::echo::{EchoReply, EchoRequest},
    AgentError,
};

/// Longest text echoed back; anything longer is a caller bug worth a typed error.
pub const MAX_TEXT_BYTES: usize = 256 * 1024;

/// The reply to `request`, naming `served_by` as the server.
pub fn echo(request: &EchoRequest, served_by: &str) -> Result<EchoReply, AgentError> {
    if request.text.len() > MAX_TEXT_BYTES {
        return Err(AgentError::BadRequest {
            detail: format!(
                "echo text is {} bytes; the limit is {MAX_TEXT_BYTES}",
                request.text.len()
            ),
        });
    }
    Ok(EchoReply {
        text: request.text.clone(),
        served_by: served_by.to_owned(),
    })
}
