//! What the command line says to a new user: unquoted questions, option errors in the
//! option's own terms, the list of roles.

#[path = "serve_support/mod.rs"]
mod support;

use support::*;

#[test]
fn an_unquoted_question_is_one_question() {
    let (code, stdout, stderr) = kgmesh_run(&["ask", "who", "directed", "Heat"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.starts_with("Q: who directed Heat\n"), "{stdout}");
    assert!(stdout.contains("Michael Mann"), "{stdout}");
}

#[test]
fn a_bad_option_is_named_as_the_user_wrote_it() {
    let (code, _, stderr) = kgmesh_run(&["ask", "who directed Heat", "--rounds", "0"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--rounds"), "{stderr}");
    assert!(!stderr.contains("options.max_rounds"), "{stderr}");
}

#[test]
fn agent_role_help_lists_the_roles_a_deployment_runs() {
    let (code, stdout, stderr) = kgmesh_run(&["agent", "--role", "help"]);
    assert_eq!(code, 0, "{stderr}");
    for role in ["kg-linker", "summarizer", "path-follower", "query-executor"] {
        assert!(stdout.contains(role), "{role} missing: {stdout}");
    }
    assert!(
        !stdout.contains("echo"),
        "the smoke-test role is internal: {stdout}"
    );
}

#[test]
fn ask_reads_a_plan_cache_file_and_says_when_a_plan_was_replayed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cache = dir.path().join("plans.jsonl");
    let cache = cache.to_str().expect("utf-8");
    let questions = repo_root().join("examples/movies/questions.tsv");
    let mut warm = kgmesh();
    warm.args([
        "cache",
        "warm",
        "--import",
        questions.to_str().expect("utf-8"),
    ])
    .args(["--cache-file", cache, "--no-progress"])
    .args(["--kg", sample_kg().to_str().expect("utf-8")]);
    let (code, _, stderr) = run(warm);
    assert_eq!(code, 0, "{stderr}");
    let ask = |extra: &[&str]| {
        let mut command = kgmesh();
        command.args(["ask", "who directed Collateral"]).args(extra);
        let (code, stdout, stderr) = run(command);
        assert_eq!(code, 0, "{stderr}");
        stdout
    };
    let with_cache = ask(&["--cache-file", cache]);
    assert!(
        with_cache
            .contains("plan cache: answered by replaying the verified plan of the past question"),
        "{with_cache}"
    );
    let without = ask(&[]);
    assert!(!without.contains("by replaying"), "{without}");
}

#[test]
fn evidence_shows_cited_lines_first_once_each_and_notes_only_when_asked() {
    let (code, stdout, stderr) = kgmesh_run(&["ask", "who directed Heat"]);
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    let header = lines
        .iter()
        .position(|l| l.starts_with("Evidence ("))
        .expect("an evidence section");
    // The first evidence line is one the answer cites, printed once for all the
    // retrievers that found it.
    let answer_line = lines
        .iter()
        .find(|l| l.trim_start().starts_with("1. Michael Mann"))
        .expect("the answer line");
    let first_cited = answer_line
        .split_whitespace()
        .find(|w| w.starts_with('['))
        .expect("a citation");
    assert!(
        lines[header + 1].trim_start().starts_with(first_cited),
        "{stdout}"
    );
    let evidence: Vec<&str> = lines[header + 1..]
        .iter()
        .take_while(|l| l.starts_with("  ["))
        .map(|l| l.split_once("] ").map_or(*l, |(_, rest)| rest))
        .collect();
    let mut texts: Vec<&str> = evidence
        .iter()
        .map(|l| l.rsplit_once("  (").map_or(*l, |(text, _)| text))
        .collect();
    let shown = texts.len();
    texts.sort();
    texts.dedup();
    assert_eq!(texts.len(), shown, "a line is printed once: {stdout}");
    assert!(!stdout.contains("note: "), "{stdout}");

    let (code, stdout, _) = kgmesh_run(&["ask", "who directed Heat", "--verbose"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("note: "), "{stdout}");
}

#[test]
fn logs_written_to_a_pipe_or_file_carry_no_colour_codes() {
    let mut command = kgmesh();
    command
        .env("RUST_LOG", "info")
        .args(["ask", "who directed Heat"]);
    let (code, _, stderr) = run(command);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("INFO"), "info logs expected: {stderr}");
    assert!(
        !stderr.contains('\u{1b}'),
        "ANSI escapes in a piped log: {stderr:?}"
    );
}

#[test]
fn one_question_is_counted_as_one_question() {
    let dir = tempfile::tempdir().expect("temp dir");
    let questions = dir.path().join("one.txt");
    std::fs::write(&questions, "who directed [Heat]\tMichael Mann\n").expect("questions");
    let mut command = kgmesh();
    command
        .args(["eval", "--dataset", "metaqa", "--no-progress"])
        .args(["--kg", sample_kg().to_str().expect("utf-8")])
        .args(["--questions", questions.to_str().expect("utf-8")])
        .args(["--out", dir.path().join("run").to_str().expect("utf-8")]);
    let (code, _, stderr) = run(command);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("1 of 1 question,"), "{stderr}");
    assert!(!stderr.contains("1 questions"), "{stderr}");
}

#[test]
fn how_many_answers_with_a_count() {
    let (code, stdout, stderr) = kgmesh_run(&[
        "ask",
        "how many films did Michael Mann direct",
        "--kg",
        sample_kg().to_str().expect("utf-8 path"),
    ]);
    assert_eq!(code, 0, "{stderr}");
    // The bundled KG has Heat, Collateral and The Insider directed by Michael Mann.
    assert!(stdout.contains("\n  1. 3  ["), "{stdout}");
    for film in ["Heat", "Collateral", "The Insider"] {
        assert!(stdout.contains(film), "{film} missing: {stdout}");
    }
    assert!(stdout.contains("3 counted in the graph"), "{stdout}");
}

#[test]
fn evidence_all_prints_every_distinct_line() {
    let (code, stdout, stderr) = kgmesh_run(&["ask", "who directed Heat"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains(" more (--evidence all"), "{stdout}");
    let (code, stdout, stderr) = kgmesh_run(&["ask", "who directed Heat", "--evidence", "all"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stdout.contains(" more ("), "{stdout}");
    // "Evidence (N lines, D distinct; C cited):" then D lines.
    let header = stdout
        .lines()
        .find(|l| l.starts_with("Evidence ("))
        .expect("an evidence section");
    let distinct: usize = header
        .split(", ")
        .nth(1)
        .and_then(|part| part.split(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("a distinct count");
    let printed = stdout.lines().filter(|l| l.starts_with("  [")).count();
    assert_eq!(printed, distinct, "{stdout}");
    let (code, _, stderr) = kgmesh_run(&["ask", "who directed Heat", "--evidence", "lots"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("neither a number of lines nor `all`"),
        "{stderr}"
    );
}
