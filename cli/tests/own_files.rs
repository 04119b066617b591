//! A user's own files through the real binary: what goes wrong on day one is said once,
//! clearly, with what to do (a questions file given as the KG, a file of no known
//! format, a Latin-1 file, a mapping with several mistakes or given for triples), and
//! the entry points take the same options (`serve --mapping`).

#[path = "serve_support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};

use support::*;

fn write(dir: &Path, name: &str, body: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, body).expect("write a test file");
    path
}

fn ask_kg(kg: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut command = kgmesh();
    command
        .env("KGMESH__EMBEDDER__KIND", "none")
        .args(["ask", "who directed Heat", "--kg"])
        .arg(kg)
        .args(extra);
    run(command)
}

#[test]
fn a_questions_file_given_as_the_kg_is_refused_as_such() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rows: String = (1..=30)
        .map(|i| format!("{i}\twhat did person {i} direct\tFilm {i}\n"))
        .collect();
    let questions = write(dir.path(), "questions.tsv", rows.as_bytes());
    let (code, stdout, stderr) = ask_kg(&questions, &[]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stderr.contains("looks like a table of records"), "{stderr}");
    assert!(stderr.contains("30 different relations"), "{stderr}");
}

#[test]
fn a_file_of_no_known_format_says_what_a_kg_looks_like() {
    let dir = tempfile::tempdir().expect("tempdir");
    let notes = write(
        dir.path(),
        "questions.txt",
        b"who directed Heat\nwhat is Heat\n",
    );
    let (code, _, stderr) = ask_kg(&notes, &[]);
    assert_eq!(code, 1);
    assert!(!stderr.contains("invalid query"), "{stderr}");
    assert!(
        stderr.contains("subject<TAB>relation<TAB>object") && stderr.contains("names no KG format"),
        "{stderr}"
    );
}

#[test]
fn a_latin1_kg_is_explained_once_with_the_conversion() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut bytes = Vec::new();
    for i in 0..150 {
        bytes.extend_from_slice(format!("Caf{i}").as_bytes());
        bytes.extend_from_slice(b"\xe9\tin_language\tFran\xe7ais\n");
    }
    let kg = write(dir.path(), "films.tsv", &bytes);
    let (code, _, stderr) = ask_kg(&kg, &[]);
    assert_eq!(code, 1);
    assert_eq!(
        stderr.matches("not valid UTF-8").count(),
        2,
        "once as the bad line, once in the refusal:\n{stderr}"
    );
    assert!(
        stderr.contains("iconv -f windows-1252 -t utf-8"),
        "{stderr}"
    );
    assert!(
        stderr.contains("150 lines in all were not UTF-8"),
        "{stderr}"
    );
}

#[test]
fn every_mistake_of_a_mapping_is_reported_in_one_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "people.csv",
        b"id,first,last\n1,Ada,Lovelace\n2,Alan,Turing\n",
    );
    write(dir.path(), "knows.csv", b"a,b\n1,2\n");
    let mapping = write(
        dir.path(),
        "mapping.toml",
        br#"
[[nodes]]
label = "Person"
file = "people.csv"
key = "idd"
name = "{first} {lst}"
[[relationships]]
type = "KNOWS"
file = "know.csv"
from = { label = "Person", column = "a" }
to = { label = "Person", column = "b" }
"#,
    );
    let (code, _, stderr) = kgmesh_run(&[
        "load".to_owned(),
        "--kg".to_owned(),
        dir.path().display().to_string(),
        "--mapping".to_owned(),
        mapping.display().to_string(),
        "--into".to_owned(),
        format!("embedded:{}", dir.path().join("out.kgs").display()),
    ]);
    assert_ne!(code, 0);
    assert!(stderr.contains("3 problems"), "{stderr}");
    for hint in [
        "did you mean `id`?",
        "did you mean `last`?",
        "did you mean `knows.csv`?",
    ] {
        assert!(stderr.contains(hint), "{hint} missing:\n{stderr}");
    }
}

#[test]
fn a_mapping_with_a_file_of_triples_is_an_error_not_ignored() {
    let mapping = repo_root().join("stores/examples/northwind.toml");
    let (code, _, stderr) = ask_kg(&sample_kg(), &["--mapping", &mapping.display().to_string()]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("not a folder of CSV files") && stderr.contains("Drop --mapping"),
        "{stderr}"
    );
}

#[test]
fn serve_takes_the_mapping_of_a_property_graph() {
    let csv = kgmesh_testkit::data::northwind_dir().join("csv");
    let mapping = repo_root().join("stores/examples/northwind.toml");
    let mut command = kgmesh();
    command
        .env("KGMESH__EMBEDDER__KIND", "none")
        .args(["serve", "--embedded", "--listen", "127.0.0.1:0", "--kg"])
        .arg(&csv)
        .arg("--mapping")
        .arg(&mapping);
    let mut server = Process::spawn("kgmesh serve --mapping", command);
    let address = server.listening_address();
    let (status, body) = http(address, "GET", "/v1/schema", None);
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("Supplier") && body.contains("SUPPLIES"),
        "{body}"
    );

    // On NATS the agents hold the graph: graph options on serve are refused, not ignored.
    let mut command = kgmesh();
    command
        .args(["serve", "--nats", "nats://127.0.0.1:1", "--mapping"])
        .arg(&mapping);
    let (code, _, stderr) = run(command);
    assert_ne!(code, 0);
    assert!(stderr.contains("--mapping is for --embedded"), "{stderr}");
}
