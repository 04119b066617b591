//! Grounded Cypher in the query-executor role: on a property graph, the first round of
//! a question also writes a query from the question itself ([`super::grounded`]), runs
//! the best-ranked one that returns a row, and returns its rows as evidence beside the
//! queries the KG-Linker wrote. With a model the role may use, the model picks among
//! the best candidates (GraphRAFT's constrained choice); a failed or unusable pick
//! falls back to the LLM-free choice, and says so.
//!
//! The planner reads the graph's values once, in the background from the role's start,
//! and learns its ranking from the grounded Cypher plans of the plan cache
//! (`kgmesh cache warm --import`); plans other replicas or imports add later are
//! learned before the next question.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kgmesh_models::{Embedder, LanguageModel};
use kgmesh_schemas::messages::cache::CacheEntry;
use kgmesh_schemas::messages::context::{Evidence, EvidenceItem};
use kgmesh_schemas::Role;
use kgmesh_stores::{GraphStore, QueryLimits};
use tokio::sync::{OnceCell, RwLock};

use super::grounded::{self, plans, GroundedCypher, EXISTENCE_TRIES, MODEL_CHOICES};
use crate::cache_manager::persist::{is_cypher_key, ChangeStream, PlanStore};
use crate::runtime::CallContext;

pub use crate::settings::GroundedMode;

/// Rows a grounded query returns at most as evidence.
const MAX_ROWS: usize = 200;

/// Time reading the graph's values may take.
const READ_TIMEOUT: Duration = Duration::from_secs(120);

struct Ready {
    planner: RwLock<GroundedCypher>,
    /// Changes to the stored plans since the planner was fitted (`None`: deleted),
    /// applied before the next question.
    pending: Mutex<Vec<(String, Option<CacheEntry>)>>,
    /// The plan store's changes, watched from before its plans were read; taken by
    /// [`GroundedRetriever::follow_plans`].
    changes: Mutex<Option<ChangeStream>>,
}

/// The grounded-Cypher side of the query executor.
pub struct GroundedRetriever {
    graph: Arc<dyn GraphStore>,
    plans: Option<Arc<dyn PlanStore>>,
    llm: Option<Arc<dyn LanguageModel>>,
    /// Matches the question's other words to the graph's category values.
    embedder: Option<Arc<dyn Embedder>>,
    mode: GroundedMode,
    /// `None` once known to be off for this graph (or unreadable: said once).
    ready: OnceCell<Option<Arc<Ready>>>,
}

impl GroundedRetriever {
    pub fn new(
        graph: Arc<dyn GraphStore>,
        plans: Option<Arc<dyn PlanStore>>,
        llm: Option<Arc<dyn LanguageModel>>,
        embedder: Option<Arc<dyn Embedder>>,
        mode: GroundedMode,
    ) -> Self {
        Self {
            graph,
            plans,
            llm,
            embedder,
            mode,
            ready: OnceCell::new(),
        }
    }

    /// Reads the graph's values and the stored plans now rather than at the first
    /// question (a no-op when off).
    pub async fn warm_up(&self) {
        let _ = self.ready().await;
    }

    async fn ready(&self) -> Option<Arc<Ready>> {
        self.ready
            .get_or_init(|| async { self.read().await.map(Arc::new) })
            .await
            .clone()
    }

    async fn read(&self) -> Option<Ready> {
        if self.mode == GroundedMode::Off {
            return None;
        }
        let schema = match self.graph.schema().await {
            Ok(schema) => schema,
            Err(error) => {
                tracing::warn!(%error, "grounded Cypher is off: the graph's schema could not be read");
                return None;
            }
        };
        if self.mode == GroundedMode::Auto && !grounded::is_property_graph(&schema) {
            tracing::debug!("grounded Cypher is off: the graph has no labels or properties");
            return None;
        }
        let started = Instant::now();
        let limits = QueryLimits {
            timeout: READ_TIMEOUT,
            ..QueryLimits::default()
        };
        let mut planner = match GroundedCypher::read(
            self.graph.as_ref(),
            (*schema).clone(),
            &limits,
        )
        .await
        {
            Ok(planner) => planner,
            Err(error) => {
                tracing::warn!(%error, "grounded Cypher is off: the graph's values could not be read");
                return None;
            }
        };
        if let Some(embedder) = &self.embedder {
            match planner.use_embedder(embedder.clone()).await {
                Ok(count) => tracing::debug!(count, "grounded Cypher: category values embedded"),
                Err(error) => tracing::warn!(
                    %error,
                    "grounded Cypher: category values not embedded; whole and near matches only"
                ),
            }
        }
        // Changes are watched from before the stored plans are read, so none stored in
        // between is missed (one seen twice is replaced, not learned twice).
        let mut changes = None;
        if let Some(store) = &self.plans {
            changes = match store.changes().await {
                Ok(changes) => changes,
                Err(error) => {
                    tracing::warn!(%error, "grounded Cypher does not follow the plan cache");
                    None
                }
            };
            match store.load_cypher().await {
                Ok(entries) => {
                    let learned = plans::learn(&mut planner, &entries).await;
                    planner.fit();
                    tracing::info!(
                        kept = learned.kept,
                        stale = learned.stale,
                        "grounded Cypher learned from the plan cache"
                    );
                }
                Err(error) => tracing::warn!(
                    %error,
                    "grounded Cypher starts cold: the plan cache could not be read"
                ),
            }
        }
        tracing::info!(
            labels = planner.values().labels.len(),
            values = planner.values().indexed_values(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "grounded Cypher ready"
        );
        Some(Ready {
            planner: RwLock::new(planner),
            pending: Mutex::new(Vec::new()),
            changes: Mutex::new(changes),
        })
    }

    /// Reads the graph's values and the stored plans, then follows the plans stored
    /// or deleted later (other replicas, `cache warm --import` into the shared
    /// bucket): they are applied before the next question.
    pub async fn follow_plans(self: &Arc<Self>) {
        let Some(ready) = self.ready().await else {
            return;
        };
        let Some(changes) = ready
            .changes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        else {
            return;
        };
        let this = Arc::downgrade(self);
        tokio::spawn(async move {
            use futures::StreamExt;
            let mut changes = changes;
            while let Some((key, entry)) = changes.next().await {
                let Some(this) = this.upgrade() else { break };
                if !is_cypher_key(&key) {
                    continue;
                }
                if let Some(ready) = this.ready().await {
                    ready
                        .pending
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push((key, entry));
                }
            }
        });
    }

    /// The grounded query's rows as evidence, with a note saying what was chosen and
    /// how; nothing on a graph it is off for.
    pub async fn retrieve(
        &self,
        ctx: &CallContext,
        question: &str,
    ) -> (Vec<Evidence>, Vec<String>) {
        let mut notes = Vec::new();
        if question.trim().is_empty() {
            return (Vec::new(), notes);
        }
        let Some(ready) = self.ready().await else {
            return (Vec::new(), notes);
        };
        let started = Instant::now();
        let pending: Vec<(String, Option<CacheEntry>)> =
            std::mem::take(&mut *ready.pending.lock().unwrap_or_else(|p| p.into_inner()));
        if !pending.is_empty() {
            let mut planner = ready.planner.write().await;
            let applied = plans::apply(&mut planner, &pending).await;
            planner.fit();
            tracing::info!(
                kept = applied.kept,
                stale = applied.stale,
                removed = applied.removed,
                examples = planner.learned_examples(),
                "grounded Cypher followed the plan cache"
            );
        }
        let planner = ready.planner.read().await;
        let limits = QueryLimits {
            max_rows: MAX_ROWS,
            timeout: ctx.remaining().min(Duration::from_secs(10)),
            ..QueryLimits::default()
        };
        let parsed = planner.read_question(question).await;
        let ranked = planner.ranked(&parsed);
        if ranked.is_empty() {
            return (Vec::new(), notes);
        }
        let learned = planner.learned_examples() > 0;
        let llm = self
            .llm
            .as_ref()
            .filter(|_| ranked.len() > 1 && ctx.budget().check_llm(1).is_ok());
        let (choice, rows, how) = match llm {
            Some(llm) => {
                let asked = Instant::now();
                let Some(picked) = planner
                    .choose_with_model(
                        llm.as_ref(),
                        self.graph.as_ref(),
                        &parsed,
                        &ranked,
                        MODEL_CHOICES,
                        &limits,
                    )
                    .await
                else {
                    return (Vec::new(), notes);
                };
                if let Some(usage) = picked.usage {
                    ctx.record_llm_call(
                        usage.prompt_tokens,
                        usage.completion_tokens,
                        asked.elapsed(),
                    );
                }
                let how = match &picked.fallback {
                    Some(why) => {
                        ctx.record_model_fallback(why);
                        format!("the LLM-free choice stands in for the model's ({why})")
                    }
                    None => match picked.picked {
                        Some(k) => {
                            format!("picked by the model (#{} of {})", k + 1, picked.offered)
                        }
                        None => "the only candidate that returns a row".to_owned(),
                    },
                };
                (picked.choice, picked.rows, how)
            }
            None => {
                let Some((choice, rows)) = planner
                    .choose_existing(
                        self.graph.as_ref(),
                        &parsed,
                        &ranked,
                        learned,
                        EXISTENCE_TRIES,
                        &limits,
                    )
                    .await
                else {
                    return (Vec::new(), notes);
                };
                let how = if learned {
                    format!(
                        "LLM-free, ranked with {} verified plans",
                        planner.learned_examples()
                    )
                } else {
                    "LLM-free, cold".to_owned()
                };
                (choice, rows, how)
            }
        };
        let cypher = choice.candidate.display();
        let Some(rows) = rows.filter(grounded::has_rows) else {
            notes.push(format!(
                "grounded Cypher: no candidate of {} returns a row; the best was `{cypher}`",
                choice.candidates
            ));
            return (Vec::new(), notes);
        };
        ctx.record_graph(rows.rows.len() as u64, started.elapsed());
        notes.push(format!(
            "grounded Cypher: `{cypher}` chosen among {} candidates ({how})",
            choice.candidates
        ));
        let evidence = Evidence {
            source: Role::QUERY_EXECUTOR.to_owned(),
            score: 1.0,
            item: EvidenceItem::Query {
                cypher,
                rows,
                grounded: true,
            },
        };
        (vec![evidence], notes)
    }
}
