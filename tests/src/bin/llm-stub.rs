//! `llm-stub`: a scripted OpenAI-compatible chat server for measuring kgmesh with a
//! model that is broken in a known way (test tooling, not a language model).
//!
//!   llm-stub --reply "lorem ipsum" [--port 8089]   # every prompt gets this text
//!   llm-stub --status 400 [--port 8089]            # every prompt gets this HTTP status
//!   llm-stub --oracle-irn dev.txt [--oracle-irn …]  # KG-Linker prompts get the gold plan
//!                                                  # (PathQuestion/WC2014 IRN files),
//!                                                  # every other prompt HTTP 400
//!
//! Prints the base URL (for OPENAI_BASE_URL) and serves until killed.

use kgmesh_testkit::llm_stub::{irn_oracle, LlmStub, Script};

fn main() {
    let mut port = 0u16;
    let mut script: Option<Script> = None;
    let mut oracle_files: Vec<String> = Vec::new();
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
            "--oracle-irn" => match std::fs::read_to_string(&value) {
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
        script = Some(irn_oracle(&oracle_files));
    }
    let script =
        script.unwrap_or_else(|| usage("give --reply TEXT, --status CODE or --oracle-irn FILE"));
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
    eprintln!("llm-stub: {problem}\nusage: llm-stub (--reply TEXT | --status CODE | --oracle-irn FILE…) [--port PORT]");
    std::process::exit(2)
}
