//! Authentication and TLS against a real nats-server: the ways `kgmesh` can log in
//! (user and password, token, NKey) over TLS with a private certificate authority, a
//! refused login that fails at once with a clear message, and a server whose
//! certificate cannot be verified.

use std::{future::Future, sync::Arc, time::Duration};

use bytes::Bytes;
use futures::future::BoxFuture;
use kgmesh_bus::{
    Bus, Endpoint, Handler, Headers, Message, NatsAuth, NatsBus, NatsOptions, ServiceSpec,
};
use kgmesh_schemas::{Role, RoleInfo, RoleKind};
use kgmesh_testkit::nats::{tls_fixture, NatsServer};

/// Bound on any single await in these tests.
const WAIT: Duration = Duration::from_secs(20);

async fn bounded<F: Future>(future: F) -> F::Output {
    tokio::time::timeout(WAIT, future)
        .await
        .expect("a bus operation did not finish in time")
}

/// A nats-server that requires TLS (the test CA's server certificate) and `extra`.
fn tls_server(extra: &[&str]) -> NatsServer {
    let cert = tls_fixture("server.pem");
    let key = tls_fixture("server-key.pem");
    let mut args = vec![
        "--tls",
        "--tlscert",
        cert.to_str().unwrap(),
        "--tlskey",
        key.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    NatsServer::start_with(&args)
}

fn options(auth: NatsAuth, trusted_ca: bool) -> NatsOptions {
    NatsOptions {
        connect_timeout: Duration::from_secs(5),
        client_name: Some("auth test".to_owned()),
        auth,
        tls_ca_file: trusted_ca.then(|| tls_fixture("ca.pem")),
    }
}

/// Serves `echo` on one connection and calls it from another: a request crosses the
/// authenticated, encrypted bus both ways.
async fn request_reply_works(server: &NatsServer, auth: NatsAuth) {
    let serving = bounded(NatsBus::connect(&server.url(), options(auth.clone(), true)))
        .await
        .expect("the serving side connects");
    let calling = bounded(NatsBus::connect(&server.url(), options(auth, true)))
        .await
        .expect("the calling side connects");
    let role = Role::new("auth-echo").unwrap();
    let spec = ServiceSpec {
        endpoints: vec![Endpoint {
            subject: role.subject("echo"),
            queue_group: role.queue_group(),
        }],
        info: RoleInfo {
            role: role.clone(),
            version: "1.0.0".to_owned(),
            kind: RoleKind::Core,
            ops: vec!["echo".to_owned()],
        },
    };
    let handler: Arc<dyn Handler> = Arc::new(
        |_subject: String, request: Message| -> BoxFuture<'static, Message> {
            Box::pin(async move { request })
        },
    );
    let service = bounded(serving.serve(spec, handler)).await.unwrap();
    let reply = bounded(calling.request(
        &role.subject("echo"),
        Message {
            headers: Headers::new(),
            payload: Bytes::from_static(b"over tls"),
        },
        WAIT,
    ))
    .await
    .expect("the request is answered");
    assert_eq!(&reply.payload[..], b"over tls");
    let found = bounded(calling.discover(Duration::from_millis(500)))
        .await
        .unwrap();
    assert!(found.iter().any(|i| i.info.role == role), "{found:?}");
    bounded(service.stop(Duration::from_secs(5))).await;
}

#[tokio::test]
async fn user_and_password_over_tls_carry_requests() {
    let server = tls_server(&["--user", "kgmesh", "--pass", "s3cret-pass"]);
    let auth = NatsAuth::from_secret("kgmesh:s3cret-pass");
    request_reply_works(&server, auth).await;
}

#[tokio::test]
async fn a_token_over_tls_carries_requests() {
    let server = tls_server(&["--auth", "t0ken-for-tests"]);
    request_reply_works(&server, NatsAuth::from_secret("t0ken-for-tests")).await;
}

#[tokio::test]
async fn an_nkey_over_tls_carries_requests() {
    let user = nkeys::KeyPair::new_user();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("nats.conf");
    std::fs::write(
        &config,
        format!(
            "authorization {{ users = [ {{ nkey: {} }} ] }}\n",
            user.public_key()
        ),
    )
    .unwrap();
    let server = tls_server(&["-c", config.to_str().unwrap()]);
    request_reply_works(&server, NatsAuth::NKeySeed(user.seed().unwrap())).await;
}

#[tokio::test]
async fn a_wrong_password_fails_at_once_and_says_why() {
    let server = tls_server(&["--user", "kgmesh", "--pass", "s3cret-pass"]);
    let started = std::time::Instant::now();
    let result = bounded(NatsBus::connect(
        &server.url(),
        options(NatsAuth::from_secret("kgmesh:wrong"), true),
    ))
    .await;
    let error = result
        .expect_err("a wrong password must not connect")
        .to_string();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "took {:?}",
        started.elapsed()
    );
    assert!(
        error.to_lowercase().contains("authorization"),
        "the error should say the login was refused: {error}"
    );
    assert!(!error.contains("wrong"), "the password leaked: {error}");
    // No credentials at all is refused the same way.
    let error = bounded(NatsBus::connect(
        &server.url(),
        options(NatsAuth::None, true),
    ))
    .await
    .expect_err("no credentials must not connect")
    .to_string();
    assert!(error.to_lowercase().contains("authorization"), "{error}");
}

#[tokio::test]
async fn a_server_certificate_no_trusted_authority_signed_is_refused() {
    let server = tls_server(&["--user", "kgmesh", "--pass", "s3cret-pass"]);
    let error = bounded(NatsBus::connect(
        &server.url(),
        options(NatsAuth::from_secret("kgmesh:s3cret-pass"), false),
    ))
    .await
    .expect_err("an unverifiable server must not be trusted")
    .to_string();
    assert!(
        error.to_lowercase().contains("certificate") || error.to_lowercase().contains("tls"),
        "{error}"
    );
}

#[tokio::test]
async fn missing_credential_files_are_named_in_the_error() {
    let server = NatsServer::start();
    let error = bounded(NatsBus::connect(
        &server.url(),
        options(
            NatsAuth::CredsFile("/nonexistent/kgmesh.creds".into()),
            false,
        ),
    ))
    .await
    .expect_err("a missing creds file")
    .to_string();
    assert!(error.contains("/nonexistent/kgmesh.creds"), "{error}");
    let mut missing_ca = options(NatsAuth::None, false);
    missing_ca.tls_ca_file = Some("/nonexistent/ca.pem".into());
    let error = bounded(NatsBus::connect(&server.url(), missing_ca))
        .await
        .expect_err("a missing CA file")
        .to_string();
    assert!(error.contains("/nonexistent/ca.pem"), "{error}");
}
