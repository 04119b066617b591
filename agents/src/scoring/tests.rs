use super::{
    core::{score_triples, ScoringConfig},
    fixtures::{entity, metapath, movies},
    relevance::Relevance,
};

#[tokio::test]
async fn triplets_of_the_asked_relation_rank_first_within_two_hops() {
    let graph = movies();
    let mann = entity(&graph, "Michael Mann");
    let relevance = Relevance::lexical(
        "when were the films directed by Michael Mann released",
        &["Michael Mann"],
    );
    let config = ScoringConfig {
        top_k: 4,
        ..ScoringConfig::default()
    };
    let top = score_triples(&graph, &relevance, &[mann], &config)
        .await
        .unwrap();
    assert_eq!(top.len(), 4);
    let mut years: Vec<&str> = top
        .iter()
        .filter(|(t, _)| t.relation == "release_year")
        .map(|(t, _)| t.tail.name.as_str())
        .collect();
    years.sort();
    assert_eq!(years, vec!["1995", "2004"]);
    assert!(
        top.windows(2).all(|w| w[0].1 >= w[1].1),
        "sorted best first"
    );
}

#[tokio::test]
async fn hops_bound_what_is_reached() {
    let graph = movies();
    let mann = entity(&graph, "Michael Mann");
    let relevance = Relevance::lexical("anything", &[]);
    let config = ScoringConfig {
        hops: 1,
        top_k: 100,
        ..ScoringConfig::default()
    };
    let top = score_triples(&graph, &relevance, &[mann], &config)
        .await
        .unwrap();
    assert_eq!(
        top.len(),
        2,
        "only the two directed_by edges are one hop away"
    );
    assert!(top.iter().all(|(t, _)| t.relation == "directed_by"));
}

#[tokio::test]
async fn word_embeddings_fill_the_gaps_of_lexical_relation_matching() {
    use std::sync::Arc;

    use super::relevance::TextVectors;

    let question = "the types of the films directed by Michael Mann";
    let genre = vec!["directed_by".to_owned(), "has_genre".to_owned()];
    let year = vec!["directed_by".to_owned(), "release_year".to_owned()];
    let sequences = vec![genre, year];
    let texts = vec![String::new(), String::new()];

    let lexical = Relevance::lexical(question, &["Michael Mann"]);
    let scores = lexical.sequences(&sequences, &texts).await;
    assert_eq!(scores[0], scores[1], "no lexical clue tells them apart");

    let vectors = Arc::new(TextVectors::new(
        Arc::new(super::fixtures::TYPES_MEAN_GENRE),
        100,
    ));
    let with_words =
        Relevance::lexical(question, &["Michael Mann"]).with_word_vectors(vectors.clone(), 0.5);
    let scores = with_words.sequences(&sequences, &texts).await;
    assert!(scores[0] > scores[1], "{scores:?}");
    // After "what" the word names the answer's class, and a class may be named after a
    // relation ("what *sex*" is `gender`; here "what *types*" is `has_genre`). A class word
    // near every relation ("what *movies*") names none: see the next test.
    let question = "what types are the films directed by Michael Mann";
    let with_words =
        Relevance::lexical(question, &["Michael Mann"]).with_word_vectors(vectors, 0.5);
    let scores = with_words.sequences(&sequences, &texts).await;
    assert!(scores[0] > scores[1], "{scores:?}");
}

#[tokio::test]
async fn a_word_near_every_relation_names_none_a_word_near_one_names_it() {
    use std::sync::Arc;

    use super::{
        fixtures::{MOVIES_MEAN_ACTORS, MOVIES_NEAR_EVERY_RELATION},
        relevance::{TextVectors, SYNONYM_COSINE},
    };

    let question = "Michael Mann directed movies with whom";
    let actors = vec!["directed_by".to_owned(), "starred_actors".to_owned()];
    let genre = vec!["directed_by".to_owned(), "has_genre".to_owned()];
    let sequences = vec![actors, genre];
    let texts = vec![String::new(), String::new()];
    let scores = |table: super::fixtures::WordTable| {
        let relevance = Relevance::lexical(question, &["Michael Mann"]).with_word_vectors(
            Arc::new(TextVectors::new(Arc::new(table), 100)),
            SYNONYM_COSINE,
        );
        let sequences = sequences.clone();
        let texts = texts.clone();
        async move { relevance.sequences(&sequences, &texts).await }
    };
    // Nearest to `starred_actors` by a clear margin, past the cosine floor, but hardly
    // above its cosine to the other relations: a domain word, not a synonym.
    let diffuse = scores(MOVIES_NEAR_EVERY_RELATION).await;
    assert_eq!(diffuse[0], diffuse[1], "{diffuse:?}");
    // The same as the answer's class ("which *movies* …").
    let relevance = Relevance::lexical("which movies did Michael Mann direct", &["Michael Mann"])
        .with_word_vectors(
            Arc::new(TextVectors::new(Arc::new(MOVIES_NEAR_EVERY_RELATION), 100)),
            SYNONYM_COSINE,
        );
    let class = relevance.sequences(&sequences, &texts).await;
    assert_eq!(class[0], class[1], "{class:?}");
    let distinct = scores(MOVIES_MEAN_ACTORS).await;
    assert!(distinct[0] > distinct[1], "{distinct:?}");
    // A plural after "which" or "how many" names the kind of the answers (or of what
    // is counted), even where it reads near one relation alone, as does the plural
    // ending a longer phrase there; so does one after "what" that is the object of
    // the clause after it, and one after "what are the".
    for question in [
        "which movies did Michael Mann direct",
        "which american movies did Michael Mann direct",
        "how many movies did Michael Mann direct",
        "how many american movies did Michael Mann direct",
        "what movies did Michael Mann direct",
        "what movies are about Michael Mann",
        "what are the movies that Michael Mann directed",
    ] {
        let relevance = Relevance::lexical(question, &["Michael Mann"]).with_word_vectors(
            Arc::new(TextVectors::new(Arc::new(MOVIES_MEAN_ACTORS), 100)),
            SYNONYM_COSINE,
        );
        let class = relevance.sequences(&sequences, &texts).await;
        assert_eq!(class[0], class[1], "{question}: {class:?}");
    }
    // After "what" with a determined subject past the auxiliary, the plural may say
    // what is asked of that subject ("what *types* are the films …"): it keeps the
    // relation it reads near.
    let relevance = Relevance::lexical(
        "what movies are the films Michael Mann directed",
        &["Michael Mann"],
    )
    .with_word_vectors(
        Arc::new(TextVectors::new(Arc::new(MOVIES_MEAN_ACTORS), 100)),
        SYNONYM_COSINE,
    );
    let attribute = relevance.sequences(&sequences, &texts).await;
    assert!(attribute[0] > attribute[1], "{attribute:?}");
}

#[tokio::test]
async fn what_verified_plans_taught_about_a_word_outranks_its_embedding_once_seen_twice() {
    use std::sync::Arc;

    use kgmesh_schemas::{graph::Direction, messages::cache::RelationCue};

    use super::{
        fixtures::MOVIES_MEAN_ACTORS,
        relevance::{TextVectors, SYNONYM_COSINE},
        text::stem,
    };

    let actors = metapath(&[
        ("directed_by", Direction::Out),
        ("starred_actors", Direction::Out),
    ]);
    let genre = metapath(&[
        ("directed_by", Direction::Out),
        ("has_genre", Direction::Out),
    ]);
    let texts = vec![String::new(), String::new()];
    let question = "Michael Mann directed movies with whom";
    let relevance = || {
        Relevance::lexical(question, &["Michael Mann"]).with_word_vectors(
            Arc::new(TextVectors::new(Arc::new(MOVIES_MEAN_ACTORS), 100)),
            SYNONYM_COSINE,
        )
    };
    // By embedding alone "movies" names `starred_actors`.
    let scores = relevance().metapaths(&[&actors, &genre], &texts).await;
    assert!(scores[0] > scores[1], "{scores:?}");
    // Verified plans of this graph read "movies" as `has_genre`: they decide.
    let cues = [RelationCue {
        word: stem("movies"),
        relation: "has_genre".to_owned(),
        inverse: false,
        weight: 0.6,
    }];
    let scores = relevance()
        .with_cues(&cues)
        .metapaths(&[&actors, &genre], &texts)
        .await;
    assert!(scores[1] > scores[0], "{scores:?}");
    // A word seen in a single verified plan (the lexicon's confidence 1/3) is weaker
    // evidence than the embedder's reading, which it does not silence.
    let once = [RelationCue {
        weight: 1.0 / 3.0,
        ..cues[0].clone()
    }];
    let scores = relevance()
        .with_cues(&once)
        .metapaths(&[&actors, &genre], &texts)
        .await;
    assert!(scores[0] > scores[1], "{scores:?}");
}

#[tokio::test]
async fn an_opening_where_names_the_relation_it_stands_out_for() {
    use std::sync::Arc;

    use kgmesh_schemas::graph::Direction;

    use super::{
        fixtures::WHERE_MEANS_COUNTRY,
        relevance::{TextVectors, SYNONYM_COSINE},
    };

    let relations: Arc<[String]> = [
        "is_in_country",
        "plays_for_country",
        "plays_in_club",
        "plays_position",
    ]
    .iter()
    .map(|r| (*r).to_owned())
    .collect();
    // The club's country; the club of the player's country; the club.
    let right = metapath(&[
        ("plays_in_club", Direction::Out),
        ("is_in_country", Direction::Out),
    ]);
    let wrong = metapath(&[
        ("plays_for_country", Direction::Out),
        ("is_in_country", Direction::In),
    ]);
    let club = metapath(&[("plays_in_club", Direction::Out)]);
    // The nearest relation walked from object to subject: what is in the country.
    let back = metapath(&[
        ("plays_in_club", Direction::Out),
        ("is_in_country", Direction::In),
    ]);
    let texts = vec![String::new(); 4];
    let scores = |question: &'static str| {
        let relevance = Relevance::lexical(question, &["Saphir_TAIDER"])
            .with_graph_relations(relations.clone())
            .with_word_vectors(
                Arc::new(TextVectors::new(Arc::new(WHERE_MEANS_COUNTRY), 100)),
                SYNONYM_COSINE,
            );
        let (right, wrong, club, back) = (right.clone(), wrong.clone(), club.clone(), back.clone());
        let texts = texts.clone();
        async move {
            relevance
                .metapaths(&[&right, &wrong, &club, &back], &texts)
                .await
        }
    };
    // "where" asks for a place and stands out for `is_in_country` (0.45, apart from the
    // rest); `plays_in_club` explains "plays" and the clause's "club" as well.
    let asked = scores("where is the football club that Saphir_TAIDER plays for").await;
    assert!(asked[0] > asked[1], "{asked:?}");
    assert!(asked[0] > asked[2], "{asked:?}");
    // "where" names what `is_in_country` points to: walked back, it explains nothing.
    assert!(asked[3] < asked[2], "{asked:?}");
    // Where another word explains the hop that reaches a place, "where" asks for that
    // place and names no relation of its own: not the country the club is in.
    let played = scores("where does Saphir_TAIDER play").await;
    assert!(played[2] > played[0], "{played:?}");
    // A content word at the same cosine is below the floor of content words: it names
    // no relation, and the sequences score as for a word no embedding places near any.
    // (Both are links of an "of" chain, "the *whereabouts* of the club", which no
    // relation explains: a hop may stand for such a link.)
    let content = scores("whereabouts of the football club that Saphir_TAIDER plays for").await;
    let unplaced = scores("history of the football club that Saphir_TAIDER plays for").await;
    assert_eq!(content, unplaced);
}

#[test]
fn reading_by_words_an_opening_where_names_a_last_hop_that_reaches_what_its_name_calls_a_place() {
    use kgmesh_schemas::graph::Direction;

    // Without an embedder "where" names no relation by its letters; `is_in_country`
    // says by its name that it reaches a country, a place.
    let right = metapath(&[
        ("plays_in_club", Direction::Out),
        ("is_in_country", Direction::Out),
    ]);
    // A detour through the other players of the player's country to their clubs: it
    // explains "plays" and "club" by two hops, and reaches no place.
    let detour = metapath(&[
        ("plays_for_country", Direction::Out),
        ("is_in_country", Direction::In),
        ("plays_in_club", Direction::In),
    ]);
    // Walked back, `is_in_country` reaches what is in a country.
    let back = metapath(&[
        ("plays_in_club", Direction::Out),
        ("is_in_country", Direction::In),
    ]);
    // A place-named relation before the last hop reaches no answer.
    let through = metapath(&[
        ("plays_for_country", Direction::Out),
        ("is_in_country", Direction::In),
    ]);
    let relevance = Relevance::lexical(
        "where is the football club that Saphir_TAIDER plays for",
        &["Saphir_TAIDER"],
    );
    let scores = relevance.metapaths_lexically(&[&right, &detour, &back, &through]);
    assert!(scores[0] > scores[1], "{scores:?}");
    assert!(scores[0] > scores[2], "{scores:?}");
    // Asked otherwise, the hop to the country explains nothing, and the detour, which
    // explains two words of the question by two hops, reads better.
    let asked = Relevance::lexical(
        "how is the football club that Saphir_TAIDER plays for",
        &["Saphir_TAIDER"],
    );
    let other = asked.metapaths_lexically(&[&right, &detour, &back, &through]);
    assert!(other[1] > other[0], "{other:?}");
    assert_eq!(scores[2], other[2], "walked back, the hop explains nothing");
    assert_eq!(scores[3], other[3], "not the last hop");
    // A name is read as written: a verb built on a place noun names no place.
    for (named, place) in [
        ("located_in_city", true),
        ("place_of_birth", true),
        ("hubs", true),
        ("based_in", false),
        ("placed", false),
        ("country_code", false),
    ] {
        let path = metapath(&[(named, Direction::Out)]);
        let where_ = Relevance::lexical("where is Harbor Stores", &["Harbor Stores"])
            .metapaths_lexically(&[&path])[0];
        let how = Relevance::lexical("how is Harbor Stores", &["Harbor Stores"])
            .metapaths_lexically(&[&path])[0];
        assert_eq!(where_ > how, place, "{named}: {where_} against {how}");
    }
}

#[tokio::test]
async fn a_class_word_is_what_a_relation_reaches_only_by_its_head() {
    use kgmesh_schemas::graph::Direction;

    // The ships an operator operates, against their types: `ship_type` is a type, and
    // "ship" only says what has one.
    let ships = metapath(&[("operates", Direction::Out)]);
    let types = metapath(&[("operates", Direction::Out), ("ship_type", Direction::Out)]);
    let operated = Relevance::lexical("which ships does Tallow Line operate", &["Tallow Line"]);
    let scores = operated.metapaths(&[&ships, &types], &[]).await;
    assert!(scores[0] > scores[1], "{scores:?}");
    assert_eq!(scores, operated.metapaths_lexically(&[&ships, &types]));
    // Walked back from a type, `ship_type` reaches ships, which "ships" may name.
    let typed = metapath(&[("ship_type", Direction::In)]);
    let other = metapath(&[("registered_in", Direction::In)]);
    let of_type = Relevance::lexical("which ships are tankers", &["tankers"]);
    let scores = of_type.metapaths(&[&typed, &other], &[]).await;
    assert!(scores[0] > scores[1], "{scores:?}");
    // A dotted id's type segment names what has the relation: "airlines" is not what
    // `aviation.airline.hubs` reaches from an airline, but what it reaches from a hub.
    let hubs = metapath(&[("aviation.airline.hubs", Direction::Out)]);
    let founded = metapath(&[("aviation.airline.founders", Direction::In)]);
    let asked = Relevance::lexical("which airlines did Ilse Marrow start", &["Ilse Marrow"]);
    let scores = asked.metapaths(&[&hubs, &founded], &[]).await;
    assert!(scores[1] > scores[0], "{scores:?}");
}

#[test]
fn a_word_learned_from_the_other_end_of_a_relation_claims_its_first_hop() {
    use kgmesh_schemas::{graph::Direction, messages::cache::RelationCue};

    use super::text::stem;

    // Verified plans taught "supervise" from the professor's end ("which students does
    // Y supervise": `advised_by` walked back). Asked from the student's end, the one
    // hop to the professor is what the word names, not the round trip to the
    // professor's other students, whose second hop walks the relation the taught way.
    let one_hop = metapath(&[("advised_by", Direction::Out)]);
    let round_trip = metapath(&[
        ("advised_by", Direction::Out),
        ("advised_by", Direction::In),
    ]);
    let cues = [RelationCue {
        word: stem("supervises"),
        relation: "advised_by".to_owned(),
        inverse: true,
        weight: 0.5,
    }];
    let relevance = Relevance::lexical("which professor supervises Kofi Mensah", &["Kofi Mensah"])
        .with_cues(&cues);
    let scores = relevance.metapaths_lexically(&[&one_hop, &round_trip]);
    assert!(scores[0] > scores[1], "{scores:?}");
    // Past the first hop only the taught direction counts.
    let taught = metapath(&[
        ("enrolled_in", Direction::Out),
        ("advised_by", Direction::In),
    ]);
    let other_way = metapath(&[
        ("enrolled_in", Direction::Out),
        ("advised_by", Direction::Out),
    ]);
    let scores = relevance.metapaths_lexically(&[&taught, &other_way]);
    assert!(scores[0] > scores[1], "{scores:?}");
}
