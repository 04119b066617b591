//! `kgmesh agent --role R`: one role as a NATS service. Run several processes of one
//! role and they share its work through the role's queue group; stop one with
//! SIGINT/SIGTERM and it finishes what it was answering before it exits.

use std::{path::PathBuf, sync::Arc, time::Duration};

use anyhow::Context as _;
use kgmesh_agents::{
    cache_manager::persist::{KvPlanStore, SharedPlanStore},
    registry,
    runtime::{AgentDeps, Need, RoleDescriptor, StartOptions},
};
use kgmesh_bus::{Bus, NatsBus};
use kgmesh_stores::GraphStore;

use crate::config::Config;

#[derive(Debug, clap::Args)]
pub struct AgentArgs {
    /// The role to run (`kgmesh agent --role help` lists them).
    #[arg(long)]
    pub role: String,
    /// NATS server URL (default: `bus.nats_url`).
    #[arg(long)]
    pub nats: Option<String>,
    /// A readable name for this instance (e.g. the pod name); shows in logs and replies.
    #[arg(long, env = "KGMESH_INSTANCE_NAME")]
    pub instance_name: Option<String>,
    /// KG file or directory for roles that read the graph (default: `graph.path`, or
    /// the Bolt database of `graph.backend = "bolt"`).
    #[arg(long)]
    pub kg: Option<PathBuf>,
    /// TOML mapping of a property-graph CSV folder given as --kg (overrides
    /// `graph.mapping`).
    #[arg(long, value_name = "FILE")]
    pub mapping: Option<PathBuf>,
    /// The text index the text-retriever role answers from (overrides `text.index`).
    #[arg(long, value_name = "DIR")]
    pub text_index: Option<PathBuf>,
    /// How long to wait for in-flight requests on shutdown.
    #[arg(long, default_value_t = 10_000)]
    pub drain_ms: u64,
}

pub fn run(config: Config, args: AgentArgs) -> anyhow::Result<()> {
    if args.role == "help" {
        // The roles a deployment runs (the smoke-test `echo` role is left out).
        println!("roles (kgmesh agent --role ROLE):");
        for entry in registry::roles().iter().filter(|entry| !entry.smoke_test) {
            println!("  {:<18} {}", entry.name, entry.summary);
        }
        return Ok(());
    }
    // Fail on an unknown role before touching the network.
    let entry = registry::find(&args.role)?;
    // The role's actor needs an actix system; actix-rt's runtime is a tokio runtime
    // with a local task set, on which the NATS client runs as well.
    let system = actix_rt::System::new();
    system.block_on(serve(config, args, entry))
}

async fn serve(
    mut config: Config,
    args: AgentArgs,
    entry: &'static RoleDescriptor,
) -> anyhow::Result<()> {
    if let Some(mapping) = &args.mapping {
        config.graph.mapping = Some(mapping.clone());
    }
    super::ask::use_text_index(&mut config, args.text_index.as_deref())?;
    let url = args
        .nats
        .clone()
        .unwrap_or_else(|| config.bus.nats_url.clone());
    let nats = super::connect_nats(&config, &url, &format!("kgmesh agent {}", entry.name)).await?;
    let nats_client = nats.client().clone();
    let bus: Arc<dyn Bus> = Arc::new(nats);

    let mut deps = config.role_settings(AgentDeps::new(bus.clone()));
    if let Some(graph) = load_graph_if_configured(&config, args.kg.clone()).await? {
        deps = deps.with_graph(graph);
    }
    if let Some(llm) = super::ask::language_model(&config)? {
        deps = deps.with_llm(llm).with_llm_roles(config.llm.roles.clone());
    }
    if let Some(embedder) = super::ask::embedder(&config).await? {
        deps = deps.with_embedder(embedder);
    }
    // Only a role that searches entity-name vectors has them; other roles skip the
    // (possibly long) first fill of an empty index.
    if entry.needs.vectors.is_used() {
        let vectors =
            crate::vectors::vector_index(&config, deps.embedder.as_ref(), deps.graph.as_ref())
                .await?;
        if let Some(vectors) = vectors {
            deps = deps.with_vectors(vectors);
        }
    }
    // Every replica shares one plan cache in JetStream KV.
    match entry.needs.plan_store {
        Need::Unused => {}
        // Without it the role serves as before, from no stored plans (grounded Cypher
        // starts cold).
        Need::Optional => {
            match KvPlanStore::open(nats_client.clone(), &config.cache.kv_bucket).await {
                Ok(store) => deps = deps.with::<SharedPlanStore>(Arc::new(store)),
                Err(error) => tracing::warn!(
                    %error,
                    role = entry.name,
                    bucket = %config.cache.kv_bucket,
                    "no plan cache in JetStream KV: the role starts without stored plans (is JetStream enabled: nats-server -js?)"
                ),
            }
        }
        Need::Required => {
            let store = KvPlanStore::open(nats_client.clone(), &config.cache.kv_bucket)
                .await
                .context(
                    "cannot open the plan cache in JetStream KV (is JetStream enabled: nats-server -js?)",
                )?;
            deps = deps.with::<SharedPlanStore>(Arc::new(store));
        }
    }
    let ready = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let health = match &config.telemetry.metrics_listen {
        Some(listen) => {
            let metrics = super::serve::install_metrics();
            let client = nats_client.clone();
            let bus_up = move || NatsBus::is_connected(&client);
            Some(health_server(listen, ready.clone(), bus_up, metrics)?)
        }
        None => None,
    };
    let spec = (entry.build)(&deps).with_context(|| format!("cannot build role {}", entry.name))?;
    let start = StartOptions {
        instance_name: args.instance_name.clone(),
        max_in_flight: Some(config.bus.max_in_flight),
        workers: match config.bus.agent_workers {
            0 => std::thread::available_parallelism().map_or(1, usize::from),
            workers => workers,
        },
    };
    let handle = kgmesh_agents::runtime::start_role_with(bus, spec, start)
        .await
        .with_context(|| format!("cannot start role {}", entry.name))?;
    tracing::info!(
        role = entry.name,
        instance = handle.instance_id(),
        nats = %url,
        "agent serving; stop with SIGINT or SIGTERM"
    );

    ready.store(true, std::sync::atomic::Ordering::SeqCst);

    shutdown_signal().await?;
    ready.store(false, std::sync::atomic::Ordering::SeqCst);
    tracing::info!(
        role = entry.name,
        "shutting down: draining in-flight requests"
    );
    handle.stop(Duration::from_millis(args.drain_ms)).await;
    if let Some(health) = health {
        health.stop(true).await;
    }
    // The drained requests' spans leave now, before the process exits.
    let _ = tokio::task::spawn_blocking(kgmesh_telemetry::shutdown).await;
    Ok(())
}

/// `/healthz` (the process is up) and `/readyz` (the role serves and the bus connection
/// is up) for orchestrators' probes, and `/metrics` for Prometheus, on
/// `telemetry.metrics_listen`.
fn health_server(
    listen: &str,
    ready: Arc<std::sync::atomic::AtomicBool>,
    bus_up: impl Fn() -> bool + Clone + Send + Sync + 'static,
    metrics: Option<kgmesh_telemetry::metrics::MetricsHandle>,
) -> anyhow::Result<actix_web::dev::ServerHandle> {
    use actix_web::{web, App, HttpResponse, HttpServer};
    let server = HttpServer::new(move || {
        let ready = ready.clone();
        let bus_up = bus_up.clone();
        let metrics = metrics.clone();
        App::new()
            .route(
                "/metrics",
                web::get().to(move || {
                    let rendered = metrics.as_ref().map(|handle| handle.render());
                    async move {
                        match rendered {
                            Some(text) => HttpResponse::Ok()
                                .content_type(kgmesh_telemetry::metrics::CONTENT_TYPE)
                                .body(text),
                            None => HttpResponse::NotFound().body("metrics are off\n"),
                        }
                    }
                }),
            )
            .route(
                "/healthz",
                web::get().to(|| async { HttpResponse::Ok().body("ok\n") }),
            )
            .route(
                "/readyz",
                web::get().to(move || {
                    let serving = ready.load(std::sync::atomic::Ordering::SeqCst);
                    let connected = bus_up();
                    async move {
                        match (serving, connected) {
                            (true, true) => HttpResponse::Ok().body("ready\n"),
                            (false, _) => HttpResponse::ServiceUnavailable().body("not serving\n"),
                            (true, false) => HttpResponse::ServiceUnavailable()
                                .body("not connected to nats-server\n"),
                        }
                    }
                }),
            )
    })
    .workers(1)
    .disable_signals()
    .bind(listen)
    .with_context(|| format!("cannot listen on telemetry.metrics_listen = {listen}"))?
    .run();
    let handle = server.handle();
    actix_rt::spawn(server);
    Ok(handle)
}

async fn load_graph_if_configured(
    config: &Config,
    kg: Option<PathBuf>,
) -> anyhow::Result<Option<Arc<dyn GraphStore>>> {
    if kg.is_none()
        && config.graph.path.is_none()
        && config.graph.backend != crate::config::GraphBackend::Bolt
    {
        return Ok(None);
    }
    let source = super::ask::GraphSource::from_args(config, kg, None)?;
    Ok(Some(source.open(config).await?))
}

async fn shutdown_signal() -> anyhow::Result<()> {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("cannot listen for SIGTERM")?;
    tokio::select! {
        interrupted = tokio::signal::ctrl_c() => interrupted.context("cannot listen for SIGINT")?,
        _ = terminate.recv() => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// The chart adds every role of its `roles` it does not know as built in to
    /// `bus.allowed_roles`. A name it takes as built in that kgmesh does not register
    /// would leave an agent of that name refused by the coordinator; a registered role
    /// the list lacks is only allowed twice over (the coordinator allows every
    /// registered role), so a new role needs no change to the chart.
    #[test]
    fn the_charts_built_in_roles_are_registered_ones() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../helm/kgmesh/templates/_helpers.tpl");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
        let line = text
            .lines()
            .find(|line| line.contains("$builtIn := list"))
            .expect("the chart's $builtIn list");
        let chart: BTreeSet<&str> = line.split('"').skip(1).step_by(2).collect();
        let registered: BTreeSet<&str> = registry::names().into_iter().collect();
        let unknown: Vec<&&str> = chart.difference(&registered).collect();
        assert!(
            unknown.is_empty(),
            "$builtIn in helm/kgmesh/templates/_helpers.tpl names roles kgmesh does not register: {unknown:?}"
        );
        assert!(!chart.is_empty(), "the chart's $builtIn list is empty");
    }
}
