use super::{
    core::{score_triples, ScoringConfig},
    fixtures::{entity, movies},
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
