//! Feedback on answers: a user says that the answer to a question was right or wrong,
//! or gives the right answers, and the plan cache learns from it.
//!
//! The question is masked into its template exactly as a lookup masks it (the graph's
//! name index finds the entity mentions), so feedback reaches the plan that a lookup
//! for that question would have replayed. Then:
//! - correct: the plan counts one more success;
//! - incorrect: one more failure; a plan that failed more often than it succeeded is
//!   dropped, so a wrong replayed plan stops being replayed;
//! - the right answers: the (question, answers) pair is verified as `kgmesh cache warm
//!   --import` verifies one (a metapath from the question's entity that reaches the
//!   answers); the plan found becomes the template's plan when it has none.
//!
//! The cache is shared by every user, so one principal (the API credential feedback
//! came with) cannot rewrite it alone:
//! - a correction whose plan differs from the cached one, and `incorrect` on a plan with
//!   verified successes, are held ([`HeldVerdict`]) until `cache.feedback_confirmations`
//!   distinct principals give the same verdict, or one admin does; the same principal
//!   repeating it counts once, and the plan is unchanged meanwhile;
//! - a correction whose plan has a relation that no word of the question explains (the
//!   lexical fit the KG-Linker and the warm-up rank metapaths with, with the cache's
//!   learned cues) is flagged: held until an admin confirms it, however many others
//!   agree;
//! - a principal gets `cache.feedback_per_minute` verdicts a minute (per process;
//!   admins are not limited).
//!
//! [`apply`] is the one implementation, shared by the cache-manager role and by
//! `kgmesh cache feedback`: it changes the in-memory [`PlanCache`], writes every
//! change through the [`PlanStore`] (so replicas following a shared store see it) and
//! audits it there ([`super::audit`]). When the store refuses the write, the in-memory
//! change is undone and the error returned: feedback is never acknowledged without
//! having been persisted.

use std::{
    collections::{HashMap, VecDeque},
    sync::{Mutex, MutexGuard},
    time::{Duration, Instant},
};

use kgmesh_schemas::{
    graph::{Direction, Entity, Metapath},
    messages::cache::{
        CacheEntry, CacheFeedbackReply, Confirmations, Feedback, FeedbackOutcome, Isr, Plan,
        Principal, RelationCue,
    },
};

use super::{
    audit::{AuditAction, AuditEntry, HeldVerdict, HeldVerdicts, Proposal},
    core::{domain_of, entry_key, PlanCache},
    persist::{PersistError, PlanStore},
    template,
    warm::{QaPair, Warmer},
};
use crate::{kg_linker::core::metapath_text, scoring::relevance::Relevance};

/// The question feedback is about, as the cache sees it.
#[derive(Debug, Clone, Copy)]
pub struct Asked<'a> {
    pub question: &'a str,
    /// The question's entity mentions as lookups link them
    /// ([`template::linked_mentions`]); empty without a graph.
    pub mentions: &'a [Entity],
    /// The question's intent; routes to the domain its plan is stored in (the default
    /// domain without a model).
    pub isr: &'a Isr,
    /// The key of the plan a lookup of this question replays from a similar template
    /// ([`PlanCache::near_replay`]), if any: a verdict on the answer is a verdict on
    /// that plan when no plan is stored under the question's own template.
    pub similar: Option<&'a str>,
}

/// Who gives the feedback, and the process's memory of what feedback it took.
#[derive(Clone, Copy)]
pub struct Gate<'a> {
    pub principal: &'a Principal,
    pub keeper: &'a Gatekeeper,
}

/// What one process remembers across feedback: each principal's recent verdicts (for
/// the rate limit) and the held verdicts when the store keeps none. Feedback is
/// applied one at a time per process, so that two verdicts on one key never read the
/// same held set.
#[derive(Default)]
pub struct Gatekeeper {
    recent: Mutex<HashMap<String, VecDeque<Instant>>>,
    held: Mutex<HashMap<String, HeldVerdicts>>,
    serial: tokio::sync::Mutex<()>,
}

const RATE_WINDOW: Duration = Duration::from_secs(60);

impl Gatekeeper {
    /// Counts one verdict of `name` at `now` when fewer than `per_minute` came in the
    /// minute before; false (and not counted) otherwise.
    pub fn admit(&self, name: &str, per_minute: u32, now: Instant) -> bool {
        let mut recent = self
            .recent
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if recent.len() > 10_000 {
            recent.retain(|_, times| {
                times
                    .back()
                    .is_some_and(|last| now.saturating_duration_since(*last) < RATE_WINDOW)
            });
        }
        let times = recent.entry(name.to_owned()).or_default();
        while times
            .front()
            .is_some_and(|first| now.saturating_duration_since(*first) >= RATE_WINDOW)
        {
            times.pop_front();
        }
        if times.len() >= per_minute as usize {
            return false;
        }
        times.push_back(now);
        true
    }

    fn memory(&self) -> MutexGuard<'_, HashMap<String, HeldVerdicts>> {
        self.held
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    async fn load_held(
        &self,
        store: Option<&dyn PlanStore>,
        key: &str,
    ) -> Result<HeldVerdicts, PersistError> {
        match store.filter(|store| store.keeps_held()) {
            Some(store) => store.load_held(key).await,
            None => Ok(self.memory().get(key).cloned().unwrap_or_default()),
        }
    }

    async fn save_held(
        &self,
        store: Option<&dyn PlanStore>,
        key: &str,
        held: &HeldVerdicts,
    ) -> Result<(), PersistError> {
        match store.filter(|store| store.keeps_held()) {
            Some(store) => store.save_held(key, held).await,
            None => {
                let mut memory = self.memory();
                if held.is_empty() {
                    memory.remove(key);
                } else {
                    memory.insert(key.to_owned(), held.clone());
                }
                Ok(())
            }
        }
    }
}

/// One change to mirror in the store.
enum Write {
    Put(String, Box<CacheEntry>),
    Delete(String),
}

/// What feedback changed in memory, to persist (or undo) and audit.
struct Change {
    reply: CacheFeedbackReply,
    key: String,
    /// The entry under `key` before the change.
    previous: Option<CacheEntry>,
    write: Option<Write>,
    /// Keys evicted to make room for a learned plan, with their entries.
    evicted: Vec<(String, Option<CacheEntry>)>,
    /// The held verdicts of `key` to save, when they changed.
    held: Option<HeldVerdicts>,
    /// What a held verdict would write (audited with it).
    proposed: Option<CacheEntry>,
}

impl Change {
    fn reply_only(reply: CacheFeedbackReply, key: String) -> Self {
        Self {
            reply,
            key,
            previous: None,
            write: None,
            evicted: Vec::new(),
            held: None,
            proposed: None,
        }
    }
}

fn reply(outcome: FeedbackOutcome, key: Option<String>, detail: String) -> CacheFeedbackReply {
    CacheFeedbackReply {
        outcome,
        key,
        detail,
        confirmations: None,
    }
}

fn lock(cache: &Mutex<PlanCache>) -> MutexGuard<'_, PlanCache> {
    // As in the role: a panic under the lock costs at worst a stale entry.
    cache
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Applies `verdict` on the answer to `asked`, given by `gate.principal`, to `cache`,
/// and writes and audits the change in `store`. `warmer` verifies corrections
/// (`Feedback::Answers`); without one a correction changes nothing. On a store error
/// nothing has changed.
pub async fn apply(
    cache: &Mutex<PlanCache>,
    store: Option<&dyn PlanStore>,
    warmer: Option<&Warmer>,
    gate: Gate<'_>,
    asked: Asked<'_>,
    verdict: &Feedback,
) -> Result<CacheFeedbackReply, PersistError> {
    let principal = gate.principal;
    let (confirmations, per_minute) = {
        let cache = lock(cache);
        let config = cache.config();
        (
            config.feedback_confirmations.max(1),
            config.feedback_per_minute,
        )
    };
    if !principal.admin
        && !gate
            .keeper
            .admit(&principal.name, per_minute, Instant::now())
    {
        return Ok(reply(
            FeedbackOutcome::Limited,
            None,
            format!(
                "`{}` gave more than {per_minute} verdicts in the last minute: not applied; \
                 send it again later",
                principal.name
            ),
        ));
    }
    let _one_at_a_time = gate.keeper.serial.lock().await;
    let mention_names: Vec<&str> = asked.mentions.iter().map(|m| m.name.as_str()).collect();
    let template = template::mask(asked.question, &mention_names);
    if template::slots(&template) == 0 {
        return Ok(reply(
            FeedbackOutcome::NoPlan,
            None,
            "no entity of the graph is mentioned in the question, so no cached plan can be \
             about it"
                .to_owned(),
        ));
    }
    let key = entry_key(&domain_of(asked.isr), &template);
    // A verdict on an answer a similar template's plan gave is about that plan.
    let (judged_key, judged_template) = {
        let cache = lock(cache);
        match asked
            .similar
            .and_then(|similar| cache.get(similar).map(|e| (similar, e)))
        {
            Some((similar, entry)) if cache.get(&key).is_none() => {
                (similar.to_owned(), entry.template.clone())
            }
            _ => (key.clone(), template.clone()),
        }
    };
    let rules = Rules {
        gate,
        store,
        confirmations,
    };
    let change = match verdict {
        Feedback::Correct => judge(&mut lock(cache), judged_key, &judged_template, true),
        Feedback::Incorrect => {
            let held = lock(cache).get(&judged_key).cloned();
            match held {
                // A plan with verified successes is removed only by agreement.
                Some(held) if held.hits > 0 => {
                    rules
                        .hold(
                            cache,
                            &judged_key,
                            &judged_template,
                            Some(held),
                            Proposal::Remove,
                            None,
                        )
                        .await?
                }
                _ => judge(&mut lock(cache), judged_key, &judged_template, false),
            }
        }
        Feedback::Answers(answers) => {
            let Some(warmer) = warmer else {
                return Ok(reply(
                    FeedbackOutcome::NotVerified,
                    Some(key),
                    "no graph to verify the answers against".to_owned(),
                ));
            };
            let pair = QaPair {
                question: asked.question.to_owned(),
                answers: answers.clone(),
                topic: None,
                line: 0,
            };
            let candidate = match warmer.verify_pair(&pair).await {
                Ok(candidate) => candidate,
                Err(reason) => {
                    return Ok(reply(
                        FeedbackOutcome::NotVerified,
                        Some(key),
                        format!("the answers were not verified ({reason}); the cache is unchanged"),
                    ))
                }
            };
            // Stored where lookups of this question look (the asked ISR's domain and
            // aspect), as `cache warm` stores its entries.
            let mut entry = candidate.entry;
            let mut isr = asked.isr.clone();
            if isr.topic_entities.is_empty() {
                isr.topic_entities = std::mem::take(&mut entry.isr.topic_entities);
            }
            entry.isr = isr;
            let key = entry_key(&domain_of(&entry.isr), &entry.template);
            let (previous, cues) = {
                let cache = lock(cache);
                (
                    cache.get(&key).cloned(),
                    cache.lexicon().cues(&entry.template),
                )
            };
            let same = previous
                .as_ref()
                .is_some_and(|held| held.plan.metapaths == entry.plan.metapaths);
            if same {
                learn(&mut lock(cache), entry)
            } else {
                let far = far_from_question(asked, &entry.plan, &cues).await;
                match (&previous, far) {
                    (None, None) => learn(&mut lock(cache), entry),
                    (_, far) if principal.admin => {
                        let template = entry.template.clone();
                        let found = plan_text(&entry.plan.metapaths);
                        let mut detail = match &previous {
                            Some(held) => format!(
                                "{found} reaches the answers and replaces the cached plan \
                                 ({}) for `{template}`",
                                plan_text(&held.plan.metapaths)
                            ),
                            None => format!(
                                "{found} reaches the answers: now the plan for `{template}`"
                            ),
                        };
                        if let Some(far) = far {
                            detail.push_str(&format!(
                                " (it reads far from the question: {far}; applied by the \
                                 admin `{}`)",
                                principal.name
                            ));
                        }
                        let mut change = install(&mut lock(cache), entry, detail);
                        // Verdicts held on the replaced plan are moot now.
                        change.held = Some(HeldVerdicts::default());
                        change
                    }
                    (_, far) => {
                        let template = entry.template.clone();
                        rules
                            .hold(
                                cache,
                                &key,
                                &template,
                                previous,
                                Proposal::Replace {
                                    entry: Box::new(entry),
                                },
                                far,
                            )
                            .await?
                    }
                }
            }
        }
    };
    persist(cache, store, gate, change).await
}

/// Why `plan` reads far from the question: its relations that no word of the question
/// explains, by the lexical fit the KG-Linker and the warm-up rank metapaths with
/// (relation names' words, and what the cache's verified plans taught about the
/// template's words); `None` when every relation is explained.
async fn far_from_question(asked: Asked<'_>, plan: &Plan, cues: &[RelationCue]) -> Option<String> {
    let names: Vec<&str> = asked.mentions.iter().map(|m| m.name.as_str()).collect();
    let relevance = Relevance::lexical(asked.question, &names).with_cues(cues);
    let metapaths: Vec<&Metapath> = plan.metapaths.iter().collect();
    let texts: Vec<String> = plan.metapaths.iter().map(metapath_text).collect();
    let fits = relevance.metapath_fits(&metapaths, &texts).await;
    let far: Vec<String> = metapaths
        .iter()
        .zip(&fits)
        .filter(|(_, fit)| fit.unexplained_hops > 0)
        .map(|(metapath, fit)| {
            format!(
                "{} of the {} relations of {} explain no word of the question",
                fit.unexplained_hops,
                metapath.steps.len(),
                plan_text(std::slice::from_ref(*metapath))
            )
        })
        .collect();
    (!far.is_empty()).then(|| far.join("; "))
}

/// What holding a verdict needs besides the cache.
struct Rules<'a> {
    gate: Gate<'a>,
    store: Option<&'a dyn PlanStore>,
    /// Distinct principals that apply a held verdict.
    confirmations: u32,
}

impl Rules<'_> {
    /// Counts the principal's voice for `proposal` on the plan under `key` (`held`, as
    /// cached now); applies it when enough distinct principals agree or the principal
    /// is an admin, and holds it otherwise.
    async fn hold(
        &self,
        cache: &Mutex<PlanCache>,
        key: &str,
        template: &str,
        held: Option<CacheEntry>,
        proposal: Proposal,
        far: Option<String>,
    ) -> Result<Change, PersistError> {
        let principal = self.gate.principal;
        let mut set = self.gate.keeper.load_held(self.store, key).await?;
        set.retain_current(held.as_ref().map(|entry| &entry.plan));
        let (at, created) = set.find_or_add(held.as_ref().map(|entry| &entry.plan), proposal);
        let verdict = &mut set.verdicts[at];
        let counted = verdict.principals.insert(principal.name.clone());
        if far.is_some() && verdict.flagged.is_none() {
            verdict.flagged = far;
        }
        let have = u32::try_from(verdict.principals.len()).unwrap_or(u32::MAX);
        let admin_only = verdict.flagged.is_some();
        if principal.admin || (!admin_only && have >= self.confirmations) {
            let verdict = set.verdicts.remove(at);
            let by = agreed_by(&verdict, principal);
            let mut change = match verdict.proposal {
                Proposal::Remove => remove(&mut lock(cache), key, template, &by),
                Proposal::Replace { entry } => {
                    let mut entry = *entry;
                    // As verified as the principals who agreed on it.
                    entry.hits = entry.hits.max(have);
                    let detail = format!(
                        "{} reaches the answers and is now the plan for `{template}`{}, \
                         agreed by {by}",
                        plan_text(&entry.plan.metapaths),
                        match &held {
                            Some(held) =>
                                format!(" instead of {}", plan_text(&held.plan.metapaths)),
                            None => String::new(),
                        }
                    );
                    install(&mut lock(cache), entry, detail)
                }
            };
            change.held = Some(set);
            return Ok(change);
        }
        let need = (!admin_only).then_some(self.confirmations);
        let tally = match need {
            Some(need) => format!("{have} of {need} distinct principals so far"),
            None => format!(
                "{have} principal{} so far",
                if have == 1 { "" } else { "s" }
            ),
        };
        let repeated = if counted {
            String::new()
        } else {
            format!(" (`{}` was counted already)", principal.name)
        };
        let who = match need {
            Some(need) => format!("until {need} distinct principals or an admin give it"),
            None => "until an admin confirms it".to_owned(),
        };
        let verdict = &set.verdicts[at];
        let (detail, proposed) = match &verdict.proposal {
            Proposal::Remove => (
                format!(
                    "the plan for `{template}` has {}: removing a plan with verified \
                     successes is held {who}: {tally}{repeated}",
                    held.as_ref()
                        .map(|held| record(held.hits, held.failures))
                        .unwrap_or_default()
                ),
                None,
            ),
            Proposal::Replace { entry } => {
                let found = plan_text(&entry.plan.metapaths);
                let instead = match &held {
                    Some(held) => format!(
                        "; the cached plan ({}) stays",
                        plan_text(&held.plan.metapaths)
                    ),
                    None => String::new(),
                };
                let why = match &verdict.flagged {
                    Some(far) => format!(" reads far from the question ({far}):"),
                    None => ",".to_owned(),
                };
                (
                    format!(
                        "{found} reaches the answers{why} the correction for `{template}` \
                         is held {who}{instead}: {tally}{repeated}"
                    ),
                    Some((**entry).clone()),
                )
            }
        };
        let changed = created || counted;
        Ok(Change {
            reply: CacheFeedbackReply {
                outcome: FeedbackOutcome::Pending,
                key: Some(key.to_owned()),
                detail,
                confirmations: Some(Confirmations {
                    have,
                    need,
                    flagged: verdict.flagged.clone(),
                }),
            },
            key: key.to_owned(),
            previous: held,
            write: None,
            evicted: Vec::new(),
            held: changed.then_some(set),
            proposed,
        })
    }
}

/// "`a`, `b` and the admin `c`".
fn agreed_by(verdict: &HeldVerdict, principal: &Principal) -> String {
    let mut names: Vec<String> = verdict
        .principals
        .iter()
        .filter(|name| **name != principal.name)
        .map(|name| format!("`{name}`"))
        .collect();
    names.push(if principal.admin {
        format!("the admin `{}`", principal.name)
    } else {
        format!("`{}`", principal.name)
    });
    match names.len() {
        1 => names.remove(0),
        _ => {
            let last = names.pop().unwrap_or_default();
            format!("{} and {last}", names.join(", "))
        }
    }
}

/// Removes the plan under `key`, as agreed by `by`.
fn remove(cache: &mut PlanCache, key: &str, template: &str, by: &str) -> Change {
    let previous = cache.remove(key);
    Change {
        reply: reply(
            FeedbackOutcome::Dropped,
            Some(key.to_owned()),
            format!("the plan for `{template}` is wrong, agreed by {by}: removed"),
        ),
        key: key.to_owned(),
        previous,
        write: Some(Write::Delete(key.to_owned())),
        evicted: Vec::new(),
        held: None,
        proposed: None,
    }
}

/// Makes `entry` its template's plan, whatever was cached.
fn install(cache: &mut PlanCache, entry: CacheEntry, detail: String) -> Change {
    let key = entry_key(&domain_of(&entry.isr), &entry.template);
    let previous = cache.get(&key).cloned();
    let (key, evicted) = cache.replace(entry);
    let kept = cache.get(&key).cloned();
    Change {
        reply: reply(FeedbackOutcome::Learned, Some(key.clone()), detail),
        key: key.clone(),
        previous,
        write: kept.map(|kept| Write::Put(key, Box::new(kept))),
        evicted: evicted.into_iter().map(|key| (key, None)).collect(),
        held: None,
        proposed: None,
    }
}

/// Counts a success or a failure against the plan under `key`.
fn judge(cache: &mut PlanCache, key: String, template: &str, success: bool) -> Change {
    let Some(previous) = cache.get(&key).cloned() else {
        return Change::reply_only(
            reply(
                FeedbackOutcome::NoPlan,
                Some(key.clone()),
                format!("no cached plan for the template `{template}`"),
            ),
            key,
        );
    };
    let dropped = cache.record_outcome(&key, success);
    let (outcome, write) = match (dropped, cache.get(&key)) {
        (false, Some(entry)) if success => (
            FeedbackOutcome::Confirmed,
            Write::Put(key.clone(), Box::new(entry.clone())),
        ),
        (false, Some(entry)) => (
            FeedbackOutcome::Demoted,
            Write::Put(key.clone(), Box::new(entry.clone())),
        ),
        _ => (FeedbackOutcome::Dropped, Write::Delete(key.clone())),
    };
    let (hits, failures) = match cache.get(&key) {
        Some(entry) => (entry.hits, entry.failures),
        None => (
            previous.hits + u32::from(success),
            previous.failures + u32::from(!success),
        ),
    };
    let record = record(hits, failures);
    let detail = match outcome {
        FeedbackOutcome::Dropped => {
            format!("the plan for `{template}` has {record}: removed")
        }
        FeedbackOutcome::Demoted => format!(
            "the plan for `{template}` has {record}; it is removed once its failures \
             outnumber its successes"
        ),
        _ => format!("the plan for `{template}` has {record}"),
    };
    Change {
        reply: reply(outcome, Some(key.clone()), detail),
        key,
        previous: Some(previous),
        write: Some(write),
        evicted: Vec::new(),
        held: None,
        proposed: None,
    }
}

/// Offers the plan a correction verified where no other plan is cached (or the same
/// one is, which it confirms).
fn learn(cache: &mut PlanCache, entry: CacheEntry) -> Change {
    let key = entry_key(&domain_of(&entry.isr), &entry.template);
    let template = entry.template.clone();
    let found = plan_text(&entry.plan.metapaths);
    let previous = cache.get(&key).cloned();
    if let Some(held) = &previous {
        if held.plan.metapaths == entry.plan.metapaths {
            let mut change = judge(cache, key, &template, true);
            change.reply.detail = format!(
                "the cached plan ({found}) reaches the answers; {}",
                change.reply.detail
            );
            return change;
        }
    }
    install(
        cache,
        entry,
        format!("{found} reaches the answers: now the plan for `{template}`"),
    )
}

/// Writes `change` to `store` and audits it there; undoes it in `cache` when the store
/// refuses.
async fn persist(
    cache: &Mutex<PlanCache>,
    store: Option<&dyn PlanStore>,
    gate: Gate<'_>,
    change: Change,
) -> Result<CacheFeedbackReply, PersistError> {
    let principal = gate.principal;
    let Some(store) = store else {
        if let Some(held) = &change.held {
            gate.keeper.save_held(None, &change.key, held).await?;
        }
        return Ok(change.reply);
    };
    let written = match &change.write {
        Some(Write::Put(key, entry)) => store.put(key, entry).await,
        Some(Write::Delete(key)) => store.delete(key).await,
        None => Ok(()),
    };
    if let Err(error) = written {
        let mut cache = lock(cache);
        cache.remove(&change.key);
        if let Some(previous) = change.previous {
            cache.insert(previous);
        }
        return Err(error);
    }
    let action = match (&change.write, change.reply.outcome) {
        (Some(_), FeedbackOutcome::Confirmed) => Some(AuditAction::Confirmed),
        (Some(_), FeedbackOutcome::Demoted) => Some(AuditAction::Demoted),
        (Some(Write::Delete(_)), _) => Some(AuditAction::Removed),
        (Some(_), _) => Some(AuditAction::Learned),
        (None, _) if change.held.is_some() => Some(AuditAction::Held),
        (None, _) => None,
    };
    for (key, entry) in &change.evicted {
        if let Err(error) = store.delete(key).await {
            tracing::warn!(%key, %error, "cannot delete an evicted plan from the store");
            continue;
        }
        let entry = AuditEntry::now(
            principal,
            AuditAction::Evicted,
            key,
            entry.clone(),
            None,
            "evicted to keep its bucket within capacity",
        );
        store.append_audit(&entry).await?;
    }
    if let Some(held) = &change.held {
        gate.keeper
            .save_held(Some(store), &change.key, held)
            .await?;
    }
    if let Some(action) = action {
        let after = match &change.write {
            Some(Write::Put(_, entry)) => Some((**entry).clone()),
            Some(Write::Delete(_)) => None,
            None => change.previous.clone(),
        };
        let mut entry = AuditEntry::now(
            principal,
            action,
            &change.key,
            change.previous.clone(),
            after,
            change.reply.detail.clone(),
        );
        entry.proposed = change.proposed.clone();
        store.append_audit(&entry).await?;
    }
    Ok(change.reply)
}

/// "2 successes and 1 failure".
fn record(hits: u32, failures: u32) -> String {
    let plural = |n: u32, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    format!(
        "{} and {}",
        plural(hits, "success", "successes"),
        plural(failures, "failure", "failures")
    )
}

/// A plan's relation paths in words ("directed_by -> starred_actors (inverse)").
pub fn plan_text(metapaths: &[Metapath]) -> String {
    let paths: Vec<String> = metapaths
        .iter()
        .map(|metapath| {
            metapath
                .steps
                .iter()
                .map(|step| match step.direction {
                    Direction::In => format!("{} (inverse)", step.relation),
                    _ => step.relation.clone(),
                })
                .collect::<Vec<_>>()
                .join(" -> ")
        })
        .collect();
    if paths.is_empty() {
        "a Cypher-only plan".to_owned()
    } else {
        paths.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use async_trait::async_trait;
    use kgmesh_models::lexical::gazetteer::Gazetteer;
    use kgmesh_schemas::{
        graph::RelationStep,
        messages::cache::{CacheEntry, Plan},
    };
    use kgmesh_stores::GraphStore;

    use super::*;
    use crate::cache_manager::{
        audit::AuditAction, core::CacheConfig, persist::FilePlanStore, warm::build_gazetteer,
    };
    use crate::testing::block_on;

    const KG: &str = "\
Heat\tdirected_by\tMichael Mann
Heat\tstarred_actors\tAl Pacino
Heat\tstarred_actors\tRobert De Niro
Collateral\tdirected_by\tMichael Mann
Collateral\tstarred_actors\tTom Cruise
Top Gun\tstarred_actors\tTom Cruise
Top Gun\tdirected_by\tTony Scott
Heat\trelease_year\t1995
";

    struct Fixture {
        graph: Arc<dyn GraphStore>,
        gazetteer: Arc<Gazetteer>,
        cache: Mutex<PlanCache>,
        store: FilePlanStore,
        keeper: Gatekeeper,
        dir: tempfile::TempDir,
    }

    fn user(name: &str) -> Principal {
        Principal {
            name: name.to_owned(),
            admin: false,
        }
    }

    fn admin(name: &str) -> Principal {
        Principal {
            name: name.to_owned(),
            admin: true,
        }
    }

    impl Fixture {
        async fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            let graph = crate::testing::graph_from_tsv(KG);
            let gazetteer = Arc::new(build_gazetteer(graph.as_ref()).await.unwrap());
            Self {
                graph,
                gazetteer,
                cache: Mutex::new(PlanCache::new(CacheConfig::default())),
                store: FilePlanStore::new(dir.path().join("plans.jsonl")),
                keeper: Gatekeeper::default(),
                dir,
            }
        }

        fn store_path(&self) -> std::path::PathBuf {
            self.dir.path().join("plans.jsonl")
        }

        fn mentions(&self, question: &str) -> Vec<Entity> {
            template::linked_mentions(&self.gazetteer, question)
        }

        /// A cached plan for `question`'s template, as the coordinator stores one.
        async fn cache_plan(&self, question: &str, relation: &str, hits: u32) -> String {
            let mentions = self.mentions(question);
            let names: Vec<&str> = mentions.iter().map(|m| m.name.as_str()).collect();
            let entry = CacheEntry {
                question: question.to_owned(),
                template: template::mask(question, &names),
                isr: Isr::default(),
                plan: Plan {
                    entities: mentions.clone(),
                    metapaths: vec![Metapath {
                        steps: vec![RelationStep {
                            relation: relation.to_owned(),
                            direction: Direction::Out,
                        }],
                    }],
                    cypher: Vec::new(),
                },
                answers: vec!["x".to_owned()],
                hits,
                failures: 0,
            };
            let (key, _) = lock(&self.cache).insert(entry.clone());
            self.store.put(&key, &entry).await.unwrap();
            let stored = AuditEntry::now(
                &user("test"),
                AuditAction::Stored,
                &key,
                None,
                Some(entry.clone()),
                "cached by the test",
            );
            self.store.append_audit(&stored).await.unwrap();
            key
        }

        async fn feedback(&self, question: &str, verdict: Feedback) -> CacheFeedbackReply {
            self.feedback_as(&Principal::anonymous(), question, verdict)
                .await
        }

        async fn feedback_as(
            &self,
            principal: &Principal,
            question: &str,
            verdict: Feedback,
        ) -> CacheFeedbackReply {
            let mentions = self.mentions(question);
            let warmer = Warmer::new(self.graph.clone(), self.gazetteer.clone());
            let asked = Asked {
                question,
                mentions: &mentions,
                isr: &Isr::default(),
                similar: None,
            };
            let gate = Gate {
                principal,
                keeper: &self.keeper,
            };
            apply(
                &self.cache,
                Some(&self.store),
                Some(&warmer),
                gate,
                asked,
                &verdict,
            )
            .await
            .unwrap()
        }

        async fn history(&self, key: &str) -> Vec<AuditEntry> {
            self.store.history(Some(key), 100).await.unwrap()
        }

        fn cached(&self, key: &str) -> Option<CacheEntry> {
            lock(&self.cache).get(key).cloned()
        }

        async fn stored(&self, key: &str) -> Option<CacheEntry> {
            self.store
                .load_all()
                .await
                .unwrap()
                .into_iter()
                .find(|(k, _)| k == key)
                .map(|(_, entry)| entry)
        }

        fn replayed(&self, question: &str) -> Option<Plan> {
            let mentions = self.mentions(question);
            lock(&self.cache)
                .lookup(question, &mentions, &Isr::default(), 5)
                .replay
        }
    }

    fn relation(plan: &Plan) -> &str {
        &plan.metapaths[0].steps[0].relation
    }

    #[test]
    fn an_unverified_plan_is_demoted_then_dropped_by_anyone() {
        block_on(async {
            let fixture = Fixture::new().await;
            // Judged by rule only (no success): an example, never replayed.
            let key = fixture
                .cache_plan("who directed Heat", "starred_actors", 0)
                .await;
            let reply = fixture
                .feedback("Who directed Collateral?", Feedback::Incorrect)
                .await;
            assert_eq!(reply.outcome, FeedbackOutcome::Dropped, "{reply:?}");
            assert_eq!(reply.key.as_deref(), Some(key.as_str()));
            assert!(fixture.cached(&key).is_none());
            assert!(
                fixture.stored(&key).await.is_none(),
                "deleted from the store"
            );
            let audit = fixture.history(&key).await;
            assert_eq!(audit[0].action, AuditAction::Removed, "{audit:?}");
            assert_eq!(audit[0].principal, Principal::anonymous());
            assert!(audit[0].before.is_some() && audit[0].after.is_none());

            // Nothing left to judge.
            let reply = fixture
                .feedback("who directed Heat", Feedback::Incorrect)
                .await;
            assert_eq!(reply.outcome, FeedbackOutcome::NoPlan, "{reply:?}");
        });
    }

    #[test]
    fn a_verified_plan_is_removed_only_when_distinct_principals_agree() {
        block_on(async {
            let fixture = Fixture::new().await;
            let key = fixture
                .cache_plan("who directed Heat", "starred_actors", 1)
                .await;
            let before = fixture.cached(&key).unwrap();
            for _ in 0..3 {
                let reply = fixture
                    .feedback_as(
                        &user("mallory"),
                        "who directed Top Gun",
                        Feedback::Incorrect,
                    )
                    .await;
                assert_eq!(reply.outcome, FeedbackOutcome::Pending, "{reply:?}");
                let confirmations = reply.confirmations.unwrap();
                assert_eq!((confirmations.have, confirmations.need), (1, Some(3)));
            }
            assert_eq!(fixture.cached(&key), Some(before.clone()), "unchanged");
            assert_eq!(fixture.stored(&key).await, Some(before.clone()));
            assert!(fixture.replayed("who directed Collateral").is_some());

            let reply = fixture
                .feedback_as(&user("alice"), "who directed Heat", Feedback::Incorrect)
                .await;
            assert_eq!(reply.outcome, FeedbackOutcome::Pending, "{reply:?}");
            assert_eq!(reply.confirmations.unwrap().have, 2);
            let reply = fixture
                .feedback_as(&user("bob"), "who directed Collateral", Feedback::Incorrect)
                .await;
            assert_eq!(reply.outcome, FeedbackOutcome::Dropped, "{reply:?}");
            assert!(
                reply.detail.contains("`alice`, `mallory` and `bob`"),
                "{reply:?}"
            );
            assert!(fixture.cached(&key).is_none());
            assert!(fixture.stored(&key).await.is_none());
            assert!(fixture.replayed("who directed Top Gun").is_none());

            // Newest first: the removal, then one held entry per distinct principal.
            let audit = fixture.history(&key).await;
            let actions: Vec<(AuditAction, &str)> = audit
                .iter()
                .map(|e| (e.action, e.principal.name.as_str()))
                .collect();
            assert_eq!(
                actions[..4],
                [
                    (AuditAction::Removed, "bob"),
                    (AuditAction::Held, "alice"),
                    (AuditAction::Held, "mallory"),
                    (AuditAction::Stored, "test"),
                ][..],
                "{audit:#?}"
            );
            assert_eq!(audit[0].before.as_ref(), Some(&before));
        });
    }

    #[test]
    fn an_admin_removes_a_verified_plan_alone() {
        block_on(async {
            let fixture = Fixture::new().await;
            let key = fixture
                .cache_plan("who directed Heat", "starred_actors", 2)
                .await;
            let reply = fixture
                .feedback_as(&admin("ops"), "who directed Heat", Feedback::Incorrect)
                .await;
            assert_eq!(reply.outcome, FeedbackOutcome::Dropped, "{reply:?}");
            assert!(fixture.cached(&key).is_none());
        });
    }

    #[test]
    fn a_correct_verdict_counts_a_success() {
        block_on(async {
            let fixture = Fixture::new().await;
            // Judged by rule only: an example, not yet replayed.
            let key = fixture
                .cache_plan("who directed Heat", "directed_by", 0)
                .await;
            assert!(fixture.replayed("who directed Top Gun").is_none());
            let reply = fixture
                .feedback("who directed Heat", Feedback::Correct)
                .await;
            assert_eq!(reply.outcome, FeedbackOutcome::Confirmed, "{reply:?}");
            assert_eq!(fixture.cached(&key).map(|e| e.hits), Some(1));
            assert_eq!(fixture.stored(&key).await.map(|e| e.hits), Some(1));
            let replay = fixture.replayed("who directed Top Gun").expect("replayed");
            assert_eq!(replay.entities[0].name, "Top Gun");
        });
    }

    /// The attack: one principal "corrects" who directed Heat with an actor, three
    /// times. The actor's plan (starred_actors) explains no word of "who directed":
    /// flagged, held for an admin, and the cached plan keeps answering.
    #[test]
    fn one_principal_repeating_a_far_correction_changes_nothing() {
        block_on(async {
            let fixture = Fixture::new().await;
            let key = fixture
                .cache_plan("who directed Heat", "directed_by", 0)
                .await;
            let before = fixture.cached(&key).unwrap();
            for _ in 0..3 {
                let reply = fixture
                    .feedback(
                        "who directed Heat",
                        Feedback::Answers(vec!["Al Pacino".to_owned()]),
                    )
                    .await;
                assert_eq!(reply.outcome, FeedbackOutcome::Pending, "{reply:?}");
                let confirmations = reply.confirmations.clone().unwrap();
                assert_eq!(confirmations.have, 1, "the same principal counts once");
                assert_eq!(confirmations.need, None, "only an admin: {reply:?}");
                let flagged = confirmations.flagged.expect("flagged");
                assert!(flagged.contains("starred_actors"), "{flagged}");
                assert!(
                    reply.detail.contains("reads far from the question"),
                    "{reply:?}"
                );
            }
            assert_eq!(fixture.cached(&key), Some(before.clone()));
            assert_eq!(fixture.stored(&key).await, Some(before));
            // Other principals agreeing does not make a far plan fit.
            for name in ["alice", "bob", "carol"] {
                let reply = fixture
                    .feedback_as(
                        &user(name),
                        "who directed Collateral",
                        Feedback::Answers(vec!["Tom Cruise".to_owned()]),
                    )
                    .await;
                assert_eq!(reply.outcome, FeedbackOutcome::Pending, "{reply:?}");
            }
            assert_eq!(relation(&fixture.cached(&key).unwrap().plan), "directed_by");
            let held = fixture.store.load_held(&key).await.unwrap();
            assert_eq!(held.verdicts.len(), 1, "{held:?}");
            assert_eq!(held.verdicts[0].principals.len(), 4);
        });
    }

    #[test]
    fn a_conflicting_correction_applies_once_three_principals_agree() {
        block_on(async {
            let fixture = Fixture::new().await;
            let key = fixture
                .cache_plan("who directed Heat", "starred_actors", 1)
                .await;
            let wrong = fixture.cached(&key).unwrap();
            let correct = |question: &str, answer: &str| {
                (
                    question.to_owned(),
                    Feedback::Answers(vec![answer.to_owned()]),
                )
            };
            let votes = [
                ("alice", correct("who directed Top Gun", "Tony Scott")),
                ("alice", correct("who directed Heat", "Michael Mann")),
                ("bob", correct("who directed Collateral", "Michael Mann")),
            ];
            for (at, (name, (question, verdict))) in votes.into_iter().enumerate() {
                let reply = fixture.feedback_as(&user(name), &question, verdict).await;
                assert_eq!(reply.outcome, FeedbackOutcome::Pending, "{reply:?}");
                let confirmations = reply.confirmations.clone().unwrap();
                assert_eq!(confirmations.have, [1, 1, 2][at], "{reply:?}");
                assert_eq!(confirmations.need, Some(3));
                assert_eq!(confirmations.flagged, None);
                assert_eq!(fixture.cached(&key), Some(wrong.clone()), "held");
            }
            let reply = fixture
                .feedback_as(
                    &user("carol"),
                    "who directed Heat",
                    Feedback::Answers(vec!["Michael Mann".to_owned()]),
                )
                .await;
            assert_eq!(reply.outcome, FeedbackOutcome::Learned, "{reply:?}");
            let learned = fixture.cached(&key).expect("cached");
            assert_eq!(relation(&learned.plan), "directed_by");
            assert_eq!(learned.hits, 3, "as verified as the principals who agreed");
            assert_eq!(fixture.stored(&key).await, Some(learned.clone()));
            let replay = fixture
                .replayed("who directed Collateral")
                .expect("replayed");
            assert_eq!(relation(&replay), "directed_by");
            assert!(fixture.store.load_held(&key).await.unwrap().is_empty());

            let audit = fixture.history(&key).await;
            assert_eq!(audit[0].action, AuditAction::Learned, "{audit:#?}");
            assert_eq!(audit[0].principal, user("carol"));
            assert_eq!(audit[0].before.as_ref(), Some(&wrong));
            assert_eq!(audit[0].after.as_ref(), Some(&learned));
            assert_eq!(audit[1].action, AuditAction::Held);
            assert_eq!(
                audit[1].proposed.as_ref().map(|e| relation(&e.plan)),
                Some("directed_by")
            );

            // Reverting the learned plan brings the old one back, audited.
            let reverted = crate::cache_manager::audit::revert(
                &fixture.store,
                audit[0].id,
                &Principal::local(),
            )
            .await
            .unwrap();
            assert_eq!(reverted.action, AuditAction::Reverted);
            assert_eq!(reverted.before.as_ref(), Some(&learned));
            assert_eq!(reverted.after.as_ref(), Some(&wrong));
            assert_eq!(fixture.stored(&key).await, Some(wrong));
            assert_eq!(fixture.history(&key).await[0].id, reverted.id);
            assert!(reverted.id > audit[0].id);
        });
    }

    #[test]
    fn an_admin_correction_applies_alone_even_a_far_one() {
        block_on(async {
            let fixture = Fixture::new().await;
            let key = fixture
                .cache_plan("who directed Heat", "starred_actors", 1)
                .await;
            let reply = fixture
                .feedback_as(
                    &admin("ops"),
                    "who directed Top Gun",
                    Feedback::Answers(vec!["Tony Scott".to_owned()]),
                )
                .await;
            assert_eq!(reply.outcome, FeedbackOutcome::Learned, "{reply:?}");
            assert_eq!(relation(&fixture.cached(&key).unwrap().plan), "directed_by");
            // The admin also applies a flagged one, and the reply says it was far.
            let reply = fixture
                .feedback_as(
                    &admin("ops"),
                    "who directed Heat",
                    Feedback::Answers(vec!["Al Pacino".to_owned()]),
                )
                .await;
            assert_eq!(reply.outcome, FeedbackOutcome::Learned, "{reply:?}");
            assert!(reply.detail.contains("reads far"), "{reply:?}");
            assert_eq!(
                relation(&fixture.cached(&key).unwrap().plan),
                "starred_actors"
            );
        });
    }

    #[test]
    fn a_principal_over_its_rate_is_limited_and_others_are_not() {
        block_on(async {
            let fixture = Fixture::new().await;
            let key = fixture
                .cache_plan("who directed Heat", "directed_by", 1)
                .await;
            let per_minute = CacheConfig::default().feedback_per_minute;
            for _ in 0..per_minute {
                let reply = fixture
                    .feedback_as(&user("eager"), "who directed Heat", Feedback::Correct)
                    .await;
                assert_eq!(reply.outcome, FeedbackOutcome::Confirmed, "{reply:?}");
            }
            let reply = fixture
                .feedback_as(&user("eager"), "who directed Heat", Feedback::Correct)
                .await;
            assert_eq!(reply.outcome, FeedbackOutcome::Limited, "{reply:?}");
            assert!(reply.detail.contains("eager"), "{reply:?}");
            let hits = fixture.cached(&key).unwrap().hits;
            assert_eq!(hits, 1 + per_minute, "the limited verdict changed nothing");
            let reply = fixture
                .feedback_as(&user("calm"), "who directed Heat", Feedback::Correct)
                .await;
            assert_eq!(reply.outcome, FeedbackOutcome::Confirmed, "{reply:?}");
            // The window slides: a minute later the principal is served again.
            let later = Instant::now() + RATE_WINDOW;
            assert!(fixture.keeper.admit("eager", per_minute, later));
        });
    }

    #[test]
    fn a_correction_for_an_uncached_template_is_learned() {
        block_on(async {
            let fixture = Fixture::new().await;
            let reply = fixture
                .feedback(
                    "which actors starred in Top Gun",
                    Feedback::Answers(vec!["Tom Cruise".to_owned()]),
                )
                .await;
            assert_eq!(reply.outcome, FeedbackOutcome::Learned, "{reply:?}");
            let replay = fixture
                .replayed("which actors starred in Heat")
                .expect("replayed");
            assert_eq!(relation(&replay), "starred_actors");
        });
    }

    #[test]
    fn feedback_that_finds_nothing_changes_nothing() {
        block_on(async {
            let fixture = Fixture::new().await;
            let key = fixture
                .cache_plan("who directed Heat", "directed_by", 1)
                .await;
            let before = std::fs::read_to_string(fixture.store_path()).unwrap();
            // Another template.
            let reply = fixture
                .feedback("when was Heat released", Feedback::Incorrect)
                .await;
            assert_eq!(reply.outcome, FeedbackOutcome::NoPlan, "{reply:?}");
            assert!(reply.key.is_some());
            // No entity of the graph in the question: no template at all.
            let reply = fixture.feedback("who directed it", Feedback::Correct).await;
            assert_eq!(reply.outcome, FeedbackOutcome::NoPlan, "{reply:?}");
            assert_eq!(reply.key, None);
            // Answers the graph does not hold cannot be verified.
            let reply = fixture
                .feedback(
                    "who directed Heat",
                    Feedback::Answers(vec!["Stanley Kubrick".to_owned()]),
                )
                .await;
            assert_eq!(reply.outcome, FeedbackOutcome::NotVerified, "{reply:?}");
            assert_eq!(reply.key.as_deref(), Some(key.as_str()));
            assert_eq!(
                fixture.cached(&key).map(|e| (e.hits, e.failures)),
                Some((1, 0))
            );
            assert_eq!(
                std::fs::read_to_string(fixture.store_path()).unwrap(),
                before
            );
        });
    }

    /// A store that refuses every write.
    struct Refusing;

    #[async_trait]
    impl PlanStore for Refusing {
        async fn load_every(&self) -> Result<Vec<(String, CacheEntry)>, PersistError> {
            Ok(Vec::new())
        }
        async fn put(&self, _key: &str, _entry: &CacheEntry) -> Result<(), PersistError> {
            Err(PersistError::Remote("refused".to_owned()))
        }
        async fn delete(&self, _key: &str) -> Result<(), PersistError> {
            Err(PersistError::Remote("refused".to_owned()))
        }
    }

    #[test]
    fn a_refused_write_is_an_error_and_undone() {
        block_on(async {
            let fixture = Fixture::new().await;
            let key = fixture
                .cache_plan("who directed Heat", "starred_actors", 0)
                .await;
            let question = "who directed Top Gun";
            let mentions = fixture.mentions(question);
            let warmer = Warmer::new(fixture.graph.clone(), fixture.gazetteer.clone());
            let asked = Asked {
                question,
                mentions: &mentions,
                isr: &Isr::default(),
                similar: None,
            };
            for verdict in [
                Feedback::Incorrect,
                Feedback::Correct,
                Feedback::Answers(vec!["Tony Scott".to_owned()]),
            ] {
                let gate = Gate {
                    principal: &Principal::local(),
                    keeper: &fixture.keeper,
                };
                let result = apply(
                    &fixture.cache,
                    Some(&Refusing),
                    Some(&warmer),
                    gate,
                    asked,
                    &verdict,
                )
                .await;
                assert!(result.is_err(), "{verdict:?}: {result:?}");
                let held = fixture.cached(&key).expect("still cached");
                assert_eq!(relation(&held.plan), "starred_actors", "{verdict:?}");
                assert_eq!((held.hits, held.failures), (0, 0), "{verdict:?}");
            }
        });
    }
}
