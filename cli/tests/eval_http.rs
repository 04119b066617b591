//! `kgmesh eval` end to end against a scripted `POST /v1/ask` server: datasets on disk,
//! the real binary, the real HTTP client, the files it writes, `compare`, and Ctrl-C.

use std::{
    collections::HashMap,
    io::{Read, Write},
    net::{TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        Arc, Mutex,
    },
    thread,
    time::{Duration, Instant},
};

use kgmesh_schemas::{
    budget::Cost,
    messages::{
        ask::{AskReply, AskRequest, EvidenceLine, Timings},
        summarizer::Answer,
    },
};
use serde_json::Value;

const TEST_TIMEOUT: Duration = Duration::from_secs(60);

/// What the scripted server does with one question.
#[derive(Clone)]
enum Script {
    Reply {
        answers: Vec<&'static str>,
        evidence: Vec<&'static str>,
        llm_calls: u32,
    },
    Fail(u16),
    /// Answer after this long (for the interrupt test).
    Slow(Duration),
    /// HTTP 429 while the counter is above zero, then this answer.
    Busy(Arc<AtomicUsize>, &'static str),
}

fn reply(answers: &[&'static str], evidence: &[&'static str], llm_calls: u32) -> Script {
    Script::Reply {
        answers: answers.to_vec(),
        evidence: evidence.to_vec(),
        llm_calls,
    }
}

/// A minimal HTTP/1.1 server on a random port; one thread per connection.
struct ScriptedServer {
    url: String,
    address: std::net::SocketAddr,
    stop: Arc<AtomicBool>,
    received: Arc<Mutex<Vec<String>>>,
    answered: Arc<AtomicUsize>,
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so that it sees the flag and closes the listener.
        let _ = TcpStream::connect_timeout(&self.address, Duration::from_secs(1));
    }
}

impl ScriptedServer {
    fn start(scripts: HashMap<String, Script>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a random port");
        let address = listener.local_addr().expect("local addr");
        let url = format!("http://{address}");
        let stop = Arc::new(AtomicBool::new(false));
        let stop_in = Arc::clone(&stop);
        let received = Arc::new(Mutex::new(Vec::new()));
        let answered = Arc::new(AtomicUsize::new(0));
        let scripts = Arc::new(scripts);
        let (received_in, answered_in) = (Arc::clone(&received), Arc::clone(&answered));
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                if stop_in.load(Ordering::SeqCst) {
                    break;
                }
                let scripts = Arc::clone(&scripts);
                let received = Arc::clone(&received_in);
                let answered = Arc::clone(&answered_in);
                thread::spawn(move || serve(stream, &scripts, &received, &answered));
            }
        });
        Self {
            url,
            address,
            stop,
            received,
            answered,
        }
    }
}

fn serve(
    mut stream: TcpStream,
    scripts: &HashMap<String, Script>,
    received: &Mutex<Vec<String>>,
    answered: &AtomicUsize,
) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    loop {
        let Some((request_line, body)) = read_request(&mut stream) else {
            return;
        };
        let (status, json) = if request_line.starts_with("GET /v1/agents") {
            (
                200,
                r#"{"roles":[{"role":"scripted","replicas":1}]}"#.to_owned(),
            )
        } else if request_line.starts_with("POST /v1/ask") {
            let request: AskRequest = match serde_json::from_slice(&body) {
                Ok(request) => request,
                Err(error) => {
                    respond(&mut stream, 400, &format!(r#"{{"error":"{error}"}}"#));
                    continue;
                }
            };
            received.lock().unwrap().push(request.question.clone());
            let script = scripts
                .get(&request.question)
                .cloned()
                .unwrap_or(Script::Fail(404));
            let outcome = match script {
                Script::Reply {
                    answers,
                    evidence,
                    llm_calls,
                } => (200, ask_reply(&answers, &evidence, llm_calls)),
                Script::Fail(status) => (status, r#"{"error":"scripted failure"}"#.to_owned()),
                Script::Busy(left, answer) => {
                    let busy = left
                        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                        .is_ok();
                    if busy {
                        (429, r#"{"error":{"kind":"too_many_questions"}}"#.to_owned())
                    } else {
                        (200, ask_reply(&[answer], &[], 0))
                    }
                }
                Script::Slow(delay) => {
                    thread::sleep(delay);
                    (200, ask_reply(&["late"], &[], 0))
                }
            };
            answered.fetch_add(1, Ordering::SeqCst);
            outcome
        } else {
            (404, r#"{"error":"not found"}"#.to_owned())
        };
        if !respond(&mut stream, status, &json) {
            return;
        }
    }
}

fn ask_reply(answers: &[&str], evidence: &[&str], llm_calls: u32) -> String {
    let reply = AskReply {
        question_id: "q".into(),
        answers: answers
            .iter()
            .enumerate()
            .map(|(i, text)| Answer {
                text: (*text).to_owned(),
                entity: None,
                score: 1.0 / (i as f32 + 1.0),
                evidence: vec![],
            })
            .collect(),
        evidence: evidence
            .iter()
            .map(|text| EvidenceLine {
                source: "path-follower".into(),
                text: (*text).to_owned(),
                edges: vec![],
            })
            .collect(),
        explanation: String::new(),
        rounds: 1,
        cost: Cost {
            llm_calls,
            prompt_tokens: 100 * u64::from(llm_calls),
            completion_tokens: 10 * u64::from(llm_calls),
            bus_messages: 5,
            ..Cost::default()
        },
        timings: Timings {
            total_us: 1_500,
            stages: vec![],
        },
        partial: false,
        low_confidence: false,
        confidence: None,
        plan_chance: None,
        plan_followed: None,
        readings_agree: None,
        cache_hit: false,
        cache_use: None,
        cache_examples: 0,
        replay_reached: None,
        replay_cut: false,
        plan_replayed: false,
        replay_similarity: None,
        trace_id: None,
        topic_entities: vec![],
        calls: vec![],
        notes: vec![],
        degraded: vec![],
        graph: None,
    };
    serde_json::to_string(&reply).expect("encode reply")
}

fn read_request(stream: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let header_end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        let read = stream.read(&mut chunk).ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8_lossy(&buffer[..header_end]).into_owned();
    let content_length = head
        .lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse::<usize>().ok())
        .unwrap_or(0);
    while buffer.len() < header_end + content_length {
        let read = stream.read(&mut chunk).ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
    let request_line = head.lines().next().unwrap_or_default().to_owned();
    Some((
        request_line,
        buffer[header_end..header_end + content_length].to_vec(),
    ))
}

fn respond(stream: &mut TcpStream, status: u16, body: &str) -> bool {
    let response = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).is_ok()
}

/// The `kgmesh` binary, killed if the test ends first.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `kgmesh eval --dataset DATASET --questions Q --server URL --out OUT --no-progress
/// EXTRA…`: the arguments of a run against a scripted server.
fn http_eval<'a>(
    dataset: &'a str,
    questions: &'a str,
    server: &'a str,
    out: &'a str,
    extra: &[&'a str],
) -> Vec<&'a str> {
    let mut args = vec![
        "eval",
        "--dataset",
        dataset,
        "--questions",
        questions,
        "--server",
        server,
        "--out",
        out,
        "--no-progress",
    ];
    args.extend_from_slice(extra);
    args
}

fn kgmesh(args: &[&str], cwd: &Path) -> Running {
    let child = Command::new(env!("CARGO_BIN_EXE_kgmesh"))
        .args(args)
        .current_dir(cwd)
        .env_remove("KGMESH_CONFIG")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start kgmesh");
    Running(child)
}

/// Waits for the process with a deadline; its output.
fn finish(mut running: Running) -> Output {
    let deadline = Instant::now() + TEST_TIMEOUT;
    loop {
        match running.0.try_wait().expect("poll kgmesh") {
            Some(_) => break,
            None if Instant::now() > deadline => {
                panic!("kgmesh did not finish in {TEST_TIMEOUT:?}")
            }
            None => thread::sleep(Duration::from_millis(20)),
        }
    }
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    if let Some(mut out) = running.0.stdout.take() {
        out.read_to_end(&mut stdout).expect("read stdout");
    }
    if let Some(mut err) = running.0.stderr.take() {
        err.read_to_end(&mut stderr).expect("read stderr");
    }
    let status = running.0.wait().expect("exit status");
    Output {
        status,
        stdout,
        stderr,
    }
}

fn write(path: &Path, text: &str) -> PathBuf {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
    path.to_owned()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("report written")).expect("JSON")
}

fn approx(value: &Value, expected: f64) -> bool {
    value.as_f64().is_some_and(|v| (v - expected).abs() < 1e-9)
}

const METAQA: &str =
    "what movies did [Temuera Morrison] act in\tOnce Were Warriors|Tracker|River Queen
what does [Tom Cullen] act in\tWeekend
who directed [Heat]\tMichael Mann
who wrote [Heat]\tMichael Mann
";

fn metaqa_scripts(fourth: Script) -> HashMap<String, Script> {
    HashMap::from([
        (
            // Right at 1, 2 of 3 gold found, 2 of 2 predictions right.
            "what movies did [Temuera Morrison] act in".to_owned(),
            reply(
                &["river queen", "Once_Were_Warriors"],
                &["Temuera Morrison starred_actors River Queen"],
                2,
            ),
        ),
        (
            // Wrong answer, but retrieval had the gold one.
            "what does [Tom Cullen] act in".to_owned(),
            reply(&["Weekender"], &["Tom Cullen starred_actors Weekend"], 2),
        ),
        // "I don't know".
        ("who directed [Heat]".to_owned(), reply(&[], &[], 2)),
        ("who wrote [Heat]".to_owned(), fourth),
    ])
}

#[test]
fn an_http_run_scores_every_question_and_writes_json_markdown_and_svg() {
    let dir = tempfile::tempdir().expect("tempdir");
    let questions = write(&dir.path().join("metaqa/2-hop/dev.txt"), METAQA);
    let server = ScriptedServer::start(metaqa_scripts(Script::Fail(500)));
    let out = dir.path().join("run");
    let output = finish(kgmesh(
        &http_eval(
            "metaqa",
            questions.to_str().unwrap(),
            &server.url,
            out.to_str().unwrap(),
            &["--concurrency", "2"],
        ),
        dir.path(),
    ));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "kgmesh eval failed: {stderr}");

    let report = read_json(&out.join("report.json"));
    let aggregate = &report["aggregate"];
    assert_eq!(aggregate["questions"], 4);
    assert_eq!(aggregate["errors"], 1);
    assert_eq!(aggregate["empty"], 1);
    assert!(approx(&aggregate["hits_at_1"], 0.25), "{aggregate}");
    assert!(approx(&aggregate["hits_at_any"], 0.25));
    // Question 1: P = 1, R = 2/3, F1 = 0.8; the rest 0.
    assert!(approx(&aggregate["f1"], 0.8 / 4.0), "{aggregate}");
    assert!(approx(&aggregate["recall"], (2.0 / 3.0) / 4.0));
    // Questions 1 and 2 had a gold answer in the evidence; question 1 one of three.
    assert!(approx(&aggregate["context_hit"], 0.5));
    assert!(approx(
        &aggregate["context_recall"],
        (1.0 / 3.0 + 1.0) / 4.0
    ));
    assert_eq!(aggregate["llm_calls_total"], 6);
    assert_eq!(aggregate["prompt_tokens_total"], 600);
    assert!(aggregate["latency_ms"]["p50"].as_f64().is_some());
    assert!(approx(&aggregate["server_ms"]["p50"], 1.5));
    assert!(approx(
        &report["breakdown"]["by_hops"]["2-hop"]["hits_at_1"],
        0.25
    ));

    let results = report["results"].as_array().expect("results");
    let ids: Vec<&str> = results.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "metaqa/2-hop:1",
            "metaqa/2-hop:2",
            "metaqa/2-hop:3",
            "metaqa/2-hop:4"
        ],
        "results come back in file order whatever the completion order"
    );
    assert!(results[3]["error"].as_str().unwrap().contains("500"));
    assert_eq!(report["system"]["mode"], "http");
    assert_eq!(
        report["system"]["server_info"]["roles"][0]["role"],
        "scripted"
    );
    assert_eq!(report["dataset"]["brackets"], "keep");
    assert_eq!(report["run"]["completed"], 4);
    assert_eq!(report["run"]["interrupted"], false);

    let summary = std::fs::read_to_string(out.join("summary.md")).expect("summary.md");
    assert!(summary.contains("| LLM |"), "{summary}");
    assert!(summary.contains(&server.url), "{summary}");
    assert!(summary.contains("| all | 4 | 25.0 |"), "{summary}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), summary);

    let svg = std::fs::read_to_string(out.join("plot.svg")).expect("plot.svg");
    let document = roxmltree::Document::parse(&svg).expect("the plot is well-formed XML");
    let count = |class: &str| {
        document
            .descendants()
            .filter(|n| n.attribute("class") == Some(class))
            .count()
    };
    assert_eq!(count("hits1"), 1);
    assert_eq!(count("cdf"), 1);
    assert!(count("histogram") >= 1);
}

#[test]
fn stripped_brackets_keep_the_entity_name_and_samples_are_seeded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let questions = write(&dir.path().join("metaqa/1-hop/dev.txt"), METAQA);
    let server = ScriptedServer::start(HashMap::new());
    let run = |out: &str| {
        finish(kgmesh(
            &http_eval(
                "metaqa",
                questions.to_str().unwrap(),
                &server.url,
                out,
                &[
                    "--metaqa-brackets",
                    "strip",
                    "--limit",
                    "2",
                    "--sample-seed",
                    "11",
                ],
            ),
            dir.path(),
        ))
    };
    // The server knows none of the questions, so every one fails and the exit says so;
    // the report is still written, and what the server received is what counts here.
    for out in ["a", "b"] {
        let output = run(out);
        assert!(!output.status.success());
        assert!(dir.path().join(out).join("report.json").is_file());
    }
    let received = server.received.lock().unwrap().clone();
    assert_eq!(received.len(), 4);
    assert!(received
        .iter()
        .all(|q| !q.contains('[') && !q.contains(']')));
    assert!(received
        .iter()
        .all(|q| METAQA.replace(['[', ']'], "").contains(q.as_str())));
    assert_eq!(received[..2], received[2..], "same seed, same sample");
    let report = read_json(&dir.path().join("a/report.json"));
    assert_eq!(report["dataset"]["selected"], 2);
    assert_eq!(report["dataset"]["available"], 4);
    assert_eq!(report["dataset"]["sample_seed"], 11);
    assert_eq!(report["dataset"]["brackets"], "strip");
    // Every question failed (the server knows none of them): errors count as wrong.
    assert_eq!(report["aggregate"]["errors"], 2);
    assert!(approx(&report["aggregate"]["hits_at_1"], 0.0));
}

#[test]
fn a_run_where_nothing_answers_fails_instead_of_reporting_success() {
    let dir = tempfile::tempdir().expect("tempdir");
    let questions = write(&dir.path().join("metaqa/2-hop/dev.txt"), METAQA);
    let run = |server: &str, out: &str| {
        finish(kgmesh(
            &http_eval("metaqa", questions.to_str().unwrap(), server, out, &[]),
            dir.path(),
        ))
    };
    // Nothing listening: a clear error before any question is asked.
    let free = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", free.local_addr().expect("address"));
    drop(free);
    let output = run(&url, "nobody");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("cannot connect to"), "{stderr}");
    assert!(!dir.path().join("nobody/report.json").exists());
    // A server that fails every question: the report is written, the exit is not 0.
    let server = ScriptedServer::start(HashMap::new());
    let output = run(&server.url, "all-failed");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("every one of the 4 questions failed"),
        "{stderr}"
    );
    let report = read_json(&dir.path().join("all-failed/report.json"));
    assert_eq!(report["aggregate"]["errors"], 4);
}

#[test]
fn pathquestion_aliases_and_hops_from_the_gold_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let questions = write(
        &dir.path().join("pathquestion-3h/dev.txt"),
        "what is the gender of a 's parent 's heir ?\tfemale(male/female/)\ta#parents#b#children#c#gender#female#<end>#female\n\
         b 's parents 's occupation ?\tactor(actor/)\tb#parents#d#profession#actor#<end>#actor\n",
    );
    let server = ScriptedServer::start(HashMap::from([
        (
            "what is the gender of a 's parent 's heir ?".to_owned(),
            reply(&["Male"], &[], 0),
        ),
        (
            "b 's parents 's occupation ?".to_owned(),
            reply(&["Actor", "Singer"], &[], 0),
        ),
    ]));
    let out = dir.path().join("pq");
    let output = finish(kgmesh(
        &http_eval(
            "pathquestion",
            questions.to_str().unwrap(),
            &server.url,
            out.to_str().unwrap(),
            &[],
        ),
        dir.path(),
    ));
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report = read_json(&out.join("report.json"));
    assert_eq!(report["name"], "pathquestion-3h");
    assert!(approx(&report["aggregate"]["hits_at_1"], 1.0));
    let by_hops = &report["breakdown"]["by_hops"];
    assert_eq!(by_hops["3-hop"]["questions"], 1);
    assert_eq!(by_hops["2-hop"]["questions"], 1);
    assert_eq!(report["breakdown"]["by_type"]["path"]["questions"], 2);
    // "male" is one of two correct genders: F1 = 2·1·0.5/1.5; "actor, singer": P = 0.5.
    let results = report["results"].as_array().unwrap();
    assert!(approx(&results[0]["score"]["f1"], 2.0 / 3.0));
    assert!(approx(&results[1]["score"]["precision"], 0.5));
}

#[test]
fn compare_lists_aggregate_deltas_and_flipped_questions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let questions = write(&dir.path().join("metaqa/2-hop/dev.txt"), METAQA);
    let before = ScriptedServer::start(metaqa_scripts(Script::Fail(500)));
    let mut fixed_scripts = metaqa_scripts(reply(&["Michael Mann"], &[], 1));
    // Question 1 now answers wrong first.
    fixed_scripts.insert(
        "what movies did [Temuera Morrison] act in".to_owned(),
        reply(&["Whale Rider"], &[], 1),
    );
    let after = ScriptedServer::start(fixed_scripts);
    for (server, out) in [(&before, "a"), (&after, "b")] {
        let output = finish(kgmesh(
            &http_eval("metaqa", questions.to_str().unwrap(), &server.url, out, &[]),
            dir.path(),
        ));
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let output = finish(kgmesh(
        &["eval", "compare", "a/report.json", "b/report.json"],
        dir.path(),
    ));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        text.contains("4 questions in both runs: 1 fixed (wrong in A, right in B), 1 broken"),
        "{text}"
    );
    assert!(text.contains("| Hits@1 % | 25 | 25 | +0.00 |"), "{text}");
    assert!(
        text.contains("| errors | 1 | 0 | -1.00 (better) |"),
        "{text}"
    );
    assert!(text.contains("system.server_url"), "{text}");
    let fixed = text.split("### Fixed").nth(1).expect("a Fixed section");
    assert!(
        fixed.contains(
            "| metaqa/2-hop:4 | who wrote [Heat] | Michael Mann | error: server answered HTTP 500"
        ),
        "{text}"
    );
    let broken = text.split("### Broken").nth(1).expect("a Broken section");
    assert!(
        broken.contains("| metaqa/2-hop:1 |") && broken.contains("Whale Rider"),
        "{text}"
    );

    let output = finish(kgmesh(
        &[
            "eval",
            "plot",
            "a/report.json",
            "b/report.json",
            "--out",
            "both.svg",
        ],
        dir.path(),
    ));
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let svg = std::fs::read_to_string(dir.path().join("both.svg")).expect("both.svg");
    let document = roxmltree::Document::parse(&svg).expect("well-formed SVG");
    let cdfs = document
        .descendants()
        .filter(|n| n.attribute("class") == Some("cdf"))
        .count();
    assert_eq!(cdfs, 2, "one latency curve per run");

    let output = finish(kgmesh(
        &["eval", "compare", "a/report.json", "missing.json"],
        dir.path(),
    ));
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("missing.json"));
}

#[test]
fn ctrl_c_writes_the_partial_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let questions = write(&dir.path().join("metaqa/2-hop/dev.txt"), METAQA);
    let server = ScriptedServer::start(metaqa_scripts(Script::Slow(Duration::from_secs(30))));
    let out = dir.path().join("partial");
    let running = kgmesh(
        &http_eval(
            "metaqa",
            questions.to_str().unwrap(),
            &server.url,
            out.to_str().unwrap(),
            &[],
        ),
        dir.path(),
    );
    // Questions 1-3 answer at once; the fourth hangs.
    let deadline = Instant::now() + TEST_TIMEOUT;
    while server.received.lock().unwrap().len() < 4 {
        assert!(
            Instant::now() < deadline,
            "the fourth question never arrived"
        );
        thread::sleep(Duration::from_millis(20));
    }
    let status = Command::new("kill")
        .args(["-INT", &running.0.id().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success());
    let started = Instant::now();
    let output = finish(running);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the run waited for the hanging question"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success(),
        "an interrupted run reports failure"
    );
    assert!(stderr.contains("interrupted after 3 of 4"), "{stderr}");
    assert_eq!(server.answered.load(Ordering::SeqCst), 3);
    let report = read_json(&out.join("report.json"));
    assert_eq!(report["run"]["interrupted"], true);
    assert_eq!(report["run"]["completed"], 3);
    assert_eq!(report["aggregate"]["questions"], 3);
    assert!(approx(&report["aggregate"]["hits_at_1"], 1.0 / 3.0));
    let summary = std::fs::read_to_string(out.join("summary.md")).expect("summary.md");
    assert!(summary.contains("**Interrupted:** 3 of 4"), "{summary}");
}

#[test]
fn a_busy_server_is_asked_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let questions = write(
        &dir.path().join("q.jsonl"),
        r#"{"question": "who directed Heat?", "answers": ["Michael Mann"]}"#,
    );
    let server = ScriptedServer::start(HashMap::from([(
        "who directed Heat?".to_owned(),
        Script::Busy(Arc::new(AtomicUsize::new(3)), "Michael Mann"),
    )]));
    let output = finish(kgmesh(
        &http_eval(
            "jsonl",
            questions.to_str().unwrap(),
            &server.url,
            "busy",
            &[],
        ),
        dir.path(),
    ));
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        server.received.lock().unwrap().len(),
        4,
        "three 429s, then the answer"
    );
    let report = read_json(&dir.path().join("busy/report.json"));
    assert!(approx(&report["aggregate"]["hits_at_1"], 1.0));
    assert_eq!(report["aggregate"]["errors"], 0);
}

#[test]
fn bad_input_gets_clear_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broken = write(
        &dir.path().join("metaqa/1-hop/dev.txt"),
        "fine [question]\tanswer\nno tab on this line\n",
    );
    let output = finish(kgmesh(
        &[
            "eval",
            "--dataset",
            "metaqa",
            "--questions",
            broken.to_str().unwrap(),
            "--server",
            "http://127.0.0.1:9",
        ],
        dir.path(),
    ));
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("metaqa/1-hop/dev.txt:2"), "{stderr}");

    let output = finish(kgmesh(
        &[
            "eval",
            "--dataset",
            "wc2014",
            "--questions",
            broken.to_str().unwrap(),
            "--metaqa-brackets",
            "strip",
            "--concurrency",
            "0",
        ],
        dir.path(),
    ));
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    for problem in ["--concurrency", "--metaqa-brackets", "--kg PATH"] {
        assert!(stderr.contains(problem), "missing `{problem}` in: {stderr}");
    }
}
