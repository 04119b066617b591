//! `kgmesh index --text` end to end: bad files reported by path while the good ones are
//! indexed, later runs adding to the index, a damaged index refused and left as it is,
//! and the text retriever's cited passages in `kgmesh ask` and `kgmesh eval`.

mod serve_support;

use std::path::Path;

use serve_support::*;

/// Lexical search only, so that the test does not depend on the embedding model.
fn lexical(mut command: std::process::Command) -> std::process::Command {
    command.env("KGMESH__EMBEDDER__KIND", "none");
    command
}

fn index(args: &[&str]) -> (i32, String, String) {
    let mut command = lexical(kgmesh());
    command.arg("index").args(args);
    run(command)
}

fn write(dir: &Path, name: &str, body: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, body).expect("write a test file");
    path.display().to_string()
}

const NOTES: &str = "The Harbour Light premiere was held in Porto in 1987. Mara Voss \
directed it after years of work on documentaries.\n\nSalt Road, her second film, was shot \
near Bergen and scored by Ivo Brandt.\n";

/// `kgmesh eval` of a JSONL question file against a text index alone, keyword channel.
fn jsonl_eval(index: &Path, questions: &str) -> std::process::Command {
    let mut eval = lexical(kgmesh());
    eval.args([
        "eval",
        "--dataset",
        "jsonl",
        "--no-progress",
        "--channels",
        "keyword",
    ])
    .arg("--text-index")
    .arg(index)
    .arg("--questions")
    .arg(questions);
    eval
}

/// [`NOTES`] written to a folder (the first) and indexed into another (the second).
fn indexed_notes() -> (tempfile::TempDir, tempfile::TempDir) {
    let docs = tempfile::tempdir().expect("tempdir");
    let out = tempfile::tempdir().expect("tempdir");
    let notes = write(docs.path(), "notes.md", NOTES.as_bytes());
    let into = format!("embedded:{}", out.path().display());
    let (code, stdout, stderr) = index(&["--text", &notes, "--into", &into]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    (docs, out)
}

#[test]
fn bad_files_are_reported_by_path_and_the_index_grows_without_losing_anything() {
    let docs = tempfile::tempdir().expect("tempdir");
    let out = tempfile::tempdir().expect("tempdir");
    let d = docs.path();
    let good = write(d, "notes.md", NOTES.as_bytes());
    let empty = write(d, "empty.txt", b"");
    let binary = write(d, "photo.jpg", b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01");
    let latin1 = write(d, "latin1.txt", b"Fran\xe7ois Truffaut tourne en 1959.");
    // One line of 1.2 MB (no line break, no sentence end): over --max-file-mb 1.
    let long_line = write(d, "one-line.txt", "lighthouse ".repeat(110_000).as_bytes());
    let into = format!("embedded:{}", out.path().display());

    let (code, stdout, stderr) = index(&[
        "--text",
        &d.display().to_string(),
        "--into",
        &into,
        "--max-file-mb",
        "1",
    ]);
    assert_eq!(code, 0, "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(
        stdout.contains("files      1 indexed, 0 replaced, 0 unchanged, 4 skipped"),
        "{stdout}"
    );
    for (path, why) in [
        (&empty, "empty file"),
        (&binary, "binary file"),
        (&latin1, "not UTF-8 text (invalid byte at offset 4)"),
        (&long_line, "1.2 MB, larger than the 1.0 MB"),
    ] {
        assert!(
            stdout.contains(&format!("  {path}: skipped: {why}")),
            "{path} should be reported as `{why}`:\n{stdout}"
        );
    }
    assert!(
        stdout.contains("skeleton   skipped: no model configured"),
        "{stdout}"
    );
    assert!(
        stdout.contains("vectors    none (lexical search only)"),
        "{stdout}"
    );

    // The same files again change nothing; a new one is added.
    let more = write(
        d,
        "more.md",
        b"Glass Orchard (2010) was directed by Tomas Weil.\n",
    );
    let (code, stdout, _) = index(&["--text", &good, &more, "--into", &into]);
    assert_eq!(code, 0, "{stdout}");
    assert!(
        stdout.contains("files      1 indexed, 0 replaced, 1 unchanged, 0 skipped"),
        "{stdout}"
    );
    assert!(stdout.contains("text       2 files"), "{stdout}");

    // Other chunking is refused rather than mixed in.
    let (code, _, stderr) = index(&["--text", &more, "--into", &into, "--chunk-tokens", "300"]);
    assert_ne!(code, 0);
    assert!(stderr.contains("--chunk-tokens 300 differs"), "{stderr}");

    // A damaged index is refused and left as it is.
    let file = out.path().join("text.kgt");
    let mut bytes = std::fs::read(&file).expect("the index file");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x55;
    std::fs::write(&file, &bytes).expect("damage the index");
    let (code, _, stderr) = index(&["--text", &more, "--into", &into]);
    assert_ne!(code, 0);
    assert!(
        stderr.contains("checksum mismatch") && stderr.contains("--rebuild"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(&file).expect("the index file"),
        bytes,
        "nothing was overwritten"
    );
}

#[test]
fn ask_and_eval_cite_passages_of_the_indexed_documents() {
    let (docs, out) = indexed_notes();
    let notes = docs.path().join("notes.md").display().to_string();

    // The graph knows Heat; the documents know Salt Road. Both retrievers answer.
    let mut ask = lexical(kgmesh());
    ask.env("KGMESH__TEXT__INDEX", out.path())
        .args(["ask", "--kg"])
        .arg(sample_kg())
        .args(["--json", "where was Salt Road shot"]);
    let (code, stdout, stderr) = run(ask);
    assert!(code == 0 || code == NO_ANSWER_EXIT, "{stdout}\n{stderr}");
    let reply: serde_json::Value = serde_json::from_str(&stdout).expect("JSON reply");
    // Each passage reads `Passage (FILE:OFFSET): TEXT`.
    let lines: Vec<&str> = reply["evidence"]
        .as_array()
        .expect("evidence")
        .iter()
        .filter(|e| e["source"] == "text-retriever")
        .filter_map(|e| e["text"].as_str())
        .collect();
    let bergen = lines
        .iter()
        .find(|line| line.contains("Bergen"))
        .unwrap_or_else(|| panic!("no passage names Bergen: {lines:?}"));
    let cited = bergen
        .strip_prefix(&format!("Passage ({notes}:"))
        .unwrap_or_else(|| panic!("{bergen} does not cite {notes}"));
    let (offset, text) = cited.split_once("): ").expect("offset and text");
    let offset: usize = offset.parse().expect("a byte offset");
    assert!(NOTES[offset..].starts_with(text), "{offset}: {text}");
    // Without a model, the summarizer reads the passage the graph has no answer for.
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert_eq!(reply["answers"][0]["text"], "Bergen", "{stdout}");

    // Coverage from the documents alone.
    let questions = write(docs.path(), "questions.txt", b"who directed [Harbour Light]\tMara Voss\nwhere was [Salt Road] shot\tBergen\nwho directed [Heat]\tMichael Mann\n");
    let mut eval = lexical(kgmesh());
    eval.args([
        "eval",
        "--dataset",
        "metaqa",
        "--questions",
        &questions,
        "--text-index",
    ])
    .arg(out.path())
    .args(["--channels", "keyword", "--no-progress"]);
    let (code, stdout, stderr) = run(eval);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("question vectors: none (lexical)"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "reader     no model: the summarizer's passage reader, statements by words only"
        ),
        "{stdout}"
    );
    let row = stdout
        .lines()
        .find(|l| l.starts_with("| keyword |"))
        .unwrap_or_else(|| panic!("no keyword row:\n{stdout}"));
    // Two of the three answers are in the documents, and the reader finds both ("Mara
    // Voss directed it", "was shot near Bergen"); the third has no answer.
    assert!(row.contains("| 3 | 66.7 % | 66.7 % | 1 |"), "{row}");
}

#[test]
fn a_missing_or_empty_input_is_an_error_and_writes_no_index() {
    let docs = tempfile::tempdir().expect("tempdir");
    let out = tempfile::tempdir().expect("tempdir");
    let into = format!("embedded:{}", out.path().display());
    let missing = docs.path().join("no-such-folder");
    let (code, stdout, stderr) =
        index(&["--text", &missing.display().to_string(), "--into", &into]);
    assert_ne!(code, 0, "{stdout}");
    assert!(
        stderr.contains("no-such-folder: no such file or folder; nothing was indexed"),
        "{stderr}"
    );
    assert!(!out.path().join("text.kgt").exists());
    // A folder with no files, and one whose only file holds no text.
    let empty = docs.path().join("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    let (code, _, stderr) = index(&["--text", &empty.display().to_string(), "--into", &into]);
    assert_ne!(code, 0);
    assert!(stderr.contains("no files to index"), "{stderr}");
    write(&empty, "blank.txt", b"");
    let (code, _, stderr) = index(&["--text", &empty.display().to_string(), "--into", &into]);
    assert_ne!(code, 0);
    assert!(
        stderr.contains("none of the 1 files holds text") && stderr.contains("empty file"),
        "{stderr}"
    );
    assert!(!out.path().join("text.kgt").exists());
    // The help says how to use an index.
    let (code, stdout, _) = kgmesh_run(&["index", "--help"]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("kgmesh ask") && stdout.contains("--text-index DIR"),
        "{stdout}"
    );
}

#[test]
fn text_index_on_ask_answers_from_the_documents_alone_without_a_graph() {
    let (docs, out) = indexed_notes();

    let ask = |question: &str| {
        let mut command = lexical(kgmesh());
        command
            .args(["ask", "--json", "--text-index"])
            .arg(out.path())
            .arg(question);
        let (code, stdout, stderr) = run(command);
        assert!(code == 0 || code == NO_ANSWER_EXIT, "{stdout}\n{stderr}");
        serde_json::from_str::<serde_json::Value>(&stdout).expect("JSON reply")
    };
    let reply = ask("where was Salt Road shot");
    assert_eq!(reply["answers"][0]["text"], "Bergen", "{reply}");
    assert_eq!(reply["graph"], "no graph (documents only)", "{reply}");
    // A passage answer carries the passage reader's confidence, a chance.
    let confidence = reply["confidence"].as_f64().expect("a confidence");
    assert!(confidence > 0.0 && confidence < 1.0, "{reply}");
    // The bundled movie graph is not consulted: Heat is in it, not in the documents.
    let reply = ask("who directed Heat");
    assert!(
        !reply.to_string().contains("Michael Mann"),
        "answered from the sample graph: {reply}"
    );

    // A folder that holds no index is refused, naming the command that builds one.
    let (code, _, stderr) = kgmesh_run(&[
        "ask",
        "--text-index",
        &docs.path().display().to_string(),
        "who directed Heat",
    ]);
    assert_ne!(code, 0);
    assert!(
        stderr.contains("holds no text index") && stderr.contains("kgmesh index --text"),
        "{stderr}"
    );
}

#[test]
fn with_minilm_a_name_whose_words_read_as_a_team_does_not_answer_who() {
    let docs = tempfile::tempdir().expect("tempdir");
    let out = tempfile::tempdir().expect("tempdir");
    let ticket = write(
        docs.path(),
        "ticket.md",
        b"Ticket 4471: the fan on your Vireo 2 rattles.\n\nBeatrix Nwosu, who supervises \
          Customer Care, has approved a one-off warranty exception for your Vireo 2. A \
          replacement ships on Monday.\n",
    );
    let into = format!("embedded:{}", out.path().display());
    let (code, stdout, stderr) = index(&["--text", &ticket, "--into", &into, "--no-vectors"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let answers = |embedder: &str| {
        let mut command = kgmesh();
        command
            .env("KGMESH__EMBEDDER__KIND", embedder)
            .env("KGMESH__EMBEDDER__MODEL_DIR", minilm_dir())
            .args(["ask", "--json", "--text-index"])
            .arg(out.path())
            .arg("who approved the warranty exception for the Vireo 2");
        let (code, stdout, stderr) = run(command);
        assert_eq!(code, 0, "{stdout}\n{stderr}");
        let reply: serde_json::Value = serde_json::from_str(&stdout).expect("JSON reply");
        let texts: Vec<String> = reply["answers"]
            .as_array()
            .expect("answers")
            .iter()
            .map(|a| a["text"].as_str().unwrap_or_default().to_owned())
            .collect();
        texts
    };
    // By their form alone two plain capitalized words are a person, and "Customer
    // Care" stands nearer the verb asked about (no determiner and noun around it say
    // it is a unit: "our Customer Care agents" would).
    assert_eq!(
        answers("none").first().map(String::as_str),
        Some("Customer Care")
    );
    // MiniLM reads its words as a team; the person who approved it answers alone.
    assert_eq!(answers("minilm"), ["Beatrix Nwosu"]);
}

#[test]
fn text_eval_scores_unanswerable_questions_and_answer_types() {
    let (docs, out) = indexed_notes();
    // Two questions the notes answer, one they cannot (nobody's birthplace is written).
    let questions = write(
        docs.path(),
        "questions.jsonl",
        concat!(
            r#"{"question": "where was Salt Road shot", "answers": ["Bergen"], "type": "single", "asks": "place"}"#,
            "\n",
            r#"{"question": "in what year was the Harbour Light premiere held", "answers": ["1987"], "type": "single", "asks": "year"}"#,
            "\n",
            r#"{"question": "where was Mara Voss born", "answers": [], "type": "unanswerable", "asks": "place"}"#,
            "\n",
        )
        .as_bytes(),
    );
    let results = docs.path().join("results");
    let mut eval = jsonl_eval(out.path(), &questions);
    eval.arg("--out").arg(&results);
    let (code, stdout, stderr) = run(eval);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    // --out keeps what was printed, and each question's answers beside its gold ones.
    let summary = std::fs::read_to_string(results.join("summary.md")).expect("summary.md");
    assert_eq!(summary, stdout);
    let answers: Vec<serde_json::Value> = std::fs::read_to_string(results.join("answers.jsonl"))
        .expect("answers.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(answers.len(), 3, "{answers:?}");
    assert_eq!(answers[0]["question"], "where was Salt Road shot");
    assert_eq!(answers[0]["gold"], serde_json::json!(["Bergen"]));
    assert_eq!(answers[0]["answers"][0], "Bergen", "{answers:?}");
    assert_eq!(answers[0]["right"], true);
    assert_eq!(answers[0]["covered"], true);
    assert_eq!(answers[2]["answers"], serde_json::json!([]), "{answers:?}");
    assert_eq!(answers[2]["right"], false);
    // Hits@1 over the two answerable questions, the unanswerable one declined.
    let row = stdout
        .lines()
        .find(|l| l.starts_with("| keyword | docs") || l.starts_with("| keyword |"))
        .unwrap_or_else(|| panic!("no score row:\n{stdout}"));
    assert!(row.contains("| 100.0 % |"), "{row}\n{stdout}");
    assert!(row.contains("| 1 of 1 |"), "{row}\n{stdout}");
    // Per question type and per type asked.
    assert!(
        stdout.contains("| unanswerable | 1 | – | 1 of 1 |"),
        "{stdout}"
    );
    let place = stdout
        .lines()
        .find(|l| l.starts_with("| place |"))
        .unwrap_or_else(|| panic!("no place row:\n{stdout}"));
    assert!(
        place.starts_with("| place | 2 | 100 % (1/1) | 100 % (2/2) |"),
        "{place}"
    );
}

#[test]
fn span_examples_are_written_by_eval_and_trained_on_by_reader_passages() {
    let (docs, out) = indexed_notes();
    let questions = write(
        docs.path(),
        "questions.jsonl",
        concat!(
            r#"{"question": "where was Salt Road shot", "answers": ["Bergen"]}"#,
            "\n",
            r#"{"question": "who directed the Harbour Light", "answers": ["Mara Voss"]}"#,
            "\n",
            r#"{"question": "where was Mara Voss born", "answers": [], "type": "unanswerable"}"#,
            "\n",
        )
        .as_bytes(),
    );
    let examples = docs.path().join("spans.jsonl");
    let mut eval = jsonl_eval(out.path(), &questions);
    eval.arg("--span-examples").arg(&examples);
    let (code, stdout, stderr) = run(eval);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    // The bundled weights carry a confidence: eval measures it.
    assert!(
        stdout.contains("confidence of the answers that carry one")
            && stdout.contains("answers withheld below a confidence"),
        "{stdout}"
    );
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&examples)
        .expect("span examples written")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len(), 3);
    // The gold span is offered and marked right, and only it; the question the notes
    // cannot answer has no right span.
    let rows = |i: usize| lines[i]["rows"].as_array().expect("rows").clone();
    assert!(
        rows(0)
            .iter()
            .any(|r| r["text"] == "Bergen" && r["right"] == true),
        "{:?}",
        lines[0]
    );
    assert!(
        rows(0)
            .iter()
            .all(|r| (r["text"] == "Bergen") == (r["right"] == true)),
        "{:?}",
        lines[0]
    );
    assert_eq!(lines[0]["gated"], true);
    assert_eq!(lines[2]["answerable"], false);
    assert!(
        rows(2).iter().all(|r| r["right"] == false),
        "{:?}",
        lines[2]
    );
    // Trained on them (twice: the same weights), then refused for an unknown corpus.
    let weights = docs.path().join("weights.json");
    let train = |out: &Path| {
        let mut command = kgmesh();
        command
            .args(["reader", "passages", "--examples"])
            .arg(&examples)
            .arg("--out")
            .arg(out);
        run(command)
    };
    let (code, stdout, stderr) = train(&weights);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("span scorer:"), "{stdout}");
    let again = docs.path().join("again.json");
    assert_eq!(train(&again).0, 0);
    assert_eq!(
        std::fs::read(&weights).expect("weights"),
        std::fs::read(&again).expect("weights"),
        "training is deterministic"
    );
    let mut command = kgmesh();
    command
        .args(["reader", "passages", "--exclude", "nowhere", "--examples"])
        .arg(&examples);
    let (code, _, stderr) = run(command);
    assert_ne!(code, 0);
    assert!(stderr.contains("no such corpus"), "{stderr}");
    // The weights are read back by eval through KGMESH_PASSAGE_WEIGHTS; trained
    // weights carry no confidence until one is fitted for them.
    let mut eval = jsonl_eval(out.path(), &questions);
    eval.env("KGMESH_PASSAGE_WEIGHTS", &weights);
    let (code, stdout, stderr) = run(eval);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(!stdout.contains("confidence of the answers"), "{stdout}");
    // --calibrate keeps the weights and fits their confidence.
    let calibrated = docs.path().join("calibrated.json");
    let mut command = kgmesh();
    command
        .args(["reader", "passages", "--calibrate", "--weights"])
        .arg(&weights)
        .arg("--examples")
        .arg(&examples)
        .arg("--out")
        .arg(&calibrated);
    let (code, stdout, stderr) = run(command);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("passage confidence: 6 signals"), "{stdout}");
    assert!(
        stdout.contains("| min confidence | Hits@1 (answers kept) | unanswerable declined |"),
        "{stdout}"
    );
    let read = |path: &Path| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(path).expect("weights")).expect("JSON weights")
    };
    let (trained, fitted) = (read(&weights), read(&calibrated));
    assert_eq!(
        trained["weights"], fitted["weights"],
        "the weights are kept"
    );
    assert_eq!(
        fitted["confidence"]["signals"].as_array().map(Vec::len),
        Some(6),
        "{fitted}"
    );
    let mut eval = jsonl_eval(out.path(), &questions);
    eval.env("KGMESH_PASSAGE_WEIGHTS", &calibrated);
    let (code, stdout, stderr) = run(eval);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("confidence of the answers"), "{stdout}");
    // Which weights to calibrate is a --calibrate option only.
    let mut command = kgmesh();
    command
        .args(["reader", "passages", "--weights"])
        .arg(&weights)
        .arg("--examples")
        .arg(&examples);
    assert_ne!(run(command).0, 0);
    // Weights that cannot be used stop the command.
    let broken = write(docs.path(), "broken.json", b"{}");
    let mut eval = jsonl_eval(out.path(), &questions);
    eval.env("KGMESH_PASSAGE_WEIGHTS", &broken);
    let (code, _, stderr) = run(eval);
    assert_ne!(code, 0);
    assert!(stderr.contains("passage weights"), "{stderr}");
}
