//! `kgmesh serve`: the coordinator, its HTTP API (`POST /v1/ask`, `POST /v1/feedback`,
//! `POST /v1/cypher`, `GET /v1/schema`, `GET /healthz`, `GET /readyz`, `GET /v1/agents`,
//! `GET /metrics`) and the web console at `/` (`http.console`).
//!
//! With `--nats URL` (or `bus.kind = "nats"`) the roles are whatever `kgmesh agent`
//! processes announce themselves on that NATS; with `--embedded` every role runs in
//! this process on the in-process bus. The coordinator cannot tell the two apart.

use std::{path::PathBuf, sync::Arc};

use actix_web::{App, HttpServer};
use anyhow::Context as _;
use kgmesh_bus::{Bus, LocalBus};
use kgmesh_coordinator::{
    console::ConsoleSettings,
    http::{routes, ApiLimits, ApiState, RenderMetrics},
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
}

pub fn run(config: Config, args: ServeArgs) -> anyhow::Result<()> {
    actix_web::rt::System::new().block_on(serve(config, args))
}

async fn serve(mut config: Config, args: ServeArgs) -> anyhow::Result<()> {
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
    let state = ApiState::with_console(coordinator, limits, render, console);
    let listen = args
        .listen
        .clone()
        .unwrap_or_else(|| config.http.listen.clone());
    let mut server = HttpServer::new(move || App::new().configure(routes(state.clone())))
        .shutdown_timeout(10)
        .disable_signals();
    if let Some(workers) = args.workers {
        server = server.workers(workers.max(1));
    }
    let server = server
        .bind(&listen)
        .with_context(|| format!("cannot listen on {listen}"))?;
    for address in server.addrs() {
        // Tests and scripts read this line to find a port chosen by the OS.
        println!("listening on http://{address}");
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
