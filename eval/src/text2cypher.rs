//! `kgmesh eval --dataset text2cypher`: execution accuracy of grounded Cypher on
//! question/query pairs (`{"question", "cypher"}` per line, e.g. Northwind's).
//!
//! Each gold query runs on the graph to give the reference answers; a pair whose query
//! does not run, or returns no rows, is skipped and counted. A prediction is right when
//! its first column gives the gold query's first column: in order when the gold query
//! orders (rows tied on the value it orders by in any order), as a set otherwise, and
//! when the gold query limits rows without ordering them, any as many of the rows it
//! would give without its limit. Nodes compare by their display name, numbers whatever
//! their type.
//!
//! Cold: the ranked enumeration alone. Warm (with `--fold`): plans are first learned from
//! the other folds' pairs, by their answers only (the gold queries are never read for
//! it), then the fold is evaluated both ways.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::qa::Fold;
use anyhow::{bail, Context as _};
use kgmesh_agents::query_executor::grounded::{
    plain_text, CypherRunner, GroundedCypher, Reference, Ties, EXISTENCE_TRIES, LEARN_TRIES,
    MODEL_CHOICES,
};
use kgmesh_models::{Embedder, LanguageModel};
use kgmesh_schemas::graph::Value;
use kgmesh_schemas::messages::ask::{AskOptions, AskRequest};

use super::answerer::Answerer;
use super::metrics::{percentile, ratio};
use kgmesh_stores::{GraphStore, QueryLimits};
use serde::Serialize;

/// One question with a query known to answer it, or with its answers (what
/// `kgmesh cypher --learn` also reads; learning needs only one of them).
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Pair {
    pub question: String,
    #[serde(default)]
    pub cypher: Option<String>,
    #[serde(default)]
    pub answers: Option<Vec<serde_json::Value>>,
}

/// What a right answer to a pair is: its answers as given (unordered), or the rows of
/// its query run on the graph. `None` when the query does not run or gives no rows.
pub async fn reference_for(
    store: &dyn GraphStore,
    planner: &GroundedCypher,
    pair: &Pair,
    limits: &QueryLimits,
) -> Option<Reference> {
    if let Some(answers) = &pair.answers {
        let answers: Vec<String> = answers
            .iter()
            .map(|a| plain_text(&Value::from_json(a)))
            .collect();
        return (!answers.is_empty()).then_some(Reference {
            answers,
            ordered: false,
            unlimited: None,
            ties: None,
        });
    }
    let cypher = pair.cypher.as_deref()?;
    let rows = match store.cypher(cypher, &[], limits).await {
        Ok(rows) if !rows.truncated => rows,
        _ => return None,
    };
    let answers = planner.answer_column(&rows);
    if answers.is_empty() || answers.len() != rows.rows.len() {
        return None;
    }
    let ordered = cypher.to_uppercase().contains("ORDER BY");
    let unlimited_rows = match without_limit(cypher) {
        Some(text) => match store.cypher(&text, &[], limits).await {
            Ok(rows) if !rows.truncated => Some(rows),
            _ => None,
        },
        None => None,
    };
    // Ordered by a returned value other than the answer: rows sharing it are tied.
    let key_column = ordered
        .then(|| order_key(cypher))
        .flatten()
        .and_then(|key| rows.columns.iter().position(|c| *c == key))
        .filter(|&k| k > 0);
    let keys_of = |rows: &kgmesh_schemas::graph::Rows, k: usize| -> Vec<String> {
        rows.rows
            .iter()
            .map(|row| row.get(k).map(plain_text).unwrap_or_default())
            .collect()
    };
    let ties = key_column.map(|k| Ties {
        keys: keys_of(&rows, k),
        beyond: unlimited_rows.as_ref().and_then(|all| {
            let answers = planner.answer_column(all);
            (answers.len() == all.rows.len())
                .then(|| keys_of(all, k).into_iter().zip(answers).collect())
        }),
    });
    let unlimited = if ordered {
        None
    } else {
        unlimited_rows.map(|all| planner.answer_column(&all))
    };
    Some(Reference {
        answers,
        ordered,
        unlimited,
        ties,
    })
}

/// The expression the query's last `ORDER BY` sorts by first, as a column would be
/// named (`ordersCount`, `o.freight`).
fn order_key(cypher: &str) -> Option<String> {
    let at = cypher.to_uppercase().rfind("ORDER BY")?;
    let tail = &cypher[at + "ORDER BY".len()..];
    let key: String = tail
        .trim_start()
        .split([',', '\n'])
        .next()?
        .split_whitespace()
        .take_while(|w| {
            !matches!(
                w.to_uppercase().as_str(),
                "ASC" | "DESC" | "ASCENDING" | "DESCENDING" | "LIMIT" | "SKIP" | "RETURN"
            )
        })
        .collect::<Vec<_>>()
        .join(" ");
    (!key.is_empty()).then_some(key)
}

pub struct Text2CypherRun {
    pub questions: PathBuf,
    pub fold: Option<Fold>,
    pub limit: Option<usize>,
    pub out: PathBuf,
    pub graph: String,
    pub progress: bool,
    /// A model that picks among the best candidates (scored beside cold and warm).
    pub llm: Option<Arc<dyn LanguageModel>>,
    /// How the model's server is held to the offered numbers, for the report.
    pub constraint: &'static str,
    /// The whole pipeline (every role, as `kgmesh ask` starts them), asked each scored
    /// question too, and what to say about it in the report.
    pub pipeline: Option<(Arc<dyn Answerer>, String)>,
    /// Answers the pipeline returns at most.
    pub max_answers: u16,
    /// Matches questions' words to category values by embedding.
    pub embedder: Option<Arc<dyn Embedder>>,
}

#[derive(Debug, Serialize)]
struct Outcome {
    index: usize,
    question: String,
    kind: &'static str,
    gold: String,
    cold_query: Option<String>,
    cold_right: bool,
    warm_query: Option<String>,
    warm_right: Option<bool>,
    learned: Option<f32>,
    /// The model's pick among the best of the ranking (warm with a fold, else cold).
    #[serde(skip_serializing_if = "Option::is_none")]
    model_query: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    model_right: Option<bool>,
    /// Why the LLM-free choice stood in for the model's.
    #[serde(skip_serializing_if = "Option::is_none")]
    model_fallback: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    model_ms: Option<f64>,
    /// The pipeline's answers (with `--pipeline`), and whether they are the right ones.
    #[serde(skip_serializing_if = "Option::is_none")]
    pipeline_answers: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pipeline_right: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pipeline_ms: Option<f64>,
    /// Some candidate among the first `LEARN_TRIES` gives the right answers.
    reachable: bool,
    candidates: usize,
    enumerate_ms: f64,
    /// The cold choice: existence checks and the chosen query's run.
    choose_ms: f64,
    /// Queries the cold choice sent to the store.
    choose_queries: usize,
}

/// A store that counts the queries sent through it.
struct Counted<'a> {
    store: &'a dyn GraphStore,
    queries: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl CypherRunner for Counted<'_> {
    async fn run(
        &self,
        query: &str,
        params: &[(String, Value)],
        limits: &QueryLimits,
    ) -> kgmesh_stores::StoreResult<kgmesh_schemas::graph::Rows> {
        self.queries
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.store.cypher(query, params, limits).await
    }

    fn remote(&self) -> bool {
        CypherRunner::remote(self.store)
    }
}

/// The kind of question a gold query answers, read from its text.
fn kind_of(cypher: &str) -> &'static str {
    let lower = cypher.to_lowercase();
    let unspaced = lower.replace(' ', "");
    let aggregate = ["count(", "sum(", "avg(", "min(", "max(", "collect("]
        .iter()
        .any(|f| unspaced.contains(f));
    let relationships = lower.matches("]-").count();
    if aggregate {
        "aggregate"
    } else if relationships >= 2 {
        "multi-hop"
    } else if lower.contains("where") || lower.contains('{') {
        "filter"
    } else {
        "lookup"
    }
}

/// The gold query without its final `LIMIT n`, when it has one and no ORDER BY.
fn without_limit(cypher: &str) -> Option<String> {
    let trimmed = cypher.trim_end().trim_end_matches(';').trim_end();
    let at = trimmed.to_uppercase().rfind("LIMIT")?;
    let tail = trimmed[at + "LIMIT".len()..].trim();
    (!tail.is_empty() && tail.chars().all(|c| c.is_ascii_digit())).then(|| trimmed[..at].to_owned())
}

/// The limits of every query run to read references and to learn from pairs (the
/// evaluation's and `cache warm`'s alike).
pub fn learning_limits() -> QueryLimits {
    QueryLimits {
        max_rows: 10_000,
        timeout: Duration::from_secs(10),
        ..QueryLimits::default()
    }
}

/// Learns the ranking from questions with their references (those without one are
/// skipped), then fits it. Returns how many had a reference, and how many of those a
/// right candidate. `progress` prefixes a line on stderr every 50 questions.
pub async fn learn_from(
    store: &dyn GraphStore,
    planner: &mut GroundedCypher,
    questions: &[(&str, Option<&Reference>)],
    limits: &QueryLimits,
    progress: Option<&str>,
) -> anyhow::Result<(usize, usize)> {
    let started = Instant::now();
    let (mut tried, mut learned) = (0usize, 0usize);
    for (n, (question, reference)) in questions.iter().enumerate() {
        let Some(reference) = reference else {
            continue;
        };
        tried += 1;
        if !planner
            .learn(store, question, reference, limits)
            .await?
            .is_empty()
        {
            learned += 1;
        }
        if let Some(prefix) = progress.filter(|_| (n + 1) % 50 == 0) {
            eprintln!(
                "{prefix}: learning {}/{} ({learned} plans) {:.0?}",
                n + 1,
                questions.len(),
                started.elapsed()
            );
        }
    }
    planner.fit();
    Ok((tried, learned))
}

/// Gives the planner an embedder, so that questions naming category values in other
/// words are grounded; says how many values were embedded, or why none were.
pub async fn use_embedder(
    planner: &mut GroundedCypher,
    embedder: Option<Arc<dyn Embedder>>,
    prefix: &str,
) {
    let Some(embedder) = embedder else {
        return;
    };
    let started = Instant::now();
    match planner.use_embedder(embedder.clone()).await {
        Ok(count) => eprintln!(
            "{prefix}: {count} category values embedded with {} in {:.1?}",
            embedder.name(),
            started.elapsed()
        ),
        Err(error) => eprintln!(
            "{prefix}: category values not embedded ({error}); values are matched by their words only"
        ),
    }
}

pub fn read_pairs(path: &Path) -> anyhow::Result<Vec<Pair>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut pairs = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let pair: Pair = serde_json::from_str(line).with_context(|| {
            format!(
                "{}:{}: not a {{\"question\", \"cypher\" or \"answers\"}} line",
                path.display(),
                number + 1
            )
        })?;
        if pair.cypher.is_none() && pair.answers.is_none() {
            bail!(
                "{}:{}: a pair needs \"cypher\" or \"answers\"",
                path.display(),
                number + 1
            );
        }
        pairs.push(pair);
    }
    Ok(pairs)
}

fn percent(part: usize, whole: usize) -> f64 {
    100.0 * ratio(part, whole)
}

pub async fn run(store: Arc<dyn GraphStore>, run: Text2CypherRun) -> anyhow::Result<()> {
    let pairs = read_pairs(&run.questions)?;
    if pairs.is_empty() {
        bail!("{}: no question/query pairs", run.questions.display());
    }
    let limits = learning_limits();
    let schema = store
        .schema()
        .await
        .context("cannot read the graph's schema")?;
    let started = Instant::now();
    let mut planner = GroundedCypher::read(store.as_ref(), (*schema).clone(), &limits)
        .await
        .context("cannot read the graph's values")?;
    use_embedder(&mut planner, run.embedder.clone(), "kgmesh eval").await;
    eprintln!(
        "kgmesh eval: text2cypher: {} labels, {} text values indexed in {:.1?}",
        planner.values().labels.len(),
        planner.values().indexed_values(),
        started.elapsed()
    );

    let selected: Vec<usize> = (0..pairs.len())
        .filter(|&i| run.fold.is_none_or(|fold| fold.contains(i)))
        .take(run.limit.unwrap_or(usize::MAX))
        .collect();

    // References from the gold queries (or the answers given), for the pairs scored
    // and, with a fold, the pairs learned from.
    let mut needed = vec![false; pairs.len()];
    for &i in &selected {
        needed[i] = true;
    }
    if let Some(fold) = run.fold {
        for (i, flag) in needed.iter_mut().enumerate() {
            *flag |= !fold.contains(i);
        }
    }
    let mut references: Vec<Option<Reference>> = Vec::with_capacity(pairs.len());
    let (mut read, mut unusable) = (0usize, 0usize);
    for (pair, needed) in pairs.iter().zip(&needed) {
        let reference = if *needed {
            read += 1;
            let reference = reference_for(store.as_ref(), &planner, pair, &limits).await;
            unusable += usize::from(reference.is_none());
            reference
        } else {
            None
        };
        references.push(reference);
    }

    // Learning from the other folds, by answers only.
    let mut learn_tried = 0usize;
    if let Some(fold) = run.fold {
        let training: Vec<(&str, Option<&Reference>)> = (0..pairs.len())
            .filter(|&i| !fold.contains(i))
            .map(|i| (pairs[i].question.as_str(), references[i].as_ref()))
            .collect();
        let started = Instant::now();
        let progress = run.progress.then_some("kgmesh eval");
        let (tried, learned) =
            learn_from(store.as_ref(), &mut planner, &training, &limits, progress).await?;
        learn_tried = tried;
        eprintln!(
            "kgmesh eval: learned from {learned} of {learn_tried} pairs with answers (of {}) in {:.1?}",
            training.len(),
            started.elapsed()
        );
    }

    let mut outcomes = Vec::new();
    let mut refusals = 0usize;
    for (n, &i) in selected.iter().enumerate() {
        let Some(reference) = &references[i] else {
            continue;
        };
        let pair = &pairs[i];
        let timer = Instant::now();
        let question = planner.read_question(&pair.question).await;
        let ranked = planner.ranked(&question);
        let enumerate_ms = timer.elapsed().as_secs_f64() * 1e3;
        for (candidate, _) in &ranked {
            if kgmesh_stores::cypher::check_read_only(&candidate.cypher, &schema, &limits).is_err()
            {
                refusals += 1;
            }
        }
        let right = |rows: Option<kgmesh_schemas::graph::Rows>| {
            rows.is_some_and(|rows| reference.matches(&planner.answer_column(&rows)))
        };
        // Cold and warm alike: the best candidate that returns a row, among the first
        // EXISTENCE_TRIES of the cold ranking or of the learned one.
        let counted = Counted {
            store: store.as_ref(),
            queries: Default::default(),
        };
        let timer = Instant::now();
        let (cold, cold_rows) = match planner
            .choose_existing(
                &counted,
                &question,
                &ranked,
                false,
                EXISTENCE_TRIES,
                &limits,
            )
            .await
        {
            Some((choice, rows)) => (Some(choice.candidate), rows),
            None => (None, None),
        };
        let choose_ms = timer.elapsed().as_secs_f64() * 1e3;
        let choose_queries = counted.queries.into_inner();
        let cold_right = right(cold_rows);
        let mut reachable = cold_right;
        for (candidate, _) in ranked.iter().take(LEARN_TRIES) {
            if reachable {
                break;
            }
            let rows = store
                .cypher(&candidate.cypher, &candidate.params, &limits)
                .await
                .ok();
            reachable = right(rows);
        }
        let (warm_query, warm_right, learned) = if run.fold.is_some() {
            let (choice, rows) = match planner
                .choose_existing(
                    store.as_ref(),
                    &question,
                    &ranked,
                    true,
                    EXISTENCE_TRIES,
                    &limits,
                )
                .await
            {
                Some((choice, rows)) => (Some(choice), rows),
                None => (None, None),
            };
            (
                choice.as_ref().map(|c| c.candidate.cypher.clone()),
                Some(right(rows)),
                choice.and_then(|c| c.learned),
            )
        } else {
            (None, None, None)
        };
        let (mut model_query, mut model_right, mut model_fallback, mut model_ms) =
            (None, None, None, None);
        if let Some(llm) = &run.llm {
            let asked = Instant::now();
            if let Some(picked) = planner
                .choose_with_model(
                    llm.as_ref(),
                    store.as_ref(),
                    &question,
                    &ranked,
                    MODEL_CHOICES,
                    &limits,
                )
                .await
            {
                model_query = Some(picked.choice.candidate.cypher.clone());
                model_right = Some(right(picked.rows));
                model_fallback = picked.fallback;
            }
            model_ms = Some(asked.elapsed().as_secs_f64() * 1e3);
        }
        let (mut pipeline_answers, mut pipeline_right, mut pipeline_ms) = (None, None, None);
        if let Some((pipeline, _)) = &run.pipeline {
            let asked = Instant::now();
            let request = AskRequest {
                question: pair.question.clone(),
                options: AskOptions {
                    max_answers: Some(run.max_answers),
                    ..AskOptions::default()
                },
            };
            let answers: Vec<String> = match pipeline.ask(request).await {
                Ok(reply) => reply.answers.into_iter().map(|a| a.text).collect(),
                Err(error) => {
                    tracing::warn!(%error, question = %pair.question, "the pipeline gave no reply");
                    Vec::new()
                }
            };
            pipeline_right = Some(!answers.is_empty() && reference.matches(&answers));
            pipeline_answers = Some(answers);
            pipeline_ms = Some(asked.elapsed().as_secs_f64() * 1e3);
        }
        outcomes.push(Outcome {
            index: i,
            question: pair.question.clone(),
            kind: pair.cypher.as_deref().map_or("answers", kind_of),
            gold: pair.cypher.clone().unwrap_or_default(),
            cold_query: cold.map(|c| c.cypher),
            cold_right,
            warm_query,
            warm_right,
            learned,
            model_query,
            model_right,
            model_fallback,
            model_ms,
            pipeline_answers,
            pipeline_right,
            pipeline_ms,
            reachable,
            candidates: ranked.len(),
            enumerate_ms,
            choose_ms,
            choose_queries,
        });
        if run.progress && (n + 1) % 100 == 0 {
            eprintln!("kgmesh eval: {}/{} questions", n + 1, selected.len());
        }
    }

    // Report.
    std::fs::create_dir_all(&run.out)
        .with_context(|| format!("cannot create {}", run.out.display()))?;
    let mut lines = std::fs::File::create(run.out.join("questions.jsonl"))
        .context("cannot write questions.jsonl")?;
    for outcome in &outcomes {
        writeln!(lines, "{}", serde_json::to_string(outcome)?)?;
    }
    let mut by_kind: BTreeMap<&str, (usize, usize, usize, usize, usize)> = BTreeMap::new();
    for o in &outcomes {
        let entry = by_kind.entry(o.kind).or_default();
        entry.0 += 1;
        entry.1 += usize::from(o.cold_right);
        entry.2 += usize::from(o.warm_right == Some(true));
        entry.3 += usize::from(o.reachable);
        entry.4 += usize::from(o.model_right == Some(true));
    }
    let total = outcomes.len();
    let cold = outcomes.iter().filter(|o| o.cold_right).count();
    let warm = outcomes
        .iter()
        .filter(|o| o.warm_right == Some(true))
        .count();
    let changed = outcomes
        .iter()
        .filter(|o| o.warm_query.is_some() && o.warm_query != o.cold_query)
        .count();
    let mut latencies: Vec<f64> = outcomes.iter().map(|o| o.enumerate_ms).collect();
    latencies.sort_by(f64::total_cmp);
    let mut choose_latencies: Vec<f64> = outcomes.iter().map(|o| o.choose_ms).collect();
    choose_latencies.sort_by(f64::total_cmp);
    let choose_queries: Vec<usize> = outcomes.iter().map(|o| o.choose_queries).collect();
    let candidates: Vec<usize> = outcomes.iter().map(|o| o.candidates).collect();
    let mean_candidates = candidates.iter().sum::<usize>() as f64 / total.max(1) as f64;

    let mut summary = String::new();
    use std::fmt::Write as _;
    writeln!(summary, "# text2cypher: {}", run.questions.display())?;
    writeln!(summary)?;
    let model = match &run.llm {
        Some(llm) => format!(
            "model {} picking among the {MODEL_CHOICES} best of the {} ranking (choice \
             constraint: {})",
            llm.name(),
            if run.fold.is_some() { "warm" } else { "cold" },
            run.constraint
        ),
        None => "model none; grounded Cypher, LLM-free".to_owned(),
    };
    let model = format!(
        "{model}; values grounded by their words{}",
        match planner.embedder() {
            Some(embedder) => format!(" and by embedding ({})", embedder.name()),
            None => String::new(),
        }
    );
    writeln!(
        summary,
        "Configuration: graph {}; {model}; fold {}; learned \
         ranking from {} training pairs (of {} with answers, a right candidate within the \
         first {}); limits {} rows, {:?}.",
        run.graph,
        run.fold
            .map(|f| format!("{f} (warm: learned from the other folds)"))
            .unwrap_or_else(|| "none (cold only)".into()),
        planner.learned_examples(),
        learn_tried,
        LEARN_TRIES,
        limits.max_rows,
        limits.timeout
    )?;
    writeln!(summary)?;
    writeln!(
        summary,
        "Pairs: {} in the file, {} selected; of the {} whose gold queries ran (the selected and, \
         with a fold, the training pairs), {} did not run or returned no rows (skipped); {} scored.",
        pairs.len(),
        selected.len(),
        read,
        unusable,
        total
    )?;
    writeln!(summary)?;
    let with_model = run.llm.is_some();
    let (model_head, model_rule) = if with_model {
        (" model % |", "---:|")
    } else {
        ("", "")
    };
    writeln!(
        summary,
        "| kind | questions | cold % | warm % |{model_head} reachable % |"
    )?;
    writeln!(summary, "|---|---:|---:|---:|{model_rule}---:|")?;
    let model_cell = |right: usize, n: usize| {
        if with_model {
            format!(" {:.1} |", percent(right, n))
        } else {
            String::new()
        }
    };
    let warm_cell = |right: usize, n: usize| {
        if run.fold.is_some() {
            format!("{:.1}", percent(right, n))
        } else {
            "—".into()
        }
    };
    for (kind, (n, c, w, r, m)) in &by_kind {
        writeln!(
            summary,
            "| {kind} | {n} | {:.1} | {} |{} {:.1} |",
            percent(*c, *n),
            warm_cell(*w, *n),
            model_cell(*m, *n),
            percent(*r, *n)
        )?;
    }
    let reachable = outcomes.iter().filter(|o| o.reachable).count();
    let model_right = outcomes
        .iter()
        .filter(|o| o.model_right == Some(true))
        .count();
    writeln!(
        summary,
        "| **all** | {total} | **{:.1}** | **{}** |{} {:.1} |",
        percent(cold, total),
        warm_cell(warm, total),
        model_cell(model_right, total),
        percent(reachable, total)
    )?;
    writeln!(summary)?;
    writeln!(
        summary,
        "Reachable: some candidate among the first {LEARN_TRIES} of the cold ranking gives \
         the right answers (the ceiling of choosing among candidates)."
    )?;
    writeln!(summary)?;
    writeln!(
        summary,
        "Learning changed the chosen query for {changed} of {total} questions. Candidates per question: mean {mean_candidates:.0}; \
         validator refusals among all candidates: {refusals}. Grounding + enumeration + ranking: \
         p50 {:.2} ms, p99 {:.2} ms.",
        percentile(&latencies, 50.0),
        percentile(&latencies, 99.0)
    )?;
    writeln!(summary)?;
    writeln!(
        summary,
        "Cold choice (existence checks among the first {EXISTENCE_TRIES} candidates, then the chosen \
         query): p50 {:.2} ms, p99 {:.2} ms; queries sent per question: mean {:.2}, max {}.",
        percentile(&choose_latencies, 50.0),
        percentile(&choose_latencies, 99.0),
        choose_queries.iter().sum::<usize>() as f64 / total.max(1) as f64,
        choose_queries.iter().max().copied().unwrap_or(0)
    )?;
    if with_model {
        let fallbacks: Vec<&str> = outcomes
            .iter()
            .filter_map(|o| o.model_fallback.as_deref())
            .collect();
        let mut model_latency: Vec<f64> = outcomes.iter().filter_map(|o| o.model_ms).collect();
        model_latency.sort_by(f64::total_cmp);
        writeln!(summary)?;
        writeln!(
            summary,
            "Model: {} of {total} picks unusable or failed, answered by the LLM-free choice \
             instead{}; model pick p50 {:.0} ms, p99 {:.0} ms.",
            fallbacks.len(),
            fallbacks
                .first()
                .map(|why| format!(" (first: {why})"))
                .unwrap_or_default(),
            percentile(&model_latency, 50.0),
            percentile(&model_latency, 99.0)
        )?;
    }
    if let Some((_, described)) = &run.pipeline {
        let right = outcomes
            .iter()
            .filter(|o| o.pipeline_right == Some(true))
            .count();
        let mut by_kind: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for o in &outcomes {
            let entry = by_kind.entry(o.kind).or_default();
            entry.0 += 1;
            entry.1 += usize::from(o.pipeline_right == Some(true));
        }
        let mut pipeline_latency: Vec<f64> =
            outcomes.iter().filter_map(|o| o.pipeline_ms).collect();
        pipeline_latency.sort_by(f64::total_cmp);
        writeln!(summary)?;
        writeln!(
            summary,
            "Pipeline ({described}; at most {} answers): its answers are the right ones for \
             **{right} of {total} ({:.1} %)**; {}. Per question p50 {:.0} ms, p99 {:.0} ms.",
            run.max_answers,
            percent(right, total),
            by_kind
                .iter()
                .map(|(kind, (n, r))| format!("{kind} {:.1} %", percent(*r, *n)))
                .collect::<Vec<_>>()
                .join(", "),
            percentile(&pipeline_latency, 50.0),
            percentile(&pipeline_latency, 99.0)
        )?;
    }
    std::fs::write(run.out.join("summary.md"), &summary).context("cannot write summary.md")?;
    println!("{summary}");
    eprintln!("kgmesh eval: wrote {}", run.out.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gold_queries_are_sorted_into_kinds() {
        assert_eq!(kind_of("MATCH (p:Product) RETURN count(p)"), "aggregate");
        assert_eq!(
            kind_of("MATCH (a:A)-[:R]->(b:B)-[:S]->(c:C) RETURN c.name"),
            "multi-hop"
        );
        assert_eq!(
            kind_of("MATCH (s:Supplier {country: 'UK'}) RETURN s"),
            "filter"
        );
        assert_eq!(kind_of("MATCH (s:Supplier) RETURN s.name"), "lookup");
    }

    #[test]
    fn only_a_final_limit_is_taken_off() {
        assert_eq!(
            without_limit("MATCH (s) RETURN s LIMIT 3").as_deref(),
            Some("MATCH (s) RETURN s ")
        );
        assert_eq!(
            without_limit("MATCH (s) RETURN s ORDER BY s.x LIMIT 3").as_deref(),
            Some("MATCH (s) RETURN s ORDER BY s.x ")
        );
        assert_eq!(without_limit("MATCH (s) RETURN s"), None);
        assert_eq!(
            without_limit("MATCH (s) WITH s LIMIT 3 RETURN s.name"),
            None
        );
    }

    #[test]
    fn the_order_key_is_read_as_its_column_is_named() {
        assert_eq!(
            order_key("MATCH (p) RETURN p.name, count(*) AS n\nORDER BY n DESC\nLIMIT 5")
                .as_deref(),
            Some("n")
        );
        assert_eq!(
            order_key(
                "MATCH (o:Order) RETURN o.orderID, o.freight ORDER BY o.freight DESC, o.orderID"
            )
            .as_deref(),
            Some("o.freight")
        );
        assert_eq!(
            order_key("MATCH (o) RETURN o ORDER BY o.x").as_deref(),
            Some("o.x")
        );
        assert_eq!(order_key("MATCH (o) RETURN o"), None);
    }
}
