//! Declaring a role: its announcement and its typed operations.

use std::{
    collections::BTreeMap, future::Future, marker::PhantomData, panic::AssertUnwindSafe, sync::Arc,
    time::Duration,
};

use futures::{future::BoxFuture, FutureExt};
use kgmesh_bus::{
    typed::{check_headers, decode_request, encode_reply},
    Message,
};
use kgmesh_schemas::{AgentError, ContentType, Reply, Role, RoleInfo, RoleKind, Rpc};
use tracing::Instrument;

use super::CallContext;

/// A role: what it announces ([`RoleInfo`]) and a handler per operation.
///
/// Built once per process by the role's factory (see [`super::RoleDescriptor`]), then started
/// with [`super::start_role`]. Handlers are plain async functions of
/// `(CallContext, Request)`; whatever state they need (the pure core, store handles)
/// they capture, usually behind an `Arc`.
pub struct RoleSpec {
    pub(crate) info: RoleInfo,
    pub(crate) ops: BTreeMap<String, Arc<dyn OpHandler>>,
    pub(crate) problems: Vec<String>,
}

impl std::fmt::Debug for RoleSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoleSpec")
            .field("info", &self.info)
            .field("problems", &self.problems)
            .finish()
    }
}

impl RoleSpec {
    /// A role with no operations yet, at this crate's version.
    pub fn new(role: Role, kind: RoleKind) -> Self {
        Self {
            info: RoleInfo {
                role,
                version: env!("CARGO_PKG_VERSION").to_owned(),
                kind,
                ops: Vec::new(),
            },
            ops: BTreeMap::new(),
            problems: Vec::new(),
        }
    }

    /// Overrides the announced version (a semantic version, e.g. `"1.2.0"`).
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.info.version = version.into();
        self
    }

    /// Serves requests of type `R` on operation `R::OP` with `handler`.
    ///
    /// The runtime decodes the request (a bad payload or version gets a typed error
    /// reply without calling the handler), enforces the question's deadline, turns a
    /// panic into an `Internal` error reply, and replies with the handler's result and
    /// the cost recorded on the [`CallContext`].
    pub fn op<R, F, Fut>(mut self, handler: F) -> Self
    where
        R: Rpc,
        F: Fn(CallContext, R) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R::Reply, AgentError>> + Send + 'static,
    {
        if self.ops.contains_key(R::OP) {
            self.problems
                .push(format!("operation {:?} is declared twice", R::OP));
            return self;
        }
        self.info.ops.push(R::OP.to_owned());
        self.ops.insert(
            R::OP.to_owned(),
            Arc::new(TypedOp::<R, F> {
                handler,
                _request: PhantomData,
            }),
        );
        self
    }

    /// [`RoleSpec::op`] with a handler of shared state: `handler(state, ctx, request)`
    /// is called with a clone of `state` for every request.
    pub fn op_on<S, R, F, Fut>(self, state: &Arc<S>, handler: F) -> Self
    where
        S: Send + Sync + ?Sized + 'static,
        R: Rpc,
        F: Fn(Arc<S>, CallContext, R) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R::Reply, AgentError>> + Send + 'static,
    {
        let state = Arc::clone(state);
        self.op(move |ctx, request| handler(Arc::clone(&state), ctx, request))
    }

    pub fn info(&self) -> &RoleInfo {
        &self.info
    }

    pub fn role(&self) -> &Role {
        &self.info.role
    }

    /// Checks what a start would refuse: no operations, duplicate operations, a
    /// version NATS would reject.
    pub fn validate(&self) -> Result<(), String> {
        let mut problems = self.problems.clone();
        if self.ops.is_empty() {
            problems.push("a role needs at least one operation".to_owned());
        }
        if !is_semver(&self.info.version) {
            problems.push(format!(
                "version {:?} is not a semantic version (x.y.z)",
                self.info.version
            ));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!("role {}: {}", self.info.role, problems.join("; ")))
        }
    }
}

fn is_semver(version: &str) -> bool {
    let core = version.split(['-', '+']).next().unwrap_or("");
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
}

/// Where a call runs: the runtime's view of one request before it is decoded.
pub(crate) struct CallSite {
    pub role: Role,
    pub op: String,
    pub instance_id: Arc<str>,
}

/// A typed operation with its type erased, so that one actor can hold many.
pub(crate) trait OpHandler: Send + Sync + 'static {
    /// Decodes `message`, runs the handler and encodes the reply. The decoding happens
    /// now (inside the actor); the returned future does the work.
    fn call(&self, site: CallSite, message: Message) -> BoxFuture<'static, Message>;
}

struct TypedOp<R, F> {
    handler: F,
    _request: PhantomData<fn() -> R>,
}

impl<R, F, Fut> OpHandler for TypedOp<R, F>
where
    R: Rpc,
    F: Fn(CallContext, R) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R::Reply, AgentError>> + Send + 'static,
{
    fn call(&self, site: CallSite, message: Message) -> BoxFuture<'static, Message> {
        let (content_type, request) = match decode_request::<R>(&message) {
            Ok(decoded) => decoded,
            Err((content_type, error)) => {
                tracing::warn!(role = %site.role, op = %site.op, kind = error.kind(), %error, "refused request");
                super::metrics::record_call(&site.role, &site.op, error.kind(), Duration::ZERO);
                return futures::future::ready(error_reply(content_type, error)).boxed();
            }
        };
        let context = CallContext::new(request.meta, site.role, &site.op, &site.instance_id);
        if let Err(error) = context.check_deadline() {
            super::metrics::record_call(context.role(), context.op(), error.kind(), Duration::ZERO);
            return futures::future::ready(error_reply(content_type, error)).boxed();
        }
        let budget = context.budget();
        let span = tracing::info_span!(
            "agent.call",
            otel.name = format!("{} {}", context.role(), context.op()),
            otel.kind = "server",
            role = %context.role(),
            op = %context.op(),
            question_id = %context.question_id(),
            round = context.round(),
            kgmesh.role = %context.role(),
            kgmesh.op = %context.op(),
            kgmesh.question_id = %context.question_id(),
            kgmesh.round = context.round(),
            kgmesh.instance_id = %site.instance_id,
            kgmesh.budget.rounds_left = budget.rounds,
            kgmesh.budget.llm_calls_left = budget.llm_calls,
            kgmesh.budget.tokens_left = budget.tokens,
            kgmesh.budget.rows_left = budget.result_rows,
            kgmesh.budget.ms_left = context.remaining().as_millis() as u64,
            kgmesh.cost.llm_calls = tracing::field::Empty,
            kgmesh.cost.tokens = tracing::field::Empty,
            kgmesh.retrieved.rows = tracing::field::Empty,
            kgmesh.error = tracing::field::Empty,
        );
        // One trace per question: this call's span is a child of the caller's span,
        // named by the request's trace context.
        if context.trace().is_empty() {
            // A sender that left `Meta.trace` empty may still have set the headers.
            let headers = &message.headers;
            let from_headers =
                kgmesh_telemetry::from_headers(|name| headers.get(name).map(String::as_str));
            kgmesh_telemetry::set_parent(&span, &from_headers);
        } else {
            kgmesh_telemetry::set_parent(&span, context.trace());
        }
        // The synchronous part of the handler may panic too.
        let started = std::panic::catch_unwind(AssertUnwindSafe(|| {
            (self.handler)(context.clone(), request.body)
        }));
        async move {
            let result = match started {
                Err(panic) => Err(panic_error(&context, panic)),
                Ok(work) => {
                    let remaining = context.remaining();
                    match tokio::time::timeout(remaining, AssertUnwindSafe(work).catch_unwind())
                        .await
                    {
                        Err(_elapsed) => Err(AgentError::Timeout {
                            detail: format!(
                                "{}.{}: deadline passed after {:?} of work",
                                context.role(),
                                context.op(),
                                context.elapsed()
                            ),
                        }),
                        Ok(Err(panic)) => Err(panic_error(&context, panic)),
                        Ok(Ok(result)) => result,
                    }
                }
            };
            if let Err(error) = &result {
                tracing::info!(kind = error.kind(), %error, "call failed");
            }
            super::metrics::record_call(
                context.role(),
                context.op(),
                super::metrics::outcome(&result),
                context.elapsed(),
            );
            let reply = Reply {
                cost: context.final_cost(),
                result,
            };
            let span = tracing::Span::current();
            span.record("kgmesh.cost.llm_calls", reply.cost.llm_calls);
            span.record(
                "kgmesh.cost.tokens",
                reply.cost.prompt_tokens + reply.cost.completion_tokens,
            );
            span.record("kgmesh.retrieved.rows", reply.cost.graph_rows);
            if let Err(error) = &reply.result {
                span.record("kgmesh.error", error.kind());
            }
            encode_reply(content_type, &reply)
        }
        .instrument(span)
        .boxed()
    }
}

fn panic_error(context: &CallContext, panic: Box<dyn std::any::Any + Send>) -> AgentError {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_owned());
    tracing::error!(role = %context.role(), op = %context.op(), panic = %text, "handler panicked");
    AgentError::Internal {
        detail: format!("{}.{} panicked: {text}", context.role(), context.op()),
    }
}

/// An error reply. The reply type does not matter: an `Err` result encodes the same
/// whatever the `Ok` type is, in both content types.
pub(crate) fn error_reply(content_type: ContentType, error: AgentError) -> Message {
    encode_reply(content_type, &Reply::<()>::err(error))
}

/// The content type to answer a message in, even one whose headers are bad.
pub(crate) fn reply_content_type(message: &Message) -> ContentType {
    check_headers(message).unwrap_or(ContentType::Bincode)
}
