//! kgmesh's benchmarks: the question-file formats of the public KGQA benchmarks, the
//! import of QA pairs from them, and the evaluation harness behind `kgmesh eval`. The
//! product knows a QA pair only as a question and its answers
//! ([`kgmesh_agents::cache_manager::warm::QaPair`]); everything about the benchmarks'
//! files lives here.
//!
//! - [`qa`]: MetaQA, IRN (PathQuestion, WC2014) and JSON-lines question files read line
//!   by line into one shape, and split into folds by position.
//! - [`import`]: those files as the QA pairs `kgmesh cache warm --import` warms from.
//! - The harness reads a benchmark's questions, asks them (embedded pipeline or a
//!   `kgmesh serve` URL), scores every reply, and writes a report that records the full
//!   configuration next to the scores, so every number it prints can be reproduced.
//!   Data flow, one file per stage: [`dataset`] → [`runner`] (through an
//!   [`answerer::Answerer`]) → [`metrics`] → [`report`] (JSON + Markdown), [`plot`]
//!   (SVG), [`compare`] (two reports).

pub mod answerer;
pub mod calibration;
pub mod compare;
pub mod dataset;
pub mod embedded;
pub mod import;
pub mod metrics;
pub mod normalize;
pub mod plot;
pub mod qa;
pub mod report;
pub mod runner;
pub mod text;
pub mod text2cypher;

use std::path::PathBuf;

use crate::qa::Fold;
use answerer::AnswererConfig;
use dataset::{Brackets, DatasetError, DatasetKind, Question, ReadOptions};
use metrics::{Aggregate, Breakdown};
use report::{DatasetInfo, Report, RunInfo, Versions, REPORT_FORMAT};
use runner::{RunOutcome, RunSettings};

/// Which questions a run asks.
#[derive(Debug, Clone)]
pub struct QuestionPlan {
    pub kind: DatasetKind,
    pub files: Vec<PathBuf>,
    pub brackets: Brackets,
    /// Per file, applied before `limit`: the part of each file's questions to ask.
    pub fold: Option<Fold>,
    /// Per file.
    pub limit: Option<usize>,
    pub sample_seed: Option<u64>,
}

/// The selected questions of every file, in file order, and how many the files hold
/// before selection. Each file's questions are narrowed to the plan's fold, then to
/// its `limit` (first or sampled).
pub fn load_questions(plan: &QuestionPlan) -> Result<(Vec<Question>, usize), DatasetError> {
    let options = ReadOptions {
        kind: plan.kind,
        brackets: plan.brackets,
        label: None,
    };
    let mut selected = Vec::new();
    let mut available = 0;
    for file in &plan.files {
        let questions = dataset::read_file(file, &options)?;
        available += questions.len();
        let questions = match plan.fold {
            Some(fold) => fold.select(questions),
            None => questions,
        };
        selected.extend(dataset::select(questions, plan.limit, plan.sample_seed));
    }
    Ok((selected, available))
}

/// A run's name for tables and plots: the sources it read, e.g. `metaqa/1-hop`.
pub fn default_name(questions: &[Question], kind: DatasetKind) -> String {
    let mut sources: Vec<&str> = questions.iter().map(|q| q.source.as_str()).collect();
    sources.dedup();
    match sources.as_slice() {
        [] => kind.to_string(),
        [one] => (*one).to_owned(),
        several => {
            // `metaqa/1-hop` + `metaqa/2-hop` → `metaqa`.
            let first_part = |source: &str| source.split('/').next().unwrap_or("").to_owned();
            let common = first_part(several[0]);
            if several
                .iter()
                .all(|s| s.contains('/') && first_part(s) == common)
            {
                common
            } else {
                several.join("+")
            }
        }
    }
}

/// Everything a report needs besides the per-question results.
pub struct RunContext {
    pub name: String,
    pub plan: QuestionPlan,
    pub kg: Option<PathBuf>,
    pub available: usize,
    pub selected: usize,
    pub settings: RunSettings,
    pub started_at: String,
    pub system: AnswererConfig,
    pub versions: Versions,
}

pub fn assemble_report(context: RunContext, outcome: RunOutcome) -> Report {
    let aggregate = Aggregate::of(&outcome.results);
    let breakdown = Breakdown::of(&outcome.results);
    let wall_s = outcome.wall.as_secs_f64();
    let completed = outcome.results.len();
    Report {
        format: REPORT_FORMAT,
        name: context.name,
        dataset: DatasetInfo {
            kind: context.plan.kind,
            files: context.plan.files,
            kg: context.kg,
            brackets: (context.plan.kind == DatasetKind::Metaqa).then_some(context.plan.brackets),
            available: context.available,
            selected: context.selected,
            fold: context.plan.fold,
            limit: context.plan.limit,
            sample_seed: context.plan.sample_seed,
        },
        run: RunInfo {
            started_at: context.started_at,
            wall_s,
            throughput_qps: if wall_s > 0.0 {
                completed as f64 / wall_s
            } else {
                0.0
            },
            concurrency: context.settings.concurrency,
            question_timeout_ms: context.settings.question_timeout.as_millis() as u64,
            ask_options: context.settings.options,
            completed,
            interrupted: outcome.interrupted,
        },
        system: context.system,
        versions: context.versions,
        aggregate,
        breakdown,
        results: outcome.results,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(source: &str) -> Question {
        Question {
            id: "x".into(),
            question: "q".into(),
            answers: vec!["a".into()],
            hops: None,
            kind: None,
            source: source.into(),
            asks: None,
        }
    }

    #[test]
    fn run_names_come_from_the_sources() {
        let kind = DatasetKind::Metaqa;
        assert_eq!(default_name(&[], kind), "metaqa");
        assert_eq!(default_name(&[from("wc2014-2h")], kind), "wc2014-2h");
        let hops = [
            from("metaqa/1-hop"),
            from("metaqa/1-hop"),
            from("metaqa/3-hop"),
        ];
        assert_eq!(default_name(&hops, kind), "metaqa");
        let mixed = [from("pathquestion-2h"), from("pathquestion-3h")];
        assert_eq!(
            default_name(&mixed, kind),
            "pathquestion-2h+pathquestion-3h"
        );
    }
}
