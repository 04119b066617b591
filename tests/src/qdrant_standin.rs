//! An in-memory stand-in for a Qdrant server, speaking Qdrant's gRPC API.
//!
//! No Qdrant server can be installed where kgmesh is built and tested, so the Qdrant
//! vector backend is tested against this: the services are the tonic server traits
//! that `qdrant-client` generates from Qdrant's own protobuf definitions
//! (`points_server::Points`, `collections_server::Collections`, `qdrant_server::Qdrant`),
//! so the client talks real gRPC over a real socket. Only the calls the backend makes
//! are implemented (health check; collection exists/create/get/list/delete; points
//! upsert/delete/count/query/search), every other call answers `UNIMPLEMENTED`.
//! Search is exact. What it models from a real server: cosine vectors are normalized
//! when stored, `Euclid` scores are distances (lower is nearer), wrong dimensions and
//! unknown collections are refused with the status codes Qdrant uses. It is not Qdrant:
//! no persistence, no indexes, no payload filters beyond `has_id`.
//!
//! The server runs on its own runtime thread on a random loopback port and is stopped
//! abruptly (connections dropped mid-call) by [`QdrantStandIn::kill`] or on drop.
//!
//! ```no_run
//! let standin = kgmesh_testkit::qdrant_standin::QdrantStandIn::start();
//! println!("connect to {}", standin.url());
//! ```

use std::{
    collections::{BTreeMap, HashMap},
    net::SocketAddr,
    sync::{Arc, Mutex, MutexGuard},
    time::Duration,
};

use qdrant_client::qdrant::{
    collections_server::{Collections, CollectionsServer},
    condition::ConditionOneOf,
    point_id::PointIdOptions,
    points_selector::PointsSelectorOneOf,
    points_server::{Points, PointsServer},
    qdrant_server::{Qdrant, QdrantServer},
    query, vector, vector_input, vectors, vectors_config, with_payload_selector, CollectionConfig,
    CollectionDescription, CollectionExists, CollectionExistsRequest, CollectionExistsResponse,
    CollectionInfo, CollectionOperationResponse, CollectionParams, CountPoints, CountResponse,
    CountResult, CreateCollection, DeleteCollection, DeletePoints, Distance, Filter,
    GetCollectionInfoRequest, GetCollectionInfoResponse, HealthCheckReply, HealthCheckRequest,
    ListCollectionsRequest, ListCollectionsResponse, PointId, PointsOperationResponse, QueryPoints,
    QueryResponse, ScoredPoint, SearchPoints, SearchResponse, UpdateResult, UpdateStatus,
    UpsertPoints, Value, VectorParams, VectorsConfig, WithPayloadSelector,
};
use tonic::{Code, Request, Response, Status};

/// Version reported by the health check (the client's own, so version checks pass).
pub const REPORTED_VERSION: &str = "1.20.0";

/// A running stand-in; stopped (abruptly) on drop.
pub struct QdrantStandIn {
    runtime: Option<tokio::runtime::Runtime>,
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl QdrantStandIn {
    /// Starts the stand-in on a free loopback port. Panics (failing the test) when it
    /// cannot bind or start its runtime.
    pub fn start() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")
            .expect("cannot bind a loopback port for the Qdrant stand-in");
        listener
            .set_nonblocking(true)
            .expect("cannot make the Qdrant stand-in's socket non-blocking");
        let addr = listener
            .local_addr()
            .expect("the Qdrant stand-in's socket has no address");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("qdrant-standin")
            .enable_all()
            .build()
            .expect("cannot start the Qdrant stand-in's runtime");
        let shared = Arc::new(Shared::default());
        let service = Service {
            shared: shared.clone(),
        };
        runtime.spawn(async move {
            let listener = match tokio::net::TcpListener::from_std(listener) {
                Ok(listener) => listener,
                Err(error) => {
                    eprintln!("Qdrant stand-in cannot listen: {error}");
                    return;
                }
            };
            let incoming = tonic::transport::server::TcpIncoming::from(listener);
            let served = tonic::transport::Server::builder()
                .add_service(QdrantServer::new(service.clone()))
                .add_service(CollectionsServer::new(service.clone()))
                .add_service(PointsServer::new(service))
                .serve_with_incoming(incoming)
                .await;
            if let Err(error) = served {
                eprintln!("Qdrant stand-in stopped: {error}");
            }
        });
        Self {
            runtime: Some(runtime),
            addr,
            shared,
        }
    }

    /// `http://127.0.0.1:PORT`, the gRPC endpoint.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops the server at once: open connections and calls in flight are dropped, new
    /// connections are refused.
    pub fn kill(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }

    /// Every later call waits this long before it is handled.
    pub fn set_delay(&self, delay: Duration) {
        *lock(&self.shared.delay) = delay;
    }

    /// Every later call fails with this status until [`QdrantStandIn::clear_failure`].
    pub fn fail_with(&self, code: Code, message: &str) {
        *lock(&self.shared.failure) = Some((code, message.to_owned()));
    }

    pub fn clear_failure(&self) {
        *lock(&self.shared.failure) = None;
    }

    /// How many times the RPC `name` (e.g. `"upsert"`, `"query"`) was called.
    pub fn calls(&self, name: &str) -> usize {
        lock(&self.shared.calls).get(name).copied().unwrap_or(0)
    }

    /// Points stored in `collection`, or `None` when it does not exist.
    pub fn point_count(&self, collection: &str) -> Option<usize> {
        lock(&self.shared.collections)
            .get(collection)
            .map(|collection| collection.points.len())
    }

    /// Replaces (or creates) `collection` with an empty one of this shape, as another
    /// client recreating it would.
    pub fn replace_collection(&self, collection: &str, dim: u64, distance: Distance) {
        lock(&self.shared.collections).insert(
            collection.to_owned(),
            Collection {
                dim,
                distance,
                points: BTreeMap::new(),
            },
        );
    }
}

impl Drop for QdrantStandIn {
    fn drop(&mut self) {
        self.kill();
    }
}

#[derive(Default)]
struct Shared {
    collections: Mutex<HashMap<String, Collection>>,
    delay: Mutex<Duration>,
    failure: Mutex<Option<(Code, String)>>,
    calls: Mutex<HashMap<&'static str, usize>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking handler cannot leave these maps half-updated in a way that matters
    // to a test, so a poisoned lock is still usable.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

struct Collection {
    dim: u64,
    distance: Distance,
    points: BTreeMap<Key, Stored>,
}

#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Num(u64),
    Uuid(String),
}

impl Key {
    fn from_id(id: Option<PointId>) -> Result<Self, Status> {
        match id.and_then(|id| id.point_id_options) {
            Some(PointIdOptions::Num(number)) => Ok(Key::Num(number)),
            Some(PointIdOptions::Uuid(uuid)) => Ok(Key::Uuid(uuid)),
            None => Err(Status::invalid_argument("Wrong input: point id is missing")),
        }
    }

    fn to_id(&self) -> PointId {
        PointId {
            point_id_options: Some(match self {
                Key::Num(number) => PointIdOptions::Num(*number),
                Key::Uuid(uuid) => PointIdOptions::Uuid(uuid.clone()),
            }),
        }
    }
}

struct Stored {
    vector: Vec<f32>,
    payload: HashMap<String, Value>,
}

#[derive(Clone)]
struct Service {
    shared: Arc<Shared>,
}

impl Service {
    /// Counts the call, applies the configured delay and failure.
    async fn enter(&self, name: &'static str) -> Result<(), Status> {
        *lock(&self.shared.calls).entry(name).or_default() += 1;
        let delay = *lock(&self.shared.delay);
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        match lock(&self.shared.failure).clone() {
            Some((code, message)) => Err(Status::new(code, message)),
            None => Ok(()),
        }
    }

    fn collections(&self) -> MutexGuard<'_, HashMap<String, Collection>> {
        lock(&self.shared.collections)
    }
}

fn not_found(name: &str) -> Status {
    Status::not_found(format!("Not found: Collection `{name}` doesn't exist!"))
}

fn update_done() -> Response<PointsOperationResponse> {
    Response::new(PointsOperationResponse {
        result: Some(UpdateResult {
            operation_id: Some(0),
            status: UpdateStatus::Completed as i32,
        }),
        time: 0.0,
        usage: None,
    })
}

fn norm(vector: &[f32]) -> f32 {
    vector.iter().map(|x| x * x).sum::<f32>().sqrt()
}

/// Score of `stored` for `query` and whether higher is better, as Qdrant reports them.
fn score(distance: Distance, query: &[f32], stored: &[f32]) -> f32 {
    match distance {
        // Stored cosine vectors are already normalized; the query is normalized here.
        Distance::Cosine => {
            let length = norm(query);
            let dot: f32 = query.iter().zip(stored).map(|(a, b)| a * b).sum();
            if length == 0.0 {
                0.0
            } else {
                dot / length
            }
        }
        Distance::Dot => query.iter().zip(stored).map(|(a, b)| a * b).sum(),
        Distance::Euclid => query
            .iter()
            .zip(stored)
            .map(|(a, b)| (a - b) * (a - b))
            .sum::<f32>()
            .sqrt(),
        Distance::Manhattan | Distance::UnknownDistance => {
            query.iter().zip(stored).map(|(a, b)| (a - b).abs()).sum()
        }
    }
}

fn higher_is_better(distance: Distance) -> bool {
    matches!(distance, Distance::Cosine | Distance::Dot)
}

/// The ids a `has_id`-only filter allows; other filters are not modelled.
fn allowed_ids(filter: Option<Filter>) -> Result<Option<Vec<Key>>, Status> {
    let Some(filter) = filter else {
        return Ok(None);
    };
    if !filter.should.is_empty() || !filter.must_not.is_empty() || filter.min_should.is_some() {
        return Err(Status::unimplemented(
            "the Qdrant stand-in only models `must` has_id filters",
        ));
    }
    let mut allowed: Option<Vec<Key>> = None;
    for condition in filter.must {
        match condition.condition_one_of {
            Some(ConditionOneOf::HasId(has_id)) => {
                let keys = has_id
                    .has_id
                    .into_iter()
                    .map(|id| Key::from_id(Some(id)))
                    .collect::<Result<Vec<_>, _>>()?;
                allowed = Some(match allowed {
                    None => keys,
                    Some(previous) => previous.into_iter().filter(|k| keys.contains(k)).collect(),
                });
            }
            _ => {
                return Err(Status::unimplemented(
                    "the Qdrant stand-in only models has_id conditions",
                ))
            }
        }
    }
    Ok(allowed)
}

fn wants_payload(selector: Option<WithPayloadSelector>) -> bool {
    matches!(
        selector.and_then(|selector| selector.selector_options),
        Some(with_payload_selector::SelectorOptions::Enable(true))
    )
}

/// Exact nearest-neighbour search, ordered the way Qdrant orders results.
fn nearest(
    collection: &Collection,
    query: &[f32],
    filter: Option<Filter>,
    limit: u64,
    offset: u64,
    with_payload: bool,
) -> Result<Vec<ScoredPoint>, Status> {
    if query.len() as u64 != collection.dim {
        return Err(Status::invalid_argument(format!(
            "Wrong input: Vector dimension error: expected dim: {}, got {}",
            collection.dim,
            query.len()
        )));
    }
    let allowed = allowed_ids(filter)?;
    let mut scored: Vec<(f32, &Key, &Stored)> = collection
        .points
        .iter()
        .filter(|(key, _)| allowed.as_ref().is_none_or(|allowed| allowed.contains(key)))
        .map(|(key, stored)| {
            (
                score(collection.distance, query, &stored.vector),
                key,
                stored,
            )
        })
        .collect();
    let descending = higher_is_better(collection.distance);
    scored.sort_by(|a, b| {
        let order = if descending {
            b.0.total_cmp(&a.0)
        } else {
            a.0.total_cmp(&b.0)
        };
        order.then_with(|| a.1.cmp(b.1))
    });
    Ok(scored
        .into_iter()
        .skip(offset as usize)
        .take(limit as usize)
        .map(|(score, key, stored)| ScoredPoint {
            id: Some(key.to_id()),
            payload: if with_payload {
                stored.payload.clone()
            } else {
                HashMap::new()
            },
            score,
            version: 0,
            vectors: None,
            shard_key: None,
            order_value: None,
        })
        .collect())
}

/// The dense vector of an upserted point, from the current or the deprecated field.
#[allow(deprecated)]
fn dense_vector(point_vectors: Option<qdrant_client::qdrant::Vectors>) -> Result<Vec<f32>, Status> {
    match point_vectors.and_then(|v| v.vectors_options) {
        Some(vectors::VectorsOptions::Vector(single)) => match single.vector {
            Some(vector::Vector::Dense(dense)) => Ok(dense.data),
            Some(_) => Err(Status::unimplemented(
                "the Qdrant stand-in only models dense vectors",
            )),
            None => Ok(single.data),
        },
        Some(vectors::VectorsOptions::Vectors(_)) => Err(Status::invalid_argument(
            "Wrong input: Not existing vector name error: the collection has one unnamed vector",
        )),
        None => Err(Status::invalid_argument("Wrong input: point has no vector")),
    }
}

/// Implements a service trait: the listed methods plus `UNIMPLEMENTED` for the rest.
/// (A macro invoked inside an `#[async_trait]` impl would be expanded after the
/// attribute ran, so the whole impl, attribute included, is generated here.)
macro_rules! service_impl {
    (
        $trait:ident { $($implemented:tt)* }
        unimplemented { $($name:ident($request:ident) -> $response:ident;)* }
    ) => {
        #[tonic::async_trait]
        impl $trait for Service {
            $($implemented)*
            $(
                async fn $name(
                    &self,
                    _request: Request<qdrant_client::qdrant::$request>,
                ) -> Result<Response<qdrant_client::qdrant::$response>, Status> {
                    Err(Status::unimplemented(concat!(
                        "the Qdrant stand-in does not implement ",
                        stringify!($name)
                    )))
                }
            )*
        }
    };
}

service_impl! {
    Qdrant {
        async fn health_check(
            &self,
            _request: Request<HealthCheckRequest>,
        ) -> Result<Response<HealthCheckReply>, Status> {
            self.enter("health_check").await?;
            Ok(Response::new(HealthCheckReply {
                title: "qdrant stand-in (kgmesh tests)".to_owned(),
                version: REPORTED_VERSION.to_owned(),
                commit: None,
            }))
        }
    }
    unimplemented {}
}

service_impl! {
    Collections {
        async fn get(
            &self,
            request: Request<GetCollectionInfoRequest>,
        ) -> Result<Response<GetCollectionInfoResponse>, Status> {
            self.enter("collection_info").await?;
            let name = request.into_inner().collection_name;
            let collections = self.collections();
            let collection = collections.get(&name).ok_or_else(|| not_found(&name))?;
            Ok(Response::new(GetCollectionInfoResponse {
                result: Some(CollectionInfo {
                    status: 1, // green
                    config: Some(CollectionConfig {
                        params: Some(CollectionParams {
                            shard_number: 1,
                            vectors_config: Some(VectorsConfig {
                                config: Some(vectors_config::Config::Params(VectorParams {
                                    size: collection.dim,
                                    distance: collection.distance as i32,
                                    ..Default::default()
                                })),
                            }),
                            ..Default::default()
                        }),
                        ..Default::default()
                    }),
                    points_count: Some(collection.points.len() as u64),
                    ..Default::default()
                }),
                time: 0.0,
            }))
        }

        async fn list(
            &self,
            _request: Request<ListCollectionsRequest>,
        ) -> Result<Response<ListCollectionsResponse>, Status> {
            self.enter("list_collections").await?;
            let mut names: Vec<String> = self.collections().keys().cloned().collect();
            names.sort();
            Ok(Response::new(ListCollectionsResponse {
                collections: names
                    .into_iter()
                    .map(|name| CollectionDescription { name })
                    .collect(),
                time: 0.0,
            }))
        }

        async fn create(
            &self,
            request: Request<CreateCollection>,
        ) -> Result<Response<CollectionOperationResponse>, Status> {
            self.enter("create_collection").await?;
            let request = request.into_inner();
            let name = request.collection_name;
            let params = match request.vectors_config.and_then(|config| config.config) {
                Some(vectors_config::Config::Params(params)) => params,
                Some(vectors_config::Config::ParamsMap(_)) => {
                    return Err(Status::unimplemented(
                        "the Qdrant stand-in only models one unnamed vector per point",
                    ))
                }
                None => {
                    return Err(Status::invalid_argument(
                        "Wrong input: vectors configuration is missing",
                    ))
                }
            };
            if params.size == 0 {
                return Err(Status::invalid_argument(
                    "Validation error: vector size must be at least 1",
                ));
            }
            let distance = match Distance::try_from(params.distance) {
                Ok(Distance::UnknownDistance) | Err(_) => {
                    return Err(Status::invalid_argument("Wrong input: unknown distance"))
                }
                Ok(distance) => distance,
            };
            let mut collections = self.collections();
            if collections.contains_key(&name) {
                return Err(Status::invalid_argument(format!(
                    "Wrong input: Collection `{name}` already exists!"
                )));
            }
            collections.insert(
                name,
                Collection {
                    dim: params.size,
                    distance,
                    points: BTreeMap::new(),
                },
            );
            Ok(Response::new(CollectionOperationResponse {
                result: true,
                time: 0.0,
            }))
        }

        async fn delete(
            &self,
            request: Request<DeleteCollection>,
        ) -> Result<Response<CollectionOperationResponse>, Status> {
            self.enter("delete_collection").await?;
            let name = request.into_inner().collection_name;
            let removed = self.collections().remove(&name).is_some();
            Ok(Response::new(CollectionOperationResponse {
                result: removed,
                time: 0.0,
            }))
        }

        async fn collection_exists(
            &self,
            request: Request<CollectionExistsRequest>,
        ) -> Result<Response<CollectionExistsResponse>, Status> {
            self.enter("collection_exists").await?;
            let name = request.into_inner().collection_name;
            let exists = self.collections().contains_key(&name);
            Ok(Response::new(CollectionExistsResponse {
                result: Some(CollectionExists { exists }),
                time: 0.0,
            }))
        }
    }
    unimplemented {
        update(UpdateCollection) -> CollectionOperationResponse;
        update_aliases(ChangeAliases) -> CollectionOperationResponse;
        list_collection_aliases(ListCollectionAliasesRequest) -> ListAliasesResponse;
        list_aliases(ListAliasesRequest) -> ListAliasesResponse;
        collection_cluster_info(CollectionClusterInfoRequest) -> CollectionClusterInfoResponse;
        update_collection_cluster_setup(UpdateCollectionClusterSetupRequest) -> UpdateCollectionClusterSetupResponse;
        create_shard_key(CreateShardKeyRequest) -> CreateShardKeyResponse;
        delete_shard_key(DeleteShardKeyRequest) -> DeleteShardKeyResponse;
        list_shard_keys(ListShardKeysRequest) -> ListShardKeysResponse;
    }
}

service_impl! {
    Points {
        async fn upsert(
            &self,
            request: Request<UpsertPoints>,
        ) -> Result<Response<PointsOperationResponse>, Status> {
            self.enter("upsert").await?;
            let request = request.into_inner();
            let mut collections = self.collections();
            let collection = collections
                .get_mut(&request.collection_name)
                .ok_or_else(|| not_found(&request.collection_name))?;
            // The whole batch is checked before any point is written.
            let mut prepared = Vec::with_capacity(request.points.len());
            for point in request.points {
                let key = Key::from_id(point.id)?;
                let mut vector = dense_vector(point.vectors)?;
                if vector.len() as u64 != collection.dim {
                    return Err(Status::invalid_argument(format!(
                        "Wrong input: Vector dimension error: expected dim: {}, got {}",
                        collection.dim,
                        vector.len()
                    )));
                }
                if collection.distance == Distance::Cosine {
                    let length = norm(&vector);
                    if length > 0.0 {
                        vector.iter_mut().for_each(|x| *x /= length);
                    }
                }
                prepared.push((
                    key,
                    Stored {
                        vector,
                        payload: point.payload,
                    },
                ));
            }
            collection.points.extend(prepared);
            Ok(update_done())
        }

        async fn delete(
            &self,
            request: Request<DeletePoints>,
        ) -> Result<Response<PointsOperationResponse>, Status> {
            self.enter("delete").await?;
            let request = request.into_inner();
            let mut collections = self.collections();
            let collection = collections
                .get_mut(&request.collection_name)
                .ok_or_else(|| not_found(&request.collection_name))?;
            match request.points.and_then(|selector| selector.points_selector_one_of) {
                Some(PointsSelectorOneOf::Points(list)) => {
                    for id in list.ids {
                        collection.points.remove(&Key::from_id(Some(id))?);
                    }
                }
                Some(PointsSelectorOneOf::Filter(_)) => {
                    return Err(Status::unimplemented(
                        "the Qdrant stand-in does not delete by filter",
                    ))
                }
                None => return Err(Status::invalid_argument("Wrong input: no points selected")),
            }
            Ok(update_done())
        }

        async fn count(
            &self,
            request: Request<CountPoints>,
        ) -> Result<Response<CountResponse>, Status> {
            self.enter("count").await?;
            let request = request.into_inner();
            let collections = self.collections();
            let collection = collections
                .get(&request.collection_name)
                .ok_or_else(|| not_found(&request.collection_name))?;
            let count = match allowed_ids(request.filter)? {
                None => collection.points.len(),
                Some(allowed) => collection
                    .points
                    .keys()
                    .filter(|key| allowed.contains(key))
                    .count(),
            };
            Ok(Response::new(CountResponse {
                result: Some(CountResult {
                    count: count as u64,
                }),
                time: 0.0,
                usage: None,
            }))
        }

        async fn query(
            &self,
            request: Request<QueryPoints>,
        ) -> Result<Response<QueryResponse>, Status> {
            self.enter("query").await?;
            let request = request.into_inner();
            if !request.prefetch.is_empty() || request.using.is_some() {
                return Err(Status::unimplemented(
                    "the Qdrant stand-in does not model prefetch or named vectors",
                ));
            }
            let query = match request.query.and_then(|query| query.variant) {
                Some(query::Variant::Nearest(input)) => match input.variant {
                    Some(vector_input::Variant::Dense(dense)) => dense.data,
                    _ => {
                        return Err(Status::unimplemented(
                            "the Qdrant stand-in only models dense nearest queries",
                        ))
                    }
                },
                _ => {
                    return Err(Status::unimplemented(
                        "the Qdrant stand-in only models nearest queries",
                    ))
                }
            };
            let collections = self.collections();
            let collection = collections
                .get(&request.collection_name)
                .ok_or_else(|| not_found(&request.collection_name))?;
            let result = nearest(
                collection,
                &query,
                request.filter,
                request.limit.unwrap_or(10),
                request.offset.unwrap_or(0),
                wants_payload(request.with_payload),
            )?;
            Ok(Response::new(QueryResponse {
                result,
                time: 0.0,
                usage: None,
            }))
        }

        async fn search(
            &self,
            request: Request<SearchPoints>,
        ) -> Result<Response<SearchResponse>, Status> {
            self.enter("search").await?;
            let request = request.into_inner();
            if request.vector_name.is_some() {
                return Err(Status::unimplemented(
                    "the Qdrant stand-in does not model named vectors",
                ));
            }
            let collections = self.collections();
            let collection = collections
                .get(&request.collection_name)
                .ok_or_else(|| not_found(&request.collection_name))?;
            let result = nearest(
                collection,
                &request.vector,
                request.filter,
                request.limit,
                request.offset.unwrap_or(0),
                wants_payload(request.with_payload),
            )?;
            Ok(Response::new(SearchResponse {
                result,
                time: 0.0,
                usage: None,
            }))
        }
    }
    unimplemented {
        get(GetPoints) -> GetResponse;
        update_vectors(UpdatePointVectors) -> PointsOperationResponse;
        delete_vectors(DeletePointVectors) -> PointsOperationResponse;
        set_payload(SetPayloadPoints) -> PointsOperationResponse;
        overwrite_payload(SetPayloadPoints) -> PointsOperationResponse;
        delete_payload(DeletePayloadPoints) -> PointsOperationResponse;
        clear_payload(ClearPayloadPoints) -> PointsOperationResponse;
        create_field_index(CreateFieldIndexCollection) -> PointsOperationResponse;
        delete_field_index(DeleteFieldIndexCollection) -> PointsOperationResponse;
        create_vector_name(CreateVectorNameRequest) -> PointsOperationResponse;
        delete_vector_name(DeleteVectorNameRequest) -> PointsOperationResponse;
        search_batch(SearchBatchPoints) -> SearchBatchResponse;
        search_groups(SearchPointGroups) -> SearchGroupsResponse;
        scroll(ScrollPoints) -> ScrollResponse;
        recommend(RecommendPoints) -> RecommendResponse;
        recommend_batch(RecommendBatchPoints) -> RecommendBatchResponse;
        recommend_groups(RecommendPointGroups) -> RecommendGroupsResponse;
        discover(DiscoverPoints) -> DiscoverResponse;
        discover_batch(DiscoverBatchPoints) -> DiscoverBatchResponse;
        update_batch(UpdateBatchPoints) -> UpdateBatchResponse;
        query_batch(QueryBatchPoints) -> QueryBatchResponse;
        query_groups(QueryPointGroups) -> QueryGroupsResponse;
        facet(FacetCounts) -> FacetResponse;
        search_matrix_pairs(SearchMatrixPoints) -> SearchMatrixPairsResponse;
        search_matrix_offsets(SearchMatrixPoints) -> SearchMatrixOffsetsResponse;
    }
}
