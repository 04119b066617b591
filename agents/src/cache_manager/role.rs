//! The cache-manager role: `lookup` (ISR + MMR-selected examples + a replayable plan),
//! `store` (a verified plan) and `feedback` (a user's verdict on an answer, see
//! [`super::feedback`]) over a [`PlanCache`] persisted in a [`PlanStore`].
//!
//! Without a language model the ISR is the single default domain and aspect, and
//! mentions are found with the graph's gazetteer, so the cache works with no model at
//! all; with a model, the ISR prompt supplies domain, aspect and topic entities.

use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc, Mutex,
};

use kgmesh_models::{lexical::gazetteer::Gazetteer, parse, prompts, Embedder, LanguageModel};
use kgmesh_schemas::{
    messages::cache::{
        CacheEntry, CacheFeedback, CacheFeedbackReply, CacheLookup, CacheLookupReply, CacheStore,
        CacheStoreReply, Feedback, Isr,
    },
    AgentError, Role, RoleKind,
};
use kgmesh_stores::GraphStore;
use tokio::sync::OnceCell;

use super::{
    audit::{self, AuditAction, AuditEntry},
    core::{embedding_text, CacheConfig, NearReplay, PlanCache},
    feedback::{self, Asked, Gate, Gatekeeper},
    persist::{PlanStore, SharedPlanStore},
    template,
    warm::Warmer,
};
use crate::{
    entity_linker::names::SharedNames,
    runtime::{AgentDeps, CallContext, RoleBuildError, RoleSpec},
};

/// Nodes a replayed plan starts from per mention, when several share its name (as
/// many as the LLM-free KG-Linker links).
const NAMESAKES: usize = 3;

pub struct CacheManager {
    cache: Arc<Mutex<PlanCache>>,
    store: Option<Arc<dyn PlanStore>>,
    loaded: OnceCell<()>,
    graph: Option<Arc<dyn GraphStore>>,
    /// The process's shared name index (see `AgentDeps::names`).
    names: Arc<SharedNames>,
    llm: Option<Arc<dyn LanguageModel>>,
    /// Embeds templates for replays of similar questions ([`PlanCache::near_replay`]).
    embedder: Option<Arc<dyn Embedder>>,
    /// The embedder has failed once (said once in the log, not on every lookup).
    embedder_failed: Arc<AtomicBool>,
    /// A background task is embedding the templates a lookup left unembedded.
    embedding: Arc<AtomicBool>,
    /// Feedback's rate limits and (without a store) held verdicts.
    keeper: Gatekeeper,
}

/// Templates embedded per call of the embedder, and at most by one lookup itself: a
/// larger backlog (the first lookup on a warmed cache: 1,300 PathQuestion 3-hop
/// templates took about 10 s of MiniLM on 2 CPUs, past the role's deadline) is embedded
/// in the background, and until it is done a similar question is matched among the
/// templates already embedded.
const EMBED_BATCH: usize = 64;

impl CacheManager {
    pub fn new(
        config: CacheConfig,
        store: Option<Arc<dyn PlanStore>>,
        graph: Option<Arc<dyn GraphStore>>,
        llm: Option<Arc<dyn LanguageModel>>,
    ) -> Self {
        Self {
            cache: Arc::new(Mutex::new(PlanCache::new(config))),
            store,
            loaded: OnceCell::new(),
            graph,
            names: Arc::default(),
            llm,
            embedder: None,
            embedder_failed: Arc::default(),
            embedding: Arc::default(),
            keeper: Gatekeeper::default(),
        }
    }

    /// Replays the plans of similar questions too, by the templates' embeddings.
    pub fn with_embedder(mut self, embedder: Option<Arc<dyn Embedder>>) -> Self {
        self.embedder = embedder;
        self
    }

    /// Embeds the templates that have no vector yet (after a load, a store, or a
    /// change another replica made): one batch now, and the rest, if any, in a
    /// background task (one at a time), so that no lookup waits for a whole warmed
    /// cache to be embedded.
    async fn embed_templates(&self, embedder: &Arc<dyn Embedder>) {
        let embedded = embed_missing(
            &self.cache,
            embedder.as_ref(),
            &self.embedder_failed,
            Some(1),
        )
        .await;
        // (A failing embedder is tried again by the next lookup, not in the background.)
        if !embedded
            || self.cache().unembedded_count() == 0
            || self.embedding.swap(true, Ordering::AcqRel)
        {
            return;
        }
        let (cache, embedder, failed, embedding) = (
            self.cache.clone(),
            embedder.clone(),
            self.embedder_failed.clone(),
            self.embedding.clone(),
        );
        tokio::spawn(async move {
            embed_missing(&cache, embedder.as_ref(), &failed, None).await;
            embedding.store(false, Ordering::Release);
        });
    }

    /// Uses the process's shared name index instead of a private one.
    pub fn with_names(mut self, names: Arc<SharedNames>) -> Self {
        self.names = names;
        self
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, PlanCache> {
        // A panic while holding the lock cannot leave the index half-updated in a way
        // that matters more than losing the cache; keep serving.
        self.cache
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    async fn ensure_loaded(&self) -> Result<(), AgentError> {
        self.loaded
            .get_or_try_init(|| async {
                if let Some(store) = &self.store {
                    // Follow what other replicas store and demote, watched from before
                    // the read so nothing stored in between is missed (a plan seen by
                    // both is replaced by itself).
                    let changes = store.changes().await.map_err(|e| AgentError::Unavailable {
                        detail: e.to_string(),
                    })?;
                    let entries = store
                        .load_all()
                        .await
                        .map_err(|e| AgentError::Unavailable {
                            detail: e.to_string(),
                        })?;
                    {
                        let mut cache = self.cache();
                        for (_, entry) in entries {
                            cache.replace(entry);
                        }
                    }
                    if let Some(mut changes) = changes {
                        let cache = Arc::downgrade(&self.cache);
                        tokio::spawn(async move {
                            use futures::StreamExt;
                            while let Some((key, entry)) = changes.next().await {
                                let Some(cache) = cache.upgrade() else { break };
                                apply_change(&cache, &key, entry);
                            }
                        });
                    }
                }
                Ok(())
            })
            .await
            .map(|_| ())
    }

    /// Applies a change another replica made (from a KV watch).
    pub fn apply_remote(&self, key: &str, entry: Option<CacheEntry>) {
        apply_change(&self.cache, key, entry);
    }

    async fn gazetteer(&self) -> Result<Option<Arc<Gazetteer>>, AgentError> {
        let Some(graph) = &self.graph else {
            return Ok(None);
        };
        self.names.get(graph.as_ref()).await.map(Some)
    }

    async fn isr(&self, ctx: &CallContext, question: &str) -> Isr {
        let Some(llm) = &self.llm else {
            return Isr::default();
        };
        if ctx.budget().check_llm(1).is_err() {
            return Isr::default();
        }
        let request = prompts::isr::build(question, &[], &[]);
        let started = std::time::Instant::now();
        match llm.chat(request).await {
            Ok(response) => {
                ctx.record_llm_call(
                    response.usage.prompt_tokens,
                    response.usage.completion_tokens,
                    started.elapsed(),
                );
                parse::isr::parse(&response.text).unwrap_or_default()
            }
            Err(error) => {
                tracing::warn!(%error, "ISR extraction failed; using the default bucket");
                Isr::default()
            }
        }
    }

    /// The plan of a similar question's template ([`PlanCache::near_replay`]), when
    /// an embedder is set and near replays are on. The question is embedded only when
    /// some template could be near enough; an embedder error means no near replay.
    async fn near_replay(
        &self,
        question: &str,
        entities: &[kgmesh_schemas::graph::Entity],
        isr: &Isr,
    ) -> Option<NearReplay> {
        let embedder = self.embedder.as_ref()?;
        if self.cache().config().near_replay_min > 1.0 {
            return None;
        }
        self.embed_templates(embedder).await;
        let candidates = self.cache().near_candidates(question, entities, isr);
        if candidates.is_empty() {
            return None;
        }
        let text = embedding_text(candidates.template());
        let vector = embedder.embed(&[text]).await.ok()?.pop()?;
        self.cache().near_replay(&candidates, entities, &vector)
    }

    pub async fn lookup(
        &self,
        ctx: &CallContext,
        request: CacheLookup,
    ) -> Result<CacheLookupReply, AgentError> {
        self.ensure_loaded().await?;
        if self.cache().is_empty() {
            return Ok(CacheLookupReply::default());
        }
        let isr = self.isr(ctx, &request.question).await;
        let mut entities = request.entities;
        let mut namesakes = Vec::new();
        if entities.is_empty() {
            if let Some(gazetteer) = self.gazetteer().await? {
                // The same linking as pre-warming (`warm`), so warmed plans rebind.
                entities = template::linked_mentions(&gazetteer, &request.question);
                namesakes = template::namesakes(&gazetteer, &request.question, NAMESAKES);
            }
        }
        let mut lookup =
            self.cache()
                .lookup(&request.question, &entities, &isr, usize::from(request.k));
        let mut replay_similarity = None;
        if lookup.replay.is_none() {
            if let Some(near) = self.near_replay(&request.question, &entities, &isr).await {
                replay_similarity = Some(near.similarity);
                if !lookup.keys.contains(&near.key) {
                    lookup.keys.insert(0, near.key);
                }
                lookup.replay = Some(near.plan);
            }
        }
        if let Some(replay) = &mut lookup.replay {
            for namesake in namesakes {
                if !replay.entities.contains(&namesake) {
                    replay.entities.push(namesake);
                }
            }
        }
        Ok(CacheLookupReply {
            isr,
            examples: lookup.examples,
            replay: lookup.replay,
            replay_similarity,
            cues: lookup.cues,
        })
    }

    pub async fn store(&self, request: CacheStore) -> Result<CacheStoreReply, AgentError> {
        self.ensure_loaded().await?;
        let mut entry = request.entry;
        if entry.answers.is_empty()
            || (entry.plan.metapaths.is_empty() && entry.plan.cypher.is_empty())
        {
            // Only verified plans that can be replayed are worth keeping.
            return Ok(CacheStoreReply { stored: false });
        }
        if entry.template.is_empty() {
            // Masked as a lookup masks it, so that the stored plan is found again; the
            // plan's own entities only where there is no graph to link with.
            let linked = match self.gazetteer().await? {
                Some(gazetteer) => template::linked_mentions(&gazetteer, &entry.question),
                None => Vec::new(),
            };
            let mentions: Vec<&str> = if linked.is_empty() {
                entry
                    .plan
                    .entities
                    .iter()
                    .map(|e| e.name.as_str())
                    .chain(entry.isr.topic_entities.iter().map(String::as_str))
                    .collect()
            } else {
                linked.iter().map(|e| e.name.as_str()).collect()
            };
            entry.template = template::mask(&entry.question, &mentions);
        }
        if !entry.template.contains(template::ENTITY_SLOT) {
            // Without a masked entity the plan cannot be rebound to another question.
            return Ok(CacheStoreReply { stored: false });
        }
        let (offered, before, kept) = {
            let mut cache = self.cache();
            let key = super::core::entry_key(&super::core::domain_of(&entry.isr), &entry.template);
            let before = cache.get(&key).cloned();
            let offered = cache.offer(entry);
            let kept = cache.get(&offered.key).cloned();
            (offered, before, kept)
        };
        if let Some(store) = &self.store {
            let unavailable = |e: super::persist::PersistError| AgentError::Unavailable {
                detail: e.to_string(),
            };
            let run = audit::verified_run();
            // A plan verified again changes nothing worth a (synced) write, except the
            // verification that makes it replayable; what is written is what is kept.
            if let (true, Some(kept)) = (offered.changed, &kept) {
                store.put(&offered.key, kept).await.map_err(unavailable)?;
                let detail = match &before {
                    Some(_) => "a verified run replaced or re-verified the plan",
                    None => "a verified run stored its plan",
                };
                let entry = AuditEntry::now(
                    &run,
                    AuditAction::Stored,
                    &offered.key,
                    before,
                    Some(kept.clone()),
                    detail,
                );
                store.append_audit(&entry).await.map_err(unavailable)?;
            }
            for key in offered.evicted {
                if let Err(error) = store.delete(&key).await {
                    tracing::warn!(%key, %error, "cannot delete an evicted plan from the store");
                    continue;
                }
                let entry = AuditEntry::now(
                    &run,
                    AuditAction::Evicted,
                    &key,
                    None,
                    None,
                    "evicted to keep its bucket within capacity",
                );
                store.append_audit(&entry).await.map_err(unavailable)?;
            }
        }
        Ok(CacheStoreReply {
            stored: offered.kept,
        })
    }

    /// Applies a user's verdict on the answer to `request.question` (see
    /// [`super::feedback`]). A store that refuses the change is an error, and the
    /// change is undone.
    pub async fn feedback(
        &self,
        ctx: &CallContext,
        request: CacheFeedback,
    ) -> Result<CacheFeedbackReply, AgentError> {
        if request.question.trim().is_empty() {
            return Err(AgentError::BadRequest {
                detail: "feedback names no question".to_owned(),
            });
        }
        self.ensure_loaded().await?;
        let isr = self.isr(ctx, &request.question).await;
        let gazetteer = self.gazetteer().await?;
        let mentions = gazetteer
            .as_ref()
            .map(|gazetteer| template::linked_mentions(gazetteer, &request.question))
            .unwrap_or_default();
        let warmer = match (&self.graph, gazetteer) {
            (Some(graph), Some(gazetteer)) => Some(Warmer::new(graph.clone(), gazetteer)),
            _ => None,
        };
        // The plan a lookup would replay from a similar template, for a verdict on an
        // answer it gave (only when the question's own template has none).
        let similar = match request.verdict {
            Feedback::Answers(_) => None,
            _ => self
                .near_replay(&request.question, &mentions, &isr)
                .await
                .map(|near| near.key),
        };
        let asked = Asked {
            question: &request.question,
            mentions: &mentions,
            isr: &isr,
            similar: similar.as_deref(),
        };
        let gate = Gate {
            principal: &request.principal,
            keeper: &self.keeper,
        };
        feedback::apply(
            &self.cache,
            self.store.as_deref(),
            warmer.as_ref(),
            gate,
            asked,
            &request.verdict,
        )
        .await
        .map_err(|e| AgentError::Unavailable {
            detail: e.to_string(),
        })
    }

    /// The entry under `key`, as this replica holds it.
    pub fn get(&self, key: &str) -> Option<CacheEntry> {
        self.cache().get(key).cloned()
    }

    pub fn len(&self) -> usize {
        self.cache().len()
    }

    /// Templates still waiting for their embedding (similar questions are matched
    /// among the others until then).
    pub fn unembedded(&self) -> usize {
        self.cache().unembedded_count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn lock(cache: &Mutex<PlanCache>) -> std::sync::MutexGuard<'_, PlanCache> {
    // A panic while holding the lock cannot leave the index half-updated in a way
    // that matters more than losing the cache; keep serving.
    cache
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Applies one change made elsewhere: `Some` stores (or replaces) the entry exactly as
/// written, counts included (a demotion is a change of counts), `None` removes the key.
fn apply_change(cache: &Mutex<PlanCache>, key: &str, entry: Option<CacheEntry>) {
    // Grounded Cypher plans share the store; the query executor reads those.
    if crate::cache_manager::persist::is_cypher_key(key) {
        return;
    }
    let mut cache = lock(cache);
    match entry {
        Some(entry) => {
            cache.replace(entry);
        }
        None => {
            cache.remove(key);
        }
    }
}

/// Embeds templates that have no vector yet, [`EMBED_BATCH`] per call of the embedder,
/// up to `batches` calls (all of them when `None`), without holding the cache's lock
/// while the embedder works. A failing embedder leaves them unembedded: similar
/// questions then get no replay, and the exact-template path is unchanged. Returns
/// false when the embedder failed.
async fn embed_missing(
    cache: &Mutex<PlanCache>,
    embedder: &dyn Embedder,
    failed: &AtomicBool,
    batches: Option<usize>,
) -> bool {
    let mut left = batches;
    while left != Some(0) {
        left = left.map(|n| n - 1);
        let missing = lock(cache).unembedded(EMBED_BATCH);
        if missing.is_empty() {
            break;
        }
        let texts: Vec<String> = missing.iter().map(|(_, text)| text.clone()).collect();
        match embedder.embed(&texts).await {
            Ok(vectors) if vectors.len() == missing.len() => {
                let mut cache = lock(cache);
                for ((key, _), vector) in missing.iter().zip(vectors) {
                    cache.set_vector(key, vector);
                }
            }
            outcome => {
                if !failed.swap(true, Ordering::Relaxed) {
                    let detail = match outcome {
                        Err(error) => error.to_string(),
                        Ok(vectors) => {
                            format!("{} vectors for {} texts", vectors.len(), texts.len())
                        }
                    };
                    tracing::warn!(%detail, "cannot embed plan templates; similar questions get no replay");
                }
                return false;
            }
        }
    }
    true
}

/// The role's factory: an in-memory cache persisted to the plan store of `deps`
/// ([`SharedPlanStore`]) when there is one.
pub fn role(deps: &AgentDeps) -> Result<RoleSpec, RoleBuildError> {
    let manager = Arc::new(
        CacheManager::new(
            deps.setting::<CacheConfig>(),
            deps.get::<SharedPlanStore>().cloned(),
            deps.graph.clone(),
            deps.llm_for(Role::CACHE_MANAGER),
        )
        .with_names(deps.shared::<SharedNames>())
        .with_embedder(deps.embedder.clone()),
    );
    Ok(spec(manager))
}

/// The role around an existing manager (tests and embedders that keep a handle).
pub fn spec(manager: Arc<CacheManager>) -> RoleSpec {
    let lookup_manager = manager.clone();
    let store_manager = manager.clone();
    RoleSpec::new(Role::well_known(Role::CACHE_MANAGER), RoleKind::Core)
        .op(move |ctx: CallContext, request: CacheLookup| {
            let manager = lookup_manager.clone();
            async move {
                let reply = manager.lookup(&ctx, request).await;
                if let Ok(found) = &reply {
                    let hit = !found.examples.is_empty() || found.replay.is_some();
                    let result = if hit { "hit" } else { "miss" };
                    metrics::counter!("kgmesh_plan_cache_lookups_total", "result" => result)
                        .increment(1);
                }
                reply
            }
        })
        .op(move |_ctx: CallContext, request: CacheStore| {
            let manager = store_manager.clone();
            async move {
                let reply = manager.store(request).await;
                let outcome = match &reply {
                    Ok(stored) if stored.stored => "stored",
                    Ok(_) => "rejected",
                    Err(_) => "error",
                };
                metrics::counter!("kgmesh_plan_cache_stores_total", "outcome" => outcome)
                    .increment(1);
                reply
            }
        })
        .op_on(&manager, |manager, ctx, request: CacheFeedback| async move {
            manager.feedback(&ctx, request).await
        })
}
