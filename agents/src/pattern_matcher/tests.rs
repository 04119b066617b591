use std::collections::{HashMap, HashSet};

use kgmesh_models::parse::pattern::PatternTriple;
use kgmesh_schemas::{
    graph::{Entity, ScoredEntity},
    NodeId,
};
use proptest::prelude::*;

use super::{
    core::{match_question, phrase_relations, MatchLimits, Matched},
    pattern::{pattern_from_triples, pattern_without_model, Pattern, PatternNode},
    search::{top_k, LocalGraph, SearchLimits, SearchPattern},
};
use crate::{kg_linker::core::graph_relations, scoring::fixtures};

fn entity(id: u64) -> Entity {
    Entity {
        id: NodeId(id),
        name: format!("n{id}"),
    }
}

const MOVIE_RELATIONS: &[&str] = &[
    "directed_by",
    "written_by",
    "starred_actors",
    "release_year",
    "in_language",
    "has_genre",
    "has_tags",
];
const FAMILY_RELATIONS: &[&str] = &["parents", "children", "spouse", "nationality", "gender"];
const FOOTBALL_RELATIONS: &[&str] = &[
    "plays_position",
    "plays_in_club",
    "is_in_country",
    "plays_for_country",
];

/// The LLM-free pattern of `question` over a graph with `relations` (lexical).
async fn pattern_over(question: &str, names: &[&str], relations: &[&str], edges: usize) -> Pattern {
    let relations: Vec<String> = relations.iter().map(|r| (*r).to_owned()).collect();
    let near = phrase_relations(question, names, &relations, None).await;
    pattern_without_model(question, names, edges, &near).expect("a pattern")
}

/// The phrases of the pattern's edges, in edge order.
async fn phrases(question: &str, name: &str, relations: &[&str]) -> Vec<Option<String>> {
    let pattern = pattern_over(question, &[name], relations, 3).await;
    pattern.edges.iter().map(|e| e.phrase.clone()).collect()
}

fn some(texts: &[&str]) -> Vec<Option<String>> {
    texts.iter().map(|t| Some((*t).to_owned())).collect()
}

#[tokio::test]
async fn a_chain_runs_from_the_named_entity_outwards() {
    let movies = MOVIE_RELATIONS;
    assert_eq!(
        phrases(
            "who directed the movies starring Tom Hanks",
            "Tom Hanks",
            movies
        )
        .await,
        some(&["movies starring", "directed"])
    );
    // "what languages": a class phrase that names `in_language` is the last hop.
    assert_eq!(
        phrases(
            "what languages are the films directed by the director of Heat in",
            "Heat",
            movies
        )
        .await,
        some(&["director", "films directed", "languages"])
    );
    // A possessive chain comes first, then the words before the name.
    assert_eq!(
        phrases(
            "what is the nationality of Anna's mom",
            "Anna",
            FAMILY_RELATIONS
        )
        .await,
        some(&["mom", "nationality"])
    );
    let pattern = pattern_over("who directed Heat", &["Heat"], movies, 3).await;
    assert_eq!(pattern.nodes[0], PatternNode::Known("Heat".to_owned()));
    assert_eq!(pattern.answer, 1);
    assert_eq!(pattern.to_string(), "(Heat) -[directed]- (?answer)");
}

#[tokio::test]
async fn words_after_the_name_come_first_unless_it_is_a_prepositions_object() {
    let football = FOOTBALL_RELATIONS;
    // The head of the relative clause around the name ("football club") is the class
    // of the node the clause reaches, not a hop; "where" needs an embedder (below).
    assert_eq!(
        phrases(
            "where is the football club that Saphir_TAIDER plays for",
            "Saphir_TAIDER",
            football
        )
        .await,
        some(&["plays"])
    );
    // "which country": the asked-for class comes last.
    assert_eq!(
        phrases(
            "which country does Mario_GAVRANOVIC play in",
            "Mario_GAVRANOVIC",
            football
        )
        .await,
        some(&["play", "country"])
    );
    assert_eq!(
        phrases(
            "the films that share directors with the film [Black Snake Moan] were in which genres",
            "Black Snake Moan",
            MOVIE_RELATIONS
        )
        .await,
        some(&["directors", "directors", "genres"])
    );
    // "acted by X": the words after the name come after the noun phrase it ends, and
    // "which years" names the same relation as "released": one hop.
    assert_eq!(
        phrases(
            "the films acted by [John Marley] were released in which years",
            "John Marley",
            MOVIE_RELATIONS
        )
        .await,
        some(&["films acted", "released years"])
    );
}

#[tokio::test]
async fn class_words_name_a_relation_only_by_their_letters() {
    let movies = MOVIE_RELATIONS;
    // "which films" names the answer's class: one hop, "direct".
    assert_eq!(
        phrases("which films did Joel Coen direct", "Joel Coen", movies).await,
        some(&["direct"])
    );
    // "the actor X": the name's own class is no hop.
    assert_eq!(
        phrases(
            "the actor [Alexandra Chando] acted together with who",
            "Alexandra Chando",
            movies
        )
        .await,
        some(&["acted", "acted"])
    );
    // "what sort of film is X": the class X is a kind of is no hop either.
    assert_eq!(
        phrases("what sort of film is Heat", "Heat", movies).await,
        some(&["sort"])
    );
    // The spouse's religion: "religion" is the answer's class, a hop after "spouse".
    assert_eq!(
        phrases(
            "what type of religion is Ana's spouse",
            "Ana",
            FAMILY_RELATIONS
        )
        .await,
        some(&["spouse", "religion"])
    );
}

#[tokio::test]
async fn shared_values_go_there_and_back_only_from_the_name() {
    let movies = MOVIE_RELATIONS;
    // "same director" is a round trip through the shared director.
    let pattern = pattern_over(
        "which films have the same director as Heat",
        &["Heat"],
        movies,
        3,
    )
    .await;
    assert_eq!(pattern.edges.len(), 2);
    assert_eq!(pattern.edges[0].phrase.as_deref(), Some("director"));
    assert_eq!(pattern.edges[1].phrase.as_deref(), Some("director"));
    assert_eq!(pattern.answer, 2);
    // Later in the chain, "also" marks the way back itself.
    assert_eq!(
        phrases(
            "the screenwriter of [Starman] also wrote which films",
            "Starman",
            movies
        )
        .await,
        some(&["screenwriter", "wrote"])
    );
    // No words left: one hop of unknown relation.
    assert_eq!(phrases("Heat?", "Heat", movies).await, vec![None]);
    // The depth budget caps the edges.
    let short = pattern_over(
        "who directed the movies starring Tom Hanks",
        &["Tom Hanks"],
        movies,
        1,
    )
    .await;
    assert_eq!(short.edges.len(), 1);
    assert!(pattern_without_model("who directed Heat", &[], 3, &Default::default()).is_none());
}

#[tokio::test]
async fn two_named_entities_make_a_star_around_the_answer() {
    let pattern = pattern_over(
        "name a player who plays at Defender position at the club Real_Madrid_CF",
        &["Defender", "Real_Madrid_CF"],
        FOOTBALL_RELATIONS,
        3,
    )
    .await;
    assert_eq!(pattern.answer, 0);
    assert_eq!(pattern.nodes[0], PatternNode::Unknown);
    assert_eq!(
        pattern.to_string(),
        "(Defender) -[position]- (?answer); (Real_Madrid_CF) -[club]- (?answer)"
    );
}

/// A stored edge (head, relation, tail) and what it costs a pattern edge.
type EdgeChoice = ((NodeId, String, NodeId), f32);

/// Every match's distance, by enumerating every mapping of pattern nodes to graph nodes
/// and every choice of graph edge per pattern edge; the `k` smallest.
fn brute_force(graph: &LocalGraph, pattern: &SearchPattern, k: usize) -> Vec<f32> {
    let mut universe: Vec<NodeId> = graph.nodes().collect();
    universe.sort();
    let n = pattern.nodes.len();
    if !pattern.nodes.iter().any(Option::is_some) {
        return Vec::new();
    }
    let mut distances = Vec::new();
    let mut assignment = vec![0usize; n];
    'mappings: loop {
        let nodes: Vec<NodeId> = assignment.iter().map(|&i| universe[i]).collect();
        let mut node_cost = Some(0.0f32);
        for (v, candidates) in pattern.nodes.iter().enumerate() {
            if let Some(c) = candidates {
                match c
                    .iter()
                    .filter(|(id, _)| *id == nodes[v])
                    .map(|(_, d)| *d)
                    .reduce(f32::min)
                {
                    Some(d) => node_cost = node_cost.map(|x| x + d),
                    None => node_cost = None,
                }
            }
        }
        if let Some(node_cost) = node_cost {
            // Per pattern edge: every stored edge between the images with its cost.
            let options: Vec<Vec<EdgeChoice>> = pattern
                .edges
                .iter()
                .map(|(a, b, candidates)| {
                    let mut out = Vec::new();
                    for (r, name) in graph.relations().iter().enumerate() {
                        let cost = match candidates {
                            Some(c) => match c.get(&(r as u32)) {
                                Some(&d) => d,
                                None => continue,
                            },
                            None => 0.0,
                        };
                        for (h, t) in [(nodes[*a], nodes[*b]), (nodes[*b], nodes[*a])] {
                            if graph.has_edge(h, name, t)
                                && !out.iter().any(|(e, _)| *e == (h, name.clone(), t))
                            {
                                out.push(((h, name.clone(), t), cost));
                            }
                        }
                    }
                    out
                })
                .collect();
            // Every combination of distinct edges.
            let mut choice = vec![0usize; options.len()];
            if options.iter().all(|o| !o.is_empty()) {
                loop {
                    let picked: Vec<&(NodeId, String, NodeId)> = choice
                        .iter()
                        .enumerate()
                        .map(|(e, &c)| &options[e][c].0)
                        .collect();
                    let distinct = picked
                        .iter()
                        .enumerate()
                        .all(|(i, x)| picked[..i].iter().all(|y| y != x));
                    if distinct {
                        let cost: f32 = choice
                            .iter()
                            .enumerate()
                            .map(|(e, &c)| options[e][c].1)
                            .sum();
                        distances.push(node_cost + cost);
                    }
                    let mut e = 0;
                    while e < choice.len() {
                        choice[e] += 1;
                        if choice[e] < options[e].len() {
                            break;
                        }
                        choice[e] = 0;
                        e += 1;
                    }
                    if e == choice.len() {
                        break;
                    }
                }
            }
        }
        let mut v = 0;
        while v < n {
            assignment[v] += 1;
            if assignment[v] < universe.len() {
                continue 'mappings;
            }
            assignment[v] = 0;
            v += 1;
        }
        break;
    }
    distances.sort_by(f32::total_cmp);
    distances.truncate(k);
    distances
}

/// A random small graph and a random connected pattern with random distances.
fn graph_and_pattern() -> impl Strategy<Value = (LocalGraph, SearchPattern, usize)> {
    let edges = prop::collection::vec((0u64..8, 0u32..3, 0u64..8), 1..24);
    let shape = prop::collection::vec((any::<bool>(), 0usize..8), 1..4);
    let node_distances =
        prop::collection::vec(prop::collection::vec((0u64..8, 0.0f32..1.0), 1..4), 4);
    let relation_distances =
        prop::collection::vec(prop::option::of(prop::collection::vec(0.0f32..1.0, 3)), 4);
    let unknown = prop::collection::vec(any::<bool>(), 4);
    (
        edges,
        shape,
        node_distances,
        relation_distances,
        unknown,
        1usize..6,
    )
        .prop_map(
            |(edges, shape, node_distances, relation_distances, unknown, k)| {
                let mut graph = LocalGraph::new();
                for r in 0..3 {
                    graph.relation_id(&format!("r{r}"));
                }
                for (h, r, t) in edges {
                    graph.add(&entity(h), &format!("r{r}"), &entity(t));
                }
                // Pattern node 0 is known; every new node hangs off an earlier one, and
                // `(false, j)` adds a cycle edge to an earlier node j when there is one.
                let mut node_count = 1;
                let mut pattern_edges = Vec::new();
                for (new_node, j) in shape {
                    if new_node || node_count < 2 {
                        pattern_edges.push((j % node_count, node_count));
                        node_count += 1;
                    } else {
                        let a = j % node_count;
                        let b = (j + 1) % node_count;
                        if a != b {
                            pattern_edges.push((a, b));
                        }
                    }
                }
                let nodes = (0..node_count)
                    .map(|v| {
                        (v == 0 || !unknown[v]).then(|| {
                            node_distances[v]
                                .iter()
                                .map(|&(id, d)| (NodeId(id), d))
                                .collect()
                        })
                    })
                    .collect();
                let edges = pattern_edges
                    .into_iter()
                    .enumerate()
                    .map(|(e, (a, b))| {
                        let candidates = relation_distances[e].as_ref().map(|d| {
                            d.iter()
                                .enumerate()
                                .map(|(r, &d)| (r as u32, d))
                                .collect::<HashMap<u32, f32>>()
                        });
                        (a, b, candidates)
                    })
                    .collect();
                (graph, SearchPattern { nodes, edges }, k)
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// The pruned search finds exactly the brute-force top-k distances.
    #[test]
    fn pruned_search_equals_brute_force((graph, pattern, k) in graph_and_pattern()) {
        let limits = SearchLimits { k, max_steps: usize::MAX };
        let fast = top_k(&graph, &pattern, limits);
        let slow_d = brute_force(&graph, &pattern, k);
        let fast_d: Vec<f32> = fast.matches.iter().map(|m| m.distance).collect();
        prop_assert_eq!(fast_d.len(), slow_d.len());
        for (f, s) in fast_d.iter().zip(&slow_d) {
            prop_assert!((f - s).abs() < 1e-4, "{:?} vs {:?}", fast_d, slow_d);
        }
        prop_assert!(!fast.truncated);
        // Every match is a real one: each pattern edge a distinct graph edge with a
        // candidate relation, each known node one of its candidates.
        for m in &fast.matches {
            let mut used = Vec::new();
            for (e, (a, b, candidates)) in pattern.edges.iter().enumerate() {
                let (relation, reversed) = m.edges[e];
                let (head, tail) = if reversed { (m.nodes[*b], m.nodes[*a]) } else { (m.nodes[*a], m.nodes[*b]) };
                let name = &graph.relations()[relation as usize];
                prop_assert!(graph.has_edge(head, name, tail));
                used.push((head, relation, tail));
                if let Some(c) = candidates {
                    prop_assert!(c.contains_key(&relation));
                }
            }
            let count = used.len();
            used.sort();
            used.dedup();
            prop_assert_eq!(used.len(), count);
            for (v, candidates) in pattern.nodes.iter().enumerate() {
                if let Some(c) = candidates {
                    prop_assert!(c.iter().any(|(id, _)| *id == m.nodes[v]));
                }
            }
        }
    }

    /// The step limit is never exceeded.
    #[test]
    fn the_step_budget_holds((graph, pattern, k) in graph_and_pattern(), steps in 1usize..20) {
        let outcome = top_k(&graph, &pattern, SearchLimits { k, max_steps: steps });
        prop_assert!(outcome.steps <= steps);
        prop_assert!(outcome.matches.len() <= k);
    }
}

#[test]
fn a_pattern_without_known_nodes_or_candidates_matches_nothing() {
    let mut graph = LocalGraph::new();
    graph.add(&entity(1), "r", &entity(2));
    let unknown_only = SearchPattern {
        nodes: vec![None, None],
        edges: vec![(0, 1, None)],
    };
    let limits = SearchLimits {
        k: 5,
        max_steps: 1_000,
    };
    assert!(top_k(&graph, &unknown_only, limits).matches.is_empty());
    let no_candidates = SearchPattern {
        nodes: vec![Some(vec![(NodeId(9), 0.0)]), None],
        edges: vec![(0, 1, None)],
    };
    assert!(top_k(&graph, &no_candidates, limits).matches.is_empty());
    let matched = SearchPattern {
        nodes: vec![Some(vec![(NodeId(2), 0.1)]), None],
        edges: vec![(0, 1, None)],
    };
    let found = top_k(&graph, &matched, limits);
    assert_eq!(found.matches.len(), 1);
    assert_eq!(found.matches[0].nodes, vec![NodeId(2), NodeId(1)]);
    // The stored edge points from node 1's image to node 0's.
    assert_eq!(found.matches[0].edges, vec![(0, true)]);
    assert!((found.matches[0].distance - 0.1).abs() < 1e-6);
}

/// The LLM-free pattern of `question`, which names the film Heat, matched on the movie
/// fixture (lexically, default limits).
async fn match_about_heat(question: &str) -> Matched {
    let store = fixtures::movies();
    let heat = fixtures::entity(&store, "Heat");
    let relations = graph_relations(&store).await;
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        match_question(
            &store,
            None,
            &relations,
            question,
            &[ScoredEntity {
                entity: heat,
                score: 1.0,
            }],
            &MatchLimits::default(),
        ),
    )
    .await
    .expect("in time")
    .expect("matched")
}

#[tokio::test]
async fn the_closest_subgraph_answers_a_three_hop_question() {
    let matched =
        match_about_heat("what languages are the films directed by the director of Heat in").await;
    assert!(
        matched.notes[0].starts_with(
            "pattern matcher: (Heat) -[director]- (?1); (?1) -[films directed]- (?2); (?2) -[languages]- (?answer)"
        ),
        "{:?}",
        matched.notes
    );
    let (best, distance) = matched.paths.first().expect("a path");
    let relations: Vec<(&str, bool)> = best
        .steps
        .iter()
        .map(|s| (s.relation.as_str(), s.inverse))
        .collect();
    assert_eq!(
        relations,
        vec![
            ("directed_by", false),
            ("directed_by", true),
            ("in_language", false)
        ]
    );
    // "director" is near `directed_by` by its letters only: 1 − 0.8.
    assert!((*distance - 0.2).abs() < 1e-4, "{distance}");
    // Heat's director also made Collateral: its languages are the closest answers.
    let ends: HashSet<&str> = matched
        .paths
        .iter()
        .filter(|(_, d)| (*d - *distance).abs() < 1e-4)
        .map(|(p, _)| p.end().name.as_str())
        .collect();
    assert_eq!(ends, HashSet::from(["English", "Spanish"]));
}

fn triple(head: &str, relation: &str, tail: &str) -> PatternTriple {
    PatternTriple {
        head: head.into(),
        relation: relation.into(),
        tail: tail.into(),
    }
}

#[test]
fn a_model_pattern_becomes_a_pattern_whose_answer_is_the_farthest_unknown() {
    let pattern = pattern_from_triples(
        &[
            triple("[Heat]", "directed by", "UNKNOWN director 1"),
            triple("UNKNOWN film 2", "directed by", "UNKNOWN director 1"),
            triple("UNKNOWN film 2", "UNKNOWN relation", "UNKNOWN language 3"),
        ],
        &["Heat"],
    )
    .unwrap();
    assert_eq!(
        pattern.to_string(),
        "(Heat) -[directed by]- (?1); (?2) -[directed by]- (?1); (?2) -[?]- (?answer)"
    );
    assert_eq!(pattern.answer, 3);
    // A star: both named entities, the shared unknown is the answer.
    let star = pattern_from_triples(
        &[
            triple("UNKNOWN player 1", "plays position", "Goalkeeper"),
            triple("UNKNOWN player 1", "club", "Arsenal FC"),
        ],
        &["Goalkeeper", "Arsenal_FC"],
    )
    .unwrap();
    assert_eq!(star.answer, 0);
    assert_eq!(star.edges.len(), 2);
}

#[test]
fn a_model_pattern_that_cannot_be_matched_is_refused_with_its_reason() {
    let refused = |triples: &[PatternTriple]| pattern_from_triples(triples, &["Heat"]).unwrap_err();
    assert!(refused(&[triple("Heat", "directed by", "Michael Mann")]).contains("\"Michael Mann\""));
    assert!(refused(&[triple("UNKNOWN a 1", "r", "UNKNOWN b 2")]).contains("names none"));
    assert!(refused(&[
        triple("Heat", "r", "UNKNOWN a 1"),
        triple("UNKNOWN b 2", "r", "UNKNOWN c 3")
    ])
    .contains("in pieces"));
    assert!(refused(&[triple("Heat", "r", "Heat")]).contains("no triple"));
    let long: Vec<PatternTriple> = (0..7)
        .map(|i| triple("Heat", "r", &format!("UNKNOWN x {i}")))
        .collect();
    assert!(refused(&long).contains("more than 6"));
}

/// The role on an in-process bus with a scripted model: a usable pattern is matched
/// (one model call), an unusable reply falls back to the LLM-free pattern and says so.
#[tokio::test]
async fn the_role_uses_the_model_pattern_and_falls_back_visibly() {
    use std::{sync::Arc, time::Duration};

    use kgmesh_bus::LocalBus;
    use kgmesh_schemas::{
        graph::ScoredEntity,
        messages::{context::EvidenceItem, retrieve::RetrieveRequest},
        Budget, Meta, QuestionId, Role,
    };
    use kgmesh_stores::GraphStore;

    use crate::{
        registry,
        runtime::{AgentDeps, Client, StartOptions},
        testing::ScriptedModel,
    };

    async fn within<F: std::future::Future>(
        future: F,
    ) -> Result<F::Output, tokio::time::error::Elapsed> {
        tokio::time::timeout(Duration::from_secs(30), future).await
    }
    let graph = fixtures::movies();
    let heat = fixtures::entity(&graph, "Heat");
    let graph: Arc<dyn GraphStore> = Arc::new(graph);
    let request = RetrieveRequest {
        question: "what languages are the films directed by the director of Heat in".into(),
        entities: vec![ScoredEntity {
            entity: heat,
            score: 1.0,
        }],
        draft_answers: Vec::new(),
        metapaths: Vec::new(),
        cypher: Vec::new(),
        max_evidence: 50,
        cues: Vec::new(),
    };
    let model = Arc::new(ScriptedModel::new(vec![
        Ok("<triples>\nHeat | directed by | UNKNOWN director 1\nUNKNOWN film 2 | directed by | UNKNOWN director 1\nUNKNOWN film 2 | language | UNKNOWN language 3\n</triples>"),
        Ok("Sorry, I can only talk about movies."),
    ]));
    let bus = Arc::new(LocalBus::new());
    let deps = AgentDeps::new(bus.clone())
        .with_graph(graph)
        .with_llm(model.clone());
    let role = within(registry::start(
        Role::PATTERN_MATCHER,
        &deps,
        StartOptions::default(),
    ))
    .await
    .expect("in time")
    .unwrap();
    let client = Client::new(bus.clone());
    let matcher = Role::well_known(Role::PATTERN_MATCHER);
    let meta = Meta::new(QuestionId::new_random(), 1, Budget::default());

    let (reply, cost) = within(client.call(&matcher, &meta, &request))
        .await
        .expect("in time")
        .unwrap();
    assert_eq!((cost.llm_calls, cost.model_fallbacks), (1, 0));
    assert!(model.prompts()[0].contains("Named entities: Heat"));
    assert!(
        reply.notes[0].starts_with("pattern matcher: (Heat) -[directed by]- (?1); (?2) -[directed by]- (?1); (?2) -[language]- (?answer)"),
        "{:?}",
        reply.notes
    );
    let EvidenceItem::Path(best) = &reply.evidence[0].item else {
        panic!("a path: {:?}", reply.evidence[0]);
    };
    assert_eq!(best.steps.last().unwrap().relation, "in_language");

    let (reply, cost) = within(client.call(&matcher, &meta, &request))
        .await
        .expect("in time")
        .unwrap();
    assert_eq!((cost.llm_calls, cost.model_fallbacks), (1, 1));
    assert!(
        reply.notes[0].starts_with("pattern matcher: the model's pattern is unusable"),
        "{:?}",
        reply.notes
    );
    assert!(reply.notes[1].starts_with("pattern matcher: (Heat) -[director]-"));
    assert!(!reply.evidence.is_empty());
    role.stop(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_phrase_near_no_relation_of_the_graph_gives_no_evidence() {
    let matched = match_about_heat("who is the chef of Heat").await;
    assert!(matched.paths.is_empty());
    assert_eq!(matched.edges_read, 0, "nothing is read for it");
    assert_eq!(
        matched.notes,
        vec!["pattern matcher: (Heat) -[chef]- (?answer); [\"chef\"] near no relation of the graph, no evidence"]
    );
}

#[tokio::test]
async fn a_phrase_near_every_relation_by_embedding_is_near_none() {
    use std::sync::Arc;

    use crate::scoring::{
        fixtures::{WordTable, MOVIES_MEAN_ACTORS, MOVIES_NEAR_EVERY_RELATION},
        relevance::TextVectors,
    };

    let relations: Vec<String> = ["starred_actors", "has_genre", "directed_by"]
        .iter()
        .map(|r| (*r).to_owned())
        .collect();
    let phrases = vec!["movies".to_owned()];
    let similar = |table: WordTable| {
        let (relations, phrases) = (relations.clone(), phrases.clone());
        async move {
            let vectors = TextVectors::new(Arc::new(table), 100);
            super::core::similarities(&phrases, &relations, Some(&vectors)).await
        }
    };
    // Cosine 0.64 to `starred_actors`, 0.54 to the others: counts for nothing.
    let diffuse = similar(MOVIES_NEAR_EVERY_RELATION).await;
    assert!(
        diffuse[0].iter().all(|&(_, overall)| overall == 0.0),
        "{diffuse:?}"
    );
    // A synonym of one relation keeps its cosine for that one.
    let distinct = similar(MOVIES_MEAN_ACTORS).await;
    assert!((distinct[0][0].1 - 0.8).abs() < 1e-6, "{distinct:?}");
    assert_eq!(distinct[0][1].1, 0.0, "{distinct:?}");
}

#[tokio::test]
async fn an_opening_where_asks_about_the_head_of_a_relative_clause_around_the_name() {
    use std::sync::Arc;

    use crate::scoring::{fixtures::WHERE_MEANS_COUNTRY, relevance::TextVectors};

    let relations: Vec<String> = FOOTBALL_RELATIONS.iter().map(|r| (*r).to_owned()).collect();
    let vectors = TextVectors::new(Arc::new(WHERE_MEANS_COUNTRY), 100);
    let pattern = |question: &'static str| {
        let (relations, vectors) = (&relations, &vectors);
        async move {
            let names = ["Saphir_TAIDER"];
            let near = phrase_relations(question, &names, relations, Some(vectors)).await;
            pattern_without_model(question, &names, 3, &near)
                .expect("a pattern")
                .to_string()
        }
    };
    assert_eq!(
        pattern("where is the football club that Saphir_TAIDER plays for").await,
        "(Saphir_TAIDER) -[plays]- (?1); (?1) -[where]- (?answer)"
    );
    // Without a relative clause the clause's own words name the last relation.
    assert_eq!(
        pattern("where does Saphir_TAIDER play").await,
        "(Saphir_TAIDER) -[play]- (?answer)"
    );
}
