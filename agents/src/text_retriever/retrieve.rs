//! Retrieval over a [`TextIndex`] (KET-RAG Alg. 4): an entity channel over the KG
//! skeleton and a keyword channel over the passages, sharing a context of `L` tokens by
//! the ratio θ (θ·L to the skeleton, the rest to keywords).
//!
//! - **Keyword channel.** Keywords are ranked — the question's own keywords first,
//!   rarest first, then (with vectors) every keyword by the cosine of its sentence
//!   vector to the question — and their passages gathered until they hold twice the
//!   channel's tokens; those candidates are ranked by how much of the question's
//!   keyword weight (idf) they hold plus, with vectors, their cosine to the question,
//!   and the best fill the channel.
//! - **Entity channel.** The skeleton entities the question names (the toolkit's
//!   gazetteer), then the nearest by vector, up to 10 seeds; the facts touching them
//!   (those joining two seeds first, 10 at most) are given as fact lines, and the rest
//!   of the channel is filled with the passages those facts were read from, most
//!   linked first.
//!
//! Without vectors both channels rank lexically only. Every passage keeps its file and
//! byte offset for citation.

use std::collections::{HashMap, HashSet};

use kgmesh_models::{
    l2_normalize,
    lexical::{text::keywords, Gazetteer},
};
use kgmesh_schemas::NodeId;
use kgmesh_stores::text::TextIndex;

use super::build::idf;

/// Entities seeding the entity channel (the paper's 10).
pub const SEEDS: usize = 10;
/// Facts given by the entity channel at most (the paper's 10).
pub const FACTS: usize = 10;

/// Which channels run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Channels {
    Keyword,
    Skeleton,
    Both,
}

impl std::fmt::Display for Channels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Keyword => "keyword",
            Self::Skeleton => "skeleton",
            Self::Both => "both",
        })
    }
}

impl std::str::FromStr for Channels {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "keyword" => Ok(Self::Keyword),
            "skeleton" => Ok(Self::Skeleton),
            "both" => Ok(Self::Both),
            other => Err(format!("`{other}`: expected keyword, skeleton or both")),
        }
    }
}

/// How much one search returns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchSettings {
    /// L: tokens of context in all.
    pub context_tokens: usize,
    /// θ: the entity channel's share of L when both channels run.
    pub theta: f32,
    pub channels: Channels,
}

impl Default for SearchSettings {
    fn default() -> Self {
        Self {
            context_tokens: 1_500,
            theta: 0.5,
            channels: Channels::Both,
        }
    }
}

/// Where a hit came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Keyword,
    Skeleton,
}

/// One retrieved passage or skeleton fact.
#[derive(Debug, Clone, PartialEq)]
pub enum Hit {
    Passage {
        passage: u32,
        score: f32,
        via: Via,
    },
    /// `index.skeleton[fact]`.
    Fact {
        fact: u32,
        score: f32,
    },
}

/// The index with what searching it needs, computed once when it is opened.
pub struct TextSearcher {
    index: TextIndex,
    positions: HashMap<String, u32>,
    idf: Vec<f32>,
    /// Per passage, the keywords it holds (the postings inverted).
    passage_keywords: Vec<Vec<u32>>,
    /// Normalized keyword vectors (empty without vectors).
    keyword_vectors: Vec<f32>,
    /// Skeleton entity names and the facts touching each.
    entities: Vec<String>,
    entity_facts: Vec<Vec<u32>>,
    fact_ends: Vec<(u32, u32)>,
    gazetteer: Gazetteer,
    /// Normalized entity-name vectors (filled by [`TextSearcher::set_entity_vectors`]).
    entity_vectors: Vec<f32>,
}

impl TextSearcher {
    pub fn new(index: TextIndex) -> Self {
        let positions = index.keyword_positions();
        let n = index.passages.len().max(1);
        let idf = index.postings.iter().map(|p| idf(n, p.len())).collect();
        let mut passage_keywords: Vec<Vec<u32>> = vec![Vec::new(); index.passages.len()];
        for (k, posting) in index.postings.iter().enumerate() {
            for &p in posting {
                passage_keywords[p as usize].push(k as u32);
            }
        }
        let dim = index.dim as usize;
        let mut keyword_vectors = index.keyword_means.clone();
        if dim > 0 {
            for row in keyword_vectors.chunks_mut(dim) {
                l2_normalize(row);
            }
        }
        let mut entity_at: HashMap<String, u32> = HashMap::new();
        let mut entities = Vec::new();
        let mut entity_facts: Vec<Vec<u32>> = Vec::new();
        let mut fact_ends = Vec::new();
        for (f, fact) in index.skeleton.iter().enumerate() {
            let mut end = |name: &str| {
                let at = *entity_at.entry(name.to_owned()).or_insert_with(|| {
                    entities.push(name.to_owned());
                    entity_facts.push(Vec::new());
                    (entities.len() - 1) as u32
                });
                entity_facts[at as usize].push(f as u32);
                at
            };
            let head = end(&fact.head);
            let tail = end(&fact.tail);
            fact_ends.push((head, tail));
        }
        let gazetteer = Gazetteer::build(
            entities
                .iter()
                .enumerate()
                .map(|(i, name)| (NodeId(i as u64), name.clone())),
        );
        Self {
            index,
            positions,
            idf,
            passage_keywords,
            keyword_vectors,
            entities,
            entity_facts,
            fact_ends,
            gazetteer,
            entity_vectors: Vec::new(),
        }
    }

    pub fn index(&self) -> &TextIndex {
        &self.index
    }

    /// The skeleton's entity names, for embedding ([`TextSearcher::set_entity_vectors`]).
    pub fn entity_names(&self) -> &[String] {
        &self.entities
    }

    /// One vector per [`TextSearcher::entity_names`] entry, in order.
    pub fn set_entity_vectors(&mut self, vectors: Vec<Vec<f32>>) {
        self.entity_vectors = vectors.into_iter().flatten().collect();
    }

    /// The best passages and facts for `question` (`vector`: its embedding, when the
    /// index has vectors), within `settings`' token budget, best first per channel.
    pub fn search(
        &self,
        question: &str,
        vector: Option<&[f32]>,
        settings: &SearchSettings,
    ) -> Vec<Hit> {
        let vector = vector.filter(|v| v.len() == self.index.dim as usize && !v.is_empty());
        let total = settings.context_tokens;
        let skeleton_share = match settings.channels {
            Channels::Keyword => 0,
            Channels::Skeleton => total,
            Channels::Both => (settings.theta.clamp(0.0, 1.0) * total as f32) as usize,
        };
        let mut hits = Vec::new();
        let mut used: HashSet<u32> = HashSet::new();
        if skeleton_share > 0 && !self.index.skeleton.is_empty() {
            hits.extend(self.entity_channel(question, vector, skeleton_share, &mut used));
        }
        let spent: usize = hits.iter().map(|h| self.tokens_of(h)).sum();
        if settings.channels != Channels::Skeleton {
            hits.extend(self.keyword_channel(
                question,
                vector,
                total.saturating_sub(spent),
                &mut used,
            ));
        }
        hits
    }

    /// The tokens a hit adds to the context.
    pub fn tokens_of(&self, hit: &Hit) -> usize {
        match hit {
            Hit::Passage { passage, .. } => self.index.passages[*passage as usize].tokens as usize,
            Hit::Fact { fact, .. } => {
                let fact = &self.index.skeleton[*fact as usize];
                keywords(&fact.head).len() + keywords(&fact.tail).len() + 4
            }
        }
    }

    fn keyword_channel(
        &self,
        question: &str,
        vector: Option<&[f32]>,
        budget: usize,
        used: &mut HashSet<u32>,
    ) -> Vec<Hit> {
        let asked: Vec<u32> = keywords(question)
            .iter()
            .filter_map(|k| self.positions.get(k).copied())
            .collect();
        let mut ranked: Vec<u32> = asked.clone();
        ranked.sort_by(|&a, &b| self.idf[b as usize].total_cmp(&self.idf[a as usize]));
        if let Some(vector) = vector {
            let dim = vector.len();
            let mut by_cosine: Vec<(u32, f32)> = self
                .keyword_vectors
                .chunks(dim)
                .enumerate()
                .map(|(k, row)| (k as u32, dot(row, vector)))
                .collect();
            by_cosine.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            ranked.extend(by_cosine.into_iter().take(200).map(|(k, _)| k));
        }
        // Candidates: passages of the best keywords until they hold twice the budget.
        let mut candidates: Vec<u32> = Vec::new();
        let mut seen: HashSet<u32> = HashSet::new();
        let mut gathered = 0;
        for keyword in ranked {
            if gathered >= 2 * budget {
                break;
            }
            for &p in &self.index.postings[keyword as usize] {
                if !used.contains(&p) && seen.insert(p) {
                    candidates.push(p);
                    gathered += self.index.passages[p as usize].tokens as usize;
                }
            }
        }
        let weight: HashMap<u32, f32> = asked.iter().map(|&k| (k, self.idf[k as usize])).collect();
        let most: f32 = weight.values().sum::<f32>().max(f32::EPSILON);
        let mut scored: Vec<(u32, f32)> = candidates
            .into_iter()
            .map(|p| {
                let lexical: f32 = self.passage_keywords[p as usize]
                    .iter()
                    .filter_map(|k| weight.get(k))
                    .sum::<f32>()
                    / most;
                let cosine = vector
                    .and_then(|v| self.index.passage_vector(p as usize).map(|row| dot(row, v)))
                    .unwrap_or(0.0);
                (p, lexical + cosine)
            })
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        self.fill(scored, budget, Via::Keyword, used)
    }

    fn entity_channel(
        &self,
        question: &str,
        vector: Option<&[f32]>,
        budget: usize,
        used: &mut HashSet<u32>,
    ) -> Vec<Hit> {
        // Seeds: named in the question, then nearest by vector.
        let mut seeds: Vec<u32> = Vec::new();
        for mention in self.gazetteer.find_mentions(question) {
            for candidate in mention.candidates.iter().filter(|_| mention.exact) {
                let id = candidate.entity.id.0 as u32;
                if !seeds.contains(&id) {
                    seeds.push(id);
                }
            }
        }
        if let Some(vector) = vector.filter(|_| !self.entity_vectors.is_empty()) {
            let mut near: Vec<(u32, f32)> = self
                .entity_vectors
                .chunks(vector.len())
                .enumerate()
                .map(|(e, row)| (e as u32, dot(row, vector)))
                .collect();
            near.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            for (e, _) in near {
                if seeds.len() >= SEEDS {
                    break;
                }
                if !seeds.contains(&e) {
                    seeds.push(e);
                }
            }
        }
        seeds.truncate(SEEDS);
        if seeds.is_empty() {
            return Vec::new();
        }
        let rank: HashMap<u32, usize> = seeds.iter().enumerate().map(|(i, &e)| (e, i)).collect();
        // Facts touching the seeds: both ends seeds first, then by the seed's rank.
        let mut facts: Vec<(u32, (bool, usize))> = Vec::new();
        let mut seen = HashSet::new();
        for &seed in &seeds {
            for &f in &self.entity_facts[seed as usize] {
                if seen.insert(f) {
                    let (h, t) = self.fact_ends[f as usize];
                    let both = rank.contains_key(&h) && rank.contains_key(&t);
                    // The better rank of its seed ends.
                    let best = [rank.get(&h), rank.get(&t)]
                        .into_iter()
                        .flatten()
                        .min()
                        .copied()
                        .unwrap_or(usize::MAX);
                    facts.push((f, (!both, best)));
                }
            }
        }
        facts.sort_by_key(|&(f, key)| (key, f));
        // Passages most linked to the seeds' facts.
        let mut links: HashMap<u32, f32> = HashMap::new();
        for &(f, (not_both, best)) in &facts {
            let weight = if not_both { 1.0 } else { 2.0 } / (1.0 + best as f32);
            for &p in &self.index.skeleton[f as usize].passages {
                *links.entry(p).or_insert(0.0) += weight;
            }
        }
        let mut hits = Vec::new();
        let mut spent = 0;
        for &(f, (not_both, best)) in facts.iter().take(FACTS) {
            let hit = Hit::Fact {
                fact: f,
                score: if not_both { 1.0 } else { 2.0 } / (1.0 + best as f32),
            };
            let tokens = self.tokens_of(&hit);
            if spent + tokens > budget / 2 {
                break;
            }
            spent += tokens;
            hits.push(hit);
        }
        let mut linked: Vec<(u32, f32)> = links.into_iter().collect();
        linked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        hits.extend(self.fill(linked, budget - spent, Via::Skeleton, used));
        hits
    }

    /// Passages in the given order while they fit `budget` tokens.
    fn fill(
        &self,
        scored: Vec<(u32, f32)>,
        budget: usize,
        via: Via,
        used: &mut HashSet<u32>,
    ) -> Vec<Hit> {
        let mut hits = Vec::new();
        let mut spent = 0;
        for (passage, score) in scored {
            if used.contains(&passage) {
                continue;
            }
            let tokens = self.index.passages[passage as usize].tokens as usize;
            if spent + tokens > budget {
                continue;
            }
            spent += tokens;
            used.insert(passage);
            hits.push(Hit::Passage {
                passage,
                score,
                via,
            });
        }
        hits
    }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
