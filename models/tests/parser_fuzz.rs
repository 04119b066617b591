//! Parsers meet arbitrary text and text assembled from the pieces real replies are made
//! of (tags, fences, JSON, arrows, citations, FINISH, multi-byte characters). They must
//! never panic, and what they return must stay within what the prompt offered.

use kgmesh_models::parse::{isr, judge, kg_linker, summarizer, traversal};
use kgmesh_schemas::{budget::MAX_DEPTH, graph::Entity, messages::judge::Verdict, NodeId};
use proptest::prelude::*;

const FRAGMENTS: &[&str] = &[
    "<entities>",
    "</entities>",
    "<paths>",
    "</paths>",
    "<cypher>",
    "</cypher>",
    "<answers>",
    "</answers>",
    "<status>",
    "</status>",
    "<selected>",
    "</selected>",
    "<next-entities>",
    "</next-entities>",
    "<verdict>",
    "</verdict>",
    "<relation>",
    "</relation>",
    "<from>",
    "</from>",
    "<entity>",
    "</entity>",
    "<constraints>",
    "<domain>",
    "<aspect>",
    "<think>",
    "</think>",
    "```",
    "```json\n",
    "{",
    "}",
    "[",
    "]",
    "\"",
    ":",
    ",",
    "->",
    "~",
    "<-",
    "[:",
    "FINISH",
    "COMPLETE",
    "EXPAND_DEPTH",
    "EXPAND_BREADTH",
    "E1",
    "E99",
    "[E2, E3]",
    "(E1)",
    "|",
    "directed_by",
    "release_year",
    "Inception",
    "Christopher Nolan",
    "MATCH (n) RETURN n",
    ";",
    "\n",
    "\n\n",
    " ",
    "- ",
    "1. ",
    "é",
    "名前",
    "🎬",
    "\u{0}",
    "<",
    ">",
    "/",
    "**",
    "###",
    "Answer:",
    "{\"answers\": [",
    "{\"verdict\": \"",
    "\"}",
    "null",
    "0",
];

fn assembled() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(FRAGMENTS), 0..60).prop_map(|parts| parts.concat())
}

fn any_reply() -> impl Strategy<Value = String> {
    prop_oneof![assembled(), any::<String>(), "\\PC{0,400}"]
}

fn relations() -> Vec<String> {
    vec!["directed_by".into(), "release_year".into()]
}

fn frontier() -> Vec<Entity> {
    vec![
        Entity {
            id: NodeId(1),
            name: "Inception".into(),
        },
        Entity {
            id: NodeId(2),
            name: "Christopher Nolan".into(),
        },
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, .. ProptestConfig::default() })]

    #[test]
    fn kg_linker_never_panics_and_keeps_to_the_schema(reply in any_reply()) {
        let parsed = kg_linker::parse(&reply, &relations());
        for path in &parsed.metapaths {
            prop_assert!(!path.steps.is_empty() && path.steps.len() <= MAX_DEPTH as usize);
            for step in &path.steps {
                prop_assert!(relations().contains(&step.relation));
            }
        }
        prop_assert!(parsed.mentions.iter().all(|m| !m.trim().is_empty()));
        let _ = kg_linker::parse(&reply, &[]);
    }

    #[test]
    fn traversal_never_panics_and_picks_only_offers(reply in any_reply()) {
        let offered = relations();
        for relation in traversal::parse_relation_selection(&reply, &offered) {
            prop_assert!(offered.contains(&relation));
        }
        let names = vec!["Inception".to_string(), "Christopher Nolan".to_string()];
        if let traversal::EntitySelection::Explore(chosen) = traversal::parse_entity_selection(&reply, &names) {
            prop_assert!(chosen.iter().all(|c| names.contains(c)));
        }
    }

    #[test]
    fn judge_never_panics_and_expands_only_the_frontier(reply in any_reply()) {
        if let Ok(reply) = judge::parse(&reply, &frontier(), &relations()) {
            match reply.verdict {
                Verdict::ExpandDepth { relation, frontier: chosen, .. } => {
                    prop_assert!(relations().contains(&relation));
                    prop_assert!(chosen.iter().all(|e| frontier().contains(e)));
                }
                Verdict::ExpandBreadth { frontier: chosen } => {
                    prop_assert!(chosen.iter().all(|e| frontier().contains(e)));
                }
                Verdict::Complete | Verdict::NextRound => {}
            }
        }
    }

    #[test]
    fn summarizer_never_panics_and_cites_in_range(reply in any_reply(), count in 0usize..5, max in 0usize..4) {
        let parsed = summarizer::parse(&reply, count, max);
        prop_assert!(parsed.answers.len() <= max);
        for answer in &parsed.answers {
            prop_assert!(answer.evidence.iter().all(|i| (*i as usize) < count));
        }
    }

    #[test]
    fn isr_never_panics(reply in any_reply()) {
        if let Ok(isr) = isr::parse(&reply) {
            prop_assert!(isr.domain.split_whitespace().count() <= 4);
        }
    }
}

mod lexical {
    use kgmesh_models::lexical::{text, Gazetteer};
    use kgmesh_schemas::NodeId;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 500, .. ProptestConfig::default() })]

        #[test]
        fn mentions_are_in_bounds_and_never_overlap(
            names in prop::collection::vec("\\PC{0,30}", 0..30),
            question in "\\PC{0,200}",
        ) {
            let gazetteer = Gazetteer::build(names.iter().enumerate().map(|(i, n)| (NodeId(i as u64), n.clone())));
            let mentions = gazetteer.find_mentions(&question);
            let mut last_end = 0;
            for mention in &mentions {
                prop_assert!(mention.start >= last_end && mention.end <= question.len());
                prop_assert_eq!(&question[mention.start..mention.end], mention.text.as_str());
                prop_assert!(!mention.candidates.is_empty());
                last_end = mention.end;
            }
            let _ = gazetteer.lookup(&question, 5);
        }

        #[test]
        fn the_text_toolkit_reads_any_text(
            a in "\\PC{0,100}",
            b in "\\PC{0,40}",
        ) {
            for word in text::words(&a) {
                prop_assert!(!word.is_empty());
                let _ = text::stem(&word);
            }
            let stems = text::content_stems(&a);
            let distinct: std::collections::HashSet<&String> = stems.iter().collect();
            prop_assert_eq!(distinct.len(), stems.len());
            for other in text::content_stems(&b) {
                for stem in &stems {
                    let similarity = text::stem_similarity(stem, &other);
                    prop_assert!((0.0..=1.0).contains(&similarity));
                    prop_assert_eq!(similarity, text::stem_similarity(&other, stem));
                }
            }
            let _ = text::relation_words(&b);
            let _ = text::marked_as_name(&a, &b);
        }
    }
}
