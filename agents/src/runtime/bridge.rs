//! From bus to actor and back: starting a role, serving it, stopping it.

use std::{collections::HashMap, sync::Arc, time::Duration};

use actix::{Actor, Addr};
use futures::future::BoxFuture;
use kgmesh_bus::{Bus, Endpoint, Handler, Message, ServiceHandle, ServiceSpec};
use kgmesh_schemas::{
    envelope::{headers, CANCEL_OP},
    AgentError, RoleInfo,
};

use super::{
    actor::{Invoke, RoleActor, Running, Shutdown},
    spec::{error_reply, reply_content_type},
    RoleSpec, RuntimeError,
};

/// How to start a role.
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    /// A readable instance name (e.g. the pod name); a random id when `None`. It shows
    /// in logs and in [`super::CallContext::served_by`].
    pub instance_name: Option<String>,
    /// Requests served at once at most; one more is answered at once with
    /// [`AgentError::Overloaded`], which callers take as "try another replica".
    /// `None`: no limit.
    pub max_in_flight: Option<usize>,
    /// Threads serving the role's requests, each with its own copy of the role's
    /// actor, taking requests in turn; 0 and 1 mean one (on the caller's actix system
    /// when there is one). A CPU-bound role uses as many cores as it has workers.
    pub workers: usize,
}

/// A running role. Dropping it leaves the role running; [`RoleHandle::stop`] drains
/// and stops it.
pub struct RoleHandle {
    info: RoleInfo,
    instance_id: Arc<str>,
    service: Box<dyn ServiceHandle>,
    /// One actor per worker, and the actix system each runs on when the role started
    /// its own.
    actors: Vec<(Addr<RoleActor>, Option<actix::System>)>,
}

impl std::fmt::Debug for RoleHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoleHandle")
            .field("info", &self.info)
            .field("instance_id", &self.instance_id)
            .finish()
    }
}

impl RoleHandle {
    pub fn info(&self) -> &RoleInfo {
        &self.info
    }

    /// The runtime's instance id (what [`super::CallContext::instance_id`] reports).
    pub fn instance_id(&self) -> &str {
        &self.instance_id
    }

    /// The bus's id for this registration (what [`Bus::discover`] reports).
    pub fn bus_instance_id(&self) -> &str {
        self.service.instance_id()
    }

    /// Stops taking requests, waits up to `grace` for in-flight calls to be answered,
    /// then stops the actor.
    pub async fn stop(self, grace: Duration) {
        self.service.stop(grace).await;
        for (actor, own_system) in self.actors {
            // The actor may already be gone if its system stopped; nothing left to do.
            let _ = actor.send(Shutdown).await;
            if let Some(system) = own_system {
                system.stop();
            }
        }
        tracing::info!(role = %self.info.role, instance = %self.instance_id, "role stopped");
    }
}

/// Starts `spec` on `bus`: one actor for the role, one endpoint per operation in the
/// role's queue group, announced with the role's [`RoleInfo`].
///
/// Inside an actix system (an actix-rt runtime, `#[actix::test]`, actix-web) the actor
/// runs on the current arbiter; elsewhere (a plain tokio runtime) the role gets its own
/// actix system on a dedicated thread, stopped with the role.
pub async fn start_role(bus: Arc<dyn Bus>, spec: RoleSpec) -> Result<RoleHandle, RuntimeError> {
    start_role_with(bus, spec, StartOptions::default()).await
}

/// [`start_role`] with options.
pub async fn start_role_with(
    bus: Arc<dyn Bus>,
    spec: RoleSpec,
    options: StartOptions,
) -> Result<RoleHandle, RuntimeError> {
    spec.validate().map_err(RuntimeError::InvalidRole)?;
    let RoleSpec { info, ops, .. } = spec;
    let instance_id: Arc<str> = Arc::from(
        options
            .instance_name
            .unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string()[..12].to_owned()),
    );
    let mut endpoints = Vec::with_capacity(ops.len());
    let mut routes = HashMap::with_capacity(ops.len());
    for (op, handler) in ops {
        let subject = info.role.subject(&op);
        endpoints.push(Endpoint {
            subject: subject.clone(),
            queue_group: info.role.queue_group(),
        });
        routes.insert(subject, (op, handler));
    }
    // Every role also takes cancel messages for the work of its calls (the losers of
    // a hedged call); they are not one of its operations.
    let cancel_subject = info.role.subject(CANCEL_OP);
    endpoints.push(Endpoint {
        subject: cancel_subject.clone(),
        queue_group: info.role.queue_group(),
    });
    let running = Running::default();
    let actor = RoleActor {
        role: info.role.clone(),
        instance_id: instance_id.clone(),
        ops: routes,
        running: running.clone(),
    };
    let mut actors = Vec::new();
    if options.workers <= 1 {
        actors.push(spawn_actor(actor).await?);
    } else {
        for _ in 0..options.workers {
            actors.push(spawn_actor_thread(actor.clone()).await?);
        }
    }
    let service_spec = ServiceSpec {
        info: info.clone(),
        endpoints,
    };
    let bridge = Arc::new(Bridge {
        cancel_subject,
        running,
        actors: actors.iter().map(|(addr, _)| addr.clone()).collect(),
        next: std::sync::atomic::AtomicUsize::new(0),
        in_flight: options.max_in_flight.map(|most| {
            (
                Arc::new(tokio::sync::Semaphore::new(most.max(1))),
                most.max(1),
            )
        }),
    });
    let service = match bus.serve(service_spec, bridge).await {
        Ok(service) => service,
        Err(error) => {
            for (addr, own_system) in actors {
                let _ = addr.send(Shutdown).await;
                if let Some(system) = own_system {
                    system.stop();
                }
            }
            return Err(RuntimeError::Bus(error));
        }
    };
    tracing::info!(
        role = %info.role,
        instance = %instance_id,
        bus_instance = %service.instance_id(),
        ops = ?info.ops,
        workers = actors.len(),
        "role started"
    );
    Ok(RoleHandle {
        info,
        instance_id,
        service,
        actors,
    })
}

/// The actor on the caller's arbiter, or on a thread of its own when there is none.
async fn spawn_actor(
    actor: RoleActor,
) -> Result<(Addr<RoleActor>, Option<actix::System>), RuntimeError> {
    if let Some(arbiter) = actix::Arbiter::try_current() {
        return Ok((RoleActor::start_in_arbiter(&arbiter, |_| actor), None));
    }
    spawn_actor_thread(actor).await
}

/// The actor on a dedicated thread with its own actix system.
async fn spawn_actor_thread(
    actor: RoleActor,
) -> Result<(Addr<RoleActor>, Option<actix::System>), RuntimeError> {
    let (sender, receiver) = tokio::sync::oneshot::channel();
    let thread_name = format!("kgmesh-{}", actor.role);
    std::thread::Builder::new()
        .name(thread_name)
        .spawn(move || {
            let runner = actix::System::new();
            runner.block_on(async move {
                let addr = actor.start();
                let _ = sender.send((addr, actix::System::current()));
            });
            if let Err(error) = runner.run() {
                tracing::error!(%error, "role actor system failed");
            }
        })
        .map_err(|e| RuntimeError::Actor(format!("cannot start the actor thread: {e}")))?;
    let (addr, system) = receiver
        .await
        .map_err(|_| RuntimeError::Actor("the actor thread exited before starting".to_owned()))?;
    Ok((addr, Some(system)))
}

/// The bus handler of a role: forwards each request to the role's actor, refusing
/// those beyond its in-flight limit.
struct Bridge {
    /// Where cancel messages arrive, and the calls they may stop.
    cancel_subject: String,
    running: Running,
    /// One actor per worker, taking requests in turn.
    actors: Vec<Addr<RoleActor>>,
    next: std::sync::atomic::AtomicUsize,
    /// Permits for requests in flight, and how many there are.
    in_flight: Option<(Arc<tokio::sync::Semaphore>, usize)>,
}

impl Handler for Bridge {
    fn handle(&self, subject: String, message: Message) -> BoxFuture<'static, Message> {
        if subject == self.cancel_subject {
            if let Some(call_id) = message.headers.get(headers::CALL_ID) {
                let stopped = self.running.cancel(call_id);
                tracing::debug!(%call_id, stopped, "call cancelled");
            }
            return Box::pin(async { Message::default() });
        }
        let content_type = reply_content_type(&message);
        let permit = match &self.in_flight {
            Some((permits, most)) => match permits.clone().try_acquire_owned() {
                Ok(permit) => Some(permit),
                Err(_) => {
                    let refused = error_reply(
                        content_type,
                        AgentError::Overloaded {
                            in_flight: u32::try_from(*most).unwrap_or(u32::MAX),
                        },
                    );
                    return Box::pin(async move { refused });
                }
            },
            None => None,
        };
        let turn = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let actor = &self.actors[turn % self.actors.len()];
        let sent = actor.send(Invoke { subject, message });
        Box::pin(async move {
            let _permit = permit;
            match sent.await {
                Ok(reply) => reply,
                Err(mailbox_error) => error_reply(
                    content_type,
                    AgentError::Unavailable {
                        detail: format!("role is shutting down: {mailbox_error}"),
                    },
                ),
            }
        })
    }
}
