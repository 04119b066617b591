//! Which roles are on the bus right now, discovered rather than configured, so that a
//! new retriever is used the moment it announces itself.
//!
//! Discovery on NATS listens for a while; asking on every question would add that wait
//! to each one. A snapshot is reused for `ttl`; once it is stale the next caller still
//! gets it while one background task refreshes it (only the very first discovery is
//! waited for).

use std::{
    collections::BTreeMap,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use kgmesh_bus::{Bus, BusError, ServiceInstance};
use kgmesh_schemas::{Role, RoleKind};
use serde::Serialize;

/// One role as seen on the bus: what it announces and how many instances serve it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RoleSummary {
    pub role: String,
    pub kind: String,
    pub version: String,
    pub ops: Vec<String>,
    pub replicas: usize,
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
}

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
                replicas: 0,
                requests: 0,
                errors: 0,
            });
            summary.replicas += 1;
            summary.requests += instance.requests;
            summary.errors += instance.errors;
            for op in &instance.info.ops {
                if !summary.ops.contains(op) {
                    summary.ops.push(op.clone());
                }
            }
        }
        Self {
            roles,
            gone_retrievers: Vec::new(),
        }
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
    cached: tokio::sync::Mutex<Option<Cached>>,
    refreshing: AtomicBool,
    /// Roles with a replica gauge, so a role that leaves is set to zero.
    published: std::sync::Mutex<std::collections::BTreeSet<String>>,
    /// Retrievers seen by a discovery, and when last.
    retrievers_seen: std::sync::Mutex<BTreeMap<String, Instant>>,
}

/// Cached, self-refreshing discovery of the roles on a bus. Cheap to clone.
#[derive(Clone)]
pub struct RoleDirectory {
    inner: Arc<Inner>,
}

impl RoleDirectory {
    pub fn new(bus: Arc<dyn Bus>, ttl: Duration, wait: Duration) -> Self {
        Self {
            inner: Arc::new(Inner {
                bus,
                ttl,
                wait,
                cached: tokio::sync::Mutex::new(None),
                refreshing: AtomicBool::new(false),
                published: std::sync::Mutex::new(std::collections::BTreeSet::new()),
                retrievers_seen: std::sync::Mutex::new(BTreeMap::new()),
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
        let instances = self.inner.bus.discover(self.inner.wait).await?;
        let mut snapshot = RoleSnapshot::from_instances(&instances);
        crate::metrics::record_replicas(&self.inner.published, &snapshot);
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
        Ok(snapshot)
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
