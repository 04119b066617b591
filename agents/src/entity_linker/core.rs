//! Linking mentions to graph ids without scanning every name per mention.
//!
//! [`NameIndex`] is built once from [`GraphStore::scan_names`]: a map from normalized
//! name to nodes (exact and normalized matches, which rank first) and a trigram posting
//! index for fuzzy matches. A mention is scored against only the names that share its
//! rarer trigrams, so a lookup costs the length of a few posting lists, not the number
//! of nodes. Embedding links come from a [`VectorIndex`] over name embeddings.

use std::collections::{HashMap, HashSet};

use kgmesh_models::Embedder;
use kgmesh_schemas::{
    graph::{Entity, ScoredEntity},
    messages::entity_linker::{LinkMode, MentionLinks},
    NodeId,
};
use kgmesh_stores::{GraphStore, StoreError, VectorIndex, VectorItem};

/// Names fetched per `scan_names` page while building the index.
const SCAN_PAGE: usize = 10_000;
/// Trigrams whose posting list is longer than this are skipped when rarer ones exist
/// (they match a large share of all names and would make a lookup a full scan).
const COMMON_TRIGRAM: usize = 20_000;
/// Candidates re-scored exactly per mention after trigram counting.
const SHORTLIST: usize = 200;
/// Score of an exact or normalized match.
pub const EXACT_SCORE: f32 = 1.0;

#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("graph store: {0}")]
    Store(#[from] StoreError),
    #[error("embedder: {0}")]
    Embed(#[from] kgmesh_models::EmbedError),
    #[error("embedding link requested but no embedder or vector index is configured")]
    NoEmbeddings,
}

/// Case-folded, punctuation as spaces, whitespace collapsed.
pub fn normalize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for word in name
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
    out
}

fn trigrams(normalized: &str) -> Vec<u32> {
    let padded: Vec<char> = std::iter::once(' ')
        .chain(std::iter::once(' '))
        .chain(normalized.chars())
        .chain(std::iter::once(' '))
        .collect();
    let mut out: Vec<u32> = padded
        .windows(3)
        .map(|w| {
            // FNV-1a over the three chars; collisions only cost a little precision.
            let mut hash: u32 = 0x811c_9dc5;
            for c in w {
                hash ^= *c as u32;
                hash = hash.wrapping_mul(0x0100_0193);
            }
            hash
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The linker's index over every node name of one graph.
pub struct NameIndex {
    entities: Vec<Entity>,
    normalized: Vec<String>,
    by_normalized: HashMap<String, Vec<u32>>,
    postings: HashMap<u32, Vec<u32>>,
    trigram_counts: Vec<u16>,
}

impl NameIndex {
    /// Pages through every node name of `store` and indexes it.
    pub async fn build(store: &dyn GraphStore) -> Result<Self, StoreError> {
        let mut entities = Vec::new();
        let mut after = None;
        loop {
            let page = store.scan_names(after, SCAN_PAGE).await?;
            let Some(last) = page.last() else { break };
            after = Some(last.id);
            let full = page.len() < SCAN_PAGE;
            entities.extend(page);
            if full {
                break;
            }
        }
        Ok(Self::from_entities(entities))
    }

    pub fn from_entities(entities: Vec<Entity>) -> Self {
        let mut normalized = Vec::with_capacity(entities.len());
        let mut by_normalized: HashMap<String, Vec<u32>> = HashMap::new();
        let mut postings: HashMap<u32, Vec<u32>> = HashMap::new();
        let mut trigram_counts = Vec::with_capacity(entities.len());
        for (index, entity) in entities.iter().enumerate() {
            let index = index as u32;
            let norm = normalize(&entity.name);
            let grams = trigrams(&norm);
            trigram_counts.push(grams.len().min(u16::MAX as usize) as u16);
            for gram in grams {
                postings.entry(gram).or_default().push(index);
            }
            by_normalized.entry(norm.clone()).or_default().push(index);
            normalized.push(norm);
        }
        Self {
            entities,
            normalized,
            by_normalized,
            postings,
            trigram_counts,
        }
    }

    pub fn len(&self) -> usize {
        self.entities.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entities.is_empty()
    }

    /// Nodes whose normalized name equals the normalized `text`.
    pub fn exact(&self, text: &str) -> Vec<&Entity> {
        self.by_normalized
            .get(&normalize(text))
            .map(|hits| hits.iter().map(|&i| &self.entities[i as usize]).collect())
            .unwrap_or_default()
    }

    /// Whether some node is named `normalized` (already normalized).
    pub fn contains_normalized(&self, normalized: &str) -> bool {
        self.by_normalized.contains_key(normalized)
    }

    /// Nodes named exactly `normalized` (already normalized).
    pub fn exact_normalized(&self, normalized: &str) -> Vec<&Entity> {
        self.by_normalized
            .get(normalized)
            .map(|hits| hits.iter().map(|&i| &self.entities[i as usize]).collect())
            .unwrap_or_default()
    }

    /// The `top_m` best fuzzy matches of `mention`: exact byte matches, then normalized
    /// matches (score 1.0), then names by trigram overlap (Dice coefficient). Names much
    /// shorter than the mention are dropped, as ByoKG-RAG's fuzzy index does.
    pub fn fuzzy(&self, mention: &str, top_m: usize) -> Vec<ScoredEntity> {
        let norm = normalize(mention);
        if norm.is_empty() || top_m == 0 {
            return Vec::new();
        }
        let mut out: Vec<ScoredEntity> = Vec::new();
        let mut taken: HashSet<u32> = HashSet::new();
        if let Some(hits) = self.by_normalized.get(&norm) {
            let mut hits = hits.clone();
            // Byte-identical names before merely normalized ones, then by id.
            hits.sort_by_key(|&i| (self.entities[i as usize].name != mention, i));
            for i in hits {
                taken.insert(i);
                out.push(ScoredEntity {
                    entity: self.entities[i as usize].clone(),
                    score: EXACT_SCORE,
                });
            }
        }
        if out.len() >= top_m {
            out.truncate(top_m);
            return out;
        }
        let grams = trigrams(&norm);
        let mut lists: Vec<&Vec<u32>> = grams.iter().filter_map(|g| self.postings.get(g)).collect();
        lists.sort_by_key(|l| l.len());
        let rare: Vec<&Vec<u32>> = lists
            .iter()
            .copied()
            .filter(|l| l.len() <= COMMON_TRIGRAM)
            .collect();
        let used = if rare.is_empty() {
            lists.into_iter().take(1).collect()
        } else {
            rare
        };
        let mut shared: HashMap<u32, u16> = HashMap::new();
        for list in used {
            for &i in list {
                *shared.entry(i).or_default() += 1;
            }
        }
        let mention_grams = grams.len() as f32;
        let mention_chars = norm.chars().count();
        let mut scored: Vec<(f32, u32)> = shared
            .into_iter()
            .filter(|(i, _)| !taken.contains(i))
            .filter(|(i, _)| self.normalized[*i as usize].chars().count() + 4 >= mention_chars)
            .map(|(i, count)| {
                let other = self.trigram_counts[i as usize] as f32;
                (2.0 * count as f32 / (mention_grams + other), i)
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.truncate(SHORTLIST);
        // Re-score the shortlist exactly (the counts above skip common trigrams).
        let mention_set: HashSet<u32> = grams.into_iter().collect();
        let mut exact_scored: Vec<(f32, u32)> = scored
            .into_iter()
            .map(|(_, i)| {
                let other = trigrams(&self.normalized[i as usize]);
                let common = other.iter().filter(|g| mention_set.contains(g)).count();
                let dice = 2.0 * common as f32 / (mention_set.len() + other.len()) as f32;
                // Never tie with a real exact match.
                (dice.min(0.99), i)
            })
            .collect();
        exact_scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        for (score, i) in exact_scored {
            if out.len() >= top_m {
                break;
            }
            if score <= 0.0 {
                break;
            }
            out.push(ScoredEntity {
                entity: self.entities[i as usize].clone(),
                score,
            });
        }
        out
    }
}

/// Embeds every name of `index` into `vectors` (ids are node ids), in batches.
pub async fn index_name_vectors(
    index: &NameIndex,
    embedder: &dyn Embedder,
    vectors: &dyn VectorIndex,
    batch: usize,
) -> Result<(), LinkError> {
    for chunk in index.entities.chunks(batch.max(1)) {
        let names: Vec<String> = chunk.iter().map(|e| e.name.clone()).collect();
        let embedded = embedder.embed(&names).await?;
        let items = chunk
            .iter()
            .zip(embedded)
            .map(|(entity, vector)| VectorItem {
                id: entity.id.0,
                vector,
                payload: vec![("name".to_owned(), entity.name.clone())],
            })
            .collect();
        vectors.upsert(items).await?;
    }
    Ok(())
}

/// What linking may use besides the name index.
pub struct EmbeddingLinker<'a> {
    pub embedder: &'a dyn Embedder,
    pub vectors: &'a dyn VectorIndex,
}

/// Links every mention: top `top_m` candidates each, best first, in request order.
/// With [`LinkMode::Both`] the candidates of both methods are merged by node, keeping
/// the higher score; exact matches always rank first.
pub async fn link(
    mentions: &[String],
    index: &NameIndex,
    embedding_opt: Option<&EmbeddingLinker<'_>>,
    mode: LinkMode,
    top_m: usize,
) -> Result<Vec<MentionLinks>, LinkError> {
    let want_fuzzy = matches!(mode, LinkMode::Fuzzy | LinkMode::Both);
    let want_embedding = matches!(mode, LinkMode::Embedding | LinkMode::Both);
    let embedded = match (want_embedding, embedding_opt) {
        (false, _) => None,
        (true, Some(linker)) => {
            let vectors = linker.embedder.embed(mentions).await?;
            let mut hits = Vec::with_capacity(vectors.len());
            for vector in &vectors {
                hits.push(linker.vectors.search(vector, top_m, None).await?);
            }
            Some(hits)
        }
        (true, None) if mode == LinkMode::Embedding => return Err(LinkError::NoEmbeddings),
        (true, None) => None,
    };
    let mut out = Vec::with_capacity(mentions.len());
    for (position, mention) in mentions.iter().enumerate() {
        let mut candidates: Vec<ScoredEntity> = if want_fuzzy {
            index.fuzzy(mention, top_m)
        } else {
            index
                .exact(mention)
                .into_iter()
                .take(top_m)
                .map(|e| ScoredEntity {
                    entity: e.clone(),
                    score: EXACT_SCORE,
                })
                .collect()
        };
        if let Some(hits) = embedded.as_ref().and_then(|h| h.get(position)) {
            for hit in hits {
                let name = hit
                    .payload
                    .iter()
                    .find(|(k, _)| k == "name")
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default();
                let id = NodeId(hit.id);
                // Below exact matches however close the vectors are.
                let score = hit.score.clamp(0.0, 0.99);
                match candidates.iter_mut().find(|c| c.entity.id == id) {
                    Some(existing) => existing.score = existing.score.max(score),
                    None => candidates.push(ScoredEntity {
                        entity: Entity { id, name },
                        score,
                    }),
                }
            }
        }
        candidates.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(a.entity.id.cmp(&b.entity.id))
        });
        candidates.truncate(top_m);
        out.push(MentionLinks {
            mention: mention.clone(),
            candidates,
        });
    }
    Ok(out)
}

/// Entity mentions found in free text by the name index: word n-grams (up to
/// `max_words`) whose normalized form names a node, longest first, not overlapping.
/// Single stop words and names shorter than `min_chars` are ignored: a graph that has a
/// node called "The" should not link every question to it.
pub fn gazetteer_mentions(
    text: &str,
    index: &NameIndex,
    max_words: usize,
    min_chars: usize,
) -> Vec<String> {
    let words: Vec<String> = normalize(text)
        .split(' ')
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect();
    let mut matches: Vec<(usize, usize)> = Vec::new();
    for start in 0..words.len() {
        for length in (1..=max_words.min(words.len() - start)).rev() {
            let candidate = words[start..start + length].join(" ");
            if candidate.chars().count() < min_chars {
                continue;
            }
            if length == 1 && crate::scoring::text::is_stop_word(&candidate) {
                continue;
            }
            if index.contains_normalized(&candidate) {
                matches.push((start, length));
                break;
            }
        }
    }
    // Longest first, then leftmost; drop anything overlapping a kept match.
    matches.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut covered = vec![false; words.len()];
    let mut kept: Vec<(usize, usize)> = Vec::new();
    for (start, length) in matches {
        if covered[start..start + length].iter().any(|c| *c) {
            continue;
        }
        covered[start..start + length]
            .iter_mut()
            .for_each(|c| *c = true);
        kept.push((start, length));
    }
    kept.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    kept.into_iter()
        .map(|(start, length)| words[start..start + length].join(" "))
        .collect()
}
