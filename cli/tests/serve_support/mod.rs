//! Helpers for tests that run the `kgmesh` binary: child processes killed on drop, the
//! address a server printed, plain HTTP/1.1 with timeouts, and the data sets.

#![allow(dead_code)]

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{SocketAddr, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::mpsc,
    time::{Duration, Instant},
};

pub const STEP_TIMEOUT: Duration = Duration::from_secs(60);

pub fn kgmesh() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kgmesh"));
    // A test never picks up the machine's configuration or model endpoint.
    command
        .env_remove("KGMESH_CONFIG")
        .env_remove("OPENAI_BASE_URL")
        .env("RUST_LOG", "warn");
    command
}

/// Runs `kgmesh ARGS…` to the end (see [`run`]): exit status, stdout, stderr.
pub fn kgmesh_run<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> (i32, String, String) {
    let mut command = kgmesh();
    command.args(args);
    run(command)
}

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The MiniLM files `scripts/setup.d/30-minilm.sh` fetches (as models/tests/minilm.rs
/// needs them); a test that reads with MiniLM fails without them.
pub fn minilm_dir() -> PathBuf {
    let minilm = repo_root().join("models-cache/all-MiniLM-L6-v2");
    assert!(
        minilm.join("model.safetensors").is_file(),
        "all-MiniLM-L6-v2 not found in {}: run scripts/fetch-minilm",
        minilm.display()
    );
    minilm
}

pub fn sample_kg() -> PathBuf {
    repo_root().join("examples/movies/kg.tsv")
}

/// The slice of MetaQA in the repository: `kb.tsv` and `{1,2,3}-hop/dev.txt`.
pub fn metaqa_slice() -> PathBuf {
    kgmesh_testkit::data::metaqa_slice_dir()
}

/// A child process, killed and reaped when dropped.
pub struct Process {
    pub name: String,
    child: Child,
    stdout_lines: Option<mpsc::Receiver<String>>,
}

impl Process {
    pub fn spawn(name: &str, mut command: Command) -> Self {
        command
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .stdin(Stdio::null());
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        let stdout = child.stdout.take().expect("piped stdout");
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            name: name.to_owned(),
            child,
            stdout_lines: Some(receiver),
        }
    }

    /// Waits for the `listening on http://ADDR` line a server prints.
    pub fn listening_address(&mut self) -> SocketAddr {
        let receiver = self.stdout_lines.as_ref().expect("stdout");
        let deadline = Instant::now() + STEP_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match receiver.recv_timeout(left) {
                Ok(line) => {
                    let address = line
                        .strip_prefix("listening on http://")
                        .or_else(|| line.strip_prefix("listening on https://"));
                    if let Some(address) = address {
                        return address.trim().parse().expect("a socket address");
                    }
                }
                Err(_) => {
                    let status = self.child.try_wait().ok().flatten();
                    panic!(
                        "{} printed no listening address (exit status {status:?})",
                        self.name
                    );
                }
            }
        }
    }

    /// Sends `signal` (`STOP`, `CONT`, `KILL`, ...) to the process.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "cannot send SIG{signal} to {}", self.name);
    }

    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Sends SIGTERM (what orchestrators send) and waits up to [`STEP_TIMEOUT`] for the
    /// process to exit on its own; its exit status.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "cannot signal {}", self.name);
        let deadline = Instant::now() + STEP_TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "{} did not exit within {STEP_TIMEOUT:?} of SIGTERM",
                self.name
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `command` to completion within [`STEP_TIMEOUT`]; (exit code, stdout, stderr).
pub fn run(command: Command) -> (i32, String, String) {
    run_within(command, STEP_TIMEOUT)
}

/// [`run`] with its own time limit; the command is killed when it runs past `limit`.
pub fn run_within(mut command: Command, limit: Duration) -> (i32, String, String) {
    command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::null());
    let mut child = command.spawn().expect("kgmesh starts");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("kgmesh did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (
        status.code().unwrap_or(-1),
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    )
}

/// Exit status of `kgmesh ask` whose reply has no answer.
pub const NO_ANSWER_EXIT: i32 = 3;

/// Runs `command` (a `kgmesh ask … --json`), which must succeed, and parses what it
/// printed. It exits 0 with an answer and [`NO_ANSWER_EXIT`] without one.
pub fn run_json(command: Command) -> serde_json::Value {
    let (code, stdout, stderr) = run(command);
    let reply: serde_json::Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"));
    let answered = reply["answers"].as_array().is_some_and(|a| !a.is_empty());
    let expected = if answered { 0 } else { NO_ANSWER_EXIT };
    assert_eq!(code, expected, "kgmesh exit status ({stderr})");
    reply
}

/// The answer texts of an `AskReply` as JSON, best first.
pub fn answer_texts(reply: &serde_json::Value) -> Vec<String> {
    reply["answers"]
        .as_array()
        .expect("answers")
        .iter()
        .map(|a| a["text"].as_str().expect("text").to_owned())
        .collect()
}

/// `kgmesh serve --embedded` on `kg`, on a free port, with `workers` HTTP workers.
pub fn serve_embedded(kg: &Path, workers: u16) -> Command {
    let mut command = kgmesh();
    command
        .args([
            "serve",
            "--embedded",
            "--listen",
            "127.0.0.1:0",
            "--workers",
        ])
        .arg(workers.to_string())
        .arg("--kg")
        .arg(kg);
    command
}

/// Spawns the server `command`, reads the address it listens on and waits until its
/// `/readyz` answers 200.
pub fn start_ready(name: &str, command: Command) -> (Process, SocketAddr) {
    let mut server = Process::spawn(name, command);
    let address = server.listening_address();
    wait_for_ok(address, "/readyz");
    (server, address)
}

/// One HTTP/1.1 request (connection closed after it); (status, body).
pub fn http(address: SocketAddr, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
    http_raw(
        address,
        method,
        path,
        "application/json",
        body.unwrap_or("").as_bytes(),
        body.is_some(),
    )
}

pub fn http_raw(
    address: SocketAddr,
    method: &str,
    path: &str,
    content_type: &str,
    body: &[u8],
    send_body: bool,
) -> (u16, String) {
    let (status, _head, body) =
        http_full(address, method, path, content_type, body, send_body, &[]);
    (status, body)
}

/// [`http`] with the API token `token` as `Authorization: Bearer`.
pub fn http_as(
    address: SocketAddr,
    token: &str,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> (u16, String) {
    let (status, _head, body) = http_with_headers(
        address,
        method,
        path,
        body,
        &[("Authorization", &format!("Bearer {token}"))],
    );
    (status, body)
}

/// One request with extra `headers`: (status, the response head, body).
pub fn http_with_headers(
    address: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&str>,
    headers: &[(&str, &str)],
) -> (u16, String, String) {
    http_full(
        address,
        method,
        path,
        "application/json",
        body.unwrap_or("").as_bytes(),
        body.is_some(),
        headers,
    )
}

/// A `GET` of `path`: (status, the response head with its headers, body).
pub fn http_get_with_head(address: SocketAddr, path: &str) -> (u16, String, String) {
    http_full(address, "GET", path, "", b"", false, &[])
}

fn http_full(
    address: SocketAddr,
    method: &str,
    path: &str,
    content_type: &str,
    body: &[u8],
    send_body: bool,
    headers: &[(&str, &str)],
) -> (u16, String, String) {
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(5)).expect("connect");
    stream
        .set_read_timeout(Some(STEP_TIMEOUT))
        .expect("timeout");
    stream
        .set_write_timeout(Some(STEP_TIMEOUT))
        .expect("timeout");
    let mut request =
        format!("{method} {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if send_body {
        request.push_str(&format!(
            "Content-Type: {content_type}\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).expect("write");
    if send_body {
        // The server may answer (413) before reading everything; that is fine.
        let _ = stream.write_all(body);
    }
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response).to_string();
    let status: u16 = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status in {text:?}"));
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    (status, head.to_owned(), body)
}

fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || tail.len() < size {
            break;
        }
        out.push_str(&tail[..size]);
        rest = tail[size..].trim_start_matches("\r\n");
    }
    out
}

/// Polls `path` until it answers 200 or [`STEP_TIMEOUT`] passes.
pub fn wait_for_ok(address: SocketAddr, path: &str) -> String {
    let deadline = Instant::now() + STEP_TIMEOUT;
    loop {
        let (status, body) = http(address, "GET", path, None);
        if status == 200 {
            return body;
        }
        if Instant::now() > deadline {
            panic!("{path} never answered 200; last: {status} {body}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `question<TAB>answer1|answer2` lines.
pub fn read_questions(path: &std::path::Path, limit: usize) -> Vec<(String, Vec<String>)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .take(limit)
        .map(|line| {
            let (question, answers) = line.split_once('\t').expect("question<TAB>answers");
            (
                question.to_owned(),
                answers.split('|').map(str::to_owned).collect(),
            )
        })
        .collect()
}

/// One `kgmesh agent --role R --nats URL --kg KG` process per role, each command
/// passed through `configure` (environment, exporters) before it starts.
pub fn spawn_agents(
    nats_url: &str,
    roles: &[&str],
    kg: &Path,
    configure: impl Fn(Command) -> Command,
) -> Vec<Process> {
    roles
        .iter()
        .map(|role| {
            let mut command = kgmesh();
            command.args(["agent", "--role", role, "--nats", nats_url, "--kg"]);
            command.arg(kg);
            Process::spawn(&format!("kgmesh agent --role {role}"), configure(command))
        })
        .collect()
}

/// `kgmesh serve --nats URL` on a free port with one worker, its command passed
/// through `configure`; the process and the address it listens on.
pub fn spawn_serve_nats(
    nats_url: &str,
    configure: impl FnOnce(Command) -> Command,
) -> (Process, SocketAddr) {
    let mut command = kgmesh();
    command.args([
        "serve",
        "--nats",
        nats_url,
        "--listen",
        "127.0.0.1:0",
        "--workers",
        "1",
    ]);
    let mut server = Process::spawn("kgmesh serve --nats", configure(command));
    let address = server.listening_address();
    (server, address)
}

/// The role names `GET /v1/agents` of the server at `address` lists.
pub fn role_names(address: SocketAddr) -> std::collections::BTreeSet<String> {
    let (status, body) = http(address, "GET", "/v1/agents", None);
    assert_eq!(status, 200, "{body}");
    let agents: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    agents["roles"]
        .as_array()
        .expect("roles")
        .iter()
        .map(|r| r["role"].as_str().expect("role").to_owned())
        .collect()
}

/// Waits until the server at `address` is ready and lists every role of `roles`,
/// failing when one of `processes` exits or [`STEP_TIMEOUT`] passes.
pub fn wait_for_roles(address: SocketAddr, roles: &[&str], processes: &mut [Process]) {
    wait_for_replicas(address, roles, None, processes);
}

/// [`wait_for_roles`], each role with exactly `replicas` replicas when it says so.
pub fn wait_for_replicas(
    address: SocketAddr,
    roles: &[&str],
    replicas: Option<usize>,
    processes: &mut [Process],
) {
    let deadline = Instant::now() + STEP_TIMEOUT;
    loop {
        let (status, _) = http(address, "GET", "/readyz", None);
        let (_, body) = http(address, "GET", "/v1/agents", None);
        let agents: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let listed = agents["roles"].as_array().cloned().unwrap_or_default();
        let all = roles.iter().all(|role| {
            listed.iter().any(|r| {
                r["role"] == *role
                    && replicas.is_none_or(|n| r["replicas"].as_u64() == Some(n as u64))
            })
        });
        if status == 200 && all {
            return;
        }
        for process in processes.iter_mut() {
            assert!(process.is_running(), "{} exited", process.name);
        }
        assert!(
            Instant::now() < deadline,
            "roles never all appeared (want {roles:?}, {replicas:?} replicas each): {body}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The environment variable the tests put API tokens in (named by `http.tokens_env`).
pub const TOKENS_VAR: &str = "KGMESH_TEST_API_TOKENS";

/// `command` with the API tokens of `document` (TOML `[[tokens]]` tables), given the way
/// a Kubernetes Secret gives them: an environment variable named by `http.tokens_env`.
pub fn with_tokens(mut command: Command, document: &str) -> Command {
    command
        .env("KGMESH__HTTP__TOKENS_ENV", TOKENS_VAR)
        .env(TOKENS_VAR, document);
    command
}

/// A token for tests with every scope.
pub const ADMIN_TOKEN: &str = "test-admin-token-6f1c0b7e9a2d4c38";

/// A tokens document of one `admin` token, [`ADMIN_TOKEN`], named `tester`.
pub fn admin_tokens() -> String {
    format!("[[tokens]]\nname = \"tester\"\ntoken = \"{ADMIN_TOKEN}\"\nscopes = [\"admin\"]\n")
}
