//! `kgmesh config reference`: every configuration key with its default, its environment
//! variable and what it means, as Markdown (the text of docs/configuration.md).
//!
//! The keys and defaults come from [`Config::default`]. The meanings of a role's own
//! section come from the role's config type (its descriptor's
//! [`ConfigSection`](kgmesh_agents::runtime::ConfigSection)); the others are written
//! here, in [`KEYS`] and [`KEYS_AFTER_ROLES`]. A test fails when a key has no meaning or
//! a meaning no key.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::Context as _;
use kgmesh_eval::report::number_as_written;
use serde_json::Value;

use crate::config::Config;

/// Prefix of the environment variables that set configuration keys.
const ENV_PREFIX: &str = "KGMESH__";

/// What the keys of the process's sections before the roles' own sections mean, as
/// (`section.key`, one sentence), in the order the reference lists them.
const KEYS: &[(&str, &str)] = &[
    // bus
    (
        "bus.kind",
        "Where `kgmesh serve` finds the roles: `local` (every role in the serve process, on \
         the in-process bus) or `nats` (roles in any process, as `kgmesh agent` on NATS); \
         `serve --nats` and `serve --embedded` override it.",
    ),
    (
        "bus.nats_url",
        "NATS server of `kgmesh serve`, `kgmesh agent` and `kgmesh cache --nats` when the \
         command line names none.",
    ),
    (
        "bus.nats_credentials_env",
        "Name of an environment variable holding a NATS token or `user:password`; unset for \
         no credentials. One of this, `bus.nats_nkey_env` and `bus.nats_creds_file` at most.",
    ),
    (
        "bus.nats_nkey_env",
        "Name of an environment variable holding an NKey seed (`SU…`) to log in to NATS \
         with; the server knows its public key.",
    ),
    (
        "bus.nats_creds_file",
        "A NATS `.creds` file (user JWT and NKey seed) of a decentralized-auth account.",
    ),
    (
        "bus.nats_tls_ca_file",
        "PEM file of the certificate authorities that sign nats-server's certificate; set, \
         every connection requires TLS and trusts them besides the system's. A login refused \
         or a certificate not verified ends the process at once, saying which.",
    ),
    (
        "bus.request_timeout_ms",
        "Longest wait for one bus call from the coordinator to a role, in milliseconds; the \
         question's deadline cuts it shorter.",
    ),
    (
        "bus.retries",
        "Retries of a bus call (one policy for every call: no responders, a closed or \
         reconnecting bus, an unavailable or overloaded role, and a call with no reply in \
         time once), with a pause doubling from 10 ms to at most 500 ms, never beyond the \
         question's deadline; an agent's refusal is not retried.",
    ),
    (
        "bus.max_in_flight",
        "Requests one `kgmesh agent` process serves at once; one more is answered at once \
         with a typed `overloaded` error, which the coordinator takes as a reason to try \
         another replica (within `bus.retries` and the question's deadline).",
    ),
    (
        "bus.hedge",
        "Hedged calls: a read-only call to a role with several replicas that has no reply \
         after the role's recent p95 latency is sent to the other replicas in turn (on \
         each one's own subject), and the first reply wins; a frozen or dead replica then \
         costs a question that delay instead of `bus.request_timeout_ms`.",
    ),
    (
        "bus.hedge_min_ms",
        "Least wait before a hedge, in milliseconds (a fast role is not hedged sooner).",
    ),
    (
        "bus.hedge_max_ms",
        "Longest wait before a hedge, in milliseconds (a slow role is hedged no later).",
    ),
    (
        "bus.hedge_first_ms",
        "Wait before a hedge while fewer than 8 calls of the role are known, in \
         milliseconds.",
    ),
    (
        "bus.agent_workers",
        "Threads serving the role of a `kgmesh agent` process, each with its own copy of \
         the role, taking requests in turn, so that a CPU-bound role uses that many cores; \
         0 means one per CPU core. Embedded mode (`ask`, `serve --embedded`) runs one per \
         role.",
    ),
    (
        "bus.allowed_roles",
        "Roles besides the built-in ones that the coordinator calls, such as a retriever \
         run from outside this repository (docs/agents.md); any other role that announces \
         itself on the bus is left out, logged once and counted in \
         `kgmesh_refused_roles_total`. `[\"*\"]` calls every role that announces itself.",
    ),
    // graph
    (
        "graph.backend",
        "Where the graph is: `embedded` (a KG file, directory or snapshot read into the \
         process) or `bolt` (a graph database over Bolt at `graph.bolt_uri`).",
    ),
    (
        "graph.path",
        "KG file, directory or snapshot of the embedded backend, used when the command line \
         gives no `--kg`.",
    ),
    (
        "graph.mapping",
        "TOML mapping of a property-graph CSV directory; unset means `kgmesh-mapping.toml` \
         inside that directory ([property-graphs.md](property-graphs.md)).",
    ),
    (
        "graph.bolt_uri",
        "`bolt://host:port` of the graph database; required with `graph.backend = \"bolt\"`.",
    ),
    ("graph.bolt_user", "User name on the Bolt server."),
    (
        "graph.bolt_password_env",
        "Name of the environment variable that holds the Bolt password (never the password \
         itself).",
    ),
    (
        "graph.bolt_database",
        "Database on the Bolt server; unset for the server's default database.",
    ),
    (
        "graph.query_timeout_ms",
        "Bound on connecting to the Bolt server and on each query, in milliseconds (at least \
         30 s while `kgmesh load` writes).",
    ),
    // llm
    (
        "llm.base_url",
        "OpenAI-compatible chat endpoint (`http://host:port/v1`), else `OPENAI_BASE_URL`; with \
         neither, every role runs its LLM-free strategy.",
    ),
    ("llm.model", "Model name sent to the chat endpoint."),
    (
        "llm.api_key_env",
        "Name of the environment variable holding the API key, sent as `Authorization: Bearer` \
         when that variable is set.",
    ),
    (
        "llm.timeout_ms",
        "Limit on one attempt of a model call (connect, prompt processing and generation), in \
         milliseconds.",
    ),
    (
        "llm.max_retries",
        "Attempts after the first for a model call answered 429 or 5xx or timed out.",
    ),
    (
        "llm.max_concurrency",
        "Model calls in flight at once from one process.",
    ),
    (
        "llm.requests_per_minute",
        "Model calls started per rolling minute; unset for no limit.",
    ),
    (
        "llm.temperature",
        "Shown in `kgmesh eval` reports only; every prompt is sent with temperature 0.",
    ),
    (
        "llm.max_tokens",
        "Shown in `kgmesh eval` reports only; every prompt sets its own completion-token limit.",
    ),
    (
        "llm.breaker_failures",
        "After this many calls in a row find the model down (a 5xx reply), \
         calls fail at once for `llm.breaker_cooldown_ms` and the roles answer LLM-free; a \
         call that found nothing listening, or had no reply within `llm.timeout_ms` or \
         before its caller's deadline, opens the breaker at once; 0 turns this off.",
    ),
    (
        "llm.breaker_cooldown_ms",
        "How long model calls fail at once after the breaker opens, in milliseconds.",
    ),
    (
        "llm.context_tokens",
        "The model's context window in tokens (a local server's `n_ctx`, 4096 for \
         `scripts/local-llm`; a hosted model's limit): the judge's and summarizer's evidence \
         is cut to fit it beside the reply. Unset: their own budgets, which need about 8k.",
    ),
    (
        "llm.choice_constraint",
        "How the server is held to one of the offered replies where a prompt offers a \
         choice (`kgmesh cypher --ask` and `eval --dataset text2cypher` picking a query): \
         `none` (the prompt asks, the reply is read tolerantly; any server), `grammar` (a \
         GBNF grammar, llama.cpp's server and `scripts/local-llm`) or `guided_choice` \
         (vLLM). A hosted API may refuse the extra field: keep `none` there.",
    ),
    (
        "llm.roles",
        "Roles that use the model, any of `kg-linker`, `judge`, `summarizer`, \
         `cache-manager`, `agentic-traverser`, `pattern-matcher`; the others run their \
         LLM-free strategy. The default spends three calls on a cold question and one on \
         a replayed plan; `cache-manager` adds one a question (the plans' domain and \
         aspect), `agentic-traverser` two a step, `pattern-matcher` one.",
    ),
    (
        "llm.cascade_below",
        "The model cascade, 0 to 1: every question is first answered without the model, \
         and that answer stands when its confidence (`reader.confidence`) is at least this \
         (or it replayed a plan); below it the question is asked again with the model, \
         whose answer is kept unless it is worse supported. Unset: the model is asked on \
         every question (`docs/confidence.md`).",
    ),
    (
        "llm.cascade_calls",
        "Model calls a question the cascade sends on may make, at least 1. With 1 the \
         KG-Linker asks for its plan and the judge and summarizer answer without the \
         model; the question's whole budget (`budget.llm_calls`) asks every role of \
         `llm.roles`, as without the cascade.",
    ),
    // embedder
    (
        "embedder.kind",
        "`auto` (all-MiniLM-L6-v2 when its files are found in `embedder.model_dir`, else \
         `KGMESH_MINILM_DIR`, else `models-cache/all-MiniLM-L6-v2`; otherwise lexical scoring \
         only), `none` (lexical scoring only), `minilm` (all-MiniLM-L6-v2 from \
         `embedder.model_dir`) or `openai` (the `/v1/embeddings` endpoint at \
         `embedder.base_url`).",
    ),
    (
        "embedder.model_dir",
        "Folder with `model.safetensors`, `config.json` and `tokenizer.json`; required with \
         `minilm`, looked in first by `auto`.",
    ),
    (
        "embedder.base_url",
        "OpenAI-compatible embeddings endpoint (`http://host:port/v1`); required with \
         `embedder.kind = \"openai\"`.",
    ),
    (
        "embedder.model",
        "Model name sent to the `openai` endpoint; for `minilm` only a label in reports.",
    ),
    (
        "embedder.batch_size",
        "Names embedded per batch while a vector index is filled, and texts per request to \
         the `openai` endpoint.",
    ),
    // vectors
    (
        "vectors.backend",
        "Index of entity-name embeddings for the entity linker, filled from the graph when \
         empty: `none` (entities linked by name only), `embedded` (in the process) or \
         `qdrant` (a Qdrant collection shared by every replica); other than `none` it needs \
         an embedder.",
    ),
    (
        "vectors.path",
        "Index file of the `embedded` backend, read when it exists and written once filled \
         (conventionally `graph.kgv` beside a snapshot); unset keeps the index in memory.",
    ),
    (
        "vectors.precision",
        "How the `embedded` backend holds its rows: `f32`, `f16` (half floats: half the \
         memory and file) or `int8` (8-bit codes and a scale per row: a quarter, plus 4 bytes \
         a row); recall@10 of each in docs/evaluation.md. An index file is converted when \
         read.",
    ),
    (
        "vectors.qdrant_url",
        "Qdrant gRPC endpoint (`http://host:6334`), else `QDRANT_URL`.",
    ),
    (
        "vectors.qdrant_api_key_env",
        "Name of the environment variable holding a Qdrant API key; unset for none.",
    ),
    (
        "vectors.collection",
        "Qdrant collection, created on first use with the embedder's dimension.",
    ),
    (
        "vectors.timeout_ms",
        "Bound on every Qdrant call, in milliseconds.",
    ),
    // budget
    (
        "budget.rounds",
        "Refinement rounds per question, at least 1.",
    ),
    (
        "budget.depth",
        "Deepest path any tool may follow, 1 to 3 hops.",
    ),
    (
        "budget.breadth",
        "Neighbours kept per frontier node in a breadth scan.",
    ),
    (
        "budget.depth_expansions",
        "Depth expansions the judge may order per question.",
    ),
    (
        "budget.llm_calls",
        "Language-model calls per question. Unset: what the roles of `llm.roles` spend on \
         one round (one each, the agentic traverser `traverser.max_llm_calls`): 3 with the \
         default roles, so a cold question costs at most 3 calls. One call is kept for the \
         summarizer where it uses the model; a second round is then planned without it.",
    ),
    (
        "budget.tokens",
        "Prompt and completion tokens per question.",
    ),
    (
        "budget.result_rows",
        "Rows any single graph operation may return.",
    ),
    (
        "budget.timeout_ms",
        "Time a question may take, in milliseconds; `kgmesh ask --timeout-ms` and a \
         request's `timeout_ms` override it.",
    ),
    // retrieval
    (
        "retrieval.top_metapaths",
        "Relation paths the LLM-free KG-Linker proposes per question, 1 to 50.",
    ),
    (
        "retrieval.scoring_top_k",
        "Triplets the scoring retriever returns at most, 1 to 1000.",
    ),
    (
        "retrieval.embed_questions",
        "With an embedder, the path follower, the scoring retriever and the traverser score \
         evidence by whole-question embedding similarity instead of lexically.",
    ),
    (
        "retrieval.pattern_matcher",
        "Start the pattern-matcher retriever in embedded mode; in distributed mode it runs as \
         `kgmesh agent --role pattern-matcher`.",
    ),
    (
        "retrieval.grounded_cypher",
        "When the query executor also runs a query written from the question (grounded \
         Cypher: the best typed query around the question's values that returns a row), \
         whose first column the LLM-free summarizer answers with: `auto` (on property \
         graphs, whose nodes have labels or properties besides their names), `on` or `off`. \
         It learns from the grounded Cypher plans `kgmesh cache warm --import` stores.",
    ),
    // text
    (
        "text.index",
        "Folder of a text index (`kgmesh index --text FILES --into embedded:DIR`). Set, \
         embedded mode starts the text-retriever role, whose passages and skeleton facts \
         join the KG evidence; in distributed mode run `kgmesh agent --role text-retriever`. \
         Without a model the summarizer reads the passages with its bundled span weights; \
         `KGMESH_PASSAGE_WEIGHTS=FILE` reads them with learned ones (`kgmesh reader \
         passages`, `docs/text-retrieval.md`), and a file that cannot be used is an error.",
    ),
    (
        "text.context_tokens",
        "Tokens of passages and facts the text retriever returns per question (L), 50 to \
         100000.",
    ),
    (
        "text.theta",
        "Share of `text.context_tokens` for the entity channel over the KG skeleton (θ); the \
         keyword channel fills the rest. 0 to 1.",
    ),
    (
        "text.channels",
        "`both`, `keyword` (passages by keyword only) or `skeleton` (skeleton facts and their \
         passages only).",
    ),
    // reader
    (
        "reader.weights",
        "Weights of the learned question reader, as `kgmesh reader train` writes them; \
         unset: the bundled ones (`docs/reader.md`). `KGMESH_READER_WEIGHTS` does the same.",
    ),
    (
        "reader.calibration",
        "An answer calibration fitted on your graph's own QA pairs: `kgmesh reader \
         calibrate --reports REPORT.json --out FILE` on `kgmesh eval` runs over them \
         (`docs/confidence.md`). It replaces the bundled calibration, fitted on the domain \
         zoo; it leaves re-ranking off or on as it is (with re-ranking on, answers are not \
         answer-calibrated and it has no effect). A file without an answer calibration, \
         or one that reads other signals, is an error.",
    ),
    (
        "reader.min_confidence",
        "Answers whose confidence (the reader's estimate that they are right, 0 to 1) is \
         below this are replaced by \"I don't know\" with the answers as possibilities. \
         0 answers always.",
    ),
    (
        "reader.enabled",
        "`true`: the learned reader re-ranks the first stage's plans. Off by default: on \
         graphs unlike the benchmarks it chooses better plans, on the benchmarks worse \
         (`docs/reader.md`); off, it still breaks the first stage's ties when reading by \
         words (with `reader.confidence`). `KGMESH_READER=on` does the same, \
         `KGMESH_READER=off` undoes it.",
    ),
    (
        "reader.confidence",
        "`true`: every answer carries the chance that it is right (0 to 1), estimated from \
         the reader's features of the plan it comes from, with re-ranking on or off \
         (`docs/confidence.md`). `false` skips that reading and graph answers carry none \
         (answers read from documents carry the passage reader's own); with re-ranking \
         off, the reader then breaks no ties either (`docs/reader.md`).",
    ),
];

/// What the keys of the sections after the roles' own sections mean.
const KEYS_AFTER_ROLES: &[(&str, &str)] = &[
    // http
    (
        "http.listen",
        "`host:port` the HTTP API of `kgmesh serve` listens on; `serve --listen` overrides it.",
    ),
    (
        "http.max_question_chars",
        "Longest question accepted, in characters.",
    ),
    (
        "http.max_body_bytes",
        "Largest HTTP request body accepted, in bytes.",
    ),
    (
        "http.max_concurrent_questions",
        "Questions the HTTP API works on at once; one more is answered 429.",
    ),
    (
        "http.console",
        "Serve the web console (ask, evidence graph, the question's life, roles, schema) at \
         `/` of `kgmesh serve`.",
    ),
    (
        "http.open",
        "Declare the API open: `serve` then listens beyond loopback without tokens and \
         answers questions anonymously, with `cypher` and `feedback` off until tokens are \
         configured (beside tokens: anonymous questions too); `serve --open` sets it. Without \
         tokens and without this, `serve` refuses a non-loopback `http.listen`.",
    ),
    (
        "http.tokens",
        "API tokens in the configuration itself, as `[[http.tokens]]` tables (`name`, \
         `sha256` or `token`, `scopes`, optional `rate_per_second`, `burst`, \
         `max_concurrent`); prefer `http.tokens_file` or `http.tokens_env`. See \
         docs/security.md.",
    ),
    (
        "http.tokens_file",
        "TOML file of `[[tokens]]` tables (`name`; `sha256`, the hex SHA-256 of the token, \
         or `token`; `scopes` of `ask`, `cypher`, `feedback`, `admin`; optional limits), read \
         when `serve` starts; a mounted Kubernetes Secret, for instance.",
    ),
    (
        "http.tokens_env",
        "Name of an environment variable holding the same TOML as `http.tokens_file` (a \
         Kubernetes Secret through `secretKeyRef`); unset for none.",
    ),
    (
        "http.rate_per_second",
        "Requests per second each API token may send on average (a token bucket; 0: no \
         limit) unless the token sets `rate_per_second`; beyond it 429 with `Retry-After`, \
         other tokens unaffected. Anonymous requests are bounded by \
         `http.max_concurrent_questions` only.",
    ),
    (
        "http.burst",
        "Requests a token may send at once above its average rate (the bucket's size) \
         unless it sets `burst`.",
    ),
    (
        "http.max_concurrent_per_token",
        "Requests of one token in progress at once (0: no limit beyond \
         `http.max_concurrent_questions`) unless it sets `max_concurrent`; one more is \
         answered 429.",
    ),
    (
        "http.metrics_public",
        "Serve `GET /metrics` without a token (for scrapers; it shows token names and \
         counts, never tokens); false: only to `admin` tokens.",
    ),
    (
        "http.tls_cert_file",
        "PEM certificate chain of the API listener; with `http.tls_key_file` the API speaks \
         HTTPS only (rustls), and both files are read again within a second of changing.",
    ),
    (
        "http.tls_key_file",
        "PEM private key (PKCS#8, PKCS#1 or SEC1) of `http.tls_cert_file`.",
    ),
    // cache
    (
        "cache.path",
        "JSON-lines file of the plan cache in embedded mode (`ask`, `serve --embedded`); unset \
         keeps the cache only as long as the process.",
    ),
    (
        "cache.kv_bucket",
        "JetStream KV bucket shared by every cache-manager replica in distributed mode \
         (letters, digits, `-` and `_`).",
    ),
    (
        "cache.examples",
        "Past verified plans a lookup returns as few-shot examples (CacheRAG's k).",
    ),
    (
        "cache.mmr_lambda",
        "Trade-off of the examples' MMR selection between relevance (1) and diversity (0).",
    ),
    (
        "cache.min_relevance",
        "Normalized relevance (0 to 1) under which a past plan is not returned at all.",
    ),
    (
        "cache.replay_min_hits",
        "Verifications a plan needs before it is replayed without a model (plans warmed \
         against gold answers and plans a model judged complete start at 1).",
    ),
    (
        "cache.near_replay_min",
        "With an embedder, a question whose wording has no plan replays the plan of the most \
         similar wording when their similarity (0.7 times the templates' embedding cosine plus \
         0.3 times their BM25 relevance) reaches this, and the learned lexicon finds the plan \
         fits the question (its words account for every relation step, in order, and the last \
         step gives the answer type they ask for). Calibrated on dev; above 1 turns it off.",
    ),
    (
        "cache.feedback_confirmations",
        "Distinct principals (API credentials) whose agreeing feedback replaces a cached plan \
         with a conflicting correction or removes a plan with verified successes; until then the \
         verdict is held (`pending`). One admin applies it alone, and only an admin applies a \
         correction whose plan reads far from the question (`flagged`).",
    ),
    (
        "cache.feedback_per_minute",
        "Feedback verdicts one non-admin principal may give per minute, per cache-manager \
         process; more are answered `limited` and change nothing.",
    ),
    // telemetry
    (
        "telemetry.log",
        "Log filter in `RUST_LOG` syntax, which wins when set; with the default, interactive \
         commands log warnings only.",
    ),
    (
        "telemetry.log_json",
        "Write log lines as JSON instead of text.",
    ),
    (
        "telemetry.metrics_listen",
        "Address of the `/metrics`, `/healthz` and `/readyz` listener of `kgmesh agent`; \
         unset for none.",
    ),
    (
        "telemetry.otlp_endpoint",
        "OTLP collector to send spans to, `http://host:4318` (HTTP) or `http://host:4317` \
         (gRPC); unset for no export; `OTEL_EXPORTER_OTLP_ENDPOINT` wins.",
    ),
    (
        "telemetry.otlp_protocol",
        "`http/protobuf` (when unset) or `grpc`; `OTEL_EXPORTER_OTLP_PROTOCOL` wins.",
    ),
    (
        "telemetry.service_name",
        "`service.name` of the process's spans; unset means `kgmesh-<role>` for agents, \
         `kgmesh-serve` or `kgmesh`; `OTEL_SERVICE_NAME` wins.",
    ),
    (
        "telemetry.jaeger_ui_url",
        "Jaeger's web UI, `http://host:16686`; the web console links each answer's trace \
         there. Unset: the console shows the trace id only.",
    ),
    (
        "telemetry.record_prompts",
        "Put LLM prompts and completions on trace spans; off by default because prompts \
         carry users' questions and graph data.",
    ),
];

/// The text before the tables: how the layers combine and where this page comes from.
const INTRO: &str = "\
# Configuration reference

Every kgmesh process reads one configuration tree in three layers, a later layer winning:
the built-in defaults (the `default` column), then the TOML file given with `--config` (or
`KGMESH_CONFIG`; the key `bus.kind` is `kind` under `[bus]`), then environment variables
`KGMESH__SECTION__KEY` (the `environment` column; a list is written
`KGMESH__LLM__ROLES='[\"judge\", \"summarizer\"]'`). Unknown keys are rejected, each with
the key it most likely meant, and values are checked before any command runs: `kgmesh
config check` validates the configuration and `kgmesh config show` prints the effective
tree. `unset` marks an optional key with no default. This page is the output of `kgmesh
config reference`.
";

/// The configuration reference as Markdown: [`INTRO`], then one table per section.
pub fn reference() -> anyhow::Result<String> {
    let defaults = default_values()?;
    let keys = ordered_keys(&defaults);
    let mut out = String::from(INTRO);
    for section in sections(&keys) {
        write_section(&mut out, section, &keys, &defaults)?;
    }
    Ok(out)
}

/// Every key's meaning in the order the reference lists them: [`KEYS`], then each role's
/// own section as the role documents it, in the registry's order, then
/// [`KEYS_AFTER_ROLES`].
fn meanings() -> Vec<(String, &'static str)> {
    let own = |keys: &'static [(&str, &'static str)]| {
        keys.iter()
            .map(|(key, meaning)| ((*key).to_owned(), *meaning))
    };
    let roles = kgmesh_agents::registry::roles()
        .iter()
        .filter_map(|role| role.config)
        .flat_map(|section| section.meanings().collect::<Vec<_>>());
    own(KEYS)
        .chain(roles)
        .chain(own(KEYS_AFTER_ROLES))
        .collect()
}

/// [`Config::default`] flattened to `section.key` → value (unset options as `null`).
fn default_values() -> anyhow::Result<BTreeMap<String, Value>> {
    let tree = serde_json::to_value(Config::default())
        .context("cannot serialize the default configuration")?;
    let mut out = BTreeMap::new();
    flatten(&tree, "", &mut out);
    Ok(out)
}

/// Every leaf of `value` under its dotted path; objects are sections, not leaves.
fn flatten(value: &Value, path: &str, out: &mut BTreeMap<String, Value>) {
    match value.as_object() {
        Some(map) => {
            for (key, child) in map {
                let child_path = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                flatten(child, &child_path, out);
            }
        }
        None => {
            out.insert(path.to_owned(), value.clone());
        }
    }
}

/// The keys of `defaults` in the order of [`meanings`]; keys it lacks come last.
fn ordered_keys(defaults: &BTreeMap<String, Value>) -> Vec<&str> {
    let meanings = meanings();
    let position = |key: &str| {
        meanings
            .iter()
            .position(|(described, _)| described == key)
            .unwrap_or(meanings.len())
    };
    let mut keys: Vec<&str> = defaults.keys().map(String::as_str).collect();
    keys.sort_by_key(|key| (position(key), *key));
    keys
}

/// The section of a `section.key`.
fn section_of(key: &str) -> &str {
    key.split_once('.').map_or(key, |(section, _)| section)
}

/// The sections of `keys`, each once, in the order they first appear.
fn sections<'a>(keys: &[&'a str]) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for key in keys {
        let section = section_of(key);
        if !out.contains(&section) {
            out.push(section);
        }
    }
    out
}

/// One section's heading and table.
fn write_section(
    out: &mut String,
    section: &str,
    keys: &[&str],
    defaults: &BTreeMap<String, Value>,
) -> std::fmt::Result {
    writeln!(out, "\n## `{section}`\n")?;
    writeln!(out, "| key | default | environment | meaning |")?;
    writeln!(out, "|---|---|---|---|")?;
    for key in keys.iter().filter(|key| section_of(key) == section) {
        let default = defaults.get(*key).map_or_else(String::new, format_default);
        writeln!(
            out,
            "| `{key}` | {} | `{}` | {} |",
            cell(&default),
            env_var(key),
            cell(meaning(key))
        )?;
    }
    Ok(())
}

/// What `key` means, from [`meanings`].
fn meaning(key: &str) -> &'static str {
    meanings()
        .into_iter()
        .find(|(described, _)| described == key)
        .map_or("(not described)", |(_, meaning)| meaning)
}

/// The environment variable that sets `key`: `bus.kind` → `KGMESH__BUS__KIND`.
fn env_var(key: &str) -> String {
    format!("{ENV_PREFIX}{}", key.to_uppercase().replace('.', "__"))
}

/// A default as the reference shows it: `unset`, a string in backticks, a list as JSON.
fn format_default(value: &Value) -> String {
    match value {
        Value::Null => "unset".to_owned(),
        Value::String(text) if text.is_empty() => "`\"\"`".to_owned(),
        Value::String(text) => format!("`{text}`"),
        Value::Array(_) | Value::Object(_) => format!("`{value}`"),
        Value::Number(number) => number_as_written(number),
        Value::Bool(_) => value.to_string(),
    }
}

/// `text` made safe inside a Markdown table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::Path;

    use super::*;

    #[test]
    fn every_configuration_key_has_a_meaning_and_every_meaning_a_key() {
        let keys: BTreeSet<String> = default_values().unwrap().into_keys().collect();
        let described: BTreeSet<String> = meanings().into_iter().map(|(key, _)| key).collect();
        let missing: Vec<&String> = keys.difference(&described).collect();
        let extra: Vec<&String> = described.difference(&keys).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "the meanings (KEYS in cli/src/config_reference.rs, or a role's config type) are \
             out of step with Config:\n  \
             missing (keys without a meaning): {missing:?}\n  \
             extra (meanings of no key): {extra:?}"
        );
    }

    #[test]
    fn every_key_is_described_once_in_one_line() {
        let mut seen = BTreeSet::new();
        for (key, meaning) in meanings() {
            assert!(seen.insert(key.clone()), "{key} is described twice");
            assert!(
                !meaning.is_empty() && !meaning.contains('\n'),
                "{key}: a meaning is one non-empty line"
            );
        }
    }

    #[test]
    fn defaults_and_environment_variables_are_shown_as_documented() {
        assert_eq!(format_default(&Value::Null), "unset");
        assert_eq!(format_default(&serde_json::json!("local")), "`local`");
        assert_eq!(
            format_default(&serde_json::json!(["a", "b"])),
            "`[\"a\",\"b\"]`"
        );
        assert_eq!(format_default(&serde_json::json!(5000)), "5000");
        assert_eq!(format_default(&serde_json::json!(0.05f32)), "0.05");
        assert_eq!(format_default(&serde_json::json!(false)), "false");
        assert_eq!(env_var("llm.base_url"), "KGMESH__LLM__BASE_URL");
        let text = reference().unwrap();
        assert!(
            text.contains("| `bus.kind` | `local` | `KGMESH__BUS__KIND` |"),
            "{text}"
        );
        assert!(text.contains("| `graph.path` | unset |"), "{text}");
    }

    #[test]
    fn docs_configuration_md_is_the_generated_reference() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/configuration.md");
        let fix = "run `cargo run -p kgmesh -- config reference > docs/configuration.md`";
        let written = std::fs::read_to_string(&path)
            .unwrap_or_else(|error| panic!("cannot read {}: {error}; {fix}", path.display()));
        let generated = reference().unwrap();
        if written != generated {
            let lines = written.lines().count().max(generated.lines().count());
            let (line, (old, new)) = written
                .lines()
                .chain(std::iter::repeat(""))
                .zip(generated.lines().chain(std::iter::repeat("")))
                .take(lines)
                .enumerate()
                .find(|(_, (old, new))| old != new)
                .unwrap_or((0, ("", "")));
            panic!(
                "docs/configuration.md differs from `kgmesh config reference` (first at line \
                 {}):\n  written:   {old}\n  generated: {new}\n{fix}",
                line + 1
            );
        }
    }
}
