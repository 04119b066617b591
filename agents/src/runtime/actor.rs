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
use kgmesh_bus::Message;
use kgmesh_schemas::{AgentError, Role};

use super::spec::{error_reply, reply_content_type, CallSite, OpHandler};

#[derive(Clone)]
pub(crate) struct RoleActor {
    pub role: Role,
    pub instance_id: Arc<str>,
    /// subject → (op name, handler).
    pub ops: HashMap<String, (String, Arc<dyn OpHandler>)>,
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
        handler.call(site, invoke.message)
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
