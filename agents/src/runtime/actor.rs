//! The actor that holds a role's operations and serves its calls.
//!
//! One actor per started role. A call arrives as an [`Invoke`] message; the actor
//! decodes it in its own context and returns the handler's work as a `ResponseFuture`,
//! which actix runs on the actor's arbiter concurrently with other calls (so a slow
//! call does not block the mailbox). A role started with several workers
//! ([`super::StartOptions::workers`]) has one actor per worker, each on its own thread,
//! so that CPU-bound handlers use as many cores.

use std::{collections::HashMap, sync::Arc};

use actix::{Actor, ActorContext, Context, Handler, Message as ActixMessage, ResponseFuture};
use futures::future::{AbortHandle, Abortable};
use kgmesh_bus::Message;
use kgmesh_schemas::{envelope::headers, AgentError, ContentType, Role};

use super::spec::{error_reply, reply_content_type, CallSite, OpHandler};

#[derive(Clone)]
pub(crate) struct RoleActor {
    pub role: Role,
    pub instance_id: Arc<str>,
    /// subject → (op name, handler).
    pub ops: HashMap<String, (String, Arc<dyn OpHandler>)>,
    /// Calls in progress that may be cancelled, shared by the role's workers.
    pub running: Running,
}

/// The calls in progress that carry a call id ([`headers::CALL_ID`]), so that a
/// cancel message can stop their work.
#[derive(Clone, Default)]
pub(crate) struct Running(Arc<parking_lot::Mutex<RunningCalls>>);

#[derive(Default)]
pub(crate) struct RunningCalls {
    next: u64,
    /// call id → (token, handle) of each request with it in progress here.
    calls: HashMap<String, Vec<(u64, AbortHandle)>>,
}

impl Running {
    /// Stops the work of every call with `call_id` still in progress here; how many.
    pub fn cancel(&self, call_id: &str) -> usize {
        let handles = self.0.lock().calls.remove(call_id).unwrap_or_default();
        for (_, handle) in &handles {
            handle.abort();
        }
        handles.len()
    }

    /// `work`, stoppable by [`Running::cancel`] of `call_id` until it ends.
    fn track(
        &self,
        call_id: String,
        work: ResponseFuture<Message>,
        content_type: ContentType,
    ) -> ResponseFuture<Message> {
        let (handle, registration) = AbortHandle::new_pair();
        let token = {
            let mut running = self.0.lock();
            running.next += 1;
            let token = running.next;
            running
                .calls
                .entry(call_id.clone())
                .or_default()
                .push((token, handle));
            token
        };
        let running = self.clone();
        Box::pin(async move {
            let outcome = Abortable::new(work, registration).await;
            running.forget(&call_id, token);
            outcome.unwrap_or_else(|_aborted| {
                error_reply(
                    content_type,
                    AgentError::Unavailable {
                        detail: "cancelled: another replica answered".to_owned(),
                    },
                )
            })
        })
    }

    fn forget(&self, call_id: &str, token: u64) {
        let mut running = self.0.lock();
        if let Some(handles) = running.calls.get_mut(call_id) {
            handles.retain(|(t, _)| *t != token);
            if handles.is_empty() {
                running.calls.remove(call_id);
            }
        }
    }
}

impl Actor for RoleActor {
    type Context = Context<Self>;

    fn started(&mut self, _ctx: &mut Self::Context) {
        tracing::debug!(role = %self.role, instance = %self.instance_id, "role actor started");
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        tracing::debug!(role = %self.role, instance = %self.instance_id, "role actor stopped");
    }
}

/// One bus request for the actor to serve.
pub(crate) struct Invoke {
    pub subject: String,
    pub message: Message,
}

impl ActixMessage for Invoke {
    type Result = Message;
}

impl Handler<Invoke> for RoleActor {
    type Result = ResponseFuture<Message>;

    fn handle(&mut self, invoke: Invoke, _ctx: &mut Self::Context) -> Self::Result {
        let Some((op, handler)) = self.ops.get(&invoke.subject) else {
            let content_type = reply_content_type(&invoke.message);
            let error = AgentError::BadRequest {
                detail: format!("{} does not serve {}", self.role, invoke.subject),
            };
            return Box::pin(futures::future::ready(error_reply(content_type, error)));
        };
        let site = CallSite {
            role: self.role.clone(),
            op: op.clone(),
            instance_id: self.instance_id.clone(),
        };
        let call_id = invoke.message.headers.get(headers::CALL_ID).cloned();
        let content_type = reply_content_type(&invoke.message);
        let work = handler.call(site, invoke.message);
        match call_id {
            Some(call_id) => self.running.track(call_id, work, content_type),
            None => work,
        }
    }
}

/// Stops the actor once the bus has drained its in-flight calls.
pub(crate) struct Shutdown;

impl ActixMessage for Shutdown {
    type Result = ();
}

impl Handler<Shutdown> for RoleActor {
    type Result = ();

    fn handle(&mut self, _msg: Shutdown, ctx: &mut Self::Context) {
        ctx.stop();
    }
}
