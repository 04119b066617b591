//! The entity-linker role: one batch of mentions per request.

use std::{sync::Arc, time::Instant};

use kgmesh_models::Embedder;
use kgmesh_schemas::{
    messages::entity_linker::{LinkReply, LinkRequest},
    AgentError, Role, RoleKind,
};
use kgmesh_stores::{GraphStore, VectorIndex};

use super::{
    core::{link, EmbeddingLinker, LinkError},
    names::SharedNames,
};
use crate::{
    runtime::{AgentDeps, CallContext, RoleBuildError, RoleSpec},
    scoring::store_error,
};

/// Candidates per mention when the request says 0.
pub const DEFAULT_TOP_M: usize = 3;
/// Candidates per mention at most, whatever the request says.
pub const MAX_TOP_M: usize = 20;
/// Mentions per request at most.
pub const MAX_MENTIONS: usize = 256;

struct EntityLinker {
    graph: Arc<dyn GraphStore>,
    names: Arc<SharedNames>,
    embeddings_opt: Option<(Arc<dyn Embedder>, Arc<dyn VectorIndex>)>,
}

impl EntityLinker {
    async fn link(&self, ctx: CallContext, request: LinkRequest) -> Result<LinkReply, AgentError> {
        ctx.check_deadline()?;
        if request.mentions.len() > MAX_MENTIONS {
            return Err(AgentError::BadRequest {
                detail: format!(
                    "{} mentions in one request; at most {MAX_MENTIONS}",
                    request.mentions.len()
                ),
            });
        }
        let started = Instant::now();
        let index = self.names.get(self.graph.as_ref()).await?;
        let top_m = match request.top_m as usize {
            0 => DEFAULT_TOP_M,
            m => m.min(MAX_TOP_M),
        };
        let embedding = self
            .embeddings_opt
            .as_ref()
            .map(|(embedder, vectors)| EmbeddingLinker {
                embedder: embedder.as_ref(),
                vectors: vectors.as_ref(),
            });
        let links = link(
            &request.mentions,
            &index,
            embedding.as_ref(),
            request.mode,
            top_m,
        )
        .await
        .map_err(|error| match error {
            LinkError::Store(error) => store_error(error),
            LinkError::Embed(error) => AgentError::Unavailable {
                detail: error.to_string(),
            },
            LinkError::NoEmbeddings => AgentError::BadRequest {
                detail:
                    "embedding links need an embedder and a vector index; use mode Fuzzy or Both"
                        .to_owned(),
            },
        })?;
        let found: usize = links.iter().map(|l| l.candidates.len()).sum();
        ctx.record_graph(found as u64, started.elapsed());
        Ok(LinkReply { links })
    }
}

/// The role's factory (see [`super::DESCRIPTOR`]).
pub fn role(deps: &AgentDeps) -> Result<RoleSpec, RoleBuildError> {
    let linker = Arc::new(EntityLinker {
        graph: deps.require_graph(Role::ENTITY_LINKER)?,
        names: deps.shared::<SharedNames>(),
        embeddings_opt: deps.embedder.clone().zip(deps.vectors.clone()),
    });
    Ok(
        RoleSpec::new(Role::well_known(Role::ENTITY_LINKER), RoleKind::Core)
            .op_on(&linker, |linker, ctx, request: LinkRequest| async move {
                linker.link(ctx, request).await
            }),
    )
}
