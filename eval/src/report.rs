//! The JSON report of a run (configuration, versions, every question, aggregates) and
//! its Markdown summary.

use std::{
    collections::BTreeMap,
    fmt::Write as _,
    path::{Path, PathBuf},
    time::{SystemTime, UNIX_EPOCH},
};

use crate::qa::Fold;
use kgmesh_schemas::messages::ask::AskOptions;
use serde::{Deserialize, Serialize};

use super::{
    answerer::AnswererConfig,
    dataset::{Brackets, DatasetKind},
    metrics::{Aggregate, Breakdown, LatencySummary, QuestionResult},
};

/// Bumped when a field changes meaning; readers refuse reports they do not know.
pub const REPORT_FORMAT: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub format: u32,
    /// A short label for tables and plots, e.g. `metaqa/1-hop`.
    pub name: String,
    pub dataset: DatasetInfo,
    pub run: RunInfo,
    pub system: AnswererConfig,
    pub versions: Versions,
    pub aggregate: Aggregate,
    pub breakdown: Breakdown,
    pub results: Vec<QuestionResult>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetInfo {
    pub kind: DatasetKind,
    pub files: Vec<PathBuf>,
    pub kg: Option<PathBuf>,
    /// MetaQA only.
    pub brackets: Option<Brackets>,
    /// Questions in the files before selection.
    pub available: usize,
    /// Questions selected for the run.
    pub selected: usize,
    /// The part of each file's questions kept before `limit` (`--fold`,
    /// `--fold-complement`); absent from reports written before folds existed.
    #[serde(default)]
    pub fold: Option<Fold>,
    /// Per file.
    pub limit: Option<usize>,
    /// `None`: the first `limit` questions of each file.
    pub sample_seed: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// RFC 3339, UTC.
    pub started_at: String,
    pub wall_s: f64,
    /// Completed questions per second of wall time.
    pub throughput_qps: f64,
    pub concurrency: usize,
    pub question_timeout_ms: u64,
    pub ask_options: AskOptions,
    pub completed: usize,
    /// Stopped early (Ctrl-C): the aggregates cover `completed` questions only.
    pub interrupted: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Versions {
    pub kgmesh: String,
    pub git_commit: Option<String>,
    /// Uncommitted changes in the working tree the run started from.
    pub git_dirty: Option<bool>,
    pub os: String,
    pub arch: String,
    pub cpus: usize,
    pub command_line: Vec<String>,
}

impl Versions {
    /// Reads git state with `git` (blocking; call before the run starts): of the
    /// working directory, or else of the folder the binary was built into.
    pub fn collect() -> Self {
        let git = |dir: &Path, args: &[&str]| {
            std::process::Command::new("git")
                .arg("-C")
                .arg(dir)
                .args(args)
                .stderr(std::process::Stdio::null())
                .output()
                .ok()
                .filter(|output| output.status.success())
                .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned())
        };
        let candidates = [
            std::env::current_dir().ok(),
            std::env::current_exe()
                .ok()
                .and_then(|exe| exe.parent().map(Path::to_path_buf)),
        ];
        let found = candidates.iter().flatten().find_map(|dir| {
            git(dir, &["rev-parse", "HEAD"])
                .filter(|commit| !commit.is_empty())
                .map(|commit| (dir.clone(), commit))
        });
        let git_dirty = found.as_ref().and_then(|(dir, _)| {
            git(dir, &["status", "--porcelain", "--untracked-files=no"])
                .map(|status| !status.is_empty())
        });
        let git_commit = found.map(|(_, commit)| commit);
        Self {
            kgmesh: env!("CARGO_PKG_VERSION").to_owned(),
            git_commit,
            git_dirty,
            os: std::env::consts::OS.to_owned(),
            arch: std::env::consts::ARCH.to_owned(),
            cpus: std::thread::available_parallelism()
                .map(usize::from)
                .unwrap_or(1),
            command_line: std::env::args().collect(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a kgmesh eval report: {problem}")]
    Invalid { path: PathBuf, problem: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl Report {
    pub fn load(path: &Path) -> Result<Self, ReportError> {
        let text = std::fs::read_to_string(path).map_err(|source| ReportError::Read {
            path: path.to_owned(),
            source,
        })?;
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|error| ReportError::Invalid {
                path: path.to_owned(),
                problem: error.to_string(),
            })?;
        let format = value.get("format").and_then(serde_json::Value::as_u64);
        if format != Some(u64::from(REPORT_FORMAT)) {
            return Err(ReportError::Invalid {
                path: path.to_owned(),
                problem: format!(
                    "report format {format:?}, this build reads format {REPORT_FORMAT}"
                ),
            });
        }
        serde_json::from_value(value).map_err(|error| ReportError::Invalid {
            path: path.to_owned(),
            problem: error.to_string(),
        })
    }

    pub fn write_json(&self, path: &Path) -> Result<(), ReportError> {
        let json = serde_json::to_string_pretty(self).map_err(|error| ReportError::Invalid {
            path: path.to_owned(),
            problem: error.to_string(),
        })?;
        std::fs::write(path, json + "\n").map_err(|source| ReportError::Write {
            path: path.to_owned(),
            source,
        })
    }

    /// The summary people read: configuration first, then the scores.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# kgmesh eval: {}\n", self.name);
        if self.run.interrupted {
            let _ = writeln!(
                out,
                "**Interrupted:** {} of {} selected questions completed; the figures cover \
                 those only.\n",
                self.run.completed, self.dataset.selected
            );
        }
        let _ = writeln!(out, "## Configuration\n");
        let _ = writeln!(out, "| setting | value |\n|---|---|");
        let d = &self.dataset;
        let files: Vec<String> = d.files.iter().map(|f| f.display().to_string()).collect();
        let row = |out: &mut String, key: &str, value: String| {
            let _ = writeln!(out, "| {key} | {} |", value.replace('|', "\\|"));
        };
        row(&mut out, "dataset", d.kind.to_string());
        row(&mut out, "questions", files.join(", "));
        row(
            &mut out,
            "kg",
            d.kg.as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "(server's)".to_owned()),
        );
        if let Some(brackets) = d.brackets {
            row(
                &mut out,
                "MetaQA brackets",
                format!("{brackets:?}").to_lowercase(),
            );
        }
        let sample = match (d.limit, d.sample_seed) {
            (None, _) => "all".to_owned(),
            (Some(limit), None) => format!("first {limit} per file"),
            (Some(limit), Some(seed)) => format!("{limit} per file, seed {seed}"),
        };
        if let Some(fold) = d.fold {
            row(
                &mut out,
                "fold",
                format!("{fold} of each file's questions, before the sample"),
            );
        }
        row(
            &mut out,
            "sample",
            format!("{} of {} ({sample})", d.selected, d.available),
        );
        let s = &self.system;
        row(&mut out, "mode", format!("{:?}", s.mode).to_lowercase());
        if let Some(url) = &s.server_url {
            row(&mut out, "server", url.clone());
        }
        row(&mut out, "LLM", s.llm.clone());
        row(&mut out, "embedder", s.embedder.clone());
        if let Some(budget) = &s.budget {
            row(&mut out, "budget", compact_json(budget));
        }
        if let Some(k_values) = &s.k_values {
            row(&mut out, "k values", compact_json(k_values));
        }
        // The summarizer's rule decides answers without a model (and when to say "I
        // don't know"), so its knobs stand beside the scores too.
        if let Some(rule) = s.config.as_ref().and_then(|c| c.get("summarizer")) {
            row(&mut out, "summarizer rule", compact_json(rule));
        }
        row(&mut out, "plan cache", s.cache.clone());
        if !s.roles.is_empty() {
            row(&mut out, "roles", s.roles.join(", "));
        }
        if let Some(setup_ms) = s.setup_ms {
            row(
                &mut out,
                "KG load + role start",
                format!("{:.1} s (not in any latency)", setup_ms / 1e3),
            );
        }
        row(
            &mut out,
            "ask options",
            serde_json::to_value(&self.run.ask_options)
                .map(|v| compact_json(&v))
                .unwrap_or_default(),
        );
        row(&mut out, "concurrency", self.run.concurrency.to_string());
        let v = &self.versions;
        row(
            &mut out,
            "version",
            format!(
                "kgmesh {} (commit {}{}), {}/{} {} CPUs",
                v.kgmesh,
                v.git_commit
                    .as_deref()
                    .map(|c| &c[..c.len().min(12)])
                    .unwrap_or("unknown"),
                if v.git_dirty == Some(true) {
                    ", dirty"
                } else {
                    ""
                },
                v.os,
                v.arch,
                v.cpus
            ),
        );
        row(&mut out, "started", self.run.started_at.clone());

        let _ = writeln!(out, "\n## Scores\n");
        out.push_str(&aggregate_table(&[("all", &self.aggregate)]));
        for (title, groups) in [
            ("By hops", &self.breakdown.by_hops),
            ("By question type", &self.breakdown.by_type),
            ("By file", &self.breakdown.by_source),
        ] {
            if groups.is_empty() {
                continue;
            }
            let _ = writeln!(out, "\n### {title}\n");
            let rows: Vec<(&str, &Aggregate)> =
                groups.iter().map(|(k, a)| (k.as_str(), a)).collect();
            out.push_str(&aggregate_table(&rows));
        }

        let a = &self.aggregate;
        out.push_str(&confidence_section(a, &self.breakdown.by_source));
        out.push_str(&calibration_hint(a, &self.results));
        out.push_str(&confidence_bands(&self.results));
        out.push_str(&plan_section(&self.results));
        out.push_str(&withholding_section(&self.results));
        let _ = writeln!(out, "\n## Cost and latency\n");
        let _ = writeln!(out, "| measure | value |\n|---|---|");
        let _ = writeln!(out, "| rounds (mean) | {:.2} |", a.rounds_mean);
        let _ = writeln!(
            out,
            "| LLM calls (mean / total) | {:.2} / {} |",
            a.llm_calls_mean, a.llm_calls_total
        );
        let _ = writeln!(
            out,
            "| tokens prompt / completion (total) | {} / {} |",
            a.prompt_tokens_total, a.completion_tokens_total
        );
        if a.llm_calls_total > 0 {
            let _ = writeln!(
                out,
                "| time waiting on the model (share of question time) | {:.1}% |",
                100.0 * a.model_time_share
            );
        }
        let _ = writeln!(out, "| bus messages (mean) | {:.2} |", a.bus_messages_mean);
        let _ = writeln!(out, "| graph rows (mean) | {:.1} |", a.graph_rows_mean);
        let _ = writeln!(
            out,
            "| plan-cache lookups that returned examples or a plan | {:.1}% |",
            100.0 * a.cache_hit_rate
        );
        let _ = writeln!(
            out,
            "| plans replayed / of those right (plan precision) | {:.1}% / {} |",
            100.0 * a.replay_rate,
            a.replay_hits_at_1
                .map_or("-".to_owned(), |p| format!("{:.1}%", 100.0 * p))
        );
        let _ = writeln!(out, "| partial answers | {:.1}% |", 100.0 * a.partial_rate);
        let share = |p: Option<f64>| p.map_or("-".to_owned(), |p| format!("{:.1}%", 100.0 * p));
        let _ = writeln!(
            out,
            "| low-confidence answers / Hits@1 among them / among the other answers | {:.1}% / {} / {} |",
            100.0 * a.low_confidence_rate,
            share(a.low_confidence_hits_at_1),
            share(a.confident_hits_at_1)
        );
        let degraded: Vec<String> = a
            .degraded_by
            .iter()
            .map(|(kind, count)| format!("{kind} {count}"))
            .collect();
        let _ = writeln!(
            out,
            "| degraded answers | {:.1}%{} |",
            100.0 * a.degraded_rate,
            if degraded.is_empty() {
                String::new()
            } else {
                format!(" ({})", degraded.join(", "))
            }
        );
        let _ = writeln!(
            out,
            "| errors / empty answers | {} / {} |",
            a.errors, a.empty
        );
        if let Some(latency) = &a.latency_ms {
            let _ = writeln!(out, "| latency ms (harness) | {} |", latency_cell(latency));
        }
        if let Some(latency) = &a.server_ms {
            let _ = writeln!(
                out,
                "| latency ms (system's own) | {} |",
                latency_cell(latency)
            );
        }
        if !a.stage_ms.is_empty() {
            let stages: Vec<String> = a
                .stage_ms
                .iter()
                .map(|(stage, latency)| format!("{stage} {:.1}", latency.p50))
                .collect();
            let _ = writeln!(
                out,
                "| p50 ms by stage (system's own) | {} |",
                stages.join(", ")
            );
        }
        let _ = writeln!(
            out,
            "| throughput | {:.2} questions/s ({} in {:.1} s) |",
            self.run.throughput_qps, self.run.completed, self.run.wall_s
        );
        out
    }
}

/// Answers before a hint is given: fewer say too little about a calibration.
const HINT_MIN_ANSWERS: usize = 50;

/// When the confidences are off on this run beyond what chance explains (ECE over
/// 0.05 and twice the ECE by chance, on at least [`HINT_MIN_ANSWERS`] answers) and its
/// answers report the plan's chance a calibration reads: how to fit one for the graph.
fn calibration_hint(a: &Aggregate, results: &[QuestionResult]) -> String {
    let Some(c) = &a.calibration else {
        return String::new();
    };
    let readable = results.iter().any(|r| r.plan_chance.is_some());
    if !readable || c.answers < HINT_MIN_ANSWERS || c.ece <= 0.05 || c.ece <= 2.0 * c.ece_by_chance
    {
        return String::new();
    }
    format!(
        "\nThe confidences are off on these answers (ECE {:.3}, against {:.3} by chance alone; \
         mean confidence {:.1} %, right {:.1} %). If the questions are your graph's own, \
         `kgmesh reader calibrate --reports report.json --out FILE` fits a calibration for \
         it from this run, used with `reader.calibration` (docs/confidence.md).\n",
        c.ece,
        c.ece_by_chance,
        100.0 * c.mean_confidence,
        100.0 * c.right as f64 / c.answers as f64
    )
}

/// Calibration of the answers' confidences: one line per file when there are several,
/// the reliability table and the risk–coverage curve of all of them.
fn confidence_section(a: &Aggregate, by_source: &BTreeMap<String, Aggregate>) -> String {
    let mut out = String::new();
    let Some(c) = &a.calibration else {
        return out;
    };
    let _ = writeln!(out, "\n## Confidence\n");
    let _ = writeln!(
        out,
        "Over the {} answers that carried a confidence; right = the first answer is a gold one.\n",
        c.answers
    );
    let _ = writeln!(
        out,
        "| set | {} |\n|---|---|---|---|---|---|---|---|",
        super::calibration::Calibration::CELLS
    );
    let row =
        |name: &str, c: &super::calibration::Calibration| format!("| {name} | {} |\n", c.cells());
    out.push_str(&row("all", c));
    if by_source.len() > 1 {
        for (name, group) in by_source {
            if let Some(g) = &group.calibration {
                out.push_str(&row(name, g));
            }
        }
    }
    let _ = writeln!(
        out,
        "\nReliability (answers by confidence):\n\n| confidence | answers | mean confidence | right |\n|---|---|---|---|"
    );
    for bin in &c.bins {
        let _ = writeln!(
            out,
            "| {:.1}–{:.1} | {} | {:.3} | {:.3} |",
            bin.lower,
            bin.lower + 0.1,
            bin.count,
            bin.mean_confidence,
            bin.accuracy
        );
    }
    let _ = writeln!(
        out,
        "\nRisk–coverage (answers kept at each threshold):\n\n| keep at ≥ | coverage | right among kept |\n|---|---|---|"
    );
    for k in &c.risk_coverage {
        let _ = writeln!(
            out,
            "| {:.1} | {:.1}% | {} |",
            k.threshold,
            100.0 * k.coverage,
            k.accuracy
                .map_or("-".to_owned(), |v| format!("{:.1}%", 100.0 * v))
        );
    }
    out
}

/// Two things the answer calibration reads, with how often the answers are right
/// either way: whether the first answer lies at the end of the plan its confidence
/// starts from, and whether a second reading of the question (the plan the learned
/// reader ranks first) reaches it too. Each sentence only when some reply said.
fn plan_section(results: &[QuestionResult]) -> String {
    // (yes, no): each (answers, right).
    let tally = |said: fn(&QuestionResult) -> Option<bool>| {
        let mut counts = ((0usize, 0usize), (0usize, 0usize));
        for r in results {
            let slot = match said(r) {
                Some(true) => &mut counts.0,
                Some(false) => &mut counts.1,
                None => continue,
            };
            slot.0 += 1;
            slot.1 += usize::from(r.score.hits_at_1);
        }
        counts
    };
    let share = |(n, right): (usize, usize)| {
        if n == 0 {
            "–".to_owned()
        } else {
            format!("{:.1} %", 100.0 * right as f64 / n as f64)
        }
    };
    let mut out = String::new();
    let (on, off) = tally(|r| r.plan_followed);
    if on.0 + off.0 > 0 {
        out.push_str(&format!(
            "\nAnswers at the end of the plan their confidence starts from: {} (right {}); \
             from another path: {} (right {}).\n",
            on.0,
            share(on),
            off.0,
            share(off)
        ));
    }
    let (agree, disagree) = tally(|r| r.readings_agree);
    if agree.0 + disagree.0 > 0 {
        out.push_str(&format!(
            "\nAnswers a second reading of the question reaches too: {} (right {}); \
             answers it does not reach: {} (right {}).\n",
            agree.0,
            share(agree),
            disagree.0,
            share(disagree)
        ));
    }
    out
}

/// What `--min-confidence` trades on questions that include unanswerable ones (no gold
/// answers): Hits@1 of the answers kept against the unanswerable questions declined,
/// at each threshold; nothing without unanswerable questions or confidences.
fn withholding_section(results: &[QuestionResult]) -> String {
    use super::calibration::{withholding, withholding_table, Replied, WITHHOLDING_THRESHOLDS};
    let replies: Vec<Replied> = results
        .iter()
        .filter(|r| r.error.is_none())
        .map(|r| Replied {
            answerable: !r.gold.is_empty(),
            answered: !r.predictions.is_empty(),
            confidence: r.confidence,
            right: r.score.hits_at_1,
        })
        .collect();
    if replies.iter().all(|r| r.answerable) || replies.iter().all(|r| r.confidence.is_none()) {
        return String::new();
    }
    format!(
        "\nAnswers withheld below a confidence (`--min-confidence`): Hits@1 of the answerable \
         questions counting only the answers kept, and the unanswerable questions that end in \
         \"I don't know\":\n\n{}",
        withholding_table(&withholding(&replies, &WITHHOLDING_THRESHOLDS))
    )
}

/// Questions by the confidence of their reply: how many, how many right, the model
/// calls and the latency each band cost (what the model cascade trades).
fn confidence_bands(results: &[QuestionResult]) -> String {
    let mut out = String::new();
    if results.iter().all(|r| r.confidence.is_none()) {
        return out;
    }
    // (name, lower bound, upper bound) of the confidence; "none": nothing estimated it.
    let bands: [(&str, f32, f32); 4] = [
        ("none", f32::NAN, f32::NAN),
        ("< 0.5", 0.0, 0.5),
        ("0.5 – 0.8", 0.5, 0.8),
        ("≥ 0.8", 0.8, f32::INFINITY),
    ];
    let within = |c: Option<f32>, low: f32, high: f32| match c {
        None => low.is_nan(),
        Some(c) => (low..high).contains(&c) || (high.is_infinite() && c >= low),
    };
    let _ = writeln!(
        out,
        "\nBy confidence band (every question; \"none\": nothing estimated it):\n\n| confidence | questions | Hits@1 | model calls (mean) | latency p50 ms |\n|---|---|---|---|---|"
    );
    for (name, low, high) in bands {
        let picked: Vec<&QuestionResult> = results
            .iter()
            .filter(|r| within(r.confidence, low, high))
            .collect();
        if picked.is_empty() {
            continue;
        }
        let n = picked.len() as f64;
        let mut latencies: Vec<f64> = picked.iter().map(|r| r.latency_ms).collect();
        latencies.sort_by(f64::total_cmp);
        let _ = writeln!(
            out,
            "| {name} | {} | {:.1}% | {:.2} | {:.1} |",
            picked.len(),
            100.0 * picked.iter().filter(|r| r.score.hits_at_1).count() as f64 / n,
            picked
                .iter()
                .map(|r| f64::from(r.cost.llm_calls))
                .sum::<f64>()
                / n,
            latencies[latencies.len() / 2]
        );
    }
    out
}

fn latency_cell(latency: &LatencySummary) -> String {
    format!(
        "p50 {:.1}, p95 {:.1}, p99 {:.1}, mean {:.1}, max {:.1}",
        latency.p50, latency.p95, latency.p99, latency.mean, latency.max
    )
}

/// A settings object as a table cell reads: `rounds 2, depth 3`, unset values as
/// `default`, nested objects in braces.
fn compact_json(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Null => "default".to_owned(),
        serde_json::Value::String(text) => text.clone(),
        serde_json::Value::Array(items) => items
            .iter()
            .map(compact_json)
            .collect::<Vec<_>>()
            .join(", "),
        serde_json::Value::Object(entries) => {
            let parts: Vec<String> = entries
                .iter()
                .map(|(key, value)| match value {
                    serde_json::Value::Object(_) => format!("{key} {{{}}}", compact_json(value)),
                    _ => format!("{key} {}", compact_json(value)),
                })
                .collect();
            parts.join(", ")
        }
        serde_json::Value::Number(number) => number_as_written(number),
        other => other.to_string(),
    }
}

/// A setting's number as it is written in a configuration file: settings are f32, and
/// 0.05 read back as f64 would show as 0.05000000074505806.
pub fn number_as_written(number: &serde_json::Number) -> String {
    match number.as_f64() {
        Some(x) if number.is_f64() => (x as f32).to_string(),
        _ => number.to_string(),
    }
}

fn percent(value: f64) -> String {
    format!("{:.1}", 100.0 * value)
}

/// A scores table, one row per group (percentages).
pub fn aggregate_table(rows: &[(&str, &Aggregate)]) -> String {
    let mut out = String::from(
        "| group | n | Hits@1 | Hits@any | F1 | context recall (any / share) | errors | latency p50 / p95 ms |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for (name, a) in rows {
        let latency = a
            .latency_ms
            .map(|l| format!("{:.1} / {:.1}", l.p50, l.p95))
            .unwrap_or_else(|| "-".to_owned());
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} | {} | {} / {} | {} | {latency} |",
            a.questions,
            percent(a.hits_at_1),
            percent(a.hits_at_any),
            percent(a.f1),
            percent(a.context_hit),
            percent(a.context_recall),
            a.errors
        );
    }
    out
}

/// Now as RFC 3339 UTC (second precision).
pub fn now_rfc3339() -> String {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    rfc3339(seconds)
}

/// Seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn rfc3339(unix_seconds: u64) -> String {
    let days = (unix_seconds / 86_400) as i64;
    let second_of_day = unix_seconds % 86_400;
    // Civil-from-days (H. Hinnant), valid for every date after 1970.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        second_of_day / 3_600,
        (second_of_day % 3_600) / 60,
        second_of_day % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        // 2000-02-29 12:34:56 UTC (a leap day).
        assert_eq!(rfc3339(951_827_696), "2000-02-29T12:34:56Z");
        assert_eq!(rfc3339(1_798_761_599), "2026-12-31T23:59:59Z");
    }

    #[test]
    fn settings_read_as_they_were_written() {
        // An f32 setting serialized through f64 keeps its written digits.
        let rule = serde_json::json!({
            "keep_within": 0.05f32,
            "max_citations": 5,
            "abstain_relations_cosine": 0.1f32,
        });
        assert_eq!(
            compact_json(&rule),
            "abstain_relations_cosine 0.1, keep_within 0.05, max_citations 5"
        );
        assert_eq!(compact_json(&serde_json::json!(1e-9)), "0.000000001");
    }

    #[test]
    fn a_run_whose_confidences_are_off_says_how_to_calibrate_them_to_its_graph() {
        use crate::metrics::tests::result;
        let answered = |confidence: f32, plan_chance: Option<f32>| -> Vec<QuestionResult> {
            (0..60)
                .map(|i| {
                    let mut r = result(&format!("q{i}"), 1, i % 10 != 0, false, 1.0);
                    r.predictions = vec!["x".into()];
                    r.confidence = Some(confidence);
                    r.plan_chance = plan_chance;
                    r
                })
                .collect()
        };
        let hint = |results: &[QuestionResult]| {
            let aggregate = Aggregate {
                calibration: crate::calibration::Calibration::of(
                    &results
                        .iter()
                        .map(|r| (r.confidence.unwrap(), r.score.hits_at_1))
                        .collect::<Vec<_>>(),
                ),
                ..Aggregate::default()
            };
            calibration_hint(&aggregate, results)
        };
        // 90 % right at confidence 0.3: off.
        let said = hint(&answered(0.3, Some(0.5)));
        assert!(
            said.contains("kgmesh reader calibrate --reports report.json"),
            "{said}"
        );
        assert!(
            said.contains("mean confidence 30.0 %, right 90.0 %"),
            "{said}"
        );
        // Right as often as said: nothing to say.
        assert_eq!(hint(&answered(0.9, Some(0.5))), "");
        // A report without the plan's chance cannot be calibrated on that way.
        assert_eq!(hint(&answered(0.3, None)), "");
    }

    #[test]
    fn the_plan_section_says_how_often_answers_are_right_by_what_the_calibration_reads() {
        use crate::metrics::tests::result;
        let mut results: Vec<QuestionResult> = (0..4)
            .map(|i| result(&format!("q{i}"), 1, i < 3, false, 1.0))
            .collect();
        assert_eq!(plan_section(&results), "", "no reply said either");
        for (r, agree) in results.iter_mut().zip([true, true, false, false]) {
            r.readings_agree = Some(agree);
        }
        results[0].plan_followed = Some(true);
        let said = plan_section(&results);
        assert!(
            said.contains("at the end of the plan their confidence starts from: 1 (right 100.0 %); from another path: 0 (right –)"),
            "{said}"
        );
        assert!(
            said.contains(
                "reaches too: 2 (right 100.0 %); answers it does not reach: 2 (right 50.0 %)"
            ),
            "{said}"
        );
    }
}
