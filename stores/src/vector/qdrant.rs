//! [`VectorIndex`] on a Qdrant collection, over gRPC with `qdrant-client`.
//!
//! One kgmesh index is one Qdrant collection holding a single unnamed dense vector per
//! point. [`QdrantIndex::connect`] creates the collection with the index's distance
//! (`Cosine` for [`Metric::Cosine`], `Euclid` for [`Metric::L2`]) when it is missing, and
//! refuses an existing collection whose size or distance differs instead of writing
//! vectors it would then misrank.
//!
//! Mapping to Qdrant:
//! - **Ids.** kgmesh ids are `u64`, and Qdrant point ids are either an unsigned 64-bit
//!   number or a UUID, so every id maps to the numeric point id of the same value: no
//!   hashing, no lookup table, and the id read back is the id written. A point with a
//!   UUID id (written by something else) is reported as [`StoreError::Corrupt`].
//! - **Payload.** Each `(key, value)` pair becomes a top-level string field, so the points
//!   stay readable and filterable from Qdrant's own tools. Qdrant payloads are maps, so
//!   the order of the pairs is kept in the reserved field [`ORDER_FIELD`]; a payload that
//!   repeats a key or uses the reserved name is refused. Points without the order field
//!   come back sorted by key, with non-string values rendered as text.
//! - **Scores.** Qdrant returns cosine similarity for `Cosine` and the distance for
//!   `Euclid`; the latter is negated so that, as everywhere in [`VectorIndex`], higher is
//!   more similar.
//! - **Filtered search** (`only`) is a `has_id` condition on the query.
//!
//! Every call is bounded by [`QdrantOptions::timeout`]; upserts go out in batches of
//! [`QdrantOptions::batch_size`] points, each batch its own bounded call. Vectors are
//! checked (dimension, finite values) before anything is sent. Failures come back as
//! typed [`StoreError`]s: an unreachable server or a dropped connection as
//! [`StoreError::Unavailable`], an expired call as [`StoreError::Timeout`], a request
//! the server refuses as [`StoreError::InvalidQuery`], anything else as
//! [`StoreError::Backend`].
//!
//! Testing: no Qdrant server can be installed where this project is built and tested, so
//! the tests run this backend against an in-memory stand-in that implements Qdrant's
//! gRPC API from `qdrant-client`'s own generated server traits
//! (`kgmesh_testkit::qdrant_standin`), not against a real Qdrant server. The requests on
//! the wire are the ones a real server receives; how a real server answers them is
//! modelled, not observed.

use std::{collections::HashMap, future::Future, time::Duration};

use async_trait::async_trait;
use qdrant_client::{
    config::QdrantConfig,
    qdrant::{
        condition::ConditionOneOf, point_id::PointIdOptions, points_selector::PointsSelectorOneOf,
        value::Kind, vectors::VectorsOptions, vectors_config::Config,
        with_payload_selector::SelectorOptions, Condition, CountPoints, CreateCollection,
        DeletePoints, Distance, Filter, GetCollectionInfoRequest, HasIdCondition, ListValue,
        PointId, PointStruct, PointsIdsList, PointsOperationResponse, PointsSelector, Query,
        QueryPoints, ScoredPoint, UpdateStatus, UpsertPoints, Value, Vector, VectorParams, Vectors,
        VectorsConfig, WithPayloadSelector,
    },
    Qdrant, QdrantError,
};

use super::check_vector;
use crate::{
    common::invalid_query, Metric, StoreError, StoreResult, VectorHit, VectorIndex, VectorItem,
};

/// Payload field holding the keys of a point's pairs in their original order.
pub const ORDER_FIELD: &str = "_kgmesh_order";

/// How to reach and shape the collection behind a [`QdrantIndex`]. `Debug` leaves the
/// API key out.
#[derive(Clone, PartialEq)]
pub struct QdrantOptions {
    /// gRPC endpoint: `http://host:6334`, `https://…`, or `qdrant://host:6334`
    /// (read as `http://`).
    pub url: String,
    pub collection: String,
    pub dim: usize,
    pub metric: Metric,
    /// Bound on every call (each upsert batch, search, delete, count).
    pub timeout: Duration,
    /// Bound on opening a connection.
    pub connect_timeout: Duration,
    /// Points per upsert request.
    pub batch_size: usize,
    pub api_key: Option<String>,
}

impl std::fmt::Debug for QdrantOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QdrantOptions")
            .field("url", &self.url)
            .field("collection", &self.collection)
            .field("dim", &self.dim)
            .field("metric", &self.metric)
            .field("timeout", &self.timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("batch_size", &self.batch_size)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl QdrantOptions {
    pub fn new(
        url: impl Into<String>,
        collection: impl Into<String>,
        dim: usize,
        metric: Metric,
    ) -> Self {
        Self {
            url: url.into(),
            collection: collection.into(),
            dim,
            metric,
            timeout: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(3),
            batch_size: 256,
            api_key: None,
        }
    }

    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    pub fn with_batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = batch_size;
        self
    }
}

/// See the module documentation.
pub struct QdrantIndex {
    client: Qdrant,
    options: QdrantOptions,
}

impl std::fmt::Debug for QdrantIndex {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("QdrantIndex")
            .field("url", &self.options.url)
            .field("collection", &self.options.collection)
            .field("dim", &self.options.dim)
            .field("metric", &self.options.metric)
            .finish_non_exhaustive()
    }
}

impl QdrantIndex {
    /// Connects, checks the server answers, and creates or verifies the collection.
    pub async fn connect(options: QdrantOptions) -> StoreResult<Self> {
        if options.dim == 0 {
            return Err(invalid_query("a vector index needs at least one dimension"));
        }
        if options.collection.is_empty() {
            return Err(invalid_query("the Qdrant collection name is empty"));
        }
        if options.batch_size == 0 {
            return Err(invalid_query(
                "the Qdrant upsert batch size must be at least 1",
            ));
        }
        let url = match options.url.strip_prefix("qdrant://") {
            Some(rest) => format!("http://{rest}"),
            None => options.url.clone(),
        };
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(StoreError::InvalidQuery {
                reason: format!("`{}` is not a Qdrant gRPC address", options.url),
                hint: Some("use http://host:6334, https://host:6334 or qdrant://host:6334".into()),
            });
        }
        // The compatibility check would block this thread on a private runtime; the
        // health check below does the same job without blocking.
        let mut config = QdrantConfig::from_url(&url).skip_compatibility_check();
        config.timeout = options.timeout;
        config.connect_timeout = options.connect_timeout;
        config.api_key = options.api_key.clone();
        let client =
            Qdrant::new(config).map_err(|error| map_error(error, &options.url, options.timeout))?;
        let index = Self { client, options };
        index
            .bounded("health check", index.client.health_check())
            .await?;
        index.ensure_collection().await?;
        Ok(index)
    }

    pub fn collection(&self) -> &str {
        &self.options.collection
    }

    pub fn options(&self) -> &QdrantOptions {
        &self.options
    }

    fn distance(&self) -> Distance {
        match self.options.metric {
            Metric::Cosine => Distance::Cosine,
            Metric::L2 => Distance::Euclid,
        }
    }

    async fn collection_exists(&self, name: &str) -> StoreResult<bool> {
        self.bounded("collection check", self.client.collection_exists(name))
            .await
    }

    async fn ensure_collection(&self) -> StoreResult<()> {
        let name = self.options.collection.clone();
        if !self.collection_exists(&name).await? {
            let create = CreateCollection {
                collection_name: name.clone(),
                vectors_config: Some(VectorsConfig {
                    config: Some(Config::Params(VectorParams {
                        size: self.options.dim as u64,
                        distance: self.distance() as i32,
                        ..Default::default()
                    })),
                }),
                ..Default::default()
            };
            let created = self
                .bounded("collection creation", self.client.create_collection(create))
                .await;
            if let Err(error) = created {
                // Another process may have created it in between; verify what is there.
                if !self.collection_exists(&name).await? {
                    return Err(error);
                }
            }
        }
        self.verify_collection().await
    }

    /// Refuses a collection whose vectors do not match this index.
    async fn verify_collection(&self) -> StoreResult<()> {
        let name = &self.options.collection;
        let info = self
            .bounded(
                "collection info",
                self.client.collection_info(GetCollectionInfoRequest {
                    collection_name: name.clone(),
                }),
            )
            .await?;
        let params = info
            .result
            .and_then(|info| info.config)
            .and_then(|config| config.params)
            .and_then(|params| params.vectors_config)
            .and_then(|vectors| vectors.config);
        let params = match params {
            Some(Config::Params(params)) => params,
            Some(Config::ParamsMap(_)) => {
                return Err(StoreError::InvalidQuery {
                    reason: format!(
                        "Qdrant collection `{name}` has named vectors; kgmesh uses one unnamed vector per point"
                    ),
                    hint: Some("point the index at another collection".into()),
                })
            }
            None => {
                return Err(StoreError::Backend {
                    detail: format!("Qdrant did not describe the vectors of collection `{name}`"),
                })
            }
        };
        if params.size != self.options.dim as u64 {
            return Err(StoreError::InvalidQuery {
                reason: format!(
                    "Qdrant collection `{name}` holds {}-dimensional vectors, the index has {}",
                    params.size, self.options.dim
                ),
                hint: Some(
                    "use another collection, or delete this one to have it recreated".into(),
                ),
            });
        }
        if params.distance != self.distance() as i32 {
            let found = Distance::try_from(params.distance)
                .map(|distance| distance.as_str_name())
                .unwrap_or("an unknown distance");
            return Err(StoreError::InvalidQuery {
                reason: format!(
                    "Qdrant collection `{name}` uses {found}, the index needs {}",
                    self.distance().as_str_name()
                ),
                hint: Some(
                    "use another collection, or delete this one to have it recreated".into(),
                ),
            });
        }
        Ok(())
    }

    /// Runs one client call under the per-call timeout, mapping its errors.
    async fn bounded<T>(
        &self,
        what: &str,
        call: impl Future<Output = Result<T, QdrantError>>,
    ) -> StoreResult<T> {
        match tokio::time::timeout(self.options.timeout, call).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(
                match map_error(error, &self.options.url, self.options.timeout) {
                    StoreError::Backend { detail } => StoreError::Backend {
                        detail: format!("Qdrant {what}: {detail}"),
                    },
                    other => other,
                },
            ),
            Err(_) => Err(StoreError::Timeout {
                millis: self.options.timeout.as_millis() as u64,
            }),
        }
    }

    fn check_vector(&self, vector: &[f32]) -> StoreResult<()> {
        check_vector(vector, self.options.dim)
    }

    /// Runs one update call (an upsert or delete batch) and checks that Qdrant applied it.
    async fn apply(
        &self,
        what: &str,
        call: impl Future<Output = Result<PointsOperationResponse, QdrantError>>,
    ) -> StoreResult<()> {
        let response = self.bounded(what, call).await?;
        check_update(response.result)
    }
}

/// Sorts client errors into the store's error kinds.
fn map_error(error: QdrantError, url: &str, timeout: Duration) -> StoreError {
    let millis = timeout.as_millis() as u64;
    use tonic::Code;
    let status = match error {
        QdrantError::ResponseError { status } => status,
        QdrantError::ResourceExhaustedError {
            status,
            retry_after_seconds,
        } => {
            return StoreError::LimitExceeded {
                detail: format!(
                    "Qdrant: {} (retry after {retry_after_seconds} s)",
                    status.message()
                ),
            }
        }
        QdrantError::InvalidUri(error) => {
            return invalid_query(format!("`{url}` is not a valid Qdrant address: {error}"))
        }
        QdrantError::Io(error) => {
            return StoreError::Unavailable {
                detail: format!("Qdrant at {url}: {error}"),
            }
        }
        other => {
            return StoreError::Backend {
                detail: other.to_string(),
            }
        }
    };
    let message = status.message();
    match status.code() {
        // The client reports a failed connect as an internal error of its own.
        Code::Internal if message.starts_with("Failed to connect") => StoreError::Unavailable {
            detail: format!("cannot connect to Qdrant at {url}: {message}"),
        },
        Code::Unavailable => StoreError::Unavailable {
            detail: format!("Qdrant at {url}: {message}"),
        },
        Code::Unknown | Code::Cancelled if looks_like_transport(message) => {
            StoreError::Unavailable {
                detail: format!("lost the connection to Qdrant at {url}: {message}"),
            }
        }
        Code::Cancelled if message.contains("Timeout expired") => StoreError::Timeout { millis },
        Code::DeadlineExceeded => StoreError::Timeout { millis },
        Code::InvalidArgument
        | Code::FailedPrecondition
        | Code::OutOfRange
        | Code::AlreadyExists => invalid_query(format!("Qdrant refused the request: {message}")),
        Code::NotFound => StoreError::NotFound {
            what: format!("Qdrant: {message}"),
        },
        Code::ResourceExhausted => StoreError::LimitExceeded {
            detail: format!("Qdrant: {message}"),
        },
        Code::Unauthenticated | Code::PermissionDenied => StoreError::Unavailable {
            detail: format!("Qdrant at {url} refused the credentials: {message}"),
        },
        _ => StoreError::Backend {
            detail: format!("{:?}: {message}", status.code()),
        },
    }
}

fn looks_like_transport(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    [
        "transport",
        "connection",
        "h2 protocol",
        "broken pipe",
        "reset",
    ]
    .iter()
    .any(|needle| message.contains(needle))
}

fn point_id(id: u64) -> PointId {
    PointId {
        point_id_options: Some(PointIdOptions::Num(id)),
    }
}

fn read_id(id: Option<PointId>) -> StoreResult<u64> {
    match id.and_then(|id| id.point_id_options) {
        Some(PointIdOptions::Num(id)) => Ok(id),
        Some(PointIdOptions::Uuid(uuid)) => Err(StoreError::Corrupt {
            path: "qdrant".to_owned(),
            detail: format!(
                "point {uuid} has a UUID id; kgmesh writes numeric ids only, so the collection holds foreign points"
            ),
        }),
        None => Err(StoreError::Backend {
            detail: "Qdrant returned a point without an id".to_owned(),
        }),
    }
}

/// Checks a payload and turns it into Qdrant fields plus the order field.
fn write_payload(pairs: Vec<(String, String)>) -> StoreResult<HashMap<String, Value>> {
    let mut fields = HashMap::with_capacity(pairs.len() + 1);
    let mut order = Vec::with_capacity(pairs.len());
    for (key, value) in pairs {
        if key == ORDER_FIELD {
            return Err(invalid_query(format!(
                "payload key `{ORDER_FIELD}` is reserved by the Qdrant backend"
            )));
        }
        order.push(Value::from(key.clone()));
        if fields.insert(key.clone(), Value::from(value)).is_some() {
            return Err(invalid_query(format!(
                "payload key `{key}` appears twice; Qdrant payloads are maps"
            )));
        }
    }
    fields.insert(
        ORDER_FIELD.to_owned(),
        Value {
            kind: Some(Kind::ListValue(ListValue { values: order })),
        },
    );
    Ok(fields)
}

/// Rebuilds the pairs of a payload, in written order when the order field is there.
fn read_payload(mut fields: HashMap<String, Value>) -> Vec<(String, String)> {
    let order = match fields.remove(ORDER_FIELD).and_then(|value| value.kind) {
        Some(Kind::ListValue(list)) => list
            .values
            .into_iter()
            .filter_map(|value| match value.kind {
                Some(Kind::StringValue(key)) => Some(key),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    let mut pairs = Vec::with_capacity(fields.len());
    for key in order {
        if let Some(value) = fields.remove(&key) {
            pairs.push((key, render(value)));
        }
    }
    // Fields the order does not list (written by other tools) follow, sorted by key.
    let mut rest: Vec<(String, String)> = fields
        .into_iter()
        .map(|(key, value)| (key, render(value)))
        .collect();
    rest.sort();
    pairs.extend(rest);
    pairs
}

/// A payload value as text: strings as they are, everything else in JSON notation.
fn render(value: Value) -> String {
    match value.kind {
        Some(Kind::StringValue(text)) => text,
        other => {
            let mut out = String::new();
            render_json(other, &mut out);
            out
        }
    }
}

fn render_json(kind: Option<Kind>, out: &mut String) {
    use std::fmt::Write;
    match kind {
        None | Some(Kind::NullValue(_)) => out.push_str("null"),
        Some(Kind::BoolValue(value)) => out.push_str(if value { "true" } else { "false" }),
        Some(Kind::IntegerValue(value)) => {
            let _ = write!(out, "{value}");
        }
        Some(Kind::DoubleValue(value)) => {
            let _ = write!(out, "{value}");
        }
        Some(Kind::StringValue(text)) => {
            out.push('"');
            for character in text.chars() {
                match character {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    character if (character as u32) < 0x20 => {
                        let _ = write!(out, "\\u{:04x}", character as u32);
                    }
                    character => out.push(character),
                }
            }
            out.push('"');
        }
        Some(Kind::ListValue(list)) => {
            out.push('[');
            for (position, value) in list.values.into_iter().enumerate() {
                if position > 0 {
                    out.push(',');
                }
                render_json(value.kind, out);
            }
            out.push(']');
        }
        Some(Kind::StructValue(object)) => {
            let mut entries: Vec<_> = object.fields.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            out.push('{');
            for (position, (key, value)) in entries.into_iter().enumerate() {
                if position > 0 {
                    out.push(',');
                }
                render_json(Some(Kind::StringValue(key)), out);
                out.push(':');
                render_json(value.kind, out);
            }
            out.push('}');
        }
    }
}

fn check_update(response: Option<qdrant_client::qdrant::UpdateResult>) -> StoreResult<()> {
    let status = response.map(|result| result.status);
    match status.map(UpdateStatus::try_from) {
        Some(Ok(UpdateStatus::Completed | UpdateStatus::Acknowledged)) => Ok(()),
        Some(Ok(UpdateStatus::WaitTimeout)) => Err(StoreError::Backend {
            detail: "Qdrant accepted the update but did not apply it in time".to_owned(),
        }),
        other => Err(StoreError::Backend {
            detail: format!("Qdrant did not apply the update (status {other:?})"),
        }),
    }
}

#[async_trait]
impl VectorIndex for QdrantIndex {
    fn backend(&self) -> &'static str {
        "qdrant"
    }

    fn dim(&self) -> usize {
        self.options.dim
    }

    fn metric(&self) -> Metric {
        self.options.metric
    }

    async fn upsert(&self, items: Vec<VectorItem>) -> StoreResult<()> {
        for item in &items {
            self.check_vector(&item.vector)?;
        }
        let mut points = Vec::with_capacity(items.len());
        for item in items {
            points.push(PointStruct {
                id: Some(point_id(item.id)),
                payload: write_payload(item.payload)?,
                vectors: Some(Vectors {
                    vectors_options: Some(VectorsOptions::Vector(dense(item.vector))),
                }),
            });
        }
        let mut points = points.into_iter().peekable();
        while points.peek().is_some() {
            let batch: Vec<PointStruct> = points.by_ref().take(self.options.batch_size).collect();
            let request = UpsertPoints {
                collection_name: self.options.collection.clone(),
                wait: Some(true),
                points: batch,
                ..Default::default()
            };
            self.apply("upsert", self.client.upsert_points(request))
                .await?;
        }
        Ok(())
    }

    async fn search(
        &self,
        query: &[f32],
        k: usize,
        only: Option<&[u64]>,
    ) -> StoreResult<Vec<VectorHit>> {
        self.check_vector(query)?;
        if k == 0 || only.is_some_and(|ids| ids.is_empty()) {
            return Ok(Vec::new());
        }
        let filter = only.map(|ids| Filter {
            must: vec![Condition {
                condition_one_of: Some(ConditionOneOf::HasId(HasIdCondition {
                    has_id: ids.iter().copied().map(point_id).collect(),
                })),
            }],
            ..Default::default()
        });
        let request = QueryPoints {
            collection_name: self.options.collection.clone(),
            query: Some(Query::new_nearest(query.to_vec())),
            filter,
            limit: Some(k as u64),
            with_payload: Some(WithPayloadSelector {
                selector_options: Some(SelectorOptions::Enable(true)),
            }),
            ..Default::default()
        };
        let response = self.bounded("search", self.client.query(request)).await?;
        let mut hits = Vec::with_capacity(response.result.len().min(k));
        for point in response.result.into_iter().take(k) {
            let ScoredPoint {
                id, payload, score, ..
            } = point;
            if !score.is_finite() {
                return Err(StoreError::Backend {
                    detail: format!("Qdrant returned a non-finite score {score}"),
                });
            }
            hits.push(VectorHit {
                id: read_id(id)?,
                score: match self.options.metric {
                    Metric::Cosine => score,
                    Metric::L2 => -score,
                },
                payload: read_payload(payload),
            });
        }
        Ok(hits)
    }

    async fn delete(&self, ids: &[u64]) -> StoreResult<()> {
        for chunk in ids.chunks(self.options.batch_size.max(1)) {
            let request = DeletePoints {
                collection_name: self.options.collection.clone(),
                wait: Some(true),
                points: Some(PointsSelector {
                    points_selector_one_of: Some(PointsSelectorOneOf::Points(PointsIdsList {
                        ids: chunk.iter().copied().map(point_id).collect(),
                    })),
                }),
                ..Default::default()
            };
            self.apply("delete", self.client.delete_points(request))
                .await?;
        }
        Ok(())
    }

    async fn len(&self) -> StoreResult<usize> {
        let request = CountPoints {
            collection_name: self.options.collection.clone(),
            exact: Some(true),
            ..Default::default()
        };
        let response = self.bounded("count", self.client.count(request)).await?;
        let count =
            response
                .result
                .map(|result| result.count)
                .ok_or_else(|| StoreError::Backend {
                    detail: "Qdrant answered a count without a result".to_owned(),
                })?;
        usize::try_from(count).map_err(|_| StoreError::Backend {
            detail: format!("Qdrant counted {count} points, more than this machine can address"),
        })
    }
}

/// A dense vector in the field every Qdrant 1.x server reads.
///
/// Servers from 1.16 also accept the newer `vector` oneof, but older ones (such as the
/// image pinned in deploy/compose.yaml) only read `data`, which newer servers still
/// accept.
#[allow(deprecated)]
fn dense(values: Vec<f32>) -> Vector {
    Vector {
        data: values,
        ..Default::default()
    }
}
