//! The one configuration tree of every kgmesh process.
//!
//! Layers, later wins: built-in defaults → a TOML file (`--config`) → environment
//! variables `KGMESH__SECTION__KEY` (double underscores separate levels). Unknown keys
//! are rejected so a typo never silently falls back to a default.

use std::path::{Path, PathBuf};

use figment::{
    providers::{Env, Format, Serialized, Toml},
    Figment,
};
use kgmesh_coordinator::auth::{TokenEntry, TokenLimits};
use kgmesh_models::minilm::MiniLm;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub bus: BusConfig,
    pub graph: GraphConfig,
    pub llm: LlmConfig,
    pub embedder: EmbedderConfig,
    pub vectors: VectorsConfig,
    pub budget: BudgetConfig,
    pub retrieval: RetrievalConfig,
    pub text: TextConfig,
    pub judge: kgmesh_agents::judge::core::JudgeRule,
    pub reader: ReaderConfig,
    pub summarizer: kgmesh_agents::summarizer::core::SummaryRule,
    pub traverser: kgmesh_agents::traverser::core::TraverseConfig,
    pub http: HttpConfig,
    pub cache: CacheConfig,
    pub telemetry: TelemetryConfig,
}

/// The learned question reader (see `docs/reader.md`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReaderConfig {
    /// Weights written by `kgmesh reader train`; unset: the bundled ones.
    pub weights: Option<PathBuf>,
    /// Answers whose confidence is below this become "I don't know, but possibly …".
    pub min_confidence: f32,
    /// `true`: the learned reader re-ranks the first stage's plans. Off by default: it
    /// reads graphs unlike the benchmarks better and the benchmarks worse
    /// (`docs/reader.md`).
    pub enabled: bool,
    /// `true`: every answer carries the chance that it is right, estimated from the
    /// reader's features of the plan it comes from (with re-ranking off, of the first
    /// stage's plan). `false` saves reading the best plans' classes and embedding
    /// their relation names, and answers carry no confidence.
    pub confidence: bool,
    /// An answer calibration fitted on this graph's own QA pairs (`kgmesh reader
    /// calibrate --reports`, on `kgmesh eval` runs over them); unset: the bundled one,
    /// fitted on the domain zoo. It does not turn re-ranking on.
    pub calibration: Option<PathBuf>,
}

/// Chosen on the domain zoo and the MetaQA slice, out of domain (each graph's questions
/// ranked by weights trained without it): see `docs/reader.md`.
pub const DEFAULT_MIN_CONFIDENCE: f32 = 0.0;

impl Default for ReaderConfig {
    fn default() -> Self {
        Self {
            weights: None,
            min_confidence: DEFAULT_MIN_CONFIDENCE,
            enabled: false,
            confidence: true,
            calibration: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BusKind {
    /// Every role in this process, on the in-process bus.
    Local,
    /// Roles in any process, on NATS.
    Nats,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BusConfig {
    pub kind: BusKind,
    pub nats_url: String,
    /// Name of an environment variable holding a NATS token or `user:password`.
    pub nats_credentials_env: Option<String>,
    /// Name of an environment variable holding an NKey seed.
    pub nats_nkey_env: Option<String>,
    /// A NATS `.creds` file (user JWT and NKey seed).
    pub nats_creds_file: Option<PathBuf>,
    /// PEM certificate authorities of the server's TLS certificate; set, the connection
    /// requires TLS.
    pub nats_tls_ca_file: Option<PathBuf>,
    pub request_timeout_ms: u64,
    /// Retries of a request, as `kgmesh_bus::RetryPolicy` says (no responders, a
    /// closed bus, an unavailable or overloaded role, a timeout once).
    pub retries: u32,
    /// Roles besides the built-in ones that the coordinator calls (agents from outside
    /// this repository); `"*"` allows any role that announces itself.
    pub allowed_roles: Vec<String>,
    /// Requests one `kgmesh agent` process serves at once; more are answered at once
    /// with a typed Overloaded error, and the coordinator tries another replica.
    pub max_in_flight: usize,
    /// Threads serving a `kgmesh agent` process's role; 0: one per CPU core.
    pub agent_workers: usize,
    /// Send a read-only call with no reply after the role's recent p95 latency to
    /// another replica too (hedged calls); the first reply wins.
    pub hedge: bool,
    /// Least and longest wait before a hedge, and the wait while a role's p95 is not
    /// known yet, in milliseconds.
    pub hedge_min_ms: u64,
    pub hedge_max_ms: u64,
    pub hedge_first_ms: u64,
}

impl Default for BusConfig {
    fn default() -> Self {
        Self {
            kind: BusKind::Local,
            nats_url: "nats://127.0.0.1:4222".to_owned(),
            nats_credentials_env: None,
            nats_nkey_env: None,
            nats_creds_file: None,
            nats_tls_ca_file: None,
            request_timeout_ms: 10_000,
            retries: 2,
            allowed_roles: Vec::new(),
            max_in_flight: 256,
            agent_workers: 0,
            hedge: true,
            hedge_min_ms: 20,
            hedge_max_ms: 5_000,
            hedge_first_ms: 250,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GraphBackend {
    Embedded,
    Bolt,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GraphConfig {
    pub backend: GraphBackend,
    /// KG file, directory or snapshot for the embedded backend.
    pub path: Option<PathBuf>,
    /// TOML mapping of a property-graph CSV directory (default: `kgmesh-mapping.toml`
    /// inside it; docs/property-graphs.md).
    pub mapping: Option<PathBuf>,
    /// `bolt://host:port` for the Bolt backend.
    pub bolt_uri: Option<String>,
    pub bolt_user: String,
    /// Name of the environment variable that holds the Bolt password (never the
    /// password itself).
    pub bolt_password_env: String,
    pub bolt_database: Option<String>,
    pub query_timeout_ms: u64,
}

impl Default for GraphConfig {
    fn default() -> Self {
        Self {
            backend: GraphBackend::Embedded,
            path: None,
            mapping: None,
            bolt_uri: None,
            bolt_user: "neo4j".to_owned(),
            bolt_password_env: "NEO4J_PASSWORD".to_owned(),
            bolt_database: None,
            query_timeout_ms: 5_000,
        }
    }
}

/// An OpenAI-compatible chat endpoint. Without `base_url` (here or in
/// `OPENAI_BASE_URL`) kgmesh runs its LLM-free strategy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LlmConfig {
    pub base_url: Option<String>,
    pub model: String,
    /// Name of the environment variable holding the API key.
    pub api_key_env: String,
    pub timeout_ms: u64,
    pub max_retries: u32,
    pub max_concurrency: u32,
    pub requests_per_minute: Option<u32>,
    pub temperature: f32,
    pub max_tokens: u32,
    /// After this many calls in a row find the model down (a 5xx reply), calls fail at
    /// once for `breaker_cooldown_ms` and the roles answer LLM-free; a call that found
    /// nothing listening, or had no reply within `timeout_ms` or before its caller's
    /// deadline, opens the breaker at once; 0 turns this off.
    pub breaker_failures: u32,
    pub breaker_cooldown_ms: u64,
    /// The model's context window in tokens (the server's `n_ctx`, a hosted model's
    /// limit); the judge's and summarizer's evidence is cut to fit it. Unset: the roles'
    /// own budgets (3,000 and 4,000 estimated tokens), which need about 8k.
    pub context_tokens: Option<u32>,
    /// How the server is held to one of the offered replies where a prompt offers a
    /// choice (grounded Cypher's query pick): `none`, `grammar` (llama.cpp) or
    /// `guided_choice` (vLLM).
    pub choice_constraint: kgmesh_models::openai::ChoiceConstraint,
    /// The roles that use the model; the others run their LLM-free strategy. Left out
    /// by default: the cache manager (one call a question, to sort plans into domains
    /// and aspects, which would make a replay cost two calls and a cold question four),
    /// the agentic traverser (one retriever among several, two calls a step) and the
    /// pattern matcher (one call, to write the question's pattern).
    pub roles: Vec<String>,
    /// The model cascade: every question is first answered without the model, and that
    /// answer stands when its confidence (`reader.confidence`) is at least this; below
    /// it the question is asked again with the model. Unset: the model is asked on
    /// every question.
    pub cascade_below: Option<f32>,
    /// The model calls a question the cascade sends on may make: 1 (default) asks for
    /// the KG-Linker's plan only, the judge and summarizer answering without the model;
    /// the question's whole budget (`budget.llm_calls`) asks every role of `llm.roles`.
    pub cascade_calls: u32,
}

/// The roles that use the model unless `llm.roles` says otherwise.
pub const DEFAULT_LLM_ROLES: [&str; 3] = [
    kgmesh_schemas::Role::KG_LINKER,
    kgmesh_schemas::Role::JUDGE,
    kgmesh_schemas::Role::SUMMARIZER,
];

/// The roles that can use a language model, as their descriptors say: those of
/// [`DEFAULT_LLM_ROLES`] first, then the others in the registry's order.
pub fn llm_roles() -> Vec<&'static str> {
    let mut roles = DEFAULT_LLM_ROLES.to_vec();
    for role in kgmesh_agents::registry::roles() {
        if role.uses_model && !roles.contains(&role.name) {
            roles.push(role.name);
        }
    }
    roles
}

impl Default for LlmConfig {
    fn default() -> Self {
        Self {
            base_url: None,
            model: "gpt-4o-mini".to_owned(),
            api_key_env: "OPENAI_API_KEY".to_owned(),
            timeout_ms: 60_000,
            max_retries: 3,
            max_concurrency: 8,
            requests_per_minute: None,
            temperature: 0.0,
            max_tokens: 1_024,
            breaker_failures: 3,
            breaker_cooldown_ms: 30_000,
            context_tokens: None,
            choice_constraint: kgmesh_models::openai::ChoiceConstraint::None,
            roles: DEFAULT_LLM_ROLES.iter().map(|r| (*r).to_owned()).collect(),
            cascade_below: None,
            cascade_calls: 1,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmbedderKind {
    /// all-MiniLM-L6-v2 when its files are found (`model_dir`, else the folder named
    /// by `KGMESH_MINILM_DIR`, else `models-cache/all-MiniLM-L6-v2` under the working
    /// directory, where `scripts/fetch-minilm` puts them), else lexical scoring only;
    /// which one is used is said at start (see [`EmbedderConfig::resolve_auto`]).
    Auto,
    /// Lexical scoring only.
    None,
    /// all-MiniLM-L6-v2 from local files.
    Minilm,
    /// An OpenAI-compatible `/v1/embeddings` endpoint.
    Openai,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EmbedderConfig {
    pub kind: EmbedderKind,
    /// Folder with `model.safetensors`, `config.json` and `tokenizer.json`.
    pub model_dir: Option<PathBuf>,
    pub base_url: Option<String>,
    pub model: String,
    pub batch_size: usize,
}

impl Default for EmbedderConfig {
    fn default() -> Self {
        Self {
            kind: EmbedderKind::Auto,
            model_dir: None,
            base_url: None,
            model: "all-MiniLM-L6-v2".to_owned(),
            batch_size: 64,
        }
    }
}

impl EmbedderConfig {
    /// Turns `kind = "auto"` into `minilm` (with `model_dir` set to the folder found)
    /// or `none`, and says in words what the question answering will use. Other kinds
    /// are left as they are.
    pub fn resolve_auto(&mut self) -> String {
        if self.kind == EmbedderKind::Auto {
            let dir = self.model_dir.clone().unwrap_or_else(MiniLm::default_dir);
            if MiniLm::files_present(&dir) {
                self.kind = EmbedderKind::Minilm;
                self.model_dir = Some(dir.clone());
                return format!(
                    "MiniLM from {} (embedder.kind = \"auto\"; \"none\" for lexical scoring only)",
                    dir.display()
                );
            }
            self.kind = EmbedderKind::None;
            return format!(
                "none, lexical scoring only (embedder.kind = \"auto\" found no MiniLM files \
                 in {}; scripts/fetch-minilm puts them there, or set embedder.model_dir)",
                dir.display()
            );
        }
        self.describe()
    }

    /// What this embedder is, in words.
    pub fn describe(&self) -> String {
        match self.kind {
            EmbedderKind::Auto => "auto (MiniLM when its files are found, else none)".to_owned(),
            EmbedderKind::None => "none (lexical scoring)".to_owned(),
            EmbedderKind::Minilm => format!(
                "{} (local MiniLM){}",
                self.model,
                self.model_dir
                    .as_deref()
                    .map(|dir| format!(" from {}", dir.display()))
                    .unwrap_or_default()
            ),
            EmbedderKind::Openai => format!(
                "{} @ {}",
                self.model,
                self.base_url.clone().unwrap_or_default()
            ),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VectorBackend {
    /// No vector index: entities are linked by name only.
    None,
    /// In this process; read from and written to `vectors.path` when set.
    Embedded,
    /// A Qdrant collection over gRPC, shared by every replica.
    Qdrant,
}

/// Where the embeddings of entity names live (see `crate::vectors`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VectorsConfig {
    pub backend: VectorBackend,
    /// Embedded backend: the index file (conventionally `graph.kgv` beside a snapshot).
    pub path: Option<PathBuf>,
    /// Embedded backend: the rows as 32-bit floats, half floats or 8-bit codes.
    pub precision: kgmesh_stores::vector::Precision,
    /// Qdrant gRPC endpoint (`http://host:6334`); `QDRANT_URL` when unset.
    pub qdrant_url: Option<String>,
    /// Name of the environment variable holding a Qdrant API key.
    pub qdrant_api_key_env: Option<String>,
    /// Qdrant collection, created on first use with the embedder's dimension.
    pub collection: String,
    /// Bound on every Qdrant call.
    pub timeout_ms: u64,
}

impl Default for VectorsConfig {
    fn default() -> Self {
        Self {
            backend: VectorBackend::None,
            path: None,
            precision: kgmesh_stores::vector::Precision::F32,
            qdrant_url: None,
            qdrant_api_key_env: None,
            collection: "kgmesh_entities".to_owned(),
            timeout_ms: 5_000,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BudgetConfig {
    pub rounds: u8,
    pub depth: u8,
    pub breadth: u16,
    pub depth_expansions: u8,
    /// Unset: what the roles of `llm.roles` spend on one round ([`Config::llm_calls`]).
    pub llm_calls: Option<u32>,
    pub tokens: u64,
    pub result_rows: u32,
    pub timeout_ms: u64,
}

impl Default for BudgetConfig {
    fn default() -> Self {
        let budget = kgmesh_schemas::Budget::default();
        Self {
            rounds: budget.rounds,
            depth: budget.depth.get(),
            breadth: budget.breadth,
            depth_expansions: budget.depth_expansions,
            llm_calls: None,
            tokens: budget.tokens,
            result_rows: budget.result_rows,
            timeout_ms: 60_000,
        }
    }
}

/// How much the LLM-free retrieval tools return per call: more finds the answer more
/// often and makes the judge's and the LLM's context larger (docs/evaluation.md has
/// measured answer recall and context sizes for both settings below).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetrievalConfig {
    /// Relation paths the LLM-free KG-Linker proposes per question (default 5; 6 with
    /// an embedder lifts PathQuestion 3-hop answer recall past 95 %).
    pub top_metapaths: usize,
    /// Triplets the scoring retriever returns at most (default 30).
    pub scoring_top_k: usize,
    /// With an embedder, score evidence in the path follower, scoring retriever and
    /// traverser by whole-question embedding similarity (default false: lexically,
    /// which answered as well or better on every dev set, 10-50 times faster).
    pub embed_questions: bool,
    /// Start the pattern-matcher retriever (SimGRAG: the subgraphs closest to the
    /// question's pattern) in embedded mode (default true; docs/evaluation.md measures
    /// it on and off). In distributed mode it runs as `kgmesh agent --role
    /// pattern-matcher`.
    pub pattern_matcher: bool,
    /// When the query executor also writes a Cypher query from the question itself
    /// (grounded Cypher: the question's values found in the graph, the best typed query
    /// around them that returns a row) and returns its rows as evidence: `auto`
    /// (default: on property graphs, whose nodes have labels or properties besides
    /// their names), `on` or `off`. It learns from the grounded Cypher plans of the
    /// plan cache (`kgmesh cache warm --import` on a property graph).
    pub grounded_cypher: kgmesh_agents::query_executor::planner::GroundedMode,
}

impl Default for RetrievalConfig {
    fn default() -> Self {
        let settings = kgmesh_agents::settings::RetrievalSettings::default();
        Self {
            top_metapaths: settings.top_metapaths,
            scoring_top_k: settings.scoring_top_k,
            embed_questions: settings.embed_questions,
            pattern_matcher: true,
            grounded_cypher: settings.grounded_cypher,
        }
    }
}

/// Documents for the text retriever (`kgmesh index --text`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TextConfig {
    /// The index folder `kgmesh index --into embedded:DIR` wrote; set, the
    /// text-retriever role starts (embedded mode) or may be run (`kgmesh agent`).
    pub index: Option<PathBuf>,
    /// Tokens of passages and facts the text retriever returns per question (L).
    pub context_tokens: usize,
    /// Share of them for the entity channel over the KG skeleton (θ); the keyword
    /// channel has the rest.
    pub theta: f32,
    /// `both`, `keyword` or `skeleton`.
    pub channels: kgmesh_agents::text_retriever::retrieve::Channels,
}

impl Default for TextConfig {
    fn default() -> Self {
        let search = kgmesh_agents::text_retriever::retrieve::SearchSettings::default();
        Self {
            index: None,
            context_tokens: search.context_tokens,
            theta: search.theta,
            channels: search.channels,
        }
    }
}

/// Largest `retrieval.top_metapaths` accepted.
pub const MAX_TOP_METAPATHS: usize = 50;
/// Largest `retrieval.scoring_top_k` accepted.
pub const MAX_SCORING_TOP_K: usize = 1_000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpConfig {
    pub listen: String,
    pub max_question_chars: usize,
    pub max_body_bytes: usize,
    pub max_concurrent_questions: usize,
    /// Serve the web console at `/`.
    pub console: bool,
    /// Anonymous questions although no tokens are configured and the listener is reachable
    /// beyond this machine (`cypher` and `feedback` stay off without a token).
    pub open: bool,
    /// API tokens written in the configuration itself (better: `tokens_file` or
    /// `tokens_env`, which a Kubernetes Secret can fill).
    pub tokens: Vec<TokenEntry>,
    /// TOML file of `[[tokens]]` (name, sha256 or token, scopes, optional limits).
    pub tokens_file: Option<PathBuf>,
    /// Name of an environment variable holding the same TOML as `tokens_file`.
    pub tokens_env: Option<String>,
    /// Requests per second each token may send on average (0: no limit), unless the
    /// token sets its own.
    pub rate_per_second: f64,
    /// Requests a token may send at once above its average rate.
    pub burst: u32,
    /// Requests of one token in progress at once (0: no limit beyond the server's).
    pub max_concurrent_per_token: u32,
    /// `GET /metrics` without a token (scrapers); false: only `admin` tokens.
    pub metrics_public: bool,
    /// PEM certificate chain of the listener; with `tls_key_file`, the API speaks HTTPS.
    pub tls_cert_file: Option<PathBuf>,
    /// PEM private key of `tls_cert_file`.
    pub tls_key_file: Option<PathBuf>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8080".to_owned(),
            max_question_chars: 2_000,
            max_body_bytes: 64 * 1024,
            max_concurrent_questions: 64,
            console: true,
            open: false,
            tokens: Vec::new(),
            tokens_file: None,
            tokens_env: None,
            rate_per_second: TokenLimits::default().rate_per_second,
            burst: TokenLimits::default().burst,
            max_concurrent_per_token: TokenLimits::default().max_concurrent,
            metrics_public: true,
            tls_cert_file: None,
            tls_key_file: None,
        }
    }
}

/// Where the plan cache keeps verified plans.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CacheConfig {
    /// JSON-lines file for embedded mode (`ask`, `serve --embedded`); without it the
    /// cache lives only as long as the process.
    pub path: Option<PathBuf>,
    /// JetStream KV bucket shared by every cache-manager replica in distributed mode.
    pub kv_bucket: String,
    /// Few-shot examples a lookup returns (k).
    pub examples: usize,
    /// MMR trade-off between relevance (1.0) and diversity (0.0).
    pub mmr_lambda: f32,
    /// Below this normalized relevance (0 to 1) a past plan is not returned.
    pub min_relevance: f32,
    /// Verifications a plan needs before it is replayed without a model.
    pub replay_min_hits: u32,
    /// With an embedder, a question whose wording has no plan replays the plan of the
    /// most similar wording when the two templates' similarity (0.7 times the
    /// embedding cosine plus 0.3 times the BM25 relevance) reaches this and the learned
    /// lexicon finds that the plan fits the question: its words account for every
    /// relation step, in order, and the last step gives the answer type they ask for.
    /// Above 1: never.
    pub near_replay_min: f32,
    /// Distinct principals (API credentials) whose agreeing feedback replaces a cached
    /// plan with a conflicting correction, or removes a plan with verified successes;
    /// until then the verdict is held (`pending`). One admin principal applies it
    /// alone, and only an admin applies a correction whose plan reads far from the
    /// question (`flagged`).
    pub feedback_confirmations: u32,
    /// Feedback verdicts one non-admin principal may give per minute, per cache-manager
    /// process; more are answered `limited` and change nothing.
    pub feedback_per_minute: u32,
}

impl Default for CacheConfig {
    fn default() -> Self {
        let cache = kgmesh_agents::cache_manager::core::CacheConfig::default();
        Self {
            path: None,
            kv_bucket: "kgmesh-plans".to_owned(),
            examples: cache.k,
            mmr_lambda: cache.lambda,
            min_relevance: cache.min_relevance,
            replay_min_hits: cache.replay_min_hits,
            near_replay_min: cache.near_replay_min,
            feedback_confirmations: cache.feedback_confirmations,
            feedback_per_minute: cache.feedback_per_minute,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetryConfig {
    /// Log filter (`RUST_LOG` syntax); `RUST_LOG` wins when set.
    pub log: String,
    pub log_json: bool,
    /// Address of the Prometheus `/metrics` listener of agent processes.
    pub metrics_listen: Option<String>,
    /// OTLP collector (e.g. Jaeger) to send spans to, `http://host:4318` (HTTP) or
    /// `http://host:4317` (gRPC); no export when unset. `OTEL_EXPORTER_OTLP_ENDPOINT` wins.
    pub otlp_endpoint: Option<String>,
    /// `http/protobuf` (default) or `grpc`; `OTEL_EXPORTER_OTLP_PROTOCOL` wins.
    pub otlp_protocol: Option<String>,
    /// `service.name` of this process's spans; `OTEL_SERVICE_NAME` wins. Default
    /// `kgmesh-<role>` for agents, `kgmesh-serve`, or `kgmesh`.
    pub service_name: Option<String>,
    /// Put LLM prompts and completions on trace spans. Off: prompts carry users'
    /// questions and graph data.
    pub record_prompts: bool,
    /// Jaeger's web UI (`http://host:16686`): the web console links each answer's
    /// trace there.
    pub jaeger_ui_url: Option<String>,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        Self {
            log: "warn,kgmesh=info".to_owned(),
            log_json: false,
            metrics_listen: None,
            otlp_endpoint: None,
            otlp_protocol: None,
            service_name: None,
            record_prompts: false,
            jaeger_ui_url: None,
        }
    }
}

/// `host:port` with a port: an IP address, or a host name.
fn listen_address_ok(listen: &str) -> bool {
    if listen.parse::<std::net::SocketAddr>().is_ok() {
        return true;
    }
    match listen.rsplit_once(':') {
        Some((host, port)) => {
            port.parse::<u16>().is_ok()
                && !host.is_empty()
                && host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
        }
        None => false,
    }
}

/// Keys of `given` (what the file and environment set) that `known` (the defaults,
/// every key present) does not have, as `section.key` with the likeliest intended key.
fn unknown_keys(
    given: &serde_json::Value,
    known: &serde_json::Value,
    prefix: &str,
    out: &mut Vec<String>,
) {
    let (Some(given), Some(known)) = (given.as_object(), known.as_object()) else {
        return;
    };
    for (key, value) in given {
        let path = format!("{prefix}{key}");
        match known.get(key) {
            Some(default) if default.is_object() => {
                unknown_keys(value, default, &format!("{path}."), out)
            }
            Some(_) => {}
            None => {
                // A close spelling, or the key inside a longer or shorter one
                // (`max_rounds` for `rounds`).
                let nearest = known
                    .keys()
                    .map(|candidate| {
                        let nested = candidate.len() >= 4
                            && (key.contains(candidate.as_str())
                                || candidate.contains(key.as_str()));
                        let distance = if nested {
                            1
                        } else {
                            kgmesh_models::lexical::text::edit_distance(key, candidate, false)
                        };
                        (distance, candidate)
                    })
                    .filter(|(distance, candidate)| {
                        *distance <= 2.max(candidate.len() / 3) && *distance < key.len()
                    })
                    .min();
                let hint = match nearest {
                    Some((_, candidate)) => format!("; did you mean `{prefix}{candidate}`?"),
                    None if prefix.is_empty() => format!(
                        "; the sections are {}",
                        known.keys().cloned().collect::<Vec<_>>().join(", ")
                    ),
                    None => format!(
                        "; the keys of `{}` are {}",
                        prefix.trim_end_matches('.'),
                        known.keys().cloned().collect::<Vec<_>>().join(", ")
                    ),
                };
                out.push(format!("unknown key `{path}`{hint}"));
            }
        }
    }
}

/// Every problem found in a configuration, reported at once.
#[derive(Debug, thiserror::Error)]
#[error("invalid configuration:\n  - {}", .problems.join("\n  - "))]
pub struct ConfigError {
    pub problems: Vec<String>,
}

impl Config {
    /// Defaults → `file` (when given) → `KGMESH__…` environment variables, validated.
    pub fn load(file: Option<&Path>) -> Result<Self, ConfigError> {
        Self::load_from(file, Env::prefixed("KGMESH__").split("__"))
    }

    fn load_from(file: Option<&Path>, env: Env) -> Result<Self, ConfigError> {
        let mut figment = Figment::from(Serialized::defaults(Config::default()));
        if let Some(path) = file {
            if !path.exists() {
                return Err(ConfigError {
                    problems: vec![format!("config file {} does not exist", path.display())],
                });
            }
            figment = figment.merge(Toml::file_exact(path));
        }
        // Every misspelt key at once, each with the key it most likely meant (the
        // deserializer would stop at the first one).
        let mut given = Figment::new();
        if let Some(path) = file {
            given = given.merge(Toml::file_exact(path));
        }
        let given: serde_json::Value =
            given
                .merge(env.clone())
                .extract()
                .map_err(|error| ConfigError {
                    problems: error.into_iter().map(|e| e.to_string()).collect(),
                })?;
        let known = serde_json::to_value(Config::default()).unwrap_or_default();
        let mut unknown = Vec::new();
        unknown_keys(&given, &known, "", &mut unknown);
        if !unknown.is_empty() {
            return Err(ConfigError { problems: unknown });
        }
        let config: Config = figment.merge(env).extract().map_err(|error| ConfigError {
            problems: error.into_iter().map(|e| e.to_string()).collect(),
        })?;
        config.validate()?;
        Ok(config)
    }

    /// Checks value ranges and combinations; every problem is listed.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let mut problems = Vec::new();
        if !(1..=kgmesh_schemas::budget::MAX_DEPTH).contains(&self.budget.depth) {
            problems.push(format!(
                "budget.depth = {} must be between 1 and {}",
                self.budget.depth,
                kgmesh_schemas::budget::MAX_DEPTH
            ));
        }
        if self.budget.rounds == 0 {
            problems.push("budget.rounds must be at least 1".to_owned());
        }
        if self.budget.timeout_ms == 0 {
            problems.push("budget.timeout_ms must be positive".to_owned());
        }
        if self.bus.request_timeout_ms == 0 {
            problems.push("bus.request_timeout_ms must be positive".to_owned());
        }
        if self.bus.max_in_flight == 0 {
            problems.push("bus.max_in_flight must be at least 1".to_owned());
        }
        let unit = |key: &str, value: f32, problems: &mut Vec<String>| {
            if !(0.0..=1.0).contains(&value) {
                problems.push(format!("{key} = {value} must be between 0 and 1"));
            }
        };
        unit("text.theta", self.text.theta, &mut problems);
        unit(
            "reader.min_confidence",
            self.reader.min_confidence,
            &mut problems,
        );
        if let Some(below) = self.llm.cascade_below {
            unit("llm.cascade_below", below, &mut problems);
        }
        if self.llm.cascade_calls == 0 {
            problems.push(
                "llm.cascade_calls = 0: a question the cascade sends on needs at least one model call (leave llm.cascade_below unset to never ask the model)"
                    .to_owned(),
            );
        }
        if !(50..=100_000).contains(&self.text.context_tokens) {
            problems.push(format!(
                "text.context_tokens = {} must be between 50 and 100000",
                self.text.context_tokens
            ));
        }
        unit(
            "judge.complete_score",
            self.judge.complete_score,
            &mut problems,
        );
        unit(
            "judge.min_relation_score",
            self.judge.min_relation_score,
            &mut problems,
        );
        unit(
            "summarizer.keep_within",
            self.summarizer.keep_within,
            &mut problems,
        );
        unit(
            "summarizer.abstain_found_cosine",
            self.summarizer.abstain_found_cosine,
            &mut problems,
        );
        unit(
            "summarizer.abstain_relations_cosine",
            self.summarizer.abstain_relations_cosine,
            &mut problems,
        );
        unit(
            "summarizer.far_answer_min_confidence",
            self.summarizer.far_answer_min_confidence,
            &mut problems,
        );
        unit(
            "traverser.min_relevance",
            self.traverser.min_relevance,
            &mut problems,
        );
        unit("cache.mmr_lambda", self.cache.mmr_lambda, &mut problems);
        unit(
            "cache.min_relevance",
            self.cache.min_relevance,
            &mut problems,
        );
        let t = &self.traverser;
        for (key, value) in [
            ("summarizer.max_citations", self.summarizer.max_citations),
            ("traverser.max_steps", usize::from(t.max_steps)),
            ("traverser.fanout_cap", t.fanout_cap),
            ("traverser.offered_relations", t.offered_relations),
            ("traverser.max_relations", t.max_relations),
            ("traverser.max_triplets", t.max_triplets),
            ("traverser.max_next_entities", t.max_next_entities),
            ("cache.examples", self.cache.examples),
            (
                "cache.feedback_confirmations",
                self.cache.feedback_confirmations as usize,
            ),
            (
                "cache.feedback_per_minute",
                self.cache.feedback_per_minute as usize,
            ),
        ] {
            if value == 0 {
                problems.push(format!("{key} must be at least 1"));
            }
        }
        let ways = [
            self.bus.nats_credentials_env.is_some(),
            self.bus.nats_nkey_env.is_some(),
            self.bus.nats_creds_file.is_some(),
        ];
        if ways.iter().filter(|set| **set).count() > 1 {
            problems.push(
                "bus.nats_credentials_env, bus.nats_nkey_env and bus.nats_creds_file are \
                 three ways to authenticate to NATS; set one"
                    .to_owned(),
            );
        }
        if self.graph.backend == GraphBackend::Bolt && self.graph.bolt_uri.is_none() {
            problems.push("graph.backend = \"bolt\" needs graph.bolt_uri".to_owned());
        }
        if self.embedder.kind == EmbedderKind::Minilm && self.embedder.model_dir.is_none() {
            problems.push("embedder.kind = \"minilm\" needs embedder.model_dir".to_owned());
        }
        if self.embedder.kind == EmbedderKind::Openai && self.embedder.base_url.is_none() {
            problems.push("embedder.kind = \"openai\" needs embedder.base_url".to_owned());
        }
        if self.embedder.batch_size == 0 {
            problems.push("embedder.batch_size must be positive".to_owned());
        }
        if self.vectors.backend != VectorBackend::None {
            match self.embedder.kind {
                EmbedderKind::None => problems.push(
                    "vectors.backend needs an embedder: set embedder.kind to \"minilm\" or \"openai\""
                        .to_owned(),
                ),
                EmbedderKind::Auto => {
                    let mut resolved = self.embedder.clone();
                    let said = resolved.resolve_auto();
                    if resolved.kind == EmbedderKind::None {
                        problems.push(format!("vectors.backend needs an embedder; the embedder is {said}"));
                    }
                }
                EmbedderKind::Minilm | EmbedderKind::Openai => {}
            }
        }
        if self.vectors.backend == VectorBackend::Qdrant && self.vectors.collection.is_empty() {
            problems.push("vectors.collection must not be empty".to_owned());
        }
        if self.vectors.timeout_ms == 0 {
            problems.push("vectors.timeout_ms must be positive".to_owned());
        }
        let bucket_ok = !self.cache.kv_bucket.is_empty()
            && self
                .cache
                .kv_bucket
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !bucket_ok {
            problems.push(format!(
                "cache.kv_bucket = {:?} must be letters, digits, '-' or '_'",
                self.cache.kv_bucket
            ));
        }
        if !(1..=MAX_TOP_METAPATHS).contains(&self.retrieval.top_metapaths) {
            problems.push(format!(
                "retrieval.top_metapaths = {} must be between 1 and {MAX_TOP_METAPATHS}",
                self.retrieval.top_metapaths
            ));
        }
        if !(1..=MAX_SCORING_TOP_K).contains(&self.retrieval.scoring_top_k) {
            problems.push(format!(
                "retrieval.scoring_top_k = {} must be between 1 and {MAX_SCORING_TOP_K}",
                self.retrieval.scoring_top_k
            ));
        }
        let llm_roles = llm_roles();
        for role in &self.llm.roles {
            if !llm_roles.contains(&role.as_str()) {
                problems.push(format!(
                    "llm.roles: {role:?} is not a role that uses a model (one of {})",
                    llm_roles.join(", ")
                ));
            }
        }
        for (key, url) in [
            ("llm.base_url", &self.llm.base_url),
            ("embedder.base_url", &self.embedder.base_url),
        ] {
            if let Some(url) = url {
                let scheme_ok = url.starts_with("http://") || url.starts_with("https://");
                let host_ok = url.split_once("://").is_some_and(|(_, rest)| {
                    !rest.is_empty() && !rest.contains(char::is_whitespace)
                });
                if !scheme_ok || !host_ok {
                    problems.push(format!(
                        "{key} = {url:?} is no URL: write http://host:port/v1 (or https://…)"
                    ));
                }
            }
        }
        if !listen_address_ok(&self.http.listen) {
            problems.push(format!(
                "http.listen = {:?} is no address to listen on: write host:port, e.g. \
                 \"127.0.0.1:8080\" or \"0.0.0.0:8080\"",
                self.http.listen
            ));
        }
        if let Some(url) = &self.telemetry.jaeger_ui_url {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                problems.push(format!(
                    "telemetry.jaeger_ui_url must start with http:// or https://, not {url:?}"
                ));
            }
        }
        if self.bus.hedge_min_ms > self.bus.hedge_max_ms {
            problems.push(format!(
                "bus.hedge_min_ms ({}) must not exceed bus.hedge_max_ms ({})",
                self.bus.hedge_min_ms, self.bus.hedge_max_ms
            ));
        }
        if self.http.max_concurrent_questions == 0 {
            problems.push("http.max_concurrent_questions must be positive".to_owned());
        }
        if !(self.http.rate_per_second.is_finite() && self.http.rate_per_second >= 0.0) {
            problems.push(format!(
                "http.rate_per_second = {} must be 0 (no limit) or more",
                self.http.rate_per_second
            ));
        }
        if self.http.rate_per_second > 0.0 && self.http.burst == 0 {
            problems.push("http.burst must be at least 1 with a rate limit".to_owned());
        }
        if self.http.tls_cert_file.is_some() != self.http.tls_key_file.is_some() {
            problems.push(
                "http.tls_cert_file and http.tls_key_file go together: set both for HTTPS, or \
                 neither"
                    .to_owned(),
            );
        }
        if let Some(name) = &self.http.tokens_env {
            let ok = !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit());
            if !ok {
                problems.push(format!(
                    "http.tokens_env = {name:?} must be the name of an environment variable \
                     (letters, digits, `_`), not the tokens themselves"
                ));
            }
        }
        if let Err(found) =
            kgmesh_coordinator::auth::Access::new(&self.http.tokens, self.token_limits(), false)
        {
            problems.extend(found.into_iter().map(|p| format!("http.tokens: {p}")));
        }
        if let Some(protocol) = &self.telemetry.otlp_protocol {
            if let Err(error) = kgmesh_telemetry::Protocol::parse(protocol) {
                problems.push(format!("telemetry.otlp_protocol: {error}"));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ConfigError { problems })
        }
    }

    /// The limits of a token that sets none of its own.
    pub fn token_limits(&self) -> TokenLimits {
        TokenLimits {
            rate_per_second: self.http.rate_per_second,
            burst: self.http.burst,
            max_concurrent: self.http.max_concurrent_per_token,
        }
    }

    pub fn retrieval(&self) -> kgmesh_agents::settings::RetrievalSettings {
        kgmesh_agents::settings::RetrievalSettings {
            top_metapaths: self.retrieval.top_metapaths,
            scoring_top_k: self.retrieval.scoring_top_k,
            embed_questions: self.retrieval.embed_questions,
            grounded_cypher: self.retrieval.grounded_cypher,
        }
    }

    /// The text index and how the text retriever searches it, when one is configured.
    pub fn text(&self) -> Option<kgmesh_agents::text_retriever::TextSource> {
        self.text
            .index
            .clone()
            .map(|dir| kgmesh_agents::text_retriever::TextSource {
                dir,
                search: kgmesh_agents::text_retriever::retrieve::SearchSettings {
                    context_tokens: self.text.context_tokens,
                    theta: self.text.theta,
                    channels: self.text.channels,
                },
            })
    }

    /// The plan cache's settings (`[cache]`).
    pub fn cache_rule(&self) -> kgmesh_agents::cache_manager::CacheConfig {
        kgmesh_agents::cache_manager::CacheConfig {
            k: self.cache.examples,
            lambda: self.cache.mmr_lambda,
            min_relevance: self.cache.min_relevance,
            replay_min_hits: self.cache.replay_min_hits,
            near_replay_min: self.cache.near_replay_min,
            feedback_confirmations: self.cache.feedback_confirmations,
            feedback_per_minute: self.cache.feedback_per_minute,
            ..Default::default()
        }
    }

    /// `deps` with the roles' settings of this configuration: each role's own section,
    /// the retrieval sizes and the text index.
    pub fn role_settings(
        &self,
        deps: kgmesh_agents::runtime::AgentDeps,
    ) -> kgmesh_agents::runtime::AgentDeps {
        let deps = deps
            .with(self.judge)
            .with(self.summarizer)
            .with(self.traverser)
            .with(self.cache_rule())
            .with(self.retrieval());
        match self.text() {
            Some(text) => deps.with(text),
            None => deps,
        }
    }

    /// A question's model calls: `budget.llm_calls`, or when unset what the roles of
    /// `llm.roles` spend on one round: one each, the agentic traverser
    /// `traverser.max_llm_calls`. With the default roles that is 3 (KG-Linker, judge,
    /// summarizer), and a second round is planned without the model.
    pub fn llm_calls(&self) -> u32 {
        self.budget.llm_calls.unwrap_or_else(|| {
            self.llm
                .roles
                .iter()
                .map(|role| match role.as_str() {
                    kgmesh_schemas::Role::AGENTIC_TRAVERSER => self.traverser.max_llm_calls,
                    _ => 1,
                })
                .sum()
        })
    }

    /// Model calls kept for the summarizer: 1 where it uses the model.
    pub fn summarizer_llm_calls(&self) -> u32 {
        let uses_model = self
            .llm
            .roles
            .iter()
            .any(|role| role == kgmesh_schemas::Role::SUMMARIZER);
        u32::from(uses_model)
    }

    pub fn budget(&self) -> kgmesh_schemas::Budget {
        let b = &self.budget;
        kgmesh_schemas::Budget {
            rounds: b.rounds,
            depth: kgmesh_schemas::Depth::saturating(b.depth),
            breadth: b.breadth,
            depth_expansions: b.depth_expansions,
            llm_calls: self.llm_calls(),
            tokens: b.tokens,
            result_rows: b.result_rows,
            deadline: kgmesh_schemas::Deadline::after(std::time::Duration::from_millis(
                b.timeout_ms,
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn no_env() -> Env {
        Env::prefixed("KGMESH_TEST_UNUSED__").split("__")
    }

    /// `text` written to a config file and loaded from it, without the environment.
    fn load(text: &str) -> Result<Config, ConfigError> {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        writeln!(file, "{text}").unwrap();
        Config::load_from(Some(file.path()), no_env())
    }

    #[test]
    fn defaults_are_valid() {
        Config::default().validate().expect("defaults validate");
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let error = load("[bus]\nkind = \"nats\"\nnats_ulr = \"nats://x\"").unwrap_err();
        assert!(error.to_string().contains("nats_ulr"), "{error}");
    }

    #[test]
    fn every_misspelt_key_is_reported_at_once_with_the_key_meant() {
        let error = load(
            "[budget]\nmax_rounds = 3\n[retrival]\ntop_metapaths = 5\n[llm]\nmodle = \"x\"\n\
             [http]\nzzzz = 1",
        )
        .unwrap_err();
        let problems = error.problems.join("\n");
        assert_eq!(error.problems.len(), 4, "{problems}");
        for expected in [
            "`budget.max_rounds`; did you mean `budget.rounds`?",
            "`retrival`; did you mean `retrieval`?",
            "`llm.modle`; did you mean `llm.model`?",
            "`http.zzzz`; the keys of `http` are",
        ] {
            assert!(
                problems.contains(expected),
                "{expected} missing from:\n{problems}"
            );
        }
    }

    #[test]
    fn a_url_or_listen_address_that_cannot_work_is_refused() {
        let error =
            load("[llm]\nbase_url = \"not a url\"\n[http]\nlisten = \"nonsense\"").unwrap_err();
        let problems = error.problems.join("\n");
        assert!(problems.contains("llm.base_url"), "{problems}");
        assert!(problems.contains("http.listen"), "{problems}");
        for listen in [
            "127.0.0.1:8080",
            "0.0.0.0:80",
            "[::1]:8080",
            "kgmesh-api:8080",
        ] {
            let config = load(&format!("[http]\nlisten = \"{listen}\""));
            assert!(config.is_ok(), "{listen}: {:?}", config.err());
        }
        load("[llm]\nbase_url = \"http://127.0.0.1:8000/v1\"").expect("a URL");
    }

    #[test]
    fn a_cascade_that_may_make_no_model_call_is_refused() {
        let error = load("[llm]\ncascade_below = 0.8\ncascade_calls = 0").unwrap_err();
        let problems = error.problems.join("\n");
        assert!(problems.contains("llm.cascade_calls = 0"), "{problems}");
        let config = load("[llm]\ncascade_below = 0.8").expect("the default");
        assert_eq!(config.llm.cascade_calls, 1);
    }

    #[test]
    // figment's Jail dictates the closure's (large) error type.
    #[allow(clippy::result_large_err)]
    fn file_values_override_defaults_and_env_overrides_file() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        writeln!(file, "[budget]\nrounds = 3\ndepth = 2").unwrap();
        let config = Config::load_from(Some(file.path()), no_env()).unwrap();
        assert_eq!(config.budget.rounds, 3);
        assert_eq!(config.budget.depth, 2);
        figment::Jail::expect_with(|jail| {
            jail.set_env("KGMESH_JAILTEST__BUDGET__ROUNDS", "5");
            let config = Config::load_from(
                Some(file.path()),
                Env::prefixed("KGMESH_JAILTEST__").split("__"),
            )
            .unwrap();
            assert_eq!(config.budget.rounds, 5);
            assert_eq!(config.budget.depth, 2);
            Ok(())
        });
    }

    #[test]
    fn a_vector_backend_needs_an_embedder() {
        let error =
            load("[vectors]\nbackend = \"qdrant\"\ncollection = \"\"\n[embedder]\nkind = \"none\"")
                .unwrap_err();
        assert_eq!(error.problems.len(), 2, "{error}");
        assert!(error.to_string().contains("embedder"), "{error}");
        // `auto` (the default) that finds no MiniLM files is no embedder either.
        let error = load(concat!(
            "[vectors]\nbackend = \"embedded\"\n",
            "[embedder]\nmodel_dir = \"/nonexistent/kgmesh-minilm\""
        ))
        .unwrap_err();
        assert_eq!(error.problems.len(), 1, "{error}");
        assert!(
            error.to_string().contains("found no MiniLM files"),
            "{error}"
        );
        let config = load(concat!(
            "[embedder]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:1/v1\"\n",
            "[vectors]\nbackend = \"qdrant\"\nqdrant_url = \"http://qdrant:6334\""
        ))
        .unwrap();
        assert_eq!(config.vectors.backend, VectorBackend::Qdrant);
        assert_eq!(config.vectors.collection, "kgmesh_entities");
    }

    #[test]
    fn all_problems_are_reported_at_once() {
        let error = load("[budget]\nrounds = 0\ndepth = 7").unwrap_err();
        assert_eq!(error.problems.len(), 2, "{error}");
    }

    #[test]
    fn retrieval_sizes_reach_the_agents_and_are_range_checked() {
        let config = load("[retrieval]\ntop_metapaths = 6\nscoring_top_k = 60").unwrap();
        let settings = config.retrieval();
        assert_eq!((settings.top_metapaths, settings.scoring_top_k), (6, 60));

        let error = load("[retrieval]\ntop_metapaths = 0\nscoring_top_k = 100000").unwrap_err();
        assert_eq!(error.problems.len(), 2, "{error}");
        assert!(
            error.to_string().contains("retrieval.top_metapaths = 0"),
            "{error}"
        );
    }

    #[test]
    fn the_roles_that_use_the_model_are_configured_and_checked() {
        assert_eq!(
            llm_roles(),
            [
                "kg-linker",
                "judge",
                "summarizer",
                "cache-manager",
                "pattern-matcher",
                "agentic-traverser"
            ]
        );
        assert_eq!(
            Config::default().llm.roles,
            ["kg-linker", "judge", "summarizer"]
        );
        assert!(!Config::default()
            .llm
            .roles
            .contains(&"agentic-traverser".to_owned()));
        let config = load("[llm]\nroles = [\"summarizer\", \"agentic-traverser\"]").unwrap();
        assert_eq!(config.llm.roles, ["summarizer", "agentic-traverser"]);
        let error = load("[llm]\nroles = [\"summariser\"]").unwrap_err();
        assert!(error.to_string().contains("\"summariser\""), "{error}");
    }

    #[test]
    fn each_roles_settings_reach_the_roles() {
        use kgmesh_agents::{
            cache_manager::CacheConfig as CacheRule, judge::core::JudgeRule,
            settings::RetrievalSettings, summarizer::core::SummaryRule, text_retriever::TextSource,
            traverser::core::TraverseConfig,
        };
        let config = load(concat!(
            "[judge]\ncomplete_score = 0.9\n[summarizer]\nmax_citations = 2\n",
            "[traverser]\nmax_steps = 1\n[cache]\nexamples = 7\n",
            "[retrieval]\nscoring_top_k = 60\n[text]\nindex = \"/nonexistent/kgmesh-text\""
        ))
        .unwrap();
        assert_eq!(config.judge.complete_score, 0.9);
        assert_eq!(config.traverser.max_steps, 1);
        let bus: std::sync::Arc<dyn kgmesh_bus::Bus> =
            std::sync::Arc::new(kgmesh_bus::LocalBus::new());
        let deps = config.role_settings(kgmesh_agents::runtime::AgentDeps::new(bus));
        assert_eq!(deps.setting::<JudgeRule>(), config.judge);
        assert_eq!(deps.setting::<SummaryRule>(), config.summarizer);
        assert_eq!(deps.setting::<TraverseConfig>(), config.traverser);
        assert_eq!(deps.setting::<CacheRule>().k, 7);
        assert_eq!(deps.setting::<RetrievalSettings>().scoring_top_k, 60);
        assert_eq!(deps.get::<TextSource>(), config.text().as_ref());
    }

    #[test]
    fn the_model_call_budget_follows_the_roles_unless_it_is_set() {
        let default = Config::default();
        assert_eq!(
            (default.llm_calls(), default.summarizer_llm_calls()),
            (3, 1)
        );
        assert_eq!(default.budget().llm_calls, 3);
        let walker = load(
            "[llm]\nroles = [\"kg-linker\", \"agentic-traverser\"]\n[traverser]\nmax_llm_calls = 4",
        )
        .unwrap();
        assert_eq!((walker.llm_calls(), walker.summarizer_llm_calls()), (5, 0));
        let set = load("[budget]\nllm_calls = 12").unwrap();
        assert_eq!((set.llm_calls(), set.budget().llm_calls), (12, 12));
        assert_eq!(set.summarizer_llm_calls(), 1);
    }

    #[test]
    fn auto_embedder_is_minilm_where_its_files_are_and_none_elsewhere() {
        let dir = tempfile::tempdir().unwrap();
        let mut auto = EmbedderConfig {
            model_dir: Some(dir.path().to_owned()),
            ..EmbedderConfig::default()
        };
        assert_eq!(auto.kind, EmbedderKind::Auto, "the default");
        let mut none = auto.clone();
        let said = none.resolve_auto();
        assert_eq!(none.kind, EmbedderKind::None);
        assert!(said.contains("found no MiniLM files"), "{said}");
        for file in ["model.safetensors", "config.json", "tokenizer.json"] {
            std::fs::write(dir.path().join(file), "x").unwrap();
        }
        let said = auto.resolve_auto();
        assert_eq!(auto.kind, EmbedderKind::Minilm);
        assert_eq!(auto.model_dir.as_deref(), Some(dir.path()));
        assert!(said.starts_with("MiniLM from "), "{said}");
        // A kind chosen outright is left as it is.
        let mut chosen = EmbedderConfig {
            kind: EmbedderKind::None,
            model_dir: Some(dir.path().to_owned()),
            ..EmbedderConfig::default()
        };
        chosen.resolve_auto();
        assert_eq!(chosen.kind, EmbedderKind::None);
    }
}
