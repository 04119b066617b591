use std::time::Duration;

use async_trait::async_trait;
use kgmesh_schemas::graph::{GraphSchema, Rows, Value};
use kgmesh_stores::cypher::{check_read_only, run_read_only, MemoryGraph};
use kgmesh_stores::{QueryLimits, StoreResult};

use super::*;

/// A small shop: suppliers supply products, products are part of categories.
struct Shop {
    graph: MemoryGraph,
    schema: GraphSchema,
}

#[async_trait]
impl CypherRunner for Shop {
    async fn run(
        &self,
        query: &str,
        params: &[(String, Value)],
        limits: &QueryLimits,
    ) -> StoreResult<Rows> {
        run_read_only(&self.graph, &self.schema, query, params, limits)
    }
}

fn s(text: &str) -> Value {
    Value::String(text.to_owned())
}

fn shop() -> Shop {
    let mut graph = MemoryGraph::new();
    let supplier = |graph: &mut MemoryGraph, name: &str, country: &str| {
        graph.add_node(
            &["Supplier"],
            vec![
                ("companyName".into(), s(name)),
                ("country".into(), s(country)),
            ],
        )
    };
    let exotic = supplier(&mut graph, "Exotic Liquids", "UK");
    let tokyo = supplier(&mut graph, "Tokyo Traders", "Japan");
    let heli = supplier(&mut graph, "Heli Süßwaren", "Germany");
    let mut categories = std::collections::HashMap::new();
    for name in ["Beverages", "Condiments", "Seafood", "Confections"] {
        let id = graph.add_node(&["Category"], vec![("categoryName".into(), s(name))]);
        categories.insert(name, id);
    }
    for (name, price, discontinued, by, category) in [
        ("Chai", 18.0, false, exotic, "Beverages"),
        ("Chang", 19.0, false, exotic, "Beverages"),
        ("Aniseed Syrup", 10.0, false, exotic, "Condiments"),
        ("Ikura", 31.0, false, tokyo, "Seafood"),
        ("Konbu", 6.0, false, tokyo, "Seafood"),
        ("Schoggi Schokolade", 43.9, true, heli, "Confections"),
    ] {
        let product = graph.add_node(
            &["Product"],
            vec![
                ("productName".into(), s(name)),
                ("unitPrice".into(), Value::Float(price)),
                ("discontinued".into(), Value::Bool(discontinued)),
            ],
        );
        graph.add_edge(by, "SUPPLIES", product, vec![]).unwrap();
        graph
            .add_edge(product, "PART_OF", categories[category], vec![])
            .unwrap();
    }
    let schema = graph.schema();
    Shop { graph, schema }
}

fn limits() -> QueryLimits {
    QueryLimits {
        timeout: Duration::from_secs(2),
        ..QueryLimits::default()
    }
}

async fn planner(shop: &Shop) -> GroundedCypher {
    tokio::time::timeout(
        Duration::from_secs(10),
        GroundedCypher::read(shop, shop.schema.clone(), &limits()),
    )
    .await
    .expect("reading the graph's values finishes")
    .expect("the graph's values are read")
}

async fn answers(shop: &Shop, planner: &GroundedCypher, question: &str) -> Vec<String> {
    let parsed = planner.read_question(question).await;
    let choice = planner
        .choose(&parsed, &planner.ranked(&parsed))
        .unwrap_or_else(|| panic!("no candidate for {question:?}"));
    let rows = shop
        .run(
            &choice.candidate.cypher,
            &choice.candidate.params,
            &limits(),
        )
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", choice.candidate.cypher));
    let mut column = planner.answer_column(&rows);
    if choice.candidate.shape.order.is_none() {
        column.sort();
    }
    column
}

#[tokio::test]
async fn values_of_the_graph_are_found_in_a_question_with_the_keys_that_hold_them() {
    let shop = shop();
    let planner = planner(&shop).await;
    let product = planner.values().label("Product").unwrap();
    assert_eq!(product.display, "productName");
    assert_eq!(
        product.property("unitPrice").map(|p| p.kind),
        Some(PropertyKind::Number)
    );
    assert_eq!(
        product.property("discontinued").map(|p| p.kind),
        Some(PropertyKind::Flag)
    );
    let question = planner.question("Which products are supplied by suppliers from Japan?");
    let found: Vec<(&str, &str, &Value)> = question
        .groundings
        .iter()
        .map(|g| (g.label.as_str(), g.key.as_str(), &g.value))
        .collect();
    assert_eq!(found, vec![("Supplier", "country", &s("Japan"))]);
    // The longest mention wins: "Schoggi Schokolade", not a shorter value inside it.
    let question = planner.question("Who supplies Schoggi Schokolade?");
    assert_eq!(question.groundings.len(), 1);
    assert_eq!(question.groundings[0].value, s("Schoggi Schokolade"));
    // A near-miss grounds the stored value, which is what the query will hold.
    let question = planner.question("Which products does Exotic Liquid supply?");
    let found: Vec<(&str, &str, &Value)> = question
        .groundings
        .iter()
        .map(|g| (g.label.as_str(), g.key.as_str(), &g.value))
        .collect();
    assert_eq!(
        found,
        vec![("Supplier", "companyName", &s("Exotic Liquids"))]
    );
    assert_eq!(question.groundings[0].span, (3, 5));
    assert_eq!(
        answers(&shop, &planner, "Which products does Exotic Liquid supply?").await,
        ["Aniseed Syrup", "Chai", "Chang"]
    );
    // Words far from every value ground nothing.
    assert!(planner
        .question("Which products does Nobody Known supply?")
        .groundings
        .is_empty());
}

#[test]
fn cues_read_counts_rankings_filters_and_limits() {
    let read = |q: &str| Cues::read(&text::words(q), &[]);
    let cues = read("How many products are there?");
    assert!(cues.count && cues.order.is_none() && cues.limit.is_none());
    let cues = read("What are the top 5 products by total quantity ordered?");
    assert_eq!(
        (cues.order, cues.limit, cues.aggregate),
        (Some(true), Some(5), Some(Aggregate::Sum))
    );
    let cues = read("List three products with a unit price greater than 20");
    assert_eq!(cues.limit, Some(3));
    assert_eq!(
        cues.compare,
        Some(Comparison {
            greater: true,
            inclusive: false,
            value: 20.0
        })
    );
    assert_eq!(
        cues.order, None,
        "'greater than' is a filter, not a ranking"
    );
    let cues = read("List the first 3 products with a unit price between 20 and 10");
    assert_eq!((cues.range, cues.limit), (Some((10.0, 20.0)), Some(3)));
    let cues = read("Which 3 customers placed the most orders? Rank by number of orders");
    assert!(!cues.count, "a ranking by a count is not a count");
    assert_eq!(cues.aggregate, Some(Aggregate::Count));
}

#[test]
fn comparatives_become_operators_and_whole_numbers_stay_integers() {
    let read = |q: &str| Cues::read(&text::words(q), &[]);
    let compare = |q: &str| read(q).compare.map(|c| (c.operator(), c.value));
    for (question, operator, value) in [
        ("Which films were released after 2012?", ">", 2012.0),
        ("Which films were released since 2012?", ">=", 2012.0),
        ("Which films were released before 2012?", "<", 2012.0),
        ("Which films came out in 2010 or later?", ">=", 2010.0),
        ("Products with more than 50 units", ">", 50.0),
        ("Products with at least 5 units", ">=", 5.0),
        ("Products with no more than 4 units", "<=", 4.0),
        ("Products priced under 20", "<", 20.0),
    ] {
        assert_eq!(compare(question), Some((operator, value)), "{question}");
    }
    // The year is the bound, not a value to equal nor a row limit.
    let cues = read("Which films were released after 2012?");
    assert!(cues.equals.is_empty() && cues.limit.is_none(), "{cues:?}");
    // A phrase's words are no other cue.
    assert!(!read("Products with no more than 4 units").negated);
    assert_eq!(read("Customers with at most 5 orders").order, None);
    assert_eq!(number_value(2012.0), Value::Int(2012));
    assert_eq!(number_value(2.5), Value::Float(2.5));
}

/// Films with a year (an integer) and a release date (a text).
fn films() -> Shop {
    let mut graph = MemoryGraph::new();
    for (title, year) in [
        ("Heat", 1995),
        ("Drive", 2011),
        ("Skyfall", 2012),
        ("Gravity", 2013),
        ("Arrival", 2016),
    ] {
        graph.add_node(
            &["Film"],
            vec![
                ("name".into(), s(title)),
                ("year".into(), Value::Int(year)),
                ("released".into(), s(&format!("{year}-06-01"))),
            ],
        );
    }
    let schema = graph.schema();
    Shop { graph, schema }
}

#[tokio::test]
async fn a_year_after_a_comparative_bounds_years_and_dates() {
    let films = films();
    let planner = planner(&films).await;
    let question = planner.question("Which films were released after 2012?");
    let ranked = planner.ranked(&question);
    let find = |condition: &str| {
        ranked
            .iter()
            .map(|(candidate, _)| candidate)
            .find(|candidate| candidate.cypher.contains(condition) && candidate.params.len() == 1)
            .unwrap_or_else(|| panic!("no candidate with {condition} alone"))
    };
    // On the integer key: `> 2012`, an integer as the graph holds it.
    let on_year = find("x.`year` > $x");
    assert_eq!(on_year.params, vec![("x".to_owned(), Value::Int(2012))]);
    // On the date text: from 2013 on ('2012-06-01' > '2012' as text).
    let on_date = find("x.`released` >= $s0");
    assert_eq!(on_date.params, vec![("s0".to_owned(), s("2013"))]);
    // No equality with the year, and no text comparison on names ('Heat' > '2013').
    assert!(ranked
        .iter()
        .all(|(c, _)| !c.cypher.contains("= $e0") && !c.cypher.contains("x.`name` >")));
    assert_eq!(
        answers(&films, &planner, "Which films were released after 2012?").await,
        ["Arrival", "Gravity"]
    );
    assert_eq!(
        answers(&films, &planner, "Which films were released since 2012?").await,
        ["Arrival", "Gravity", "Skyfall"]
    );
    assert_eq!(
        answers(&films, &planner, "Which films were released before 2012?").await,
        ["Drive", "Heat"]
    );
}

#[tokio::test]
async fn cold_choices_answer_lookups_paths_counts_rankings_and_filters() {
    let shop = shop();
    let planner = planner(&shop).await;
    assert_eq!(
        answers(
            &shop,
            &planner,
            "Which products are supplied by suppliers from Japan?"
        )
        .await,
        ["Ikura", "Konbu"]
    );
    assert_eq!(
        answers(
            &shop,
            &planner,
            "How many products are in the Seafood category?"
        )
        .await,
        ["2"]
    );
    assert_eq!(
        answers(
            &shop,
            &planner,
            "Which 2 products have the highest unit price?"
        )
        .await,
        ["Schoggi Schokolade", "Ikura"]
    );
    assert_eq!(
        answers(
            &shop,
            &planner,
            "Which products have a unit price greater than 20?"
        )
        .await,
        ["Ikura", "Schoggi Schokolade"]
    );
    assert_eq!(
        answers(&shop, &planner, "Which products are discontinued?").await,
        ["Schoggi Schokolade"]
    );
    assert_eq!(
        answers(&shop, &planner, "Which category is Chai part of?").await,
        ["Beverages"]
    );
    // A quoted key names a property; a quoted text is what it starts with.
    assert_eq!(
        answers(
            &shop,
            &planner,
            "Which products have a 'productName' starting with 'C'?"
        )
        .await,
        ["Chai", "Chang"]
    );
}

#[tokio::test]
async fn ranges_one_number_over_the_answers_and_quoted_texts_where_they_are_held() {
    let shop = shop();
    let planner = planner(&shop).await;
    assert_eq!(
        answers(
            &shop,
            &planner,
            "Which products have a unit price between 10 and 19?"
        )
        .await,
        ["Aniseed Syrup", "Chai", "Chang"]
    );
    assert_eq!(
        answers(
            &shop,
            &planner,
            "What is the average unit price of products in the Seafood category?"
        )
        .await,
        ["18.5"]
    );
    assert_eq!(
        answers(
            &shop,
            &planner,
            "What is the total unit price of products supplied by Exotic Liquids?"
        )
        .await,
        ["47"]
    );
    // 'pan' is in a country (Japan), in no company name: only `country` is tried.
    let question = planner.question("Which suppliers are in a country containing 'pan'?");
    let tried: Vec<String> = planner
        .ranked(&question)
        .into_iter()
        .filter(|(c, _)| c.cypher.contains("CONTAINS"))
        .map(|(c, _)| c.cypher)
        .collect();
    assert!(!tried.is_empty());
    assert!(
        tried.iter().all(|c| c.contains("`country` CONTAINS")),
        "{tried:#?}"
    );
    assert_eq!(
        answers(
            &shop,
            &planner,
            "Which suppliers are in a country containing 'pan'?"
        )
        .await,
        ["Tokyo Traders"]
    );
}

#[tokio::test]
async fn a_hostile_name_reaches_the_database_only_as_a_parameter() {
    let shop = shop();
    let planner = planner(&shop).await;
    let question =
        planner.question("Which products does 'Exotic Liquids') DETACH DELETE n //' supply?");
    let ranked = planner.ranked(&question);
    assert!(!ranked.is_empty());
    for (candidate, _) in &ranked {
        for word in ["DETACH", "DELETE", "Exotic", "//", "')"] {
            assert!(
                !candidate.cypher.contains(word),
                "question text in a query: {}",
                candidate.cypher
            );
        }
        check_read_only(&candidate.cypher, &shop.schema, &limits())
            .unwrap_or_else(|e| panic!("{}: {e}", candidate.cypher));
    }
    assert_eq!(
        answers(
            &shop,
            &planner,
            "Which products does 'Exotic Liquids') DETACH DELETE n //' supply?"
        )
        .await,
        ["Aniseed Syrup", "Chai", "Chang"]
    );
    assert_eq!(shop.graph.edge_count(), 12, "nothing was deleted");

    // A pasted list of names stays bounded.
    let long = "Chai Chang Konbu Ikura UK Japan Germany Seafood ".repeat(500);
    let question = planner.question(&format!("Which products are {long}?"));
    assert!(question.groundings.len() <= MAX_GROUNDINGS);
    let ranked = planner.ranked(&question);
    assert!(!ranked.is_empty() && ranked.len() <= planner.max_candidates);
}

#[tokio::test]
async fn a_plan_learned_from_answers_is_replayed_for_a_similar_question_with_its_values() {
    let shop = shop();
    let mut planner = planner(&shop).await;
    let asked = "What is the origin of the goods that Konbu comes from?";
    let similar = "What is the origin of the goods that Chai comes from?";
    // Cold, the wording names no key of the graph: some other query is chosen.
    let cold = answers(&shop, &planner, similar).await;
    assert_ne!(
        cold,
        ["UK"],
        "the cold ranking already answers; the test proves nothing"
    );
    let reference = Reference {
        answers: vec!["Japan".into()],
        ordered: false,
        unlimited: None,
        ties: None,
    };
    let learned = planner
        .learn(&shop, asked, &reference, &limits())
        .await
        .expect("candidates run");
    let signature = &learned
        .first()
        .expect("a candidate gives the known answer")
        .shape
        .signature;
    assert!(signature.contains("`country`"), "{signature}");
    assert_eq!(planner.learned_examples(), 1);
    planner.fit();
    let parsed = planner.question(similar);
    let choice = planner.choose(&parsed, &planner.ranked(&parsed)).unwrap();
    assert!(choice.learned.is_some_and(|w| w > 0.0), "{choice:?}");
    assert_eq!(answers(&shop, &planner, similar).await, ["UK"]);
    // The verified plan replays for its own shape only, by how alike the questions are.
    let near = planner.ranker.similarities(&parsed);
    let far = planner
        .ranker
        .similarities(&planner.question("How many products are in the Seafood category?"));
    assert!(near[0] > 0.9 && far[0] < near[0], "{near:?} {far:?}");
    let ranked = planner.ranked(&parsed);
    let (same, other): (Vec<_>, Vec<_>) = ranked
        .iter()
        .partition(|(c, _)| &c.shape.signature == signature);
    assert!(!same.is_empty() && !other.is_empty());
    assert!(same
        .iter()
        .all(|(c, _)| planner.ranker.replay(&near, c) > 0.9));
    assert!(other
        .iter()
        .all(|(c, _)| planner.ranker.replay(&near, c) == 0.0));
    // What was learned does not override what a question says it wants.
    assert_eq!(
        answers(
            &shop,
            &planner,
            "How many products are in the Seafood category?"
        )
        .await,
        ["2"]
    );
}

#[test]
fn references_compare_in_order_as_sets_or_within_an_unordered_limit() {
    let v = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let ordered = Reference {
        answers: v(&["a", "b"]),
        ordered: true,
        unlimited: None,
        ties: None,
    };
    assert!(ordered.matches(&v(&["a", "b"])));
    assert!(!ordered.matches(&v(&["b", "a"])));
    let set = Reference {
        answers: v(&["a", "b", "b"]),
        ordered: false,
        unlimited: None,
        ties: None,
    };
    assert!(set.matches(&v(&["b", "a"])));
    assert!(!set.matches(&v(&["a"])));
    let limited = Reference {
        answers: v(&["a", "b"]),
        ordered: false,
        unlimited: Some(v(&["a", "b", "c"])),
        ties: None,
    };
    assert!(limited.matches(&v(&["c", "a"])));
    assert!(!limited.matches(&v(&["c"])));
    assert!(!limited.matches(&v(&["c", "d"])));
    // Ordered by a count where b and c tie at 2, the query cut after three rows of
    // five: b and c come in any order, and d (also 1) may stand in for e.
    let tied = Reference {
        answers: v(&["a", "c", "b", "e"]),
        ordered: true,
        unlimited: None,
        ties: Some(Ties {
            keys: v(&["3", "2", "2", "1"]),
            beyond: Some(
                [("3", "a"), ("2", "b"), ("2", "c"), ("1", "d"), ("1", "e")]
                    .iter()
                    .map(|(k, a)| (k.to_string(), a.to_string()))
                    .collect(),
            ),
        }),
    };
    assert!(tied.matches(&v(&["a", "b", "c", "e"])));
    assert!(tied.matches(&v(&["a", "c", "b", "d"])));
    assert!(!tied.matches(&v(&["b", "a", "c", "e"])));
    assert!(!tied.matches(&v(&["a", "b", "c"])));
    assert!(!tied.matches(&v(&["a", "b", "c", "a"])));
    assert_eq!(plain_text(&s(" 12 ")), "12");
    assert_eq!(plain_text(&Value::Float(12.0)), "12");
    assert_eq!(plain_text(&Value::Float(1.23456)), "1.2346");
}

#[tokio::test]
async fn a_model_picks_among_the_best_candidates_and_an_unusable_reply_falls_back() {
    use crate::testing::ScriptedModel;
    use kgmesh_models::LlmError;

    let shop = shop();
    let planner = planner(&shop).await;
    let question = planner.question("Which products does Exotic Liquids supply?");
    let ranked = planner.ranked(&question);
    let llm_free = planner
        .choose_existing(&shop, &question, &ranked, true, EXISTENCE_TRIES, &limits())
        .await
        .unwrap()
        .0
        .candidate;

    // The model sees the best candidates that return rows, with their values written
    // in, and its number chooses (here the second).
    let model = ScriptedModel::new(vec![Ok("Query 2.")]);
    let picked = tokio::time::timeout(
        Duration::from_secs(5),
        planner.choose_with_model(&model, &shop, &question, &ranked, 4, &limits()),
    )
    .await
    .expect("in time")
    .expect("a choice");
    assert_eq!(
        (picked.picked, picked.offered, &picked.fallback),
        (Some(1), 4, &None)
    );
    assert_ne!(picked.choice.candidate, llm_free);
    // The picked query's rows come with it, from the run that offered it.
    let rerun = shop
        .run(
            &picked.choice.candidate.cypher,
            &picked.choice.candidate.params,
            &limits(),
        )
        .await
        .unwrap();
    assert_eq!(picked.rows.as_ref(), Some(&rerun));
    let prompt = model.prompts()[0].clone();
    assert!(prompt.contains("'Exotic Liquids'"), "{prompt}");
    assert!(prompt.contains("4. MATCH"), "{prompt}");
    assert!(!prompt.contains("5. MATCH"), "{prompt}");

    // A number not offered, or a failed call: the LLM-free choice, with the reason.
    for reply in [Ok("7"), Err(LlmError::Timeout(Duration::from_secs(1)))] {
        let model = ScriptedModel::new(vec![reply]);
        let picked = planner
            .choose_with_model(&model, &shop, &question, &ranked, 4, &limits())
            .await
            .expect("a choice");
        assert_eq!(picked.choice.candidate, llm_free);
        assert_eq!(picked.picked, None);
        assert!(picked.fallback.is_some());
        assert!(picked.rows.as_ref().is_some_and(has_rows));
    }
}

#[test]
fn a_candidate_is_shown_with_its_values_written_in() {
    let candidate = Candidate {
        cypher: "MATCH (x:`P`) WHERE x.`name` = $v1 AND x.`price` > $x AND x.`k` = $v10 RETURN x"
            .to_owned(),
        params: vec![
            ("v1".to_owned(), s("O'Brien")),
            ("x".to_owned(), Value::Float(10.5)),
            ("v10".to_owned(), Value::Int(3)),
        ],
        shape: Shape {
            signature: String::new(),
            hops: 0,
            count: false,
            order: None,
            limit: false,
            filter: true,
            aggregate: None,
        },
        stems: Vec::new(),
        grounded: Vec::new(),
        answer: "P".to_owned(),
    };
    assert_eq!(
        candidate.display(),
        "MATCH (x:`P`) WHERE x.`name` = 'O\\'Brien' AND x.`price` > 10.5 AND x.`k` = 3 RETURN x"
    );
}

#[tokio::test]
async fn the_choice_skips_candidates_that_return_no_row() {
    let shop = shop();
    let planner = planner(&shop).await;
    assert!(!has_rows(&Rows {
        columns: vec!["answer".into()],
        rows: vec![vec![Value::Null]],
        truncated: false,
    }));
    for text in [
        "Which products have a unit price greater than 40?",
        "Which products have a unit price greater than 100?",
        "Which suppliers are from Japan?",
    ] {
        let question = planner.question(text);
        let ranked = planner.ranked(&question);
        let (choice, rows) = tokio::time::timeout(
            Duration::from_secs(5),
            planner.choose_existing(&shop, &question, &ranked, false, EXISTENCE_TRIES, &limits()),
        )
        .await
        .expect("in time")
        .expect("a choice");
        let at = ranked
            .iter()
            .position(|(c, _)| *c == choice.candidate)
            .expect("chosen among the ranked");
        let mut earlier_rows = false;
        for (candidate, _) in &ranked[..at] {
            let rows = shop
                .run(&candidate.cypher, &candidate.params, &limits())
                .await
                .unwrap();
            earlier_rows |= has_rows(&rows);
        }
        assert!(!earlier_rows, "{text}: a better-ranked candidate had rows");
        let rows = rows.expect("the chosen query ran");
        assert!(
            has_rows(&rows) || at == 0,
            "{text}: chose a later candidate without rows"
        );
    }
}

#[tokio::test]
async fn a_plan_stored_in_the_plan_cache_teaches_another_planner_what_learning_did() {
    let shop = shop();
    let mut teacher = planner(&shop).await;
    let asked = "What is the origin of the goods that Konbu comes from?";
    let similar = "What is the origin of the goods that Chai comes from?";
    let reference = Reference {
        answers: vec!["Japan".into()],
        ordered: false,
        unlimited: None,
        ties: None,
    };
    let right = teacher
        .learn(&shop, asked, &reference, &limits())
        .await
        .expect("candidates run");
    assert!(!right.is_empty());
    let entry = plans::entry(asked, reference.answers.clone(), &right);
    assert!(plans::is_cypher_key(&plans::key(asked)));
    assert_eq!(
        plans::key(asked),
        plans::key("  what is the ORIGIN of the goods that konbu comes from")
    );
    assert!(
        entry.plan.cypher[0].contains("'Konbu'"),
        "{:?}",
        entry.plan.cypher
    );
    // Through the store's JSON, into a planner that ran nothing.
    let stored: kgmesh_schemas::messages::cache::CacheEntry =
        serde_json::from_str(&serde_json::to_string(&entry).unwrap()).unwrap();
    let mut student = planner(&shop).await;
    assert_ne!(
        answers(&shop, &student, similar).await,
        ["UK"],
        "cold already answers"
    );
    let stale = kgmesh_schemas::messages::cache::CacheEntry {
        plan: kgmesh_schemas::messages::cache::Plan {
            cypher: vec!["MATCH (n) RETURN n.`gone` AS answer".into()],
            ..Default::default()
        },
        ..stored.clone()
    };
    let key = plans::key(asked);
    let learned = plans::learn(
        &mut student,
        &[
            (key.clone(), stored.clone()),
            (plans::key("gone"), stale.clone()),
        ],
    )
    .await;
    assert_eq!(
        learned,
        plans::Learned {
            kept: 1,
            stale: 1,
            removed: 0
        }
    );
    student.fit();
    assert_eq!(student.learned_examples(), 1);
    assert_eq!(answers(&shop, &student, similar).await, ["UK"]);

    // Stored again under its key: replaced, not learned twice.
    let again = plans::apply(&mut student, &[(key.clone(), Some(stored.clone()))]).await;
    assert_eq!((again.kept, again.removed), (1, 0));
    student.fit();
    assert_eq!(student.learned_examples(), 1);
    // Stored again stale: the example goes. Deleted: nothing left to forget.
    let replaced = plans::apply(&mut student, &[(key.clone(), Some(stale))]).await;
    assert_eq!((replaced.kept, replaced.stale), (0, 1));
    student.fit();
    assert_eq!(student.learned_examples(), 0);
    let gone = plans::apply(&mut student, &[(key.clone(), None)]).await;
    assert_eq!(gone, plans::Learned::default());
    // Learned back, then deleted: the planner answers as before it learned.
    plans::apply(&mut student, &[(key.clone(), Some(stored))]).await;
    student.fit();
    assert_eq!(answers(&shop, &student, similar).await, ["UK"]);
    let deleted = plans::apply(&mut student, &[(key, None)]).await;
    assert_eq!(deleted.removed, 1);
    student.fit();
    assert_eq!(student.learned_examples(), 0);
    assert_ne!(answers(&shop, &student, similar).await, ["UK"]);
}

/// An embedder that knows a few words: each maps to an axis (or between two axes); any
/// other text points along an axis of its own.
struct Axes;

#[async_trait]
impl kgmesh_models::Embedder for Axes {
    fn name(&self) -> &str {
        "axes"
    }
    fn dim(&self) -> usize {
        8
    }
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, kgmesh_models::EmbedError> {
        let axis = |i: usize| {
            let mut v = vec![0.0; 8];
            v[i] = 1.0;
            v
        };
        let between = |a: usize, b: usize, wa: f32| {
            let mut v = vec![0.0; 8];
            v[a] = wa;
            v[b] = (1.0 - wa * wa).sqrt();
            v
        };
        if texts.iter().any(|t| t.contains("fail")) {
            return Err(kgmesh_models::EmbedError::Remote("down".into()));
        }
        Ok(texts
            .iter()
            .map(|t| match t.to_lowercase().as_str() {
                "germany" | "german" => axis(0),
                "japan" => axis(1),
                "uk" => axis(2),
                // Near Japan, but not near enough.
                "asian" => between(1, 7, 0.5),
                // Between Japan and Germany: no lead.
                "island" => between(1, 0, 0.7),
                _ => axis(7),
            })
            .collect())
    }
}

#[tokio::test]
async fn category_values_named_in_other_words_are_grounded_by_embedding() {
    let shop = shop();
    let mut planner = planner(&shop).await;
    // Without an embedder, "German" names no value.
    let plain = planner.read_question("Which suppliers are German?").await;
    assert!(plain.groundings.is_empty(), "{:?}", plain.groundings);
    let embedded = planner
        .use_embedder(std::sync::Arc::new(Axes))
        .await
        .unwrap();
    assert!(embedded >= 3, "countries and categories: {embedded}");
    let question = planner.read_question("Which suppliers are German?").await;
    let values: Vec<(&str, &str, String)> = question
        .groundings
        .iter()
        .map(|g| (g.label.as_str(), g.key.as_str(), plain_text(&g.value)))
        .collect();
    assert_eq!(values, [("Supplier", "country", "Germany".to_owned())]);
    assert_eq!(
        answers(&shop, &planner, "Which suppliers are German?").await,
        ["Heli Süßwaren"]
    );
    // Words of the schema are not looked up; a value found whole is not looked up again.
    let phrases = planner.values().free_phrases(
        "Which suppliers are from Japan?",
        &planner
            .question("Which suppliers are from Japan?")
            .groundings,
    );
    assert!(phrases.is_empty(), "{phrases:?}");
    // Too far, or no clear lead: nothing.
    for far in [
        "Which suppliers are Asian?",
        "Which suppliers are on an island?",
    ] {
        let question = planner.read_question(far).await;
        assert!(
            question.groundings.is_empty(),
            "{far}: {:?}",
            question.groundings
        );
    }
    // A failed embedding keeps what words find.
    let question = planner
        .read_question("Which products does Exotic Liquids supply, fail?")
        .await;
    assert_eq!(question.groundings.len(), 1, "{:?}", question.groundings);
}

/// Counts the queries a choice sends; `remote` says it is a database server; with
/// `refuse_unions`, fails any `UNION` as a backend without it would.
struct Counting<'a> {
    inner: &'a Shop,
    queries: std::sync::atomic::AtomicUsize,
    remote: bool,
    refuse_unions: bool,
}

#[async_trait]
impl CypherRunner for Counting<'_> {
    async fn run(
        &self,
        query: &str,
        params: &[(String, Value)],
        limits: &QueryLimits,
    ) -> StoreResult<Rows> {
        self.queries
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if self.refuse_unions && query.contains(" UNION ALL ") {
            return Err(kgmesh_stores::StoreError::InvalidQuery {
                reason: "UNION is not supported here".to_owned(),
                hint: None,
            });
        }
        self.inner.run(query, params, limits).await
    }

    fn remote(&self) -> bool {
        self.remote
    }
}

/// Whether `candidate`, run on its own, returns a row.
async fn returns_rows(shop: &Shop, candidate: &Candidate) -> bool {
    let rows = shop
        .run(&candidate.cypher, &candidate.params, &limits())
        .await
        .unwrap();
    has_rows(&rows)
}

#[tokio::test]
async fn one_probe_tells_which_candidates_return_a_row_as_running_each_would() {
    let shop = shop();
    let planner = planner(&shop).await;
    let mut probed = 0;
    for text in [
        "Which products have a unit price greater than 40?",
        "Which products have a unit price greater than 100?",
        "Which suppliers are from Japan?",
        "How many products does Exotic Liquids supply?",
        "Which supplier has the most products?",
        "What is the average unit price of Seafood products?",
        "Which categories does Tokyo Traders supply?",
    ] {
        let question = planner.question(text);
        let ranked = planner.ranked(&question);
        let candidates: Vec<&Candidate> = ranked.iter().take(12).map(|(c, _)| c).collect();
        let (query, params) = exists::probe(&candidates).expect("a probe");
        check_read_only(&query, &shop.schema, &limits()).expect("the probe is valid");
        let rows = shop.run(&query, &params, &limits()).await.unwrap();
        let said: BTreeSet<i64> = rows
            .rows
            .iter()
            .map(|row| match row[..] {
                [Value::Int(n)] => n,
                ref other => panic!("{text}: probe row {other:?}"),
            })
            .collect();
        let mut truth = BTreeSet::new();
        for (n, candidate) in candidates.iter().enumerate() {
            if returns_rows(&shop, candidate).await {
                truth.insert(n as i64);
            }
        }
        assert_eq!(said, truth, "{text}");
        probed += candidates.len();
    }
    assert!(probed > 30, "too few candidates probed: {probed}");
}

#[tokio::test]
async fn past_the_best_candidate_a_server_gets_one_probe_and_an_engine_runs_them_in_order() {
    let shop = shop();
    let planner = planner(&shop).await;
    // A question whose best candidates return no row.
    let mut search = None;
    for text in [
        "Which products have a unit price greater than 40?",
        "Which suppliers are from Japan?",
        "Which categories does Tokyo Traders supply?",
        "Which products are discontinued?",
        "What does Heli Süßwaren supply in Seafood?",
        "Which suppliers supply Beverages and are from Japan?",
        "How much is Ikura?",
    ] {
        let question = planner.question(text);
        let ranked = planner.ranked(&question);
        for (n, (candidate, _)) in ranked.iter().take(EXISTENCE_TRIES).enumerate() {
            if returns_rows(&shop, candidate).await {
                if n >= 2 {
                    search = Some((question, ranked, n));
                }
                break;
            }
        }
        if search.is_some() {
            break;
        }
    }
    let (question, ranked, at) = search.expect("a question whose best candidates have no row");
    for (remote, refuse_unions) in [(true, false), (true, true), (false, false)] {
        let counting = Counting {
            inner: &shop,
            queries: Default::default(),
            remote,
            refuse_unions,
        };
        let (choice, rows) = planner
            .choose_existing(
                &counting,
                &question,
                &ranked,
                false,
                EXISTENCE_TRIES,
                &limits(),
            )
            .await
            .expect("a choice");
        let case = format!("remote {remote}, refuse_unions {refuse_unions}");
        assert_eq!(choice.candidate, ranked[at].0, "{case}");
        assert!(rows.as_ref().is_some_and(has_rows), "{case}");
        let sent = counting.queries.load(std::sync::atomic::Ordering::Relaxed);
        // The best, the probe and the one it found; a refused probe, then each in
        // order; in process, each in order.
        let expected = match (remote, refuse_unions) {
            (true, false) => 3,
            (true, true) => 1 + 1 + at,
            (false, _) => 1 + at,
        };
        assert_eq!(sent, expected, "{case}");
    }
}
