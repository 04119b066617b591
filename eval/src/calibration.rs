//! How well confidences mean what they say: the expected calibration error and a
//! reliability table (confidence against the share right, in ten equal-width bins),
//! the area under the ROC curve of confidence for right against wrong answers, and the
//! risk–coverage curve (the accuracy of the answers kept at each threshold, and how
//! many are kept).
//!
//! Everything reads `(confidence, right)` pairs; the caller decides what "right" is
//! (for `kgmesh eval`, the first answer is a gold answer).

use serde::{Deserialize, Serialize};

/// Bins of the reliability table (equal width over `[0, 1]`).
pub const BINS: usize = 10;

/// The thresholds the risk–coverage curve is read at.
pub const THRESHOLDS: [f32; 10] = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];

/// One bin of the reliability table.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bin {
    /// The bin's lower edge (it holds confidences in `[lower, lower + 0.1)`, the last
    /// one 1.0 too).
    pub lower: f32,
    pub count: usize,
    pub mean_confidence: f64,
    /// Share of the bin's answers that are right.
    pub accuracy: f64,
}

/// One point of the risk–coverage curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Kept {
    /// Answers with confidence at least this are kept.
    pub threshold: f32,
    /// Share of all answers kept.
    pub coverage: f64,
    /// Share of the kept answers that are right; `None` when none is kept.
    pub accuracy: Option<f64>,
}

/// Calibration of one set of answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Answers that carried a confidence.
    pub answers: usize,
    pub right: usize,
    pub mean_confidence: f64,
    /// Σ over bins of (bin share × |accuracy − mean confidence|).
    pub ece: f64,
    /// The ECE a perfectly calibrated confidence would show on this many answers, by
    /// chance alone: the mean ECE of outcomes drawn from the confidences themselves
    /// ([`SIMULATIONS`] draws, fixed seed). A measured ECE near it says nothing more
    /// can be read from this sample.
    #[serde(default)]
    pub ece_by_chance: f64,
    /// `None` when every answer is right, or every one wrong.
    pub auroc: Option<f64>,
    pub bins: Vec<Bin>,
    pub risk_coverage: Vec<Kept>,
}

impl Calibration {
    /// `None` without answers.
    pub fn of(pairs: &[(f32, bool)]) -> Option<Self> {
        if pairs.is_empty() {
            return None;
        }
        let n = pairs.len() as f64;
        let right = pairs.iter().filter(|p| p.1).count();
        let bins = reliability(pairs);
        let ece = ece_of(pairs);
        let risk_coverage = THRESHOLDS
            .iter()
            .map(|&threshold| kept(pairs, threshold))
            .collect();
        Some(Self {
            answers: pairs.len(),
            right,
            mean_confidence: pairs.iter().map(|p| f64::from(p.0)).sum::<f64>() / n,
            ece,
            ece_by_chance: ece_by_chance(pairs),
            auroc: auroc(pairs),
            bins,
            risk_coverage,
        })
    }

    /// The curve's point at `threshold`, when it is one of [`THRESHOLDS`].
    pub fn at(&self, threshold: f32) -> Option<&Kept> {
        self.risk_coverage
            .iter()
            .find(|k| (k.threshold - threshold).abs() < 1e-6)
    }

    /// The header of [`Self::cells`], for a Markdown table.
    pub const CELLS: &'static str = "answers | right | mean confidence | ECE (by chance alone) | AUROC | right at ≥ 0.8 | coverage at ≥ 0.8";

    /// This calibration as Markdown table cells (without the outer bars), under
    /// [`Self::CELLS`].
    pub fn cells(&self) -> String {
        let at = self.at(0.8);
        format!(
            "{} | {:.1}% | {:.1}% | {:.3} ({:.3}) | {} | {} | {:.1}%",
            self.answers,
            100.0 * self.right as f64 / self.answers as f64,
            100.0 * self.mean_confidence,
            self.ece,
            self.ece_by_chance,
            self.auroc.map_or("-".to_owned(), |v| format!("{v:.3}")),
            at.and_then(|k| k.accuracy)
                .map_or("-".to_owned(), |v| format!("{:.1}%", 100.0 * v)),
            at.map_or(0.0, |k| 100.0 * k.coverage)
        )
    }

    /// One line for people: ECE, AUROC, and accuracy and coverage at 0.8.
    pub fn summary(&self) -> String {
        let at = self.at(0.8);
        format!(
            "{} answers, {:.1} % right, mean confidence {:.1} %, ECE {:.3} (by chance {:.3}), AUROC {}, at ≥ 0.8: {} right, coverage {:.1} %",
            self.answers,
            100.0 * self.right as f64 / self.answers as f64,
            100.0 * self.mean_confidence,
            self.ece,
            self.ece_by_chance,
            self.auroc.map_or("-".to_owned(), |a| format!("{a:.3}")),
            at.and_then(|k| k.accuracy)
                .map_or("-".to_owned(), |a| format!("{:.1} %", 100.0 * a)),
            at.map_or(0.0, |k| 100.0 * k.coverage),
        )
    }
}

/// Draws of [`Calibration::ece_by_chance`].
pub const SIMULATIONS: usize = 200;

fn ece_of(pairs: &[(f32, bool)]) -> f64 {
    let n = pairs.len() as f64;
    reliability(pairs)
        .iter()
        .map(|b| b.count as f64 / n * (b.accuracy - b.mean_confidence).abs())
        .sum()
}

fn ece_by_chance(pairs: &[(f32, bool)]) -> f64 {
    // SplitMix64: a fixed, dependency-free stream of draws.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut uniform = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut total = 0.0;
    for _ in 0..SIMULATIONS {
        let drawn: Vec<(f32, bool)> = pairs
            .iter()
            .map(|&(c, _)| (c, uniform() < f64::from(c)))
            .collect();
        total += ece_of(&drawn);
    }
    total / SIMULATIONS as f64
}

fn bin_of(confidence: f32) -> usize {
    ((confidence.clamp(0.0, 1.0) * BINS as f32) as usize).min(BINS - 1)
}

/// The reliability table; empty bins are left out.
pub fn reliability(pairs: &[(f32, bool)]) -> Vec<Bin> {
    let mut sums = [(0usize, 0.0f64, 0usize); BINS];
    for &(confidence, right) in pairs {
        let bin = &mut sums[bin_of(confidence)];
        bin.0 += 1;
        bin.1 += f64::from(confidence);
        bin.2 += usize::from(right);
    }
    sums.iter()
        .enumerate()
        .filter(|(_, s)| s.0 > 0)
        .map(|(i, &(count, total, right))| Bin {
            lower: i as f32 / BINS as f32,
            count,
            mean_confidence: total / count as f64,
            accuracy: right as f64 / count as f64,
        })
        .collect()
}

fn kept(pairs: &[(f32, bool)], threshold: f32) -> Kept {
    let kept: Vec<bool> = pairs
        .iter()
        .filter(|p| p.0 >= threshold)
        .map(|p| p.1)
        .collect();
    Kept {
        threshold,
        coverage: kept.len() as f64 / pairs.len().max(1) as f64,
        accuracy: (!kept.is_empty())
            .then(|| kept.iter().filter(|r| **r).count() as f64 / kept.len() as f64),
    }
}

/// Area under the ROC curve of confidences for right against wrong (ties count half);
/// `None` when all are right or all wrong.
pub fn auroc(pairs: &[(f32, bool)]) -> Option<f64> {
    let right: Vec<f32> = pairs.iter().filter(|p| p.1).map(|p| p.0).collect();
    let wrong: Vec<f32> = pairs.iter().filter(|p| !p.1).map(|p| p.0).collect();
    if right.is_empty() || wrong.is_empty() {
        return None;
    }
    let mut wins = 0.0f64;
    for r in &right {
        for w in &wrong {
            wins += if r > w {
                1.0
            } else if r == w {
                0.5
            } else {
                0.0
            };
        }
    }
    Some(wins / (right.len() * wrong.len()) as f64)
}

/// One question's reply as `--min-confidence` would treat it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Replied {
    /// The question has gold answers.
    pub answerable: bool,
    /// It was answered (not "I don't know").
    pub answered: bool,
    /// The answer's confidence; an answer without one is never withheld.
    pub confidence: Option<f32>,
    /// The first answer is a gold one.
    pub right: bool,
}

/// What withholding answers below a threshold leaves ([`withholding`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Withheld {
    pub threshold: f32,
    /// Answerable questions whose first answer is right and kept.
    pub hits: usize,
    pub answerable: usize,
    /// Unanswerable questions with no answer, or one withheld.
    pub declined: usize,
    pub unanswerable: usize,
}

/// The thresholds [`withholding`] is read at by `kgmesh eval`.
pub const WITHHOLDING_THRESHOLDS: [f32; 6] = [0.0, 0.2, 0.3, 0.4, 0.5, 0.6];

/// At each threshold, Hits@1 counting only the answers kept (confidence at least the
/// threshold) and how many unanswerable questions end in "I don't know": the trade a
/// user makes with `--min-confidence`.
pub fn withholding(replies: &[Replied], thresholds: &[f32]) -> Vec<Withheld> {
    thresholds
        .iter()
        .map(|&threshold| {
            let kept = |r: &Replied| r.answered && r.confidence.is_none_or(|c| c >= threshold);
            Withheld {
                threshold,
                hits: replies
                    .iter()
                    .filter(|r| r.answerable && r.right && kept(r))
                    .count(),
                answerable: replies.iter().filter(|r| r.answerable).count(),
                declined: replies.iter().filter(|r| !r.answerable && !kept(r)).count(),
                unanswerable: replies.iter().filter(|r| !r.answerable).count(),
            }
        })
        .collect()
}

/// [`withholding`] as a Markdown table, one row per threshold.
pub fn withholding_table(rows: &[Withheld]) -> String {
    let mut out = String::from(
        "| min confidence | Hits@1 (answers kept) | unanswerable declined |\n|---|---|---|\n",
    );
    for row in rows {
        out.push_str(&format!(
            "| {:.1} | {:.1} % | {} of {} |\n",
            row.threshold,
            100.0 * row.hits as f64 / row.answerable.max(1) as f64,
            row.declined,
            row.unanswerable
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_perfectly_calibrated_set_has_no_error() {
        // Confidence 0.25 on four answers, one right; 0.75 on four, three right.
        let mut pairs = vec![(0.25, true), (0.25, false), (0.25, false), (0.25, false)];
        pairs.extend([(0.75, true), (0.75, true), (0.75, true), (0.75, false)]);
        let c = Calibration::of(&pairs).unwrap();
        assert!(c.ece.abs() < 1e-9, "{}", c.ece);
        assert_eq!(c.bins.len(), 2);
        assert_eq!(c.right, 4);
    }

    #[test]
    fn overconfidence_is_the_gap_between_confidence_and_accuracy() {
        // Every answer at 0.95, half right: the error is 0.45.
        let pairs: Vec<(f32, bool)> = (0..10).map(|i| (0.95, i % 2 == 0)).collect();
        let c = Calibration::of(&pairs).unwrap();
        assert!((c.ece - 0.45).abs() < 1e-6, "{}", c.ece);
        assert_eq!(c.bins[0].lower, 0.9);
    }

    #[test]
    fn auroc_ranks_right_above_wrong_and_counts_ties_half() {
        assert_eq!(auroc(&[(0.9, true), (0.1, false)]), Some(1.0));
        assert_eq!(auroc(&[(0.1, true), (0.9, false)]), Some(0.0));
        assert_eq!(auroc(&[(0.5, true), (0.5, false)]), Some(0.5));
        assert_eq!(auroc(&[(0.5, true), (0.7, true)]), None);
    }

    #[test]
    fn risk_coverage_keeps_the_answers_at_or_above_each_threshold() {
        let pairs = [(0.95, true), (0.85, false), (0.3, false), (0.1, true)];
        let c = Calibration::of(&pairs).unwrap();
        let at = c.at(0.8).unwrap();
        assert_eq!(at.coverage, 0.5);
        assert_eq!(at.accuracy, Some(0.5));
        let all = c.at(0.0).unwrap();
        assert_eq!((all.coverage, all.accuracy), (1.0, Some(0.5)));
        assert!(c.at(0.9).unwrap().accuracy == Some(1.0));
        assert_eq!(c.at(0.85), None);
    }

    #[test]
    fn the_error_by_chance_shrinks_with_the_sample() {
        let small: Vec<(f32, bool)> = (0..40)
            .map(|i| (0.3 + 0.01 * (i % 40) as f32, true))
            .collect();
        let large: Vec<(f32, bool)> = (0..4000)
            .map(|i| (0.3 + 0.01 * (i % 40) as f32, true))
            .collect();
        let (small, large) = (
            Calibration::of(&small).unwrap().ece_by_chance,
            Calibration::of(&large).unwrap().ece_by_chance,
        );
        assert!(small > 0.04, "{small}");
        assert!(large < 0.02 && large < small / 3.0, "{large} vs {small}");
    }

    #[test]
    fn confidence_one_falls_in_the_last_bin() {
        let c = Calibration::of(&[(1.0, true)]).unwrap();
        assert_eq!(c.bins[0].lower, 0.9);
        assert!(Calibration::of(&[]).is_none());
    }

    #[test]
    fn withholding_trades_answers_for_declines() {
        let reply = |answerable, answered, confidence, right| Replied {
            answerable,
            answered,
            confidence,
            right,
        };
        let replies = [
            reply(true, true, Some(0.9), true),
            reply(true, true, Some(0.3), true),
            reply(true, true, Some(0.5), false),
            reply(true, false, None, false),
            reply(false, true, Some(0.25), false),
            reply(false, false, None, false),
            reply(true, true, None, true),
        ];
        let rows = withholding(&replies, &[0.0, 0.4]);
        let read = |w: &Withheld| (w.hits, w.answerable, w.declined, w.unanswerable);
        assert_eq!(read(&rows[0]), (3, 5, 1, 2));
        // At 0.4 the right answer at 0.3 is withheld, and so is the answer to the
        // unanswerable question; an answer without a confidence stays.
        assert_eq!(read(&rows[1]), (2, 5, 2, 2));
        let table = withholding_table(&rows);
        assert!(table.contains("| 0.4 | 40.0 % | 2 of 2 |"), "{table}");
    }
}
