use kgmesh_schemas::graph::{Direction, RelationStep};

use super::core::{
    enumerate_metapaths, link_without_llm, rank_metapaths, EnumerateLimits, LinkerConfig,
};
use crate::{
    entity_linker::core::build_name_index,
    scoring::{
        fixtures::{entity, movies},
        relevance::Relevance,
    },
};

/// The LLM-free linker's reply to `question`, read by words (no embedder, no cues,
/// the default settings).
async fn link_by_words(
    graph: &dyn kgmesh_stores::GraphStore,
    index: &kgmesh_models::lexical::Gazetteer,
    question: &str,
) -> kgmesh_schemas::messages::kg_linker::KgLinkReply {
    link_without_llm(graph, index, None, question, &[], &LinkerConfig::default())
        .await
        .unwrap()
}

fn step(relation: &str, direction: Direction) -> RelationStep {
    RelationStep {
        relation: relation.to_owned(),
        direction,
    }
}

#[tokio::test]
async fn only_relation_sequences_present_in_the_graph_are_enumerated() {
    let graph = movies();
    let mann = entity(&graph, "Michael Mann");
    let found = enumerate_metapaths(&graph, &[mann.id], &EnumerateLimits::default())
        .await
        .unwrap();
    assert!(found
        .iter()
        .any(|m| m.steps == vec![step("directed_by", Direction::In)]));
    assert!(found.iter().any(|m| m.steps
        == vec![
            step("directed_by", Direction::In),
            step("in_language", Direction::Out)
        ]));
    assert!(!found
        .iter()
        .any(|m| m.steps[0] == step("directed_by", Direction::Out)));
    assert!(found.iter().all(|m| (1..=3).contains(&m.steps.len())));
}

#[tokio::test]
async fn the_sequence_the_question_describes_ranks_first() {
    let graph = movies();
    let mann = entity(&graph, "Michael Mann");
    let relevance = Relevance::lexical(
        "what languages are the films directed by Michael Mann in",
        &["Michael Mann"],
    );
    let ranked = rank_metapaths(&graph, &relevance, &[mann], &EnumerateLimits::default(), 3)
        .await
        .unwrap();
    assert_eq!(ranked.len(), 3);
    assert_eq!(
        ranked[0].metapath.steps,
        vec![
            step("directed_by", Direction::In),
            step("in_language", Direction::Out)
        ]
    );
}

#[tokio::test]
async fn the_llm_free_linker_links_entities_and_proposes_metapaths() {
    let graph = movies();
    let index = build_name_index(&graph).await.unwrap();
    let reply = link_by_words(&graph, &index, "Who starred in the films of Michael Mann?").await;
    assert_eq!(reply.mentions, vec!["michael mann".to_owned()]);
    assert_eq!(reply.linked[0].entity.name, "Michael Mann");
    assert_eq!(
        reply.metapaths[0].steps,
        vec![
            step("directed_by", Direction::In),
            step("starred_actors", Direction::Out)
        ]
    );
    assert!(!reply.finish);
}

#[tokio::test]
async fn a_question_naming_no_entity_links_nothing() {
    let graph = movies();
    let index = build_name_index(&graph).await.unwrap();
    let reply = link_by_words(&graph, &index, "what is the meaning of life").await;
    assert!(reply.linked.is_empty());
    assert!(reply.metapaths.is_empty());
}

#[tokio::test]
async fn a_named_entity_absent_from_the_graph_is_not_replaced_by_plain_words() {
    // "kiev" and "oslo" are nodes; the person the question names is not.
    let graph = family();
    let index = build_name_index(&graph).await.unwrap();
    let link = |question: &'static str| {
        let (graph, index) = (&graph, &index);
        async move { link_by_words(graph, index, question).await }
    };
    let names = |reply: &kgmesh_schemas::messages::kg_linker::KgLinkReply| -> Vec<String> {
        reply.linked.iter().map(|e| e.entity.name.clone()).collect()
    };
    let absent = link("was sviatoslav_ii_of_kiev 's dad born in oslo ?").await;
    assert!(absent.linked.is_empty(), "{absent:?}");
    assert!(absent.metapaths.is_empty());
    // Named in the graph, the same words are relation cues beside it, not entities.
    let present = link("was Dora 's dad born in oslo ?").await;
    assert_eq!(names(&present), ["dora"], "{present:?}");
    // With no name written at all, plain words are all there is to link.
    let plain = link("who was born in oslo").await;
    assert_eq!(names(&plain), ["oslo"], "{plain:?}");
}

#[tokio::test]
async fn a_metapath_reaching_what_a_better_one_reaches_gives_up_its_slot() {
    use crate::scoring::fixtures::graph;
    // Both directions are stored, so from "anna" `child` and `child_of (inverse)` reach
    // the same nodes, and both match "child" equally well: only the first is kept.
    let family = graph(&[
        ("anna", "child", "ben"),
        ("ben", "child_of", "anna"),
        ("anna", "child", "cleo"),
        ("cleo", "child_of", "anna"),
        ("anna", "born_in", "rome"),
        ("ben", "born_in", "oslo"),
    ]);
    let anna = entity(&family, "anna");
    let relevance = Relevance::lexical("who is the child of anna", &["anna"]);
    let ranked = rank_metapaths(&family, &relevance, &[anna], &EnumerateLimits::default(), 2)
        .await
        .unwrap();
    assert_eq!(ranked.len(), 2, "the freed slot goes to another metapath");
    assert_eq!(
        ranked[0].metapath.steps,
        vec![step("child", Direction::Out)]
    );
    assert_ne!(
        ranked[1].metapath.steps,
        vec![step("child_of", Direction::In)],
        "child_of (inverse) reaches what child reaches: {ranked:?}"
    );
}

#[tokio::test]
async fn enumeration_says_what_each_metapath_reaches_and_whether_all_of_it() {
    use super::core::enumerate_reaching;
    use crate::scoring::fixtures::graph;
    let star = graph(&[
        ("hub", "link", "a"),
        ("hub", "link", "b"),
        ("hub", "link", "c"),
        ("a", "tag", "t"),
    ]);
    let hub = entity(&star, "hub");
    let limits = EnumerateLimits {
        sample_per_prefix: 2,
        ..EnumerateLimits::default()
    };
    let found = enumerate_reaching(&star, &[hub.id], &limits).await.unwrap();
    let link = found
        .iter()
        .find(|r| r.metapath.steps == vec![step("link", Direction::Out)])
        .expect("link enumerated");
    assert_eq!(link.reached.len(), 2, "a sample of the three");
    assert!(!link.complete);
    let everything = enumerate_reaching(&star, &[hub.id], &EnumerateLimits::default())
        .await
        .unwrap();
    let link = everything
        .iter()
        .find(|r| r.metapath.steps == vec![step("link", Direction::Out)])
        .expect("link enumerated");
    assert_eq!(link.reached.len(), 3);
    assert!(link.complete);
    let mut sorted = link.reached.clone();
    sorted.sort_unstable();
    assert_eq!(link.reached, sorted);
}

#[tokio::test]
async fn with_an_embedder_the_linker_ranks_by_word_synonyms() {
    use std::sync::Arc;

    use crate::scoring::{fixtures::TYPES_MEAN_GENRE, relevance::TextVectors};

    let graph = movies();
    let index = build_name_index(&graph).await.unwrap();
    let question = "the types of the films directed by Michael Mann";
    let genre = vec![
        step("directed_by", Direction::In),
        step("has_genre", Direction::Out),
    ];
    // Lexically "types" is a link of the chain no relation explains: the second hop
    // may be any relation, and genre ranks no higher than the release year.
    let mann = entity(&graph, "Michael Mann");
    let lexical = rank_metapaths(
        &graph,
        &Relevance::lexical(question, &["Michael Mann"]),
        &[mann],
        &EnumerateLimits::default(),
        20,
    )
    .await
    .unwrap();
    let score_of = |steps: &[RelationStep]| {
        lexical
            .iter()
            .find(|s| s.metapath.steps == steps)
            .map(|s| s.score)
            .expect("ranked")
    };
    let year = vec![
        step("directed_by", Direction::In),
        step("release_year", Direction::Out),
    ];
    assert_eq!(
        score_of(&genre),
        score_of(&year),
        "no lexical clue for genre"
    );
    let vectors = Arc::new(TextVectors::new(Arc::new(TYPES_MEAN_GENRE), 100));
    let embedded = link_without_llm(
        &graph,
        &index,
        Some(vectors),
        question,
        &[],
        &LinkerConfig::default(),
    )
    .await
    .unwrap();
    assert_eq!(
        embedded.metapaths[0].steps, genre,
        "{:?}",
        embedded.metapaths
    );
}

#[tokio::test]
async fn a_word_naming_a_class_is_no_synonym() {
    use std::sync::Arc;

    use crate::scoring::{fixtures::FILMS_NEAR_GENRE_AND_ACTORS, relevance::TextVectors};

    let graph = movies();
    let index = build_name_index(&graph).await.unwrap();
    let directed = vec![step("directed_by", Direction::In)];
    let vectors = Arc::new(TextVectors::new(Arc::new(FILMS_NEAR_GENRE_AND_ACTORS), 100));
    // The best metapath for `question`, and every metapath for failure messages.
    let best = |question: &'static str| {
        let (graph, index, vectors) = (&graph, &index, vectors.clone());
        async move {
            let linked = link_without_llm(
                graph,
                index,
                Some(vectors),
                question,
                &[],
                &LinkerConfig::default(),
            )
            .await
            .unwrap();
            let all = format!("{:?}", linked.metapaths);
            (linked.metapaths[0].steps.clone(), all)
        }
    };
    // "films" names the answer's class; were it a synonym of `has_genre` or
    // `starred_actors`, a path ending in either would explain every word and win.
    // (Here it is as near to both, which alone keeps it from naming either; the
    // scoring tests show a class word that is nearest to one relation.)
    let (steps, all) = best("which films did Michael Mann direct").await;
    assert_eq!(steps, directed, "{all}");
    // Between an article and an entity name it names that entity's class: were it a
    // synonym, `starred_actors → starred_actors (inverse) → directed_by` (or the same
    // through `has_genre`) would explain "film" and "directed" and outrank `directed_by`.
    let (steps, all) = best("who directed the film Heat").await;
    assert_eq!(steps, vec![step("directed_by", Direction::Out)], "{all}");
    // Heading a relative clause it names the class of a node of the chain.
    let (steps, all) = best("the films directed by Michael Mann").await;
    assert_eq!(steps, directed, "{all}");
}

/// A family graph where "mom", "kid" and "darling" match no relation name.
fn family() -> kgmesh_stores::embedded::EmbeddedGraph {
    crate::scoring::fixtures::graph(&[
        ("ada", "parents", "bea"),
        ("bea", "children", "ada"),
        ("bea", "spouse", "carl"),
        ("carl", "spouse", "bea"),
        ("carl", "children", "dora"),
        ("dora", "parents", "carl"),
        ("bea", "parents", "eve"),
        ("eve", "children", "bea"),
        ("ada", "place_of_birth", "oslo"),
        ("bea", "place_of_birth", "rome"),
        ("carl", "place_of_birth", "lima"),
        ("dora", "place_of_birth", "kiev"),
        ("ada", "children", "fay"),
        ("fay", "spouse", "gus"),
        ("gus", "parents", "hal"),
    ])
}

/// A learned cue for `word` (stemmed, as the lexicon keys words).
fn cue(word: &str, relation: &str, weight: f32) -> kgmesh_schemas::messages::cache::RelationCue {
    kgmesh_schemas::messages::cache::RelationCue {
        word: crate::scoring::text::stem(word),
        relation: relation.to_owned(),
        inverse: false,
        weight,
    }
}

#[tokio::test]
async fn learned_cues_compose_a_path_for_words_no_relation_name_matches() {
    let graph = family();
    let ada = entity(&graph, "ada");
    let question = "the kid of ada 's mom 's darling";
    let best = |cues: Vec<kgmesh_schemas::messages::cache::RelationCue>| {
        let (graph, ada) = (&graph, ada.clone());
        async move {
            let relevance = Relevance::lexical(question, &["ada"]).with_cues(&cues);
            rank_metapaths(graph, &relevance, &[ada], &EnumerateLimits::default(), 3)
                .await
                .unwrap()
                .remove(0)
                .metapath
                .steps
        }
    };
    let composed = vec![
        step("parents", Direction::Out),
        step("spouse", Direction::Out),
        step("children", Direction::Out),
    ];
    assert_ne!(best(Vec::new()).await, composed, "nothing lexical to go by");
    // What each word meant in past plans, each seen in other questions.
    let cues = vec![
        cue("mom", "parents", 0.8),
        cue("mom", "place_of_birth", 0.2),
        cue("darling", "spouse", 0.75),
        cue("kid", "children", 0.8),
        cue("kid", "parents", 0.3),
    ];
    assert_eq!(best(cues.clone()).await, composed);
    // The words' order in the question, not the cues, orders the hops: the same words
    // in the other chain give the other path.
    let swapped = "the mom of ada 's kid 's darling";
    let relevance = Relevance::lexical(swapped, &["ada"]).with_cues(&cues);
    let ranked = rank_metapaths(&graph, &relevance, &[ada], &EnumerateLimits::default(), 3)
        .await
        .unwrap();
    assert_eq!(
        ranked[0].metapath.steps,
        vec![
            step("children", Direction::Out),
            step("spouse", Direction::Out),
            step("parents", Direction::Out),
        ],
        "{ranked:?}"
    );
}

#[tokio::test]
async fn a_strongly_cued_word_left_unexplained_costs_the_shorter_path() {
    let graph = family();
    let ada = entity(&graph, "ada");
    // "birthplace" matches `place_of_birth` by name; "mom" only by what was learned.
    let question = "the place of birth of ada 's mom";
    let relevance = Relevance::lexical(question, &["ada"]).with_cues(&[
        cue("mom", "parents", 0.8),
        cue("birth", "place_of_birth", 0.9),
    ]);
    let ranked = rank_metapaths(&graph, &relevance, &[ada], &EnumerateLimits::default(), 3)
        .await
        .unwrap();
    assert_eq!(
        ranked[0].metapath.steps,
        vec![
            step("parents", Direction::Out),
            step("place_of_birth", Direction::Out)
        ],
        "{ranked:?}"
    );
}

#[tokio::test]
async fn a_property_the_question_names_is_looked_up_for_its_entity() {
    use kgmesh_schemas::graph::Value;
    use kgmesh_stores::embedded::GraphBuilder;

    let mut builder = GraphBuilder::new();
    let chai = builder.node("Chai");
    builder.add_label(chai, "Product");
    builder.set_property(chai, "unitPrice", Value::Float(18.0));
    builder.set_property(chai, "unitsInStock", Value::Int(39));
    let tea = builder.node("Beverages");
    builder.add_label(tea, "Category");
    builder.set_property(
        tea,
        "description",
        Value::String("Soft drinks, teas".into()),
    );
    builder.add_edge(chai, "PART_OF", tea);
    let graph = builder.finish();
    let index = build_name_index(&graph).await.unwrap();
    let link = |question: &'static str| {
        let (graph, index) = (&graph, &index);
        async move { link_by_words(graph, index, question).await.cypher }
    };
    // Both words of `unitPrice` beat the one of `unitsInStock`.
    assert_eq!(
        link("what is the unit price of Chai").await,
        ["MATCH (n {name: 'Chai'}) RETURN n.`unitPrice`"]
    );
    assert_eq!(
        link("how many units in stock does Chai have").await,
        ["MATCH (n {name: 'Chai'}) RETURN n.`unitsInStock`"]
    );
    // No key named: no query.
    assert!(link("what category is Chai part of").await.is_empty());
    // The queries the linker writes pass the executor's checks and answer.
    let limits = kgmesh_stores::QueryLimits::default();
    let rows = crate::query_executor::core::execute(
        &graph,
        &link("what is the unit price of Chai").await[0],
        &[],
        &limits,
    )
    .await
    .unwrap();
    assert_eq!(rows.rows, vec![vec![Value::Float(18.0)]]);
}

#[tokio::test]
async fn enumeration_walks_as_the_path_follower_does_never_straight_back() {
    use super::core::enumerate_reaching;
    use crate::{
        path_follower::core::{follow_metapath, WalkLimits},
        scoring::fixtures::graph,
    };
    // Both directions of one fact are stored, as in a family tree.
    let family = graph(&[("x", "children", "y"), ("y", "parents", "x")]);
    let x = entity(&family, "x");
    let found = enumerate_reaching(&family, &[x.id], &EnumerateLimits::default())
        .await
        .unwrap();
    let reached = |steps: &[RelationStep]| {
        found
            .iter()
            .find(|r| r.metapath.steps == steps)
            .map(|r| r.reached.clone())
    };
    // "X's child's parent's child": over the child's own `parents` edge and on.
    let walked = [
        step("children", Direction::Out),
        step("parents", Direction::Out),
        step("children", Direction::Out),
    ];
    // Back along the edge just walked: the path follower finds nothing there, so
    // enumeration may not claim it reaches anything.
    let straight_back = [
        step("parents", Direction::In),
        step("children", Direction::In),
        step("children", Direction::Out),
    ];
    let y = entity(&family, "y");
    assert_eq!(reached(&walked), Some(vec![y.id]));
    assert_eq!(reached(&straight_back), None);
    for (steps, expected) in [(&walked, 1), (&straight_back, 0)] {
        let metapath = kgmesh_schemas::graph::Metapath {
            steps: steps.to_vec(),
        };
        let paths = follow_metapath(
            &family,
            std::slice::from_ref(&x),
            &metapath,
            &WalkLimits::default(),
        )
        .await
        .unwrap();
        assert_eq!(paths.len(), expected, "{steps:?}");
    }
}

/// A small graph that declares classes (`instance of`), where a class's name is also a
/// relation's.
const LABELS: &[(&str, &str, &str)] = &[
    ("Kestrel Moon", "instance of", "musical group"),
    ("Kestrel Moon", "record label", "Harrow Hill Records"),
    ("Harrow Hill Records", "instance of", "record label"),
    ("Kestrel Moon", "genre", "Dream Pop"),
    ("Dream Pop", "instance of", "music genre"),
];

#[tokio::test]
async fn a_class_named_in_the_question_is_what_is_asked_not_where_to_start() {
    use super::core::link_entities;
    let graph = crate::scoring::fixtures::graph(LABELS);
    let index = build_name_index(&graph).await.unwrap();
    let question = "What is Kestrel Moon's record label?";
    let (mentions, linked) = link_entities(&graph, question, &index, &LinkerConfig::default())
        .await
        .unwrap();
    assert_eq!(mentions, ["kestrel moon"], "{linked:?}");
    let names: Vec<&str> = linked.iter().map(|s| s.entity.name.as_str()).collect();
    assert_eq!(names, ["Kestrel Moon"]);
    let reply = link_by_words(&graph, &index, question).await;
    assert_eq!(
        reply.metapaths[0].steps,
        vec![step("record label", Direction::Out)],
        "{:?}",
        reply.metapaths
    );
    // Asked about on its own, a class is still found.
    let (alone, _) = link_entities(
        &graph,
        "what is a record label",
        &index,
        &LinkerConfig::default(),
    )
    .await
    .unwrap();
    assert_eq!(alone, ["record label"]);
}

#[tokio::test]
async fn a_misspelled_name_is_read_as_the_closest_one_below_an_exact_link() {
    let graph = movies();
    let index = build_name_index(&graph).await.unwrap();
    let reply = link_by_words(&graph, &index, "who directed Colateral").await;
    let linked: Vec<(&str, f32)> = reply
        .linked
        .iter()
        .map(|s| (s.entity.name.as_str(), s.score))
        .collect();
    assert_eq!(linked.len(), 1, "{linked:?}");
    assert_eq!(linked[0].0, "Collateral");
    assert!(
        linked[0].1 < 1.0,
        "a fuzzy link scores below an exact one: {linked:?}"
    );
    // A name written right is linked exactly, with no fuzzy neighbour.
    let exact = link_by_words(&graph, &index, "who directed Collateral").await;
    assert!(
        exact.linked.iter().all(|s| s.score >= 1.0),
        "{:?}",
        exact.linked
    );
    // A single lower-case word near a name is read as a word, not as that name (the
    // question may be about something the graph does not hold); written as a name, it
    // is read as the name.
    for (question, linked) in [
        ("which country does Paul_AGUILAR play colateral in", false),
        ("which country does Paul_AGUILAR play Colateral in", true),
    ] {
        let reply = link_by_words(&graph, &index, question).await;
        assert_eq!(!reply.linked.is_empty(), linked, "{question}: {reply:?}");
    }
}

#[tokio::test]
async fn a_plan_reaching_what_cannot_answer_by_its_form_goes_after_one_that_can() {
    use crate::scoring::fixtures::graph;

    // No relation is named like "come out": by words the metapaths tie, and the
    // first in their order reaches a name where "when" asks for a date.
    let graph = graph(&[
        ("Human Error", "performer", "Kestrel Moon"),
        ("Human Error", "producer", "Ada Quennell"),
        ("Human Error", "publication_date", "2009"),
        ("Place of Birth", "part_of", "Human Error"),
    ]);
    let album = entity(&graph, "Human Error");
    let first = |question: &'static str| {
        let graph = &graph;
        let album = album.clone();
        async move {
            let relevance = Relevance::lexical(question, &["Human Error"]);
            rank_metapaths(graph, &relevance, &[album], &EnumerateLimits::default(), 3)
                .await
                .unwrap()[0]
                .metapath
                .steps
                .clone()
        }
    };
    let dated = vec![step("publication_date", Direction::Out)];
    assert_eq!(first("when did Human Error come out").await, dated);
    // "who" asks for a name: the year goes after the names.
    assert_ne!(first("who did Human Error come out with").await, dated);
    // Nothing asked that a form rules out: the order by words stands.
    assert_ne!(first("what about Human Error").await, dated);
}

#[tokio::test]
async fn a_plan_reaching_another_kind_of_name_than_asked_goes_after_one_that_can() {
    use crate::scoring::fixtures::graph;

    // "work" names no relation: by words the spouse explains the question best, but
    // "where" asks for a place and the relations pointing to a spouse call it a person;
    // an institution (an organization) may be where someone works, a shirt size is of
    // no kind the words name.
    let graph = graph(&[
        ("Vera Holm", "spouse", "Anton Holm"),
        ("Anton Holm", "spouse", "Vera Holm"),
        ("Anton Holm", "institution", "Harbor College"),
        ("Anton Holm", "shirt_size", "L"),
        ("Vera Holm", "children", "Ida Holm"),
    ]);
    let vera = entity(&graph, "Vera Holm");
    let first = |question: &'static str| {
        let graph = &graph;
        let vera = vera.clone();
        async move {
            let relevance = Relevance::lexical(question, &["Vera Holm"]);
            rank_metapaths(graph, &relevance, &[vera], &EnumerateLimits::default(), 3)
                .await
                .unwrap()[0]
                .metapath
                .steps
                .clone()
        }
    };
    let spouse = vec![step("spouse", Direction::Out)];
    assert_eq!(
        first("where does Vera Holm's spouse work").await,
        vec![
            step("spouse", Direction::Out),
            step("institution", Direction::Out)
        ]
    );
    // "who" asks for a person, which a spouse is.
    assert_eq!(first("who is Vera Holm's spouse").await, spouse);
}

/// A graph whose relation names hold the words its questions call entities by.
const CALLED: &[(&str, &str, &str)] = &[
    ("Heat", "is_a", "film"),
    ("Heat", "original language of film", "English"),
    ("Heat", "publication date", "1995"),
    ("Heat", "director", "Michael Mann"),
    ("Heat", "screenwriter", "Michael Mann"),
    ("Michael Mann", "is_a", "person"),
    ("Ali", "screenwriter", "Michael Mann"),
    ("Ali", "original language of film", "English"),
    ("Ali", "screenwriter", "Eric Roth"),
    ("Idris Penhallow", "is_a", "doctor"),
    ("Idris Penhallow", "works_in", "Oncology Wing"),
    ("Oncology Wing", "is_a", "department"),
    ("Oncology Wing", "department_head", "Reza Castellane"),
    ("Reza Castellane", "is_a", "doctor"),
];

#[tokio::test]
async fn a_word_calling_the_entity_what_the_graph_says_it_is_names_no_hop() {
    let graph = crate::scoring::fixtures::graph(CALLED);
    let index = build_name_index(&graph).await.unwrap();
    // "film" says what Heat is: no relation is walked for it, though one's name holds it.
    for (question, relation) in [
        ("when was the film Heat released", "publication date"),
        ("who is the writer of the film Heat", "screenwriter"),
    ] {
        let reply = link_by_words(&graph, &index, question).await;
        assert_eq!(
            reply.metapaths[0].steps,
            vec![step(relation, Direction::Out)],
            "{question}: {:?}",
            reply.metapaths
        );
    }
    // Idris Penhallow is a doctor: "the department Idris Penhallow works in" is what
    // Idris works in, and "department" still names the relation to its head.
    let reply = link_by_words(
        &graph,
        &index,
        "Who is the boss of the department Idris Penhallow works in?",
    )
    .await;
    assert_eq!(
        reply.metapaths[0].steps,
        vec![
            step("works_in", Direction::Out),
            step("department_head", Direction::Out)
        ],
        "{:?}",
        reply.metapaths
    );
}

#[tokio::test]
async fn the_graphs_names_tell_which_side_of_an_of_name_calls_what_has_the_relation() {
    use std::sync::Arc;

    use super::core::holder_words;
    use crate::scoring::{fixtures::LANGUAGES_OF_FILMS, relevance::TextVectors, text};
    let graph = crate::scoring::fixtures::graph(&[
        ("Heat", "original language of film", "English"),
        ("Ronin", "original language of film", "French"),
        ("Ana Ruiz", "member of sports team", "Real Ortega"),
        ("Heat", "part of", "Ronin"),
    ]);
    let vectors = TextVectors::new(Arc::new(LANGUAGES_OF_FILMS), 100);
    let holders = holder_words(&graph, &vectors).await;
    // Films have an original language: "film" calls what has the relation.
    assert_eq!(
        holders.get("original language of film"),
        Some(&vec![text::stem("film")]),
        "{holders:?}"
    );
    // A team has members: "sports team" calls what the relation reaches, and "member"
    // what has it; "part of" has nothing after "of" to read.
    assert_eq!(
        holders.get("member of sports team"),
        Some(&vec![text::stem("member")]),
        "{holders:?}"
    );
    assert_eq!(holders.len(), 2, "{holders:?}");
    // Walked forward, the holder's words no longer name what the hop reaches.
    let holder = &holders["original language of film"];
    let tokens = text::relation_tokens_holding("original language of film", true, holder);
    assert!(tokens.contains(&text::stem("language")), "{tokens:?}");
    assert!(!tokens.contains(&text::stem("film")), "{tokens:?}");
    // Walked back, the hop reaches films, and "film" names them.
    let tokens = text::relation_tokens_holding("original language of film", false, holder);
    assert!(tokens.contains(&text::stem("film")), "{tokens:?}");
}

#[tokio::test]
async fn a_word_naming_an_attribute_of_what_follows_names_its_nearest_relation() {
    use std::sync::Arc;

    use crate::scoring::{fixtures::TYPES_NEAR_GENRE, relevance::TextVectors};

    let graph = movies();
    let index = build_name_index(&graph).await.unwrap();
    let link = |question: &'static str| {
        let (graph, index) = (&graph, &index);
        async move {
            let vectors = Arc::new(TextVectors::new(Arc::new(TYPES_NEAR_GENRE), 100));
            link_without_llm(
                graph,
                index,
                Some(vectors),
                question,
                &[],
                &LinkerConfig::default(),
            )
            .await
            .unwrap()
        }
    };
    // "what types are the films …": the types are something the films have.
    let reply = link("what types are the films directed by Michael Mann").await;
    assert_eq!(
        reply.metapaths[0].steps,
        vec![
            step("directed_by", Direction::In),
            step("has_genre", Direction::Out)
        ],
        "{:?}",
        reply.metapaths
    );
    // Elsewhere a word this far from every relation names none: the films themselves.
    let reply = link("which types did Michael Mann direct").await;
    assert_eq!(
        reply.metapaths[0].steps,
        vec![step("directed_by", Direction::In)],
        "{:?}",
        reply.metapaths
    );
}

/// Clubs, the towns they are based in, and players who moved between them.
const CLUBS: &[(&str, &str, &str)] = &[
    ("Harbor Rovers", "based_in", "Tessport"),
    ("Tessport United", "based_in", "Tessport"),
    ("Ostby Athletic", "based_in", "Ostby"),
    ("Mina Kael", "former_club", "Harbor Rovers"),
    ("Mina Kael", "current_club", "Ostby Athletic"),
    ("Jon Vell", "former_club", "Tessport United"),
    ("Jon Vell", "current_club", "Ostby Athletic"),
    ("Lena Morr", "born_in", "Tessport"),
    ("Lena Morr", "current_club", "Harbor Rovers"),
];

#[tokio::test]
async fn the_class_the_answers_are_of_is_read_from_the_graph_not_walked_to() {
    let graph = crate::scoring::fixtures::graph(CLUBS);
    let index = build_name_index(&graph).await.unwrap();
    // The clubs based in Tessport are clubs by the relations that point to them: no
    // hop to some player's other club is walked for the word "clubs".
    let reply = link_by_words(&graph, &index, "Which clubs are from Tessport?").await;
    assert_eq!(
        reply.metapaths[0].steps,
        vec![step("based_in", Direction::In)],
        "{:?}",
        reply.metapaths
    );
    // A relation named like the class still names the hop that reaches it.
    let reply = link_by_words(&graph, &index, "Which former club did Mina Kael play for?").await;
    assert_eq!(
        reply.metapaths[0].steps,
        vec![step("former_club", Direction::Out)],
        "{:?}",
        reply.metapaths
    );
}

#[tokio::test]
async fn among_plans_read_alike_the_one_reaching_the_kind_asked_goes_first() {
    let graph = crate::scoring::fixtures::graph(&[
        ("Valley Cardiology", "part_of", "Linden Medical Center"),
        ("Valley Oncology", "part_of", "Linden Medical Center"),
        (
            "Linden Medical Center",
            "medical_director",
            "Dr. Obi Marchetti",
        ),
        ("Dr. Obi Marchetti", "works_in", "Valley Cardiology"),
        ("Mireille Okoro", "works_in", "Valley Oncology"),
        ("Dr. Lucia Wenner", "works_in", "Valley Oncology"),
        ("Dr. Obi Marchetti", "is_a", "doctor"),
        ("Mireille Okoro", "is_a", "nurse"),
        ("Dr. Lucia Wenner", "is_a", "doctor"),
        ("Valley Cardiology", "is_a", "department"),
        ("Valley Oncology", "is_a", "department"),
    ]);
    let index = build_name_index(&graph).await.unwrap();
    // "works" names `works_in` alone: the medical director's department and the staff
    // of the departments part of the center read alike; "who" asks for a person.
    let reply = link_by_words(&graph, &index, "Who works at Linden Medical Center?").await;
    assert_eq!(
        reply.metapaths[0].steps,
        vec![
            step("part_of", Direction::In),
            step("works_in", Direction::In)
        ],
        "{:?}",
        reply.metapaths
    );
}

#[tokio::test]
async fn the_kind_asked_is_read_after_the_form_asked() {
    let graph = crate::scoring::fixtures::graph(&[
        ("Millbrook Ground", "capacity", "17800"),
        ("Aldwick Wanderers", "home_stadium", "Millbrook Ground"),
        ("Millbrook Ground", "located_in", "Aldwick"),
        ("Aldwick Wanderers", "based_in", "Aldwick"),
        ("Ivo Petrasek", "former_club", "Aldwick Wanderers"),
    ]);
    let index = build_name_index(&graph).await.unwrap();
    // No word names a relation: the capacity, a number, cannot say where; of the plans
    // left the first reaches a club, an organization, and "where" asks for a place.
    let reply = link_by_words(&graph, &index, "Where is Millbrook Ground?").await;
    assert_eq!(
        reply.metapaths[0].steps,
        vec![step("located_in", Direction::Out)],
        "{:?}",
        reply.metapaths
    );
}

#[tokio::test]
async fn a_participle_not_before_by_names_nothing_it_reaches() {
    use super::core::{classes_held, kinds_held, node_types};
    use crate::scoring::text::stem;

    let graph = crate::scoring::fixtures::graph(&[
        ("Quarrydb", "programmed_in", "Tern"),
        ("Quarrydb", "readable_file_format", "Plainsheet"),
        ("Format Forge", "programmed_in", "Tern"),
        ("Format Forge", "readable_file_format", "Murmur Audio"),
        ("Murmur Player", "programmed_in", "Brask"),
        ("Murmur Player", "readable_file_format", "Murmur Audio"),
        ("Murmur Player", "based_in", "Port Sallow"),
        ("Linear Algebra", "taught_in", "Marlowe Tower"),
        ("Marlowe Tower", "is_a", "building"),
    ]);
    let index = build_name_index(&graph).await.unwrap();
    // The languages programs are programmed in are no programs: the class word names
    // neither the relation walked forward nor what it reaches.
    let reply = link_by_words(
        &graph,
        &index,
        "Which programs can open Murmur Audio files?",
    )
    .await;
    assert_eq!(
        reply.metapaths[0].steps,
        vec![step("readable_file_format", Direction::In)],
        "{:?}",
        reply.metapaths
    );
    let node = |name: &str| entity(&graph, name).id;
    let types = node_types(&graph, &[node("Tern"), node("Port Sallow")]).await;
    let held = |name: &str| classes_held(&types, &[node(name)], None, &Default::default());
    assert!(
        !held("Tern").contains(&stem("program")),
        "{:?}",
        held("Tern")
    );
    // What kind of name it reaches, the participle still says: `based in` a place.
    assert_eq!(
        kinds_held(&types, &[node("Port Sallow")], &Default::default()),
        vec![crate::scoring::answer_type::AnswerType::Place]
    );
    // But no person: what a course is `taught in` is no teacher.
    let types = node_types(&graph, &[node("Marlowe Tower")]).await;
    let kinds = kinds_held(&types, &[node("Marlowe Tower")], &Default::default());
    assert!(
        !kinds.contains(&crate::scoring::answer_type::AnswerType::Person),
        "{kinds:?}"
    );
}

#[tokio::test]
async fn what_a_node_is_called_is_its_declared_class_head_and_what_points_to_it() {
    use super::core::{classes_held, node_types};
    use crate::scoring::text::stem;

    let graph = crate::scoring::fixtures::graph(&[
        ("Dust Folk", "instance of", "music genre"),
        ("Saltmarsh Choir", "genre", "Dust Folk"),
        ("Saltmarsh Choir", "instance of", "band"),
        ("Edda Salk", "home_library", "Harbor Library"),
    ]);
    let node = |name: &str| entity(&graph, name).id;
    let nodes = [
        node("Dust Folk"),
        node("Saltmarsh Choir"),
        node("Harbor Library"),
    ];
    let types = node_types(&graph, &nodes).await;
    let held = |name: &str| classes_held(&types, &[node(name)], None, &Default::default());
    // A "music genre" is a genre, not music: "how many musicians …" is not answered
    // with genres.
    assert!(
        held("Dust Folk").contains(&stem("genre")),
        "{:?}",
        held("Dust Folk")
    );
    assert!(
        !held("Dust Folk").contains(&stem("music")),
        "{:?}",
        held("Dust Folk")
    );
    assert!(held("Saltmarsh Choir").contains(&stem("band")));
    // Undeclared, a node is what the relations pointing to it call it.
    assert_eq!(held("Harbor Library"), vec![stem("library")]);
}
