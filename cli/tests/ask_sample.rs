//! `kgmesh ask` on the bundled sample KG answers its sample questions (embedded mode,
//! no language model).

#[path = "serve_support/mod.rs"]
mod support;

use support::*;

fn ask_json(question: &str, extra: &[&str]) -> serde_json::Value {
    let mut command = kgmesh();
    command.arg("ask").arg(question).arg("--json").args(extra);
    run_json(command)
}

#[test]
fn the_sample_questions_are_answered_with_evidence() {
    let kg = sample_kg();
    let questions = read_questions(
        &repo_root().join("examples/movies/questions.tsv"),
        usize::MAX,
    );
    assert!(questions.len() >= 5);
    let mut wrong = Vec::new();
    for (question, gold) in &questions {
        let reply = ask_json(question, &["--kg", kg.to_str().expect("utf-8 path")]);
        let got = answer_texts(&reply);
        match got.first() {
            Some(top) if gold.iter().any(|g| g.eq_ignore_ascii_case(top)) => {
                // The top answer cites evidence that exists.
                let cited = reply["answers"][0]["evidence"]
                    .as_array()
                    .expect("evidence");
                let lines = reply["evidence"].as_array().expect("evidence lines").len();
                assert!(!cited.is_empty(), "{question}: no evidence cited");
                for index in cited {
                    assert!((index.as_u64().expect("index") as usize) < lines);
                }
                assert_eq!(reply["cost"]["llm_calls"], 0, "no model is configured");
            }
            _ => wrong.push(format!("{question}: got {got:?}, expected one of {gold:?}")),
        }
    }
    // The LLM-free pipeline answers most, not all, of them (see the report of misses).
    let right = questions.len() - wrong.len();
    eprintln!(
        "{right} of {} sample questions answered correctly",
        questions.len()
    );
    assert!(
        right * 4 >= questions.len() * 3,
        "only {right} of {} right; wrong answers:\n{}",
        questions.len(),
        wrong.join("\n")
    );
}

#[test]
fn a_possessive_names_the_entity_and_an_unknown_name_is_not_guessed() {
    let kg = sample_kg();
    let kg = kg.to_str().expect("utf-8 path");
    for question in ["what is Heat's genre", "what is Heat’s genre"] {
        let reply = ask_json(question, &["--kg", kg]);
        let got = answer_texts(&reply);
        assert!(!got.is_empty(), "{question}: {reply}");
        assert!(
            got.iter().all(|g| g == "Crime" || g == "Thriller"),
            "{question}: {got:?}"
        );
    }
    // Nobody in the sample graph is called Bob Tanaka: no film or genre is given for him.
    let reply = ask_json("who is Bob Tanaka's manager", &["--kg", kg]);
    assert!(answer_texts(&reply).is_empty(), "{reply}");
}

#[test]
fn a_name_written_without_its_accents_names_the_entity() {
    let dir = tempfile::tempdir().expect("tempdir");
    let kg = dir.path().join("films.tsv");
    std::fs::write(
        &kg,
        "Amélie\tdirected_by\tJean-Pierre Jeunet\nAmélie\trelease_year\t2001\n\
         Delicatessen\tdirected_by\tJean-Pierre Jeunet\n",
    )
    .expect("write");
    let kg = kg.to_str().expect("utf-8 path");
    for question in ["who directed Amelie", "who directed Amélie"] {
        let reply = ask_json(question, &["--kg", kg]);
        assert_eq!(
            answer_texts(&reply),
            ["Jean-Pierre Jeunet"],
            "{question}: {reply}"
        );
    }
}

#[test]
fn without_kg_the_bundled_sample_is_used_and_text_output_shows_answers_and_costs() {
    let (code, stdout, stderr) = kgmesh_run(&["ask", "who directed Heat"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("Michael Mann"), "{stdout}");
    assert!(stdout.contains("LLM calls 0"), "{stdout}");
    assert!(stdout.contains("Evidence"), "{stdout}");
    // Which graph answered is said.
    assert!(
        stdout.contains("graph: the bundled sample movie KG"),
        "{stdout}"
    );
}

#[test]
fn a_missing_kg_file_is_a_clear_error() {
    let (code, _stdout, stderr) =
        kgmesh_run(&["ask", "who directed Heat", "--kg", "/nonexistent/kg.tsv"]);
    assert_ne!(code, 0);
    assert!(stderr.contains("/nonexistent/kg.tsv"), "{stderr}");
}

#[test]
fn a_file_that_is_no_kg_is_refused_and_a_refused_load_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A questions file given where a KG belongs: no line is a triple.
    let questions = dir.path().join("dev.txt");
    std::fs::write(
        &questions,
        "who directed [Heat]\tMichael Mann\nwhat genre is [Heat]\tCrime\n",
    )
    .expect("write");
    let questions = questions.to_str().expect("utf-8 path");
    let (code, _stdout, stderr) = kgmesh_run(&["ask", "who directed Heat", "--kg", questions]);
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("no triple could be read"), "{stderr}");
    // `load` refuses an empty file and leaves no snapshot, temporary or not.
    let empty = dir.path().join("empty.tsv");
    std::fs::write(&empty, "").expect("write");
    let snapshot = dir.path().join("graph.kgs");
    let (code, _stdout, stderr) = kgmesh_run(&[
        "load",
        "--kg",
        empty.to_str().expect("utf-8 path"),
        "--into",
        &format!("embedded:{}", snapshot.display()),
        "--quiet",
    ]);
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("it is empty"), "{stderr}");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .expect("read dir")
        .map(|entry| entry.expect("entry").file_name())
        .collect();
    assert_eq!(left.len(), 2, "only the two inputs: {left:?}");
}

#[test]
fn a_header_row_is_no_triple_and_load_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let org = dir.path().join("org.csv");
    std::fs::write(
        &org,
        "employee,reports to,manager\nBob,reports_to,Alice\nCarol,reports_to,Alice\n\
         Alice,works_in,Berlin\nBob,works_in,Berlin\nCarol,works_in,Paris\n",
    )
    .expect("write");
    let org = org.to_str().expect("utf-8 path");
    let load = |header: &str| {
        let snapshot = dir.path().join(format!("org-{header}.kgs"));
        kgmesh_run(&[
            "load",
            "--kg",
            org,
            "--into",
            &format!("embedded:{}", snapshot.display()),
            "--header",
            header,
            "--quiet",
        ])
    };
    let (code, stdout, stderr) = load("auto");
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("edges      5"), "{stdout}");
    assert!(
        stdout.contains("first row (employee, reports to, manager) was read as a header"),
        "{stdout}"
    );
    let (code, stdout, stderr) = load("no");
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("edges      6"), "{stdout}");
    assert!(!stdout.contains("read as a header"), "{stdout}");
    // `ask` answers from the triples alone.
    let (code, stdout, stderr) = kgmesh_run(&["ask", "who does Bob report to", "--kg", org]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("Alice"), "{stdout}");
    assert!(!stdout.contains("manager"), "{stdout}");
}

#[test]
fn i_dont_know_has_its_own_exit_status() {
    let mut command = kgmesh();
    command.args(["ask", "what is the meaning of life", "--kg"]);
    command.arg(sample_kg());
    let (code, stdout, stderr) = run(command);
    assert_eq!(code, NO_ANSWER_EXIT, "{stdout}{stderr}");
    assert!(stdout.contains("I don't know"), "{stdout}");
    assert!(
        !stderr.contains("kgmesh:"),
        "not reported as an error: {stderr}"
    );
}

#[test]
fn an_ntriples_kg_is_answered_by_its_labels_not_its_iris() {
    let dir = tempfile::tempdir().expect("tempdir");
    let kg = dir.path().join("org.nt");
    std::fs::write(
        &kg,
        concat!(
            "<http://ex.org/e1> <http://ex.org/reportsTo> <http://ex.org/e2> .\n",
            "<http://ex.org/e1> <http://www.w3.org/2000/01/rdf-schema#label> \"Bob Tanaka\"@en .\n",
            "<http://ex.org/e2> <http://xmlns.com/foaf/0.1/name> \"Ada Quill\" .\n",
        ),
    )
    .expect("kg written");
    let reply = ask_json(
        "who does Bob Tanaka report to",
        &["--kg", kg.to_str().expect("utf-8 path")],
    );
    assert_eq!(answer_texts(&reply), ["Ada Quill"], "{reply}");
}

#[test]
fn a_csv_directory_needs_its_mapping_and_answers_with_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let csv = dir.path().join("shop");
    std::fs::create_dir(&csv).expect("dir");
    std::fs::write(
        csv.join("products.csv"),
        "productID,productName,categoryID,unitPrice\n1,Chai,10,18.0\n2,Chang,10,19.0\n3,Tofu,20,23.25\n",
    )
    .expect("products");
    std::fs::write(
        csv.join("categories.csv"),
        "categoryID,categoryName\n10,Beverages\n20,Produce\n",
    )
    .expect("categories");
    let mapping = dir.path().join("shop.toml");
    std::fs::write(
        &mapping,
        concat!(
            "[[nodes]]\nlabel = \"Product\"\nfile = \"products.csv\"\nkey = \"productID\"\n",
            "name = \"productName\"\ntypes = { unitPrice = \"float\" }\n",
            "[[nodes]]\nlabel = \"Category\"\nfile = \"categories.csv\"\nkey = \"categoryID\"\n",
            "name = \"categoryName\"\n",
            "[[relationships]]\ntype = \"PART_OF\"\nfile = \"products.csv\"\n",
            "from = { label = \"Product\", column = \"productID\" }\n",
            "to = { label = \"Category\", column = \"categoryID\" }\n",
        ),
    )
    .expect("mapping");
    let kg = csv.to_str().expect("utf-8");
    // Without the mapping: an error that says what is missing and how to give it.
    let (code, _, stderr) = kgmesh_run(&["ask", "which category is Chai part of", "--kg", kg]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("--mapping") && stderr.contains("property graph"),
        "{stderr}"
    );
    // With it: the relationships answer, and Cypher reaches the typed properties.
    let reply = ask_json(
        "which category is Chai part of",
        &["--kg", kg, "--mapping", mapping.to_str().expect("utf-8")],
    );
    assert_eq!(answer_texts(&reply), ["Beverages"], "{reply}");
    // A property the question names is an answer too, without a model.
    let reply = ask_json(
        "what is the unit price of Tofu",
        &["--kg", kg, "--mapping", mapping.to_str().expect("utf-8")],
    );
    assert_eq!(answer_texts(&reply), ["23.25"], "{reply}");
    let (code, stdout, stderr) = kgmesh_run(&[
        "cypher",
        "MATCH (p:Product {productName: 'Tofu'}) RETURN p.unitPrice AS price",
        "--kg",
        kg,
        "--mapping",
        mapping.to_str().expect("utf-8"),
        "--json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let rows: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(rows["rows"][0][0], 23.25, "{rows}");
}

#[test]
fn the_auto_embedder_uses_minilm_where_its_files_are_and_says_lexical_elsewhere() {
    let kg = sample_kg();
    let ask = |minilm_dir: &std::path::Path| {
        let mut command = kgmesh();
        command
            .args(["ask", "who directed Heat", "--kg"])
            .arg(&kg)
            .env("KGMESH_MINILM_DIR", minilm_dir);
        run(command)
    };
    let empty = tempfile::tempdir().expect("temp dir");
    let (code, stdout, stderr) = ask(empty.path());
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("Michael Mann"), "{stdout}");
    assert!(
        stdout.contains("embedder: none (lexical scoring)"),
        "no MiniLM files, lexical scoring said: {stdout}"
    );
    let minilm = minilm_dir();
    let (code, stdout, stderr) = ask(&minilm);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("Michael Mann"), "{stdout}");
    assert!(
        stdout.contains("embedder: all-MiniLM-L6-v2 (local MiniLM) from "),
        "MiniLM found and used: {stdout}"
    );
}

/// With MiniLM, what the paths found is read against the question: "what kind of
/// movie is Heat" names no relation by any single word, and "which football club does
/// Tom Hanks play for" has no relation in a film graph. Lexically, without the learned
/// reader, the first is answered with the director (the first of the tied paths by
/// name) and the second with a film; with MiniLM the genre, flagged low confidence, and
/// "I don't know" with the path it would have followed. (By words with the reader, the
/// default, its lexicon breaks the first tie: the genre too.)
#[test]
fn with_minilm_what_the_paths_found_is_read_against_the_question() {
    let minilm = minilm_dir();
    let kg = sample_kg();
    let ask_with = |question: &str, embedder: &str, reader: bool| {
        let mut command = kgmesh();
        command
            .args(["ask", question, "--kg"])
            .arg(&kg)
            .env("KGMESH_MINILM_DIR", &minilm)
            .env("KGMESH__EMBEDDER__KIND", embedder)
            .env("KGMESH__READER__CONFIDENCE", reader.to_string());
        run(command)
    };
    let ask = |question: &str, embedder: &str| ask_with(question, embedder, true);
    let kind = "what kind of movie is Heat";
    let (code, stdout, stderr) = ask_with(kind, "none", false);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("1. Michael Mann"),
        "lexically, without the reader, evidence order: {stdout}"
    );
    let (code, stdout, stderr) = ask(kind, "none");
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("1. Crime"),
        "lexically, the reader breaks the tie: {stdout}"
    );
    // "film" in "what sort of film is Heat" is Heat's class, not a word for the
    // relation asked (MiniLM puts "sort" and "film" nearest `directed by`).
    for question in [kind, "what sort of film is Heat"] {
        let (code, stdout, stderr) = ask(question, "auto");
        assert_eq!(code, 0, "{stderr}");
        assert!(
            stdout.contains("1. Crime"),
            "with MiniLM, the genre: {stdout}"
        );
        // No word of the question names `has_genre`: the answer says it is a guess by
        // meaning. One a word names is not flagged.
        assert!(
            stdout.contains(") (low confidence: check the evidence)")
                && stdout.contains(
                    "do not name every relation of the path these answers follow (has genre)"
                ),
            "{stdout}"
        );
    }
    let (code, stdout, stderr) = ask("who directed Heat", "auto");
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("1. Michael Mann"), "{stdout}");
    assert!(!stdout.contains("low confidence"), "{stdout}");

    let club = "which football club does Tom Hanks play for";
    let (code, stdout, stderr) = ask(club, "none");
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("1. "), "lexically, a film: {stdout}");
    let (code, stdout, stderr) = ask(club, "auto");
    assert_eq!(code, 3, "with MiniLM, I don't know: {stdout} {stderr}");
    assert!(
        stdout.contains(
            "I don't know: the path that best explains the question (starred actors \
             (inverse)) is far from its words by meaning"
        ),
        "{stdout}"
    );
    // Far from its words too, but asking for films, what the graph holds: answered,
    // flagged.
    let (code, stdout, stderr) = ask("which films are about los angeles", "auto");
    assert_eq!(code, 0, "{stdout} {stderr}");
    assert!(
        stdout.contains(") (low confidence: check the evidence)")
            && stdout.contains("1. Heat")
            && stdout.contains("what the question asks for (\"films\") reads near a relation"),
        "{stdout}"
    );
    // Turned off in the configuration, the path is followed again.
    let mut command = kgmesh();
    command
        .args(["ask", club, "--kg"])
        .arg(&kg)
        .env("KGMESH_MINILM_DIR", &minilm)
        .env("KGMESH__SUMMARIZER__ABSTAIN_FOUND_COSINE", "0");
    let (code, stdout, stderr) = run(command);
    assert_eq!(code, 0, "{stdout} {stderr}");
}

/// The roles' knobs come from the configuration: the summarizer cites as many lines as
/// `summarizer.max_citations` allows, and an out-of-range knob is refused.
#[test]
fn role_knobs_in_the_configuration_reach_the_roles() {
    // Each film is supported by two lines that read differently (the edge followed
    // from the film and from the actor); lines that read the same are cited once.
    let cited = |extra_env: Option<(&str, &str)>| -> usize {
        let mut command = kgmesh();
        command.args(["ask", "what movies did Tom Hanks act in", "--json"]);
        if let Some((key, value)) = extra_env {
            command.env(key, value);
        }
        let reply = run_json(command);
        reply["answers"][0]["evidence"]
            .as_array()
            .expect("cited lines")
            .len()
    };
    assert!(cited(None) >= 2, "the default cites every supporting line");
    assert_eq!(cited(Some(("KGMESH__SUMMARIZER__MAX_CITATIONS", "1"))), 1);
    let mut command = kgmesh();
    command
        .args(["ask", "who directed Heat"])
        .env("KGMESH__JUDGE__COMPLETE_SCORE", "2");
    let (status, _, stderr) = run(command);
    assert_ne!(status, 0);
    assert!(
        stderr.contains("judge.complete_score = 2 must be between 0 and 1"),
        "{stderr}"
    );
}

/// With MiniLM and re-ranking off (the default), the answer's confidence is read by
/// words alone: it asks MiniLM for no text beyond what answering does.
#[test]
fn with_minilm_the_confidence_embeds_nothing_more() {
    let minilm = minilm_dir();
    let kg = sample_kg();
    let ask = |confidence: &str| {
        let mut command = kgmesh();
        command
            .args(["ask", "--json", "who directed Heat", "--kg"])
            .arg(&kg)
            .env("KGMESH_MINILM_DIR", &minilm)
            .env("KGMESH__EMBEDDER__KIND", "auto")
            .env("KGMESH__READER__CONFIDENCE", confidence)
            .env("RUST_LOG", "kgmesh_models=debug");
        let (code, stdout, stderr) = run(command);
        assert_eq!(code, 0, "{stderr}");
        let reply: serde_json::Value = serde_json::from_str(&stdout).expect("a JSON reply");
        // Each call into MiniLM logs how many texts it embedded.
        let texts: usize = stderr
            .lines()
            .filter(|l| l.contains("minilm forward"))
            .filter_map(|l| {
                l.split("texts=")
                    .nth(1)?
                    .split_whitespace()
                    .next()?
                    .parse::<usize>()
                    .ok()
            })
            .sum();
        (reply, texts)
    };
    let (with, texts_with) = ask("true");
    let (without, texts_without) = ask("false");
    assert!(with["confidence"].is_number(), "{with}");
    assert!(without["confidence"].is_null(), "{without}");
    assert!(texts_without > 0, "MiniLM was used");
    assert_eq!(texts_with, texts_without);
}

/// With MiniLM, the word naming the answers' class ("which *city*") names what its
/// nearest relation points to, as "where" does: `located in` walked back from the city
/// reaches the libraries in it, not a city. And a relation the path walks there and back
/// again is one relation, however each hop walks it: "what religious *belief*" is
/// answered by the parent's religion, not by the others of that religion.
#[test]
fn with_minilm_the_answers_class_word_names_a_relation_only_walked_towards_its_object() {
    let minilm = minilm_dir();
    let dir = tempfile::tempdir().expect("tempdir");
    let family = dir.path().join("family.tsv");
    std::fs::write(
        &family,
        "Mihrimar\tparents\tSuleiman\nSuleiman\treligion\tIslam\nAurangzeb\treligion\tIslam\n\
         Mihrimar\tgender\tfemale\nSuleiman\tgender\tmale\n",
    )
    .expect("write the graph");
    let library = repo_root().join("tests/data/zoo/library/kg.tsv");
    for (kg, question, expected) in [
        (
            library.as_path(),
            "In which city is the publisher of The Last Compass based?",
            "Vessarin",
        ),
        (
            family.as_path(),
            "what religious belief does Mihrimar 's parents follow?",
            "Islam",
        ),
    ] {
        let mut command = kgmesh();
        command
            .args(["ask", question, "--json", "--kg"])
            .arg(kg)
            .env("KGMESH__EMBEDDER__MODEL_DIR", &minilm)
            .env("KGMESH__EMBEDDER__KIND", "minilm");
        let reply = run_json(command);
        assert_eq!(reply["answers"][0]["text"], expected, "{question}: {reply}");
    }
}
