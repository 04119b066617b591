use std::{sync::Arc, time::Duration};

use kgmesh_bus::LocalBus;
use kgmesh_schemas::{
    graph::{
        Direction, Entity, Metapath, NodeValue, Path, PathStep, RelationStep, Rows, Triple, Value,
    },
    messages::{
        context::{Context, Evidence, EvidenceItem},
        summarizer::SummarizeRequest,
    },
    Budget, Meta, NodeId, QuestionId, Role,
};

use super::{
    core::{summarize, SummaryRule},
    Summarizer,
};
use kgmesh_models::LlmError;

use crate::{
    runtime::{start_role, AgentDeps, CallContext, Client},
    testing::ScriptedModel,
};

fn entity(id: u64, name: &str) -> Entity {
    Entity {
        id: NodeId(id),
        name: name.into(),
    }
}

fn step(relation: &str, inverse: bool, node: &Entity) -> PathStep {
    PathStep {
        relation: relation.into(),
        inverse,
        node: node.clone(),
    }
}

/// A path-follower path from `start` through `steps`.
fn walk(start: &Entity, steps: Vec<PathStep>, score: f32) -> Evidence {
    Evidence {
        source: "path-follower".into(),
        score,
        item: EvidenceItem::Path(Path {
            start: start.clone(),
            steps,
        }),
    }
}

fn path(start: &Entity, relation: &str, end: &Entity, score: f32) -> Evidence {
    walk(start, vec![step(relation, true, end)], score)
}

fn triple(source: &str, head: &Entity, relation: &str, tail: &Entity, score: f32) -> Evidence {
    Evidence {
        source: source.into(),
        score,
        item: EvidenceItem::Triple(Triple {
            head: head.clone(),
            relation: relation.into(),
            tail: tail.clone(),
        }),
    }
}

fn request(evidence: Vec<Evidence>, topic: Vec<Entity>) -> SummarizeRequest {
    SummarizeRequest {
        question: "what movies did Al Pacino act in".into(),
        context: Context {
            evidence,
            notes: Vec::new(),
        },
        topic_entities: topic,
        max_answers: 10,
        cues: Vec::new(),
        plan: Vec::new(),
        preferred: Vec::new(),
    }
}

#[test]
fn answers_are_the_best_path_ends_with_their_evidence() {
    let pacino = entity(1, "Al Pacino");
    let heat = entity(2, "Heat");
    let serpico = entity(3, "Serpico");
    let weak = entity(4, "New York");
    let evidence = vec![
        path(&pacino, "lives_in", &weak, 0.2),
        path(&pacino, "starred_actors", &heat, 0.9),
        path(&pacino, "starred_actors", &serpico, 0.9),
        // A path back to the question's own entity is no answer.
        path(&heat, "starred_actors", &pacino, 0.95),
    ];
    let reply = summarize(&request(evidence, vec![pacino]), &SummaryRule::default());
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts, ["Heat", "Serpico"], "{reply:?}");
    assert_eq!(reply.answers[0].evidence, vec![1]);
    assert_eq!(reply.answers[1].entity, Some(serpico));
}

#[test]
fn answers_attached_to_a_named_question_entity_come_first() {
    let pacino = entity(1, "Al Pacino");
    let heat = entity(2, "Heat");
    let mann = entity(5, "Michael Mann");
    let directed_by =
        |head: &Entity, tail: &Entity| triple("scoring-retriever", head, "directed_by", tail, 0.7);
    let evidence = vec![
        directed_by(&heat, &pacino),
        directed_by(&heat, &mann),
        directed_by(&heat, &mann),
    ];
    let reply = summarize(
        &request(evidence, vec![pacino.clone()]),
        &SummaryRule::default(),
    );
    // Heat touches Al Pacino, whom the question names: it outranks Michael Mann,
    // reached only from a film.
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts, ["Heat"]);
    assert_eq!(reply.answers[0].evidence, vec![0]);
}

#[test]
fn query_rows_answer_and_nothing_retrieved_means_i_dont_know() {
    let rows = Rows {
        columns: vec!["m".into()],
        rows: vec![
            vec![Value::Node(NodeValue {
                id: NodeId(9),
                labels: vec!["Movie".into()],
                properties: vec![("name".into(), Value::String("Heat".into()))],
            })],
            vec![Value::String("Al Pacino".into())],
        ],
        truncated: false,
    };
    let evidence = vec![Evidence {
        source: "query-executor".into(),
        score: 1.0,
        item: EvidenceItem::Query {
            cypher: "MATCH (m) RETURN m".into(),
            rows,
            grounded: false,
        },
    }];
    let reply = summarize(
        &request(evidence, vec![entity(1, "Al Pacino")]),
        &SummaryRule::default(),
    );
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts, ["Heat"]);
    assert_eq!(reply.answers[0].entity, Some(entity(9, "Heat")));

    let empty = summarize(&request(Vec::new(), Vec::new()), &SummaryRule::default());
    assert!(empty.answers.is_empty());
    assert!(
        empty.explanation.starts_with("I don't know"),
        "{}",
        empty.explanation
    );
}

#[tokio::test]
async fn model_answers_are_linked_to_entities_in_their_evidence() {
    let (reply, ctx) = summarize_with(ScriptedModel::always(Ok(
        "<answers>\nheat [E1]\n</answers><explanation>He starred in it.</explanation>",
    )))
    .await;
    assert_eq!(reply.answers.len(), 1, "{reply:?}");
    assert_eq!(reply.answers[0].evidence, vec![0]);
    assert_eq!(reply.answers[0].entity, Some(entity(2, "Heat")));
    assert_eq!(ctx.cost().llm_calls, 1);
}

/// The summarizer with `model` answering every prompt, asked about Al Pacino → Heat.
async fn summarize_with(model: ScriptedModel) -> (super::SummarizeReply, CallContext) {
    let pacino = entity(1, "Al Pacino");
    let heat = entity(2, "Heat");
    summarize_evidence_with(
        model,
        vec![path(&pacino, "starred_actors", &heat, 0.9)],
        pacino,
    )
    .await
}

/// The summarizer with `model` answering every prompt, asked about `topic` with
/// `evidence`.
async fn summarize_evidence_with(
    model: ScriptedModel,
    evidence: Vec<Evidence>,
    topic: Entity,
) -> (super::SummarizeReply, CallContext) {
    let summarizer = Summarizer {
        llm: Some(Arc::new(model)),
        rule: SummaryRule::default(),
        vectors_opt: None,
        graph_opt: None,
    };
    let ctx = CallContext::for_test(Role::SUMMARIZER);
    let reply = summarizer
        .summarize(&ctx, request(evidence, vec![topic]))
        .await
        .unwrap();
    (reply, ctx)
}

#[tokio::test]
async fn an_unusable_model_reply_is_replaced_by_the_rule_and_counted() {
    let replies: [Result<&str, LlmError>; 4] = [
        Ok(""),
        Ok("lorem ipsum dolor sit amet"),
        // An answer the evidence does not contain: invented, not grounded.
        Ok("<answers>\nThe Godfather [E1]\n</answers>"),
        Err(LlmError::Malformed("no choices".into())),
    ];
    for model_reply in replies {
        let shown = format!("{model_reply:?}");
        let (reply, ctx) = summarize_with(ScriptedModel::always(model_reply)).await;
        let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
        assert_eq!(texts, ["Heat"], "model reply {shown}: {reply:?}");
        assert_eq!(ctx.cost().model_fallbacks, 1, "model reply {shown}");
        assert!(
            reply.explanation.contains("without the language model"),
            "model reply {shown}: {}",
            reply.explanation
        );
    }
}

#[tokio::test]
async fn a_model_answering_with_the_questions_own_entity_falls_back_to_the_rule() {
    // Asked about Al Pacino, a small model names Al Pacino: no path comes back to him.
    let (reply, ctx) = summarize_with(ScriptedModel::always(Ok(
        "<answers>\nAl Pacino [E1]\n</answers>",
    )))
    .await;
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts, ["Heat"], "{reply:?}");
    assert_eq!(ctx.cost().model_fallbacks, 1);
    // Beside a right answer, it is only dropped.
    let (reply, ctx) = summarize_with(ScriptedModel::always(Ok(
        "<answers>\nAl Pacino [E1]\nHeat [E1]\n</answers>",
    )))
    .await;
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts, ["Heat"], "{reply:?}");
    assert_eq!(ctx.cost().model_fallbacks, 0);
}

#[tokio::test]
async fn a_model_copying_the_prompts_example_falls_back_even_where_the_graph_holds_the_name() {
    let example = kgmesh_models::prompts::summarizer::EXAMPLE_ANSWERS[0];
    let pacino = entity(1, "Al Pacino");
    let heat = entity(2, "Heat");
    // The graph happens to hold a film by the example's name, and it is in the evidence.
    let namesake = entity(3, example);
    let (reply, ctx) = summarize_evidence_with(
        ScriptedModel::always(Ok(&format!("<answers>\n{example} [E2, E5]\n</answers>"))),
        vec![
            path(&pacino, "starred_actors", &heat, 0.9),
            path(&heat, "release_year", &namesake, 0.1),
        ],
        pacino,
    )
    .await;
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts, ["Heat"], "{reply:?}");
    assert_eq!(ctx.cost().model_fallbacks, 1);
    assert!(
        reply.explanation.contains("copied the prompt's example"),
        "{}",
        reply.explanation
    );
}

#[tokio::test]
async fn a_grounded_model_answer_is_no_fallback() {
    let (reply, ctx) = summarize_with(ScriptedModel::always(Ok(
        "<answers>\nHeat [E1]\nThe Godfather [E1]\n</answers>",
    )))
    .await;
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts, ["Heat"], "the invented second answer is dropped");
    assert_eq!(ctx.cost().model_fallbacks, 0);
}

#[tokio::test]
async fn without_model_budget_the_rule_answers() {
    let pacino = entity(1, "Al Pacino");
    let heat = entity(2, "Heat");
    let summarizer = Summarizer {
        llm: Some(Arc::new(ScriptedModel::always(Ok(
            "<answers>\nWrong [E1]\n</answers>",
        )))),
        rule: SummaryRule::default(),
        vectors_opt: None,
        graph_opt: None,
    };
    let budget = Budget {
        llm_calls: 0,
        ..Budget::default()
    };
    let meta = Meta::new(QuestionId::new_random(), 1, budget);
    let ctx = CallContext::new(
        meta,
        Role::well_known(Role::SUMMARIZER),
        "summarize",
        "test",
    );
    let reply = summarizer
        .summarize(
            &ctx,
            request(
                vec![path(&pacino, "starred_actors", &heat, 0.9)],
                vec![pacino],
            ),
        )
        .await
        .unwrap();
    assert_eq!(reply.answers[0].text, "Heat");
    assert_eq!(ctx.cost().llm_calls, 0);
}

#[tokio::test]
async fn the_role_answers_on_the_bus() {
    let bus = Arc::new(LocalBus::new());
    let deps = AgentDeps::new(bus.clone());
    let handle = start_role(bus.clone(), super::role(&deps).unwrap())
        .await
        .unwrap();
    let client = Client::new(bus);
    let meta = Meta::new(QuestionId::new_random(), 1, Budget::default());
    let pacino = entity(1, "Al Pacino");
    let heat = entity(2, "Heat");
    let role = Role::well_known(Role::SUMMARIZER);
    let body = request(
        vec![path(&pacino, "starred_actors", &heat, 0.9)],
        vec![pacino],
    );
    let call = client.call(&role, &meta, &body);
    let (reply, cost) = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("in time")
        .expect("the summarizer answers");
    assert_eq!(reply.answers[0].text, "Heat");
    assert_eq!(cost.bus_messages, 1);
    handle.stop(Duration::from_secs(5)).await;
}

#[test]
fn weak_evidence_from_many_retrievers_does_not_outvote_strong_evidence() {
    let film = entity(1, "Inkheart");
    let director = entity(2, "Iain Softley");
    let genre = entity(3, "Adventure");
    let other_film = entity(4, "10,000 BC");
    let evidence = vec![
        triple("agentic-traverser", &film, "directed_by", &director, 1.0),
        triple("agentic-traverser", &film, "has_genre", &genre, 1.0),
        path(&film, "directed_by", &director, 0.9),
        path(&film, "has_genre", &genre, 0.45),
        // Two hops out: it leads to another film, not to the genre it passes through.
        triple("scoring-retriever", &other_film, "has_genre", &genre, 0.8),
    ];
    let mut request = request(evidence, vec![film]);
    request.question = "the director of Inkheart was".into();
    let reply = summarize(&request, &SummaryRule::default());
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    // The old rule (most retrievers first) answered "Adventure": three retrievers reach
    // it, two of them with weak evidence.
    assert_eq!(texts, ["Iain Softley"], "{reply:?}");
    // The path that explains "director" is cited first, then the traverser's triple.
    assert_eq!(reply.answers[0].evidence, vec![2, 0]);
}

#[test]
fn a_triple_unconnected_to_the_question_proposes_nothing() {
    let pacino = entity(1, "Al Pacino");
    let heat = entity(2, "Heat");
    let stranger = entity(3, "Some Film");
    let elsewhere = entity(4, "Somewhere");
    let evidence = vec![
        path(&pacino, "starred_actors", &heat, 0.5),
        triple("scoring-retriever", &stranger, "filmed_in", &elsewhere, 0.9),
    ];
    let reply = summarize(&request(evidence, vec![pacino]), &SummaryRule::default());
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts, ["Heat"], "{reply:?}");
}

#[test]
fn a_question_naming_two_entities_prefers_what_both_lead_to() {
    let position = entity(1, "Goalkeeper");
    let club = entity(2, "Ulsan FC");
    let keeper = entity(3, "Kim");
    let teammate = entity(4, "Lee");
    let other_keeper = entity(5, "Park");
    let evidence = vec![
        path(&club, "plays_in_club", &teammate, 1.0),
        path(&position, "plays_position", &other_keeper, 1.0),
        path(&club, "plays_in_club", &keeper, 0.9),
        path(&position, "plays_position", &keeper, 0.9),
    ];
    let mut request = request(evidence, vec![position, club]);
    request.question = "who plays at position Goalkeeper for club Ulsan FC".into();
    let reply = summarize(&request, &SummaryRule::default());
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts, ["Kim"], "{reply:?}");
}

#[test]
fn what_two_named_entities_lead_to_in_one_hop_each_beats_what_they_reach_in_two() {
    let position = entity(1, "Goalkeeper");
    let club = entity(2, "Celtic_FC");
    let keeper = entity(3, "Fraser_FORSTER");
    let teammate = entity(4, "Efe_AMBROSE");
    let country = entity(5, "Scotland");
    let evidence = vec![
        // Both entities reach the country in two hops, through the keeper ...
        walk(
            &club,
            vec![
                step("plays_in_club", true, &keeper),
                step("plays_for_country", false, &country),
            ],
            1.0,
        ),
        walk(
            &position,
            vec![
                step("plays_position", true, &keeper),
                step("plays_for_country", false, &country),
            ],
            1.0,
        ),
        walk(
            &club,
            vec![
                step("plays_in_club", true, &teammate),
                step("plays_for_country", false, &country),
            ],
            1.0,
        ),
        // ... and the keeper in one.
        triple("agentic-traverser", &keeper, "plays_in_club", &club, 0.5),
        triple(
            "agentic-traverser",
            &keeper,
            "plays_position",
            &position,
            0.5,
        ),
    ];
    let mut request = request(evidence, vec![position, club]);
    request.question =
        "name a player who plays at Goalkeeper position at the club Celtic_FC".into();
    let reply = summarize(&request, &SummaryRule::default());
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts, ["Fraser_FORSTER"], "{reply:?}");
}

#[test]
fn a_name_inside_a_word_or_a_longer_name_is_no_second_named_entity() {
    // "Ran" is in "Pran" and "Business" in "The Business", but the question names one
    // entity each time: what the other "named" entity reaches must not rank first.
    for (named, inner) in [("Pran", "Ran"), ("The Business", "Business")] {
        let topic = entity(1, named);
        let stray = entity(2, inner);
        let film = entity(3, "Upkar");
        let shared = entity(4, "drama");
        let evidence = vec![
            path(&topic, "starred_actors", &film, 1.0),
            // One hop from both: with two named entities it would rank first.
            path(&topic, "has_tags", &shared, 0.4),
            path(&stray, "has_tags", &shared, 0.4),
        ];
        let mut request = request(evidence, vec![topic, stray]);
        request.question = format!("what films did [{named}] act in");
        let reply = summarize(&request, &SummaryRule::default());
        let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
        assert_eq!(texts, ["Upkar"], "{named}: {reply:?}");
    }
}

#[test]
fn namesakes_of_one_mention_are_one_named_entity_not_two() {
    // "Ronald Neame" is a person and a tag: one entity of the question, not two whose
    // common neighbour (a film he directed and that carries his tag) would be what the
    // question asks for.
    let person = entity(1, "Ronald Neame");
    let tag = entity(2, "ronald neame");
    let directed = entity(3, "The Odessa File");
    let director = entity(5, "David Lean");
    let plan_path = |film: &Entity| {
        walk(
            &person,
            vec![
                step("written_by", true, film),
                step("directed_by", false, &director),
            ],
            1.0,
        )
    };
    let mut evidence = vec![
        triple("agentic-traverser", &directed, "directed_by", &person, 1.0),
        triple("agentic-traverser", &directed, "has_tags", &tag, 1.0),
    ];
    for (id, film) in [
        (6, "Blithe Spirit"),
        (7, "Great Expectations"),
        (8, "This Happy Breed"),
    ] {
        evidence.push(plan_path(&entity(id, film)));
    }
    let mut request = request(evidence, vec![person, tag]);
    request.question = "who are the directors of the films written by Ronald Neame".into();
    let reply = summarize(&request, &SummaryRule::default());
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts.first(), Some(&"David Lean"), "{reply:?}");
}

#[test]
fn an_entity_a_comparable_path_runs_through_is_a_step_not_the_answer() {
    let film = entity(1, "Twentynine Palms");
    let director = entity(2, "Bruno Dumont");
    let other = entity(3, "Flanders");
    let two_hops = walk(
        &film,
        vec![
            step("directed_by", false, &director),
            step("directed_by", true, &other),
        ],
        0.95,
    );
    let evidence = vec![path(&film, "directed_by", &director, 1.0), two_hops];
    let mut request = request(evidence, vec![film]);
    request.question = "which films have the same director of Twentynine Palms".into();
    let reply = summarize(&request, &SummaryRule::default());
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts, ["Flanders"], "{reply:?}");
}

#[test]
fn a_step_is_told_by_its_own_retrievers_scores_not_by_another_retrievers() {
    // The path follower reaches the languages through the films; the traverser scores
    // a film highly on its own scale. The film is still a step on the path follower's
    // way, as its own scores say.
    let ann = entity(1, "Ann");
    let (film, other_film) = (entity(2, "Film"), entity(3, "Other Film"));
    let (english, french) = (entity(4, "English"), entity(5, "French"));
    let from_ann = |steps: Vec<PathStep>, score: f32| walk(&ann, steps, score);
    let evidence = vec![
        from_ann(vec![step("starred_actors", true, &other_film)], 0.9),
        from_ann(
            vec![
                step("starred_actors", true, &other_film),
                step("in_language", false, &french),
            ],
            1.0,
        ),
        from_ann(vec![step("starred_actors", true, &film)], 0.5),
        from_ann(
            vec![
                step("starred_actors", true, &film),
                step("in_language", false, &english),
            ],
            0.6,
        ),
        triple("agentic-traverser", &film, "starred_actors", &ann, 1.0),
    ];
    let mut request = request(evidence, vec![ann]);
    request.question = "what languages are the films starred by Ann in".into();
    let reply = summarize(&request, &SummaryRule::default());
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts.first(), Some(&"French"), "{reply:?}");
    assert!(!texts.contains(&"Film"), "{reply:?}");
}

#[test]
fn a_walk_that_passes_its_own_end_on_the_way_still_leads_there() {
    let x = entity(1, "x");
    let wife = entity(2, "y");
    // "x's wife's husband's wife": x -> y -> x -> y.
    let spouses = walk(
        &x,
        vec![
            step("spouse", false, &wife),
            step("spouse", false, &x),
            step("spouse", false, &wife),
        ],
        1.0,
    );
    let mut request = request(vec![spouses], vec![x]);
    request.question = "who is the wife of x 's wife 's husband".into();
    let reply = summarize(&request, &SummaryRule::default());
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts, ["y"], "{reply:?}");
}

/// A model that takes longer than any call here waits.
struct SlowModel;

#[async_trait::async_trait]
impl kgmesh_models::LanguageModel for SlowModel {
    fn name(&self) -> &str {
        "slow"
    }

    async fn chat(
        &self,
        _request: kgmesh_models::ChatRequest,
    ) -> Result<kgmesh_models::ChatResponse, LlmError> {
        tokio::time::sleep(Duration::from_secs(30)).await;
        Err(LlmError::Malformed("too late".into()))
    }
}

#[tokio::test]
async fn a_model_slower_than_the_call_deadline_is_abandoned_in_time() {
    let pacino = entity(1, "Al Pacino");
    let heat = entity(2, "Heat");
    let summarizer = Summarizer {
        llm: Some(Arc::new(SlowModel)),
        rule: SummaryRule::default(),
        vectors_opt: None,
        graph_opt: None,
    };
    let budget = Budget {
        deadline: kgmesh_schemas::Deadline::after(Duration::from_millis(800)),
        ..Budget::default()
    };
    let ctx = CallContext::new(
        Meta::new(QuestionId::new_random(), 1, budget),
        Role::well_known(Role::SUMMARIZER),
        "summarize",
        "test",
    );
    let started = std::time::Instant::now();
    let reply = tokio::time::timeout(
        Duration::from_secs(5),
        summarizer.summarize(
            &ctx,
            request(
                vec![path(&pacino, "starred_actors", &heat, 0.9)],
                vec![pacino],
            ),
        ),
    )
    .await
    .expect("answered before the test's timeout")
    .unwrap();
    assert!(
        started.elapsed() < Duration::from_millis(800),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(reply.answers[0].text, "Heat");
    assert_eq!(ctx.cost().model_fallbacks, 1);
}

#[test]
fn the_path_that_explains_every_hop_outranks_a_shorter_one_two_retrievers_agree_on() {
    let x = entity(1, "Malcolm X");
    let lee = entity(2, "Spike Lee");
    let bamboozled = entity(3, "Bamboozled");
    let english = entity(4, "English");
    let evidence = vec![
        // Two retrievers agree on the film the round trip reaches ...
        triple("agentic-traverser", &bamboozled, "directed_by", &lee, 1.0),
        walk(
            &x,
            vec![
                step("directed_by", false, &lee),
                step("directed_by", true, &bamboozled),
            ],
            1.0,
        ),
        // ... but only the path on to its language explains "languages", though the
        // path follower scored it lower than the round trip.
        walk(
            &x,
            vec![
                step("directed_by", false, &lee),
                step("directed_by", true, &bamboozled),
                step("in_language", false, &english),
            ],
            0.6,
        ),
    ];
    let mut request = request(evidence, vec![x]);
    request.question =
        "what are the languages spoken in the movies whose directors also directed Malcolm X"
            .into();
    let reply = summarize(&request, &SummaryRule::default());
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts, ["English"], "{reply:?}");
}

#[test]
fn a_trusted_plan_names_the_answer_where_the_rule_cannot_read_the_question() {
    // "what does X's kid do": the rule reads "kid" as `children` and nothing as
    // `profession`, and two retrievers agree on the child; the model's plan, which the
    // graph confirmed, walks on to the child's profession.
    let senior = entity(1, "Marvin Gay Sr");
    let son = entity(2, "Marvin Gaye");
    let composer = entity(3, "composer");
    let evidence = vec![
        triple("agentic-traverser", &senior, "children", &son, 1.0),
        Evidence {
            source: "pattern-matcher".into(),
            ..path(&senior, "children", &son, 1.0)
        },
        walk(
            &senior,
            vec![
                step("children", false, &son),
                step("profession", false, &composer),
            ],
            1.0,
        ),
    ];
    let mut request = request(evidence, vec![senior]);
    request.question = "what does Marvin Gay Sr 's kid do".into();
    let untrusted = summarize(&request, &SummaryRule::default());
    assert_eq!(untrusted.answers[0].text, "Marvin Gaye", "{untrusted:?}");
    request.plan = vec![Metapath {
        steps: vec![
            RelationStep {
                relation: "children".into(),
                direction: Direction::Out,
            },
            RelationStep {
                relation: "profession".into(),
                direction: Direction::Out,
            },
        ],
    }];
    let reply = summarize(&request, &SummaryRule::default());
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts, ["composer"], "{reply:?}");
    assert_eq!(reply.answers[0].evidence, vec![2]);
    // A plan no evidence follows changes nothing.
    request.plan[0].steps[1].relation = "religion".into();
    assert_eq!(summarize(&request, &SummaryRule::default()), untrusted);
}

#[tokio::test]
async fn with_an_embedder_the_path_a_word_names_by_meaning_explains_the_question() {
    use crate::scoring::{fixtures::TYPES_MEAN_GENRE, relevance::TextVectors};

    let mann = entity(1, "Michael Mann");
    let heat = entity(2, "Heat");
    let crime = entity(3, "Crime");
    let year = entity(4, "1995");
    let evidence = vec![
        // The path follower ranked the year first; nothing lexical says "types" is genre.
        walk(
            &mann,
            vec![
                step("directed_by", true, &heat),
                step("release_year", false, &year),
            ],
            1.0,
        ),
        walk(
            &mann,
            vec![
                step("directed_by", true, &heat),
                step("has_genre", false, &crime),
            ],
            0.6,
        ),
    ];
    let mut request = request(evidence, vec![mann]);
    request.question = "the types of the films directed by Michael Mann".into();
    let answer = |summarizer: Summarizer| {
        let request = request.clone();
        async move {
            let reply = tokio::time::timeout(
                Duration::from_secs(10),
                summarizer.summarize(&CallContext::for_test(Role::SUMMARIZER), request),
            )
            .await
            .expect("in time")
            .expect("a reply");
            reply.answers[0].text.clone()
        }
    };
    let lexical = Summarizer {
        llm: None,
        rule: SummaryRule::default(),
        vectors_opt: None,
        graph_opt: None,
    };
    assert_eq!(answer(lexical).await, "1995");
    let embedded = Summarizer {
        llm: None,
        // The word table places every whole text apart from the question's words,
        // which would read as a path far from the question: not what is tested here.
        rule: SummaryRule {
            abstain_found_cosine: 0.0,
            ..SummaryRule::default()
        },
        vectors_opt: Some(Arc::new(TextVectors::new(Arc::new(TYPES_MEAN_GENRE), 100))),
        graph_opt: None,
    };
    assert_eq!(answer(embedded).await, "Crime");
}

/// The rule's reply to `request` with the word table `table` as embedder.
async fn embedded_reply(
    table: crate::scoring::fixtures::WordTable,
    rule: SummaryRule,
    request: &SummarizeRequest,
) -> kgmesh_schemas::messages::summarizer::SummarizeReply {
    use crate::scoring::relevance::TextVectors;
    let summarizer = Summarizer {
        llm: None,
        rule,
        vectors_opt: Some(Arc::new(TextVectors::new(Arc::new(table), 100))),
        graph_opt: None,
    };
    tokio::time::timeout(
        Duration::from_secs(10),
        summarizer.summarize(&CallContext::for_test(Role::SUMMARIZER), request.clone()),
    )
    .await
    .expect("in time")
    .expect("a reply")
}

/// "what kind of movie is Heat" over the film's director and genre paths, director
/// first: no word of the question names either relation.
fn kind_of_movie_request() -> SummarizeRequest {
    let heat = entity(1, "Heat");
    let evidence = vec![
        walk(
            &heat,
            vec![step("directed_by", false, &entity(2, "Michael Mann"))],
            0.9,
        ),
        walk(
            &heat,
            vec![step("has_genre", false, &entity(3, "Crime"))],
            0.9,
        ),
    ];
    let mut request = request(evidence, vec![heat]);
    request.question = "what kind of movie is Heat".into();
    request
}

#[tokio::test]
async fn a_tie_no_word_breaks_goes_to_the_path_whose_findings_read_nearest() {
    use crate::scoring::fixtures::KIND_OF_MOVIE_MEANS_GENRE;

    let request = kind_of_movie_request();
    // Lexically the two paths tie, and evidence order decides.
    let lexical = summarize(&request, &SummaryRule::default());
    assert_eq!(lexical.answers[0].text, "Michael Mann", "{lexical:?}");
    // "has genre: Crime" reads nearest to "what kind of movie is".
    let reply = embedded_reply(KIND_OF_MOVIE_MEANS_GENRE, SummaryRule::default(), &request).await;
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts, ["Crime"], "{reply:?}");
    assert_eq!(reply.answers[0].evidence, vec![1]);
}

#[tokio::test]
async fn answers_on_a_path_no_word_names_are_flagged_low_confidence() {
    use crate::scoring::fixtures::KIND_OF_MOVIE_MEANS_GENRE;

    // No word of "what kind of movie is Heat" names `has_genre`: the genre, chosen by
    // meaning, is flagged, and the explanation names the path.
    let request = kind_of_movie_request();
    let reply = embedded_reply(KIND_OF_MOVIE_MEANS_GENRE, SummaryRule::default(), &request).await;
    assert_eq!(reply.answers[0].text, "Crime", "{reply:?}");
    assert!(reply.low_confidence, "{reply:?}");
    assert!(
        reply.explanation.ends_with("follow (has genre)."),
        "{}",
        reply.explanation
    );
    // Without an embedder the director, first in evidence order, is flagged as well.
    let lexical = reply_in_time(&rule_only(None), request.clone()).await;
    assert_eq!(lexical.answers[0].text, "Michael Mann", "{lexical:?}");
    assert!(lexical.low_confidence, "{lexical:?}");
    assert!(
        lexical.explanation.ends_with("follow (directed by)."),
        "{}",
        lexical.explanation
    );
    // A word names `directed_by`: not flagged (with MiniLM: `cli/tests/ask_sample.rs`).
    let mut named = request.clone();
    named.question = "who directed Heat".into();
    let lexical = reply_in_time(&rule_only(None), named).await;
    assert_eq!(lexical.answers[0].text, "Michael Mann", "{lexical:?}");
    assert!(!lexical.low_confidence, "{lexical:?}");
    // A plan the evidence follows chose the path: no flag.
    let mut planned = request;
    planned.plan = vec![Metapath {
        steps: vec![RelationStep {
            relation: "has_genre".into(),
            direction: Direction::Out,
        }],
    }];
    let reply = reply_in_time(&rule_only(None), planned).await;
    assert_eq!(reply.answers[0].text, "Crime", "{reply:?}");
    assert!(!reply.low_confidence, "{reply:?}");
}

#[tokio::test]
async fn a_tie_words_explain_alike_goes_to_the_relations_clearly_nearest() {
    use crate::scoring::fixtures::{TEAM_BARELY_NEARER_CLUB, TEAM_NEARER_CLUB};

    let brazil = entity(1, "Brazil");
    let player = entity(2, "Alvaro PEREIRA");
    // The position path first, as many players share a position.
    let evidence = vec![
        walk(
            &brazil,
            vec![
                step("plays_for_country", true, &player),
                step("plays_position", false, &entity(3, "Midfielder")),
            ],
            0.9,
        ),
        walk(
            &brazil,
            vec![
                step("plays_for_country", true, &player),
                step("plays_in_club", false, &entity(4, "Sao Paulo FC")),
            ],
            0.8,
        ),
    ];
    let mut request = request(evidence, vec![brazil]);
    request.question = "which football team do players from Brazil play for".into();
    let first = |reply: &kgmesh_schemas::messages::summarizer::SummarizeReply| {
        reply.answers.first().map(|a| a.text.clone())
    };
    // "players" and "play" name both second relations alike: evidence order decides.
    let lexical = summarize(&request, &SummaryRule::default());
    assert_eq!(
        first(&lexical).as_deref(),
        Some("Midfielder"),
        "{lexical:?}"
    );
    // The club's relations read clearly nearer to the question's words.
    let reply = embedded_reply(TEAM_NEARER_CLUB, SummaryRule::default(), &request).await;
    assert_eq!(first(&reply).as_deref(), Some("Sao Paulo FC"), "{reply:?}");
    assert_eq!(reply.answers[0].evidence, vec![1]);
    // Nearer by less than the margin is no reason: evidence order decides again.
    let reply = embedded_reply(TEAM_BARELY_NEARER_CLUB, SummaryRule::default(), &request).await;
    assert_eq!(first(&reply).as_deref(), Some("Midfielder"), "{reply:?}");
    // A plan the evidence follows outranks the embedder.
    let mut planned = request.clone();
    planned.plan = vec![Metapath {
        steps: vec![
            RelationStep {
                relation: "plays_for_country".into(),
                direction: Direction::In,
            },
            RelationStep {
                relation: "plays_position".into(),
                direction: Direction::Out,
            },
        ],
    }];
    let reply = embedded_reply(TEAM_NEARER_CLUB, SummaryRule::default(), &planned).await;
    assert_eq!(first(&reply).as_deref(), Some("Midfielder"), "{reply:?}");
}

#[tokio::test]
async fn a_best_path_far_from_the_question_by_meaning_is_answered_on_a_condition() {
    use crate::scoring::fixtures::TYPES_MEAN_GENRE;

    // A football question asked of a film graph: "player" is no relation of it, and
    // the table places the question's words apart from every path's profile. The
    // path's end is given on a condition: declined unless its confidence, which the
    // coordinator estimates, reaches the rule's bar.
    let spain = entity(1, "Spain");
    let evidence = vec![path(&spain, "has_tags", &entity(2, "Talk to Her"), 0.9)];
    let mut request = request(evidence, vec![spain]);
    request.question = "which football club has a player from Spain".into();
    let rule = SummaryRule {
        far_answer_min_confidence: 0.7,
        ..SummaryRule::default()
    };
    let reply = embedded_reply(TYPES_MEAN_GENRE, rule, &request).await;
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts, ["Talk to Her"], "{reply:?}");
    assert!(reply.low_confidence, "{reply:?}");
    let decline = reply.decline.as_ref().expect("a condition on the answers");
    assert_eq!(decline.below, 0.7);
    assert!(
        decline.why.starts_with(
            "the path that best explains the question (has tags (inverse)) is far from its \
             words by meaning"
        ),
        "{}",
        decline.why
    );
    assert!(
        reply
            .explanation
            .contains("the path that best explains the question (has tags (inverse)) is far"),
        "{}",
        reply.explanation
    );
    // Turned off, or where something besides the question's words chose the path (a
    // plan the evidence follows, learned cues), the path's end is the answer, on no
    // condition.
    let off = SummaryRule {
        abstain_relations_cosine: 0.0,
        ..SummaryRule::default()
    };
    let mut planned = request.clone();
    planned.plan = vec![Metapath {
        steps: vec![RelationStep {
            relation: "has_tags".into(),
            direction: Direction::In,
        }],
    }];
    let mut cued = request.clone();
    cued.cues = vec![kgmesh_schemas::messages::cache::RelationCue {
        word: "club".into(),
        relation: "has_tags".into(),
        inverse: true,
        weight: 0.9,
    }];
    for (rule, request) in [
        (off, &request),
        (SummaryRule::default(), &planned),
        (SummaryRule::default(), &cued),
    ] {
        let reply = embedded_reply(TYPES_MEAN_GENRE, rule, request).await;
        let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
        assert_eq!(texts, ["Talk to Her"], "{reply:?}");
        assert_eq!(reply.decline, None, "{reply:?}");
    }
}

#[tokio::test]
async fn a_far_path_is_answered_low_confidence_when_the_asked_class_is_the_graphs() {
    use crate::scoring::{fixtures::MOVIES_NEAR_EVERY_RELATION, relevance::TextVectors};

    // "which movies are about Spain" over a film graph: no word names `has_tags` and
    // the table places the question apart from the path, but "movies" reads near the
    // graph's `starred actors` (0.64), so the question asks for what the graph holds.
    async fn reply(question: &str) -> kgmesh_schemas::messages::summarizer::SummarizeReply {
        let spain = entity(1, "Spain");
        let evidence = vec![path(&spain, "has_tags", &entity(2, "Talk to Her"), 0.9)];
        let mut request = request(evidence, vec![spain]);
        request.question = question.into();
        let summarizer = Summarizer {
            llm: None,
            rule: SummaryRule::default(),
            vectors_opt: Some(Arc::new(TextVectors::new(
                Arc::new(MOVIES_NEAR_EVERY_RELATION),
                100,
            ))),
            graph_opt: Some(Arc::new(crate::scoring::fixtures::movies())),
        };
        tokio::time::timeout(
            Duration::from_secs(10),
            summarizer.summarize(&CallContext::for_test(Role::SUMMARIZER), request),
        )
        .await
        .expect("in time")
        .expect("a reply")
    }
    let answered = reply("which movies are about Spain").await;
    let texts: Vec<&str> = answered.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts, ["Talk to Her"], "{answered:?}");
    assert!(answered.low_confidence, "{answered:?}");
    assert!(
        answered.explanation.ends_with(
            "answered because what the question asks for (\"movies\") reads near a \
             relation of the graph."
        ),
        "{}",
        answered.explanation
    );
    assert_eq!(answered.decline, None, "{answered:?}");
    // A class the table places apart from every relation: answered on the condition
    // that the coordinator finds the answer likely enough.
    let conditional = reply("which football club has a player from Spain").await;
    let decline = conditional.decline.as_ref().expect("{conditional:?}");
    assert!(
        decline
            .why
            .starts_with("the path that best explains the question"),
        "{}",
        decline.why
    );
}

#[test]
fn answers_cut_at_the_limit_are_counted_in_the_explanation() {
    let mann = entity(1, "Michael Mann");
    let films = [
        entity(2, "Heat"),
        entity(3, "Collateral"),
        entity(4, "Thief"),
    ];
    let evidence = films
        .iter()
        .map(|film| path(&mann, "directed_by", film, 0.9))
        .collect();
    let mut request = request(evidence, vec![mann]);
    request.question = "what films did Michael Mann direct".into();
    request.max_answers = 2;
    let reply = summarize(&request, &SummaryRule::default());
    assert_eq!(reply.answers.len(), 2);
    assert!(
        reply
            .explanation
            .starts_with("3 answers from the graph (showing 2)"),
        "{}",
        reply.explanation
    );
    request.max_answers = 10;
    let reply = summarize(&request, &SummaryRule::default());
    assert!(
        reply.explanation.starts_with("3 answers from the graph,"),
        "{}",
        reply.explanation
    );
}

#[test]
fn an_answer_cites_the_evidence_that_explains_it_not_every_line_that_ends_there() {
    let heat = entity(1, "Heat");
    let mann = entity(2, "Michael Mann");
    let crime = entity(3, "Crime");
    let collateral = entity(4, "Collateral");
    let evidence = vec![
        // A genre path through another film that happens to end at the director ...
        walk(
            &heat,
            vec![
                step("has_genre", false, &crime),
                step("has_genre", true, &collateral),
                step("directed_by", false, &mann),
            ],
            0.3,
        ),
        // ... a weak triple of another relation ...
        triple("scoring-retriever", &heat, "written_by", &mann, 0.2),
        triple("scoring-retriever", &heat, "has_genre", &crime, 1.0),
        // ... and the line that says it.
        walk(&heat, vec![step("directed_by", false, &mann)], 1.0),
    ];
    let mut request = request(evidence, vec![heat]);
    request.question = "who directed Heat".into();
    let reply = summarize(&request, &SummaryRule::default());
    assert_eq!(reply.answers[0].text, "Michael Mann", "{reply:?}");
    assert_eq!(reply.answers[0].evidence, vec![3], "{reply:?}");
}

#[test]
fn how_many_is_answered_with_the_count_then_what_was_counted() {
    let mann = entity(1, "Michael Mann");
    let films: Vec<Entity> = (0..3)
        .map(|i| entity(10 + i, &format!("Film {i}")))
        .collect();
    let evidence: Vec<Evidence> = films
        .iter()
        .map(|film| walk(&mann, vec![step("directed_by", true, film)], 1.0))
        .collect();
    let mut request = request(evidence, vec![mann]);
    request.question = "how many films did Michael Mann direct".into();
    let reply = summarize(&request, &SummaryRule::default());
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts[0], "3", "{reply:?}");
    assert!(reply.answers[0].entity.is_none());
    assert_eq!(
        reply.answers[0].evidence.len(),
        3,
        "it cites what it counted"
    );
    let mut counted = texts[1..].to_vec();
    counted.sort();
    assert_eq!(counted, ["Film 0", "Film 1", "Film 2"]);
    assert!(
        reply.explanation.starts_with("3 counted in the graph"),
        "{}",
        reply.explanation
    );
    // Only "how many" counts.
    request.question = "which films did Michael Mann direct".into();
    let reply = summarize(&request, &SummaryRule::default());
    assert_eq!(reply.answers.len(), 3);
}

#[test]
fn how_many_counts_every_end_of_the_explained_paths_however_supported() {
    let mann = entity(1, "Michael Mann");
    let films: Vec<Entity> = (0..5)
        .map(|i| entity(10 + i, &format!("Film {i}")))
        .collect();
    // The path follower reaches five films over `directed_by`, scored as it ranks them;
    // a second retriever also proposes the first two, with more support than the rest.
    let mut evidence: Vec<Evidence> = films
        .iter()
        .enumerate()
        .map(|(i, film)| {
            walk(
                &mann,
                vec![step("directed_by", true, film)],
                1.0 - 0.1 * i as f32,
            )
        })
        .collect();
    for film in &films[..2] {
        evidence.push(triple("scoring-retriever", film, "directed_by", &mann, 1.0));
    }
    let mut request = request(evidence, vec![mann]);
    request.question = "how many films did Michael Mann direct".into();
    let reply = summarize(&request, &SummaryRule::default());
    assert_eq!(reply.answers[0].text, "5", "{reply:?}");
    assert!(
        reply.explanation.starts_with("5 counted in the graph"),
        "{}",
        reply.explanation
    );
    // Named, not counted, the best supported come first and the weakest are left out.
    request.question = "which films did Michael Mann direct".into();
    let reply = summarize(&request, &SummaryRule::default());
    assert!(reply.answers.len() < 5, "{reply:?}");
}

#[test]
fn a_property_the_question_names_outranks_the_neighbours_a_path_reaches() {
    let chai = entity(1, "Chai");
    let orders: Vec<Evidence> = (10..13)
        .map(|id| path(&chai, "ORDERS", &entity(id, &format!("order {id}")), 0.9))
        .collect();
    let lookup = |key: &str, value: Value| Evidence {
        source: "query-executor".into(),
        score: 1.0,
        item: EvidenceItem::Query {
            cypher: format!("MATCH (n {{name: 'Chai'}}) RETURN n.`{key}`"),
            rows: Rows {
                columns: vec![format!("n.`{key}`")],
                rows: vec![vec![value]],
                truncated: false,
            },
            grounded: false,
        },
    };
    let mut evidence = orders.clone();
    evidence.push(lookup("unitPrice", Value::Float(18.0)));
    let mut asked = request(evidence, vec![chai.clone()]);
    asked.question = "what is the unit price of Chai".into();
    let reply = summarize(&asked, &SummaryRule::default());
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts.first(), Some(&"18"), "{texts:?}");
    // "How many" of a number the graph stores is that number, not a count of answers.
    let mut evidence = orders;
    evidence.push(lookup("unitsInStock", Value::Int(39)));
    let mut asked = request(evidence, vec![chai]);
    asked.question = "how many units in stock does Chai have".into();
    let reply = summarize(&asked, &SummaryRule::default());
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts.first(), Some(&"39"), "{texts:?}");
}

#[test]
fn how_many_of_the_one_number_a_path_reaches_is_that_number_not_one() {
    // A triple graph stores the arena's capacity as a node named "38500"; no word of
    // the question names `capacity`.
    let arena = entity(1, "Kingsgate Arena");
    let capacity = entity(2, "38500");
    let opened = entity(3, "1998");
    let mut request = request(
        vec![path(&arena, "capacity", &capacity, 1.0)],
        vec![arena.clone()],
    );
    request.question = "how many people does Kingsgate Arena hold".into();
    let reply = summarize(&request, &SummaryRule::default());
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts, ["38500"], "{reply:?}");
    // A year is no count: counted, it is one thing reached.
    let mut request = self::request(vec![path(&arena, "opened_in", &opened, 1.0)], vec![arena]);
    request.question = "how many people does Kingsgate Arena hold".into();
    let reply = summarize(&request, &SummaryRule::default());
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts, ["1", "1998"], "{reply:?}");
}

/// A model that declares a 4,096-token window gets a prompt that fits it: the evidence
/// is cut to its best lines. Without a declared window the same context is sent whole.
#[tokio::test]
async fn the_prompt_fits_the_models_declared_window() {
    let pacino = entity(1, "Al Pacino");
    let evidence: Vec<Evidence> = (0..600)
        .map(|i| {
            let film = entity(
                100 + i,
                &format!("A Film With A Rather Long Title Number {i}"),
            );
            path(&pacino, "starred_actors", &film, 0.5)
        })
        .collect();
    let mut prompt_chars = Vec::new();
    for window in [None, Some(4_096)] {
        let mut model = ScriptedModel::always(Ok("<answers></answers>"));
        if let Some(window) = window {
            model = model.with_context_tokens(window);
        }
        let model = Arc::new(model);
        let summarizer = Summarizer {
            llm: Some(model.clone()),
            rule: SummaryRule::default(),
            vectors_opt: None,
            graph_opt: None,
        };
        let ctx = CallContext::for_test(Role::SUMMARIZER);
        summarizer
            .summarize(&ctx, request(evidence.clone(), vec![pacino.clone()]))
            .await
            .unwrap();
        let prompts = model.prompts();
        prompt_chars.push(prompts[0].chars().count());
    }
    // Four characters a token: the whole context is over 4,000 estimated tokens, the
    // fitted one leaves room for the reply and a finer real tokenization.
    assert!(prompt_chars[0] / 4 > 4_000, "{prompt_chars:?}");
    assert!(prompt_chars[1] / 4 < 2_600, "{prompt_chars:?}");
}

#[test]
fn a_query_written_for_the_question_answers_in_its_row_order() {
    let heat = entity(1, "Heat");
    let grounded = |rows: Vec<Vec<Value>>| {
        Evidence {
        source: "query-executor".into(),
        score: 1.0,
        item: EvidenceItem::Query {
            cypher: "MATCH (x:Product) RETURN x.name AS answer, x.price AS value ORDER BY value DESC LIMIT 2".into(),
            rows: Rows {
                columns: vec!["answer".into(), "value".into()],
                rows,
                truncated: false,
            },
            grounded: true,
        },
    }
    };
    // A path to another candidate, which alone would be the answer.
    let mut evidence = vec![path(&heat, "directed_by", &entity(2, "Michael Mann"), 0.9)];
    evidence.push(grounded(vec![
        vec![Value::String("Côte de Blaye".into()), Value::Float(263.5)],
        vec![
            Value::String("Thüringer Rostbratwurst".into()),
            Value::Float(123.79),
        ],
        vec![Value::String("Côte de Blaye".into()), Value::Float(263.5)],
    ]));
    let asked = request(evidence.clone(), vec![heat.clone()]);
    let reply = summarize(&asked, &SummaryRule::default());
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(
        texts,
        ["Côte de Blaye", "Thüringer Rostbratwurst"],
        "{reply:?}"
    );
    assert!(reply.answers.iter().all(|a| a.evidence == [1]), "{reply:?}");
    assert!(
        reply.explanation.contains("query written for the question"),
        "{}",
        reply.explanation
    );
    // The second column (the ranking's values) is no answer; a cut is said.
    let mut one = asked.clone();
    one.max_answers = 1;
    let reply = summarize(&one, &SummaryRule::default());
    assert_eq!(reply.answers.len(), 1);
    assert!(
        reply.explanation.contains("showing 1"),
        "{}",
        reply.explanation
    );
    // The same rows from a query that was not written for the question are weighed
    // against the rest of the evidence, and here the path wins.
    let mut weighed = evidence;
    if let EvidenceItem::Query { grounded, .. } = &mut weighed[1].item {
        *grounded = false;
    }
    let reply = summarize(&request(weighed, vec![heat]), &SummaryRule::default());
    assert_eq!(reply.answers[0].text, "Michael Mann", "{reply:?}");
}

fn passage(text: &str) -> Evidence {
    Evidence {
        source: "text-retriever".into(),
        score: 1.0,
        item: EvidenceItem::Excerpt(kgmesh_schemas::messages::context::Excerpt {
            id: "p0".into(),
            file: "notes.md".into(),
            offset: 0,
            len: text.len() as u32,
            text: text.into(),
            channel: "keyword".into(),
        }),
    }
}

/// "who directed [Heat]", with a passage that says it and no graph evidence.
fn heat_notes() -> SummarizeRequest {
    let mut asked = request(
        vec![passage("Heat premiered in 1995. Michael Mann directed it.")],
        Vec::new(),
    );
    asked.question = "who directed [Heat]".into();
    asked
}

/// The summarizer without a model, with `vectors_opt`.
fn rule_only(vectors_opt: Option<Arc<crate::scoring::relevance::TextVectors>>) -> Summarizer {
    Summarizer {
        llm: None,
        rule: SummaryRule::default(),
        vectors_opt,
        graph_opt: None,
    }
}

/// The rule with the fixtures' table embedder, which places every text apart, and no
/// abstaining by meaning (the table would make every path far from every question).
fn rule_with_apart_vectors() -> Summarizer {
    use crate::scoring::{fixtures::TYPES_MEAN_GENRE, relevance::TextVectors};

    Summarizer {
        rule: SummaryRule {
            abstain_relations_cosine: 0.0,
            ..SummaryRule::default()
        },
        ..rule_only(Some(Arc::new(TextVectors::new(
            Arc::new(TYPES_MEAN_GENRE),
            100,
        ))))
    }
}

/// `summarizer`'s reply to `asked`, within 10 seconds.
async fn reply_in_time(summarizer: &Summarizer, asked: SummarizeRequest) -> super::SummarizeReply {
    tokio::time::timeout(
        Duration::from_secs(10),
        summarizer.summarize(&CallContext::for_test(Role::SUMMARIZER), asked),
    )
    .await
    .expect("in time")
    .expect("a reply")
}

#[tokio::test]
async fn without_a_model_passages_are_read_when_the_graph_names_no_answer() {
    let summarizer = rule_only(None);
    let mut asked = heat_notes();
    let reply = reply_in_time(&summarizer, asked.clone()).await;
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts, ["Michael Mann"], "{reply:?}");
    assert_eq!(reply.answers[0].evidence, [0]);
    assert!(
        reply.explanation.contains("notes.md:24"),
        "{}",
        reply.explanation
    );

    // Where the graph's evidence answers as much of the question, the graph keeps it.
    let heat = entity(2, "Heat");
    let mann = entity(3, "Mann (the graph's)");
    asked
        .context
        .evidence
        .push(path(&heat, "directed_by", &mann, 0.9));
    asked.topic_entities = vec![heat];
    let reply = reply_in_time(&summarizer, asked).await;
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts, ["Mann (the graph's)"], "{reply:?}");
}

#[tokio::test]
async fn graph_and_passages_both_answering_the_one_explaining_more_wins() {
    let summarizer = rule_only(None);
    let heat = entity(2, "Heat");
    let mann = entity(3, "Michael Mann");
    let mut asked = request(
        vec![
            path(&heat, "directed_by", &mann, 0.9),
            passage("The poster for Heat was designed by Ann Lee in 1995."),
        ],
        vec![heat],
    );
    // The graph's path says nothing of a poster; the passage says all of it.
    asked.question = "who designed the poster for Heat".into();
    let reply = reply_in_time(&summarizer, asked.clone()).await;
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts, ["Ann Lee"], "{reply:?}");
    assert!(
        reply.explanation.contains("explain more of the question"),
        "{}",
        reply.explanation
    );
    // Asked what the path says, the graph's answer stands.
    asked.question = "who directed Heat".into();
    let reply = reply_in_time(&summarizer, asked.clone()).await;
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts, ["Michael Mann"], "{reply:?}");
    // A graph answer that cannot be what is asked (a year for "who"), beside passages
    // that do not answer either, is no answer.
    let year = entity(4, "1995");
    asked.context.evidence[0] = path(&entity(2, "Heat"), "release_year", &year, 0.9);
    asked.question = "who painted the mural in Heat".into();
    let reply = reply_in_time(&summarizer, asked).await;
    assert!(reply.answers.is_empty(), "{reply:?}");
    assert!(
        reply
            .explanation
            .contains("the question asks for a person, and everything found is a number"),
        "{}",
        reply.explanation
    );
}

/// An embedder whose service is down.
struct Unreachable;

#[async_trait::async_trait]
impl kgmesh_models::Embedder for Unreachable {
    fn name(&self) -> &str {
        "unreachable"
    }

    fn dim(&self) -> usize {
        2
    }

    async fn embed(&self, _: &[String]) -> Result<Vec<Vec<f32>>, kgmesh_models::EmbedError> {
        Err(kgmesh_models::EmbedError::Remote(
            "connection refused".into(),
        ))
    }
}

#[tokio::test]
async fn passages_read_by_words_when_the_embedder_fails_say_so() {
    let summarizer = rule_only(Some(Arc::new(crate::scoring::relevance::TextVectors::new(
        Arc::new(Unreachable),
        16,
    ))));
    let reply = reply_in_time(&summarizer, heat_notes()).await;
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts, ["Michael Mann"], "{reply:?}");
    assert!(
        reply
            .explanation
            .contains("read by words only: the embedder failed")
            && reply.explanation.contains("connection refused"),
        "{}",
        reply.explanation
    );
}

#[tokio::test]
async fn a_name_whose_words_read_as_a_team_does_not_answer_who() {
    // Two plain capitalized words are a person by their form, and "Customer Care"
    // stands nearer the verb asked about than the person who did it.
    let with_passage = |text: &str| {
        let mut asked = request(vec![passage(text)], Vec::new());
        asked.question = "who approved the warranty exception for the Vireo 2".into();
        asked
    };
    let asked = with_passage(
        "Beatrix Nwosu, who supervises Customer Care, has approved a one-off warranty \
         exception for your Vireo 2.",
    );
    let by_form = reply_in_time(&rule_only(None), asked.clone()).await;
    assert_eq!(by_form.answers[0].text, "Customer Care", "{by_form:?}");
    // Written between a determiner and a noun for people, it names a unit by its
    // place alone.
    let unit = with_passage(
        "Beatrix Nwosu, who supervises our Customer Care agents, has approved a \
         one-off warranty exception for your Vireo 2.",
    );
    let by_place = reply_in_time(&rule_only(None), unit).await;
    assert_eq!(by_place.answers[0].text, "Beatrix Nwosu", "{by_place:?}");
    // Read by meaning, its words say a team, and the person answers.
    let summarizer = rule_only(Some(Arc::new(crate::scoring::relevance::TextVectors::new(
        Arc::new(crate::scoring::fixtures::KINDS_OF_NAMES),
        64,
    ))));
    let by_meaning = reply_in_time(&summarizer, asked).await;
    assert_eq!(
        by_meaning.answers[0].text, "Beatrix Nwosu",
        "{by_meaning:?}"
    );
}

/// "who founded Norrland Jet" over the airline's founding year and its founder, the year
/// first in the evidence: the question's word names both relations alike.
fn founded_request(question: &str, with_founder: bool) -> SummarizeRequest {
    let airline = entity(1, "Norrland Jet");
    let mut evidence = vec![walk(
        &airline,
        vec![step("founded_year", false, &entity(2, "1995"))],
        0.9,
    )];
    if with_founder {
        evidence.push(walk(
            &airline,
            vec![step("founded_by", false, &entity(3, "Maren Ashby"))],
            0.9,
        ));
    }
    let mut asked = request(evidence, vec![airline]);
    asked.question = question.into();
    asked
}

#[tokio::test]
async fn a_path_answering_with_numbers_gives_way_where_a_person_is_asked() {
    let with_words = rule_only(None);
    let with_vectors = rule_with_apart_vectors();
    for summarizer in [&with_words, &with_vectors] {
        let reply = reply_in_time(
            summarizer,
            founded_request("who founded Norrland Jet", true),
        )
        .await;
        let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
        assert_eq!(texts, ["Maren Ashby"], "{reply:?}");
        assert!(
            reply.explanation.ends_with(
                "Paths whose answers are each a year were set aside: the question asks for \
                 a person."
            ),
            "{}",
            reply.explanation
        );

        // Where a year is asked, the year answers; the founder's path, which reads the
        // question as well, is set aside with it and not given as a second answer.
        let reply = reply_in_time(
            summarizer,
            founded_request("when was Norrland Jet founded", true),
        )
        .await;
        let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
        assert_eq!(texts, ["1995"], "{reply:?}");
        assert!(
            reply.explanation.ends_with(
                "Paths whose answers are each a person were set aside: the question asks for \
                 a date."
            ),
            "{}",
            reply.explanation
        );

        // With nothing of the asked form found, no answer: a year cannot be who.
        let reply = reply_in_time(
            summarizer,
            founded_request("who founded Norrland Jet", false),
        )
        .await;
        assert!(reply.answers.is_empty(), "{reply:?}");
        assert_eq!(
            reply.explanation,
            "I don't know: the question asks for a person, and everything found is a number."
        );
        // An edge from the airline to a person is something of the asked form.
        let mut request = founded_request("who founded Norrland Jet", false);
        request.context.evidence.push(triple(
            "agentic-traverser",
            &entity(1, "Norrland Jet"),
            "chief_executive",
            &entity(4, "Ola Brenne"),
            0.5,
        ));
        let reply = reply_in_time(summarizer, request).await;
        assert!(!reply.answers.is_empty(), "{reply:?}");
    }
}

#[tokio::test]
async fn a_cue_from_the_plan_cache_does_not_keep_a_path_of_the_wrong_form() {
    use kgmesh_schemas::messages::cache::RelationCue;

    use crate::scoring::text::stem;

    // A cache warmed with "when was X founded" learned "founded" as `founded_year` (from
    // one plan, 1/3, or from many): the cue favours the year, which cannot be who
    // founded the airline.
    let cue = |weight: f32| RelationCue {
        word: stem("founded"),
        relation: "founded_year".into(),
        inverse: false,
        weight,
    };
    let with_vectors = rule_with_apart_vectors();
    for summarizer in [&rule_only(None), &with_vectors] {
        for weight in [1.0 / 3.0, 0.9] {
            let mut asked = founded_request("who founded Norrland Jet", true);
            asked.cues = vec![cue(weight)];
            let reply = reply_in_time(summarizer, asked).await;
            let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
            assert_eq!(texts, ["Maren Ashby"], "{reply:?}");
            assert!(reply.explanation.contains("set aside"), "{reply:?}");
        }
        // Where the cue's year is what is asked, it answers.
        let mut asked = founded_request("when was Norrland Jet founded", true);
        asked.cues = vec![cue(1.0 / 3.0)];
        let reply = reply_in_time(summarizer, asked).await;
        assert_eq!(reply.answers[0].text, "1995", "{reply:?}");
    }
}

/// Migrastat's class first in the evidence, over `type_relation`, then its manufacturer.
fn migrastat_request(question: &str, type_relation: &str) -> SummarizeRequest {
    let drug = entity(1, "Migrastat");
    let evidence = vec![
        walk(
            &drug,
            vec![step(type_relation, false, &entity(2, "medication"))],
            0.9,
        ),
        walk(
            &drug,
            vec![step(
                "manufacturer",
                false,
                &entity(3, "Estrel Laboratories"),
            )],
            0.9,
        ),
    ];
    let mut asked = request(evidence, vec![drug]);
    asked.question = question.into();
    asked
}

#[tokio::test]
async fn a_path_naming_its_starts_class_gives_way_unless_the_question_asks_for_it() {
    let summarizer = rule_only(None);
    // No word names either relation; the class came first.
    let reply = reply_in_time(
        &summarizer,
        migrastat_request("who makes Migrastat", "is_a"),
    )
    .await;
    assert_eq!(reply.answers[0].text, "Estrel Laboratories", "{reply:?}");
    assert!(
        reply.explanation.ends_with(
            "Paths ending at a class over `is_a` were set aside: no word of the question \
             asks for one."
        ),
        "{}",
        reply.explanation
    );
    // "type" names `drug_type`: the class is what is asked.
    let reply = reply_in_time(
        &summarizer,
        migrastat_request("what type of drug is Migrastat", "drug_type"),
    )
    .await;
    assert_eq!(reply.answers[0].text, "medication", "{reply:?}");
    assert!(!reply.explanation.contains("set aside"), "{reply:?}");
}

#[tokio::test]
async fn a_path_whose_answers_the_graph_declares_of_another_class_gives_way() {
    use crate::scoring::fixtures::{entity as node, graph};

    let kg = graph(&[
        ("Dr. Ilse Varga", "works_in", "Valley Cardiology"),
        ("Valley Cardiology", "staffed_by", "Ruth Abernathy"),
        ("Dr. Ilse Varga", "is_a", "doctor"),
        ("Ruth Abernathy", "is_a", "nurse"),
    ]);
    let department = node(&kg, "Valley Cardiology");
    let evidence = vec![
        walk(
            &department,
            vec![step("works_in", true, &node(&kg, "Dr. Ilse Varga"))],
            0.9,
        ),
        walk(
            &department,
            vec![step("staffed_by", false, &node(&kg, "Ruth Abernathy"))],
            0.9,
        ),
    ];
    let summarizer = Summarizer {
        graph_opt: Some(Arc::new(kg)),
        ..rule_only(None)
    };
    let mut asked = request(evidence, vec![department]);
    // "work" names the doctor's relation, not the nurse's: the graph says who is a
    // nurse.
    asked.question = "which nurses work in Valley Cardiology".into();
    let reply = reply_in_time(&summarizer, asked.clone()).await;
    assert_eq!(reply.answers[0].text, "Ruth Abernathy", "{reply:?}");
    assert!(
        reply.explanation.ends_with(
            "Paths whose answers the graph declares to be of another class were set aside: \
             the question asks for nurses."
        ),
        "{}",
        reply.explanation
    );
    // What a count counts is a class too.
    asked.question = "how many nurses work in Valley Cardiology".into();
    let reply = reply_in_time(&summarizer, asked.clone()).await;
    assert!(
        reply
            .explanation
            .contains("another class were set aside: the question asks for nurses."),
        "{reply:?}"
    );
    // A class no answer is declared of decides nothing.
    asked.question = "which surgeons work in Valley Cardiology".into();
    let reply = reply_in_time(&summarizer, asked).await;
    assert_eq!(reply.answers[0].text, "Dr. Ilse Varga", "{reply:?}");
    assert!(!reply.explanation.contains("set aside"), "{reply:?}");
}

#[tokio::test]
async fn a_path_whose_answers_the_graphs_relations_call_another_kind_gives_way() {
    use crate::scoring::fixtures::{entity as node, graph};

    let kg = graph(&[
        ("Vera Holm", "spouse", "Anton Holm"),
        ("Anton Holm", "spouse", "Vera Holm"),
        ("Anton Holm", "employer", "Harbor College"),
    ]);
    let vera = node(&kg, "Vera Holm");
    let anton = node(&kg, "Anton Holm");
    let evidence = vec![
        walk(&vera, vec![step("spouse", false, &anton)], 0.9),
        walk(
            &vera,
            vec![
                step("spouse", false, &anton),
                step("employer", false, &node(&kg, "Harbor College")),
            ],
            0.9,
        ),
    ];
    let summarizer = Summarizer {
        graph_opt: Some(Arc::new(kg)),
        ..rule_only(None)
    };
    let mut asked = request(evidence, vec![vera]);
    // "work" names neither path: the spouse explains more of the question, but a
    // spouse is a person and "where" asks for a place.
    asked.question = "where does Vera Holm's spouse work".into();
    let reply = reply_in_time(&summarizer, asked.clone()).await;
    assert_eq!(reply.answers[0].text, "Harbor College", "{reply:?}");
    assert!(
        reply.explanation.contains(
            "Paths whose answers the graph calls a person were set aside: the \
             question asks for a place."
        ),
        "{}",
        reply.explanation
    );
    // "who" asks for a person: the spouse answers.
    asked.question = "who is Vera Holm's spouse".into();
    let reply = reply_in_time(&summarizer, asked).await;
    assert_eq!(reply.answers[0].text, "Anton Holm", "{reply:?}");
    assert!(!reply.explanation.contains("set aside"), "{reply:?}");
}

#[tokio::test]
async fn paths_are_judged_with_the_classes_the_graph_declares() {
    use crate::scoring::fixtures;
    // Idris is a doctor: in "the department Idris Penhallow works in", "department"
    // does not say what Idris is, and still names `department_head`.
    let graph = fixtures::graph(&[
        ("Idris Penhallow", "is_a", "doctor"),
        ("Idris Penhallow", "works_in", "Oncology Wing"),
        ("Oncology Wing", "is_a", "department"),
        ("Oncology Wing", "department_head", "Reza Castellane"),
        ("Reza Castellane", "is_a", "doctor"),
        ("Oncology Wing", "located_in", "Valmora"),
    ]);
    let node = |name: &str| fixtures::entity(&graph, name);
    let (idris, wing) = (node("Idris Penhallow"), node("Oncology Wing"));
    let evidence = vec![
        walk(
            &idris,
            vec![
                step("works_in", false, &wing),
                step("located_in", false, &node("Valmora")),
            ],
            0.9,
        ),
        walk(
            &idris,
            vec![
                step("works_in", false, &wing),
                step("department_head", false, &node("Reza Castellane")),
            ],
            0.9,
        ),
    ];
    let mut request = request(evidence, vec![idris.clone()]);
    request.question = "Who is the boss of the department Idris Penhallow works in?".into();
    let summarizer = Summarizer {
        llm: None,
        rule: SummaryRule::default(),
        vectors_opt: None,
        graph_opt: Some(Arc::new(graph)),
    };
    let reply = tokio::time::timeout(
        Duration::from_secs(10),
        summarizer.summarize(&CallContext::for_test(Role::SUMMARIZER), request),
    )
    .await
    .expect("in time")
    .expect("a reply");
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts.first(), Some(&"Reza Castellane"), "{reply:?}");
}

#[tokio::test]
async fn the_answers_class_is_read_from_what_each_path_reaches() {
    use crate::scoring::fixtures::{entity as node, graph};

    let kg = graph(&[
        ("Harbor Rovers", "based_in", "Tessport"),
        ("Mina Kael", "former_club", "Harbor Rovers"),
        ("Mina Kael", "current_club", "Ostby Athletic"),
        ("Ostby Athletic", "based_in", "Ostby"),
    ]);
    let town = node(&kg, "Tessport");
    let (rovers, mina) = (node(&kg, "Harbor Rovers"), node(&kg, "Mina Kael"));
    let evidence = vec![
        // A detour past the club to its former player's current club: "club" names its
        // last hop.
        walk(
            &town,
            vec![
                step("based_in", true, &rovers),
                step("former_club", true, &mina),
                step("current_club", false, &node(&kg, "Ostby Athletic")),
            ],
            0.9,
        ),
        walk(&town, vec![step("based_in", true, &rovers)], 0.9),
    ];
    let summarizer = Summarizer {
        graph_opt: Some(Arc::new(kg)),
        ..rule_only(None)
    };
    let mut asked = request(evidence, vec![town]);
    asked.question = "Which clubs are from Tessport?".into();
    let reply = reply_in_time(&summarizer, asked).await;
    assert_eq!(reply.answers[0].text, "Harbor Rovers", "{reply:?}");
}

/// "who runs Harbor Freight Lines" over the company's auditor (first in the evidence)
/// and its ceo: no word of the question names either relation.
fn runs_request() -> SummarizeRequest {
    let company = entity(1, "Harbor Freight Lines");
    let evidence = vec![
        walk(
            &company,
            vec![step("auditor", false, &entity(2, "Mina Lowe"))],
            0.9,
        ),
        walk(
            &company,
            vec![step("ceo", false, &entity(3, "Otto Brandt"))],
            0.9,
        ),
    ];
    let mut asked = request(evidence, vec![company]);
    asked.question = "who runs Harbor Freight Lines".into();
    asked
}

fn one_hop(relation: &str) -> Metapath {
    Metapath {
        steps: vec![RelationStep {
            relation: relation.into(),
            direction: Direction::Out,
        }],
    }
}

#[tokio::test]
async fn the_learned_readers_choice_among_tied_paths_answers_and_a_misfit_still_gives_way() {
    let with_vectors = rule_with_apart_vectors();
    for summarizer in [&rule_only(None), &with_vectors] {
        // Without a preference, the tie goes to the evidence order.
        let reply = reply_in_time(summarizer, runs_request()).await;
        assert_eq!(reply.answers[0].text, "Mina Lowe", "{reply:?}");
        // The KG-Linker's reader chose `ceo` among the plans its first stage tied.
        let mut asked = runs_request();
        asked.preferred = vec![one_hop("ceo")];
        let reply = reply_in_time(summarizer, asked).await;
        let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
        assert_eq!(texts, ["Otto Brandt"], "{reply:?}");
        // A preference only breaks ties: a path the words explain better stands.
        let mut asked = runs_request();
        asked.question = "who audits Harbor Freight Lines".into();
        asked.preferred = vec![one_hop("ceo")];
        let reply = reply_in_time(summarizer, asked).await;
        assert_eq!(reply.answers[0].text, "Mina Lowe", "{reply:?}");
        // A preferred path whose ends cannot be what is asked is still set aside.
        let mut asked = founded_request("who founded Norrland Jet", true);
        asked.preferred = vec![one_hop("founded_year")];
        let reply = reply_in_time(summarizer, asked).await;
        let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
        assert_eq!(texts, ["Maren Ashby"], "{reply:?}");
    }
}

#[test]
fn a_preference_breaks_only_a_tie_among_paths_of_its_length() {
    let two_hops = Metapath {
        steps: vec![
            one_hop("auditor").steps[0].clone(),
            one_hop("employer").steps[0].clone(),
        ],
    };
    let paths = [one_hop("auditor"), one_hop("ceo"), two_hops];
    let preferred = [one_hop("ceo")];
    // Tied with a path of its length: raised alone above the tie.
    let mut scores = [0.5, 0.5, 0.2];
    assert!(super::prefer_among_tied(&paths, &preferred, &mut scores));
    assert!(
        scores[1] > scores[0] + super::core::EXPLAINED_TIE,
        "{scores:?}"
    );
    // Tied with a longer path too: it was chosen among one-hop paths only, and says
    // nothing against the longer one.
    let mut scores = [0.5, 0.5, 0.5];
    assert!(!super::prefer_among_tied(&paths, &preferred, &mut scores));
    assert_eq!(scores, [0.5, 0.5, 0.5]);
    // Below the best, or tied with nothing: nothing moves.
    let mut scores = [0.6, 0.5, 0.2];
    assert!(!super::prefer_among_tied(&paths, &preferred, &mut scores));
    let mut scores = [0.1, 0.5, 0.2];
    assert!(!super::prefer_among_tied(&paths, &preferred, &mut scores));
}

#[test]
fn a_value_the_question_writes_past_a_node_constrains_that_node() {
    let maker = entity(1, "Aerostel");
    let (stratos, corvid) = (entity(2, "Stratos 7"), entity(3, "Corvid 320"));
    let (y1991, y1984) = (entity(4, "1991"), entity(5, "1984"));
    let flew = |model: &Entity, year: &Entity| {
        walk(
            &maker,
            vec![
                step("manufacturer", true, model),
                step("first_flight", false, year),
            ],
            1.0,
        )
    };
    let evidence = vec![
        flew(&corvid, &y1984),
        flew(&stratos, &y1991),
        path(&maker, "manufacturer", &corvid, 0.8),
        path(&maker, "manufacturer", &stratos, 0.8),
    ];
    // The year the question writes is no answer: the aircraft before it is.
    let mut asked = request(evidence.clone(), vec![maker.clone()]);
    asked.question = "Which Aerostel aircraft first flew in 1991?".into();
    let reply = summarize(&asked, &SummaryRule::default());
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts.first(), Some(&"Stratos 7"), "{reply:?}");
    assert!(!texts.contains(&"1991"), "{texts:?}");
    // A year the question does not write constrains nothing: the years are the answers.
    let mut open = request(evidence.clone(), vec![maker.clone()]);
    open.question = "When did Aerostel's aircraft first fly?".into();
    let reply = summarize(&open, &SummaryRule::default());
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert!(
        texts.contains(&"1991") && texts.contains(&"1984"),
        "{reply:?}"
    );
    // A value one hop from the question's entity is what the question asks about, not
    // a constraint past a node.
    let mut direct = request(
        vec![path(&maker, "founded", &y1991, 1.0)],
        vec![maker.clone()],
    );
    direct.question = "Was Aerostel founded in 1991?".into();
    let reply = summarize(&direct, &SummaryRule::default());
    assert_eq!(
        reply.answers.first().map(|a| a.text.as_str()),
        Some("1991"),
        "{reply:?}"
    );
}

#[test]
fn a_lower_case_name_is_a_condition_and_a_class_the_question_writes_is_not() {
    let town = entity(1, "Fairmoor");
    let dairy = entity(2, "Greyfield Dairy");
    let (milk, cheese) = (entity(3, "Milk"), entity(4, "Cheddar"));
    let (snacks, supplier) = (entity(5, "Snacks"), entity(6, "Supplier"));
    let store = entity(7, "Linwick Market Hall");
    let evidence = vec![
        walk(
            &town,
            vec![
                step("based_in", true, &dairy),
                step("supplied_by", true, &milk),
                step("stocked_at", false, &store),
            ],
            1.0,
        ),
        walk(
            &town,
            vec![
                step("based_in", true, &dairy),
                step("supplied_by", true, &cheese),
                step("in_category", false, &snacks),
            ],
            0.6,
        ),
        walk(
            &town,
            vec![
                step("based_in", true, &dairy),
                step("LABEL", false, &supplier),
            ],
            0.5,
        ),
        walk(
            &town,
            vec![
                step("based_in", true, &dairy),
                step("supplied_by", true, &milk),
            ],
            0.4,
        ),
        walk(
            &town,
            vec![
                step("based_in", true, &dairy),
                step("supplied_by", true, &cheese),
            ],
            0.4,
        ),
    ];
    // "supplier" names the dairy's class: no condition, the best path's end answers.
    let mut classed = request(evidence.clone(), vec![town.clone()]);
    classed.question = "Which stores stock products from the supplier in Fairmoor?".into();
    let reply = summarize(&classed, &SummaryRule::default());
    assert_eq!(
        reply.answers.first().map(|a| a.text.as_str()),
        Some("Linwick Market Hall"),
        "{reply:?}"
    );
    // "snacks", written in lower case, names the category the cheese is in.
    let mut constrained = request(evidence, vec![town]);
    constrained.question = "Which snacks come from suppliers in Fairmoor?".into();
    let reply = summarize(&constrained, &SummaryRule::default());
    let texts: Vec<&str> = reply.answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts.first(), Some(&"Cheddar"), "{reply:?}");
    assert!(!texts.contains(&"Snacks"), "{texts:?}");
}

#[test]
fn a_set_aside_line_tied_with_the_best_goes_below_the_others() {
    let texts: Vec<String> = [
        "headquarters (inverse)",
        "headquarters (inverse)",
        "headquarters (inverse) -> manufacturer (inverse) -> first flight",
    ]
    .map(String::from)
    .to_vec();
    // Every line reads the question alike; the first is not set aside, the year is.
    let mut scores = vec![0.5, 0.5, 0.5];
    assert!(super::demote(
        &texts,
        &mut scores,
        &[false, false, true],
        false
    ));
    assert!(
        scores[2] < scores[0] && scores[0] == scores[1],
        "{scores:?}"
    );
    // A line below the best decides nothing.
    let mut scores = vec![0.5, 0.5, 0.2];
    assert!(!super::demote(
        &texts,
        &mut scores,
        &[false, false, true],
        false
    ));
    assert_eq!(scores, [0.5, 0.5, 0.2]);
    // By sequence, one line of a sequence whose other line stands stays; by line it goes.
    let mut scores = vec![0.5, 0.5, 0.2];
    assert!(!super::demote(
        &texts,
        &mut scores,
        &[false, true, false],
        false
    ));
    assert!(super::demote(
        &texts,
        &mut scores,
        &[false, true, false],
        true
    ));
    assert!(scores[1] < scores[2] && scores[2] < scores[0], "{scores:?}");
    // Nothing goes when everything would.
    let mut scores = vec![0.5, 0.5, 0.5];
    assert!(!super::demote(
        &texts,
        &mut scores,
        &[true, true, true],
        true
    ));
}

#[tokio::test]
async fn a_declared_class_is_typed_by_meaning_where_no_word_list_knows_it() {
    use crate::scoring::{
        fixtures::{entity as node, graph, KINDS_OF_NAMES},
        relevance::TextVectors,
    };

    let kg = graph(&[
        ("Linear Algebra", "taught_in", "Marlowe Tower"),
        ("Amara Okonkwo-Bell", "teaches", "Linear Algebra"),
        ("Marlowe Tower", "is_a", "building"),
        ("Amara Okonkwo-Bell", "is_a", "professor"),
        ("Linear Algebra", "is_a", "course"),
    ]);
    let course = node(&kg, "Linear Algebra");
    let lines = [
        walk(
            &course,
            vec![step("taught_in", false, &node(&kg, "Marlowe Tower"))],
            0.9,
        ),
        walk(
            &course,
            vec![step("teaches", true, &node(&kg, "Amara Okonkwo-Bell"))],
            0.9,
        ),
    ];
    let paths: Vec<Option<&Path>> = lines
        .iter()
        .map(|line| match &line.item {
            EvidenceItem::Path(path) => Some(path),
            _ => None,
        })
        .collect();
    let texts: Vec<String> = ["taught in", "teaches (inverse)"]
        .map(String::from)
        .to_vec();
    let holders = std::collections::HashMap::new();
    let vectors = TextVectors::new(Arc::new(KINDS_OF_NAMES), 100);
    let read =
        |vectors| super::other_kind_lines(&kg, "who teaches", (&texts, &paths), &holders, vectors);
    // By words, `taught in` calls the building a teacher's: nothing is set aside.
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(10), read(None))
            .await
            .expect("in time"),
        None
    );
    // The graph declares it a building, which reads as a place by meaning.
    let (why, aside) = tokio::time::timeout(Duration::from_secs(10), read(Some(&vectors)))
        .await
        .expect("in time")
        .expect("the building is set aside");
    assert_eq!(aside, [true, false]);
    assert_eq!(
        why,
        super::SetAside::Kind {
            asked: crate::scoring::answer_type::AnswerType::Person,
            kind: crate::scoring::answer_type::AnswerType::Place,
        }
    );
}
