//! `kgmesh`: answers natural-language questions over your knowledge graph.
//!
//! One binary, many jobs: `ask` (embedded, every role in-process), `serve` (coordinator
//! and HTTP API), `agent --role R` (one role as a NATS service), `load`, `eval`,
//! `cache warm`, `cache feedback`, `config check`, `config reference`.

mod cmd;
mod config;
mod config_reference;
mod vectors;

use std::{path::PathBuf, process::ExitCode};

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "kgmesh",
    version,
    about = "Answers natural-language questions over your knowledge graph"
)]
struct Cli {
    /// TOML configuration file (defaults → file → KGMESH__SECTION__KEY environment).
    #[arg(long, global = true, env = "KGMESH_CONFIG")]
    config: Option<PathBuf>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Answer one question over a KG, with every role in this process. Exit status: 0
    /// with an answer, 3 when the reply is "I don't know", 1 on an error.
    Ask(cmd::ask::AskArgs),
    /// Run one read-only openCypher query against the KG (file, sample or Bolt database)
    /// and print the rows; a refused query says why and how to repair it.
    Cypher(cmd::cypher::CypherArgs),
    /// Run the coordinator and its HTTP API.
    Serve(cmd::serve::ServeArgs),
    /// Run one agent role as a NATS service (run several to share the load).
    Agent(cmd::agent::AgentArgs),
    /// Load a KG into the embedded store (snapshot) or a Bolt database.
    Load(cmd::load::LoadArgs),
    /// Index documents for the text retriever: passages, keywords, PageRank and, with a
    /// model, a KG skeleton read from the most central chunks.
    Index(cmd::index::IndexArgs),
    /// Evaluate answers against a question set.
    Eval(cmd::eval::EvalArgs),
    /// Pre-warm the plan cache (star schemas, verified QA pairs), apply feedback on
    /// answers to it, or inspect it.
    Cache(cmd::cache::CacheArgs),
    /// Inspect the configuration.
    Config(cmd::config::ConfigArgs),
    /// Train the question reader's weights from QA pairs of many domains.
    Reader(cmd::reader::ReaderArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // `kgmesh ask … | head` closes stdout early: a command that prints its results ends
    // quietly then, as other command-line tools do, rather than panic on the next write.
    // (Rust ignores SIGPIPE; this restores the default action. Not for the long-running
    // `serve` and `agent`, whose sockets must never kill the process.)
    if !matches!(cli.command, Command::Serve(_) | Command::Agent(_)) {
        // SAFETY: no other thread exists yet; it only sets one signal's disposition.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    let mut config = match config::Config::load(cli.config.as_deref()) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("kgmesh: {error}");
            return ExitCode::from(2);
        }
    };
    // `embedder.kind = "auto"` becomes MiniLM or none here, once, so that every role
    // and report sees (and says) the same; `kgmesh config` shows the file as written.
    // (`Config::load` has validated it: a vectors backend with `auto` and no MiniLM files
    // is refused there.)
    let embedder_chosen =
        (!matches!(cli.command, Command::Config(_))).then(|| config.embedder.resolve_auto());
    // Interactive commands print their results on stdout and only warnings on stderr;
    // long-running services also log what they start and stop.
    let interactive = !matches!(cli.command, Command::Serve(_) | Command::Agent(_));
    let service = match &cli.command {
        Command::Serve(_) => "kgmesh-serve".to_owned(),
        Command::Agent(args) => format!("kgmesh-{}", args.role),
        _ => "kgmesh".to_owned(),
    };
    // Dropped when main returns: flushes the spans still queued.
    let _telemetry = cmd::init_logging(&config, interactive, &service);
    if let Some(chosen) = embedder_chosen {
        tracing::info!("embedder: {chosen}");
    }
    if let Err(error) = cmd::install_reader(&config) {
        eprintln!("kgmesh: {error:#}");
        return ExitCode::from(2);
    }
    let result = match cli.command {
        Command::Ask(args) => cmd::ask::run(config, args),
        Command::Cypher(args) => cmd::cypher::run(config, args),
        Command::Serve(args) => cmd::serve::run(config, args),
        Command::Agent(args) => cmd::agent::run(config, args),
        Command::Load(args) => cmd::load::run(config, args),
        Command::Index(args) => cmd::index::run(config, args),
        Command::Eval(args) => cmd::eval::run(config, args),
        Command::Cache(args) => cmd::cache::run(config, args),
        Command::Config(args) => cmd::config::run(config, args),
        Command::Reader(args) => cmd::reader::run(config, args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The reply is printed already; only the exit status says "I don't know".
        Err(error) if error.is::<cmd::ask::NoAnswer>() => ExitCode::from(cmd::ask::NO_ANSWER_EXIT),
        Err(error) if error.is::<cmd::ask::Withheld>() => {
            ExitCode::from(cmd::ask::LOW_CONFIDENCE_EXIT)
        }
        Err(error) => {
            eprintln!("kgmesh: {error:#}");
            ExitCode::FAILURE
        }
    }
}
