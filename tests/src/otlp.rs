//! A real OTLP collector (rotel, from PyPI) for one test, on random loopback ports.
//!
//! rotel receives OTLP over gRPC and HTTP, discards what it receives (`--exporter
//! blackhole`) and prints every span it got (`--debug-log traces`); [`OtlpCollector::spans`]
//! parses that print-out, so a test sees exactly what left the process under test.
//!
//! ```no_run
//! use std::time::Duration;
//! let collector = kgmesh_testkit::otlp::OtlpCollector::start();
//! // point a process at collector.http_endpoint() or collector.grpc_endpoint() ...
//! let spans = collector
//!     .wait_for(Duration::from_secs(20), |spans| !spans.is_empty())
//!     .expect("no spans arrived");
//! ```

use std::{
    net::{SocketAddr, TcpStream},
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use crate::nats::free_port;

const STARTUP_TIMEOUT: Duration = Duration::from_secs(20);

const INSTALL_HINT: &str = "rotel-agent not found: install the OTLP collector with \
     `pip install rotel` (or run scripts/setup.d/50-rotel.sh), or set ROTEL_AGENT_BIN";

/// One span as the collector printed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectedSpan {
    /// `service.name` of the resource the span came with.
    pub service_name: String,
    pub trace_id: String,
    pub span_id: String,
    /// `None` for a root span.
    pub parent_span_id: Option<String>,
    pub name: String,
    /// Attribute values as rotel prints them, without the type: `Str(x)` → `x`.
    pub attributes: Vec<(String, String)>,
}

impl CollectedSpan {
    pub fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// A running rotel, killed (and waited for) on drop.
pub struct OtlpCollector {
    child: Option<Child>,
    grpc_port: u16,
    http_port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl OtlpCollector {
    /// Starts rotel on two free ports and waits until both accept connections.
    ///
    /// Panics (failing the test) when rotel is not installed or does not come up.
    pub fn start() -> Self {
        let binary = find_binary().unwrap_or_else(|| panic!("{INSTALL_HINT}"));
        let dir = tempfile::Builder::new()
            .prefix("kgmesh-otlp-")
            .tempdir()
            .expect("cannot create a temporary directory for the collector");
        let log = dir.path().join("rotel.log");
        let mut last_error = String::new();
        for _attempt in 0..5 {
            let (grpc_port, http_port) = (free_port(), free_port());
            if grpc_port == http_port {
                continue;
            }
            match spawn(&binary, &log, grpc_port, http_port) {
                Ok(child) => {
                    return Self {
                        child: Some(child),
                        grpc_port,
                        http_port,
                        log,
                        _dir: dir,
                    }
                }
                Err(error) => last_error = error,
            }
        }
        panic!("rotel did not start: {last_error}");
    }

    /// `http://127.0.0.1:PORT` of the OTLP/gRPC receiver.
    pub fn grpc_endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.grpc_port)
    }

    /// `http://127.0.0.1:PORT` of the OTLP/HTTP receiver (exporters append `/v1/traces`).
    pub fn http_endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.http_port)
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<CollectedSpan> {
        let text = std::fs::read(&self.log)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default();
        parse_spans(&text)
    }

    /// What rotel printed (for failure messages).
    pub fn output(&self) -> String {
        std::fs::read(&self.log)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default()
    }

    /// Polls until `done` holds for the spans received so far; `Err` with the last spans
    /// seen when `timeout` passes first.
    pub fn wait_for(
        &self,
        timeout: Duration,
        done: impl Fn(&[CollectedSpan]) -> bool,
    ) -> Result<Vec<CollectedSpan>, Vec<CollectedSpan>> {
        let started = Instant::now();
        loop {
            let spans = self.spans();
            if done(&spans) {
                return Ok(spans);
            }
            if started.elapsed() > timeout {
                return Err(spans);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for OtlpCollector {
    fn drop(&mut self) {
        self.stop();
    }
}

fn spawn(binary: &PathBuf, log: &PathBuf, grpc_port: u16, http_port: u16) -> Result<Child, String> {
    let out = std::fs::File::create(log).map_err(|e| format!("cannot create {log:?}: {e}"))?;
    let err = out
        .try_clone()
        .map_err(|e| format!("cannot share {log:?}: {e}"))?;
    let mut child = Command::new(binary)
        .args(["start", "--otlp-grpc-endpoint"])
        .arg(format!("127.0.0.1:{grpc_port}"))
        .arg("--otlp-http-endpoint")
        .arg(format!("127.0.0.1:{http_port}"))
        .args([
            "--exporter",
            "blackhole",
            "--debug-log",
            "traces",
            "--debug-log-verbosity",
            "detailed",
        ])
        // Small batches, flushed quickly: a test waits for what it sent.
        .args(["--batch-timeout", "50ms"])
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", binary.display()))?;
    let started = Instant::now();
    let ready = |port: u16| {
        TcpStream::connect_timeout(
            &SocketAddr::from(([127, 0, 0, 1], port)),
            Duration::from_millis(200),
        )
        .is_ok()
    };
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            let output = std::fs::read_to_string(log).unwrap_or_default();
            return Err(format!(
                "rotel exited with {status} (ports {grpc_port}/{http_port}): {output}"
            ));
        }
        if ready(grpc_port) && ready(http_port) {
            return Ok(child);
        }
        if started.elapsed() > STARTUP_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "rotel did not listen on {grpc_port}/{http_port} within {STARTUP_TIMEOUT:?}"
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Reads rotel's `--debug-log traces --debug-log-verbosity detailed` print-out.
pub fn parse_spans(text: &str) -> Vec<CollectedSpan> {
    enum Section {
        Other,
        Resource,
        SpanHeader,
        SpanAttributes,
    }
    let mut spans = Vec::new();
    let mut service_name = String::new();
    let mut current: Option<CollectedSpan> = None;
    let mut section = Section::Other;
    for raw in text.lines() {
        let line = strip_ansi(raw);
        let line = line.trim();
        if line.starts_with("ResourceSpans #") {
            spans.extend(current.take());
            service_name.clear();
            section = Section::Other;
        } else if line == "Resource attributes:" {
            section = Section::Resource;
        } else if line.starts_with("Span #") {
            spans.extend(current.take());
            current = Some(CollectedSpan {
                service_name: service_name.clone(),
                trace_id: String::new(),
                span_id: String::new(),
                parent_span_id: None,
                name: String::new(),
                attributes: Vec::new(),
            });
            section = Section::SpanHeader;
        } else if line == "Attributes:" {
            if let Section::SpanHeader = section {
                section = Section::SpanAttributes;
            }
        } else if let Some(pair) = line.strip_prefix("-> ") {
            let Some((key, value)) = pair.split_once(": ") else {
                continue;
            };
            let value = typed_value(value);
            match section {
                Section::Resource if key == "service.name" => service_name = value,
                Section::SpanAttributes => {
                    if let Some(span) = current.as_mut() {
                        span.attributes.push((key.to_owned(), value));
                    }
                }
                _ => {}
            }
        } else if let (Section::SpanHeader, Some(span)) = (&section, current.as_mut()) {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim().to_owned();
            match key.trim() {
                "Trace ID" => span.trace_id = value,
                "Parent ID" => span.parent_span_id = (!value.is_empty()).then_some(value),
                "ID" => span.span_id = value,
                "Name" => span.name = value,
                _ => {}
            }
        } else if !line.is_empty() {
            // Events, links and other blocks end a span's attributes.
            if let Section::SpanAttributes = section {
                section = Section::Other;
            }
        }
    }
    spans.extend(current.take());
    spans.retain(|span| !span.trace_id.is_empty() && !span.span_id.is_empty());
    spans
}

/// `Str(kgmesh-serve)` → `kgmesh-serve`, `Int(3)` → `3`.
fn typed_value(value: &str) -> String {
    match value.split_once('(') {
        Some((kind, rest)) if kind.chars().all(|c| c.is_ascii_alphabetic()) => {
            rest.strip_suffix(')').unwrap_or(rest).to_owned()
        }
        _ => value.to_owned(),
    }
}

fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// rotel's binary: `$ROTEL_AGENT_BIN`, then `rotel-agent` on `PATH`, then the binary
/// inside the `rotel` Python package.
fn find_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("ROTEL_AGENT_BIN") {
        let path = PathBuf::from(path);
        return path.is_file().then_some(path);
    }
    let from_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("rotel-agent"))
            .find(|candidate| candidate.is_file())
    });
    if from_path.is_some() {
        return from_path;
    }
    let output = Command::new("python3")
        .args([
            "-c",
            "import os, rotel; print(os.path.dirname(rotel.__file__))",
        ])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let dir = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let binary = PathBuf::from(dir).join("rotel-agent");
    binary.is_file().then_some(binary)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
ResourceSpans #0
Resource SchemaURL: 
Resource attributes:
     -> service.name: Str(kgmesh-serve)
     -> telemetry.sdk.name: Str(opentelemetry)
ScopeSpans #0
InstrumentationScope kgmesh 
Span #0
    Trace ID       : fc186d2652719c52aabe305d87a42819
    Parent ID      : d7e5a601cc72224f
    ID             : 4f1039c55b0c35ee
    Name           : round
    Kind           : SPAN_KIND_INTERNAL
Start time: 1
End time: 2
    Status code    : STATUS_CODE_UNSET
    Status message : 
Attributes:
     -> round: Int(1)
     -> kgmesh.question_id: Str(q-1)
Span #1
    Trace ID       : fc186d2652719c52aabe305d87a42819
    Parent ID      : 
    ID             : d7e5a601cc72224f
    Name           : question
Attributes:
     -> code.line.number: Int(22)
ResourceSpans #0
Resource attributes:
     -> service.name: Str(kgmesh-judge)
Span #0
    Trace ID       : fc186d2652719c52aabe305d87a42819
    Parent ID      : 4f1039c55b0c35ee
    ID             : 0000000000000001
    Name           : judge judge
";

    #[test]
    fn parses_resources_spans_parents_and_attributes() {
        let spans = parse_spans(SAMPLE);
        assert_eq!(spans.len(), 3);
        assert_eq!(spans[0].service_name, "kgmesh-serve");
        assert_eq!(spans[0].name, "round");
        assert_eq!(spans[0].parent_span_id.as_deref(), Some("d7e5a601cc72224f"));
        assert_eq!(spans[0].attribute("round"), Some("1"));
        assert_eq!(spans[0].attribute("kgmesh.question_id"), Some("q-1"));
        assert_eq!(spans[1].parent_span_id, None);
        assert_eq!(spans[1].attribute("round"), None);
        assert_eq!(spans[2].service_name, "kgmesh-judge");
        assert_eq!(spans[2].span_id, "0000000000000001");
    }

    #[test]
    fn colour_codes_are_ignored() {
        let coloured = SAMPLE.replace("Span #1", "\u{1b}[2mSpan #1\u{1b}[0m");
        assert_eq!(parse_spans(&coloured), parse_spans(SAMPLE));
    }

    #[test]
    fn collector_receives_nothing_until_sent_to() {
        let collector = OtlpCollector::start();
        assert!(collector.grpc_endpoint().starts_with("http://127.0.0.1:"));
        assert_ne!(collector.grpc_endpoint(), collector.http_endpoint());
        assert!(collector.spans().is_empty(), "{}", collector.output());
    }
}
