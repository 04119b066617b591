//! End to end across processes: a real nats-server, two `kgmesh agent --role echo`
//! processes, and a client. Requests are spread over both; when one process dies the
//! other answers the rest (the client retries what the dead one swallowed).

use std::{
    collections::BTreeMap,
    process::{Child, Command, Stdio},
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use kgmesh_agents::runtime::Client;
use kgmesh_bus::{replica_counts, Bus, NatsBus, NatsOptions};
use kgmesh_schemas::{messages::echo::EchoRequest, Budget, Meta, QuestionId};
use kgmesh_testkit::nats::NatsServer;
use tokio::sync::Mutex;

const WAIT: Duration = Duration::from_secs(30);

async fn bounded<F: std::future::Future>(future: F) -> F::Output {
    tokio::time::timeout(WAIT, future)
        .await
        .expect("did not finish in time")
}

/// A `kgmesh agent` process, killed on drop.
struct Agent {
    child: Child,
}

impl Agent {
    fn start(role: &str, nats_url: &str, name: &str) -> Self {
        let child = Command::new(env!("CARGO_BIN_EXE_kgmesh"))
            .args(["agent", "--role", role, "--nats", nats_url])
            .args(["--instance-name", name])
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("cannot run the kgmesh binary");
        Self { child }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends SIGTERM and waits (bounded) for the exit status.
    fn terminate(&mut self) -> std::process::ExitStatus {
        let status = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .expect("cannot run kill");
        assert!(status.success(), "kill -TERM failed");
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("cannot wait for the agent") {
                return status;
            }
            assert!(
                started.elapsed() < WAIT,
                "the agent did not exit after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn connect(server: &NatsServer) -> Arc<dyn Bus> {
    Arc::new(
        bounded(NatsBus::connect(&server.url(), NatsOptions::default()))
            .await
            .expect("cannot connect to the test nats-server"),
    )
}

/// Waits until `count` echo instances are discoverable.
async fn wait_for_replicas(bus: &dyn Bus, count: usize) {
    bounded(async {
        loop {
            let instances = bus.discover(Duration::from_millis(300)).await.unwrap();
            if replica_counts(&instances).get("echo").copied().unwrap_or(0) == count {
                return;
            }
        }
    })
    .await;
}

fn meta() -> Meta {
    Meta::new(QuestionId::new_random(), 1, Budget::default())
}

/// The process id in an echo reply's `served_by` (`"<pid>/<instance>"`).
fn pid_of(served_by: &str) -> u32 {
    served_by
        .split('/')
        .next()
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("malformed served_by {served_by:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_echo_agents_share_the_work_and_survive_one_dying() {
    const TOTAL: usize = 200;
    const WORKERS: usize = 4;
    const KILL_AFTER: usize = 60;

    let server = NatsServer::start();
    let mut first = Agent::start("echo", &server.url(), "echo-1");
    let second = Agent::start("echo", &server.url(), "echo-2");
    let bus = connect(&server).await;
    wait_for_replicas(bus.as_ref(), 2).await;

    let client = Client {
        timeout: Duration::from_secs(2),
        retries: 6,
        backoff: Duration::from_millis(50),
        ..Client::new(bus.clone())
    };
    let next = Arc::new(AtomicUsize::new(0));
    let answered = Arc::new(AtomicUsize::new(0));
    // (request number, pid that served it, whether the first agent was dead when sent)
    let served: Arc<Mutex<Vec<(usize, u32, bool)>>> = Arc::new(Mutex::new(Vec::new()));
    let first_dead = Arc::new(std::sync::atomic::AtomicBool::new(false));

    let mut workers = Vec::new();
    for _ in 0..WORKERS {
        let (client, next, answered, served, first_dead) = (
            client.clone(),
            next.clone(),
            answered.clone(),
            served.clone(),
            first_dead.clone(),
        );
        workers.push(tokio::spawn(async move {
            loop {
                let n = next.fetch_add(1, Ordering::SeqCst);
                if n >= TOTAL {
                    return;
                }
                let dead_when_sent = first_dead.load(Ordering::SeqCst);
                let text = format!("request {n}");
                let (reply, _cost) = client
                    .call_default(&meta(), &EchoRequest { text: text.clone() })
                    .await
                    .unwrap_or_else(|e| panic!("{text} was not answered: {e}"));
                assert_eq!(reply.text, text);
                served
                    .lock()
                    .await
                    .push((n, pid_of(&reply.served_by), dead_when_sent));
                answered.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }

    // Kill the first agent abruptly while requests are in flight.
    bounded(async {
        while answered.load(Ordering::SeqCst) < KILL_AFTER {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await;
    let first_pid = first.pid();
    first.kill();
    first_dead.store(true, Ordering::SeqCst);

    for worker in workers {
        bounded(worker).await.expect("a client worker failed");
    }

    let served = served.lock().await;
    assert_eq!(served.len(), TOTAL, "every request is answered");
    let mut by_pid: BTreeMap<u32, usize> = BTreeMap::new();
    for (_, pid, _) in served.iter() {
        *by_pid.entry(*pid).or_insert(0) += 1;
    }
    let second_pid = second.pid();
    assert!(
        by_pid.get(&first_pid).copied().unwrap_or(0) > 0,
        "the first agent served nothing: {by_pid:?}"
    );
    assert!(
        by_pid.get(&second_pid).copied().unwrap_or(0) > 0,
        "the second agent served nothing: {by_pid:?}"
    );
    assert_eq!(by_pid.len(), 2, "unexpected servers: {by_pid:?}");
    let after_kill: Vec<_> = served.iter().filter(|(_, _, dead)| *dead).collect();
    // The kill takes a moment; most of the remaining requests still go out after it.
    assert!(
        after_kill.len() >= (TOTAL - KILL_AFTER) / 2,
        "only {} requests were sent after the kill",
        after_kill.len()
    );
    assert!(
        after_kill.iter().all(|(_, pid, _)| *pid == second_pid),
        "a request sent after the kill was answered by the dead agent"
    );
    eprintln!("served per process: {by_pid:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_and_exits_cleanly() {
    let server = NatsServer::start();
    let mut agent = Agent::start("echo", &server.url(), "echo-term");
    let bus = connect(&server).await;
    wait_for_replicas(bus.as_ref(), 1).await;
    let client = Client::new(bus.clone()).with_timeout(Duration::from_secs(5));
    let (reply, _) = bounded(client.call_default(&meta(), &EchoRequest { text: "hi".into() }))
        .await
        .unwrap();
    assert_eq!(pid_of(&reply.served_by), agent.pid());

    let status = tokio::task::spawn_blocking(move || agent.terminate())
        .await
        .unwrap();
    assert!(status.success(), "agent exited with {status}");
    wait_for_replicas(bus.as_ref(), 0).await;
}

#[test]
fn unknown_role_and_unreachable_nats_are_clear_errors() {
    let output = Command::new(env!("CARGO_BIN_EXE_kgmesh"))
        .args([
            "agent",
            "--role",
            "no-such-role",
            "--nats",
            "nats://127.0.0.1:1",
        ])
        .output()
        .expect("cannot run the kgmesh binary");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unknown role \"no-such-role\""), "{stderr}");
    assert!(stderr.contains("echo"), "known roles are listed: {stderr}");

    let port = kgmesh_testkit::nats::free_port();
    let output = Command::new(env!("CARGO_BIN_EXE_kgmesh"))
        .args(["agent", "--role", "echo", "--nats"])
        .arg(format!("nats://127.0.0.1:{port}"))
        .output()
        .expect("cannot run the kgmesh binary");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cannot connect to NATS"), "{stderr}");
}
