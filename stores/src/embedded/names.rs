//! Name normalization and the hash-sorted name index.
//!
//! The index is two flat arrays (64-bit name hashes, sorted; node indices in the same
//! order) so that it can be memory-mapped from a snapshot like the rest of the graph.
//! A lookup binary-searches the hash and then checks the candidates' real names, so a
//! hash collision can cost a comparison but never a wrong answer.

use kgmesh_schemas::text::{self, Normalization};

/// Normalizes a name for forgiving lookup ([`Normalization::Index`]): Unicode lower-case; apostrophes removed
/// (`Schindler's` → `schindlers`); every run of whitespace, `_` or other punctuation
/// becomes one space; leading and trailing spaces dropped.
///
/// Accents are kept (`Amélie` ≠ `amelie`). Both stored names and queried names go
/// through this same function, so the exact choices matter less than their stability:
/// changing it invalidates snapshots (their format version is bumped with it).
///
/// ```
/// use kgmesh_stores::embedded::normalize_name;
/// assert_eq!(normalize_name("  Richard_Brooks "), "richard brooks");
/// assert_eq!(normalize_name("Spider-Man: Homecoming"), "spider man homecoming");
/// assert_eq!(normalize_name("Schindler's List"), "schindlers list");
/// ```
pub fn normalize_name(name: &str) -> String {
    text::normalize(name, Normalization::Index)
}

/// FNV-1a, 64 bits: stable across runs and platforms, which the persisted index needs.
pub(crate) fn name_hash(name: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in name.as_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// Index positions whose hash equals `hash` in the sorted `hashes`.
pub(crate) fn hash_range(hashes: &[u64], hash: u64) -> std::ops::Range<usize> {
    let start = hashes.partition_point(|candidate| *candidate < hash);
    let end = start + hashes[start..].partition_point(|candidate| *candidate == hash);
    start..end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalization_unifies_case_underscores_and_punctuation() {
        assert_eq!(normalize_name("The_Dark   Knight!"), "the dark knight");
        assert_eq!(normalize_name("THE DARK KNIGHT"), "the dark knight");
        assert_eq!(normalize_name("AC/DC"), "ac dc");
        assert_eq!(normalize_name("___"), "");
        assert_eq!(normalize_name("Ça  va"), "ça va");
    }

    #[test]
    fn hash_range_finds_every_equal_hash() {
        let hashes = [1, 3, 3, 3, 7];
        assert_eq!(hash_range(&hashes, 3), 1..4);
        assert_eq!(hash_range(&hashes, 4), 4..4);
        assert_eq!(hash_range(&hashes, 9), 5..5);
    }
}
