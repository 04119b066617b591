//! `llm-stub`: a scripted OpenAI-compatible chat server for measuring kgmesh with a
//! model that is broken in a known way (test tooling, not a language model).
//!
//!   llm-stub --reply "lorem ipsum" [--port 8089]   # every prompt gets this text
//!   llm-stub --status 400 [--port 8089]            # every prompt gets this HTTP status
//!   llm-stub --oracle dev.txt [--oracle …] [--oracle-roles kg-linker,judge,summarizer]
//!       # a model that is always right: the KG-Linker gets the gold plan (PathQuestion and
//!       # WC2014 files), the judge and summarizer the gold answers named by the facts
//!       # they are sent (MetaQA files too); every other prompt gets HTTP 400
//!
//! Prints the base URL (for OPENAI_BASE_URL) and serves until killed.

use kgmesh_testkit::llm_stub::{oracle, LlmStub, OracleRoles, Script};

fn main() {
    let mut port = 0u16;
    let mut script: Option<Script> = None;
    let mut oracle_files: Vec<String> = Vec::new();
    let mut oracle_roles = OracleRoles::ALL;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args
            .next()
            .unwrap_or_else(|| usage(&format!("{arg} needs a value")));
        match arg.as_str() {
            "--port" => {
                port = value
                    .parse()
                    .unwrap_or_else(|_| usage("--port takes a number"))
            }
            "--reply" => script = Some(Script::text(&value)),
            "--status" => {
                let status = value
                    .parse()
                    .ok()
                    .filter(|s| (100..600).contains(s))
                    .unwrap_or_else(|| usage("--status takes an HTTP status"));
                script = Some(Script::status(status));
            }
            "--oracle-roles" => {
                oracle_roles = OracleRoles::parse(&value).unwrap_or_else(|problem| usage(&problem))
            }
            "--oracle" => match std::fs::read_to_string(&value) {
                Ok(text) if !text.lines().any(|line| line.contains('\t')) => {
                    eprintln!("llm-stub: {value} has no `question<TAB>answers` line");
                    std::process::exit(1)
                }
                Ok(text) => oracle_files.push(text),
                Err(error) => {
                    eprintln!("llm-stub: cannot read {value}: {error}");
                    std::process::exit(1)
                }
            },
            other => usage(&format!("unknown argument {other}")),
        }
    }
    if !oracle_files.is_empty() {
        script = Some(oracle(&oracle_files, oracle_roles));
    }
    let script =
        script.unwrap_or_else(|| usage("give --reply TEXT, --status CODE or --oracle FILE"));
    let stub = LlmStub::start_on(port, script).unwrap_or_else(|error| {
        eprintln!("llm-stub: cannot listen on port {port}: {error}");
        std::process::exit(1)
    });
    println!("{}", stub.base_url());
    loop {
        std::thread::park();
    }
}

fn usage(problem: &str) -> ! {
    eprintln!("llm-stub: {problem}\nusage: llm-stub (--reply TEXT | --status CODE | --oracle FILE… [--oracle-roles ROLES]) [--port PORT]");
    std::process::exit(2)
}
