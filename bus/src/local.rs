//! The in-process bus: every role of an embedded `kgmesh ask` talks through it.
//!
//! It keeps NATS's semantics so that code tested here behaves the same on NATS: a
//! request goes to one member of each queue group on the subject (first reply wins), a
//! subject nobody serves answers `NoResponders` at once, a slow handler answers
//! `TimedOut`, and payloads above the limit are refused before anything is sent.

use std::{
    collections::{BTreeMap, HashMap},
    sync::{
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
        Arc,
    },
    time::Duration,
};

use async_trait::async_trait;
use futures::future::select_ok;
use kgmesh_schemas::{envelope::headers, ContentType, RoleInfo};
use parking_lot::RwLock;
use rand::Rng;
use tokio::sync::Notify;

use crate::{Bus, BusError, Handler, Message, ServiceHandle, ServiceInstance, ServiceSpec};

/// NATS's default `max_payload`, so that a message that fits here also fits there.
pub const DEFAULT_MAX_PAYLOAD: usize = 1024 * 1024;

/// How a request picks one member of a queue group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Selection {
    /// Members in turn; deterministic, which tests like.
    #[default]
    RoundRobin,
    /// A uniformly random member, as NATS does.
    Random,
}

#[derive(Debug, Clone)]
pub struct LocalBusOptions {
    pub max_payload: usize,
    pub selection: Selection,
}

impl Default for LocalBusOptions {
    fn default() -> Self {
        Self {
            max_payload: DEFAULT_MAX_PAYLOAD,
            selection: Selection::RoundRobin,
        }
    }
}

/// In-process [`Bus`]. Cheap to clone; clones share the same subjects.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use std::time::Duration;
/// use kgmesh_bus::{Bus, BusError, LocalBus, Message};
/// let bus = LocalBus::new();
/// let error = bus
///     .request("nobody.here", Message::default(), Duration::from_secs(1))
///     .await
///     .unwrap_err();
/// assert!(matches!(error, BusError::NoResponders { .. }));
/// # });
/// ```
#[derive(Clone, Default)]
pub struct LocalBus {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    options: LocalBusOptions,
    /// subject → queue group → members.
    routes: RwLock<HashMap<String, BTreeMap<String, Vec<Member>>>>,
    instances: RwLock<BTreeMap<String, Arc<Instance>>>,
    next_member: AtomicUsize,
}

#[derive(Clone)]
struct Member {
    instance: Arc<Instance>,
    handler: Arc<dyn Handler>,
    /// The endpoint's subject, what the handler is told (also on the direct subject).
    subject: String,
}

/// One `serve` registration.
struct Instance {
    id: String,
    info: RoleInfo,
    accepting: AtomicBool,
    in_flight: AtomicUsize,
    idle: Notify,
    requests: AtomicU64,
    errors: AtomicU64,
}

impl Instance {
    /// Runs `handler` as tracked work: counted in flight until it finishes, even if the
    /// requester gave up, so that `stop` can wait for it.
    fn run(
        self: &Arc<Self>,
        handler: &Arc<dyn Handler>,
        subject: &str,
        message: Message,
    ) -> tokio::task::JoinHandle<Message> {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        let guard = InFlightGuard(self.clone());
        let work = handler.handle(subject.to_owned(), message);
        tokio::spawn(async move {
            let reply = work.await;
            guard.0.requests.fetch_add(1, Ordering::Relaxed);
            if reply.headers.contains_key(headers::ERROR) {
                guard.0.errors.fetch_add(1, Ordering::Relaxed);
            }
            drop(guard);
            reply
        })
    }
}

/// Decrements the in-flight count even when the handler panics.
struct InFlightGuard(Arc<Instance>);

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

impl LocalBus {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_options(options: LocalBusOptions) -> Self {
        Self {
            shared: Arc::new(Shared {
                options,
                ..Shared::default()
            }),
        }
    }

    /// One accepting member per queue group on `subject`.
    fn pick(&self, subject: &str) -> Vec<Member> {
        let routes = self.shared.routes.read();
        let Some(groups) = routes.get(subject) else {
            return Vec::new();
        };
        groups
            .values()
            .filter_map(|members| {
                let accepting: Vec<&Member> = members
                    .iter()
                    .filter(|m| m.instance.accepting.load(Ordering::SeqCst))
                    .collect();
                if accepting.is_empty() {
                    return None;
                }
                let index = match self.shared.options.selection {
                    Selection::RoundRobin => {
                        self.shared.next_member.fetch_add(1, Ordering::Relaxed) % accepting.len()
                    }
                    Selection::Random => rand::thread_rng().gen_range(0..accepting.len()),
                };
                Some(accepting[index].clone())
            })
            .collect()
    }

    fn check_size(&self, message: &Message) -> Result<(), BusError> {
        crate::check_size(message, self.shared.options.max_payload)
    }

    fn unroute(&self, instance_id: &str) {
        let mut routes = self.shared.routes.write();
        for groups in routes.values_mut() {
            for members in groups.values_mut() {
                members.retain(|m| m.instance.id != instance_id);
            }
            groups.retain(|_, members| !members.is_empty());
        }
        routes.retain(|_, groups| !groups.is_empty());
    }
}

impl LocalBus {
    async fn request_once(
        &self,
        subject: &str,
        message: Message,
        timeout: Duration,
    ) -> Result<Message, BusError> {
        self.check_size(&message)?;
        let members = self.pick(subject);
        if members.is_empty() {
            return Err(BusError::NoResponders {
                subject: subject.to_owned(),
            });
        }
        let tasks = members.iter().map(|member| {
            let task = member
                .instance
                .run(&member.handler, &member.subject, message.clone());
            Box::pin(async move {
                task.await
                    .map_err(|e| BusError::Other(format!("handler failed: {e}")))
            })
        });
        match tokio::time::timeout(timeout, select_ok(tasks)).await {
            Ok(Ok((reply, _others))) => Ok(reply),
            Ok(Err(error)) => Err(error),
            Err(_elapsed) => Err(BusError::TimedOut {
                subject: subject.to_owned(),
                timeout,
            }),
        }
    }
}

#[async_trait]
impl Bus for LocalBus {
    async fn request(
        &self,
        subject: &str,
        message: Message,
        timeout: Duration,
    ) -> Result<Message, BusError> {
        self.request_once(subject, message, timeout)
            .await
            .inspect_err(crate::count_error)
    }

    async fn publish(&self, subject: &str, message: Message) -> Result<(), BusError> {
        self.check_size(&message)?;
        for member in self.pick(subject) {
            // Fire and forget: the reply, if any, goes nowhere.
            let _task = member
                .instance
                .run(&member.handler, &member.subject, message.clone());
        }
        Ok(())
    }

    async fn serve(
        &self,
        spec: ServiceSpec,
        handler: Arc<dyn Handler>,
    ) -> Result<Box<dyn ServiceHandle>, BusError> {
        let instance = Arc::new(Instance {
            id: uuid::Uuid::new_v4().simple().to_string(),
            info: spec.info,
            accepting: AtomicBool::new(true),
            in_flight: AtomicUsize::new(0),
            idle: Notify::new(),
            requests: AtomicU64::new(0),
            errors: AtomicU64::new(0),
        });
        {
            let mut routes = self.shared.routes.write();
            for endpoint in &spec.endpoints {
                let member = Member {
                    instance: instance.clone(),
                    handler: handler.clone(),
                    subject: endpoint.subject.clone(),
                };
                routes
                    .entry(endpoint.subject.clone())
                    .or_default()
                    .entry(endpoint.queue_group.clone())
                    .or_default()
                    .push(member.clone());
                routes
                    .entry(crate::direct_subject(&endpoint.subject, &instance.id))
                    .or_default()
                    .entry(endpoint.queue_group.clone())
                    .or_default()
                    .push(member);
            }
        }
        self.shared
            .instances
            .write()
            .insert(instance.id.clone(), instance.clone());
        Ok(Box::new(LocalServiceHandle {
            bus: self.clone(),
            instance,
        }))
    }

    async fn discover(&self, _wait: Duration) -> Result<Vec<ServiceInstance>, BusError> {
        // Registrations are in this process: nothing to wait for.
        let instances = self.shared.instances.read();
        Ok(instances
            .values()
            .map(|instance| ServiceInstance {
                info: instance.info.clone(),
                instance_id: instance.id.clone(),
                // Roles in this process are served through `typed`, which reads both.
                codecs: vec![ContentType::Bincode, ContentType::Json],
                requests: instance.requests.load(Ordering::Relaxed),
                errors: instance.errors.load(Ordering::Relaxed),
            })
            .collect())
    }

    fn max_payload(&self) -> usize {
        self.shared.options.max_payload
    }
}

struct LocalServiceHandle {
    bus: LocalBus,
    instance: Arc<Instance>,
}

#[async_trait]
impl ServiceHandle for LocalServiceHandle {
    async fn stop(&self, grace: Duration) {
        self.instance.accepting.store(false, Ordering::SeqCst);
        self.bus.unroute(&self.instance.id);
        let drained = async {
            loop {
                let idle = self.instance.idle.notified();
                if self.instance.in_flight.load(Ordering::SeqCst) == 0 {
                    return;
                }
                idle.await;
            }
        };
        if tokio::time::timeout(grace, drained).await.is_err() {
            tracing::warn!(
                instance = %self.instance.id,
                in_flight = self.instance.in_flight.load(Ordering::SeqCst),
                "stop grace elapsed with requests still in flight"
            );
        }
        self.bus.shared.instances.write().remove(&self.instance.id);
    }

    fn instance_id(&self) -> &str {
        &self.instance.id
    }
}
