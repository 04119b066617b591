//! Cache manager (CacheRAG §4.2, §4.4): intent representations and verified plans.

use serde::{Deserialize, Serialize};

use super::Rpc;
use crate::{
    graph::{Entity, Metapath},
    Role,
};

/// Intermediate semantic representation of a question (CacheRAG's ISR).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Isr {
    pub topic_entities: Vec<String>,
    /// Constraints in the user's words.
    pub constraints: Vec<String>,
    pub domain: String,
    pub aspect: String,
}

/// What retrieved a verified answer, replayable without a model.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub entities: Vec<Entity>,
    pub metapaths: Vec<Metapath>,
    pub cypher: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheEntry {
    pub question: String,
    /// The question with its entity mentions masked (what replay matching compares).
    pub template: String,
    pub isr: Isr,
    pub plan: Plan,
    pub answers: Vec<String>,
    /// Times replaying the plan succeeded / failed since it was stored.
    pub hits: u32,
    pub failures: u32,
}

/// A past plan shown to the KG-Linker as an example.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FewShotExample {
    pub question: String,
    pub plan: Plan,
    pub answers: Vec<String>,
    pub similarity: f32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheLookup {
    pub question: String,
    /// Entities linked in the question, when the caller already knows them; the cache
    /// masks their mentions so that questions differing only in entity match.
    pub entities: Vec<Entity>,
    /// Examples wanted (CacheRAG's k, default 5).
    pub k: u16,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CacheLookupReply {
    pub isr: Isr,
    /// MMR-selected examples, most relevant first; empty when nothing is relevant.
    pub examples: Vec<FewShotExample>,
    /// A near-exact match worth replaying before calling a model.
    pub replay: Option<Plan>,
    /// What the words of this question meant in past verified plans (the learned
    /// phrase → relation lexicon), for the KG-Linker to compose a plan from.
    pub cues: Vec<RelationCue>,
}

/// One learned association of a question word with a relation step: across the
/// verified plans whose question used `word`, the share (smoothed) whose relation path
/// followed `relation` in this direction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RelationCue {
    /// The word's stem, as the shared text toolkit stems it.
    pub word: String,
    pub relation: String,
    /// The relation followed tail → head.
    pub inverse: bool,
    /// Confidence in `[0, 1)`.
    pub weight: f32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheStore {
    pub entry: CacheEntry,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheStoreReply {
    pub stored: bool,
}

impl Rpc for CacheLookup {
    const OP: &'static str = "lookup";
    const DEFAULT_ROLE: &'static str = Role::CACHE_MANAGER;
    type Reply = CacheLookupReply;
}

impl Rpc for CacheStore {
    const OP: &'static str = "store";
    const DEFAULT_ROLE: &'static str = Role::CACHE_MANAGER;
    type Reply = CacheStoreReply;
}
