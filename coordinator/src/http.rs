//! The HTTP API (actix-web): `POST /v1/ask`, `POST /v1/feedback`, `POST /v1/cypher`,
//! `GET /v1/schema`, `GET /healthz`, `GET /readyz`, `GET /v1/agents`, `GET /metrics`
//! (Prometheus) when the process exports metrics, and the web console at `/` when it
//! is on (see [`crate::console`]).
//!
//! Every error is a JSON body `{"error": {"kind": "...", "message": "..."}}` with a
//! 4xx/5xx status, so clients never parse text. Limits: request body size, question
//! length (the coordinator's), and questions in flight (beyond it: 429).
//!
//! Who may call what is [`crate::auth`]'s: `Authorization: Bearer <token>`, 401 (no or
//! an unknown token, with `WWW-Authenticate: Bearer`), 403 (a scope the token lacks),
//! 429 with `Retry-After` (a token over its own limits). Every request to a scoped route
//! is counted in `kgmesh_http_requests_total` by token name, route and status, and
//! logged with the token's name.

use std::{sync::Arc, time::Duration};

use actix_web::{
    error::{InternalError, JsonPayloadError},
    http::StatusCode,
    web, HttpRequest, HttpResponse,
};
use kgmesh_schemas::{
    envelope::headers,
    graph::{GraphSchema, RelationSchema},
    messages::{
        ask::AskRequest,
        cache::{Feedback, Principal},
    },
    relation_text::{relation_label, relation_shown},
    AgentError, TraceContext,
};
use serde::{Deserialize, Serialize};
use tokio::sync::Semaphore;

use crate::{
    auth::{Access, Denial, Grant, Scope},
    console::{self, Console, ConsoleSettings},
    Coordinator, CoordinatorError, FeedbackRequest, FeedbackSubject, RoleSummary, REQUIRED_ROLES,
};

#[derive(Debug, Clone)]
pub struct ApiLimits {
    pub max_body_bytes: usize,
    pub max_concurrent_questions: usize,
    /// Longest a readiness probe waits for discovery.
    pub readiness_timeout: Duration,
}

impl Default for ApiLimits {
    fn default() -> Self {
        Self {
            max_body_bytes: 64 * 1024,
            max_concurrent_questions: 64,
            readiness_timeout: Duration::from_secs(3),
        }
    }
}

/// Renders the process's metrics in the Prometheus text exposition format. The process
/// owns the recorder; the API only serves what it renders.
pub type RenderMetrics = Arc<dyn Fn() -> String + Send + Sync>;

/// The `Content-Type` of `GET /metrics` (Prometheus text exposition format 0.0.4).
pub const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// What the handlers share.
pub struct ApiState {
    coordinator: Arc<Coordinator>,
    in_flight: Semaphore,
    limits: ApiLimits,
    metrics: Option<RenderMetrics>,
    console: Option<Console>,
    access: Access,
}

impl ApiState {
    pub fn new(coordinator: Arc<Coordinator>, limits: ApiLimits) -> web::Data<Self> {
        Self::with_metrics(coordinator, limits, None)
    }

    /// With `GET /metrics` served by `metrics` (404 without one).
    pub fn with_metrics(
        coordinator: Arc<Coordinator>,
        limits: ApiLimits,
        metrics: Option<RenderMetrics>,
    ) -> web::Data<Self> {
        Self::with_console(coordinator, limits, metrics, None)
    }

    /// With the web console at `/` too, when `console` is given (404 without one).
    pub fn with_console(
        coordinator: Arc<Coordinator>,
        limits: ApiLimits,
        metrics: Option<RenderMetrics>,
        console: Option<ConsoleSettings>,
    ) -> web::Data<Self> {
        Self::with_access(coordinator, limits, metrics, console, Access::local())
    }

    /// With `access` deciding who may call what (without: [`Access::local`], anonymous
    /// questions and nothing else).
    pub fn with_access(
        coordinator: Arc<Coordinator>,
        limits: ApiLimits,
        metrics: Option<RenderMetrics>,
        console: Option<ConsoleSettings>,
        access: Access,
    ) -> web::Data<Self> {
        web::Data::new(Self {
            coordinator,
            in_flight: Semaphore::new(limits.max_concurrent_questions),
            limits,
            metrics,
            console: console.map(|settings| Console::new(&settings)),
            access,
        })
    }
}

#[derive(Debug, Serialize)]
struct ErrorBody<'a> {
    error: ErrorDetail<'a>,
}

#[derive(Debug, Serialize)]
struct ErrorDetail<'a> {
    kind: &'a str,
    message: String,
}

fn error_response(status: StatusCode, kind: &str, message: String) -> HttpResponse {
    HttpResponse::build(status).json(ErrorBody {
        error: ErrorDetail { kind, message },
    })
}

/// Registers the API's routes; `App::new().configure(kgmesh_coordinator::http::routes(state))`.
pub fn routes(state: web::Data<ApiState>) -> impl FnOnce(&mut web::ServiceConfig) {
    move |config: &mut web::ServiceConfig| {
        let json_config = web::JsonConfig::default()
            .limit(state.limits.max_body_bytes)
            .error_handler(json_error);
        config
            .app_data(state)
            .app_data(json_config)
            .route("/v1/ask", web::post().to(ask))
            .route("/v1/feedback", web::post().to(feedback))
            .route("/v1/cypher", web::post().to(cypher))
            .route("/v1/agents", web::get().to(agents))
            .route("/v1/schema", web::get().to(schema))
            .route("/", web::get().to(console_page))
            .route(console::SCRIPT_PATH, web::get().to(console_script))
            .route(console::STYLE_PATH, web::get().to(console_style))
            .route("/healthz", web::get().to(healthz))
            .route("/readyz", web::get().to(readyz))
            .route("/metrics", web::get().to(metrics))
            .default_service(web::to(not_found));
    }
}

fn json_error(error: JsonPayloadError, _request: &HttpRequest) -> actix_web::Error {
    let (status, kind) = match &error {
        JsonPayloadError::Overflow { .. } | JsonPayloadError::OverflowKnownLength { .. } => {
            (StatusCode::PAYLOAD_TOO_LARGE, "body_too_large")
        }
        JsonPayloadError::ContentType => (StatusCode::UNSUPPORTED_MEDIA_TYPE, "content_type"),
        _ => (StatusCode::BAD_REQUEST, "invalid_json"),
    };
    let message = match &error {
        JsonPayloadError::ContentType => {
            "the body must be JSON: send Content-Type: application/json".to_owned()
        }
        other => other.to_string(),
    };
    let response = error_response(status, kind, message);
    InternalError::from_response(error, response).into()
}

/// Routes and the methods they answer, for telling a wrong method (405) from a wrong
/// path (404).
const ROUTES: &[(&str, &str)] = &[
    ("/v1/ask", "POST"),
    ("/v1/feedback", "POST"),
    ("/v1/cypher", "POST"),
    ("/v1/agents", "GET"),
    ("/v1/schema", "GET"),
    ("/", "GET"),
    (console::SCRIPT_PATH, "GET"),
    (console::STYLE_PATH, "GET"),
    ("/healthz", "GET"),
    ("/readyz", "GET"),
    ("/metrics", "GET"),
];

async fn not_found(request: HttpRequest) -> HttpResponse {
    let known = ROUTES
        .iter()
        .find(|(path, method)| *path == request.path() && *method != request.method().as_str());
    if let Some((_, method)) = known {
        return HttpResponse::build(StatusCode::METHOD_NOT_ALLOWED)
            .insert_header(("Allow", *method))
            .json(ErrorBody {
                error: ErrorDetail {
                    kind: "method_not_allowed",
                    message: format!(
                        "{} takes {method}, not {}",
                        request.path(),
                        request.method()
                    ),
                },
            });
    }
    error_response(
        StatusCode::NOT_FOUND,
        "not_found",
        format!("no route for {} {}", request.method(), request.path()),
    )
}

/// Who sent `request`, if they may use `scope`; else the JSON refusal to send, counted
/// and logged under the token's name.
fn authorize(
    state: &ApiState,
    request: &HttpRequest,
    scope: Scope,
) -> Result<Grant, Box<HttpResponse>> {
    let authorization = request
        .headers()
        .get(actix_web::http::header::AUTHORIZATION)
        .map(|value| value.to_str().unwrap_or("(not text)"));
    state
        .access
        .authorize(authorization, scope)
        .map_err(|denial| Box::new(refusal(request, &denial)))
}

fn refusal(request: &HttpRequest, denial: &Denial) -> HttpResponse {
    let status = StatusCode::from_u16(denial.status).unwrap_or(StatusCode::FORBIDDEN);
    let principal = denial.principal.as_deref().unwrap_or("anonymous");
    tracing::warn!(
        principal,
        route = request.path(),
        status = denial.status,
        reason = %denial.message,
        "request refused"
    );
    crate::metrics::record_request(principal, request.path(), denial.status);
    let mut response = HttpResponse::build(status);
    match denial.status {
        401 => {
            response.insert_header(("WWW-Authenticate", "Bearer realm=\"kgmesh\""));
        }
        403 if denial.principal.is_some() => {
            response.insert_header((
                "WWW-Authenticate",
                "Bearer realm=\"kgmesh\", error=\"insufficient_scope\"",
            ));
        }
        _ => {}
    }
    if let Some(seconds) = denial.retry_after_secs {
        response.insert_header(("Retry-After", seconds.to_string()));
    }
    response.json(ErrorBody {
        error: ErrorDetail {
            kind: denial.kind,
            message: denial.message.clone(),
        },
    })
}

/// Counts and logs a request that was let in, under its principal's name.
fn served(grant: &Grant, request: &HttpRequest, response: HttpResponse) -> HttpResponse {
    let status = response.status().as_u16();
    tracing::info!(
        principal = %grant.principal.name,
        route = request.path(),
        status,
        "request served"
    );
    crate::metrics::record_request(&grant.principal.name, request.path(), status);
    response
}

/// A scope a route needs, as a type ([`Authorized`] of it).
pub trait NeedsScope {
    const SCOPE: Scope;
}

pub struct AskScope;
pub struct CypherScope;
pub struct FeedbackScope;

impl NeedsScope for AskScope {
    const SCOPE: Scope = Scope::Ask;
}
impl NeedsScope for CypherScope {
    const SCOPE: Scope = Scope::Cypher;
}
impl NeedsScope for FeedbackScope {
    const SCOPE: Scope = Scope::Feedback;
}

/// The caller may use `S::SCOPE`: an extractor placed before the body, so that a caller
/// without the right token is refused before its body is read or judged.
pub struct Authorized<S: NeedsScope> {
    grant: Grant,
    _scope: std::marker::PhantomData<S>,
}

impl<S: NeedsScope> actix_web::FromRequest for Authorized<S> {
    type Error = actix_web::Error;
    type Future = std::future::Ready<Result<Self, Self::Error>>;

    fn from_request(request: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        let Some(state) = request.app_data::<web::Data<ApiState>>() else {
            return std::future::ready(Err(actix_web::error::ErrorInternalServerError(
                "the API state is missing",
            )));
        };
        std::future::ready(
            authorize(state, request, S::SCOPE)
                .map(|grant| Authorized {
                    grant,
                    _scope: std::marker::PhantomData,
                })
                .map_err(|refused| InternalError::from_response("refused", *refused).into()),
        )
    }
}

async fn ask(
    state: web::Data<ApiState>,
    auth: Authorized<AskScope>,
    request: HttpRequest,
    body: web::Json<AskRequest>,
) -> HttpResponse {
    let grant = auth.grant;
    let response = answer(&state, &request, body.into_inner(), &grant).await;
    served(&grant, &request, response)
}

async fn answer(
    state: &ApiState,
    request: &HttpRequest,
    body: AskRequest,
    grant: &Grant,
) -> HttpResponse {
    let Ok(_permit) = state.in_flight.try_acquire() else {
        return error_response(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_questions",
            format!(
                "{} questions are already in flight; retry later",
                state.limits.max_concurrent_questions
            ),
        );
    };
    let trace = TraceContext {
        traceparent: header(request, headers::TRACEPARENT),
        tracestate: header(request, headers::TRACESTATE),
    };
    match state
        .coordinator
        .ask_as(body, trace, &grant.principal.name)
        .await
    {
        Ok(reply) => HttpResponse::Ok().json(reply),
        Err(error) => coordinator_error(&error),
    }
}

fn coordinator_error(error: &CoordinatorError) -> HttpResponse {
    let status = match error {
        CoordinatorError::InvalidQuestion(_) => StatusCode::BAD_REQUEST,
        CoordinatorError::UnknownQuestion(_) => StatusCode::NOT_FOUND,
        CoordinatorError::Discovery(_) | CoordinatorError::MissingRoles(_) => {
            StatusCode::SERVICE_UNAVAILABLE
        }
        CoordinatorError::RoleFailed { error, .. } => match error {
            AgentError::Timeout { .. } => StatusCode::GATEWAY_TIMEOUT,
            AgentError::NoResponders { .. } | AgentError::Unavailable { .. } => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            AgentError::BadRequest { .. } => StatusCode::BAD_REQUEST,
            _ => StatusCode::BAD_GATEWAY,
        },
    };
    error_response(status, error.kind(), error.to_string())
}

/// `POST /v1/feedback`: the question (`question_id` of a reply, or `question`) and the
/// verdict (`correct`, or the right `answers`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FeedbackBody {
    question_id: Option<String>,
    question: Option<String>,
    correct: Option<bool>,
    answers: Option<Vec<String>>,
}

impl FeedbackBody {
    fn into_request(self, principal: Principal) -> Result<FeedbackRequest, String> {
        let subject = match (self.question_id, self.question) {
            (Some(_), Some(_)) => {
                return Err("name the question by `question_id` or by `question`, not both".into())
            }
            (None, None) => return Err(
                "name the question: `question_id` (from the reply of POST /v1/ask) or `question` \
                     (its text)"
                    .into(),
            ),
            (Some(id), None) => FeedbackSubject::QuestionId(id),
            (None, Some(question)) => FeedbackSubject::Question(question),
        };
        let verdict = Feedback::from_parts(self.correct, self.answers)?;
        Ok(FeedbackRequest {
            subject,
            verdict,
            principal,
        })
    }
}

async fn feedback(
    state: web::Data<ApiState>,
    auth: Authorized<FeedbackScope>,
    request: HttpRequest,
    body: web::Json<FeedbackBody>,
) -> HttpResponse {
    let grant = auth.grant;
    let response = match body.into_inner().into_request(grant.principal.clone()) {
        Ok(feedback) => match state.coordinator.feedback(feedback).await {
            Ok(reply) => HttpResponse::Ok().json(reply),
            Err(error) => coordinator_error(&error),
        },
        Err(message) => error_response(StatusCode::BAD_REQUEST, "invalid_feedback", message),
    };
    served(&grant, &request, response)
}

/// `POST /v1/cypher`: one read-only openCypher query, its parameters (a JSON object),
/// and optionally a row cap and a timeout.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CypherBody {
    query: String,
    #[serde(default)]
    params: serde_json::Map<String, serde_json::Value>,
    max_rows: Option<u32>,
    timeout_ms: Option<u32>,
}

/// Row cap and timeout of `POST /v1/cypher` when the body names none, and the most it
/// may ask for.
const CYPHER_DEFAULT_ROWS: u32 = 1_000;
const CYPHER_MAX_ROWS: u32 = 10_000;
const CYPHER_DEFAULT_TIMEOUT_MS: u32 = 5_000;
const CYPHER_MAX_TIMEOUT_MS: u32 = 60_000;

async fn cypher(
    state: web::Data<ApiState>,
    auth: Authorized<CypherScope>,
    request: HttpRequest,
    body: web::Json<CypherBody>,
) -> HttpResponse {
    let grant = auth.grant;
    let response = run_cypher(&state, body.into_inner()).await;
    served(&grant, &request, response)
}

async fn run_cypher(state: &ApiState, body: CypherBody) -> HttpResponse {
    let max_rows = body.max_rows.unwrap_or(CYPHER_DEFAULT_ROWS);
    let timeout_ms = body.timeout_ms.unwrap_or(CYPHER_DEFAULT_TIMEOUT_MS);
    if !(1..=CYPHER_MAX_ROWS).contains(&max_rows)
        || !(1..=CYPHER_MAX_TIMEOUT_MS).contains(&timeout_ms)
    {
        return error_response(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            format!(
                "max_rows must be 1..={CYPHER_MAX_ROWS} and timeout_ms 1..={CYPHER_MAX_TIMEOUT_MS}"
            ),
        );
    }
    let Ok(_permit) = state.in_flight.try_acquire() else {
        return error_response(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_questions",
            "too many requests in flight; retry later".to_owned(),
        );
    };
    let request = kgmesh_schemas::messages::query_executor::QueryRequest {
        cypher: body.query,
        params: body
            .params
            .iter()
            .map(|(name, value)| (name.clone(), kgmesh_schemas::graph::Value::from_json(value)))
            .collect(),
        max_rows,
        timeout_ms,
    };
    match state.coordinator.cypher(request).await {
        Ok(rows) => HttpResponse::Ok().json(rows.to_json()),
        Err(CoordinatorError::RoleFailed {
            error: AgentError::InvalidQuery { reason, hint },
            ..
        }) => {
            let message = match hint {
                Some(hint) => format!("{reason}; hint: {hint}"),
                None => reason,
            };
            error_response(StatusCode::BAD_REQUEST, "invalid_query", message)
        }
        Err(CoordinatorError::InvalidQuestion(message)) => {
            error_response(StatusCode::BAD_REQUEST, "invalid_query", message)
        }
        Err(error) => coordinator_error(&error),
    }
}

/// `GET /v1/schema`: the graph's labels and relations with their counts.
/// The graph's schema, plus what people read of it: each relation's words
/// (`relation_words`, an IRI by its label or local name) and a question this graph can
/// answer (`example_question`), built from its most frequent relation and one of that
/// relation's own examples, for the console to offer.
async fn schema(
    state: web::Data<ApiState>,
    auth: Authorized<AskScope>,
    request: HttpRequest,
) -> HttpResponse {
    let grant = auth.grant;
    let response = match state.coordinator.schema().await {
        Ok(schema) => {
            let mut body = serde_json::to_value(&schema).unwrap_or_default();
            if let Some(object) = body.as_object_mut() {
                let words: serde_json::Map<String, serde_json::Value> = schema
                    .relations
                    .iter()
                    .map(|r| (r.name.clone(), relation_shown(&r.name).into()))
                    .collect();
                object.insert("relation_words".to_owned(), words.into());
                object.insert(
                    "example_question".to_owned(),
                    example_question(&schema).into(),
                );
            }
            HttpResponse::Ok().json(body)
        }
        Err(error) => coordinator_error(&error),
    };
    served(&grant, &request, response)
}

/// A question built from the graph's own schema: the most frequent relation that has
/// an example edge (`head -[relation]-> tail`), asked of that edge's head ("Heat:
/// directed_by?" reads "Heat: directed by?"). `None` for a graph without examples.
pub fn example_question(schema: &GraphSchema) -> Option<String> {
    let mut relations: Vec<&RelationSchema> = schema.relations.iter().collect();
    relations.sort_by(|a, b| b.count.cmp(&a.count).then(a.name.cmp(&b.name)));
    relations.into_iter().find_map(|relation| {
        let marker = format!(" -[{}]-> ", relation.name);
        let words = relation_label(&relation.name);
        relation.examples.iter().find_map(|example| {
            let (head, _) = example.split_once(&marker)?;
            let head = head.trim();
            (!head.is_empty() && !words.is_empty()).then(|| format!("{head}: {words}?"))
        })
    })
}

async fn console_page(state: web::Data<ApiState>, request: HttpRequest) -> HttpResponse {
    match &state.console {
        Some(console) => console.page(),
        None => not_found(request).await,
    }
}

async fn console_script(state: web::Data<ApiState>, request: HttpRequest) -> HttpResponse {
    match &state.console {
        Some(_) => console::script(),
        None => not_found(request).await,
    }
}

async fn console_style(state: web::Data<ApiState>, request: HttpRequest) -> HttpResponse {
    match &state.console {
        Some(_) => console::style(),
        None => not_found(request).await,
    }
}

fn header(request: &HttpRequest, name: &str) -> String {
    request
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .filter(|v| v.len() <= 512)
        .unwrap_or("")
        .to_owned()
}

async fn metrics(state: web::Data<ApiState>, request: HttpRequest) -> HttpResponse {
    // Scrapers usually come without a token; a server may still want one (`admin`).
    let _grant = if state.access.metrics_public() {
        None
    } else {
        match authorize(&state, &request, Scope::Admin) {
            Ok(grant) => Some(grant),
            Err(refused) => return *refused,
        }
    };
    match &state.metrics {
        Some(render) => HttpResponse::Ok()
            .content_type(METRICS_CONTENT_TYPE)
            .body(render()),
        None => error_response(
            StatusCode::NOT_FOUND,
            "not_found",
            "this server exports no metrics".to_owned(),
        ),
    }
}

async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({ "status": "ok" }))
}

#[derive(Debug, Serialize)]
struct Readiness {
    ready: bool,
    missing: Vec<String>,
    retrievers: Vec<String>,
}

async fn readyz(state: web::Data<ApiState>) -> HttpResponse {
    let refresh = state.coordinator.directory().refresh();
    let snapshot = match tokio::time::timeout(state.limits.readiness_timeout, refresh).await {
        Ok(Ok(snapshot)) => snapshot,
        Ok(Err(error)) => {
            return error_response(
                StatusCode::SERVICE_UNAVAILABLE,
                "bus_unavailable",
                error.to_string(),
            )
        }
        Err(_) => {
            return error_response(
                StatusCode::SERVICE_UNAVAILABLE,
                "bus_unavailable",
                "role discovery did not finish in time".to_owned(),
            )
        }
    };
    let mut missing: Vec<String> = REQUIRED_ROLES
        .iter()
        .filter(|role| !snapshot.has(role))
        .map(|role| role.to_string())
        .collect();
    let retrievers: Vec<String> = snapshot
        .retrievers()
        .iter()
        .map(|r| r.to_string())
        .collect();
    if retrievers.is_empty() {
        missing.push("(any retriever)".to_owned());
    }
    let readiness = Readiness {
        ready: missing.is_empty(),
        missing,
        retrievers,
    };
    let status = if readiness.ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    HttpResponse::build(status).json(readiness)
}

#[derive(Debug, Serialize)]
struct Agents {
    roles: Vec<RoleSummary>,
}

async fn agents(
    state: web::Data<ApiState>,
    auth: Authorized<AskScope>,
    request: HttpRequest,
) -> HttpResponse {
    let grant = auth.grant;
    // Discovered now, not the snapshot questions are routed by (refreshed only every
    // few seconds): an operator reading the request counts wants them current.
    let response = match state.coordinator.directory().refresh().await {
        Ok(snapshot) => HttpResponse::Ok().json(Agents {
            roles: snapshot.roles().cloned().collect(),
        }),
        Err(error) => error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            "bus_unavailable",
            error.to_string(),
        ),
    };
    served(&grant, &request, response)
}
