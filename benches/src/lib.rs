//! Benchmark support for kgmesh: a synthetic knowledge-graph generator with power-law
//! degrees, and small measurement helpers (percentiles, resident memory) shared by the
//! bench targets in `benches/`.
//!
//! ```no_run
//! let path = std::env::temp_dir().join("kg-1m.tsv");
//! let spec = kgmesh_benches::SyntheticKg::with_edges(1_000_000);
//! spec.write_tsv(&path).unwrap();
//! ```

use std::{
    io::{BufWriter, Write},
    path::Path,
    time::Duration,
};

/// Shape of a synthetic KG: `edges` triples over `nodes` entities and `relations`
/// relation types. Heads, tails and relations are drawn from skewed (power-law-like)
/// distributions so that a few hubs have very high degree, as in real KGs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SyntheticKg {
    pub nodes: u64,
    pub edges: u64,
    pub relations: u64,
    /// Larger is more skewed; 1.0 is uniform.
    pub skew: f64,
    pub seed: u64,
}

impl SyntheticKg {
    /// Ten edges per node on average, 50 relation types.
    pub fn with_edges(edges: u64) -> Self {
        Self {
            nodes: (edges / 10).max(2),
            edges,
            relations: 50,
            skew: 2.5,
            seed: 42,
        }
    }

    /// Writes `head<TAB>relation<TAB>tail` lines; entity names are `entity_<n>`.
    pub fn write_tsv(&self, path: &Path) -> std::io::Result<()> {
        let file = std::fs::File::create(path)?;
        let mut writer = BufWriter::with_capacity(1 << 20, file);
        let mut state = self.seed;
        for _ in 0..self.edges {
            let head = self.skewed_node(&mut state);
            let tail = self.skewed_node(&mut state);
            let relation = skewed(&mut state, self.relations, 1.5);
            writeln!(writer, "entity_{head}\trelation_{relation}\tentity_{tail}")?;
        }
        writer.flush()
    }

    /// A node index drawn with power-law popularity, scattered over the id range so
    /// that hubs are not all small numbers.
    fn skewed_node(&self, state: &mut u64) -> u64 {
        let rank = skewed(state, self.nodes, self.skew);
        // Multiplication by an odd constant is a bijection modulo a power of two;
        // fold into range with a second draw-free step.
        rank.wrapping_mul(0x9e37_79b9_7f4a_7c15) % self.nodes
    }
}

/// `floor(n * u^skew)` for uniform `u`: small values are much more likely.
fn skewed(state: &mut u64, n: u64, skew: f64) -> u64 {
    let uniform = (splitmix64(state) >> 11) as f64 / (1u64 << 53) as f64;
    ((n as f64) * uniform.powf(skew)) as u64 % n.max(1)
}

pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// p50 / p99 / max of a set of timings.
#[derive(Debug, Clone, Copy)]
pub struct Percentiles {
    pub p50: Duration,
    pub p99: Duration,
    pub max: Duration,
}

pub fn percentiles(mut samples: Vec<Duration>) -> Percentiles {
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    Percentiles {
        p50: at(0.50),
        p99: at(0.99),
        max: at(1.0),
    }
}

/// Resident set size of this process in bytes (Linux `/proc/self/statm`), if known.
pub fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generator_is_deterministic_and_skewed() {
        let dir = tempfile::tempdir().unwrap();
        let spec = SyntheticKg::with_edges(20_000);
        let (a, b) = (dir.path().join("a.tsv"), dir.path().join("b.tsv"));
        spec.write_tsv(&a).unwrap();
        spec.write_tsv(&b).unwrap();
        let text = std::fs::read_to_string(&a).unwrap();
        assert_eq!(text, std::fs::read_to_string(&b).unwrap());
        assert_eq!(text.lines().count(), 20_000);
        let mut degree = std::collections::HashMap::<&str, usize>::new();
        for line in text.lines() {
            *degree.entry(line.split('\t').next().unwrap()).or_default() += 1;
        }
        let max = degree.values().max().copied().unwrap();
        // With 2,000 nodes a uniform draw would give ~10 edges per head; hubs have far more.
        assert!(max > 200, "most frequent head has only {max} edges");
    }

    #[test]
    fn percentiles_pick_ranks() {
        let samples = (1..=100).map(Duration::from_micros).collect();
        let p = percentiles(samples);
        assert_eq!(p.p50, Duration::from_micros(51));
        assert_eq!(p.p99, Duration::from_micros(99));
        assert_eq!(p.max, Duration::from_micros(100));
    }
}
