//! Building a [`TextIndex`] (KET-RAG indexing, Alg. 3): files → chunks and passages
//! (sub-chunks) → keyword postings and vectors → chunk neighbour graph → PageRank. The
//! KG skeleton is read from the most central chunks by [`super::skeleton`].
//!
//! Adding files to an existing index keeps everything already computed for the other
//! files (their passages, vectors and skeleton triples); an unchanged file is skipped
//! and a changed one replaced. The chunk graph and PageRank, which are cheap, are
//! computed anew over all chunks.

use std::{
    collections::{HashMap, HashSet},
    path::Path,
};

use kgmesh_models::{l2_normalize, lexical::text::keywords, Embedder};
use kgmesh_stores::{
    text::{fingerprint, Chunk, Passage, SourceFile, TextIndex},
    vector::EmbeddedVectorIndex,
    Metric, VectorIndex, VectorItem,
};

use super::chunk::{bytes_of, halve, sentences, tokenize, unreadable, windows};

/// PageRank damping (the paper's value).
pub const DAMPING: f32 = 0.85;
/// Texts embedded per call, so that progress can be shown.
const EMBED_BATCH: usize = 256;
/// A keyword in more chunks than this (and than the square root of the chunk count)
/// links too much to say which chunks are alike; the lexical neighbour search skips it,
/// which keeps it far from the O(n²) of comparing every pair.
const COMMON_KEYWORD_CHUNKS: usize = 64;

/// What happened to one input file.
#[derive(Debug, Clone, PartialEq)]
pub enum FileStatus {
    Indexed {
        chunks: usize,
        passages: usize,
    },
    /// Indexed before with the same content.
    Unchanged,
    /// Indexed before with other content: the old passages were removed.
    Replaced {
        chunks: usize,
        passages: usize,
    },
    /// Not indexed, and why.
    Skipped(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct FileReport {
    pub path: String,
    pub status: FileStatus,
}

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("{0}")]
    Embedder(String),
    #[error("embedding failed: {0}")]
    Embed(String),
    #[error("vector search failed: {0}")]
    Vectors(String),
}

/// Limits on what one file may be.
#[derive(Debug, Clone, Copy)]
pub struct FileLimits {
    pub max_bytes: u64,
}

/// Checks that `embedder` may add to `index` (the same embedder, or none for an index
/// without vectors).
pub fn check_embedder(
    index: &TextIndex,
    embedder: Option<&dyn Embedder>,
) -> Result<(), BuildError> {
    let wanted = embedder.map(|e| (e.name().to_owned(), e.dim() as u32));
    let have = index.embedder.clone().map(|name| (name, index.dim));
    if index.passages.is_empty() || wanted == have {
        return Ok(());
    }
    let say = |side: &Option<(String, u32)>| match side {
        Some((name, dim)) => format!("{name} ({dim} dimensions)"),
        None => "no embedder".to_owned(),
    };
    Err(BuildError::Embedder(format!(
        "the index was built with {}, this run has {}: use the same embedder (`--no-vectors` for none), or --rebuild",
        say(&have),
        say(&wanted)
    )))
}

/// Adds `paths` to `index`; each file's outcome is reported, and a bad file never stops
/// the others. `progress` receives one line per step worth telling.
pub async fn add_files(
    index: &mut TextIndex,
    paths: &[std::path::PathBuf],
    embedder: Option<&dyn Embedder>,
    limits: FileLimits,
    progress: &mut dyn FnMut(String),
) -> Result<Vec<FileReport>, BuildError> {
    check_embedder(index, embedder)?;
    if let Some(embedder) = embedder {
        index.embedder = Some(embedder.name().to_owned());
        index.dim = embedder.dim() as u32;
    }
    let mut reports = Vec::new();
    let total = paths.len();
    for (n, path) in paths.iter().enumerate() {
        let shown = path.display().to_string();
        let status = add_file(index, path, embedder, limits).await?;
        if let FileStatus::Skipped(why) = &status {
            progress(format!("skipped {shown}: {why}"));
        } else if total <= 20 || (n + 1).is_multiple_of(50) || n + 1 == total {
            progress(format!(
                "[{}/{total}] {shown}: {}",
                n + 1,
                describe(&status)
            ));
        }
        reports.push(FileReport {
            path: shown,
            status,
        });
    }
    Ok(reports)
}

/// A short description of a file's outcome.
pub fn describe(status: &FileStatus) -> String {
    match status {
        FileStatus::Indexed { chunks, passages } => {
            format!("{chunks} chunks, {passages} passages")
        }
        FileStatus::Unchanged => "unchanged, kept".to_owned(),
        FileStatus::Replaced { chunks, passages } => {
            format!("changed, indexed again ({chunks} chunks, {passages} passages)")
        }
        FileStatus::Skipped(why) => format!("skipped: {why}"),
    }
}

async fn add_file(
    index: &mut TextIndex,
    path: &Path,
    embedder: Option<&dyn Embedder>,
    limits: FileLimits,
) -> Result<FileStatus, BuildError> {
    let shown = path.display().to_string();
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => return Ok(FileStatus::Skipped("not a file".to_owned())),
        Ok(meta) if meta.len() > limits.max_bytes => {
            return Ok(FileStatus::Skipped(format!(
                "{:.1} MB, larger than the {:.1} MB a file may have (--max-file-mb)",
                meta.len() as f64 / 1e6,
                limits.max_bytes as f64 / 1e6
            )))
        }
        Ok(_) => {}
        Err(error) => return Ok(FileStatus::Skipped(format!("cannot read it: {error}"))),
    }
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) => return Ok(FileStatus::Skipped(format!("cannot read it: {error}"))),
    };
    if let Some(why) = unreadable(&bytes) {
        return Ok(FileStatus::Skipped(why));
    }
    let hash = fingerprint(&bytes);
    let mut replaced = false;
    if let Some(old) = index.files.iter().position(|f| f.path == shown) {
        if index.files[old].hash == hash {
            return Ok(FileStatus::Unchanged);
        }
        remove_files(index, &[old], embedder).await?;
        replaced = true;
    }
    let Ok(body) = String::from_utf8(bytes) else {
        unreachable!("unreadable() checked UTF-8");
    };
    let (chunks, passages) = append_text(index, shown, hash, &body, embedder).await?;
    Ok(if replaced {
        FileStatus::Replaced { chunks, passages }
    } else {
        FileStatus::Indexed { chunks, passages }
    })
}

/// Cuts `body` into chunks and passages, adds them, their keywords and vectors.
async fn append_text(
    index: &mut TextIndex,
    path: String,
    hash: u64,
    body: &str,
    embedder: Option<&dyn Embedder>,
) -> Result<(usize, usize), BuildError> {
    let settings = index.settings.clone();
    let tokens = tokenize(body);
    let file = index.files.len() as u32;
    let first_chunk = index.chunks.len() as u32;
    let first_passage = index.passages.len();
    for window in windows(
        &tokens,
        settings.chunk_tokens as usize,
        settings.overlap_tokens as usize,
    ) {
        let bytes = bytes_of(&tokens, &window);
        let chunk_id = index.chunks.len() as u32;
        let parts = halve(&tokens, window.clone(), settings.splits);
        index.chunks.push(Chunk {
            file,
            offset: bytes.start as u64,
            len: bytes.len() as u32,
            tokens: window.len() as u32,
            first_passage: index.passages.len() as u32,
            passage_count: parts.len() as u32,
            rank: 0.0,
            extracted: false,
        });
        for part in parts {
            let span = bytes_of(&tokens, &part);
            index.passages.push(Passage {
                chunk: chunk_id,
                offset: span.start as u64,
                len: span.len() as u32,
                tokens: part.len() as u32,
                text: body[span].to_owned(),
            });
        }
    }
    let chunk_count = index.chunks.len() as u32 - first_chunk;
    index.files.push(SourceFile {
        path,
        bytes: body.len() as u64,
        hash,
        first_chunk,
        chunk_count,
    });
    // Postings.
    let mut positions = index.keyword_positions();
    let dim = index.dim as usize;
    for passage in first_passage..index.passages.len() {
        for keyword in keywords(&index.passages[passage].text) {
            let at = *positions.entry(keyword.clone()).or_insert_with(|| {
                index.keywords.push(keyword);
                index.postings.push(Vec::new());
                if embedder.is_some() {
                    index.keyword_means.extend(std::iter::repeat_n(0.0, dim));
                    index.keyword_sentences.push(0);
                }
                (index.keywords.len() - 1) as u32
            });
            index.postings[at as usize].push(passage as u32);
        }
    }
    if let Some(embedder) = embedder {
        let texts: Vec<String> = index.passages[first_passage..]
            .iter()
            .map(|p| p.text.clone())
            .collect();
        for vector in embed_all(embedder, &texts).await? {
            index.passage_vectors.extend(vector);
        }
        let sentences: Vec<String> = texts.iter().flat_map(|t| passage_sentences(t)).collect();
        add_sentence_vectors(index, &positions, embedder, &sentences, 1.0).await?;
    }
    Ok((chunk_count as usize, index.passages.len() - first_passage))
}

async fn embed_all(embedder: &dyn Embedder, texts: &[String]) -> Result<Vec<Vec<f32>>, BuildError> {
    let mut out = Vec::with_capacity(texts.len());
    for batch in texts.chunks(EMBED_BATCH) {
        out.extend(
            embedder
                .embed(batch)
                .await
                .map_err(|e| BuildError::Embed(e.to_string()))?,
        );
    }
    Ok(out)
}

/// The sentences of a passage, cut at [`super::chunk::MAX_SENTENCE_TOKENS`]: what a
/// passage adds to its keywords' vectors, and takes away again when it is removed.
fn passage_sentences(text: &str) -> Vec<String> {
    let tokens = tokenize(text);
    sentences(&tokens, 0..tokens.len())
        .iter()
        .map(|sentence| text[bytes_of(&tokens, sentence)].to_owned())
        .collect()
}

/// Adds (`sign` 1) or takes away (-1) the vectors of `sentences` from the keywords they
/// hold.
async fn add_sentence_vectors(
    index: &mut TextIndex,
    positions: &HashMap<String, u32>,
    embedder: &dyn Embedder,
    sentences: &[String],
    sign: f32,
) -> Result<(), BuildError> {
    let dim = index.dim as usize;
    let vectors = embed_all(embedder, sentences).await?;
    for (sentence, vector) in sentences.iter().zip(vectors) {
        for keyword in keywords(sentence) {
            let Some(&at) = positions.get(&keyword) else {
                continue;
            };
            let at = at as usize;
            // A running mean: every stored value stays within [-1, 1].
            let count = index.keyword_sentences[at] as f32;
            let after = if sign > 0.0 { count + 1.0 } else { count - 1.0 };
            for (mean, v) in index.keyword_means[at * dim..(at + 1) * dim]
                .iter_mut()
                .zip(&vector)
            {
                *mean = if after > 0.0 {
                    (*mean * count + sign * v) / after
                } else {
                    0.0
                };
            }
            index.keyword_sentences[at] = after.max(0.0) as u32;
        }
    }
    Ok(())
}

/// Removes files (by position in `index.files`) and everything read from them.
pub async fn remove_files(
    index: &mut TextIndex,
    files: &[usize],
    embedder: Option<&dyn Embedder>,
) -> Result<(), BuildError> {
    let gone: HashSet<u32> = files.iter().map(|&f| f as u32).collect();
    let keep_chunk: Vec<bool> = index
        .chunks
        .iter()
        .map(|c| !gone.contains(&c.file))
        .collect();
    let keep_passage: Vec<bool> = index
        .passages
        .iter()
        .map(|p| keep_chunk[p.chunk as usize])
        .collect();
    // Take the removed passages' sentences out of the keyword vectors.
    if let Some(embedder) = embedder.filter(|_| index.embedder.is_some()) {
        let removed: Vec<String> = index
            .passages
            .iter()
            .zip(&keep_passage)
            .filter(|(_, &keep)| !keep)
            .flat_map(|(passage, _)| passage_sentences(&passage.text))
            .collect();
        let positions = index.keyword_positions();
        add_sentence_vectors(index, &positions, embedder, &removed, -1.0).await?;
    }
    let remap = |keep: &[bool]| {
        let mut next = 0u32;
        keep.iter()
            .map(|&k| {
                k.then(|| {
                    next += 1;
                    next - 1
                })
            })
            .collect::<Vec<Option<u32>>>()
    };
    let file_map = remap(
        &(0..index.files.len())
            .map(|f| !gone.contains(&(f as u32)))
            .collect::<Vec<_>>(),
    );
    let chunk_map = remap(&keep_chunk);
    let passage_map = remap(&keep_passage);
    let dim = index.dim as usize;
    let mut vectors = Vec::new();
    let mut passages = Vec::new();
    for (i, mut passage) in std::mem::take(&mut index.passages).into_iter().enumerate() {
        if let Some(chunk) = chunk_map[passage.chunk as usize] {
            passage.chunk = chunk;
            if dim > 0 && !index.passage_vectors.is_empty() {
                vectors.extend_from_slice(&index.passage_vectors[i * dim..(i + 1) * dim]);
            }
            passages.push(passage);
        }
    }
    index.passages = passages;
    index.passage_vectors = vectors;
    let mut chunks = Vec::new();
    for mut chunk in std::mem::take(&mut index.chunks) {
        if let Some(file) = file_map[chunk.file as usize] {
            chunk.file = file;
            chunk.first_passage =
                passage_map[chunk.first_passage as usize].expect("a kept chunk keeps its passages");
            chunks.push(chunk);
        }
    }
    index.chunks = chunks;
    index.files = std::mem::take(&mut index.files)
        .into_iter()
        .enumerate()
        .filter(|(f, _)| !gone.contains(&(*f as u32)))
        .map(|(_, file)| file)
        .collect();
    let mut first = 0;
    for file in &mut index.files {
        file.first_chunk = first;
        first += file.chunk_count;
    }
    for posting in &mut index.postings {
        *posting = posting
            .iter()
            .filter_map(|&p| passage_map[p as usize])
            .collect();
    }
    index.skeleton.retain_mut(|triple| {
        triple.passages = triple
            .passages
            .iter()
            .filter_map(|&p| passage_map[p as usize])
            .collect();
        !triple.passages.is_empty()
    });
    index.neighbours.clear();
    Ok(())
}

/// Recomputes the chunk neighbour graph (top-k lexical and top-k embedding neighbours
/// per chunk, symmetrized) and every chunk's PageRank.
pub async fn rank_chunks(
    index: &mut TextIndex,
    progress: &mut dyn FnMut(String),
) -> Result<(), BuildError> {
    let n = index.chunks.len();
    let k = index.settings.knn as usize;
    let mut edges: Vec<HashMap<u32, f32>> = vec![HashMap::new(); n];
    let mut link = |a: usize, b: usize, weight: f32| {
        if a != b && weight > 0.0 {
            let w = edges[a].entry(b as u32).or_insert(0.0);
            *w = w.max(weight);
            let w = edges[b].entry(a as u32).or_insert(0.0);
            *w = w.max(weight);
        }
    };
    // Lexical neighbours: shared keywords weighted by idf, common keywords skipped.
    let chunk_keywords = chunk_keywords(index);
    let common = COMMON_KEYWORD_CHUNKS.max((n as f64).sqrt() as usize);
    let idf: Vec<f32> = chunk_keywords
        .1
        .iter()
        .map(|chunks| idf(n, chunks.len()))
        .collect();
    for (a, words) in chunk_keywords.0.iter().enumerate() {
        let mut scores: HashMap<u32, f32> = HashMap::new();
        let mut own = 0.0;
        for &w in words {
            own += idf[w as usize];
            let holders = &chunk_keywords.1[w as usize];
            if holders.len() > common {
                continue;
            }
            for &b in holders {
                if b as usize != a {
                    *scores.entry(b).or_insert(0.0) += idf[w as usize];
                }
            }
        }
        for (b, score) in top(scores.into_iter().collect(), k) {
            link(a, b as usize, score / own.max(f32::EPSILON));
        }
    }
    if index.embedder.is_some() && n > 1 {
        let dim = index.dim as usize;
        let vectors = EmbeddedVectorIndex::new(dim, Metric::Cosine).with_index_threshold(4_096);
        let chunk_vectors: Vec<Vec<f32>> = (0..n).map(|c| chunk_vector(index, c)).collect();
        let items = chunk_vectors
            .iter()
            .enumerate()
            .map(|(c, vector)| VectorItem {
                id: c as u64,
                vector: vector.clone(),
                payload: Vec::new(),
            })
            .collect();
        vectors
            .upsert(items)
            .await
            .map_err(|e| BuildError::Vectors(e.to_string()))?;
        for (c, vector) in chunk_vectors.iter().enumerate() {
            let hits = vectors
                .search(vector, k + 1, None)
                .await
                .map_err(|e| BuildError::Vectors(e.to_string()))?;
            for hit in hits.into_iter().filter(|h| h.id as usize != c).take(k) {
                link(c, hit.id as usize, hit.score.max(0.0));
            }
            if (c + 1).is_multiple_of(5_000) {
                progress(format!("chunk graph: {}/{n} chunks", c + 1));
            }
        }
    }
    index.neighbours = edges
        .into_iter()
        .map(|e| {
            let mut list: Vec<(u32, f32)> = e.into_iter().collect();
            list.sort_by_key(|&(c, _)| c);
            list
        })
        .collect();
    let ranks = pagerank(&index.neighbours, DAMPING);
    for (chunk, rank) in index.chunks.iter_mut().zip(ranks) {
        chunk.rank = rank;
    }
    Ok(())
}

/// Per chunk its keyword positions, and per keyword the chunks holding it.
fn chunk_keywords(index: &TextIndex) -> (Vec<Vec<u32>>, Vec<Vec<u32>>) {
    let mut per_chunk: Vec<Vec<u32>> = vec![Vec::new(); index.chunks.len()];
    let mut per_keyword = Vec::with_capacity(index.postings.len());
    for (w, posting) in index.postings.iter().enumerate() {
        let mut chunks: Vec<u32> = posting
            .iter()
            .map(|&p| index.passages[p as usize].chunk)
            .collect();
        chunks.dedup();
        for &c in &chunks {
            per_chunk[c as usize].push(w as u32);
        }
        per_keyword.push(chunks);
    }
    (per_chunk, per_keyword)
}

/// The normalized mean of a chunk's passage vectors.
fn chunk_vector(index: &TextIndex, chunk: usize) -> Vec<f32> {
    let dim = index.dim as usize;
    let mut sum = vec![0.0f32; dim];
    for p in index.passages_of(chunk) {
        if let Some(v) = index.passage_vector(p) {
            for (s, x) in sum.iter_mut().zip(v) {
                *s += x;
            }
        }
    }
    l2_normalize(&mut sum);
    sum
}

/// The idf the text index ranks keywords by: rarer in `documents` (passages, chunks)
/// weighs more; never negative.
pub fn idf(documents: usize, holding: usize) -> f32 {
    ((documents as f32 + 1.0) / (holding as f32 + 0.5))
        .ln()
        .max(0.0)
}

/// The `k` highest-scored, best first (ties by id).
fn top(mut scored: Vec<(u32, f32)>, k: usize) -> Vec<(u32, f32)> {
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.truncate(k);
    scored
}

/// PageRank over a weighted undirected graph (power iteration until the ranks move by
/// less than 1e-6 in total, at most 100 rounds); a node without edges spreads its rank
/// evenly.
pub fn pagerank(neighbours: &[Vec<(u32, f32)>], damping: f32) -> Vec<f32> {
    let n = neighbours.len();
    if n == 0 {
        return Vec::new();
    }
    let out_weight: Vec<f32> = neighbours
        .iter()
        .map(|list| list.iter().map(|&(_, w)| w).sum())
        .collect();
    let mut rank = vec![1.0 / n as f32; n];
    for _ in 0..100 {
        let dangling: f32 = (0..n)
            .filter(|&i| out_weight[i] <= 0.0)
            .map(|i| rank[i])
            .sum();
        let base = (1.0 - damping) / n as f32 + damping * dangling / n as f32;
        let mut next = vec![base; n];
        for (i, list) in neighbours.iter().enumerate() {
            if out_weight[i] <= 0.0 {
                continue;
            }
            let share = damping * rank[i] / out_weight[i];
            for &(j, w) in list {
                next[j as usize] += share * w;
            }
        }
        let moved: f32 = rank.iter().zip(&next).map(|(a, b)| (a - b).abs()).sum();
        rank = next;
        if moved < 1e-6 {
            break;
        }
    }
    rank
}

/// Chunks by PageRank, most central first (ties by position).
pub fn by_rank(index: &TextIndex) -> Vec<usize> {
    let mut order: Vec<usize> = (0..index.chunks.len()).collect();
    order.sort_by(|&a, &b| {
        index.chunks[b]
            .rank
            .total_cmp(&index.chunks[a].rank)
            .then(a.cmp(&b))
    });
    order
}
