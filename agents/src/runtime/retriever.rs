//! What every retriever role shares, so that each role's file holds only its own
//! retrieval: the deadline checked before any work, an empty reply without work for a
//! request that links no entity (to the retrievers that start from entities), the time
//! and budget the work starts with, and evidence built with the role's name as its
//! source, cut to what the request allows.

use std::{sync::Arc, time::Instant};

use kgmesh_schemas::{
    messages::{
        context::{Evidence, EvidenceItem},
        retrieve::{RetrieveReply, RetrieveRequest},
    },
    AgentError, Budget, Role, RoleKind,
};

use super::{CallContext, RoleSpec};

/// A retriever role's work on one request.
#[async_trait::async_trait]
pub trait Retriever: Send + Sync + 'static {
    /// The role's name, the source of its evidence.
    const ROLE: &'static str;
    /// `true`: a request that links no entity is answered with no evidence, without
    /// any work (a retriever that starts from the question's entities).
    const NEEDS_ENTITIES: bool = false;

    /// Retrieves for `call`, whose deadline has not passed yet.
    async fn retrieve(&self, call: RetrieveCall) -> Result<RetrieveReply, AgentError>;
}

/// One retrieval request, as a [`Retriever`] gets it.
pub struct RetrieveCall {
    pub ctx: CallContext,
    pub request: RetrieveRequest,
    /// When the role's own work began.
    pub started: Instant,
    /// The question's budget left for this call.
    pub budget: Budget,
}

impl RetrieveCall {
    /// Evidence the reply may hold at most (the request's `max_evidence`, at least 1).
    pub fn max_evidence(&self) -> usize {
        self.request.max_evidence.max(1) as usize
    }
}

/// The spec of a retriever role: [`Retriever::retrieve`] serves every
/// `RetrieveRequest`; more operations can be added with [`RoleSpec::op`].
pub fn retriever_spec<T: Retriever>(retriever: Arc<T>) -> RoleSpec {
    RoleSpec::new(Role::well_known(T::ROLE), RoleKind::Retriever).op(
        move |ctx: CallContext, request: RetrieveRequest| {
            let retriever = retriever.clone();
            async move {
                ctx.check_deadline()?;
                if T::NEEDS_ENTITIES && request.entities.is_empty() {
                    return Ok(RetrieveReply::default());
                }
                let call = RetrieveCall {
                    started: Instant::now(),
                    budget: *ctx.budget(),
                    ctx,
                    request,
                };
                retriever.retrieve(call).await
            }
        },
    )
}

/// Evidence of `source`, from `(item, score)` pairs in their order, at most `max`.
pub fn evidence<I>(source: &str, max: usize, items: I) -> Vec<Evidence>
where
    I: IntoIterator<Item = (EvidenceItem, f32)>,
{
    items
        .into_iter()
        .take(max)
        .map(|(item, score)| Evidence {
            source: source.to_owned(),
            score,
            item,
        })
        .collect()
}
