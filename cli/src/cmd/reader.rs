//! `kgmesh reader`: train the question reader's weights from QA pairs of many domains
//! and say how well they choose plans on domains left out; and the passage reader's
//! span weights from the spans `kgmesh eval --span-examples` writes.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use kgmesh_agents::{
    cache_manager::warm,
    kg_linker::core::LinkerConfig,
    reader::{
        model::{Confidence, Ranked},
        train::{cross_fit_lexicon, example},
        Example, ReaderModel, TrainSettings,
    },
    scoring::{relevance::TextVectors, TEXT_VECTOR_CACHE},
};

use crate::config::Config;
use kgmesh_agents::summarizer::spans::{SpanExample, SpanModel, PASSAGE_SIGNALS, SPAN_FEATURES};
use kgmesh_eval::{
    calibration::{withholding, withholding_table, Calibration, Replied, WITHHOLDING_THRESHOLDS},
    qa::{read_lines, QaFormat},
};

#[derive(Debug, Args)]
pub struct ReaderArgs {
    #[command(subcommand)]
    command: ReaderCommand,
}

#[derive(Debug, Subcommand)]
enum ReaderCommand {
    /// Fit the reader's weights from QA pairs over their graphs and write them as JSON
    /// (`KGMESH_READER_WEIGHTS=FILE` uses them; the repository's are bundled).
    Train(TrainArgs),
    /// Show the candidate plans for one question over a graph: the first stage's
    /// order, the reader's scores and each candidate's features.
    Explain(ExplainArgs),
    /// Fit how the first stage's plan confidence maps to its answers' chance of being
    /// right, from `kgmesh eval` reports, and write the weights with it.
    Calibrate(CalibrateArgs),
    /// Fit the passage reader's span scorer from the candidate spans `kgmesh eval
    /// --text-index --span-examples` wrote, and write its weights as JSON
    /// (`KGMESH_PASSAGE_WEIGHTS=FILE` reads with them instead of the bundled hand-set
    /// ones); with `--calibrate`, fit only the confidence of given weights.
    Passages(PassagesArgs),
}

#[derive(Debug, Args)]
struct PassagesArgs {
    /// Span examples (JSON lines from `kgmesh eval --span-examples`), one file or more;
    /// each question's corpus is its `source`.
    #[arg(long = "examples", value_name = "FILE", required = true, num_args = 1..)]
    examples: Vec<PathBuf>,
    /// A corpus to leave out of training (repeat); it is scored as held out.
    #[arg(long, value_name = "CORPUS")]
    exclude: Vec<String>,
    /// Also score each training corpus with weights trained on the others: how the
    /// scorer reads a corpus it has not seen.
    #[arg(long)]
    leave_one_out: bool,
    /// Where to write the weights (trained on every corpus not excluded).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Keep the scorer's weights and fit only its confidence (the chance that a first
    /// answer is right) on the questions it answers, printing each corpus as the
    /// confidence fitted on the others reads it.
    #[arg(long)]
    calibrate: bool,
    /// With `--calibrate`: the weights to calibrate (default: the bundled ones).
    #[arg(long, value_name = "FILE", requires = "calibrate")]
    weights: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct CalibrateArgs {
    /// The weights to calibrate, as `kgmesh reader train` wrote them (default: the
    /// bundled ones for the way the reports' runs read, with MiniLM or by words).
    #[arg(long)]
    weights: Option<PathBuf>,
    /// `kgmesh eval` reports (report.json) of runs with these weights' confidence and
    /// re-ranking off: on your own graph's QA pairs, to fit a calibration for that graph
    /// (`reader.calibration`), or each on a graph the weights were not trained on (as
    /// `scripts/zoo-eval` makes them with READER=confidence). What is fitted is the
    /// plan's chance each answer reports (`plan_chance`); a report without it must
    /// carry uncalibrated confidences, as `reader train` writes weights.
    #[arg(long, required = true, num_args = 1..)]
    reports: Vec<PathBuf>,
    /// Reports only to measure the calibration on (not fitted on), each printed and
    /// then all pooled; the same kind as `--reports`.
    #[arg(long, num_args = 1..)]
    held_out: Vec<PathBuf>,
    /// Where to write the calibrated weights.
    #[arg(long)]
    out: PathBuf,
}

#[derive(Debug, Args)]
struct ExplainArgs {
    /// The graph file.
    #[arg(long)]
    kg: PathBuf,
    /// Reader weights (default: the ones in use).
    #[arg(long)]
    weights: Option<PathBuf>,
    /// Candidates shown.
    #[arg(long, default_value_t = 10)]
    top: usize,
    question: String,
}

#[derive(Debug, Args)]
struct TrainArgs {
    /// A domain zoo: every folder under it with a graph (`kg.tsv`, `kg.csv`, `kg.nt`)
    /// and `questions.jsonl`.
    #[arg(long)]
    zoo: Option<PathBuf>,
    /// A domain of the zoo to leave out (repeat); it is scored as held out.
    #[arg(long)]
    exclude: Vec<String>,
    /// More QA pairs over another graph, as `KG=QUESTIONS` (any format `kgmesh eval`
    /// reads; MetaQA's brackets are removed). Repeat for several.
    #[arg(long, value_name = "KG=QUESTIONS")]
    pairs: Vec<String>,
    /// QA pairs over another graph only to score the weights on, as `KG=QUESTIONS`
    /// (held out like `--exclude`). Repeat for several.
    #[arg(long, value_name = "KG=QUESTIONS")]
    score: Vec<String>,
    /// Also score each training graph with weights trained on the others (and a
    /// lexicon learned from them): how the reader chooses on a graph it has not seen.
    #[arg(long)]
    leave_one_out: bool,
    /// Candidates re-ranked per question.
    #[arg(long, default_value_t = 40)]
    candidates: usize,
    #[arg(long, default_value_t = TrainSettings::default().iterations)]
    iterations: usize,
    /// Where to write the weights.
    #[arg(long)]
    out: PathBuf,
    /// Also write every training example (question, candidates, features, targets) as
    /// JSON lines, for analysis; the lexicon features as trained (each training graph's
    /// from a lexicon learned without it). The file is replaced.
    #[arg(long)]
    dump: Option<PathBuf>,
}

/// One graph and its QA pairs.
struct Domain {
    name: String,
    kg: PathBuf,
    questions: PathBuf,
    held_out: bool,
}

fn zoo_domains(zoo: &Path, exclude: &[String]) -> anyhow::Result<Vec<Domain>> {
    let mut domains = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(zoo)
        .with_context(|| format!("cannot read the zoo {}", zoo.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    entries.sort();
    for dir in entries {
        let Some(kg) = ["kg.tsv", "kg.csv", "kg.nt"]
            .iter()
            .map(|f| dir.join(f))
            .find(|p| p.is_file())
        else {
            continue;
        };
        let questions = dir.join("questions.jsonl");
        if !questions.is_file() {
            continue;
        }
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        domains.push(Domain {
            held_out: exclude.contains(&name),
            name,
            kg,
            questions,
        });
    }
    for name in exclude {
        if !domains.iter().any(|d| &d.name == name) {
            bail!("--exclude {name}: no such domain in {}", zoo.display());
        }
    }
    Ok(domains)
}

pub fn run(config: Config, args: ReaderArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Runtime::new()?;
    match args.command {
        ReaderCommand::Train(args) => runtime.block_on(train(config, args)),
        ReaderCommand::Explain(args) => runtime.block_on(explain(config, args)),
        ReaderCommand::Calibrate(args) => calibrate(&config, args),
        ReaderCommand::Passages(args) => passages(args),
    }
}

/// Trains the span scorer (see `kgmesh_agents::summarizer::spans`).
fn passages(args: PassagesArgs) -> anyhow::Result<()> {
    let mut examples: Vec<SpanExample> = Vec::new();
    for path in &args.examples {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read span examples {}", path.display()))?;
        for (n, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let example: SpanExample = serde_json::from_str(line)
                .with_context(|| format!("{}:{}: not a span example", path.display(), n + 1))?;
            if example
                .rows
                .iter()
                .any(|r| r.features.len() != SPAN_FEATURES.len())
            {
                bail!(
                    "{}:{}: written for other span features; write the examples again with \
                     this kgmesh (`kgmesh eval --span-examples`)",
                    path.display(),
                    n + 1
                );
            }
            examples.push(example);
        }
    }
    if examples.is_empty() {
        bail!(
            "no span examples in the {} file(s) given",
            args.examples.len()
        );
    }
    let mut corpora: Vec<String> = examples.iter().map(|e| e.source.clone()).collect();
    corpora.sort();
    corpora.dedup();
    for name in &args.exclude {
        if !corpora.contains(name) {
            bail!(
                "--exclude {name}: no such corpus among the examples ({})",
                corpora.join(", ")
            );
        }
    }
    let settings = TrainSettings::default();
    let training: Vec<SpanExample> = examples
        .iter()
        .filter(|e| !args.exclude.contains(&e.source))
        .cloned()
        .collect();
    if args.calibrate {
        return calibrate_passages(&args, &examples, &training, &corpora, settings);
    }
    println!(
        "span scorer: {} features, {} questions from {} corpora for training ({} teach: a span \
         is right); {} iterations, learning rate {}, L2 {}",
        SPAN_FEATURES.len(),
        training.len(),
        corpora.len() - args.exclude.len(),
        training.iter().filter(|e| e.teaches()).count(),
        settings.iterations,
        settings.learning_rate,
        settings.l2
    );
    let model = SpanModel::train(&training, settings);
    println!("| corpus | how | answerable | Hits@1 | right span offered | unanswerable declined | answerable declined |");
    println!("|---|---|---:|---:|---:|---:|---:|");
    let mut pooled = SpanScore::default();
    for corpus in &corpora {
        let held_out = args.exclude.contains(corpus);
        let (how, scorer) = if held_out {
            ("held out", model.clone())
        } else if args.leave_one_out {
            let others: Vec<SpanExample> = training
                .iter()
                .filter(|e| e.source != *corpus)
                .cloned()
                .collect();
            ("left out", SpanModel::train(&others, settings))
        } else {
            ("trained on", model.clone())
        };
        let score = SpanScore::of(&scorer, examples.iter().filter(|e| e.source == *corpus));
        if held_out || args.leave_one_out {
            pooled.add(&score);
        }
        score.print(corpus, how);
    }
    if pooled.answerable + pooled.unanswerable > 0 {
        pooled.print("all not trained on", "pooled");
    }
    if let Some(out) = &args.out {
        let text = serde_json::to_string_pretty(&model)?;
        std::fs::write(out, text + "\n")
            .with_context(|| format!("cannot write {}", out.display()))?;
        println!(
            "weights written to {} (without a confidence: their answers carry none until \
             `kgmesh reader passages --calibrate --weights {}` fits one)",
            out.display(),
            out.display()
        );
    }
    Ok(())
}

/// `kgmesh reader passages --calibrate`: the confidence of fixed span weights, fitted
/// on every corpus not excluded, each corpus also read by the confidence fitted without
/// it.
fn calibrate_passages(
    args: &PassagesArgs,
    examples: &[SpanExample],
    training: &[SpanExample],
    corpora: &[String],
    settings: TrainSettings,
) -> anyhow::Result<()> {
    let mut model = match &args.weights {
        Some(path) => SpanModel::load(path)?,
        None => SpanModel::bundled().as_ref().clone(),
    };
    let fitted = model.calibrate(training, settings);
    if fitted == 0 {
        bail!("the scorer answers none of the training questions: nothing to fit a confidence on");
    }
    println!(
        "passage confidence: {} signals ({}), {fitted} answers from {} corpora; {} \
         iterations, learning rate {}, L2 {}",
        PASSAGE_SIGNALS.len(),
        PASSAGE_SIGNALS.join(", "),
        corpora.len() - args.exclude.len(),
        settings.iterations,
        settings.learning_rate,
        settings.l2
    );
    println!("| corpus | how | {} |", Calibration::CELLS);
    println!(
        "|---|---|{}",
        "---|".repeat(Calibration::CELLS.split('|').count())
    );
    let mut pooled: Vec<(f32, bool)> = Vec::new();
    let mut replies: Vec<Replied> = Vec::new();
    for corpus in corpora {
        let held_out = args.exclude.contains(corpus);
        let (how, reader) = if held_out {
            ("held out", model.clone())
        } else {
            let others: Vec<SpanExample> = training
                .iter()
                .filter(|e| e.source != *corpus)
                .cloned()
                .collect();
            let mut reader = model.clone();
            reader.calibrate(&others, settings);
            ("left out", reader)
        };
        let Some(confidence) = &reader.confidence else {
            continue;
        };
        let mut pairs: Vec<(f32, bool)> = Vec::new();
        for example in examples.iter().filter(|e| e.source == *corpus) {
            let answered = model.answered(example);
            let chance = answered
                .as_ref()
                .map(|r| confidence.model.chance(&r.inputs));
            if let (Some(answered), Some(chance)) = (&answered, chance) {
                pairs.push((chance, answered.right));
            }
            replies.push(Replied {
                answerable: example.answerable,
                answered: answered.is_some(),
                confidence: chance,
                right: answered.is_some_and(|r| r.right),
            });
        }
        if let Some(calibration) = Calibration::of(&pairs) {
            println!("| {corpus} | {how} | {} |", calibration.cells());
        }
        pooled.extend(pairs);
    }
    if let Some(calibration) = Calibration::of(&pooled) {
        println!("| all | not fitted on | {} |", calibration.cells());
    }
    println!("answers withheld below a confidence (`--min-confidence`), each corpus read by the fit without it:");
    print!(
        "{}",
        withholding_table(&withholding(&replies, &WITHHOLDING_THRESHOLDS))
    );
    if let Some(confidence) = &model.confidence {
        for (signal, weight) in PASSAGE_SIGNALS.iter().zip(&confidence.model.weights) {
            println!("  {signal:<12} {weight:>8.3}");
        }
    }
    if let Some(out) = &args.out {
        let text = serde_json::to_string_pretty(&model)?;
        std::fs::write(out, text + "\n")
            .with_context(|| format!("cannot write {}", out.display()))?;
        println!("weights with their confidence written to {}", out.display());
    }
    Ok(())
}

/// How a span scorer reads one corpus's examples.
#[derive(Debug, Default)]
struct SpanScore {
    answerable: usize,
    hits: usize,
    offered: usize,
    answerable_declined: usize,
    unanswerable: usize,
    declined: usize,
}

impl SpanScore {
    fn of<'a>(model: &SpanModel, examples: impl Iterator<Item = &'a SpanExample>) -> Self {
        let mut s = Self::default();
        for e in examples {
            // Without a statement that says enough of the question, the reader declines.
            let first = model.first(&e.rows).filter(|_| e.gated);
            if e.answerable {
                s.answerable += 1;
                s.offered += usize::from(e.teaches());
                s.hits += usize::from(first.is_some_and(|i| e.rows[i].right));
                s.answerable_declined += usize::from(first.is_none());
            } else {
                s.unanswerable += 1;
                s.declined += usize::from(first.is_none());
            }
        }
        s
    }

    fn add(&mut self, o: &Self) {
        self.answerable += o.answerable;
        self.hits += o.hits;
        self.offered += o.offered;
        self.answerable_declined += o.answerable_declined;
        self.unanswerable += o.unanswerable;
        self.declined += o.declined;
    }

    fn print(&self, corpus: &str, how: &str) {
        let pct = |a: usize, b: usize| 100.0 * a as f64 / b.max(1) as f64;
        println!(
            "| {corpus} | {how} | {} | {:.1} % | {:.1} % | {} of {} | {} |",
            self.answerable,
            pct(self.hits, self.answerable),
            pct(self.offered, self.answerable),
            self.declined,
            self.unanswerable,
            self.answerable_declined
        );
    }
}

async fn train(config: Config, args: TrainArgs) -> anyhow::Result<()> {
    let mut domains = match &args.zoo {
        Some(zoo) => zoo_domains(zoo, &args.exclude)?,
        None => Vec::new(),
    };
    let pairs = args.pairs.iter().map(|p| (p, false, "--pairs"));
    for (pair, held_out, flag) in pairs.chain(args.score.iter().map(|p| (p, true, "--score"))) {
        let Some((kg, questions)) = pair.split_once('=') else {
            bail!("{flag} {pair}: expected KG=QUESTIONS");
        };
        domains.push(Domain {
            name: Path::new(questions)
                .parent()
                .and_then(Path::file_name)
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| questions.to_owned()),
            kg: kg.into(),
            questions: questions.into(),
            held_out,
        });
    }
    if domains.iter().all(|d| d.held_out) {
        bail!("nothing to train on: give --zoo DIR (less what --exclude leaves out) or --pairs KG=QUESTIONS");
    }
    let embedder = super::ask::embedder(&config).await?;
    let config_line = format!(
        "embedder {}, candidates {}, iterations {}, learning rate {}, l2 {}",
        if embedder.is_some() {
            "on"
        } else {
            "off (lexical)"
        },
        args.candidates,
        args.iterations,
        TrainSettings::default().learning_rate,
        TrainSettings::default().l2
    );
    println!("reader train: {config_line}");
    let linker = LinkerConfig::default();
    // (graph, examples) of each training domain: a graph's questions are held out
    // together when the confidence is fitted.
    let mut groups: Vec<(String, Vec<Example>)> = Vec::new();
    let mut held: Vec<(String, Vec<Example>)> = Vec::new();
    let mut trained_on = Vec::new();
    // Each domain's linked questions, in the order of its examples, for `--dump`.
    let mut dumped: Vec<Vec<String>> = Vec::new();
    for domain in &domains {
        let (graph, _, _) = super::ask::load_kg(&domain.kg, None)
            .await
            .with_context(|| format!("cannot load {}", domain.kg.display()))?;
        let gazetteer = warm::build_gazetteer(graph.as_ref())
            .await
            .context("cannot index the graph's names")?;
        let text = std::fs::read_to_string(&domain.questions)
            .with_context(|| format!("cannot read {}", domain.questions.display()))?;
        let mut pairs: Vec<(String, Vec<String>)> = Vec::new();
        for (line, record) in read_lines(&text, QaFormat::Auto) {
            match record {
                Ok(record) => pairs.push((record.question.replace(['[', ']'], ""), record.answers)),
                Err(why) => eprintln!("{}:{line}: {why}", domain.questions.display()),
            }
        }
        let vectors = embedder
            .clone()
            .map(|e| Arc::new(TextVectors::new(e, TEXT_VECTOR_CACHE)));
        let mut examples = Vec::new();
        let mut questions = Vec::new();
        for (question, answers) in &pairs {
            if let Some(found) = example(
                graph.as_ref(),
                &gazetteer,
                vectors.clone(),
                question,
                answers,
                &linker,
                args.candidates,
            )
            .await?
            {
                examples.push(found);
                questions.push(question.clone());
            }
        }
        dumped.push(questions);
        let learnable = examples.iter().filter(|e| e.has_right_plan()).count();
        println!(
            "  {:<12} {:>4} pairs, {:>4} linked, {:>4} with a right plan among the candidates{}",
            domain.name,
            pairs.len(),
            examples.len(),
            learnable,
            if domain.held_out { "  (held out)" } else { "" }
        );
        if domain.held_out {
            held.push((domain.name.clone(), examples));
        } else {
            trained_on.push(format!("{} ({} questions)", domain.name, pairs.len()));
            groups.push((domain.kg.display().to_string(), examples));
        }
    }
    let settings = TrainSettings {
        iterations: args.iterations,
        ..TrainSettings::default()
    };
    if args.leave_one_out {
        leave_one_out(&groups, args.candidates, settings);
    }
    // Each training graph's lexicon features come from a lexicon learned without it;
    // the graphs held out are read with the one learned from all training graphs.
    let lexicon = cross_fit_lexicon(&mut groups);
    for (_, examples) in &mut held {
        for example in examples {
            example.apply_lexicon(&lexicon);
        }
    }
    // Dumped as trained: with the cross-fitted lexicon features.
    if let Some(path) = &args.dump {
        write_dump(path, &domains, &dumped, &groups, &held)?;
    }
    let train_set: Vec<Example> = groups.iter().flat_map(|(_, e)| e.iter().cloned()).collect();
    let mut model = ReaderModel::train(&train_set, args.candidates, settings, trained_on.clone());
    model.lexicon = lexicon;
    // The confidence is fitted on rankings of graphs the ranker did not see: each graph's
    // questions ranked by weights trained on the others. (Their lexicon features were
    // cross-fitted among all training graphs, this one included; `--leave-one-out`
    // learns each fold's lexicon without the graph it scores.)
    let mut graphs: Vec<&str> = groups.iter().map(|(g, _)| g.as_str()).collect();
    graphs.sort_unstable();
    graphs.dedup();
    let mut ranked: Vec<Ranked> = Vec::new();
    for graph in &graphs {
        let others: Vec<Example> = groups
            .iter()
            .filter(|(g, _)| g != graph)
            .flat_map(|(_, e)| e.iter().cloned())
            .collect();
        let fold = ReaderModel::train(&others, args.candidates, settings, Vec::new());
        for (_, examples) in groups.iter().filter(|(g, _)| g == graph) {
            for e in examples {
                ranked.push(Ranked {
                    inputs: fold.confidence_inputs(&e.features),
                    right: fold.first_is_right(e),
                    answerable: e.answerable,
                });
            }
        }
    }
    model.confidence = Confidence::fit(&ranked, settings);
    // The first stage's order needs no fold (it is not trained); its confidence is fitted
    // on every graph, and reported as fitted without each graph in turn.
    let first_ranked: Vec<(&str, Ranked)> = groups
        .iter()
        .flat_map(|(g, examples)| {
            examples.iter().map(move |e| {
                let ranked = Ranked {
                    inputs: ReaderModel::first_stage_inputs(&e.features),
                    right: e.is_right(0),
                    answerable: e.answerable,
                };
                (g.as_str(), ranked)
            })
        })
        .collect();
    let all_first: Vec<Ranked> = first_ranked.iter().map(|(_, r)| r.clone()).collect();
    model.first_stage_confidence = Confidence::fit(&all_first, settings);
    let mut first_oof: Vec<(f32, bool)> = Vec::new();
    for graph in &graphs {
        let others: Vec<Ranked> = first_ranked
            .iter()
            .filter(|(g, _)| g != graph)
            .map(|(_, r)| r.clone())
            .collect();
        if let Some(fold) = Confidence::fit(&others, settings) {
            first_oof.extend(
                first_ranked
                    .iter()
                    .filter(|(g, _)| g == graph)
                    .map(|(_, r)| (fold.chance(&r.inputs), r.right)),
            );
        }
    }
    let calibration = |pairs: &[(f32, bool)]| -> String {
        Calibration::of(pairs).map_or("no questions".to_owned(), |c| c.summary())
    };
    println!(
        "first-stage confidence, each training graph fitted without it: {}",
        calibration(&first_oof)
    );
    for (name, examples) in &held {
        let pairs: Vec<(f32, bool)> = examples
            .iter()
            .filter_map(|e| Some((model.first_stage_chance(&e.features)?, e.is_right(0))))
            .collect();
        println!(
            "first-stage confidence, held out {name}: {}",
            calibration(&pairs)
        );
    }
    if let Some(confidence) = &model.confidence {
        let fitted: Vec<(f32, bool)> = ranked
            .iter()
            .map(|r| (confidence.chance(&r.inputs), r.right))
            .collect();
        println!(
            "reader confidence, out of domain on the training graphs: {}",
            calibration(&fitted)
        );
        // Right answers kept, plus unanswerable questions declined, at each threshold.
        let mut line = String::from("answers right or rightly declined, by min_confidence:");
        for step in 0..=10 {
            let threshold = step as f32 * 0.05;
            let good = ranked
                .iter()
                .zip(&fitted)
                .filter(|(r, (c, _))| {
                    if *c >= threshold {
                        r.right
                    } else {
                        !r.answerable
                    }
                })
                .count();
            line.push_str(&format!(
                " {threshold:.2}: {:.1} %",
                100.0 * good as f64 / ranked.len() as f64
            ));
        }
        println!("{line}");
        for (name, examples) in &held {
            let pairs: Vec<(f32, bool)> = examples
                .iter()
                .map(|e| {
                    (
                        model.chance(&e.features).unwrap_or(0.0),
                        model.first_is_right(e),
                    )
                })
                .collect();
            println!(
                "reader confidence, held out {name}: {}",
                calibration(&pairs)
            );
        }
    }
    let first_stage = ReaderModel::first_stage(args.candidates);
    println!(
        "plan chosen right (where the candidates hold one): training {:.1} % (first stage {:.1} %)",
        100.0 * model.accuracy(&train_set),
        100.0 * first_stage.accuracy(&train_set)
    );
    for (name, examples) in &held {
        println!(
            "  held out {name}: {:.1} % (first stage {:.1} %)",
            100.0 * model.accuracy(examples),
            100.0 * first_stage.accuracy(examples)
        );
    }
    for (feature, weight) in model.features.iter().zip(&model.weights) {
        println!("  {feature:<26} {weight:>8.3}");
    }
    let json = serde_json::to_string_pretty(&model)?;
    std::fs::write(&args.out, json + "\n")
        .with_context(|| format!("cannot write {}", args.out.display()))?;
    println!("wrote {}", args.out.display());
    Ok(())
}

/// Writes every training example (question, candidates, features, targets) as JSON
/// lines, domain by domain: `groups` holds the trained domains' examples and `held` the
/// held-out ones', each in `domains`' order; `questions` each domain's linked questions.
fn write_dump(
    path: &Path,
    domains: &[Domain],
    questions: &[Vec<String>],
    groups: &[(String, Vec<Example>)],
    held: &[(String, Vec<Example>)],
) -> anyhow::Result<()> {
    use std::io::Write;
    let mut file =
        std::fs::File::create(path).with_context(|| format!("cannot write {}", path.display()))?;
    let (mut trained, mut held) = (groups.iter(), held.iter());
    for (domain, questions) in domains.iter().zip(questions) {
        let next = if domain.held_out {
            held.next()
        } else {
            trained.next()
        };
        let (_, examples) = next.expect("one example set per domain");
        for (question, e) in questions.iter().zip(examples) {
            let line = serde_json::json!({
                "domain": domain.name, "question": question, "paths": e.paths,
                "features": e.features, "targets": e.targets,
            });
            writeln!(file, "{line}")?;
        }
    }
    Ok(())
}

/// Weights trained on every graph of `groups` but `graph`, with a lexicon learned from
/// those graphs alone (cross-fitted among them, as in training), and `graph`'s examples
/// read with that lexicon: how the reader reads a graph it has not seen.
fn fold_without(
    groups: &[(String, Vec<Example>)],
    graph: &str,
    candidates: usize,
    settings: TrainSettings,
) -> (ReaderModel, Vec<Example>) {
    let mut others: Vec<(String, Vec<Example>)> =
        groups.iter().filter(|(g, _)| g != graph).cloned().collect();
    let lexicon = cross_fit_lexicon(&mut others);
    let train_set: Vec<Example> = others.into_iter().flat_map(|(_, e)| e).collect();
    let model = ReaderModel::train(&train_set, candidates, settings, Vec::new());
    let mut scored: Vec<Example> = groups
        .iter()
        .filter(|(g, _)| g == graph)
        .flat_map(|(_, e)| e.iter().cloned())
        .collect();
    for example in &mut scored {
        example.apply_lexicon(&lexicon);
    }
    (model, scored)
}

/// Scores each graph of `groups` with weights trained on the other graphs, whose
/// lexicon is learned from those graphs alone (cross-fitted among them as in training).
fn leave_one_out(groups: &[(String, Vec<Example>)], candidates: usize, settings: TrainSettings) {
    let mut graphs: Vec<&str> = groups.iter().map(|(g, _)| g.as_str()).collect();
    graphs.sort_unstable();
    graphs.dedup();
    let first_stage = ReaderModel::first_stage(candidates);
    let (mut right, mut first_right, mut total) = (0.0, 0.0, 0usize);
    println!("leave one graph out (plan chosen right where the candidates hold one):");
    for graph in &graphs {
        let (model, scored) = fold_without(groups, graph, candidates, settings);
        let useful = scored.iter().filter(|e| e.has_right_plan()).count();
        let (accuracy, first) = (model.accuracy(&scored), first_stage.accuracy(&scored));
        right += accuracy * useful as f64;
        first_right += first * useful as f64;
        total += useful;
        println!(
            "  {graph:<60} {:>5.1} % (first stage {:>5.1} %) of {useful}",
            100.0 * accuracy,
            100.0 * first
        );
    }
    if total > 0 {
        println!(
            "  all graphs, pooled: {:.1} % (first stage {:.1} %) of {total}",
            100.0 * right / total as f64,
            100.0 * first_right / total as f64
        );
    }
}

/// The answer calibration, fitted on the answers of whole runs; reported as fitted
/// without each report in turn (each run's answers calibrated by the others'), then
/// written fitted on all.
fn calibrate(config: &Config, args: CalibrateArgs) -> anyhow::Result<()> {
    use kgmesh_agents::reader::model::AnswerCalibration;
    use kgmesh_coordinator::confidence::SIGNALS;
    let reports = load_reports(&args.reports)?;
    let (mut model, weights) = match &args.weights {
        Some(path) => (ReaderModel::load(path)?, path.display().to_string()),
        None => {
            let embedded = match reports_read_with_an_embedder(&reports)? {
                Some(embedded) => embedded,
                None => config.embedder.kind != crate::config::EmbedderKind::None,
            };
            let model = ReaderModel::bundled(embedded).as_ref().clone();
            let which = if embedded { "with MiniLM" } else { "by words" };
            (model, format!("the bundled weights for reading {which}"))
        }
    };
    println!("calibrating {weights}");
    if model.first_stage_confidence.is_none() {
        bail!(
            "{weights} has no first-stage confidence to calibrate; write the weights with `kgmesh reader train`",
        );
    }
    let runs = read_runs(&reports)?;
    let held_out = read_runs(&load_reports(&args.held_out)?)?;
    let settings = TrainSettings::default();
    let summary = |pairs: &[(f32, bool)]| {
        Calibration::of(pairs).map_or("no answers".to_owned(), |c| c.summary())
    };
    let mut raw: Vec<(f32, bool)> = Vec::new();
    let mut crossed: Vec<(f32, bool)> = Vec::new();
    for (name, answered) in &runs {
        let reported: Vec<(f32, bool)> = answered.iter().map(|(c, r)| (*c, r.right)).collect();
        println!("  {name:<24} as reported: {}", summary(&reported));
        raw.extend(reported);
        let others: Vec<Ranked> = runs
            .iter()
            .filter(|(n, _)| n != name)
            .flat_map(|(_, a)| a.iter().map(|(_, r)| r.clone()))
            .collect();
        if let Some(fit) = Confidence::fit(&others, settings) {
            let calibrated: Vec<(f32, bool)> = answered
                .iter()
                .map(|(_, r)| (fit.chance(&r.inputs), r.right))
                .collect();
            println!(
                "  {:<24} calibrated by the others: {}",
                "",
                summary(&calibrated)
            );
            crossed.extend(calibrated);
        }
    }
    println!("all runs, as reported: {}", summary(&raw));
    if runs.len() > 1 {
        println!(
            "all runs, each calibrated by the others: {}",
            summary(&crossed)
        );
    }
    let all: Vec<Ranked> = runs
        .iter()
        .flat_map(|(_, a)| a.iter().map(|(_, r)| r.clone()))
        .collect();
    let fit = Confidence::fit(&all, settings).context("no answers to fit")?;
    for (signal, weight) in SIGNALS.iter().zip(&fit.weights) {
        println!("  {signal:<18} {weight:>8.3}");
    }
    let mut held: Vec<(f32, bool)> = Vec::new();
    for (name, answered) in &held_out {
        let reported: Vec<(f32, bool)> = answered.iter().map(|(c, r)| (*c, r.right)).collect();
        let calibrated: Vec<(f32, bool)> = answered
            .iter()
            .map(|(_, r)| (fit.chance(&r.inputs), r.right))
            .collect();
        println!("  held out {name:<24} as reported: {}", summary(&reported));
        println!("  held out {:<24} calibrated: {}", "", summary(&calibrated));
        held.extend(calibrated);
    }
    if held_out.len() > 1 {
        println!("held out, pooled, calibrated: {}", summary(&held));
    }
    model.answer_calibration = Some(AnswerCalibration {
        signals: SIGNALS.iter().map(|s| (*s).to_owned()).collect(),
        model: fit,
    });
    model
        .trained_on
        .retain(|line| !line.starts_with("answer calibration:"));
    model.trained_on.push(format!(
        "answer calibration: {}",
        runs.iter()
            .map(|(n, a)| format!("{n} ({} answers)", a.len()))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let json = serde_json::to_string_pretty(&model)?;
    std::fs::write(&args.out, json + "\n")
        .with_context(|| format!("cannot write {}", args.out.display()))?;
    println!("wrote {}", args.out.display());
    Ok(())
}

/// `kgmesh eval` reports, each with its path, read once.
fn load_reports(paths: &[PathBuf]) -> anyhow::Result<Vec<(&PathBuf, kgmesh_eval::report::Report)>> {
    paths
        .iter()
        .map(|path| Ok((path, kgmesh_eval::report::Report::load(path)?)))
        .collect()
}

/// Whether the reports' runs read with an embedder (`None` when no report says): the
/// bundled weights whose calibration they refit. Runs read both ways are an error, as
/// each way of reading has its own calibration.
fn reports_read_with_an_embedder(
    reports: &[(&PathBuf, kgmesh_eval::report::Report)],
) -> anyhow::Result<Option<bool>> {
    let mut ways = std::collections::BTreeSet::new();
    for (_, report) in reports {
        let embedder = report.system.embedder.trim();
        if !embedder.is_empty() {
            ways.insert(!embedder.starts_with("none"));
        }
    }
    if ways.len() > 1 {
        bail!(
            "some reports were answered with an embedder and some by words alone; calibrate \
             each way of reading on its own runs (the calibration reads their signals apart)"
        );
    }
    Ok(ways.into_iter().next())
}

/// Each report's answers that carry a confidence: (run name, (the confidence as
/// reported, what the calibration reads and whether the first answer is right)). The
/// calibration reads the plan's chance where the report gives it (`plan_chance`), else
/// the confidence itself, which must then be uncalibrated.
#[allow(clippy::type_complexity)]
fn read_runs(
    reports: &[(&PathBuf, kgmesh_eval::report::Report)],
) -> anyhow::Result<Vec<(String, Vec<(f32, Ranked)>)>> {
    use kgmesh_coordinator::confidence::signals;
    let mut runs = Vec::new();
    for (path, report) in reports {
        let answered: Vec<(f32, Ranked)> = report
            .results
            .iter()
            .filter(|r| r.error.is_none() && !r.predictions.is_empty())
            .filter_map(|r| {
                let reported = r.confidence?;
                let chance = r.plan_chance.unwrap_or(reported);
                let texts: Vec<&str> = r.predictions.iter().map(String::as_str).collect();
                let inputs = signals(
                    chance,
                    r.plan_followed,
                    r.readings_agree,
                    r.cost.low_confidence,
                    &texts,
                    r.cost.rounds,
                    r.topic_entities,
                );
                Some((
                    reported,
                    Ranked {
                        inputs,
                        right: r.score.hits_at_1,
                        answerable: true,
                    },
                ))
            })
            .collect();
        if answered.is_empty() {
            bail!(
                "{}: no answer carries a confidence (was reader.confidence on?)",
                path.display()
            );
        }
        runs.push((report.name.clone(), answered));
    }
    Ok(runs)
}

async fn explain(config: Config, args: ExplainArgs) -> anyhow::Result<()> {
    let embedder = super::ask::embedder(&config).await?;
    let embedder_on = embedder.is_some();
    use kgmesh_agents::{
        kg_linker::core::metapath_text,
        reader::train::{read_question, Reading},
    };
    let model = match &args.weights {
        Some(path) => Arc::new(ReaderModel::load(path)?),
        None => {
            let readers = kgmesh_agents::reader::active()
                .unwrap_or_else(kgmesh_agents::reader::Readers::bundled);
            readers.for_reading(embedder_on).clone()
        }
    };
    let (graph, _, _) = super::ask::load_kg(&args.kg, None).await?;
    let gazetteer = warm::build_gazetteer(graph.as_ref()).await?;
    let vectors = embedder.map(|e| Arc::new(TextVectors::new(e, TEXT_VECTOR_CACHE)));
    let (mentions, reading) = read_question(
        graph.as_ref(),
        &gazetteer,
        vectors,
        &args.question,
        &LinkerConfig::default(),
        model.candidates,
        Some(&model.lexicon),
    )
    .await?;
    println!("mentions: {mentions:?}");
    let Some(Reading {
        reaching,
        picked,
        rows,
        ..
    }) = reading
    else {
        println!("no entity of the question is in the graph, or no relation leaves it");
        return Ok(());
    };
    let mut shown: Vec<(usize, f32)> = rows
        .iter()
        .enumerate()
        .map(|(k, row)| (k, model.score(row)))
        .collect();
    shown.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    for (k, score) in shown.into_iter().take(args.top) {
        let i = picked[k];
        println!(
            "{score:>7.3}  first #{k:<3} {:<60} reaches {}{}",
            metapath_text(&reaching[i].metapath),
            reaching[i].reached.len(),
            if reaching[i].complete { "" } else { "+" }
        );
        let features: Vec<String> = model
            .features
            .iter()
            .zip(&rows[k])
            .filter(|(_, v)| **v != 0.0)
            .map(|(f, v)| format!("{f}={v:.2}"))
            .collect();
        println!("         {}", features.join(" "));
    }
    let shown = |chance: Option<f32>| chance.map_or("-".to_owned(), |c| format!("{c:.2}"));
    println!(
        "confidence: the reader's first plan {}, the first stage's first plan {} (before the answer calibration)",
        shown(model.chance(&rows)),
        shown(model.first_stage_chance(&rows))
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use kgmesh_agents::reader::ReaderModel;
    use kgmesh_coordinator::confidence::SIGNALS;

    #[test]
    fn the_bundled_answer_calibrations_read_the_coordinators_signals() {
        for embedded in [false, true] {
            let model = ReaderModel::bundled(embedded);
            assert!(
                model.first_stage_confidence.is_some(),
                "embedded {embedded}"
            );
            let calibration = model
                .answer_calibration
                .as_ref()
                .expect("the bundled weights carry an answer calibration");
            assert_eq!(calibration.signals, SIGNALS, "embedded {embedded}");
            assert_eq!(calibration.model.weights.len(), SIGNALS.len());
        }
    }
}
