//! The in-memory plan index: domain → aspect buckets, BM25 relevance over question
//! templates, MMR selection, LRU-bounded buckets, and exact-template replay.
//!
//! Scoring is bounded per lookup. Each aspect bucket keeps its own postings (term →
//! entry, term frequency, entry length), so a lookup scores only its bucket, at most
//! `bucket_capacity` entries whatever the cache size (CacheRAG's hard pruning). Only
//! when the bucket holds fewer than k relevant plans is the whole domain searched,
//! and there query terms are processed rarest first and common terms (which carry
//! little BM25 weight) only re-score candidates already found, so that search too
//! touches a bounded number of postings.

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    hash::{BuildHasherDefault, Hasher},
};

use kgmesh_schemas::{
    graph::Entity,
    messages::cache::{CacheEntry, FewShotExample, Isr, Plan, RelationCue},
};

use super::{
    lexicon::{learnable, Lexicon},
    template::{self, ENTITY_SLOT},
};

/// Tuning of the cache (CacheRAG §5.12 defaults).
#[derive(Debug, Clone, PartialEq)]
pub struct CacheConfig {
    /// Examples returned (k).
    pub k: usize,
    /// MMR trade-off between relevance (1.0) and diversity (0.0).
    pub lambda: f32,
    /// Below this normalized relevance (0..=1) an entry is not returned at all.
    pub min_relevance: f32,
    /// Entries kept per aspect bucket; the least recently used is evicted beyond it.
    pub bucket_capacity: usize,
    /// Candidates considered by MMR.
    pub candidate_pool: usize,
    /// Postings touched per lookup: rarest terms are scanned while this allows, later
    /// (commoner, lower-weight) terms only re-score the candidates found, and terms
    /// beyond it are left out. Bounds a lookup whatever the cache size.
    pub max_postings_scanned: usize,
    /// Verifications (`hits`) a plan needs before it is replayed without a model. Plans
    /// imported by `kgmesh cache warm` (checked against gold answers) and plans a
    /// model judged complete start at 1; a plan only the rule-based judge accepted
    /// starts at 0 and serves as a few-shot example, never as a replay: replaying it
    /// would repeat one mistake for every later question of its template (two
    /// questions agreeing is no proof: the rule errs the same way for both).
    pub replay_min_hits: u32,
    /// With an embedder: a question whose template has no plan replays the plan of the
    /// most similar template when their similarity (embedding cosine and BM25
    /// relevance mixed, [`NEAR_EMBEDDING_WEIGHT`]) reaches this, and the plan fits the
    /// question ([`PlanCache::near_replay`]). Above 1: never.
    pub near_replay_min: f32,
    /// Distinct principals whose agreeing feedback replaces a cached plan with a
    /// conflicting correction, or removes a plan with verified successes; an admin
    /// principal does it alone (see [`super::feedback`]).
    pub feedback_confirmations: u32,
    /// Verdicts a (non-admin) principal may give per minute, per process; more are
    /// answered `limited` and change nothing.
    pub feedback_per_minute: u32,
}

impl Default for CacheConfig {
    fn default() -> Self {
        Self {
            k: 5,
            lambda: 0.5,
            min_relevance: 0.3,
            bucket_capacity: 10_000,
            candidate_pool: 50,
            max_postings_scanned: 20_000,
            replay_min_hits: 1,
            near_replay_min: 0.95,
            feedback_confirmations: 3,
            feedback_per_minute: 30,
        }
    }
}

/// What a lookup found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Lookup {
    pub examples: Vec<FewShotExample>,
    /// A stored plan for the same template, rebound to the new question's entities.
    pub replay: Option<Plan>,
    /// Keys of the entries behind `examples` (for feedback).
    pub keys: Vec<String>,
    /// What the question's words meant in the verified plans (see [`Lexicon`]).
    pub cues: Vec<RelationCue>,
}

/// A similar template replays a plan only by this mix of embedding cosine and BM25
/// relevance, the embedding's share first: the embedding reads paraphrase ("kid" for
/// "child"), BM25 keeps the words that differ in view.
pub const NEAR_EMBEDDING_WEIGHT: f32 = 0.7;

/// The templates a question may replay a similar plan from, found before the question
/// is embedded ([`PlanCache::near_candidates`]).
#[derive(Debug, Clone, PartialEq)]
pub struct NearCandidates {
    template: String,
    /// (slot, BM25 relevance)
    pool: Vec<(u64, f32)>,
}

impl NearCandidates {
    /// The question's template, the text to embed ([`embedding_text`]).
    pub fn template(&self) -> &str {
        &self.template
    }

    pub fn is_empty(&self) -> bool {
        self.pool.is_empty()
    }
}

/// A plan replayed from a similar question's template.
#[derive(Debug, Clone, PartialEq)]
pub struct NearReplay {
    pub plan: Plan,
    pub key: String,
    /// The two templates' similarity, in `[0, 1]`.
    pub similarity: f32,
}

const BM25_K1: f32 = 1.2;
const BM25_B: f32 = 0.75;

struct Stored {
    key: String,
    entry: CacheEntry,
    domain: String,
    aspect: String,
    /// (term id, term frequency), sorted by term id.
    term_freqs: Vec<(u32, u16)>,
    length: u32,
    last_used: u64,
    /// The entry is counted in the cache's lexicon.
    learned: bool,
    /// The template's embedding (unit length), once the role has computed it.
    vector: Option<Box<[f32]>>,
}

/// A multiplicative hash for slot numbers: std's SipHash costs more than the BM25
/// arithmetic it would guard, and slots are not attacker-chosen.
#[derive(Default)]
struct SlotHasher(u64);

impl Hasher for SlotHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.write_u64(u64::from(*byte));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

type SlotMap<V> = HashMap<u64, V, BuildHasherDefault<SlotHasher>>;
/// A domain-wide posting list: slot → (term frequency, entry length), what BM25 needs,
/// so scoring reads no entry. Iterates in an order fixed by its contents, so bounded
/// scans are reproducible; removal is O(1) however long the list.
type DomainPostings = SlotMap<(u16, u16)>;

/// A term's BM25 weight in an entry holding it `tf` times among `length` tokens.
fn bm25_weight(idf: f32, tf: u16, length: u16, average_length: f32) -> f32 {
    let tf = f32::from(tf);
    let norm = 1.0 - BM25_B + BM25_B * f32::from(length) / average_length;
    idf * tf * (BM25_K1 + 1.0) / (tf + BM25_K1 * norm)
}

/// One entry in a term's postings, with what BM25 needs, so scoring reads no entry.
#[derive(Clone, Copy)]
struct Posting {
    slot: u64,
    tf: u16,
    length: u16,
}

/// An inverted index over one bucket's entries.
#[derive(Default)]
struct TermIndex {
    postings: HashMap<u32, Vec<Posting>>,
    total_length: u64,
    documents: usize,
}

impl TermIndex {
    fn add(&mut self, slot: u64, term_freqs: &[(u32, u16)], length: u32) {
        let length16 = u16::try_from(length).unwrap_or(u16::MAX);
        for (term, tf) in term_freqs {
            self.postings.entry(*term).or_default().push(Posting {
                slot,
                tf: *tf,
                length: length16,
            });
        }
        self.total_length += u64::from(length);
        self.documents += 1;
    }

    /// O(postings of the entry's terms), bounded by the bucket's capacity.
    fn remove(&mut self, slot: u64, term_freqs: &[(u32, u16)], length: u32) {
        for (term, _) in term_freqs {
            if let Some(posting) = self.postings.get_mut(term) {
                // Kept sorted by slot (slots only grow), for binary-search probes.
                if let Ok(at) = posting.binary_search_by_key(&slot, |p| p.slot) {
                    posting.remove(at);
                }
                if posting.is_empty() {
                    self.postings.remove(term);
                }
            }
        }
        self.total_length = self.total_length.saturating_sub(u64::from(length));
        self.documents = self.documents.saturating_sub(1);
    }
}

#[derive(Default)]
struct Bucket {
    /// last-used tick → slot
    lru: BTreeMap<u64, u64>,
    index: TermIndex,
}

#[derive(Default)]
struct DomainIndex {
    /// Domain-wide postings, searched only when a bucket falls short.
    postings: HashMap<u32, DomainPostings>,
    total_length: u64,
    /// aspect → its entries
    buckets: HashMap<String, Bucket>,
    /// template → slot, for replay and de-duplication.
    templates: HashMap<String, u64>,
}

/// What [`PlanCache::offer`] did with a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offered {
    /// The key of the plan's (domain, template).
    pub key: String,
    /// Keys evicted to keep the bucket within capacity.
    pub evicted: Vec<String>,
    /// The cache holds the offered plan (false: a better-verified plan kept its place).
    pub kept: bool,
    /// The entry under `key` changed in a way a persistent store should mirror: a new
    /// or replaced plan, or one that just became replayable.
    pub changed: bool,
}

/// A two-layer (domain → aspect) semantic plan cache.
#[derive(Default)]
pub struct PlanCache {
    config: CacheConfig,
    terms: HashMap<String, u32>,
    slots: SlotMap<Stored>,
    keys: HashMap<String, u64>,
    domains: HashMap<String, DomainIndex>,
    next_slot: u64,
    tick: u64,
    /// What the words of the verified plans' questions meant.
    lexicon: Lexicon,
    /// Slots whose template has no embedding yet, so that finding them never scans
    /// the whole cache.
    unembedded: std::collections::BTreeSet<u64>,
}

/// The domain an ISR routes to: its own, lowercased, or `default` (always without a
/// model).
pub fn domain_of(isr: &Isr) -> String {
    if isr.domain.trim().is_empty() {
        "default".to_owned()
    } else {
        isr.domain.trim().to_lowercase()
    }
}

/// The stable key of an entry: one entry per (domain, template).
pub fn entry_key(domain: &str, template: &str) -> String {
    // FNV-1a: stable across processes and versions, unlike std's hasher.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in domain.bytes().chain([0u8]).chain(template.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("p{hash:016x}")
}

impl PlanCache {
    pub fn new(config: CacheConfig) -> Self {
        Self {
            config,
            ..Self::default()
        }
    }

    pub fn config(&self) -> &CacheConfig {
        &self.config
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    fn aspect_of(isr: &Isr) -> String {
        isr.aspect.trim().to_lowercase()
    }

    fn term_id(&mut self, term: &str) -> u32 {
        if let Some(id) = self.terms.get(term) {
            return *id;
        }
        let id = self.terms.len() as u32;
        self.terms.insert(term.to_owned(), id);
        id
    }

    /// Offers a plan verified by a question (or by `kgmesh cache warm`): stored like
    /// [`insert`](Self::insert), except that a different plan verified more often
    /// (`hits`) keeps its place. Says what a persistent store needs to mirror.
    pub fn offer(&mut self, entry: CacheEntry) -> Offered {
        let key = self.key_for(&entry);
        let held = self.keys.get(&key).copied().and_then(|slot| {
            let stored = self.slots.get(&slot)?;
            let same = self.holds_same_plan(slot, &Self::aspect_of(&entry.isr), &entry);
            Some((slot, same, stored.entry.hits))
        });
        if let Some((slot, false, hits)) = held {
            if hits > entry.hits {
                self.touch(slot);
                return Offered {
                    key,
                    evicted: Vec::new(),
                    kept: false,
                    changed: false,
                };
            }
        }
        let (key, evicted) = self.insert(entry);
        let threshold = self.config.replay_min_hits;
        let changed = match held {
            Some((_, true, hits_before)) => {
                // The same plan verified again: worth writing only when it just became
                // replayable.
                hits_before < threshold && self.get(&key).is_some_and(|e| e.hits >= threshold)
            }
            _ => true,
        };
        Offered {
            key,
            evicted,
            kept: true,
            changed,
        }
    }

    /// Stores (or replaces) the entry for its (domain, template), as loading a store or
    /// following another replica does. Returns its key and the keys evicted to keep the
    /// bucket within capacity.
    pub fn insert(&mut self, mut entry: CacheEntry) -> (String, Vec<String>) {
        if entry.template.is_empty() {
            entry.template = template::mask(&entry.question, &[]);
        }
        let domain = domain_of(&entry.isr);
        let aspect = Self::aspect_of(&entry.isr);
        let key = entry_key(&domain, &entry.template);
        if let Some(existing) = self.keys.get(&key).copied() {
            if self.holds_same_plan(existing, &aspect, &entry) {
                // The same plan verified again: refresh in place, no re-indexing.
                if let Some(stored) = self.slots.get_mut(&existing) {
                    entry.hits = entry.hits.max(stored.entry.hits);
                    entry.failures = stored.entry.failures;
                    stored.entry = entry;
                }
                self.relearn(existing);
                self.touch(existing);
                return (key, Vec::new());
            }
            self.remove_slot(existing);
        }
        let tokens = template::tokens(&entry.template);
        let mut counts: BTreeMap<u32, u16> = BTreeMap::new();
        for token in &tokens {
            let id = self.term_id(token);
            let count = counts.entry(id).or_default();
            *count = count.saturating_add(1);
        }
        let slot = self.next_slot;
        self.next_slot += 1;
        self.tick += 1;
        let tick = self.tick;
        let index = self.domains.entry(domain.clone()).or_default();
        let length16 = u16::try_from(tokens.len()).unwrap_or(u16::MAX);
        for (term, tf) in &counts {
            index
                .postings
                .entry(*term)
                .or_default()
                .insert(slot, (*tf, length16));
        }
        index.total_length += tokens.len() as u64;
        index.templates.insert(entry.template.clone(), slot);
        let term_freqs: Vec<(u32, u16)> = counts.into_iter().collect();
        let length = tokens.len() as u32;
        let bucket = index.buckets.entry(aspect.clone()).or_default();
        bucket.lru.insert(tick, slot);
        bucket.index.add(slot, &term_freqs, length);
        let mut evicted_slots = Vec::new();
        let mut over = bucket
            .lru
            .len()
            .saturating_sub(self.config.bucket_capacity.max(1));
        for (_, oldest) in bucket.lru.iter() {
            if over == 0 {
                break;
            }
            evicted_slots.push(*oldest);
            over -= 1;
        }
        self.keys.insert(key.clone(), slot);
        self.slots.insert(
            slot,
            Stored {
                key: key.clone(),
                entry,
                domain,
                aspect,
                term_freqs,
                length,
                last_used: tick,
                learned: false,
                vector: None,
            },
        );
        self.unembedded.insert(slot);
        self.relearn(slot);
        let evicted = evicted_slots
            .into_iter()
            .filter_map(|s| self.remove_slot(s).map(|stored| stored.key))
            .collect();
        (key, evicted)
    }

    /// Stores `entry` exactly as given, counts included, as a change another replica
    /// made and persisted must be mirrored ([`insert`](Self::insert) would keep the
    /// larger of two hit counts and the older failure count). Returns its key and the
    /// keys evicted.
    pub fn replace(&mut self, entry: CacheEntry) -> (String, Vec<String>) {
        let key = self.key_for(&entry);
        let aspect = Self::aspect_of(&entry.isr);
        let same_plan = self
            .keys
            .get(&key)
            .copied()
            .filter(|slot| self.holds_same_plan(*slot, &aspect, &entry));
        match same_plan {
            Some(slot) => {
                if let Some(stored) = self.slots.get_mut(&slot) {
                    stored.entry = entry;
                    if stored.entry.template.is_empty() {
                        stored.entry.template = template::mask(&stored.entry.question, &[]);
                    }
                }
                self.relearn(slot);
                self.touch(slot);
                (key, Vec::new())
            }
            None => self.insert(entry),
        }
    }

    /// The key an entry is stored under: its domain and template.
    fn key_for(&self, entry: &CacheEntry) -> String {
        let template = if entry.template.is_empty() {
            template::mask(&entry.question, &[])
        } else {
            entry.template.clone()
        };
        entry_key(&domain_of(&entry.isr), &template)
    }

    /// Whether `slot` holds `entry`'s plan under the same aspect (a refresh, not a
    /// replacement).
    fn holds_same_plan(&self, slot: u64, aspect: &str, entry: &CacheEntry) -> bool {
        self.slots.get(&slot).is_some_and(|stored| {
            stored.aspect == aspect && same_plan(&stored.entry.plan, &entry.plan)
        })
    }

    /// Removes an entry by key; returns it when present.
    pub fn remove(&mut self, key: &str) -> Option<CacheEntry> {
        let slot = self.keys.get(key).copied()?;
        self.remove_slot(slot).map(|s| s.entry)
    }

    fn remove_slot(&mut self, slot: u64) -> Option<Stored> {
        let stored = self.slots.remove(&slot)?;
        self.unembedded.remove(&slot);
        if stored.learned {
            self.lexicon.remove(&stored.entry);
        }
        self.keys.remove(&stored.key);
        if let Some(index) = self.domains.get_mut(&stored.domain) {
            for (term, _) in &stored.term_freqs {
                if let Some(posting) = index.postings.get_mut(term) {
                    posting.remove(&slot);
                    if posting.is_empty() {
                        index.postings.remove(term);
                    }
                }
            }
            index.total_length = index.total_length.saturating_sub(u64::from(stored.length));
            if index.templates.get(&stored.entry.template) == Some(&slot) {
                index.templates.remove(&stored.entry.template);
            }
            if let Some(bucket) = index.buckets.get_mut(&stored.aspect) {
                bucket.lru.remove(&stored.last_used);
                bucket.index.remove(slot, &stored.term_freqs, stored.length);
                if bucket.lru.is_empty() {
                    index.buckets.remove(&stored.aspect);
                }
            }
        }
        Some(stored)
    }

    fn touch(&mut self, slot: u64) {
        self.tick += 1;
        let tick = self.tick;
        let Some(stored) = self.slots.get_mut(&slot) else {
            return;
        };
        if let Some(bucket) = self
            .domains
            .get_mut(&stored.domain)
            .and_then(|index| index.buckets.get_mut(&stored.aspect))
        {
            bucket.lru.remove(&stored.last_used);
            bucket.lru.insert(tick, slot);
        }
        stored.last_used = tick;
    }

    /// Records whether replaying or using an entry's plan worked. A plan that fails
    /// more often than it succeeds is demoted (removed). Returns true when removed.
    pub fn record_outcome(&mut self, key: &str, success: bool) -> bool {
        let Some(slot) = self.keys.get(key).copied() else {
            return false;
        };
        let demote = match self.slots.get_mut(&slot) {
            Some(stored) => {
                if success {
                    stored.entry.hits = stored.entry.hits.saturating_add(1);
                } else {
                    stored.entry.failures = stored.entry.failures.saturating_add(1);
                }
                stored.entry.failures > stored.entry.hits
            }
            None => false,
        };
        if demote {
            self.remove_slot(slot);
        } else {
            self.relearn(slot);
        }
        demote
    }

    /// Brings the lexicon in line with the entry in `slot` after it was stored or
    /// changed: a verified entry is counted once, an unverified or failing one not at
    /// all.
    fn relearn(&mut self, slot: u64) {
        let Some(stored) = self.slots.get_mut(&slot) else {
            return;
        };
        if stored.learned {
            self.lexicon.remove(&stored.entry);
        }
        stored.learned = learnable(&stored.entry);
        if stored.learned {
            self.lexicon.add(&stored.entry);
        }
    }

    /// The learned phrase → relation lexicon of the cache's verified plans.
    pub fn lexicon(&self) -> &Lexicon {
        &self.lexicon
    }

    pub fn get(&self, key: &str) -> Option<&CacheEntry> {
        self.keys
            .get(key)
            .and_then(|slot| self.slots.get(slot))
            .map(|s| &s.entry)
    }

    /// Finds examples for `question` (whose linked `entities` are masked) under `isr`.
    pub fn lookup(&mut self, question: &str, entities: &[Entity], isr: &Isr, k: usize) -> Lookup {
        let k = if k == 0 { self.config.k } else { k };
        let mentions: Vec<&str> = entities.iter().map(|e| e.name.as_str()).collect();
        let query_template = template::mask(question, &mentions);
        let domain = domain_of(isr);
        let aspect = Self::aspect_of(isr);
        let cues = self.lexicon.cues(&query_template);
        let Some(index) = self.domains.get(&domain) else {
            return Lookup {
                cues,
                ..Lookup::default()
            };
        };

        let replay_slot = index
            .templates
            .get(&query_template)
            .copied()
            .filter(|slot| self.replayable(*slot, &query_template, entities.len()));
        let pool = self.pool(
            index,
            &aspect,
            &query_template,
            k,
            self.config.min_relevance,
        );
        let chosen = self.mmr(&pool, k);

        let mut lookup = Lookup {
            cues,
            ..Lookup::default()
        };
        for (slot, relevance) in &chosen {
            if let Some(stored) = self.slots.get(slot) {
                lookup.examples.push(FewShotExample {
                    question: stored.entry.question.clone(),
                    plan: stored.entry.plan.clone(),
                    answers: stored.entry.answers.clone(),
                    similarity: *relevance,
                });
                lookup.keys.push(stored.key.clone());
            }
        }
        if let Some(slot) = replay_slot {
            if let Some(stored) = self.slots.get(&slot) {
                lookup.replay = Some(rebind(&stored.entry.plan, entities));
                if !lookup.keys.contains(&stored.key) {
                    lookup.keys.insert(0, stored.key.clone());
                }
            }
        }
        let used: Vec<u64> = chosen.iter().map(|(s, _)| *s).chain(replay_slot).collect();
        for slot in used {
            self.touch(slot);
        }
        lookup
    }

    /// Whether the plan in `slot` may be replayed for a question of `query_template`
    /// naming `entities` entities: verified often enough, not failing more often than
    /// it worked, with something to replay, and as many entities as the template has
    /// slots.
    fn replayable(&self, slot: u64, query_template: &str, entities: usize) -> bool {
        self.slots.get(&slot).is_some_and(|stored| {
            let slots_in_template = query_template
                .split(' ')
                .filter(|t| *t == ENTITY_SLOT)
                .count();
            stored.entry.failures <= stored.entry.hits
                && stored.entry.hits >= self.config.replay_min_hits
                && slots_in_template > 0
                && slots_in_template == entities
                && !stored.entry.plan.metapaths.is_empty() | !stored.entry.plan.cypher.is_empty()
        })
    }

    /// CacheRAG: the aspect bucket's plans, or the whole domain's when the bucket
    /// holds fewer than k; relevance below `floor` is left out.
    fn pool(
        &self,
        index: &DomainIndex,
        aspect: &str,
        query_template: &str,
        k: usize,
        floor: f32,
    ) -> Vec<(u64, f32)> {
        let bucket = index.buckets.get(aspect);
        let in_aspect = bucket
            .map(|bucket| self.score_bucket(&bucket.index, query_template, floor))
            .unwrap_or_default();
        let whole_domain = bucket.is_some_and(|b| b.lru.len() == index.templates.len());
        if in_aspect.len() >= k || whole_domain {
            in_aspect
        } else {
            self.score_candidates(index, query_template, floor)
        }
    }

    /// The template a lookup for `question` with these linked `entities` uses.
    pub fn template_of(question: &str, entities: &[Entity]) -> String {
        let mentions: Vec<&str> = entities.iter().map(|e| e.name.as_str()).collect();
        template::mask(question, &mentions)
    }

    /// How many entries' templates have no embedding yet.
    pub fn unembedded_count(&self) -> usize {
        self.unembedded.len()
    }

    /// Entries whose template has no embedding yet: (key, text to embed), at most
    /// `limit`, oldest first.
    pub fn unembedded(&self, limit: usize) -> Vec<(String, String)> {
        self.unembedded
            .iter()
            .filter_map(|slot| self.slots.get(slot))
            .take(limit)
            .map(|stored| (stored.key.clone(), embedding_text(&stored.entry.template)))
            .collect()
    }

    /// Keeps the embedding of the template of the entry under `key` (computed from
    /// [`embedding_text`]); ignored when the entry is gone or the vector is empty.
    pub fn set_vector(&mut self, key: &str, vector: Vec<f32>) {
        if vector.is_empty() {
            return;
        }
        let Some(&slot) = self.keys.get(key) else {
            return;
        };
        if let Some(stored) = self.slots.get_mut(&slot) {
            stored.vector = Some(vector.into_boxed_slice());
            self.unembedded.remove(&slot);
        }
    }

    /// What a replay of a similar template can choose from for this question (see
    /// [`Self::near_replay`]): nothing when a plan is stored under the question's own
    /// template; else the lookup's pool, taking every template that shares a word
    /// however low its BM25 share (a paraphrase shares few words, which is what the
    /// embedding is for), but only embedded ones that could reach `near_replay_min`
    /// with a cosine of 1. When it is empty, the question need not be embedded.
    pub fn near_candidates(
        &self,
        question: &str,
        entities: &[Entity],
        isr: &Isr,
    ) -> NearCandidates {
        let template = Self::template_of(question, entities);
        let pool = match self.domains.get(&domain_of(isr)) {
            Some(index) if !index.templates.contains_key(&template) => {
                let floor = ((self.config.near_replay_min - NEAR_EMBEDDING_WEIGHT)
                    / (1.0 - NEAR_EMBEDDING_WEIGHT))
                    .max(0.0);
                let mut pool = self.pool(
                    index,
                    &Self::aspect_of(isr),
                    &template,
                    self.config.candidate_pool,
                    floor,
                );
                pool.retain(|(slot, _)| self.slots.get(slot).is_some_and(|s| s.vector.is_some()));
                pool
            }
            _ => Vec::new(),
        };
        NearCandidates { template, pool }
    }

    /// Replays the plan of the candidate template most similar to the question's:
    /// `query_vector` is the embedding of [`NearCandidates::template`]
    /// ([`embedding_text`]). Each candidate is scored [`NEAR_EMBEDDING_WEIGHT`] ×
    /// cosine + the rest × BM25 relevance, and the best at or above `near_replay_min`
    /// is replayed only if it could be replayed for its own template and fits the
    /// question ([`Lexicon::fits`]: the question's words account for every step of its
    /// relation path, in order, ask for no step it lacks, and ask for the type of
    /// answer its last step gives). Otherwise nothing: the question goes zero-shot,
    /// with the plans as examples. Candidates removed since they were found are passed
    /// over.
    pub fn near_replay(
        &mut self,
        candidates: &NearCandidates,
        entities: &[Entity],
        query_vector: &[f32],
    ) -> Option<NearReplay> {
        let template = &candidates.template;
        let mut scored: Vec<(f32, u64)> = candidates
            .pool
            .iter()
            .filter_map(|&(slot, relevance)| {
                let vector = self.slots.get(&slot)?.vector.as_deref()?;
                let cosine: f32 = vector.iter().zip(query_vector).map(|(a, b)| a * b).sum();
                let similarity = NEAR_EMBEDDING_WEIGHT * cosine.clamp(0.0, 1.0)
                    + (1.0 - NEAR_EMBEDDING_WEIGHT) * relevance;
                (similarity >= self.config.near_replay_min).then_some((similarity, slot))
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let (similarity, slot) = scored.into_iter().find(|(_, slot)| {
            self.replayable(*slot, template, entities.len())
                && self.lexicon.fits(template, &self.slots[slot].entry.plan)
        })?;
        self.touch(slot);
        let stored = self.slots.get(&slot)?;
        Some(NearReplay {
            plan: rebind(&stored.entry.plan, entities),
            key: stored.key.clone(),
            similarity,
        })
    }

    /// BM25 over one bucket's postings, normalized like [`Self::score_candidates`].
    fn score_bucket(&self, index: &TermIndex, query_template: &str, floor: f32) -> Vec<(u64, f32)> {
        let query_tokens: HashSet<String> = template::tokens(query_template).into_iter().collect();
        let documents = index.documents.max(1) as f32;
        let average_length = (index.total_length as f32 / documents).max(1.0);
        let idf = |df: usize| ((documents - df as f32 + 0.5) / (df as f32 + 0.5) + 1.0).ln();
        let mut best_possible = 0.0f32;
        let mut query_terms: Vec<(u32, &Vec<Posting>)> = Vec::new();
        for token in &query_tokens {
            let posting = self
                .terms
                .get(token.as_str())
                .and_then(|id| index.postings.get(id).map(|p| (*id, p)));
            match posting {
                Some((id, posting)) => {
                    best_possible += idf(posting.len());
                    query_terms.push((id, posting));
                }
                None => best_possible += idf(0),
            }
        }
        let best_possible = best_possible.max(f32::EPSILON);
        query_terms.sort_by_key(|(id, posting)| (posting.len(), *id));
        let budget = self.config.max_postings_scanned.max(1);
        let mut scores: SlotMap<f32> = SlotMap::default();
        let mut spent = 0usize;
        for (_, posting) in &query_terms {
            let term_idf = idf(posting.len());
            let weight = |p: &Posting| bm25_weight(term_idf, p.tf, p.length, average_length);
            if scores.is_empty() || spent + posting.len() <= budget {
                let take = posting.len().min(budget.saturating_sub(spent).max(1));
                spent += take;
                for p in &posting[..take] {
                    *scores.entry(p.slot).or_default() += weight(p);
                }
            } else if scores.len() < posting.len() {
                // Probe the (sorted) posting for each candidate.
                if spent + scores.len() > budget {
                    break;
                }
                spent += scores.len();
                for (slot, score) in scores.iter_mut() {
                    if let Ok(at) = posting.binary_search_by_key(slot, |p| p.slot) {
                        *score += weight(&posting[at]);
                    }
                }
            } else {
                if spent + posting.len() > budget {
                    break;
                }
                spent += posting.len();
                for p in posting.iter() {
                    if let Some(score) = scores.get_mut(&p.slot) {
                        *score += weight(p);
                    }
                }
            }
        }
        rank(scores, best_possible, floor, self.config.candidate_pool)
    }

    /// BM25 over the domain, normalized by the query's best possible score; only
    /// candidates at or above `floor`, best first, at most `candidate_pool`.
    fn score_candidates(
        &self,
        index: &DomainIndex,
        query_template: &str,
        floor: f32,
    ) -> Vec<(u64, f32)> {
        let query_tokens: HashSet<String> = template::tokens(query_template).into_iter().collect();
        let mut query_terms: Vec<u32> = query_tokens
            .iter()
            .filter_map(|t| self.terms.get(t).copied())
            .collect();
        let documents = index.templates.len().max(1) as f32;
        let average_length = (index.total_length as f32 / documents).max(1.0);
        let idf = |term: u32| {
            let df = index.postings.get(&term).map_or(0, |p| p.len()) as f32;
            ((documents - df + 0.5) / (df + 0.5) + 1.0).ln()
        };
        // The score a document identical to the query would get; relevance is the
        // share of it a candidate reaches. Terms never seen get the idf of df = 0.
        let best_possible: f32 = query_tokens
            .iter()
            .map(|token| {
                self.terms
                    .get(token.as_str())
                    .map_or_else(|| ((documents + 0.5) / 0.5 + 1.0).ln(), |id| idf(*id))
            })
            .sum::<f32>()
            .max(f32::EPSILON);

        // Rarest first; ties by term id so the scan order never depends on hashing.
        query_terms.sort_by_key(|term| (index.postings.get(term).map_or(0, |p| p.len()), *term));
        let budget = self.config.max_postings_scanned.max(1);
        let mut scores: SlotMap<f32> = SlotMap::default();
        let mut spent = 0usize;
        for term in &query_terms {
            let Some(posting) = index.postings.get(term) else {
                continue;
            };
            let term_idf = idf(*term);
            if scores.is_empty() || spent + posting.len() <= budget {
                // A rarest term commoner than the whole budget is sampled (in an order
                // fixed by the postings' contents), not scanned.
                let take = posting.len().min(budget.saturating_sub(spent).max(1));
                spent += take;
                for (slot, &(tf, length)) in posting.iter().take(take) {
                    *scores.entry(*slot).or_default() +=
                        bm25_weight(term_idf, tf, length, average_length);
                }
            } else {
                if spent + scores.len() > budget {
                    break;
                }
                spent += scores.len();
                for (slot, score) in scores.iter_mut() {
                    if let Some(&(tf, length)) = posting.get(slot) {
                        *score += bm25_weight(term_idf, tf, length, average_length);
                    }
                }
            }
        }
        rank(scores, best_possible, floor, self.config.candidate_pool)
    }

    /// Maximal marginal relevance: each pick maximizes
    /// λ·relevance − (1−λ)·(max similarity to the picks so far).
    fn mmr(&self, pool: &[(u64, f32)], k: usize) -> Vec<(u64, f32)> {
        let lambda = self.config.lambda.clamp(0.0, 1.0);
        let mut remaining: Vec<(u64, f32)> = pool.to_vec();
        let mut chosen: Vec<(u64, f32)> = Vec::new();
        while chosen.len() < k && !remaining.is_empty() {
            let mut best_index = 0;
            let mut best_value = f32::NEG_INFINITY;
            for (i, (slot, relevance)) in remaining.iter().enumerate() {
                let redundancy = chosen
                    .iter()
                    .map(|(picked, _)| self.similarity(*slot, *picked))
                    .fold(0.0f32, f32::max);
                let value = lambda * relevance - (1.0 - lambda) * redundancy;
                if value > best_value {
                    best_value = value;
                    best_index = i;
                }
            }
            chosen.push(remaining.swap_remove(best_index));
        }
        chosen
    }

    /// Jaccard similarity of two entries' template terms.
    fn similarity(&self, a: u64, b: u64) -> f32 {
        let (Some(a), Some(b)) = (self.slots.get(&a), self.slots.get(&b)) else {
            return 0.0;
        };
        let (mut i, mut j, mut shared) = (0, 0, 0usize);
        while i < a.term_freqs.len() && j < b.term_freqs.len() {
            match a.term_freqs[i].0.cmp(&b.term_freqs[j].0) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    shared += 1;
                    i += 1;
                    j += 1;
                }
            }
        }
        let union = a.term_freqs.len() + b.term_freqs.len() - shared;
        if union == 0 {
            0.0
        } else {
            shared as f32 / union as f32
        }
    }

    /// Every entry, for persistence snapshots.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &CacheEntry)> {
        self.slots.values().map(|s| (s.key.as_str(), &s.entry))
    }
}

/// The text of a template that is embedded: its entity slots read as "X".
pub fn embedding_text(template: &str) -> String {
    template.replace(ENTITY_SLOT, "X")
}

/// Relevance = score / best possible score; those at or above `floor`, best first
/// (ties by slot, so results never depend on hashing), at most `pool`.
fn rank(
    scores: impl IntoIterator<Item = (u64, f32)>,
    best_possible: f32,
    floor: f32,
    pool: usize,
) -> Vec<(u64, f32)> {
    let mut ranked: Vec<(u64, f32)> = scores
        .into_iter()
        .map(|(slot, score)| (slot, (score / best_possible).min(1.0)))
        .filter(|(_, relevance)| *relevance >= floor)
        .collect();
    let order = |a: &(u64, f32), b: &(u64, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    let pool = pool.max(1);
    if ranked.len() > pool {
        // Only the pool is ordered: selecting it is linear, sorting everything is not.
        ranked.select_nth_unstable_by(pool - 1, order);
        ranked.truncate(pool);
    }
    ranked.sort_by(order);
    ranked
}

/// A stored plan with its entities replaced by the new question's, position by
/// position; quoted entity names inside stored Cypher are replaced too.
/// Whether two plans are one plan for different entities: the same metapaths, and the
/// same Cypher once `b`'s entity literals are rebound to `a`'s entities.
pub fn same_plan(a: &Plan, b: &Plan) -> bool {
    a.metapaths == b.metapaths
        && a.entities.len() == b.entities.len()
        && rebind(b, &a.entities).cypher == a.cypher
}

pub fn rebind(plan: &Plan, entities: &[Entity]) -> Plan {
    let cypher = plan
        .cypher
        .iter()
        .map(|query| {
            let mut query = query.clone();
            for (old, new) in plan.entities.iter().zip(entities) {
                for quote in ['\'', '"'] {
                    let from = format!("{quote}{}{quote}", escape_literal(&old.name, quote));
                    let to = format!("{quote}{}{quote}", escape_literal(&new.name, quote));
                    query = query.replace(&from, &to);
                }
            }
            query
        })
        .collect();
    Plan {
        entities: entities.to_vec(),
        metapaths: plan.metapaths.clone(),
        cypher,
    }
}

fn escape_literal(text: &str, quote: char) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c == quote || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use kgmesh_schemas::{
        graph::{Direction, Metapath, RelationStep},
        NodeId,
    };

    use super::*;

    fn entity(id: u64, name: &str) -> Entity {
        Entity {
            id: NodeId(id),
            name: name.to_owned(),
        }
    }

    fn entry(question: &str, mention: &str, relation: &str, aspect: &str) -> CacheEntry {
        CacheEntry {
            question: question.to_owned(),
            template: template::mask(question, &[mention]),
            isr: Isr {
                aspect: aspect.to_owned(),
                ..Isr::default()
            },
            plan: Plan {
                entities: vec![entity(1, mention)],
                metapaths: vec![Metapath {
                    steps: vec![RelationStep {
                        relation: relation.to_owned(),
                        direction: Direction::Out,
                    }],
                }],
                cypher: vec![format!(
                    "MATCH (m {{name: '{mention}'}})-[:{relation}]->(x) RETURN x.name"
                )],
            },
            answers: vec!["x".to_owned()],
            hits: 0,
            failures: 0,
        }
    }

    #[test]
    fn same_template_replays_with_the_new_entity() {
        let mut cache = PlanCache::new(CacheConfig::default());
        cache.insert(entry(
            "who directed Heat",
            "Heat",
            "directed_by",
            "director",
        ));
        let unconfirmed = cache.lookup(
            "Who directed Alien?",
            &[entity(7, "Alien")],
            &Isr::default(),
            5,
        );
        assert!(
            unconfirmed.replay.is_none(),
            "a plan stored once is an example, not replayed"
        );
        assert_eq!(unconfirmed.examples.len(), 1);
        // The same plan verified (by a model or against gold answers) is replayed.
        let mut verified = entry("who directed Ronin", "Ronin", "directed_by", "director");
        verified.hits = 1;
        cache.insert(verified);
        let found = cache.lookup(
            "Who directed Alien?",
            &[entity(7, "Alien")],
            &Isr::default(),
            5,
        );
        let replay = found.replay.expect("replay");
        assert_eq!(replay.entities, vec![entity(7, "Alien")]);
        assert_eq!(replay.metapaths[0].steps[0].relation, "directed_by");
        assert_eq!(
            replay.cypher[0],
            "MATCH (m {name: 'Alien'})-[:directed_by]->(x) RETURN x.name"
        );
        assert_eq!(found.examples.len(), 1);
    }

    #[test]
    fn a_similar_template_replays_its_plan_only_when_the_plan_fits_the_question() {
        let mut cache = PlanCache::new(CacheConfig {
            near_replay_min: 0.7,
            ..CacheConfig::default()
        });
        let learned = [
            ("who is the kid of Ann", "Ann", "children"),
            ("what is the kid of Bo called", "Bo", "children"),
            ("name the kid of Cy", "Cy", "children"),
            ("who is the mom of Ann", "Ann", "parents"),
            ("what is the mom of Bo called", "Bo", "parents"),
            ("name the mom of Cy", "Cy", "parents"),
        ];
        for (question, mention, relation) in learned {
            let mut verified = entry(question, mention, relation, "");
            verified.hits = 1;
            cache.insert(verified);
        }
        // Stand-in embeddings: every "kid" template along one axis, "mom" along another.
        let kid = vec![1.0, 0.0];
        let mom = vec![0.0, 1.0];
        for (key, text) in cache.unembedded(usize::MAX) {
            let vector = if text.contains("kid") { &kid } else { &mom };
            cache.set_vector(&key, vector.clone());
        }
        assert!(cache.unembedded(usize::MAX).is_empty());
        let dee = [entity(9, "Dee")];
        let mut near_replay = |question: &str, vector: &[f32]| {
            let candidates = cache.near_candidates(question, &dee, &Isr::default());
            cache.near_replay(&candidates, &dee, vector)
        };
        let near = near_replay("tell me the kid of Dee", &kid).expect("the kid plan fits");
        assert_eq!(near.plan.entities, dee);
        assert_eq!(near.plan.metapaths[0].steps[0].relation, "children");
        assert!(near.similarity >= 0.7, "{near:?}");
        // The nearest template by embedding asks for a step the question does not:
        // "mom" was learned with `parents`, and "kid" is missing from the question.
        assert_eq!(near_replay("tell me the mom of Dee", &kid), None);
        // The question's own template has a plan: that is the exact replay's to give.
        assert_eq!(near_replay("who is the kid of Dee", &kid), None);
        // Too far by embedding.
        assert_eq!(near_replay("tell me the kid of Dee", &[0.0, 0.0]), None);
    }

    #[test]
    fn a_confirmed_plan_keeps_its_place_against_an_unconfirmed_rival() {
        let mut cache = PlanCache::new(CacheConfig::default());
        let mut verified = entry("who directed Heat", "Heat", "directed_by", "director");
        verified.hits = 1;
        assert!(cache.offer(verified).changed);
        let rival = cache.offer(entry(
            "who directed Ronin",
            "Ronin",
            "written_by",
            "director",
        ));
        assert!(!rival.kept && !rival.changed, "{rival:?}");
        let found = cache.lookup(
            "Who directed Alien?",
            &[entity(7, "Alien")],
            &Isr::default(),
            5,
        );
        let replay = found.replay.expect("the verified plan is replayed");
        assert_eq!(replay.metapaths[0].steps[0].relation, "directed_by");
    }

    #[test]
    fn unrelated_questions_get_nothing() {
        let mut cache = PlanCache::new(CacheConfig::default());
        cache.insert(entry(
            "who directed Heat",
            "Heat",
            "directed_by",
            "director",
        ));
        let found = cache.lookup(
            "what is the population of Paris",
            &[entity(3, "Paris")],
            &Isr::default(),
            5,
        );
        assert!(found.examples.is_empty(), "{found:?}");
        assert!(found.replay.is_none());
    }

    #[test]
    fn mmr_enforces_diversity() {
        // Three near-identical phrasings and two different but relevant questions.
        let questions = [
            ("who directed the movie Heat", "directed_by"),
            ("who directed the movie Heat please", "directed_by"),
            ("who directed the movie Heat now", "directed_by"),
            ("which movie did Mann direct", "directed"),
            ("the movie Heat was directed by whom", "directed_by"),
        ];
        let build = |lambda: f32| {
            let mut cache = PlanCache::new(CacheConfig {
                lambda,
                min_relevance: 0.01,
                ..CacheConfig::default()
            });
            for (question, relation) in questions {
                let mention = if question.contains("Mann") {
                    "Mann"
                } else {
                    "Heat"
                };
                cache.insert(entry(question, mention, relation, ""));
            }
            cache
        };
        let redundancy = |cache: &mut PlanCache| {
            let found = cache.lookup(
                "who directed the movie Alien",
                &[entity(7, "Alien")],
                &Isr::default(),
                3,
            );
            assert_eq!(found.examples.len(), 3);
            assert_eq!(
                found.examples[0].question, "who directed the movie Heat",
                "most relevant first"
            );
            let slots: Vec<u64> = found.keys.iter().map(|k| cache.keys[k]).collect();
            let mut worst = 0.0f32;
            for (i, a) in slots.iter().enumerate() {
                for b in &slots[i + 1..] {
                    worst = worst.max(cache.similarity(*a, *b));
                }
            }
            (
                worst,
                found
                    .examples
                    .iter()
                    .map(|e| e.question.clone())
                    .collect::<Vec<_>>(),
            )
        };
        let (diverse, diverse_picks) = redundancy(&mut build(0.3));
        let (relevant, relevant_picks) = redundancy(&mut build(1.0));
        // Pure relevance picks the near-duplicates; a diversity-leaning λ trades some
        // relevance for picks that overlap less.
        assert!(
            relevant_picks[1].starts_with("who directed the movie Heat "),
            "{relevant_picks:?}"
        );
        assert!(
            diverse < relevant,
            "λ=0.3 {diverse_picks:?} ({diverse}) vs λ=1 {relevant_picks:?} ({relevant})"
        );
    }

    #[test]
    fn aspect_bucket_falls_back_to_the_domain() {
        let config = CacheConfig {
            min_relevance: 0.05,
            ..CacheConfig::default()
        };
        let mut cache = PlanCache::new(config);
        cache.insert(entry(
            "who directed Heat",
            "Heat",
            "directed_by",
            "director",
        ));
        cache.insert(entry("who wrote Heat", "Heat", "written_by", "writer"));
        let isr = Isr {
            aspect: "director".to_owned(),
            ..Isr::default()
        };
        // Only one entry in the "director" bucket and k = 2: the domain supplies the rest.
        let found = cache.lookup(
            "who directed and wrote Alien",
            &[entity(7, "Alien")],
            &isr,
            2,
        );
        assert_eq!(found.examples.len(), 2, "{found:?}");
        // With k = 1 the bucket alone suffices.
        let found = cache.lookup("who directed Alien", &[entity(7, "Alien")], &isr, 1);
        assert_eq!(found.examples[0].question, "who directed Heat");
    }

    #[test]
    fn a_bucket_with_k_relevant_plans_is_searched_alone() {
        let config = CacheConfig {
            min_relevance: 0.05,
            ..CacheConfig::default()
        };
        let mut cache = PlanCache::new(config);
        for (question, mention) in [
            ("who directed the film Heat", "Heat"),
            ("who directed the picture Alien", "Alien"),
        ] {
            cache.insert(entry(question, mention, "directed_by", "director"));
        }
        // The closest wording of all (the very template) sits in another bucket: it is
        // replayed, but the examples come from the bucket.
        let mut verified = entry("who directed Up", "Up", "directed_by", "other");
        verified.hits = 1;
        cache.insert(verified);
        let isr = Isr {
            aspect: "director".to_owned(),
            ..Isr::default()
        };
        let found = cache.lookup("who directed Brazil", &[entity(9, "Brazil")], &isr, 2);
        let questions: Vec<&str> = found.examples.iter().map(|e| e.question.as_str()).collect();
        assert_eq!(questions.len(), 2, "{questions:?}");
        assert!(!questions.contains(&"who directed Up"), "{questions:?}");
        assert!(found.replay.is_some());
        // Asking for more than the bucket has reaches into the domain.
        let found = cache.lookup("who directed Brazil", &[entity(9, "Brazil")], &isr, 3);
        assert_eq!(found.examples.len(), 3);
    }

    #[test]
    fn a_small_scan_budget_still_finds_the_rare_match() {
        let config = CacheConfig {
            max_postings_scanned: 8,
            min_relevance: 0.05,
            ..CacheConfig::default()
        };
        // One bucket, the same bucket by aspect, and a missing bucket (domain search).
        for (aspect, asked) in [("", ""), ("a", "a"), ("a", "missing")] {
            let mut cache = PlanCache::new(config.clone());
            for i in 0..300 {
                let question = format!("what is the thing number {i} of Heat");
                cache.insert(entry(&question, "Heat", "has_tags", aspect));
            }
            cache.insert(entry(
                "who composed the score of Heat",
                "Heat",
                "music_by",
                aspect,
            ));
            let isr = Isr {
                aspect: asked.to_owned(),
                ..Isr::default()
            };
            let found = cache.lookup(
                "who composed the music of Alien",
                &[entity(7, "Alien")],
                &isr,
                3,
            );
            assert_eq!(
                found.examples.first().map(|e| e.question.as_str()),
                Some("who composed the score of Heat"),
                "aspect {aspect:?}: {found:?}"
            );
            assert!(found.examples.len() <= 3);
        }
    }

    #[test]
    fn storing_the_same_plan_again_refreshes_it_in_place() {
        let mut cache = PlanCache::new(CacheConfig::default());
        let (key, _) = cache.insert(entry("who directed Heat", "Heat", "directed_by", ""));
        let mut again = entry("who directed Alien", "Alien", "directed_by", "");
        again.hits = 4;
        let (same, evicted) = cache.insert(again);
        assert_eq!((same.as_str(), evicted.len()), (key.as_str(), 0));
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.get(&key).map(|e| e.hits), Some(4));
        assert_eq!(
            cache.get(&key).map(|e| e.question.as_str()),
            Some("who directed Alien")
        );
        let found = cache.lookup(
            "who directed Brazil",
            &[entity(9, "Brazil")],
            &Isr::default(),
            5,
        );
        assert_eq!(found.examples.len(), 1, "still indexed once");
    }

    #[test]
    fn buckets_are_bounded_by_lru() {
        let config = CacheConfig {
            bucket_capacity: 2,
            min_relevance: 0.0,
            ..CacheConfig::default()
        };
        let mut cache = PlanCache::new(config);
        let (first, _) = cache.insert(entry("who directed Heat", "Heat", "directed_by", "a"));
        let (second, _) = cache.insert(entry("who wrote Heat", "Heat", "written_by", "a"));
        // Use the first so the second becomes least recently used.
        cache.lookup(
            "who directed Alien",
            &[entity(7, "Alien")],
            &Isr {
                aspect: "a".into(),
                ..Isr::default()
            },
            1,
        );
        let (_, evicted) =
            cache.insert(entry("who starred in Heat", "Heat", "starred_actors", "a"));
        assert_eq!(evicted, vec![second.clone()]);
        assert!(cache.get(&first).is_some());
        assert!(cache.get(&second).is_none());
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn failing_plans_are_demoted() {
        let mut cache = PlanCache::new(CacheConfig::default());
        let (key, _) = cache.insert(entry("who directed Heat", "Heat", "directed_by", ""));
        assert!(!cache.record_outcome(&key, true));
        assert!(!cache.record_outcome(&key, false));
        assert!(
            cache.record_outcome(&key, false),
            "more failures than hits demotes"
        );
        assert!(cache.get(&key).is_none());
        let found = cache.lookup(
            "who directed Alien",
            &[entity(7, "Alien")],
            &Isr::default(),
            5,
        );
        assert!(found.replay.is_none());
    }

    #[test]
    fn the_lexicon_learns_verified_plans_only_and_forgets_demoted_ones() {
        let mut cache = PlanCache::new(CacheConfig::default());
        // Judged by rule only (hits 0): a few-shot example, nothing learned.
        let (key, _) = cache.insert(entry("who filmed Heat", "Heat", "directed_by", ""));
        assert_eq!(cache.lexicon().plans(), 0);
        // Confirmed once: learned.
        assert!(!cache.record_outcome(&key, true));
        assert_eq!(cache.lexicon().plans(), 1);
        assert!(cache.lexicon().weight("film", "directed_by", false) > 0.0);
        let mut verified = entry("the helmer of Alien", "Alien", "directed_by", "");
        verified.hits = 1;
        cache.insert(verified);
        assert_eq!(cache.lexicon().plans(), 2);
        // A question in other words gets what those words meant.
        let found = cache.lookup(
            "who is the helmer of Ronin",
            &[entity(9, "Ronin")],
            &Isr::default(),
            5,
        );
        assert!(
            found
                .cues
                .iter()
                .any(|c| c.word == "helm" && c.relation == "directed_by" && !c.inverse),
            "{:?}",
            found.cues
        );
        // Failing more often than it worked: demoted, and forgotten.
        assert!(!cache.record_outcome(&key, false));
        assert!(cache.record_outcome(&key, false));
        assert_eq!(cache.lexicon().plans(), 1);
        assert_eq!(cache.lexicon().weight("film", "directed_by", false), 0.0);
    }

    #[test]
    fn a_replacement_keeps_the_counts_it_is_given() {
        let mut cache = PlanCache::new(CacheConfig::default());
        let mut verified = entry("who directed Heat", "Heat", "directed_by", "");
        verified.hits = 3;
        let (key, _) = cache.insert(verified);
        // Another replica demoted the same plan: its counts are the truth.
        let mut demoted = entry("who directed Heat", "Heat", "directed_by", "");
        demoted.hits = 1;
        demoted.failures = 1;
        cache.insert(demoted.clone());
        assert_eq!(
            cache.get(&key).map(|e| (e.hits, e.failures)),
            Some((3, 0)),
            "insert merges counts"
        );
        let (same, evicted) = cache.replace(demoted);
        assert_eq!((same.as_str(), evicted.len()), (key.as_str(), 0));
        assert_eq!(cache.get(&key).map(|e| (e.hits, e.failures)), Some((1, 1)));
        assert_eq!(cache.len(), 1);
        // A different plan replaces the entry as insert does.
        let mut other = entry("who directed Alien", "Alien", "written_by", "");
        other.hits = 2;
        cache.replace(other);
        let held = cache.get(&key).expect("replaced");
        assert_eq!(held.plan.metapaths[0].steps[0].relation, "written_by");
        assert_eq!((held.hits, held.failures), (2, 0));
    }

    #[test]
    fn reinserting_a_template_replaces_it() {
        let mut cache = PlanCache::new(CacheConfig::default());
        let (a, _) = cache.insert(entry("who directed Heat", "Heat", "directed_by", ""));
        let (b, _) = cache.insert(entry("who directed Alien", "Alien", "directed_by", ""));
        assert_eq!(a, b);
        assert_eq!(cache.len(), 1);
    }
}
