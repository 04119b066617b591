//! The example retriever joins `kgmesh serve --nats` and the built-in roles on a real
//! nats-server and its fact answers a question the graph cannot.
//!
//! The `kgmesh` binary is taken from beside this crate's binary (both are built by
//! `cargo test --workspace`); `KGMESH_BIN` names another.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{SocketAddr, TcpStream},
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::mpsc,
    time::{Duration, Instant},
};

use kgmesh_testkit::nats::NatsServer;

const STEP: Duration = Duration::from_secs(60);

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn kgmesh() -> Command {
    let path = std::env::var_os("KGMESH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_BIN_EXE_tagline-retriever")).with_file_name("kgmesh")
        });
    assert!(
        path.is_file(),
        "{} not found: build it first (cargo build -p kgmesh) or set KGMESH_BIN",
        path.display()
    );
    let mut command = Command::new(path);
    command
        .env_remove("KGMESH_CONFIG")
        .env_remove("OPENAI_BASE_URL")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null());
    command
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn spawn(mut command: Command) -> Killed {
    Killed(
        command
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("a process starts"),
    )
}

fn http(address: SocketAddr, method: &str, path: &str, body: &str) -> String {
    let mut stream = TcpStream::connect(address).expect("connects");
    stream.set_read_timeout(Some(STEP)).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default()
}

#[test]
fn the_example_retriever_answers_beside_the_built_in_roles() {
    let nats = NatsServer::start();
    let mut processes = Vec::new();
    let roles = [
        "kg-linker",
        "entity-linker",
        "path-follower",
        "judge",
        "summarizer",
    ];
    for role in roles {
        let mut command = kgmesh();
        command.args(["agent", "--role", role, "--nats", &nats.url(), "--kg"]);
        command.arg(repo().join("examples/movies/kg.tsv"));
        processes.push(spawn(command));
    }
    let mut example = Command::new(env!("CARGO_BIN_EXE_tagline-retriever"));
    example
        .args(["--nats", &nats.url(), "--facts"])
        .arg(repo().join("examples/rust-retriever/taglines.tsv"));
    processes.push(spawn(example));

    let mut command = kgmesh();
    command
        .args([
            "serve",
            "--nats",
            &nats.url(),
            "--listen",
            "127.0.0.1:0",
            "--workers",
            "1",
        ])
        .env("KGMESH__BUS__ALLOWED_ROLES", r#"["tagline-retriever"]"#)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut serve = Killed(command.spawn().expect("serve starts"));
    let stdout = serve.0.stdout.take().expect("stdout");
    let (sender, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = sender.send(line);
        }
    });
    let address: SocketAddr = loop {
        let line = lines.recv_timeout(STEP).expect("serve prints its address");
        if let Some(address) = line.strip_prefix("listening on http://") {
            break address.trim().parse().expect("an address");
        }
    };

    let started = Instant::now();
    loop {
        // Every role started above, and the example: a question asked before the
        // kg-linker has announced itself is refused for a missing role.
        let agents = http(address, "GET", "/v1/agents", "");
        let listed = |role: &str| agents.contains(&format!("\"{role}\""));
        if listed("tagline-retriever") && roles.iter().all(|role| listed(role)) {
            break;
        }
        assert!(started.elapsed() < STEP, "agents never appeared: {agents}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let reply = http(
        address,
        "POST",
        "/v1/ask",
        r#"{"question": "what is the tagline of Heat", "options": {"no_cache": true}}"#,
    );
    let reply: serde_json::Value = serde_json::from_str(&reply).expect("a JSON reply");
    assert_eq!(
        reply["answers"][0]["text"], "A Los Angeles crime saga",
        "{reply}"
    );
    let cited = reply["answers"][0]["evidence"][0]
        .as_u64()
        .expect("a cited line") as usize;
    assert_eq!(
        reply["evidence"][cited]["source"], "tagline-retriever",
        "{reply}"
    );
    drop(processes);
}
