//! A kgmesh retriever built outside kgmesh's role registry, with the kgmesh crates as a
//! library: a [`RoleSpec`] with one `retrieve` handler, started on NATS by
//! [`start_role`]. The runtime does the rest (decoding in either wire format,
//! deadlines, panics, cost, discovery, graceful shutdown), so the handler is only what
//! the retriever knows.
//!
//! It answers from a TSV file of `entity TAB relation TAB value` facts the graph does
//! not hold (film taglines): for every question entity the coordinator linked, the
//! facts about it whose relation words the question uses, as a one-column query result
//! `n.<relation>` that the summarizer reads as the entity's property.
//!
//! ```text
//! cargo run -p kgmesh-example-rust-retriever -- --nats nats://127.0.0.1:4222 \
//!     --facts examples/rust-retriever/taglines.tsv
//! KGMESH__BUS__ALLOWED_ROLES='["tagline-retriever"]' kgmesh serve --nats nats://127.0.0.1:4222
//! ```

use std::{sync::Arc, time::Duration};

use anyhow::{bail, Context as _};
use kgmesh_agents::runtime::{start_role, CallContext, RoleSpec};
use kgmesh_bus::{Bus, NatsBus, NatsOptions};
use kgmesh_models::lexical::text::words;
use kgmesh_schemas::{
    graph::{Rows, Value},
    messages::{
        context::{Evidence, EvidenceItem},
        retrieve::{RetrieveReply, RetrieveRequest},
    },
    AgentError, Role, RoleKind,
};

struct Fact {
    entity: String,
    relation: String,
    value: String,
}

fn read_facts(path: &str) -> anyhow::Result<Vec<Fact>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {path}"))?;
    let mut facts = Vec::new();
    for (number, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let fields: Vec<&str> = line.split('\t').map(str::trim).collect();
        let [entity, relation, value] = fields[..] else {
            bail!(
                "{path}:{}: expected entity TAB relation TAB value",
                number + 1
            );
        };
        facts.push(Fact {
            entity: entity.to_owned(),
            relation: relation.to_owned(),
            value: value.to_owned(),
        });
    }
    Ok(facts)
}

/// The evidence `facts` hold for `request`: facts about a linked entity whose relation
/// words the question uses.
fn retrieve(role: &str, facts: &[Fact], request: &RetrieveRequest) -> RetrieveReply {
    let asked = words(&request.question);
    let mut evidence = Vec::new();
    for linked in &request.entities {
        for fact in facts
            .iter()
            .filter(|f| f.entity.eq_ignore_ascii_case(&linked.entity.name))
        {
            let relation_words = words(&fact.relation);
            if relation_words.is_empty() || !relation_words.iter().all(|w| asked.contains(w)) {
                continue;
            }
            evidence.push(Evidence {
                source: role.to_owned(),
                score: 1.0,
                item: EvidenceItem::Query {
                    cypher: format!("facts file: {} {}", fact.entity, fact.relation),
                    rows: Rows {
                        columns: vec![format!("n.{}", fact.relation)],
                        rows: vec![vec![Value::String(fact.value.clone())]],
                        truncated: false,
                    },
                    grounded: false,
                },
            });
        }
    }
    evidence.truncate(request.max_evidence.max(1) as usize);
    RetrieveReply {
        evidence,
        ..RetrieveReply::default()
    }
}

fn spec(role: Role, facts: Arc<Vec<Fact>>) -> RoleSpec {
    RoleSpec::new(role.clone(), RoleKind::Retriever).op(
        move |ctx: CallContext, request: RetrieveRequest| {
            let (role, facts) = (role.clone(), facts.clone());
            async move {
                ctx.check_deadline()?;
                if request.question.trim().is_empty() {
                    return Err(AgentError::BadRequest {
                        detail: "empty question".into(),
                    });
                }
                Ok(retrieve(role.as_str(), &facts, &request))
            }
        },
    )
}

fn argument(args: &[String], flag: &str) -> Option<String> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|at| args.get(at + 1).cloned())
}

async fn serve(args: Vec<String>) -> anyhow::Result<()> {
    let url = argument(&args, "--nats").unwrap_or_else(|| "nats://127.0.0.1:4222".to_owned());
    let Some(path) = argument(&args, "--facts") else {
        bail!("usage: tagline-retriever --facts FILE [--nats URL] [--role NAME]");
    };
    let name = argument(&args, "--role").unwrap_or_else(|| "tagline-retriever".to_owned());
    let role = Role::new(&name).map_err(anyhow::Error::msg)?;
    let facts = Arc::new(read_facts(&path)?);
    let options = NatsOptions {
        client_name: Some(format!("kgmesh agent {name} (example)")),
        ..NatsOptions::default()
    };
    let bus: Arc<dyn Bus> = Arc::new(
        NatsBus::connect(&url, options)
            .await
            .with_context(|| format!("is nats-server running at {url}?"))?,
    );
    let count = facts.len();
    let handle = start_role(bus, spec(role, facts)).await?;
    println!("{name} serving {count} facts on {url}");
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
    handle.stop(Duration::from_secs(5)).await;
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    actix_rt::System::new().block_on(serve(args))
}
