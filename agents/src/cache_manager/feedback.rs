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
//!   answers); the plan found is offered to the cache like a plan verified once, and a
//!   different cached plan for the template counts a failure.
//!
//! [`apply`] is the one implementation, shared by the cache-manager role and by
//! `kgmesh cache feedback`: it changes the in-memory [`PlanCache`] and writes every
//! change through the [`PlanStore`], so replicas following a shared store see it. When
//! the store refuses the write, the in-memory change is undone and the error returned:
//! feedback is never acknowledged without having been persisted.

use std::sync::{Mutex, MutexGuard};

use kgmesh_schemas::{
    graph::{Direction, Entity, Metapath},
    messages::cache::{CacheEntry, CacheFeedbackReply, Feedback, FeedbackOutcome, Isr},
};

use super::{
    core::{domain_of, entry_key, PlanCache},
    persist::{PersistError, PlanStore},
    template,
    warm::{QaPair, Warmer},
};

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

/// One change to mirror in the store.
enum Write {
    Put(String, Box<CacheEntry>),
    Delete(String),
}

/// What feedback changed in memory, to persist (or undo).
struct Change {
    reply: CacheFeedbackReply,
    key: String,
    /// The entry under `key` before the change.
    previous: Option<CacheEntry>,
    write: Option<Write>,
    /// Keys evicted to make room for a learned plan.
    evicted: Vec<String>,
}

fn lock(cache: &Mutex<PlanCache>) -> MutexGuard<'_, PlanCache> {
    // As in the role: a panic under the lock costs at worst a stale entry.
    cache
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Applies `verdict` on the answer to `asked` to `cache`, and writes the change to
/// `store`. `warmer` verifies corrections (`Feedback::Answers`); without one a
/// correction changes nothing. On a store error nothing has changed.
pub async fn apply(
    cache: &Mutex<PlanCache>,
    store: Option<&dyn PlanStore>,
    warmer: Option<&Warmer>,
    asked: Asked<'_>,
    verdict: &Feedback,
) -> Result<CacheFeedbackReply, PersistError> {
    let mention_names: Vec<&str> = asked.mentions.iter().map(|m| m.name.as_str()).collect();
    let template = template::mask(asked.question, &mention_names);
    if template::slots(&template) == 0 {
        return Ok(CacheFeedbackReply {
            outcome: FeedbackOutcome::NoPlan,
            key: None,
            detail: "no entity of the graph is mentioned in the question, so no cached plan \
                     can be about it"
                .to_owned(),
        });
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
    let change = match verdict {
        Feedback::Correct => judge(&mut lock(cache), judged_key, &judged_template, true),
        Feedback::Incorrect => judge(&mut lock(cache), judged_key, &judged_template, false),
        Feedback::Answers(answers) => {
            let Some(warmer) = warmer else {
                return Ok(CacheFeedbackReply {
                    outcome: FeedbackOutcome::NotVerified,
                    key: Some(key),
                    detail: "no graph to verify the answers against".to_owned(),
                });
            };
            let pair = QaPair {
                question: asked.question.to_owned(),
                answers: answers.clone(),
                topic: None,
                line: 0,
            };
            match warmer.verify_pair(&pair).await {
                Ok(candidate) => {
                    // Stored where lookups of this question look (the asked ISR's
                    // domain and aspect), as `cache warm` stores its entries.
                    let mut entry = candidate.entry;
                    let mut isr = asked.isr.clone();
                    if isr.topic_entities.is_empty() {
                        isr.topic_entities = std::mem::take(&mut entry.isr.topic_entities);
                    }
                    entry.isr = isr;
                    learn(&mut lock(cache), entry)
                }
                Err(reason) => {
                    return Ok(CacheFeedbackReply {
                        outcome: FeedbackOutcome::NotVerified,
                        key: Some(key),
                        detail: format!(
                            "the answers were not verified ({reason}); the cache is unchanged"
                        ),
                    })
                }
            }
        }
    };
    persist(cache, store, change).await
}

/// Counts a success or a failure against the plan under `key`.
fn judge(cache: &mut PlanCache, key: String, template: &str, success: bool) -> Change {
    let Some(previous) = cache.get(&key).cloned() else {
        return Change {
            reply: CacheFeedbackReply {
                outcome: FeedbackOutcome::NoPlan,
                key: Some(key.clone()),
                detail: format!("no cached plan for the template `{template}`"),
            },
            key,
            previous: None,
            write: None,
            evicted: Vec::new(),
        };
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
        reply: CacheFeedbackReply {
            outcome,
            key: Some(key.clone()),
            detail,
        },
        key,
        previous: Some(previous),
        write: Some(write),
        evicted: Vec::new(),
    }
}

/// Offers the plan a correction verified: the same plan as the cached one confirms it;
/// a different one counts a failure against the cached plan and takes its place
/// unless the cached plan is still the better verified.
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
        cache.record_outcome(&key, false);
    }
    let offered = cache.offer(entry);
    let kept = cache.get(&offered.key).cloned();
    let (outcome, write, detail) = match (&previous, kept) {
        (_, Some(kept)) if offered.kept => (
            FeedbackOutcome::Learned,
            Some(Write::Put(key.clone(), Box::new(kept))),
            match &previous {
                Some(held) => format!(
                    "{found} reaches the answers and replaces the cached plan ({}) for `{template}`",
                    plan_text(&held.plan.metapaths)
                ),
                None => format!("{found} reaches the answers: now the plan for `{template}`"),
            },
        ),
        (Some(held), Some(kept)) => (
            FeedbackOutcome::Demoted,
            Some(Write::Put(key.clone(), Box::new(kept.clone()))),
            format!(
                "{found} reaches the answers, but the cached plan ({}) for `{template}` has \
                 {}: it stays, demoted",
                plan_text(&held.plan.metapaths),
                record(kept.hits, kept.failures)
            ),
        ),
        // Not kept and nothing held: cannot happen (an offer to an empty key is kept);
        // report it as unchanged rather than guess.
        _ => (
            FeedbackOutcome::NotVerified,
            None,
            format!("{found} reaches the answers but the cache did not take it"),
        ),
    };
    Change {
        reply: CacheFeedbackReply {
            outcome,
            key: Some(key.clone()),
            detail,
        },
        key,
        previous,
        write,
        evicted: offered.evicted,
    }
}

/// Writes `change` to `store`; undoes it in `cache` when the store refuses.
async fn persist(
    cache: &Mutex<PlanCache>,
    store: Option<&dyn PlanStore>,
    change: Change,
) -> Result<CacheFeedbackReply, PersistError> {
    let Some(store) = store else {
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
    for key in change.evicted {
        if let Err(error) = store.delete(&key).await {
            tracing::warn!(%key, %error, "cannot delete an evicted plan from the store");
        }
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

fn plan_text(metapaths: &[Metapath]) -> String {
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
    use crate::cache_manager::{core::CacheConfig, persist::FilePlanStore, warm::build_gazetteer};
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
        dir: tempfile::TempDir,
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
            key
        }

        async fn feedback(&self, question: &str, verdict: Feedback) -> CacheFeedbackReply {
            let mentions = self.mentions(question);
            let warmer = Warmer::new(self.graph.clone(), self.gazetteer.clone());
            let asked = Asked {
                question,
                mentions: &mentions,
                isr: &Isr::default(),
                similar: None,
            };
            apply(
                &self.cache,
                Some(&self.store),
                Some(&warmer),
                asked,
                &verdict,
            )
            .await
            .unwrap()
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
    fn a_wrong_plan_is_demoted_then_dropped_and_no_longer_replayed() {
        block_on(async {
            let fixture = Fixture::new().await;
            let key = fixture
                .cache_plan("who directed Heat", "starred_actors", 1)
                .await;
            let replay = fixture.replayed("who directed Top Gun").expect("replayed");
            assert_eq!(relation(&replay), "starred_actors");

            let reply = fixture
                .feedback("Who directed Collateral?", Feedback::Incorrect)
                .await;
            assert_eq!(reply.outcome, FeedbackOutcome::Demoted, "{reply:?}");
            assert_eq!(reply.key.as_deref(), Some(key.as_str()));
            let demoted = fixture.cached(&key).expect("still cached");
            assert_eq!((demoted.hits, demoted.failures), (1, 1));
            assert_eq!(fixture.stored(&key).await, Some(demoted), "written through");

            let reply = fixture
                .feedback("who directed Top Gun", Feedback::Incorrect)
                .await;
            assert_eq!(reply.outcome, FeedbackOutcome::Dropped, "{reply:?}");
            assert!(fixture.cached(&key).is_none());
            assert!(
                fixture.stored(&key).await.is_none(),
                "deleted from the store"
            );
            assert!(fixture.replayed("who directed Top Gun").is_none());

            // Nothing left to judge.
            let reply = fixture
                .feedback("who directed Heat", Feedback::Incorrect)
                .await;
            assert_eq!(reply.outcome, FeedbackOutcome::NoPlan, "{reply:?}");
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

    #[test]
    fn a_verified_correction_replaces_a_wrong_plan() {
        block_on(async {
            let fixture = Fixture::new().await;
            let key = fixture
                .cache_plan("who directed Heat", "starred_actors", 1)
                .await;
            let reply = fixture
                .feedback(
                    "who directed Top Gun",
                    Feedback::Answers(vec!["Tony Scott".to_owned()]),
                )
                .await;
            assert_eq!(reply.outcome, FeedbackOutcome::Learned, "{reply:?}");
            assert_eq!(reply.key.as_deref(), Some(key.as_str()));
            let learned = fixture.cached(&key).expect("cached");
            assert_eq!(relation(&learned.plan), "directed_by");
            assert_eq!((learned.hits, learned.failures), (1, 0));
            assert_eq!(fixture.stored(&key).await, Some(learned));
            let replay = fixture
                .replayed("who directed Collateral")
                .expect("replayed");
            assert_eq!(relation(&replay), "directed_by");

            // The same answers again confirm the plan now cached.
            let reply = fixture
                .feedback(
                    "who directed Heat",
                    Feedback::Answers(vec!["Michael Mann".to_owned()]),
                )
                .await;
            assert_eq!(reply.outcome, FeedbackOutcome::Confirmed, "{reply:?}");
            assert_eq!(fixture.cached(&key).map(|e| e.hits), Some(2));
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
    fn a_well_verified_plan_outlasts_one_correction() {
        block_on(async {
            let fixture = Fixture::new().await;
            let key = fixture
                .cache_plan("who directed Heat", "starred_actors", 3)
                .await;
            let reply = fixture
                .feedback(
                    "who directed Top Gun",
                    Feedback::Answers(vec!["Tony Scott".to_owned()]),
                )
                .await;
            assert_eq!(reply.outcome, FeedbackOutcome::Demoted, "{reply:?}");
            let held = fixture.cached(&key).expect("kept");
            assert_eq!(relation(&held.plan), "starred_actors");
            assert_eq!((held.hits, held.failures), (3, 1));
            assert_eq!(fixture.stored(&key).await, Some(held));
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
                let result = apply(
                    &fixture.cache,
                    Some(&Refusing),
                    Some(&warmer),
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
