//! The text index that `kgmesh index --text` writes and the text retriever reads
//! (KET-RAG): the source files, their chunks and sub-chunks with byte offsets, the
//! chunk neighbour graph and each chunk's PageRank, the keyword → sub-chunk bipartite
//! graph, the KG skeleton extracted from the most central chunks, and the vectors of
//! sub-chunks, keywords and skeleton entities when an embedder was used.
//!
//! This module only holds the data and its file format; building and searching it live
//! with the text-retriever role. The whole index is one checksummed file (`text.kgt`
//! in the index folder, framed as [`crate::framed`] says), so a crash while writing
//! leaves the previous index intact.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{framed, StoreError, StoreResult};

const FILE_MAGIC: &[u8; 8] = b"KGMTEXT\0";
/// Bumped whenever [`TextIndex`] changes shape (2: vectors as 16-bit floats, keyword
/// means instead of sums).
pub const TEXT_FORMAT: u32 = 2;
/// The index's file name inside an index folder.
pub const TEXT_FILE: &str = "text.kgt";

/// How an index was built; later additions must use the same chunking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextSettings {
    /// Tokens per chunk.
    pub chunk_tokens: u32,
    /// Tokens shared by consecutive chunks of a file.
    pub overlap_tokens: u32,
    /// Each chunk is halved this many times (2^m sub-chunks).
    pub splits: u32,
    /// Neighbours per chunk in the chunk graph, lexical and by embedding each.
    pub knn: u32,
}

impl Default for TextSettings {
    /// The paper's low-cost setting: 1,200-token chunks halved three times, so that
    /// sub-chunks hold about 150 tokens.
    fn default() -> Self {
        Self {
            chunk_tokens: 1_200,
            overlap_tokens: 100,
            splits: 3,
            knn: 2,
        }
    }
}

/// One indexed file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceFile {
    /// As given on the command line.
    pub path: String,
    pub bytes: u64,
    /// FNV-1a of the content: an unchanged file is not indexed again.
    pub hash: u64,
    /// Its chunks, `first..first + count` in [`TextIndex::chunks`].
    pub first_chunk: u32,
    pub chunk_count: u32,
}

/// A window of about `chunk_tokens` tokens of one file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chunk {
    pub file: u32,
    /// Byte range in the file.
    pub offset: u64,
    pub len: u32,
    pub tokens: u32,
    /// Its sub-chunks, `first..first + count` in [`TextIndex::passages`].
    pub first_passage: u32,
    pub passage_count: u32,
    /// PageRank over the chunk graph (sums to 1 over all chunks).
    pub rank: f32,
    /// Whether the model has read it for the skeleton.
    pub extracted: bool,
}

/// A sub-chunk: the unit the retriever returns and cites.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Passage {
    pub chunk: u32,
    pub offset: u64,
    pub len: u32,
    pub tokens: u32,
    pub text: String,
}

/// A triple the model extracted, with the sub-chunks it was read from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkeletonTriple {
    pub head: String,
    pub relation: String,
    pub tail: String,
    pub passages: Vec<u32>,
}

/// What extracting the skeleton cost so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExtractionCost {
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Replies that could not be used (the chunk stays unread).
    pub failed: u64,
}

/// See the module documentation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TextIndex {
    pub settings: TextSettings,
    pub files: Vec<SourceFile>,
    pub chunks: Vec<Chunk>,
    pub passages: Vec<Passage>,
    /// Per chunk: neighbours and edge weights (symmetric).
    pub neighbours: Vec<Vec<(u32, f32)>>,
    /// Keyword texts in the order first met; `postings[i]` lists the passages holding
    /// `keywords[i]`, ascending.
    pub keywords: Vec<String>,
    pub postings: Vec<Vec<u32>>,
    /// The embedder that made the vectors (`None`: no vectors).
    pub embedder: Option<String>,
    pub dim: u32,
    /// `passages.len() * dim` floats, L2-normalized rows (stored as 16-bit floats).
    #[serde(with = "half_floats")]
    pub passage_vectors: Vec<f32>,
    /// Per keyword, the mean of the vectors of the sentences holding it, and their
    /// count; the keyword's vector is the normalized mean (kept as a mean, stored as
    /// 16-bit floats, so that later files add to it).
    #[serde(with = "half_floats")]
    pub keyword_means: Vec<f32>,
    pub keyword_sentences: Vec<u32>,
    pub skeleton: Vec<SkeletonTriple>,
    pub extraction: ExtractionCost,
    /// The model that wrote the skeleton, when one did.
    pub extractor: Option<String>,
}

impl TextIndex {
    pub fn new(settings: TextSettings) -> Self {
        Self {
            settings,
            ..Self::default()
        }
    }

    /// The index in `dir`, or `None` when the folder holds none.
    pub fn open_in(dir: &Path) -> StoreResult<Option<Self>> {
        let path = dir.join(TEXT_FILE);
        if !path.exists() {
            return Ok(None);
        }
        Self::open(&path).map(Some)
    }

    /// Writes the index to `path` (through a temporary file and a rename); returns the
    /// bytes written.
    pub fn save(&self, path: &Path) -> StoreResult<u64> {
        let body =
            bincode::serde::encode_to_vec(self, bincode::config::standard()).map_err(|error| {
                StoreError::Backend {
                    detail: format!("cannot encode the text index: {error}"),
                }
            })?;
        framed::write(path, FILE_MAGIC, TEXT_FORMAT, &body)
    }

    /// Reads an index written by [`TextIndex::save`]; a file of another format, a
    /// truncated or a damaged one is refused with what is wrong.
    pub fn open(path: &Path) -> StoreResult<Self> {
        let (version, body) = framed::read(path, FILE_MAGIC, "text index")?;
        if version != TEXT_FORMAT {
            return Err(framed::corrupt(
                path,
                format!(
                    "text index format {version}, this kgmesh reads {TEXT_FORMAT}; index the files again"
                ),
            ));
        }
        let (index, _) =
            bincode::serde::decode_from_slice::<Self, _>(&body, bincode::config::standard())
                .map_err(|error| framed::corrupt(path, format!("cannot decode: {error}")))?;
        Ok(index)
    }

    /// The passages of chunk `chunk` (positions in [`TextIndex::passages`]).
    pub fn passages_of(&self, chunk: usize) -> std::ops::Range<usize> {
        let c = &self.chunks[chunk];
        c.first_passage as usize..(c.first_passage + c.passage_count) as usize
    }

    /// The vector of passage `i`, when the index has vectors.
    pub fn passage_vector(&self, i: usize) -> Option<&[f32]> {
        let dim = self.dim as usize;
        self.passage_vectors.get(i * dim..(i + 1) * dim)
    }

    /// Keyword text → its position in [`TextIndex::keywords`].
    pub fn keyword_positions(&self) -> std::collections::HashMap<String, u32> {
        self.keywords
            .iter()
            .enumerate()
            .map(|(i, keyword)| (keyword.clone(), i as u32))
            .collect()
    }

    /// Bytes of text indexed.
    pub fn text_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.bytes).sum()
    }
}

/// Vectors whose values lie within [-1, 1] written as IEEE half floats: half the bytes,
/// about three significant digits, which cosine ranking does not notice.
pub(crate) mod half_floats {
    use serde::{Deserializer, Serializer};

    /// Two little-endian bytes per value (a byte string: no per-value length prefix).
    pub fn serialize<S: Serializer>(values: &[f32], serializer: S) -> Result<S::Ok, S::Error> {
        let bits: Vec<u16> = values
            .iter()
            .map(|&v| half::f16::from_f32(v).to_bits())
            .collect();
        bits::serialize(&bits, serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<f32>, D::Error> {
        Ok(bits::deserialize(deserializer)?
            .into_iter()
            .map(|b| half::f16::from_bits(b).to_f32())
            .collect())
    }

    /// Half floats held by their bits, written the same way (two little-endian bytes
    /// each).
    pub(crate) mod bits {
        use serde::{Deserializer, Serializer};

        pub fn serialize<S: Serializer>(bits: &[u16], serializer: S) -> Result<S::Ok, S::Error> {
            let bytes: Vec<u8> = bits.iter().flat_map(|b| b.to_le_bytes()).collect();
            serializer.serialize_bytes(&bytes)
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(
            deserializer: D,
        ) -> Result<Vec<u16>, D::Error> {
            let bytes = super::byte_string(deserializer)?;
            if bytes.len() % 2 != 0 {
                return Err(serde::de::Error::custom("odd length of 16-bit floats"));
            }
            Ok(bytes
                .chunks_exact(2)
                .map(|pair| u16::from_le_bytes([pair[0], pair[1]]))
                .collect())
        }
    }

    /// A byte string as written by `Serializer::serialize_bytes`.
    pub(crate) fn byte_string<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<u8>, D::Error> {
        struct Bytes;
        impl<'de> serde::de::Visitor<'de> for Bytes {
            type Value = Vec<u8>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a byte string")
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
                Ok(v.to_vec())
            }
            fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
                Ok(v)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Vec<u8>, A::Error> {
                let mut out = Vec::new();
                while let Some(byte) = seq.next_element::<u8>()? {
                    out.push(byte);
                }
                Ok(out)
            }
        }
        deserializer.deserialize_byte_buf(Bytes)
    }
}

/// FNV-1a, 64 bits: a stable content fingerprint (not a defence against tampering).
pub fn fingerprint(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_round_trip_as_half_floats_in_two_bytes_each() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(TEXT_FILE);
        let mut index = TextIndex::new(TextSettings::default());
        index.dim = 3;
        index.passage_vectors = vec![0.5, -0.25, 0.123_456];
        index.keyword_means = vec![1.0, -1.0, 0.0009];
        let empty_size = TextIndex::new(TextSettings::default()).save(&path).unwrap();
        let size = index.save(&path).unwrap();
        // 6 values in 12 bytes, plus one length prefix per vector and the dim.
        assert!(size - empty_size <= 12 + 4, "{size} vs {empty_size}");
        let back = TextIndex::open(&path).unwrap();
        for (a, b) in back
            .passage_vectors
            .iter()
            .chain(&back.keyword_means)
            .zip(index.passage_vectors.iter().chain(&index.keyword_means))
        {
            assert!((a - b).abs() < 1e-3, "{a} read back for {b}");
        }
        assert_eq!(back.passage_vector(0), Some(&back.passage_vectors[..]));
    }

    #[test]
    fn another_format_or_a_foreign_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(TEXT_FILE);
        std::fs::write(&path, b"not an index at all, just some text").unwrap();
        let error = TextIndex::open(&path).unwrap_err().to_string();
        assert!(error.contains("bad magic"), "{error}");
        TextIndex::default().save(&path).unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[8] = 1;
        std::fs::write(&path, &bytes).unwrap();
        let error = TextIndex::open(&path).unwrap_err().to_string();
        assert!(
            error.contains("format 1") && error.contains("index the files again"),
            "{error}"
        );
        assert!(TextIndex::open_in(&dir.path().join("nothing"))
            .unwrap()
            .is_none());
    }
}
