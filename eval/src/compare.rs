//! What changed between two runs: configuration, aggregate scores, and the questions
//! whose Hits@1 flipped.

use std::{
    collections::{BTreeMap, HashMap},
    fmt::Write as _,
};

use super::{
    metrics::{Aggregate, QuestionResult},
    report::Report,
};

/// Questions matched by id between two reports, split by how Hits@1 moved.
#[derive(Debug, Default)]
pub struct Flips<'a> {
    pub common: usize,
    /// Wrong in A, right in B.
    pub fixed: Vec<(&'a QuestionResult, &'a QuestionResult)>,
    /// Right in A, wrong in B.
    pub broken: Vec<(&'a QuestionResult, &'a QuestionResult)>,
    pub only_in_a: usize,
    pub only_in_b: usize,
}

pub fn flips<'a>(a: &'a Report, b: &'a Report) -> Flips<'a> {
    let by_id: HashMap<&str, &QuestionResult> =
        b.results.iter().map(|r| (r.id.as_str(), r)).collect();
    let mut flips = Flips::default();
    for left in &a.results {
        let Some(right) = by_id.get(left.id.as_str()) else {
            flips.only_in_a += 1;
            continue;
        };
        flips.common += 1;
        match (left.score.hits_at_1, right.score.hits_at_1) {
            (false, true) => flips.fixed.push((left, right)),
            (true, false) => flips.broken.push((left, right)),
            _ => {}
        }
    }
    flips.only_in_b = b.results.len() - flips.common;
    flips
}

/// `section.key = value` for every leaf of a JSON value.
fn flatten(prefix: &str, value: &serde_json::Value, out: &mut BTreeMap<String, String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, child) in map {
                let path = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                flatten(&path, child, out);
            }
        }
        leaf => {
            out.insert(prefix.to_owned(), leaf.to_string());
        }
    }
}

fn configuration(report: &Report) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let sections = [
        ("system", serde_json::to_value(&report.system)),
        ("dataset", serde_json::to_value(&report.dataset)),
        ("ask_options", serde_json::to_value(&report.run.ask_options)),
        ("concurrency", serde_json::to_value(report.run.concurrency)),
        (
            "git_commit",
            serde_json::to_value(&report.versions.git_commit),
        ),
    ];
    for (name, value) in sections {
        if let Ok(value) = value {
            flatten(name, &value, &mut out);
        }
    }
    // A measurement, not a setting.
    out.remove("system.setup_ms");
    out
}

fn metric_rows(a: &Aggregate) -> Vec<(&'static str, Option<f64>, bool)> {
    // (name, value, higher is better)
    let latency = a.latency_ms;
    vec![
        ("Hits@1 %", Some(100.0 * a.hits_at_1), true),
        ("Hits@any %", Some(100.0 * a.hits_at_any), true),
        ("F1 %", Some(100.0 * a.f1), true),
        ("context hit %", Some(100.0 * a.context_hit), true),
        ("context recall %", Some(100.0 * a.context_recall), true),
        ("questions", Some(a.questions as f64), true),
        ("errors", Some(a.errors as f64), false),
        ("empty answers", Some(a.empty as f64), false),
        ("partial %", Some(100.0 * a.partial_rate), false),
        (
            "low-confidence %",
            Some(100.0 * a.low_confidence_rate),
            false,
        ),
        ("cache hits %", Some(100.0 * a.cache_hit_rate), true),
        ("rounds (mean)", Some(a.rounds_mean), false),
        ("LLM calls (mean)", Some(a.llm_calls_mean), false),
        ("tokens (mean)", Some(a.tokens_mean), false),
        ("bus messages (mean)", Some(a.bus_messages_mean), false),
        ("latency p50 ms", latency.map(|l| l.p50), false),
        ("latency p95 ms", latency.map(|l| l.p95), false),
        ("latency p99 ms", latency.map(|l| l.p99), false),
    ]
}

fn cell(value: Option<f64>) -> String {
    value
        .map(|v| {
            if v.fract() == 0.0 && v.abs() < 1e12 {
                format!("{v:.0}")
            } else {
                format!("{v:.2}")
            }
        })
        .unwrap_or_else(|| "-".to_owned())
}

/// The differences between run A and run B, for people (Markdown).
pub fn render(a: &Report, b: &Report, a_label: &str, b_label: &str, max_listed: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# kgmesh eval compare\n");
    let _ = writeln!(out, "- A: {} ({a_label})", a.name);
    let _ = writeln!(out, "- B: {} ({b_label})\n", b.name);

    let _ = writeln!(out, "## Configuration differences\n");
    let (config_a, config_b) = (configuration(a), configuration(b));
    let mut keys: Vec<&String> = config_a.keys().chain(config_b.keys()).collect();
    keys.sort();
    keys.dedup();
    let differing: Vec<&String> = keys
        .into_iter()
        .filter(|key| config_a.get(*key) != config_b.get(*key))
        .collect();
    if differing.is_empty() {
        let _ = writeln!(out, "none\n");
    } else {
        let _ = writeln!(out, "| setting | A | B |\n|---|---|---|");
        let missing = "(absent)".to_owned();
        for key in differing {
            let _ = writeln!(
                out,
                "| {key} | {} | {} |",
                config_a.get(key).unwrap_or(&missing).replace('|', "\\|"),
                config_b.get(key).unwrap_or(&missing).replace('|', "\\|")
            );
        }
        out.push('\n');
    }

    let _ = writeln!(out, "## Aggregates\n");
    let _ = writeln!(out, "| metric | A | B | B − A |\n|---|---:|---:|---:|");
    for ((name, value_a, higher_is_better), (_, value_b, _)) in metric_rows(&a.aggregate)
        .into_iter()
        .zip(metric_rows(&b.aggregate))
    {
        let delta = match (value_a, value_b) {
            (Some(x), Some(y)) => {
                let d = y - x;
                // No verdict on a change too small to show at two decimals.
                let verdict = if d.abs() < 0.005 {
                    ""
                } else if (d > 0.0) == higher_is_better {
                    " (better)"
                } else {
                    " (worse)"
                };
                format!("{d:+.2}{verdict}")
            }
            _ => "-".to_owned(),
        };
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {delta} |",
            cell(value_a),
            cell(value_b)
        );
    }
    let _ = writeln!(
        out,
        "| throughput q/s | {:.2} | {:.2} | {:+.2} |",
        a.run.throughput_qps,
        b.run.throughput_qps,
        b.run.throughput_qps - a.run.throughput_qps
    );

    for (title, groups_a, groups_b) in [
        ("hops", &a.breakdown.by_hops, &b.breakdown.by_hops),
        ("question type", &a.breakdown.by_type, &b.breakdown.by_type),
        ("file", &a.breakdown.by_source, &b.breakdown.by_source),
    ] {
        if groups_a.is_empty() && groups_b.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n### Hits@1 % by {title}\n");
        let _ = writeln!(out, "| group | A | B | B − A |\n|---|---:|---:|---:|");
        let mut names: Vec<&String> = groups_a.keys().chain(groups_b.keys()).collect();
        names.sort();
        names.dedup();
        for name in names {
            let value_a = groups_a.get(name).map(|g| 100.0 * g.hits_at_1);
            let value_b = groups_b.get(name).map(|g| 100.0 * g.hits_at_1);
            let delta = match (value_a, value_b) {
                (Some(x), Some(y)) => format!("{:+.2}", y - x),
                _ => "-".to_owned(),
            };
            let _ = writeln!(
                out,
                "| {name} | {} | {} | {delta} |",
                cell(value_a),
                cell(value_b)
            );
        }
    }

    let flips = flips(a, b);
    let _ = writeln!(out, "\n## Questions that flipped (Hits@1)\n");
    let _ = writeln!(
        out,
        "{} questions in both runs: {} fixed (wrong in A, right in B), {} broken (right in A, \
         wrong in B); {} only in A, {} only in B.",
        flips.common,
        flips.fixed.len(),
        flips.broken.len(),
        flips.only_in_a,
        flips.only_in_b
    );
    for (title, list) in [("Fixed", &flips.fixed), ("Broken", &flips.broken)] {
        if list.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n### {title}\n");
        let _ = writeln!(out, "| id | question | gold | A answered | B answered |");
        let _ = writeln!(out, "|---|---|---|---|---|");
        for (left, right) in list.iter().take(max_listed) {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                left.id,
                escape(&left.question),
                escape(&left.gold.join("; ")),
                escape(&top_or_reason(left)),
                escape(&top_or_reason(right))
            );
        }
        if list.len() > max_listed {
            let _ = writeln!(out, "\n… and {} more", list.len() - max_listed);
        }
    }
    out
}

fn top_or_reason(result: &QuestionResult) -> String {
    if let Some(error) = &result.error {
        return format!("error: {error}");
    }
    result
        .predictions
        .first()
        .cloned()
        .unwrap_or_else(|| "(no answer)".to_owned())
}

fn escape(text: &str) -> String {
    let short: String = text.chars().take(120).collect();
    short.replace('|', "\\|").replace('\n', " ")
}
