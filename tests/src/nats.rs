//! A real `nats-server` (with JetStream) for one test, on a random loopback port.
//!
//! ```no_run
//! let server = kgmesh_testkit::nats::NatsServer::start();
//! println!("connect to {}", server.url());
//! // the server is killed when `server` goes out of scope
//! ```

use std::{
    io::{BufRead, BufReader, Read},
    net::{SocketAddr, TcpListener, TcpStream},
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::atomic::{AtomicUsize, Ordering},
    time::{Duration, Instant},
};

/// How long a freshly started server may take to accept connections (it usually takes
/// ~20 ms; CI machines under load are slower).
const STARTUP_TIMEOUT: Duration = Duration::from_secs(15);

const INSTALL_HINT: &str =
    "nats-server not found: install it with `apt-get install -y nats-server` (or run scripts/test)";

/// A running nats-server, killed (and waited for) on drop.
pub struct NatsServer {
    child: Option<Child>,
    port: u16,
    binary: PathBuf,
    store_dir: tempfile::TempDir,
    /// A name no other server on this machine has, checked in the server's `INFO`
    /// greeting: a connection that succeeds on the port is not proof that *this*
    /// server bound it (another test's listener may hold it while ours failed to bind).
    name: String,
    /// Further command-line options (authentication, TLS).
    extra: Vec<String>,
}

impl NatsServer {
    /// Starts a server on a free port with a temporary JetStream directory and waits
    /// until it accepts connections.
    ///
    /// Panics (failing the test) when the binary is missing or the server does not
    /// come up; a test never silently runs without its server.
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// [`NatsServer::start`] with further nats-server options, such as `--user u
    /// --pass p` or `--tls --tlscert F --tlskey F` (see [`tls_fixture`]).
    pub fn start_with(extra: &[&str]) -> Self {
        let binary = find_binary().unwrap_or_else(|| panic!("{INSTALL_HINT}"));
        let store_dir = tempfile::Builder::new()
            .prefix("kgmesh-nats-")
            .tempdir()
            .expect("cannot create a temporary JetStream directory");
        static STARTED: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "kgmesh-test-{}-{}",
            std::process::id(),
            STARTED.fetch_add(1, Ordering::Relaxed)
        );
        let mut server = Self {
            child: None,
            port: 0,
            binary,
            store_dir,
            name,
            extra: extra.iter().map(|s| (*s).to_owned()).collect(),
        };
        server.spawn_on_free_port();
        server
    }

    /// `nats://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Kills the server (clients see the connection drop). [`NatsServer::restart`]
    /// brings it back on the same port.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops the server if it runs, then starts it again on the same port and store.
    pub fn restart(&mut self) {
        self.stop();
        // The port was ours a moment ago; retry briefly in case the OS still holds it.
        let started = Instant::now();
        loop {
            match self.try_spawn(self.port) {
                Ok(()) => return,
                Err(error) if started.elapsed() < STARTUP_TIMEOUT => {
                    eprintln!(
                        "nats-server restart on port {} failed ({error}); retrying",
                        self.port
                    );
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(error) => panic!("nats-server did not restart on port {}: {error}", self.port),
            }
        }
    }

    fn spawn_on_free_port(&mut self) {
        // Another process may grab the port between our probe and the server's bind;
        // a few attempts make that race harmless.
        let mut last_error = String::new();
        for _attempt in 0..5 {
            let port = free_port();
            match self.try_spawn(port) {
                Ok(()) => return,
                Err(error) => last_error = error,
            }
        }
        panic!("nats-server did not start: {last_error}");
    }

    fn try_spawn(&mut self, port: u16) -> Result<(), String> {
        let mut child = Command::new(&self.binary)
            .args(["-a", "127.0.0.1", "-p", &port.to_string(), "-js", "-sd"])
            .arg(self.store_dir.path())
            .args(["--server_name", &self.name])
            .args(&self.extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.binary.display()))?;
        let address = SocketAddr::from(([127, 0, 0, 1], port));
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!("nats-server exited with {status} on port {port}"));
            }
            if greets_as(address, &self.name) {
                self.child = Some(child);
                self.port = port;
                return Ok(());
            }
            if started.elapsed() > STARTUP_TIMEOUT {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "nats-server did not accept connections on port {port} within {STARTUP_TIMEOUT:?}"
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A file of the test-only TLS material in `tests/fixtures/tls` (see its README):
/// `ca.pem`, `server.pem`, `server-key.pem`.
pub fn tls_fixture(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/tls")
        .join(file)
}

/// The nats-server binary: `$NATS_SERVER_BIN`, then `PATH`, then the Debian location.
fn find_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("NATS_SERVER_BIN") {
        let path = PathBuf::from(path);
        return path.is_file().then_some(path);
    }
    let from_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("nats-server"))
            .find(|candidate| candidate.is_file())
    });
    from_path.or_else(|| {
        let debian = PathBuf::from("/usr/sbin/nats-server");
        debian.is_file().then_some(debian)
    })
}

/// Whether the server listening at `address` is the nats-server named `name`: its
/// first line is `INFO {...}` carrying `"server_name":"<name>"`.
fn greets_as(address: SocketAddr, name: &str) -> bool {
    let Ok(stream) = TcpStream::connect_timeout(&address, Duration::from_millis(200)) else {
        return false;
    };
    if stream
        .set_read_timeout(Some(Duration::from_secs(1)))
        .is_err()
    {
        return false;
    }
    let mut greeting = String::new();
    let mut reader = BufReader::new(stream.take(64 * 1024));
    if reader.read_line(&mut greeting).is_err() {
        return false;
    }
    greeting.starts_with("INFO ") && greeting.contains(&format!("\"server_name\":\"{name}\""))
}

/// A port the OS considers free right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("cannot bind a loopback port")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_accepts_and_stops() {
        let mut server = NatsServer::start();
        let address = SocketAddr::from(([127, 0, 0, 1], server.port()));
        let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(2)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        let mut greeting = [0u8; 4];
        std::io::Read::read_exact(&mut stream, &mut greeting).unwrap();
        assert_eq!(&greeting, b"INFO");
        drop(stream);
        server.stop();
        assert!(TcpStream::connect_timeout(&address, Duration::from_millis(500)).is_err());
        server.restart();
        assert!(TcpStream::connect_timeout(&address, Duration::from_secs(2)).is_ok());
    }

    #[test]
    fn only_this_servers_greeting_counts_as_started() {
        let server = NatsServer::start();
        let address = SocketAddr::from(([127, 0, 0, 1], server.port()));
        assert!(greets_as(address, &server.name));
        assert!(!greets_as(address, "kgmesh-test-someone-else"));
        // A listener that is not nats-server (another test's HTTP port, say).
        let other = TcpListener::bind("127.0.0.1:0").unwrap();
        assert!(!greets_as(other.local_addr().unwrap(), &server.name));
    }
}
