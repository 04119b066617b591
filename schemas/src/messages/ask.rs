//! What a user asks the coordinator and what comes back (CLI, HTTP API, evaluation).

use serde::{Deserialize, Serialize};

use super::summarizer::Answer;
use crate::{budget::Cost, graph::Entity};

/// Options a user may set per question; unset fields take the configured defaults.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct AskOptions {
    pub max_rounds: Option<u8>,
    pub timeout_ms: Option<u64>,
    pub max_answers: Option<u16>,
    /// Skip the plan cache (lookup and store).
    pub no_cache: bool,
    /// Give each evidence line the graph edges it stands on (`EvidenceLine::edges`),
    /// what the web console draws. Off by default: it triples a reply's size.
    pub evidence_edges: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AskRequest {
    pub question: String,
    #[serde(default)]
    pub options: AskOptions,
}

/// One line of evidence as shown to people: the verbalized text and its producer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct EvidenceLine {
    pub source: String,
    pub text: String,
    /// The graph edges the line stands on, each as stored (head → tail): one for a
    /// triple, one per step of a path, none for query rows. What a graph view draws;
    /// empty unless the request's `options.evidence_edges` asked for them.
    #[serde(default)]
    pub edges: Vec<EvidenceEdge>,
}

/// One edge of the graph behind an evidence line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct EvidenceEdge {
    pub head: Entity,
    pub relation: String,
    pub tail: Entity,
}

/// One call the coordinator made to a role while answering, in the order made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct RoleCall {
    /// The round it belongs to (0: before the first round or while summarizing).
    pub round: u8,
    /// The role, as on the bus.
    pub role: String,
    /// The operation (`link`, `retrieve`, `judge`, ...).
    pub op: String,
    /// Wall time of the call as the coordinator saw it, retries included.
    pub elapsed_us: u64,
    /// What the role reported spending; `None` when the call failed.
    pub cost: Option<Cost>,
    /// `ok`, or the kind of the error (`timeout`, `unavailable`, ...).
    pub outcome: String,
}

impl RoleCall {
    pub const OK: &'static str = "ok";
}

/// Time spent per stage, in microseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct Timings {
    pub total_us: u64,
    /// (stage name, microseconds), in the order they ran.
    pub stages: Vec<(String, u64)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct AskReply {
    pub question_id: String,
    /// Best first; empty when kgmesh does not know.
    pub answers: Vec<Answer>,
    /// Everything retrieved. Answers cite it by 0-based index (`answers[].evidence`);
    /// text for people (the CLI, the explanation, the console) numbers the same lines
    /// from 1, so index `i` is "evidence line `i + 1`". Lines that read the same (a
    /// triple and the one-hop path over that edge) are cited once, by the first.
    pub evidence: Vec<EvidenceLine>,
    pub explanation: String,
    pub rounds: u8,
    pub cost: Cost,
    pub timings: Timings,
    /// The answer was cut short by an exhausted budget, or a role every answer needs
    /// (kg-linker, summarizer) failed, timed out or was missing (see `degraded`).
    pub partial: bool,
    /// The answers rest on a path that no word of the question names: chosen for what
    /// it reaches, worth checking before use (the explanation says which path).
    #[serde(default)]
    pub low_confidence: bool,
    /// The chance that the answer is right, as the learned reader estimates it for the
    /// plan the answer comes from (`docs/confidence.md`); `None` when nothing estimated
    /// it. Kept when `min_confidence` withheld the answers (then `answers` is empty and
    /// the explanation names them as possibilities).
    #[serde(default)]
    pub confidence: Option<f32>,
    /// The plan's chance as the reader estimated it, before the answer calibration
    /// turned it into `confidence` with what came after the plan: what a calibration
    /// fitted on this graph's own QA pairs reads (`kgmesh reader calibrate`). `None`
    /// where no answer calibration applies (no plan estimated, a re-ranking reader, a
    /// replayed plan, a passage answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_chance: Option<f32>,
    /// Whether the first answer lies at the end of the plan whose chance the
    /// confidence starts from (the first stage's first plan); `None` when no such plan
    /// was estimated, nothing was answered, or the answer rests on no graph path (a
    /// query's rows). The summarizer may answer from another
    /// of the paths retrieved (where the plan's ends cannot be what is asked): that
    /// plan's chance then says little about the answer, and the answer calibration
    /// reads so.
    #[serde(default)]
    pub plan_followed: Option<bool>,
    /// Whether a second reading of the question reaches the first answer too: the
    /// plan the learned reader ranks first, scoring the same candidate plans. The answer
    /// calibration reads a disagreement as a warning. `None` when it was not read (no
    /// plan's chance was estimated, the reader re-ranked the plans itself, the answer
    /// is no graph node, or that plan reaches too many nodes to list).
    #[serde(default)]
    pub readings_agree: Option<bool>,
    /// The plan cache supplied examples or a replayed plan.
    pub cache_hit: bool,
    /// What the plan cache did for this question, in a sentence for people: the past
    /// questions offered as examples, or the past question whose plan was replayed and
    /// what the replay reached. `None` when the cache did nothing.
    #[serde(default)]
    pub cache_use: Option<String>,
    /// Past questions the plan cache offered the planner as examples.
    #[serde(default)]
    pub cache_examples: u16,
    /// For a replayed plan: the distinct graph nodes its paths and query rows reached
    /// (the answers are chosen among them).
    #[serde(default)]
    pub replay_reached: Option<u32>,
    /// The replayed plan's retrieval stopped at a limit (more paths or rows than were
    /// returned): answers may be missing; a cold run (`options.no_cache`) may find more.
    #[serde(default)]
    pub replay_cut: bool,
    /// A verified plan from the cache was replayed (the question's template was seen).
    #[serde(default)]
    pub plan_replayed: bool,
    /// Set when the replayed plan was a similar template's, not the question's own:
    /// the two templates' similarity, in `[0, 1]`.
    #[serde(default)]
    pub replay_similarity: Option<f32>,
    /// W3C trace id when tracing is on.
    pub trace_id: Option<String>,
    /// Failures along the way (retriever timeouts, refused queries) for people to read.
    pub notes: Vec<String>,
    /// Roles that failed, timed out, were missing, or fell back from an unusable model
    /// reply while this question ran: the answer may differ from a healthy run's.
    /// Empty when every role did its part.
    #[serde(default)]
    pub degraded: Vec<Degradation>,
    /// The graph that answered (a KG file, the bundled sample, a Bolt database), when
    /// the process knows it.
    #[serde(default)]
    pub graph: Option<String>,
    /// The question's entities as linked in the graph (never answers themselves).
    #[serde(default)]
    pub topic_entities: Vec<Entity>,
    /// Every role call made for the question, in order: the question's life.
    #[serde(default)]
    pub calls: Vec<RoleCall>,
}

/// One role's part that did not happen as configured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct Degradation {
    /// The role, as on the bus (`summarizer`, `kg-linker`, ...).
    pub role: String,
    /// What went wrong: `failed`, `timeout`, `missing`, or `model_fallback` (the role
    /// answered with its LLM-free strategy because the model's reply was unusable).
    pub reason: String,
    /// The round it happened in (0 before the first round or while summarizing).
    pub round: u8,
}

impl Degradation {
    pub const FAILED: &'static str = "failed";
    pub const TIMEOUT: &'static str = "timeout";
    pub const MISSING: &'static str = "missing";
    pub const MODEL_FALLBACK: &'static str = "model_fallback";
}
