//! `kgmesh` processes for harnesses that measure a running server: a child killed on
//! drop, a server's printed address, and plain HTTP/1.1 exchanges with timeouts.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{SocketAddr, TcpStream},
    path::Path,
    process::{Child, Command, Stdio},
    time::Duration,
};

/// A child process, killed and reaped when dropped.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `binary` with the machine's configuration and model endpoint kept away, quiet.
pub fn kgmesh(binary: &Path) -> Command {
    let mut command = Command::new(binary);
    command
        .env_remove("KGMESH_CONFIG")
        .env_remove("OPENAI_BASE_URL")
        .env("RUST_LOG", "error")
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// Starts `command` with its output discarded.
pub fn spawn(mut command: Command) -> Proc {
    Proc(
        command
            .stdout(Stdio::null())
            .spawn()
            .expect("kgmesh starts (build it with cargo build --release --bin kgmesh)"),
    )
}

/// Starts a server and waits (up to two minutes) for the `listening on http://ADDR`
/// line it prints.
pub fn spawn_server(mut command: Command) -> (Proc, SocketAddr) {
    let mut child = command
        .stdout(Stdio::piped())
        .spawn()
        .expect("kgmesh serve starts (build it with cargo build --release --bin kgmesh)");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(address) = line.strip_prefix("listening on http://") {
                let _ = tx.send(address.trim().to_owned());
            }
        }
    });
    let address = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("the server printed its address")
        .parse()
        .expect("an address");
    (Proc(child), address)
}

/// One HTTP/1.1 exchange on a fresh connection (a JSON body when `body` is not
/// empty); (status, response body).
pub fn exchange(address: SocketAddr, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(5)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    let request = if body.is_empty() {
        format!("{method} {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n")
    } else {
        format!(
            "{method} {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    stream.write_all(request.as_bytes()).expect("write");
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response).to_string();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}
