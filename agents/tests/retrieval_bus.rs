//! The retrieval roles through the bus: started from the registry with a real embedded
//! graph, called with typed requests, on the in-process bus and on a real nats-server.

use std::{sync::Arc, time::Duration};

use kgmesh_agents::{
    registry,
    runtime::{AgentDeps, Client, StartOptions},
    settings::RetrievalSettings,
};
use kgmesh_bus::{Bus, LocalBus, NatsBus, NatsOptions};
use kgmesh_schemas::{
    graph::{Direction, Entity, Metapath, RelationStep, ScoredEntity},
    messages::{
        context::EvidenceItem,
        entity_linker::{LinkMode, LinkRequest},
        kg_linker::KgLinkRequest,
        path_follower::{ExpandRequest, Expansion},
        retrieve::RetrieveRequest,
    },
    AgentError, Budget, Meta, QuestionId, Role,
};
use kgmesh_stores::{embedded::GraphBuilder, EmbeddedGraph, GraphStore};
use kgmesh_testkit::nats::NatsServer;

const MOVIES: &[(&str, &str, &str)] = &[
    ("Heat", "directed_by", "Michael Mann"),
    ("Heat", "starred_actors", "Al Pacino"),
    ("Heat", "release_year", "1995"),
    ("Collateral", "directed_by", "Michael Mann"),
    ("Collateral", "starred_actors", "Tom Cruise"),
    ("Collateral", "release_year", "2004"),
    ("Top Gun", "starred_actors", "Tom Cruise"),
];

fn graph() -> EmbeddedGraph {
    let mut builder = GraphBuilder::new();
    for (head, relation, tail) in MOVIES {
        let head = builder.node(head);
        let tail = builder.node(tail);
        builder.add_edge(head, relation, tail);
    }
    builder.finish()
}

async fn bounded<F: std::future::Future>(future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(30), future)
        .await
        .expect("bus call did not finish within 30 s")
}

fn meta() -> Meta {
    Meta::new(QuestionId::new_random(), 1, Budget::default())
}

/// A first-round KG-Linker request: no context, hints or examples yet.
fn link_request(question: &str) -> KgLinkRequest {
    KgLinkRequest {
        question: question.to_owned(),
        context: Default::default(),
        repair_hints: Vec::new(),
        examples: Vec::new(),
        cues: Vec::new(),
    }
}

/// A retrieve request carrying only the question, as a retriever that reads the
/// question itself (text, grounded Cypher) gets it in the first round.
fn question_only(question: &str, max_evidence: u32) -> RetrieveRequest {
    RetrieveRequest {
        question: question.to_owned(),
        entities: Vec::new(),
        draft_answers: Vec::new(),
        metapaths: Vec::new(),
        cypher: Vec::new(),
        max_evidence,
        cues: Vec::new(),
    }
}

fn role(name: &'static str) -> Role {
    Role::well_known(name)
}

async fn retrieval_contract(bus: Arc<dyn Bus>) {
    let store: Arc<dyn GraphStore> = Arc::new(graph());
    let deps = AgentDeps::new(bus.clone()).with_graph(store.clone());
    let mut handles = Vec::new();
    for name in [
        Role::KG_LINKER,
        Role::ENTITY_LINKER,
        Role::PATH_FOLLOWER,
        Role::QUERY_EXECUTOR,
        Role::AGENTIC_TRAVERSER,
        Role::SCORING_RETRIEVER,
    ] {
        handles.push(
            bounded(registry::start(name, &deps, StartOptions::default()))
                .await
                .unwrap(),
        );
    }
    let client = Client::new(bus.clone()).with_timeout(Duration::from_secs(10));
    let question = "when were the films directed by Michael Mann released";

    // kg-linker, LLM-free: links the entity and proposes the right relation path first.
    let (linked, _) =
        bounded(client.call(&role(Role::KG_LINKER), &meta(), &link_request(question)))
            .await
            .unwrap();
    assert_eq!(linked.linked[0].entity.name, "Michael Mann");
    assert_eq!(
        linked.metapaths[0].steps,
        vec![
            RelationStep {
                relation: "directed_by".into(),
                direction: Direction::In
            },
            RelationStep {
                relation: "release_year".into(),
                direction: Direction::Out
            },
        ]
    );

    // entity-linker: a misspelt batch, in order.
    let (links, cost) = bounded(client.call(
        &role(Role::ENTITY_LINKER),
        &meta(),
        &LinkRequest {
            mentions: vec!["Micheal Mann".into(), "Colateral".into()],
            top_m: 2,
            mode: LinkMode::Both,
        },
    ))
    .await
    .unwrap();
    assert_eq!(links.links[0].candidates[0].entity.name, "Michael Mann");
    assert_eq!(links.links[1].candidates[0].entity.name, "Collateral");
    assert_eq!(cost.bus_messages, 1);

    let request = RetrieveRequest {
        question: question.to_owned(),
        entities: linked.linked.clone(),
        draft_answers: Vec::new(),
        metapaths: linked.metapaths.clone(),
        cypher: vec!["MATCH (n) DETACH DELETE n".to_owned()],
        max_evidence: 50,
        cues: Vec::new(),
    };
    let years_in = |reply: &kgmesh_schemas::messages::retrieve::RetrieveReply| {
        let mut names: Vec<String> = reply
            .evidence
            .iter()
            .flat_map(|e| match &e.item {
                EvidenceItem::Path(p) => vec![p.end().name.clone()],
                EvidenceItem::Triple(t) => vec![t.head.name.clone(), t.tail.name.clone()],
                EvidenceItem::Query { .. } | EvidenceItem::Excerpt(_) => Vec::new(),
            })
            .filter(|n| n == "1995" || n == "2004")
            .collect();
        names.sort();
        names.dedup();
        names
    };
    for retriever in [
        Role::PATH_FOLLOWER,
        Role::AGENTIC_TRAVERSER,
        Role::SCORING_RETRIEVER,
    ] {
        let (reply, _) = bounded(client.call(&role(retriever), &meta(), &request))
            .await
            .unwrap();
        assert_eq!(
            years_in(&reply),
            vec!["1995", "2004"],
            "{retriever}: {reply:?}"
        );
    }
    // query-executor: a write is refused with a repair hint, never evidence.
    let (reply, _) = bounded(client.call(&role(Role::QUERY_EXECUTOR), &meta(), &request))
        .await
        .unwrap();
    assert!(reply.evidence.is_empty());
    assert_eq!(reply.repair_hints.len(), 1, "{reply:?}");

    // path-follower σ_breadth: at most k_degree neighbours.
    let heat = resolve(&store, "Heat").await;
    let (expanded, _) = bounded(client.call(
        &role(Role::PATH_FOLLOWER),
        &meta(),
        &ExpandRequest {
            question: "when was Heat released".into(),
            frontier: vec![heat],
            expansion: Expansion::Breadth { k_degree: 1 },
        },
    ))
    .await
    .unwrap();
    assert_eq!(expanded.evidence.len(), 1);
    assert_eq!(expanded.frontier[0].name, "1995");

    // Budgets are re-checked in the agent: no depth expansions left is a typed error.
    let mut exhausted = meta();
    exhausted.budget.depth_expansions = 0;
    let refused = bounded(client.call(
        &role(Role::PATH_FOLLOWER),
        &exhausted,
        &ExpandRequest {
            question: String::new(),
            frontier: vec![resolve(&store, "Heat").await],
            expansion: Expansion::Depth {
                relation: "release_year".into(),
                direction: Direction::Out,
            },
        },
    ))
    .await
    .unwrap_err();
    assert!(
        matches!(
            refused.to_agent_error("path-follower"),
            AgentError::BudgetExhausted { .. }
        ),
        "{refused:?}"
    );

    // Metapaths longer than the depth budget are cut, never followed past it.
    let mut shallow = meta();
    shallow.budget.depth = kgmesh_schemas::budget::Depth::new(1).unwrap();
    let deep = RetrieveRequest {
        metapaths: vec![Metapath {
            steps: linked.metapaths[0].steps.clone(),
        }],
        entities: vec![ScoredEntity {
            entity: resolve(&store, "Michael Mann").await,
            score: 1.0,
        }],
        ..request.clone()
    };
    let (reply, _) = bounded(client.call(&role(Role::PATH_FOLLOWER), &shallow, &deep))
        .await
        .unwrap();
    assert!(reply.evidence.iter().all(|e| match &e.item {
        EvidenceItem::Path(p) => p.len() <= 1,
        _ => true,
    }));

    for handle in handles {
        bounded(handle.stop(Duration::from_secs(5))).await;
    }
}

async fn resolve(store: &Arc<dyn GraphStore>, name: &str) -> Entity {
    store
        .resolve(&[name.to_owned()], kgmesh_stores::NameMatch::Exact)
        .await
        .unwrap()
        .remove(0)
        .remove(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retrieval_roles_on_the_local_bus() {
    retrieval_contract(Arc::new(LocalBus::new())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retrieval_roles_on_nats() {
    let server = NatsServer::start();
    let bus = bounded(NatsBus::connect(&server.url(), NatsOptions::default()))
        .await
        .unwrap();
    retrieval_contract(Arc::new(bus)).await;
}

/// `AgentDeps::retrieval` (the `[retrieval]` configuration section) sizes what the
/// KG-Linker and the scoring retriever return.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retrieval_settings_size_what_the_roles_return() {
    let question = "when were the films directed by Michael Mann released";
    let mut sizes = Vec::new();
    for settings in [
        RetrievalSettings::default(),
        RetrievalSettings {
            top_metapaths: 1,
            scoring_top_k: 2,
            ..Default::default()
        },
    ] {
        let bus: Arc<dyn Bus> = Arc::new(LocalBus::new());
        let store: Arc<dyn GraphStore> = Arc::new(graph());
        let deps = AgentDeps::new(bus.clone()).with_graph(store).with(settings);
        let mut handles = Vec::new();
        for name in [Role::KG_LINKER, Role::SCORING_RETRIEVER] {
            handles.push(
                bounded(registry::start(name, &deps, StartOptions::default()))
                    .await
                    .unwrap(),
            );
        }
        let client = Client::new(bus.clone()).with_timeout(Duration::from_secs(10));
        let (linked, _) =
            bounded(client.call(&role(Role::KG_LINKER), &meta(), &link_request(question)))
                .await
                .unwrap();
        let request = RetrieveRequest {
            question: question.to_owned(),
            entities: linked.linked.clone(),
            draft_answers: Vec::new(),
            metapaths: Vec::new(),
            cypher: Vec::new(),
            max_evidence: 50,
            cues: Vec::new(),
        };
        let (scored, _) = bounded(client.call(&role(Role::SCORING_RETRIEVER), &meta(), &request))
            .await
            .unwrap();
        sizes.push((linked.metapaths.len(), scored.evidence.len()));
        for handle in handles {
            bounded(handle.stop(Duration::from_secs(5))).await;
        }
    }
    // The graph offers Michael Mann more than one relation path and more than two
    // triplets within two hops: the defaults return more than the small settings.
    assert!(sizes[0].0 > 1 && sizes[0].1 > 2, "defaults: {sizes:?}");
    assert_eq!(sizes[1], (1, 2));
}

/// The text retriever on a real nats-server: passages of an indexed file, each citing its
/// bytes; a folder without an index is an error that says how to build one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_retriever_cites_passages_on_nats() {
    use kgmesh_agents::text_retriever::{
        build::{add_files, rank_chunks, FileLimits},
        retrieve::SearchSettings,
        TextSource,
    };
    use kgmesh_stores::text::{TextIndex, TextSettings, TEXT_FILE};

    let docs = tempfile::tempdir().unwrap();
    let body = "Harbour Light came out in 1987. Mara Voss directed it in Porto.\n\n\
                Salt Road was shot near Bergen; Ivo Brandt wrote its score.\n";
    let file = docs.path().join("films.md");
    std::fs::write(&file, body).unwrap();
    let mut index = TextIndex::new(TextSettings::default());
    add_files(
        &mut index,
        std::slice::from_ref(&file),
        None,
        FileLimits { max_bytes: 1 << 20 },
        &mut |_| {},
    )
    .await
    .unwrap();
    rank_chunks(&mut index, &mut |_| {}).await.unwrap();
    index.save(&docs.path().join(TEXT_FILE)).unwrap();

    let server = NatsServer::start();
    let bus: Arc<dyn Bus> = Arc::new(
        bounded(NatsBus::connect(&server.url(), NatsOptions::default()))
            .await
            .unwrap(),
    );
    let source = |dir: &std::path::Path| TextSource {
        dir: dir.to_owned(),
        search: SearchSettings::default(),
    };
    let deps = AgentDeps::new(bus.clone()).with(source(docs.path()));
    let handle = bounded(registry::start(
        Role::TEXT_RETRIEVER,
        &deps,
        StartOptions::default(),
    ))
    .await
    .unwrap();
    let client = Client::new(bus.clone()).with_timeout(Duration::from_secs(10));
    let request = question_only("where was Salt Road shot", 10);
    let (reply, _) = bounded(client.call(&role(Role::TEXT_RETRIEVER), &meta(), &request))
        .await
        .unwrap();
    let EvidenceItem::Excerpt(first) = &reply.evidence[0].item else {
        panic!("not a passage: {:?}", reply.evidence[0]);
    };
    assert_eq!(reply.evidence[0].source, Role::TEXT_RETRIEVER);
    assert!(first.text.contains("Bergen"), "{first:?}");
    assert_eq!(first.file, file.display().to_string());
    let at = first.offset as usize;
    assert_eq!(&body[at..at + first.len as usize], first.text);
    assert_eq!(first.channel, "keyword");

    // A replica pointed at an empty folder fails with the reason.
    bounded(handle.stop(Duration::from_secs(2))).await;
    let empty = tempfile::tempdir().unwrap();
    let broken = AgentDeps::new(bus.clone()).with(source(empty.path()));
    let _broken = bounded(registry::start(
        Role::TEXT_RETRIEVER,
        &broken,
        StartOptions::default(),
    ))
    .await
    .unwrap();
    let error = bounded(client.call(&role(Role::TEXT_RETRIEVER), &meta(), &request))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("holds no text index") && error.contains("kgmesh index"),
        "{error}"
    );
}

/// A small shop as a property graph: labelled nodes with properties.
fn shop() -> EmbeddedGraph {
    use kgmesh_schemas::graph::Value;
    let mut builder = GraphBuilder::new();
    let supplier = |builder: &mut GraphBuilder, name: &str, country: &str| {
        let node = builder.add_node(name);
        builder.add_label(node, "Supplier");
        builder.set_property(node, "country", Value::String(country.to_owned()));
        node
    };
    let exotic = supplier(&mut builder, "Exotic Liquids", "UK");
    let heli = supplier(&mut builder, "Heli Süßwaren", "Germany");
    let plutzer = supplier(&mut builder, "Plutzer Lebensmittel", "Germany");
    for (name, price, by) in [
        ("Chai", 18.0, exotic),
        ("Chang", 19.0, exotic),
        ("Schoggi Schokolade", 43.9, heli),
        ("Rhönbräu Klosterbier", 7.75, plutzer),
    ] {
        let product = builder.add_node(name);
        builder.add_label(product, "Product");
        builder.set_property(product, "unitPrice", Value::Float(price));
        builder.add_edge(by, "SUPPLIES", product);
    }
    builder.finish()
}

/// The query executor on a real nats-server, on a property graph: the first round of a
/// question also runs a query written from the question itself, marked as such, learned
/// from the grounded Cypher plans of the plan cache in JetStream KV (those stored
/// before the role started, and those stored later; one stored again is replaced, one
/// deleted is forgotten). On a graph of triples it writes none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_executor_writes_grounded_cypher_on_nats() {
    use kgmesh_agents::cache_manager::persist::{KvPlanStore, PlanStore, SharedPlanStore};
    use kgmesh_agents::query_executor::grounded::{plans, GroundedCypher, Reference};
    use kgmesh_stores::QueryLimits;

    let server = NatsServer::start();
    let bus: Arc<dyn Bus> = Arc::new(
        bounded(NatsBus::connect(&server.url(), NatsOptions::default()))
            .await
            .unwrap(),
    );
    let client = bounded(async_nats::connect(server.url())).await.unwrap();
    let kv = Arc::new(
        bounded(KvPlanStore::open(client, "plans-test"))
            .await
            .unwrap(),
    );
    let store: Arc<dyn GraphStore> = Arc::new(shop());
    // A plan verified before the role starts, learned as `cache warm --import` does.
    let limits = QueryLimits::default();
    let schema = bounded(store.schema()).await.unwrap();
    let mut teacher = bounded(GroundedCypher::read(
        store.as_ref(),
        (*schema).clone(),
        &limits,
    ))
    .await
    .unwrap();
    let verify = |question: &'static str, answers: &[&str]| {
        let reference = Reference {
            answers: answers.iter().map(|a| (*a).to_owned()).collect(),
            ordered: false,
            unlimited: None,
            ties: None,
        };
        (question, reference)
    };
    let (asked, reference) = verify("Which suppliers are based in the UK?", &["Exotic Liquids"]);
    let right = bounded(teacher.learn(store.as_ref(), asked, &reference, &limits))
        .await
        .unwrap();
    assert!(!right.is_empty());
    let entry = plans::entry(asked, reference.answers.clone(), &right);
    bounded(kv.put(&plans::key(asked), &entry)).await.unwrap();
    assert_eq!(
        bounded(kv.load_all()).await.unwrap().len(),
        0,
        "not a relation plan"
    );

    let deps = AgentDeps::new(bus.clone())
        .with_graph(store.clone())
        .with::<SharedPlanStore>(kv.clone());
    let handle = bounded(registry::start(
        Role::QUERY_EXECUTOR,
        &deps,
        StartOptions::default(),
    ))
    .await
    .unwrap();
    let rpc = Client::new(bus.clone()).with_timeout(Duration::from_secs(20));
    let ask = |question: &'static str| {
        let rpc = rpc.clone();
        let request = question_only(question, 10);
        async move {
            bounded(rpc.call(&role(Role::QUERY_EXECUTOR), &meta(), &request))
                .await
                .unwrap()
                .0
        }
    };
    let reply = ask("Which suppliers are in Germany?").await;
    let EvidenceItem::Query {
        cypher,
        rows,
        grounded,
    } = &reply.evidence[0].item
    else {
        panic!("not a query: {:?}", reply.evidence);
    };
    assert!(grounded, "{cypher}");
    assert!(
        cypher.contains("'Germany'") && cypher.contains("Supplier"),
        "{cypher}"
    );
    let mut names: Vec<String> = rows
        .rows
        .iter()
        .map(|row| match &row[0] {
            kgmesh_schemas::graph::Value::String(name) => name.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    names.sort();
    assert_eq!(names, ["Heli Süßwaren", "Plutzer Lebensmittel"]);
    assert!(
        reply
            .notes
            .iter()
            .any(|n| n.contains("grounded Cypher") && n.contains("with 1 verified plans")),
        "{:?}",
        reply.notes
    );

    // A plan stored later (another replica, an import) is learned before the next
    // question.
    let (asked, reference) = verify(
        "Which products does Exotic Liquids supply?",
        &["Chai", "Chang"],
    );
    let right = bounded(teacher.learn(store.as_ref(), asked, &reference, &limits))
        .await
        .unwrap();
    bounded(kv.put(
        &plans::key(asked),
        &plans::entry(asked, reference.answers, &right),
    ))
    .await
    .unwrap();
    let mut learned = false;
    for _ in 0..50 {
        let reply = ask("Which products does Heli Süßwaren supply?").await;
        if reply
            .notes
            .iter()
            .any(|n| n.contains("with 2 verified plans"))
        {
            learned = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(learned, "the plan stored later was not learned within 5 s");
    // Stored again (a second import): replaced, still two. Then deleted: forgotten.
    let again = bounded(kv.load_cypher()).await.unwrap();
    assert_eq!(again.len(), 2);
    for (key, entry) in &again {
        bounded(kv.put(key, entry)).await.unwrap();
    }
    bounded(kv.delete(&plans::key(asked))).await.unwrap();
    let mut forgotten = false;
    for _ in 0..50 {
        let reply = ask("Which products does Heli Süßwaren supply?").await;
        let notes = reply.notes.join(" | ");
        assert!(!notes.contains("with 3 verified plans"), "{notes}");
        if notes.contains("with 1 verified plans") {
            forgotten = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(forgotten, "the deleted plan was still learned after 5 s");
    bounded(handle.stop(Duration::from_secs(5))).await;

    // A graph of triples: no grounded query, only the round's own queries.
    let movies: Arc<dyn GraphStore> = Arc::new(graph());
    let deps = AgentDeps::new(bus.clone()).with_graph(movies);
    let handle = bounded(registry::start(
        Role::QUERY_EXECUTOR,
        &deps,
        StartOptions::default(),
    ))
    .await
    .unwrap();
    let reply = ask("Which films did Michael Mann direct?").await;
    assert!(reply.evidence.is_empty(), "{:?}", reply.evidence);
    assert!(
        !reply.notes.iter().any(|n| n.contains("grounded")),
        "{:?}",
        reply.notes
    );
    bounded(handle.stop(Duration::from_secs(5))).await;
}
