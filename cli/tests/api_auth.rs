//! Who may use the HTTP API of `kgmesh serve --embedded`, against the real server:
//! bearer tokens and their scopes (401, 403), per-token rate limits (429 for one token
//! while another is served), anonymous questions without tokens, the refusal to listen
//! beyond loopback unguarded, and TLS with a certificate reloaded when its files change.

mod serve_support;

use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    path::Path,
    time::{Duration, Instant},
};

use serve_support::*;

const ASKER: &str = "asker-token-1b2c3d4e5f607182";
const TEACHER: &str = "teacher-token-9a8b7c6d5e4f3a2b";
const READER: &str = "reader-token-0f1e2d3c4b5a6978";
const TIGHT: &str = "tight-token-77aa88bb99cc00dd";

/// Four tokens: `asker` (ask), `teacher` (feedback; given by its hash), `reader`
/// (cypher, ask), and `tight` (ask, at most 2 requests and then one every 20 s).
fn tokens() -> String {
    let teacher_hash = sha256_hex(TEACHER);
    format!(
        r#"
[[tokens]]
name = "asker"
token = "{ASKER}"
scopes = ["ask"]

[[tokens]]
name = "teacher"
sha256 = "{teacher_hash}"
scopes = ["feedback"]

[[tokens]]
name = "reader"
token = "{READER}"
scopes = ["ask", "cypher"]

[[tokens]]
name = "tight"
token = "{TIGHT}"
scopes = ["ask"]
rate_per_second = 0.05
burst = 2
"#
    )
}

/// The SHA-256 of `text` in hex, by `sha256sum` (what an operator would run).
fn sha256_hex(text: &str) -> String {
    let mut child = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("sha256sum runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write");
    let output = child.wait_with_output().expect("sha256sum");
    let text = String::from_utf8(output.stdout).expect("text");
    text.split_whitespace().next().expect("a hash").to_owned()
}

fn json(body: &str) -> serde_json::Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

fn error_kind(body: &str) -> String {
    json(body)["error"]["kind"]
        .as_str()
        .unwrap_or("")
        .to_owned()
}

fn error_message(body: &str) -> String {
    json(body)["error"]["message"]
        .as_str()
        .unwrap_or("")
        .to_owned()
}

const HEAT: &str = r#"{"question": "who directed Heat"}"#;
const COLLATERAL: &str = r#"{"question": "who directed Collateral"}"#;
const POISON: &str = r#"{"question": "who directed Heat", "answers": ["Al Pacino"]}"#;
const CYPHER: &str =
    r#"{"query": "MATCH (f)-[:directed_by]->(d {name: 'Michael Mann'}) RETURN f.name AS film"}"#;

fn first_answer(body: &str) -> String {
    json(body)["answers"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_owned()
}

#[test]
fn tokens_carry_scopes_and_limits_and_their_names_reach_the_metrics() {
    let command = with_tokens(serve_embedded(&sample_kg(), 2), &tokens());
    let (mut server, address) = start_ready("kgmesh serve", command);

    // Open to anyone: health, readiness, the console's page.
    for path in ["/healthz", "/readyz", "/"] {
        let (status, body) = http(address, "GET", path, None);
        assert_eq!(status, 200, "{path}: {body}");
    }

    // No token: 401 with a JSON reason and a Bearer challenge, on every scoped route,
    // before the body is read (a malformed one too).
    for (method, path, body) in [
        ("POST", "/v1/ask", Some(HEAT)),
        ("POST", "/v1/feedback", Some(POISON)),
        ("POST", "/v1/cypher", Some(CYPHER)),
        ("POST", "/v1/feedback", Some("{not json")),
        ("GET", "/v1/agents", None),
        ("GET", "/v1/schema", None),
    ] {
        let (status, head, body) = http_with_headers(address, method, path, body, &[]);
        assert_eq!(status, 401, "{method} {path}: {body}");
        assert_eq!(error_kind(&body), "unauthorized", "{body}");
        assert!(
            head.to_ascii_lowercase()
                .contains("www-authenticate: bearer"),
            "{head}"
        );
    }
    // A token the server does not know, or no Bearer scheme: 401.
    for header in [
        "Bearer asker-token-1b2c3d4e5f607183".to_owned(),
        format!("Basic {ASKER}"),
    ] {
        let (status, _, body) = http_with_headers(
            address,
            "POST",
            "/v1/ask",
            Some(HEAT),
            &[("Authorization", &header)],
        );
        assert_eq!(status, 401, "{header}: {body}");
    }

    // The right scope answers; another scope is 403, naming the scope.
    let (status, body) = http_as(address, ASKER, "POST", "/v1/ask", Some(HEAT));
    assert_eq!(status, 200, "{body}");
    assert_eq!(first_answer(&body), "Michael Mann", "{body}");
    for (path, body, scope) in [
        ("/v1/feedback", POISON, "`feedback`"),
        ("/v1/cypher", CYPHER, "`cypher`"),
    ] {
        let (status, reply) = http_as(address, ASKER, "POST", path, Some(body));
        assert_eq!(status, 403, "{path}: {reply}");
        assert_eq!(error_kind(&reply), "forbidden");
        assert!(error_message(&reply).contains(scope), "{reply}");
    }
    let (status, reply) = http_as(address, TEACHER, "POST", "/v1/ask", Some(HEAT));
    assert_eq!(status, 403, "{reply}");
    let (status, reply) = http_as(address, READER, "POST", "/v1/cypher", Some(CYPHER));
    assert_eq!(status, 200, "{reply}");
    assert!(reply.contains("Collateral"), "{reply}");
    // The feedback token (known by its hash only) is let through to the feedback itself.
    let (status, reply) = http_as(
        address,
        TEACHER,
        "POST",
        "/v1/feedback",
        Some(r#"{"question": "who directed Heat"}"#),
    );
    assert_eq!(status, 400, "{reply}");
    assert_eq!(error_kind(&reply), "invalid_feedback", "{reply}");

    // `tight` may send 2 requests and then waits; the others are served meanwhile.
    for _ in 0..2 {
        let (status, body) = http_as(address, TIGHT, "GET", "/v1/schema", None);
        assert_eq!(status, 200, "{body}");
    }
    let (status, head, body) = http_with_headers(
        address,
        "GET",
        "/v1/schema",
        None,
        &[("Authorization", &format!("Bearer {TIGHT}"))],
    );
    assert_eq!(status, 429, "{body}");
    assert_eq!(error_kind(&body), "rate_limited", "{body}");
    assert!(error_message(&body).contains("`tight`"), "{body}");
    let retry_after: u64 = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("retry-after")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or_else(|| panic!("no Retry-After: {head}"));
    assert!((1..=20).contains(&retry_after), "{retry_after}");
    let (status, body) = http_as(address, ASKER, "GET", "/v1/schema", None);
    assert_eq!(status, 200, "another token is served: {body}");

    // Metrics count requests by token name, never by token.
    let (status, metrics) = http(address, "GET", "/metrics", None);
    assert_eq!(status, 200);
    for line in [
        r#"kgmesh_http_requests_total{principal="asker",route="/v1/ask",status="200"} 1"#,
        r#"kgmesh_http_requests_total{principal="asker",route="/v1/feedback",status="403"} 1"#,
        r#"kgmesh_http_requests_total{principal="tight",route="/v1/schema",status="429"} 1"#,
        r#"kgmesh_http_requests_total{principal="reader",route="/v1/cypher",status="200"} 1"#,
    ] {
        assert!(metrics.contains(line), "{line} missing from /metrics");
    }
    assert!(
        metrics.contains(r#"principal="anonymous",route="/v1/ask",status="401""#),
        "refusals are counted"
    );
    for secret in [ASKER, TEACHER, READER, TIGHT] {
        assert!(!metrics.contains(secret), "a token is in /metrics");
    }
    let status = server.terminate();
    assert!(status.success(), "{status:?}");
}

/// The attack of rewriting the shared plan cache anonymously, replayed against a server
/// on loopback with no tokens: questions stay anonymous, feedback is refused.
#[test]
fn without_tokens_anonymous_feedback_and_cypher_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cache_file = dir.path().join("plans.jsonl");
    let mut command = serve_embedded(&sample_kg(), 1);
    command.env("KGMESH__CACHE__PATH", &cache_file);
    let (mut server, address) = start_ready("kgmesh serve", command);

    let (status, body) = http(address, "POST", "/v1/ask", Some(COLLATERAL));
    assert_eq!(status, 200, "{body}");
    assert_eq!(first_answer(&body), "Michael Mann", "{body}");
    let before = std::fs::read_to_string(&cache_file).unwrap_or_default();
    for _ in 0..3 {
        let (status, head, body) =
            http_with_headers(address, "POST", "/v1/feedback", Some(POISON), &[]);
        assert_eq!(status, 401, "{body}");
        assert!(error_message(&body).contains("http.tokens_file"), "{body}");
        assert!(head
            .to_ascii_lowercase()
            .contains("www-authenticate: bearer"));
    }
    let (status, body) = http(address, "POST", "/v1/cypher", Some(CYPHER));
    assert_eq!(status, 401, "{body}");
    assert_eq!(
        std::fs::read_to_string(&cache_file).unwrap_or_default(),
        before,
        "refused feedback changed the plan cache"
    );
    for question in [COLLATERAL, r#"{"question": "who directed The Insider"}"#] {
        let (status, body) = http(address, "POST", "/v1/ask", Some(question));
        assert_eq!(status, 200, "{body}");
        assert_eq!(first_answer(&body), "Michael Mann", "{body}");
    }
    let status = server.terminate();
    assert!(status.success(), "{status:?}");
}

/// `serve --listen 0.0.0.0:PORT` (the port is not used).
fn serve_everywhere() -> std::process::Command {
    let mut command = kgmesh();
    command
        .args([
            "serve",
            "--embedded",
            "--listen",
            "0.0.0.0:0",
            "--workers",
            "1",
        ])
        .arg("--kg")
        .arg(sample_kg());
    command
}

#[test]
fn beyond_loopback_without_tokens_serve_refuses_unless_declared_open() {
    let (code, stdout, stderr) = run(serve_everywhere());
    assert_ne!(code, 0, "serve started unguarded: {stdout}");
    assert!(!stdout.contains("listening on"), "{stdout}");
    for setting in ["http.open", "http.tokens_file", "0.0.0.0"] {
        assert!(stderr.contains(setting), "{setting} not named: {stderr}");
    }
    // The same through the configuration's key.
    let mut command = kgmesh();
    command
        .args(["serve", "--embedded", "--kg"])
        .arg(sample_kg())
        .env("KGMESH__HTTP__LISTEN", "0.0.0.0:0");
    let (code, stdout, stderr) = run(command);
    assert_ne!(code, 0, "serve started unguarded: {stdout}");
    assert!(stderr.contains("http.open"), "{stderr}");

    // Declared open: anonymous questions; cypher and feedback off, saying why.
    let mut command = serve_everywhere();
    command.arg("--open");
    let mut server = Process::spawn("kgmesh serve --open", command);
    let address = server.listening_address();
    let address = SocketAddr::from(([127, 0, 0, 1], address.port()));
    wait_for_ok(address, "/readyz");
    let (status, body) = http(address, "POST", "/v1/ask", Some(HEAT));
    assert_eq!(status, 200, "{body}");
    for (path, body) in [("/v1/feedback", POISON), ("/v1/cypher", CYPHER)] {
        let (status, reply) = http(address, "POST", path, Some(body));
        assert_eq!(status, 403, "{path}: {reply}");
        assert!(error_message(&reply).contains("http.open"), "{reply}");
    }
    let status = server.terminate();
    assert!(status.success(), "{status:?}");

    // With tokens, beyond loopback is fine.
    let command = with_tokens(serve_everywhere(), &admin_tokens());
    let mut server = Process::spawn("kgmesh serve with tokens", command);
    let address = server.listening_address();
    let address = SocketAddr::from(([127, 0, 0, 1], address.port()));
    wait_for_ok(address, "/readyz");
    let (status, body) = http_as(address, ADMIN_TOKEN, "POST", "/v1/ask", Some(HEAT));
    assert_eq!(status, 200, "{body}");
    server.terminate();
}

#[test]
fn bad_token_configuration_stops_serve_with_every_problem() {
    let document = "[[tokens]]\nname = \"a b\"\ntoken = \"short\"\nscopes = [\"ask\", \"root\"]\n";
    let (code, _, stderr) = run(with_tokens(serve_embedded(&sample_kg(), 1), document));
    assert_ne!(code, 0);
    assert!(stderr.contains(TOKENS_VAR), "{stderr}");
    assert!(
        stderr.contains("root"),
        "the unknown scope is named: {stderr}"
    );
    let document = "[[tokens]]\nname = \"a b\"\ntoken = \"short\"\nscopes = [\"ask\"]\n";
    let (code, _, stderr) = run(with_tokens(serve_embedded(&sample_kg(), 1), document));
    assert_ne!(code, 0);
    assert!(
        stderr.contains("`name`") && stderr.contains("at least 16"),
        "{stderr}"
    );
    let mut command = serve_embedded(&sample_kg(), 1);
    command.env("KGMESH__HTTP__TOKENS_ENV", "KGMESH_TEST_UNSET_TOKENS");
    let (code, _, stderr) = run(command);
    assert_ne!(code, 0);
    assert!(stderr.contains("KGMESH_TEST_UNSET_TOKENS"), "{stderr}");
}

// ---- TLS ---------------------------------------------------------------------------

struct Pki {
    ca_pem: String,
    cert_pem: String,
    key_pem: String,
}

/// A fresh CA (named `ca_name`) and a certificate it signs for localhost and 127.0.0.1.
fn pki(ca_name: &str) -> Pki {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().expect("CA key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, ca_name);
    let ca_cert = ca_params.self_signed(&ca_key).expect("CA certificate");
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().expect("server key");
    let params = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
        .expect("server params");
    let cert = params.signed_by(&key, &issuer).expect("server certificate");
    Pki {
        ca_pem: ca_cert.pem(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    }
}

fn write_pair(dir: &Path, pki: &Pki) {
    // The key first: a reader that sees the new certificate sees its key.
    std::fs::write(dir.join("tls.key.new"), &pki.key_pem).unwrap();
    std::fs::write(dir.join("tls.crt.new"), &pki.cert_pem).unwrap();
    std::fs::rename(dir.join("tls.key.new"), dir.join("tls.key")).unwrap();
    std::fs::rename(dir.join("tls.crt.new"), dir.join("tls.crt")).unwrap();
}

/// `GET https://localhost:PORT/healthz` by a client that trusts only `ca_pem`.
async fn https_get(port: u16, ca_pem: &str) -> Result<(u16, String), String> {
    let ca = reqwest::Certificate::from_pem(ca_pem.as_bytes()).map_err(|e| e.to_string())?;
    let client = reqwest::Client::builder()
        .tls_certs_only([ca])
        .timeout(Duration::from_secs(10))
        .resolve("localhost", SocketAddr::from(([127, 0, 0, 1], port)))
        .build()
        .map_err(|e| e.to_string())?;
    let response = client
        .get(format!("https://localhost:{port}/healthz"))
        .send()
        .await
        .map_err(|e| format!("{e:?}"))?;
    let status = response.status().as_u16();
    Ok((status, response.text().await.map_err(|e| e.to_string())?))
}

/// Runs `future` to its end, failing when it takes more than 30 s.
fn within<T>(runtime: &tokio::runtime::Runtime, future: impl std::future::Future<Output = T>) -> T {
    runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(30), future).await })
        .expect("the HTTPS request finished in time")
}

#[test]
fn tls_serves_the_configured_certificate_refuses_plain_http_and_reloads() {
    let dir = tempfile::tempdir().unwrap();
    let first = pki("kgmesh test CA one");
    write_pair(dir.path(), &first);
    let mut command = serve_embedded(&sample_kg(), 1);
    command
        .env("KGMESH__HTTP__TLS_CERT_FILE", dir.path().join("tls.crt"))
        .env("KGMESH__HTTP__TLS_KEY_FILE", dir.path().join("tls.key"));
    let mut server = Process::spawn("kgmesh serve (TLS)", command);
    let address = server.listening_address();
    let port = address.port();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let within = |future| within(&runtime, future);

    // A client trusting the CA is answered.
    let (status, body) = within(https_get(port, &first.ca_pem)).expect("HTTPS works");
    assert_eq!((status, body.contains("ok")), (200, true), "{body}");

    // Plain HTTP to the TLS port gets no HTTP answer.
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(5)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reply = Vec::new();
    let _ = stream.read_to_end(&mut reply);
    assert!(
        !String::from_utf8_lossy(&reply).contains("200 OK"),
        "plain HTTP was answered: {}",
        String::from_utf8_lossy(&reply)
    );

    // A client trusting another CA is refused until the files hold that CA's
    // certificate; then it is answered without a restart.
    let second = pki("kgmesh test CA two");
    let refused = within(https_get(port, &second.ca_pem));
    assert!(refused.is_err(), "an untrusted certificate was accepted");
    write_pair(dir.path(), &second);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match within(https_get(port, &second.ca_pem)) {
            Ok((200, _)) => break,
            other => assert!(
                Instant::now() < deadline,
                "the renewed certificate was never served: {other:?}"
            ),
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    assert!(
        within(https_get(port, &first.ca_pem)).is_err(),
        "the old certificate is still served"
    );
    assert!(server.is_running());
    let status = server.terminate();
    assert!(status.success(), "{status:?}");
}
