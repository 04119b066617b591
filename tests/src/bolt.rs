//! A real Bolt graph database for one test: ArcadeDB with its Bolt plugin, run from the
//! `arcadedb-embedded` Python package (which bundles a JRE and the server jars), on
//! random loopback ports with a temporary database directory.
//!
//! ```no_run
//! let server = kgmesh_testkit::bolt::BoltServer::start();
//! println!("connect to {} as {} / {}", server.uri(), server.user(), server.password());
//! // the server is killed when `server` goes out of scope
//! ```

use std::{
    net::{SocketAddr, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use crate::nats::free_port;

/// A cold JVM plus database creation takes a few seconds; loaded CI machines more.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(90);

const INSTALL_HINT: &str = "ArcadeDB not found: install it with `pip install arcadedb-embedded` \
(or run scripts/setup.d/20-bolt.sh); set ARCADEDB_HOME to the package directory if it is not on python3's path";

/// Name of the database the server creates at start.
pub const DATABASE: &str = "kgmesh";
const USER: &str = "root";
const PASSWORD: &str = "kgmesh-test-password";

/// A running ArcadeDB server with Bolt enabled, killed (and waited for) on drop.
pub struct BoltServer {
    child: Option<Child>,
    bolt_port: u16,
    http_port: u16,
    root: tempfile::TempDir,
}

impl BoltServer {
    /// Starts a server with an empty database [`DATABASE`] and waits until its Bolt port
    /// accepts connections.
    ///
    /// Panics (failing the test) when the package is missing or the server does not come
    /// up; a test never silently runs without its server.
    pub fn start() -> Self {
        let home = find_package().unwrap_or_else(|| panic!("{INSTALL_HINT}"));
        let root = tempfile::Builder::new()
            .prefix("kgmesh-arcadedb-")
            .tempdir()
            .expect("cannot create a temporary database directory");
        let mut last_error = String::new();
        for _attempt in 0..3 {
            match spawn(&home, root.path()) {
                Ok((child, bolt_port, http_port)) => {
                    return Self {
                        child: Some(child),
                        bolt_port,
                        http_port,
                        root,
                    }
                }
                Err(error) => last_error = error,
            }
        }
        panic!("ArcadeDB did not start: {last_error}");
    }

    /// `bolt://127.0.0.1:PORT`.
    pub fn uri(&self) -> String {
        format!("bolt://127.0.0.1:{}", self.bolt_port)
    }

    pub fn bolt_port(&self) -> u16 {
        self.bolt_port
    }

    pub fn http_port(&self) -> u16 {
        self.http_port
    }

    pub fn user(&self) -> &str {
        USER
    }

    pub fn password(&self) -> &str {
        PASSWORD
    }

    pub fn database(&self) -> &str {
        DATABASE
    }

    /// The server's log (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.root.path().join("server.log")).unwrap_or_default()
    }

    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for BoltServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn spawn(home: &Path, root: &Path) -> Result<(Child, u16, u16), String> {
    let bolt_port = free_port();
    let http_port = free_port();
    let java = home.join("jre/bin/java");
    let classpath = format!("{}/*", home.join("jars").display());
    let log = std::fs::File::create(root.join("server.log"))
        .map_err(|e| format!("cannot create the server log: {e}"))?;
    let log_err = log.try_clone().map_err(|e| e.to_string())?;
    let mut child = Command::new(&java)
        .arg("-Xmx1g")
        .arg("-cp")
        .arg(&classpath)
        .arg(format!("-Darcadedb.server.rootPath={}", root.display()))
        .arg(format!(
            "-Darcadedb.server.databaseDirectory={}",
            root.join("databases").display()
        ))
        .arg(format!("-Darcadedb.server.rootPassword={PASSWORD}"))
        .arg("-Darcadedb.server.httpIncomingHost=127.0.0.1")
        .arg(format!("-Darcadedb.server.httpIncomingPort={http_port}"))
        .arg("-Darcadedb.server.plugins=Bolt:com.arcadedb.bolt.BoltProtocolPlugin")
        .arg(format!("-Darcadedb.bolt.port={bolt_port}"))
        .arg("-Darcadedb.bolt.host=127.0.0.1")
        .arg(format!(
            "-Darcadedb.server.defaultDatabases={DATABASE}[{USER}]"
        ))
        .arg("com.arcadedb.server.ArcadeDBServer")
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(log_err))
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", java.display()))?;
    let address = SocketAddr::from(([127, 0, 0, 1], bolt_port));
    let started = Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            let log = std::fs::read_to_string(root.join("server.log")).unwrap_or_default();
            return Err(format!("ArcadeDB exited with {status}; log:\n{log}"));
        }
        if TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_ok() {
            wait_for_database(root, &mut child)?;
            return Ok((child, bolt_port, http_port));
        }
        if started.elapsed() > STARTUP_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "Bolt port {bolt_port} not open within {STARTUP_TIMEOUT:?}"
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn wait_for_database(root: &Path, child: &mut Child) -> Result<(), String> {
    let started = Instant::now();
    loop {
        let log = std::fs::read_to_string(root.join("server.log")).unwrap_or_default();
        // Logged after the default database has been created: the last start-up step.
        if log.contains("ArcadeDB Server started") {
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("ArcadeDB exited with {status}; log:\n{log}"));
        }
        if started.elapsed() > STARTUP_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("ArcadeDB did not finish starting; log:\n{log}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The `arcadedb_embedded` package directory: `$ARCADEDB_HOME`, else asked of python3.
fn find_package() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("ARCADEDB_HOME") {
        let home = PathBuf::from(home);
        return home.join("jre/bin/java").is_file().then_some(home);
    }
    let output = Command::new("python3")
        .args([
            "-c",
            "import arcadedb_embedded, os; print(os.path.dirname(arcadedb_embedded.__file__))",
        ])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let home = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    (home.join("jre/bin/java").is_file() && home.join("jars").is_dir()).then_some(home)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_opens_bolt_and_stops() {
        let mut server = BoltServer::start();
        let address = SocketAddr::from(([127, 0, 0, 1], server.bolt_port()));
        let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(2)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        // Bolt handshake: magic, then four proposed versions (4.4 … 4.0); the server
        // answers with the version it picked.
        use std::io::{Read, Write};
        let mut handshake = vec![0x60, 0x60, 0xB0, 0x17];
        for minor in [4u8, 3, 2, 1] {
            handshake.extend_from_slice(&[0, 0, minor, 4]);
        }
        stream.write_all(&handshake).unwrap();
        let mut version = [0u8; 4];
        stream.read_exact(&mut version).unwrap();
        assert_eq!(
            version[3],
            4,
            "server picked Bolt {version:?}; log:\n{}",
            server.log()
        );
        drop(stream);
        server.stop();
        assert!(TcpStream::connect_timeout(&address, Duration::from_millis(500)).is_err());
    }
}
