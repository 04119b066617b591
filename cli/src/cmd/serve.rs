//! `kgmesh serve`: the coordinator, its HTTP API (`POST /v1/ask`, `POST /v1/feedback`,
//! `POST /v1/cypher`, `GET /v1/schema`, `GET /healthz`, `GET /readyz`, `GET /v1/agents`,
//! `GET /metrics`) and the web console at `/` (`http.console`).
//!
//! With `--nats URL` (or `bus.kind = "nats"`) the roles are whatever `kgmesh agent`
//! processes announce themselves on that NATS; with `--embedded` every role runs in
//! this process on the in-process bus. The coordinator cannot tell the two apart.
//!
//! Who may call the API is the tokens' (`http.tokens_file`, `http.tokens_env`,
//! `http.tokens`; see docs/security.md). A listener reachable beyond this machine with
//! no tokens is refused unless the API is declared open (`http.open`, `--open`). With
//! `http.tls_cert_file` and `http.tls_key_file` the API speaks HTTPS only.

use std::{
    net::ToSocketAddrs,
    path::{Path, PathBuf},
    sync::Arc,
};

use actix_web::{App, HttpServer};
use anyhow::Context as _;
use kgmesh_bus::{Bus, LocalBus};
use kgmesh_coordinator::{
    auth::{Access, TokenEntry, TokensDocument, OPEN_SETTING, TOKEN_SETTINGS},
    console::ConsoleSettings,
    http::{routes, ApiLimits, ApiState, RenderMetrics},
    tls::ReloadingCert,
    Coordinator,
};

use super::ask::{coordinator_config, EmbeddedRoles, GraphSource};
use crate::config::{BusKind, Config, GraphBackend};

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// NATS server the roles are on (overrides `bus.nats_url` and selects NATS).
    #[arg(long, conflicts_with = "embedded")]
    pub nats: Option<String>,
    /// Run every role in this process instead of using NATS.
    #[arg(long)]
    pub embedded: bool,
    /// KG for `--embedded` (default: the Bolt database of `graph.backend = "bolt"`,
    /// else `graph.path`, else the bundled sample).
    #[arg(long)]
    pub kg: Option<PathBuf>,
    /// TOML mapping of a property-graph CSV folder given as --kg (overrides
    /// `graph.mapping`; default: `kgmesh-mapping.toml` in the folder).
    #[arg(long, value_name = "FILE")]
    pub mapping: Option<PathBuf>,
    /// A text index (`kgmesh index --text FILES --into embedded:DIR`) the text retriever
    /// answers from (overrides `text.index`).
    #[arg(long, value_name = "DIR")]
    pub text_index: Option<PathBuf>,
    /// Address to listen on (overrides `http.listen`); port 0 picks a free port, printed
    /// on stdout as `listening on http://ADDR`.
    #[arg(long)]
    pub listen: Option<String>,
    /// HTTP worker threads (default: one per CPU).
    #[arg(long)]
    pub workers: Option<usize>,
    /// Declare the API open (sets `http.open`): anonymous questions even beyond this
    /// machine without tokens; `cypher` and `feedback` stay off without a token.
    #[arg(long)]
    pub open: bool,
}

pub fn run(config: Config, args: ServeArgs) -> anyhow::Result<()> {
    actix_web::rt::System::new().block_on(serve(config, args))
}

async fn serve(mut config: Config, args: ServeArgs) -> anyhow::Result<()> {
    let listen = args
        .listen
        .clone()
        .unwrap_or_else(|| config.http.listen.clone());
    // Who may call the API, and whether this listener may serve it, before anything starts.
    let access = api_access(&config, args.open)?;
    refuse_unguarded(&listen, &access)?;
    let tls =
        match (&config.http.tls_cert_file, &config.http.tls_key_file) {
            (Some(cert), Some(key)) => Some(ReloadingCert::new(cert, key).map_err(|error| {
                anyhow::anyhow!("http.tls_cert_file / http.tls_key_file: {error}")
            })?),
            _ => None,
        };
    // Before any role starts, so that nothing they count is lost.
    let metrics = install_metrics();
    let use_nats = args.nats.is_some() || (!args.embedded && config.bus.kind == BusKind::Nats);
    if use_nats {
        let given: Vec<&str> = [
            (args.kg.is_some(), "--kg"),
            (args.mapping.is_some(), "--mapping"),
            (args.text_index.is_some(), "--text-index"),
        ]
        .into_iter()
        .filter_map(|(given, flag)| given.then_some(flag))
        .collect();
        anyhow::ensure!(
            given.is_empty(),
            "{} {} for --embedded: on NATS the agents hold the graph and the documents \
             (`kgmesh agent --role R --kg KG --mapping FILE --text-index DIR`)",
            given.join(", "),
            if given.len() == 1 { "is" } else { "are" }
        );
    }
    let mut embedded = None;
    let mut settings = coordinator_config(&config);
    let bus: Arc<dyn Bus> = if use_nats {
        let url = args
            .nats
            .clone()
            .unwrap_or_else(|| config.bus.nats_url.clone());
        let bus = super::connect_nats(&config, &url, "kgmesh serve").await?;
        tracing::info!(url = %kgmesh_bus::redacted_url(&url), "coordinator on NATS");
        // The agents answer from the graph the shared configuration names, if it does.
        if config.graph.path.is_some() || config.graph.backend == GraphBackend::Bolt {
            settings.graph = Some(GraphSource::from_args(&config, None, None)?.describe());
        }
        Arc::new(bus)
    } else {
        if let Some(mapping) = &args.mapping {
            config.graph.mapping = Some(mapping.clone());
        }
        super::ask::use_text_index(&mut config, args.text_index.as_deref())?;
        let bus: Arc<dyn Bus> = Arc::new(LocalBus::new());
        let source = GraphSource::from_args(&config, args.kg.clone(), None)?;
        let roles = EmbeddedRoles::start(&config, bus.clone(), &source).await?;
        settings.graph = Some(source.describe());
        tracing::info!(roles = ?roles.role_names(), "every role in this process");
        embedded = Some(roles);
        bus
    };

    let console = config.http.console.then(|| ConsoleSettings {
        jaeger_ui_url: config.telemetry.jaeger_ui_url.clone(),
        max_question_chars: settings.max_question_chars,
        graph: settings.graph.clone(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
    });
    let coordinator = Arc::new(Coordinator::new(bus, settings));
    let limits = ApiLimits {
        max_body_bytes: config.http.max_body_bytes,
        max_concurrent_questions: config.http.max_concurrent_questions,
        ..ApiLimits::default()
    };
    let render = metrics.map(|handle| Arc::new(move || handle.render()) as RenderMetrics);
    if access.has_tokens() {
        tracing::info!(tokens = ?access.names(), open = access.is_open(), "API tokens");
    } else if access.is_open() {
        tracing::warn!(
            "the API is open ({OPEN_SETTING}): anyone who reaches it may ask; cypher and \
             feedback are off until tokens are configured"
        );
    } else {
        tracing::info!(
            "no API tokens: questions are anonymous, cypher and feedback are off ({TOKEN_SETTINGS})"
        );
    }
    let access = access.with_public_metrics(config.http.metrics_public);
    let state = ApiState::with_access(coordinator, limits, render, console, access);
    let mut server = HttpServer::new(move || App::new().configure(routes(state.clone())))
        .shutdown_timeout(10)
        .disable_signals();
    if let Some(workers) = args.workers {
        server = server.workers(workers.max(1));
    }
    let (server, scheme) = match tls {
        Some(cert) => {
            let tls_config = Arc::new(cert)
                .server_config()
                .map_err(|error| anyhow::anyhow!(error))?;
            let server = server
                .bind_rustls_0_23(&listen, tls_config)
                .with_context(|| format!("cannot listen on {listen}"))?;
            (server, "https")
        }
        None => {
            let server = server
                .bind(&listen)
                .with_context(|| format!("cannot listen on {listen}"))?;
            (server, "http")
        }
    };
    for address in server.addrs() {
        // Tests and scripts read this line to find a port chosen by the OS.
        println!("listening on {scheme}://{address}");
    }
    let server = server.run();
    let handle = server.handle();
    let stopper = actix_web::rt::spawn(async move {
        shutdown_signal().await;
        tracing::info!("shutting down");
        handle.stop(true).await;
    });
    let served = server.await.context("the HTTP server failed");
    stopper.abort();
    if let Some(roles) = embedded {
        roles.stop().await;
    }
    // The last questions' spans leave now, before the process exits.
    let _ = tokio::task::spawn_blocking(kgmesh_telemetry::shutdown).await;
    served
}

/// The API's tokens from the configuration, `http.tokens_file` and `http.tokens_env`,
/// checked together (names and tokens unique across them).
pub(crate) fn api_access(config: &Config, open_flag: bool) -> anyhow::Result<Access> {
    let mut entries: Vec<TokenEntry> = config.http.tokens.clone();
    if let Some(path) = &config.http.tokens_file {
        entries.extend(read_tokens_file(path)?);
    }
    if let Some(name) = &config.http.tokens_env {
        let text = std::env::var(name).map_err(|_| {
            anyhow::anyhow!(
                "http.tokens_env names the environment variable {name}, which is not set (or \
                 not UTF-8)"
            )
        })?;
        entries.extend(parse_tokens(&text).with_context(|| {
            format!("the environment variable {name} (http.tokens_env) holds no tokens document")
        })?);
    }
    let open = config.http.open || open_flag;
    Access::new(&entries, config.token_limits(), open)
        .map_err(|problems| anyhow::anyhow!("invalid API tokens:\n  - {}", problems.join("\n  - ")))
}

fn read_tokens_file(path: &Path) -> anyhow::Result<Vec<TokenEntry>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read http.tokens_file {}", path.display()))?;
    parse_tokens(&text).with_context(|| format!("http.tokens_file {}", path.display()))
}

/// A tokens document: TOML, `[[tokens]]` tables.
fn parse_tokens(text: &str) -> anyhow::Result<Vec<TokenEntry>> {
    let document: TokensDocument = toml::from_str(text).map_err(|error| {
        anyhow::anyhow!(
            "not a tokens document ([[tokens]] tables of name, sha256 or token, scopes): {error}"
        )
    })?;
    Ok(document.tokens)
}

/// No trust by source address: a listener reachable beyond this machine needs tokens,
/// or the API declared open.
fn refuse_unguarded(listen: &str, access: &Access) -> anyhow::Result<()> {
    if access.has_tokens() || access.is_open() {
        return Ok(());
    }
    // An address that does not resolve fails at bind, with its own message.
    let Ok(addresses) = listen.to_socket_addrs() else {
        return Ok(());
    };
    if let Some(address) = addresses.into_iter().find(|a| !a.ip().is_loopback()) {
        anyhow::bail!(
            "refusing to serve the HTTP API on {listen} ({}) with no API tokens: anyone who \
             can reach it could use it. Configure tokens ({TOKEN_SETTINGS}; see \
             docs/security.md), listen on loopback (http.listen = \"127.0.0.1:8080\"), or \
             declare the API open with {OPEN_SETTING} = true (serve --open): anonymous \
             questions only, cypher and feedback off",
            address.ip()
        );
    }
    Ok(())
}

/// Installs this process's Prometheus recorder for `GET /metrics`. Without one the
/// process still serves; it just exports no metrics.
pub(crate) fn install_metrics() -> Option<kgmesh_telemetry::metrics::MetricsHandle> {
    match kgmesh_telemetry::metrics::install() {
        Ok(handle) => Some(handle),
        Err(error) => {
            tracing::warn!(%error, "metrics are off");
            None
        }
    }
}

/// Ctrl-C or SIGTERM (what Kubernetes sends).
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(signal) => signal,
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                    return;
                }
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
