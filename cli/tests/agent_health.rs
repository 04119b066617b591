//! `kgmesh agent` answers orchestrator probes on `telemetry.metrics_listen`: `/healthz`
//! while the process lives, `/readyz` while its role serves and the bus is connected,
//! and `/metrics` counts the connection's losses and recoveries.

use std::{
    io::{Read, Write},
    net::TcpStream,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use kgmesh_testkit::nats::{free_port, NatsServer};

struct Agent(Child);

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The whole response to `GET path`, or `None` while nothing listens.
fn get(port: u16, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    Some(response)
}

/// The status code of `GET path`, or `None` while nothing listens.
fn get_status(port: u16, path: &str) -> Option<u16> {
    get(port, path)?.split_whitespace().nth(1)?.parse().ok()
}

/// The value of the sample `series` (name and labels, as printed) on `/metrics`.
fn sample(port: u16, series: &str) -> Option<f64> {
    let text = get(port, "/metrics")?;
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
}

/// Polls `GET path` until it answers `status` (true) or 30 s pass (false).
fn poll_status(port: u16, path: &str, status: u16) -> bool {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(30) {
        if get_status(port, path) == Some(status) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

#[test]
fn probes_report_health_and_readiness() {
    let mut nats = NatsServer::start();
    let port = free_port();
    let agent = Agent(
        Command::new(env!("CARGO_BIN_EXE_kgmesh"))
            .args(["agent", "--role", "cache-manager", "--nats", &nats.url()])
            .env(
                "KGMESH__TELEMETRY__METRICS_LISTEN",
                format!("127.0.0.1:{port}"),
            )
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start kgmesh agent"),
    );
    let started = Instant::now();
    let mut ready = None;
    while started.elapsed() < Duration::from_secs(30) {
        ready = get_status(port, "/readyz");
        if ready == Some(200) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(ready, Some(200), "agent never became ready");
    assert_eq!(get_status(port, "/healthz"), Some(200));
    assert_eq!(get_status(port, "/nope"), Some(404));

    // The bus goes away: still alive, no longer ready; back when the bus is.
    nats.stop();
    assert!(
        poll_status(port, "/readyz", 503),
        "ready without a bus connection"
    );
    assert_eq!(get_status(port, "/healthz"), Some(200));
    nats.restart();
    assert!(
        poll_status(port, "/readyz", 200),
        "not ready again after the bus came back"
    );
    // The loss and the reconnection were counted.
    let events = |event: &str| {
        sample(
            port,
            &format!("kgmesh_bus_connection_events_total{{event=\"{event}\"}}"),
        )
    };
    assert!(
        events("disconnected").is_some_and(|n| n >= 1.0),
        "{:?}",
        get(port, "/metrics")
    );
    assert!(
        events("connected").is_some_and(|n| n >= 1.0),
        "{:?}",
        get(port, "/metrics")
    );
    drop(agent);
}
