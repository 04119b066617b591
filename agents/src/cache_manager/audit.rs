//! The plan cache's audit and its held verdicts.
//!
//! Every change to a plan (stored by a verified run, imported by `cache warm`, counted,
//! replaced or removed by feedback, evicted, held for confirmation, reverted) is one
//! [`AuditEntry`]: who, when, which key, the entry before and after. The audit lives
//! where the plans live ([`super::persist::PlanStore::append_audit`]): beside the
//! cache file as an append-only, synced JSON-lines log in embedded mode, in a
//! JetStream stream beside the KV bucket in distributed mode. `kgmesh cache history`
//! reads it and `kgmesh cache revert` restores an entry's `before`.
//!
//! A verdict that one principal may not apply alone (a correction that conflicts with
//! a cached plan, the removal of a plan with verified successes, a correction whose
//! plan reads far from the question) is a [`HeldVerdict`], kept with the plan's key in
//! a [`HeldVerdicts`] set until enough distinct principals or an admin agree.

use std::collections::BTreeSet;

use kgmesh_schemas::messages::cache::{CacheEntry, Plan, Principal};
use serde::{Deserialize, Serialize};

use super::core::same_plan;

/// What changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditAction {
    /// A run's verified plan was stored.
    Stored,
    /// `kgmesh cache warm` imported a plan.
    Warmed,
    /// Feedback counted a success.
    Confirmed,
    /// Feedback counted a failure; the plan stays.
    Demoted,
    /// Feedback removed the plan.
    Removed,
    /// A verified correction became the plan.
    Learned,
    /// A verdict is held for confirmation (created, or confirmed by one more
    /// principal); the plan is unchanged, `proposed` is what it would become.
    Held,
    /// Removed to keep its bucket within capacity.
    Evicted,
    /// `kgmesh cache revert` restored an earlier state.
    Reverted,
}

impl AuditAction {
    pub fn as_str(self) -> &'static str {
        match self {
            AuditAction::Stored => "stored",
            AuditAction::Warmed => "warmed",
            AuditAction::Confirmed => "confirmed",
            AuditAction::Demoted => "demoted",
            AuditAction::Removed => "removed",
            AuditAction::Learned => "learned",
            AuditAction::Held => "held",
            AuditAction::Evicted => "evicted",
            AuditAction::Reverted => "reverted",
        }
    }
}

/// One change to the plan cache.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// Assigned by the store when appended: the log's sequence (embedded), the
    /// stream's sequence (JetStream). Increasing; what `cache revert` names.
    #[serde(default)]
    pub id: u64,
    pub at_unix_ms: u64,
    pub principal: Principal,
    pub action: AuditAction,
    pub key: String,
    /// The entry under `key` before the change (`None`: there was none).
    pub before: Option<CacheEntry>,
    /// The entry under `key` after the change (`None`: removed).
    pub after: Option<CacheEntry>,
    /// For [`AuditAction::Held`]: the entry the held verdict would write (`None` for a
    /// removal).
    #[serde(default)]
    pub proposed: Option<CacheEntry>,
    pub detail: String,
}

impl AuditEntry {
    /// An entry stamped now; the store assigns its id.
    pub fn now(
        principal: &Principal,
        action: AuditAction,
        key: &str,
        before: Option<CacheEntry>,
        after: Option<CacheEntry>,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            id: 0,
            at_unix_ms: unix_ms(),
            principal: principal.clone(),
            action,
            key: key.to_owned(),
            before,
            after,
            proposed: None,
            detail: detail.into(),
        }
    }
}

pub fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Who stores the plan of a verified run (the run has no API principal of its own).
pub fn verified_run() -> Principal {
    Principal {
        name: "verified-run".to_owned(),
        admin: false,
    }
}

/// What a held verdict would do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Proposal {
    /// Remove the plan (`Incorrect` verdicts on a plan with verified successes).
    Remove,
    /// Make this the plan (a verified correction).
    Replace { entry: Box<CacheEntry> },
}

impl Proposal {
    fn same(&self, other: &Proposal) -> bool {
        match (self, other) {
            (Proposal::Remove, Proposal::Remove) => true,
            (Proposal::Replace { entry: a }, Proposal::Replace { entry: b }) => {
                a.plan.metapaths == b.plan.metapaths && a.plan.cypher.len() == b.plan.cypher.len()
            }
            _ => false,
        }
    }
}

/// A verdict held until enough distinct principals (or an admin) agree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldVerdict {
    /// The plan it is against, as cached when it was first proposed (`None`: no plan
    /// was cached). Once the cached plan changes the verdict is stale and forgotten.
    pub against: Option<Plan>,
    pub proposal: Proposal,
    /// Names of the distinct principals who gave it.
    pub principals: BTreeSet<String>,
    /// Why only an admin may apply it, when the plan reads far from the question.
    #[serde(default)]
    pub flagged: Option<String>,
    pub since_unix_ms: u64,
}

/// The verdicts held on one key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HeldVerdicts {
    pub verdicts: Vec<HeldVerdict>,
}

impl HeldVerdicts {
    /// Forgets the verdicts made against another plan than `held`.
    pub fn retain_current(&mut self, held: Option<&Plan>) {
        self.verdicts
            .retain(|verdict| match (&verdict.against, held) {
                (None, None) => true,
                (Some(a), Some(b)) => same_plan(a, b),
                _ => false,
            });
    }

    /// The held verdict that proposes what `proposal` does, created when there is
    /// none (then the flag says so).
    pub fn find_or_add(&mut self, against: Option<&Plan>, proposal: Proposal) -> (usize, bool) {
        if let Some(at) = self
            .verdicts
            .iter()
            .position(|verdict| verdict.proposal.same(&proposal))
        {
            return (at, false);
        }
        self.verdicts.push(HeldVerdict {
            against: against.cloned(),
            proposal,
            principals: BTreeSet::new(),
            flagged: None,
            since_unix_ms: unix_ms(),
        });
        (self.verdicts.len() - 1, true)
    }

    pub fn is_empty(&self) -> bool {
        self.verdicts.is_empty()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RevertError {
    #[error("no audit entry {0} (see `kgmesh cache history`)")]
    NoEntry(u64),
    #[error(transparent)]
    Persist(#[from] super::persist::PersistError),
}

/// Restores the entry that audit entry `id` changed to its state before that change
/// (the plan it held, or none), on behalf of `principal`, and audits the revert. The
/// verdicts held on that key are forgotten (they were about the plan being replaced).
/// Replicas that follow a shared store see the change; an embedded cache reads it at
/// its next start.
pub async fn revert(
    store: &dyn super::persist::PlanStore,
    id: u64,
    principal: &Principal,
) -> Result<AuditEntry, RevertError> {
    let Some(target) = store.audit_entry(id).await? else {
        return Err(RevertError::NoEntry(id));
    };
    let current = store
        .load_every()
        .await?
        .into_iter()
        .find(|(key, _)| *key == target.key)
        .map(|(_, entry)| entry);
    match &target.before {
        Some(before) => store.put(&target.key, before).await?,
        None if current.is_some() => store.delete(&target.key).await?,
        None => {}
    }
    store
        .save_held(&target.key, &HeldVerdicts::default())
        .await?;
    let mut entry = AuditEntry::now(
        principal,
        AuditAction::Reverted,
        &target.key,
        current,
        target.before.clone(),
        format!(
            "reverts entry {id} ({} by `{}`)",
            target.action.as_str(),
            target.principal.name
        ),
    );
    if let Some(new_id) = store.append_audit(&entry).await? {
        entry.id = new_id;
    }
    Ok(entry)
}
