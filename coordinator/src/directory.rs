//! Which roles are on the bus right now, discovered rather than configured, so that a
//! new retriever is used the moment it announces itself.
//!
//! Only allowed roles are called ([`AllowedRoles`]): the built-in ones and those the
//! configuration names. Anything else that announces itself on the bus (a stray or
//! hostile process claiming to be a retriever) is left out of every snapshot, logged
//! once and counted in `kgmesh_refused_roles_total`.
//!
//! Discovery on NATS listens for a while; asking on every question would add that wait
//! to each one. A snapshot is reused for `ttl`; once it is stale the next caller still
//! gets it while one background task refreshes it (only the very first discovery is
//! waited for).

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use kgmesh_bus::{Bus, BusError, ServiceInstance};
use kgmesh_schemas::{ContentType, Role, RoleKind};
use serde::Serialize;

fn codec_name<S: serde::Serializer>(codec: &ContentType, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(codec.name())
}

/// The roles a coordinator calls. By default those it calls by name
/// ([`AllowedRoles::CALLED_BY_NAME`]); whoever builds the coordinator adds the roles of
/// its build and the configured ones ([`AllowedRoles::and`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowedRoles {
    /// Any role that announces itself.
    Any,
    /// These roles only.
    Only(BTreeSet<String>),
}

impl Default for AllowedRoles {
    fn default() -> Self {
        Self::Only(
            Self::CALLED_BY_NAME
                .iter()
                .map(|role| (*role).to_owned())
                .collect(),
        )
    }
}

impl AllowedRoles {
    /// The roles the coordinator calls by name: the steps of its round, and the roles
    /// behind its expansions and `cypher`.
    pub const CALLED_BY_NAME: &'static [&'static str] = &[
        Role::KG_LINKER,
        Role::ENTITY_LINKER,
        Role::PATH_FOLLOWER,
        Role::QUERY_EXECUTOR,
        Role::JUDGE,
        Role::SUMMARIZER,
        Role::CACHE_MANAGER,
    ];

    /// These roles and `roles`; `"*"` among them allows any role.
    pub fn and<S: AsRef<str>>(self, roles: &[S]) -> Self {
        if roles.iter().any(|role| role.as_ref().trim() == "*") {
            return Self::Any;
        }
        match self {
            Self::Any => Self::Any,
            Self::Only(mut allowed) => {
                allowed.extend(roles.iter().map(|role| role.as_ref().trim().to_owned()));
                Self::Only(allowed)
            }
        }
    }

    pub fn allows(&self, role: &str) -> bool {
        match self {
            Self::Any => true,
            Self::Only(allowed) => allowed.contains(role),
        }
    }
}

/// One role as seen on the bus: what it announces and how many instances serve it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RoleSummary {
    pub role: String,
    pub kind: String,
    pub version: String,
    pub ops: Vec<String>,
    /// The wire format the coordinator speaks to this role: bincode when every replica
    /// reads it, else JSON (an agent from outside kgmesh).
    #[serde(serialize_with = "codec_name")]
    pub codec: ContentType,
    pub replicas: usize,
    /// The replicas' instance ids (each serves on its own direct subject too).
    pub instances: Vec<String>,
    pub requests: u64,
    pub errors: u64,
}

/// The roles on the bus at one moment.
#[derive(Debug, Clone, Default)]
pub struct RoleSnapshot {
    roles: BTreeMap<String, RoleSummary>,
    /// Retrievers an earlier discovery of this directory saw (within
    /// [`REMEMBER_ROLES`]) that are not on the bus now.
    gone_retrievers: Vec<String>,
    /// Replicas per role seen by the discoveries of the last [`REMEMBER_REPLICAS`],
    /// including those that did not answer the latest one (frozen, just killed): their
    /// subscriptions may still take requests.
    recent_replicas: BTreeMap<String, usize>,
}

/// How long a directory counts a replica it saw among a role's recent replicas.
pub const REMEMBER_REPLICAS: Duration = Duration::from_secs(60);

/// How long a directory remembers a retriever it saw: one that left within this time
/// is reported missing (its evidence is absent from the answers) rather than forgotten.
pub const REMEMBER_ROLES: Duration = Duration::from_secs(600);

impl RoleSnapshot {
    pub fn from_instances(instances: &[ServiceInstance]) -> Self {
        let mut roles: BTreeMap<String, RoleSummary> = BTreeMap::new();
        for instance in instances {
            let name = instance.info.role.as_str().to_owned();
            let summary = roles.entry(name.clone()).or_insert_with(|| RoleSummary {
                role: name,
                kind: instance.info.kind.as_str().to_owned(),
                version: instance.info.version.clone(),
                ops: Vec::new(),
                codec: ContentType::Bincode,
                replicas: 0,
                instances: Vec::new(),
                requests: 0,
                errors: 0,
            });
            summary.replicas += 1;
            summary.instances.push(instance.instance_id.clone());
            summary.requests += instance.requests;
            summary.errors += instance.errors;
            for op in &instance.info.ops {
                if !summary.ops.contains(op) {
                    summary.ops.push(op.clone());
                }
            }
        }
        for summary in roles.values_mut() {
            let replicas = instances
                .iter()
                .filter(|i| i.info.role.as_str() == summary.role);
            let every = |codec: ContentType| replicas.clone().all(|i| i.codecs.contains(&codec));
            summary.codec = if every(ContentType::Bincode) || !every(ContentType::Json) {
                ContentType::Bincode
            } else {
                ContentType::Json
            };
        }
        Self {
            roles,
            gone_retrievers: Vec::new(),
            recent_replicas: BTreeMap::new(),
        }
    }

    /// The wire format to call `role` in (bincode for a role not on the bus).
    pub fn codec(&self, role: &str) -> ContentType {
        self.roles
            .get(role)
            .map_or(ContentType::Bincode, |summary| summary.codec)
    }

    /// The instance ids of `role`'s replicas (none when it is not on the bus).
    pub fn instances(&self, role: &str) -> &[String] {
        self.roles
            .get(role)
            .map_or(&[][..], |summary| summary.instances.as_slice())
    }

    /// How many replicas of `role` were seen lately, those that stopped answering
    /// discovery included; at least the number on the bus now.
    pub fn recent_replicas(&self, role: &str) -> usize {
        self.recent_replicas
            .get(role)
            .copied()
            .unwrap_or(0)
            .max(self.instances(role).len())
    }

    /// Retrievers seen on the bus recently that are gone now, in name order.
    pub fn gone_retrievers(&self) -> &[String] {
        &self.gone_retrievers
    }

    pub fn has(&self, role: &str) -> bool {
        self.roles.contains_key(role)
    }

    /// Whether `role` is present and announces `op` (a role announcing no ops at all is
    /// taken to serve its default ones).
    pub fn serves(&self, role: &str, op: &str) -> bool {
        self.roles
            .get(role)
            .map(|summary| summary.ops.is_empty() || summary.ops.iter().any(|o| o == op))
            .unwrap_or(false)
    }

    /// Every retriever role, in name order (the order their evidence is merged in, so
    /// that answers do not depend on which replica answered first).
    pub fn retrievers(&self) -> Vec<Role> {
        self.roles
            .values()
            .filter(|summary| summary.kind == RoleKind::Retriever.as_str())
            .filter_map(|summary| Role::new(&summary.role).ok())
            .collect()
    }

    /// The first role (by name) announcing `op`, preferring `preferred`.
    pub fn role_serving(&self, preferred: &str, op: &str) -> Option<Role> {
        if self
            .roles
            .get(preferred)
            .is_some_and(|s| s.ops.iter().any(|o| o == op))
        {
            return Role::new(preferred).ok();
        }
        self.roles
            .values()
            .find(|summary| summary.ops.iter().any(|o| o == op))
            .and_then(|summary| Role::new(&summary.role).ok())
    }

    pub fn roles(&self) -> impl Iterator<Item = &RoleSummary> {
        self.roles.values()
    }

    pub fn is_empty(&self) -> bool {
        self.roles.is_empty()
    }
}

struct Cached {
    taken_at: Instant,
    snapshot: Arc<RoleSnapshot>,
}

struct Inner {
    bus: Arc<dyn Bus>,
    ttl: Duration,
    wait: Duration,
    allowed: AllowedRoles,
    /// Refused roles already logged (each is logged once, counted every discovery).
    refused: std::sync::Mutex<BTreeSet<String>>,
    cached: tokio::sync::Mutex<Option<Cached>>,
    refreshing: AtomicBool,
    /// Roles with a replica gauge, so a role that leaves is set to zero.
    published: std::sync::Mutex<std::collections::BTreeSet<String>>,
    /// Retrievers seen by a discovery, and when last.
    retrievers_seen: std::sync::Mutex<BTreeMap<String, Instant>>,
    /// Instances seen by a discovery: their role, and when last.
    instances_seen: std::sync::Mutex<BTreeMap<String, (String, Instant)>>,
}

/// Cached, self-refreshing discovery of the roles on a bus. Cheap to clone.
#[derive(Clone)]
pub struct RoleDirectory {
    inner: Arc<Inner>,
}

impl RoleDirectory {
    pub fn new(bus: Arc<dyn Bus>, ttl: Duration, wait: Duration, allowed: AllowedRoles) -> Self {
        Self {
            inner: Arc::new(Inner {
                bus,
                ttl,
                wait,
                allowed,
                refused: std::sync::Mutex::new(BTreeSet::new()),
                cached: tokio::sync::Mutex::new(None),
                refreshing: AtomicBool::new(false),
                published: std::sync::Mutex::new(std::collections::BTreeSet::new()),
                retrievers_seen: std::sync::Mutex::new(BTreeMap::new()),
                instances_seen: std::sync::Mutex::new(BTreeMap::new()),
            }),
        }
    }

    /// The current snapshot: fresh or stale-but-refreshing; waits only when there is
    /// none yet.
    pub async fn snapshot(&self) -> Result<Arc<RoleSnapshot>, BusError> {
        let mut cached = self.inner.cached.lock().await;
        if let Some(current) = cached.as_ref() {
            if current.taken_at.elapsed() >= self.inner.ttl {
                self.refresh_in_background();
            }
            return Ok(current.snapshot.clone());
        }
        let snapshot = Arc::new(self.discover().await?);
        *cached = Some(Cached {
            taken_at: Instant::now(),
            snapshot: snapshot.clone(),
        });
        Ok(snapshot)
    }

    /// Discovers now, replacing the cached snapshot (for readiness probes and tests).
    pub async fn refresh(&self) -> Result<Arc<RoleSnapshot>, BusError> {
        let snapshot = Arc::new(self.discover().await?);
        *self.inner.cached.lock().await = Some(Cached {
            taken_at: Instant::now(),
            snapshot: snapshot.clone(),
        });
        Ok(snapshot)
    }

    async fn discover(&self) -> Result<RoleSnapshot, BusError> {
        let mut instances = self.inner.bus.discover(self.inner.wait).await?;
        self.refuse_unlisted(&mut instances);
        let mut snapshot = RoleSnapshot::from_instances(&instances);
        let replicas: Vec<(String, usize)> = snapshot
            .roles()
            .map(|summary| (summary.role.clone(), summary.replicas))
            .collect();
        crate::metrics::record_replicas(&self.inner.published, &replicas);
        let now = Instant::now();
        let mut seen = self.inner.retrievers_seen.lock().expect("retrievers lock");
        for role in snapshot.retrievers() {
            seen.insert(role.as_str().to_owned(), now);
        }
        seen.retain(|_, last| now.duration_since(*last) < REMEMBER_ROLES);
        snapshot.gone_retrievers = seen
            .keys()
            .filter(|role| !snapshot.has(role))
            .cloned()
            .collect();
        drop(seen);
        let mut seen = self.inner.instances_seen.lock().expect("instances lock");
        for instance in &instances {
            let role = instance.info.role.as_str().to_owned();
            seen.insert(instance.instance_id.clone(), (role, now));
        }
        seen.retain(|_, (_, last)| now.duration_since(*last) < REMEMBER_REPLICAS);
        for (role, _) in seen.values() {
            *snapshot.recent_replicas.entry(role.clone()).or_insert(0) += 1;
        }
        Ok(snapshot)
    }

    /// Drops the instances of roles the coordinator does not call; logs each such role
    /// the first time, counts it every time.
    fn refuse_unlisted(&self, instances: &mut Vec<ServiceInstance>) {
        let mut refused: BTreeMap<String, (String, usize)> = BTreeMap::new();
        instances.retain(|instance| {
            let role = instance.info.role.as_str();
            if self.inner.allowed.allows(role) {
                return true;
            }
            let entry = refused
                .entry(role.to_owned())
                .or_insert_with(|| (instance.info.kind.as_str().to_owned(), 0));
            entry.1 += 1;
            false
        });
        let mut logged = self.inner.refused.lock().expect("refused lock");
        for (role, (kind, replicas)) in refused {
            crate::metrics::record_refused(&role);
            if logged.insert(role.clone()) {
                tracing::warn!(
                    %role,
                    %kind,
                    replicas,
                    "a role announced itself on the bus that the coordinator does not call: \
                     it is not built in and bus.allowed_roles does not name it"
                );
            }
        }
    }

    fn refresh_in_background(&self) {
        if self.inner.refreshing.swap(true, Ordering::AcqRel) {
            return;
        }
        let directory = self.clone();
        tokio::spawn(async move {
            match directory.discover().await {
                Ok(snapshot) => {
                    *directory.inner.cached.lock().await = Some(Cached {
                        taken_at: Instant::now(),
                        snapshot: Arc::new(snapshot),
                    });
                }
                Err(error) => {
                    tracing::warn!(%error, "role discovery failed; keeping the last snapshot")
                }
            }
            directory.inner.refreshing.store(false, Ordering::Release);
        });
    }
}

#[cfg(test)]
mod tests {
    use kgmesh_bus::ServiceInstance;
    use kgmesh_schemas::{ContentType, Role, RoleInfo, RoleKind};

    use super::{AllowedRoles, RoleSnapshot};

    fn instance(role: &str, id: &str, codecs: &[ContentType]) -> ServiceInstance {
        ServiceInstance {
            info: RoleInfo {
                role: Role::new(role).unwrap(),
                version: "1".to_owned(),
                kind: RoleKind::Retriever,
                ops: vec!["retrieve".to_owned()],
            },
            instance_id: id.to_owned(),
            codecs: codecs.to_vec(),
            requests: 0,
            errors: 0,
        }
    }

    #[test]
    fn a_role_is_called_in_bincode_unless_a_replica_reads_only_json() {
        use ContentType::{Bincode, Json};
        let snapshot = RoleSnapshot::from_instances(&[
            instance("path-follower", "a", &[Bincode, Json]),
            instance("csv-retriever", "b", &[Json]),
            instance("mixed", "c", &[Bincode, Json]),
            instance("mixed", "d", &[Json]),
            instance("old", "e", &[Bincode]),
        ]);
        assert_eq!(snapshot.codec("path-follower"), Bincode);
        assert_eq!(snapshot.codec("csv-retriever"), Json);
        assert_eq!(snapshot.codec("mixed"), Json, "every replica reads JSON");
        assert_eq!(snapshot.codec("old"), Bincode);
        assert_eq!(snapshot.codec("absent"), Bincode);
    }

    #[test]
    fn the_allow_list_holds_the_roles_called_by_name_and_the_named_ones() {
        let allowed = AllowedRoles::default().and(&["csv-retriever"]);
        assert!(allowed.allows("path-follower"));
        assert!(allowed.allows("csv-retriever"));
        assert!(!allowed.allows("evidence-injector"));
        assert!(!AllowedRoles::default().allows("csv-retriever"));
        assert!(!AllowedRoles::default().allows("scoring-retriever"));
        let built = AllowedRoles::default().and(&["scoring-retriever", "text-retriever"]);
        assert!(built.allows("scoring-retriever") && built.allows("judge"));
        assert!(AllowedRoles::default().and(&[" * "]).allows("anything"));
        assert_eq!(AllowedRoles::Any.and(&["x"]), AllowedRoles::Any);
    }
}
