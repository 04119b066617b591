//! Benchmark support for kgmesh: a synthetic knowledge-graph generator with power-law
//! degrees, and small measurement helpers (percentiles, per-thread CPU time and fault
//! counters, resident memory) shared by the
//! bench targets in `benches/`.
//!
//! ```no_run
//! let path = std::env::temp_dir().join("kg-1m.tsv");
//! let spec = kgmesh_benches::SyntheticKg::with_edges(1_000_000);
//! spec.write_tsv(&path).unwrap();
//! ```

pub mod serve;

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

/// p50 / p90 / p99 / p99.9 / max of a set of timings.
#[derive(Debug, Clone, Copy)]
pub struct Percentiles {
    pub p50: Duration,
    pub p90: Duration,
    pub p99: Duration,
    pub p999: Duration,
    pub max: Duration,
}

pub fn percentiles(mut samples: Vec<Duration>) -> Percentiles {
    if samples.is_empty() {
        samples.push(Duration::ZERO);
    }
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    Percentiles {
        p50: at(0.50),
        p90: at(0.90),
        p99: at(0.99),
        p999: at(0.999),
        max: at(1.0),
    }
}

/// What the calling thread has consumed so far: CPU time and the events that make a
/// wall-clock timing longer than the work itself (being descheduled, page faults).
///
/// On a shared 2-core machine a sub-millisecond operation's p99 is often set by the
/// scheduler, not by the code; comparing wall time with on-CPU time and counting
/// involuntary switches per sample says which.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadCounters {
    pub cpu: Duration,
    pub minor_faults: u64,
    pub major_faults: u64,
    pub involuntary_switches: u64,
}

impl ThreadCounters {
    /// The calling thread's counters (all zero where the platform does not report them).
    pub fn now() -> Self {
        thread_counters()
    }

    /// Counters accumulated between `earlier` and `self`.
    pub fn since(&self, earlier: &ThreadCounters) -> ThreadCounters {
        ThreadCounters {
            cpu: self.cpu.saturating_sub(earlier.cpu),
            minor_faults: self.minor_faults.saturating_sub(earlier.minor_faults),
            major_faults: self.major_faults.saturating_sub(earlier.major_faults),
            involuntary_switches: self
                .involuntary_switches
                .saturating_sub(earlier.involuntary_switches),
        }
    }
}

#[cfg(target_os = "linux")]
fn thread_counters() -> ThreadCounters {
    // std links the C library anyway; these two calls are all the bench needs from it.
    #[repr(C)]
    struct Timespec {
        seconds: i64,
        nanos: i64,
    }
    #[repr(C)]
    struct Rusage {
        user: [i64; 2],
        system: [i64; 2],
        // maxrss, ixrss, idrss, isrss, minflt, majflt, nswap, inblock, oublock, msgsnd,
        // msgrcv, nsignals, nvcsw, nivcsw
        fields: [i64; 14],
    }
    extern "C" {
        fn clock_gettime(clock: i32, time: *mut Timespec) -> i32;
        fn getrusage(who: i32, usage: *mut Rusage) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    const RUSAGE_THREAD: i32 = 1;
    let mut time = Timespec {
        seconds: 0,
        nanos: 0,
    };
    let mut usage = Rusage {
        user: [0; 2],
        system: [0; 2],
        fields: [0; 14],
    };
    // SAFETY: both pointers are to live, correctly laid out structs for x86-64/aarch64 Linux.
    let (time_rc, usage_rc) = unsafe {
        (
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut time),
            getrusage(RUSAGE_THREAD, &mut usage),
        )
    };
    let cpu = if time_rc == 0 {
        Duration::new(
            time.seconds.max(0) as u64,
            time.nanos.clamp(0, 999_999_999) as u32,
        )
    } else {
        Duration::ZERO
    };
    let field = |index: usize| {
        if usage_rc == 0 {
            usage.fields[index].max(0) as u64
        } else {
            0
        }
    };
    ThreadCounters {
        cpu,
        minor_faults: field(4),
        major_faults: field(5),
        involuntary_switches: field(13),
    }
}

#[cfg(not(target_os = "linux"))]
fn thread_counters() -> ThreadCounters {
    ThreadCounters::default()
}

/// Timings of one operation with the thread counters of each sample.
#[derive(Debug, Clone, Default)]
pub struct Series {
    wall: Vec<Duration>,
    cpu: Vec<Duration>,
    preempted: usize,
    faults: u64,
}

/// What a [`Series`] measured.
#[derive(Debug, Clone, Copy)]
pub struct Summary {
    pub samples: usize,
    /// Wall-clock time of each call.
    pub wall: Percentiles,
    /// On-CPU time of each call (wall time minus time spent descheduled).
    pub cpu: Percentiles,
    /// Share of samples during which the thread was involuntarily switched out.
    pub preempted: f64,
    /// Page faults per sample, on average.
    pub faults_per_sample: f64,
}

impl Series {
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `work` once, recording its wall time and counters.
    pub fn measure<T>(&mut self, work: impl FnOnce() -> T) -> T {
        let before = ThreadCounters::now();
        let started = std::time::Instant::now();
        let value = work();
        let wall = started.elapsed();
        let counters = ThreadCounters::now().since(&before);
        self.wall.push(wall);
        self.cpu.push(counters.cpu.min(wall));
        self.preempted += usize::from(counters.involuntary_switches > 0);
        self.faults += counters.minor_faults + counters.major_faults;
        value
    }

    pub fn len(&self) -> usize {
        self.wall.len()
    }

    pub fn is_empty(&self) -> bool {
        self.wall.is_empty()
    }

    pub fn summary(&self) -> Summary {
        let samples = self.wall.len().max(1);
        Summary {
            samples: self.wall.len(),
            wall: percentiles(self.wall.clone()),
            cpu: percentiles(self.cpu.clone()),
            preempted: self.preempted as f64 / samples as f64,
            faults_per_sample: self.faults as f64 / samples as f64,
        }
    }
}

/// A fixed amount of pure computation (no memory traffic, no allocation): timed beside
/// an operation, its tail shows how much of the operation's tail the machine adds.
pub fn spin(iterations: u64) -> u64 {
    let mut state = iterations;
    let mut sum = 0u64;
    for _ in 0..iterations {
        sum = sum.wrapping_add(splitmix64(&mut state));
    }
    std::hint::black_box(sum)
}

/// Iterations of [`spin`] that take about `target` on this machine.
pub fn spin_iterations_for(target: Duration) -> u64 {
    let probe = 200_000u64;
    let mut best = Duration::MAX;
    for _ in 0..5 {
        let started = std::time::Instant::now();
        spin(probe);
        best = best.min(started.elapsed());
    }
    let per_iteration = best.as_secs_f64() / probe as f64;
    ((target.as_secs_f64() / per_iteration.max(1e-12)) as u64).max(1)
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
        assert_eq!(p.p90, Duration::from_micros(90));
        assert_eq!(p.p99, Duration::from_micros(99));
        assert_eq!(p.max, Duration::from_micros(100));
    }

    #[test]
    fn thread_counters_see_cpu_time_and_faults() {
        let before = ThreadCounters::now();
        let mut series = Series::new();
        let pages = series.measure(|| {
            // Touch fresh pages so the fault counter must move.
            let mut buffer = vec![0u8; 8 << 20];
            for index in (0..buffer.len()).step_by(4096) {
                buffer[index] = 1;
            }
            spin(2_000_000) as usize
                + buffer
                    .iter()
                    .step_by(4096)
                    .map(|b| *b as usize)
                    .sum::<usize>()
        });
        let counters = ThreadCounters::now().since(&before);
        assert!(pages > 0);
        assert!(counters.cpu > Duration::ZERO, "{counters:?}");
        assert!(counters.minor_faults >= 1, "{counters:?}");
        let summary = series.summary();
        assert_eq!(summary.samples, 1);
        assert!(summary.cpu.p50 <= summary.wall.p50);
        assert!(summary.faults_per_sample >= 1.0, "{summary:?}");
    }
}
