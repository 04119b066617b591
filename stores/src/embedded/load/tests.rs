//! Loader tests on small files written here, plus the bundled data sets.

use std::{io::Write, path::PathBuf};

use kgmesh_schemas::graph::Value;

use super::*;

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    let mut file = std::fs::File::create(&path).unwrap();
    file.write_all(text.as_bytes()).unwrap();
    path
}

fn quiet() -> LoadOptions {
    LoadOptions::default()
}

#[test]
fn tsv_bad_lines_are_counted_with_their_line_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        &dir,
        "kb.tsv",
        "Heat\tdirected_by\tMichael Mann\n\nHeat\tstarred_actors\n# comment\nHeat\t\tX\nCollateral\tdirected_by\tMichael Mann\r\n",
    );
    let (graph, report) = load_graph(&path, &quiet()).unwrap();
    assert_eq!(report.format, KgFormat::Tsv);
    assert_eq!(graph.edge_count(), 2);
    assert_eq!(graph.node_count(), 3);
    assert_eq!(report.lines, 6);
    assert_eq!(report.bad_line_count, 2);
    assert_eq!(
        report
            .bad_lines
            .iter()
            .map(|bad| bad.line)
            .collect::<Vec<_>>(),
        vec![3, 5]
    );
    assert!(report.bad_lines[0].to_string().contains("kb.tsv:3"));
    // The \r of a Windows line ending is not part of the name.
    assert_eq!(graph.lookup_exact("Michael Mann").len(), 1);

    let strict = LoadOptions {
        strict: true,
        ..quiet()
    };
    match load_graph(&path, &strict) {
        Err(StoreError::Corrupt { path, .. }) => assert!(path.ends_with("kb.tsv:3"), "{path}"),
        other => panic!("strict mode must stop at line 3: {other:?}"),
    }
}

#[test]
fn ntriples_literals_can_be_typed_properties_of_their_subject() {
    let dir = tempfile::tempdir().unwrap();
    let nt = write(
        &dir,
        "kb.nt",
        concat!(
            "<http://ex.org/Heat> <http://ex.org/year> \"1995\"^^<http://www.w3.org/2001/XMLSchema#gYear> .\n",
            "<http://ex.org/Heat> <http://ex.org/runtime> \"170\"^^<http://www.w3.org/2001/XMLSchema#integer> .\n",
            "<http://ex.org/Heat> <http://ex.org/rating> \"8.3\"^^<http://www.w3.org/2001/XMLSchema#double> .\n",
            "<http://ex.org/Heat> <http://ex.org/colour> \"true\"^^<http://www.w3.org/2001/XMLSchema#boolean> .\n",
            "<http://ex.org/Heat> <http://ex.org/budget> \"lots\"^^<http://www.w3.org/2001/XMLSchema#integer> .\n",
            "<http://ex.org/Heat> <http://ex.org/title> \"Heat\"@en .\n",
            "<http://ex.org/Heat> <http://ex.org/title> \"Heat \\\"95\\\"\"@de .\n",
            "<http://ex.org/Heat> <http://ex.org/directedBy> <http://ex.org/Mann> .\n",
            "\"1995\" <http://ex.org/year> <http://ex.org/Heat> .\n",
        ),
    );
    let options = LoadOptions {
        literals: LiteralMode::Properties,
        ..quiet()
    };
    let (graph, report) = load_graph(&nt, &options).unwrap();
    // Only the IRI object is an edge; no node is named after a literal.
    assert_eq!(graph.edge_count(), 1);
    assert_eq!(graph.node_count(), 2);
    assert!(graph.lookup_exact("1995").is_empty());
    assert_eq!(report.bad_line_count, 1, "a literal subject is a bad line");
    assert_eq!(report.bad_lines[0].line, 9);
    let heat = graph.lookup_exact("http://ex.org/Heat")[0];
    let property = |key: &str| graph.node_property_by_name(heat, key).cloned();
    assert_eq!(
        property("http://ex.org/year"),
        Some(Value::String("1995".into()))
    );
    assert_eq!(property("http://ex.org/runtime"), Some(Value::Int(170)));
    assert_eq!(property("http://ex.org/rating"), Some(Value::Float(8.3)));
    assert_eq!(property("http://ex.org/colour"), Some(Value::Bool(true)));
    assert_eq!(
        property("http://ex.org/budget"),
        Some(Value::String("lots".into())),
        "an ill-typed literal keeps its text"
    );
    assert_eq!(
        property("http://ex.org/title"),
        Some(Value::List(vec![
            Value::String("Heat".into()),
            Value::String("Heat \"95\"".into())
        ])),
        "several values of one predicate become a list in file order"
    );
    // The default keeps literals as nodes, reachable by the edge-walking retrievers.
    let (graph, _) = load_graph(&nt, &quiet()).unwrap();
    assert_eq!(graph.lookup_exact("1995").len(), 1);
    assert_eq!(graph.edge_count(), 8);
    assert_eq!("properties".parse(), Ok(LiteralMode::Properties));
    assert!("edges".parse::<LiteralMode>().is_err());
}

#[test]
fn ntriples_nodes_are_named_by_their_label_and_keep_their_iri() {
    let dir = tempfile::tempdir().unwrap();
    let nt = write(
        &dir,
        "org.nt",
        concat!(
            "<http://ex.org/e1> <http://ex.org/reportsTo> <http://ex.org/e2> .\n",
            "<http://ex.org/e1> <http://www.w3.org/2000/01/rdf-schema#label> \"Bob Tanaka\"@en .\n",
            "<http://ex.org/e1> <http://www.w3.org/2000/01/rdf-schema#label> \"Bob\"@de .\n",
            "<http://ex.org/e2> <http://xmlns.com/foaf/0.1/name> \"Ada Quill\" .\n",
            "<http://ex.org/e3> <http://ex.org/reportsTo> <http://ex.org/e2> .\n",
        ),
    );
    for literals in [LiteralMode::Nodes, LiteralMode::Properties] {
        let options = LoadOptions {
            literals,
            ..quiet()
        };
        let (graph, _) = load_graph(&nt, &options).unwrap();
        // Named statements are names, not edges; the unnamed node keeps its IRI.
        assert_eq!(graph.edge_count(), 2, "{literals:?}");
        assert_eq!(graph.node_count(), 3, "{literals:?}");
        let bob = graph.lookup_exact("Bob Tanaka");
        assert_eq!(bob.len(), 1, "the first label names the node");
        assert_eq!(
            graph.node_property_by_name(bob[0], "iri").cloned(),
            Some(Value::String("http://ex.org/e1".into()))
        );
        assert!(graph.lookup_exact("http://ex.org/e1").is_empty());
        assert_eq!(graph.lookup_exact("Ada Quill").len(), 1);
        assert_eq!(graph.lookup_exact("http://ex.org/e3").len(), 1);
    }
}

#[test]
fn a_labelled_ntriples_predicate_labels_its_relation_and_is_no_node() {
    let dir = tempfile::tempdir().unwrap();
    let nt = write(
        &dir,
        "staff.nt",
        concat!(
            "<http://ex.org/e1> <http://ex.org/p7> <http://ex.org/e2> .\n",
            "<http://ex.org/p7> <http://www.w3.org/2000/01/rdf-schema#label> \"manager\"@en .\n",
            "<http://ex.org/p7> <http://www.w3.org/2000/01/rdf-schema#label> \"Chef\"@fr .\n",
            "<http://ex.org/e1> <http://ex.org/worksFor> <http://ex.org/e3> .\n",
        ),
    );
    let (graph, _) = load_graph(&nt, &quiet()).unwrap();
    assert_eq!(graph.relation_label("http://ex.org/p7"), Some("manager"));
    assert_eq!(graph.relation_label("http://ex.org/worksFor"), None);
    assert_eq!(
        graph.relation_labels(),
        [("http://ex.org/p7".to_owned(), "manager".to_owned())]
    );
    // The predicate is no node: "manager" names nothing a question could link.
    assert!(graph.lookup_exact("manager").is_empty());
    assert!(graph.lookup_exact("http://ex.org/p7").is_empty());
    assert_eq!(graph.node_count(), 3);
    // A snapshot keeps the label.
    let snapshot = dir.path().join("staff.kgs");
    crate::embedded::snapshot::save(&graph, &snapshot).unwrap();
    let reloaded = crate::embedded::snapshot::open(&snapshot).unwrap();
    assert_eq!(reloaded.relation_label("http://ex.org/p7"), Some("manager"));
}

#[test]
fn pipe_csv_and_ntriples_are_detected_and_parsed() {
    let dir = tempfile::tempdir().unwrap();
    let pipe = write(
        &dir,
        "kb.txt",
        "Kismet|directed_by|William Dieterle\nKismet|has_genre|Drama|Musical\n",
    );
    assert_eq!(detect_format(&pipe).unwrap(), KgFormat::Pipe);
    let (graph, _) = load_graph(&pipe, &quiet()).unwrap();
    assert_eq!(
        graph.lookup_exact("Drama|Musical").len(),
        1,
        "the tail keeps the rest of the line"
    );

    let csv = write(
        &dir,
        "kb.csv",
        "head,relation,tail\n\"Smith, John\",knows,Jane\nonly,two\n",
    );
    assert_eq!(detect_format(&csv).unwrap(), KgFormat::Csv);
    let (graph, report) = load_graph(&csv, &quiet()).unwrap();
    assert_eq!(graph.edge_count(), 1);
    assert_eq!(graph.lookup_exact("Smith, John").len(), 1);
    assert_eq!(report.bad_line_count, 1);
    assert_eq!(report.bad_lines[0].line, 3);

    let nt = write(
        &dir,
        "kb.nt",
        concat!(
            "<http://ex.org/Heat> <http://ex.org/year> \"1995\"^^<http://www.w3.org/2001/XMLSchema#gYear> .\n",
            "<http://ex.org/Heat> <http://ex.org/title> \"Heat \\\"95\\\"\"@en .\n",
            "_:b1 <http://ex.org/likes> <http://ex.org/Heat> .\n",
            "<http://ex.org/Heat> <http://ex.org/broken> .\n",
        ),
    );
    assert_eq!(detect_format(&nt).unwrap(), KgFormat::NTriples);
    let (graph, report) = load_graph(&nt, &quiet()).unwrap();
    assert_eq!(graph.edge_count(), 3);
    assert_eq!(graph.lookup_exact("1995").len(), 1);
    assert_eq!(graph.lookup_exact("Heat \"95\"").len(), 1);
    assert_eq!(graph.lookup_exact("_:b1").len(), 1);
    assert_eq!(report.bad_line_count, 1);
    assert_eq!(report.bad_lines[0].line, 4);

    let explicit = LoadOptions {
        format: Some(KgFormat::Tsv),
        ..quiet()
    };
    // A forced format is obeyed: read as TSV, no line of the CSV file is a triple.
    let error = load_graph(&csv, &explicit).unwrap_err().to_string();
    assert!(error.contains("no triple could be read"), "{error}");
    assert!(error.contains("tsv"), "{error}");
    assert!("bogus".parse::<KgFormat>().is_err());
}

#[test]
fn a_file_that_is_no_kg_is_refused_and_extra_fields_are_bad_lines() {
    let dir = tempfile::tempdir().unwrap();
    let empty = write(&dir, "empty.tsv", "");
    let error = load_graph(&empty, &quiet()).unwrap_err().to_string();
    assert!(error.contains("it is empty"), "{error}");
    // A questions file: two fields per line.
    let questions = write(
        &dir,
        "dev.tsv",
        "who directed [Heat]\tMichael Mann\nwhat genre is [Heat]\tCrime\nHeat\tdirected_by\tMichael Mann\n",
    );
    let error = load_graph(&questions, &quiet()).unwrap_err().to_string();
    assert!(error.contains("2 of 3 lines are bad"), "{error}");
    assert!(error.contains("dev.tsv:1"), "{error}");
    let tolerant = LoadOptions {
        max_bad_share: 1.0,
        ..quiet()
    };
    let (graph, report) = load_graph(&questions, &tolerant).unwrap();
    assert_eq!((graph.edge_count(), report.bad_line_count), (1, 2));
    // A fourth TSV field is reported, not folded into the tail.
    let four = write(
        &dir,
        "four.tsv",
        "Heat\tdirected_by\tMichael Mann\nHeat\thas_genre\tCrime\t0.9\nHeat\trelease_year\t1995\n",
    );
    let (graph, report) = load_graph(&four, &quiet()).unwrap();
    assert_eq!(graph.edge_count(), 2);
    assert_eq!(report.bad_line_count, 1);
    assert!(
        report.bad_lines[0].reason.contains("found 4 field(s)"),
        "{:?}",
        report.bad_lines
    );
    assert!(graph.lookup_exact("Crime\t0.9").is_empty());
}

#[test]
fn a_header_row_is_told_from_the_triples_under_it_and_said() {
    let dir = tempfile::tempdir().unwrap();
    let org = "Bob,reports_to,Alice\nCarol,reports_to,Alice\nAlice,works_in,Berlin\nBob,works_in,Berlin\nCarol,works_in,Paris\n";
    // Column names no list knows, unlike every row under them.
    let path = write(
        &dir,
        "org.csv",
        &format!("employee,reports to,manager\n{org}"),
    );
    let (graph, report) = load_graph(&path, &quiet()).unwrap();
    assert_eq!(graph.edge_count(), 5, "the header is no edge");
    assert!(graph.lookup_exact("employee").is_empty());
    assert_eq!(report.headers.len(), 1, "{:?}", report.headers);
    assert_eq!(
        report.headers[0].fields,
        ["employee", "reports to", "manager"]
    );
    assert!(
        report.headers[0].to_string().contains("read as a header"),
        "{}",
        report.headers[0]
    );
    // The same in a TSV file, and the usual names even with nothing under them to
    // compare.
    let tsv = write(
        &dir,
        "org.tsv",
        &format!("who\tlink\twhom\n{}", org.replace(',', "\t")),
    );
    let (graph, report) = load_graph(&tsv, &quiet()).unwrap();
    assert_eq!((graph.edge_count(), report.headers.len()), (5, 1));
    let usual = write(
        &dir,
        "one.tsv",
        "head\trelation\ttail\nHeat\tdirected_by\tMichael Mann\n",
    );
    let (graph, report) = load_graph(&usual, &quiet()).unwrap();
    assert_eq!((graph.edge_count(), report.headers.len()), (1, 1));
    // Told there is none, the row is a triple.
    let options = LoadOptions {
        header: HeaderMode::Absent,
        ..quiet()
    };
    let (graph, report) = load_graph(&path, &options).unwrap();
    assert_eq!((graph.edge_count(), report.headers.len()), (6, 0));
    // A first triple whose relation recurs, or whose names recur, stays a triple; so
    // does one with a number in it, and one over rows whose relations do not repeat.
    for first in [
        "Dan,reports_to,Alice\n",
        "Alice,born_in,Berlin\n",
        "Dan,age,41\n",
    ] {
        let path = write(&dir, "kb.csv", &format!("{first}{org}"));
        let (graph, report) = load_graph(&path, &quiet()).unwrap();
        assert_eq!(graph.edge_count(), 6, "{first}");
        assert!(report.headers.is_empty(), "{first}: {:?}", report.headers);
    }
    let path = write(
        &dir,
        "few.csv",
        "Heat,directed_by,Michael Mann\nTop Gun,starred_actors,Tom Cruise\nTop Gun,release_year,1986\n",
    );
    let (graph, report) = load_graph(&path, &quiet()).unwrap();
    assert_eq!((graph.edge_count(), report.headers.len()), (3, 0));
}

#[test]
fn property_csv_mapping_reports_dangling_keys_and_bad_cells() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir,
        "people.csv",
        "id,first,last,age\n1,Ada,Lovelace,36\n2,Alan,Turing,forty\n3,Grace,Hopper,NULL\n",
    );
    write(
        &dir,
        "knows.csv",
        "a,b,since\n1,2,1936\n2,9,1940\n3,NULL,1950\n",
    );
    let mapping = write(
        &dir,
        "kgmesh-mapping.toml",
        r#"
null_values = ["NULL"]
[[nodes]]
label = "Person"
file = "people.csv"
key = "id"
name = "{first} {last}"
types = { age = "int" }
[[relationships]]
type = "KNOWS"
file = "knows.csv"
from = { label = "Person", column = "a" }
to = { label = "Person", column = "b" }
properties = ["since"]
types = { since = "int" }
"#,
    );
    let (graph, report) = load_graph(dir.path(), &quiet()).unwrap();
    assert_eq!(report.format, KgFormat::PropertyCsv);
    assert_eq!(graph.node_count(), 3);
    assert_eq!(graph.edge_count(), 1);
    let ada = graph.lookup_exact("Ada Lovelace")[0];
    assert_eq!(
        graph.node_property_by_name(ada, "age"),
        Some(&Value::Int(36))
    );
    assert_eq!(
        graph.node_property_by_name(ada, "id"),
        Some(&Value::String("1".into()))
    );
    let grace = graph.lookup_exact("Grace Hopper")[0];
    assert_eq!(
        graph.node_property_by_name(grace, "age"),
        None,
        "NULL is a missing value"
    );
    let knows = graph.relation_id("KNOWS").unwrap();
    let edge = graph.out_edges_via(ada, knows).edge_id(0);
    assert_eq!(
        graph.edge_property_by_name(edge, "since"),
        Some(&Value::Int(1936))
    );
    // `forty` is not an int; person 9 does not exist.
    assert_eq!(report.bad_line_count, 2);
    assert!(report
        .bad_lines
        .iter()
        .any(|bad| bad.file.ends_with("people.csv") && bad.line == 3));
    assert!(report
        .bad_lines
        .iter()
        .any(|bad| bad.file.ends_with("knows.csv") && bad.line == 3));

    let broken = write(&dir, "broken.toml", "[[relationships]]\ntype = \"X\"\nfile = \"knows.csv\"\nfrom = { label = \"Nope\", column = \"a\" }\nto = { label = \"Person\", column = \"b\" }\n");
    let options = LoadOptions {
        mapping: Some(broken),
        ..quiet()
    };
    assert!(matches!(
        load_graph(dir.path(), &options),
        Err(StoreError::Corrupt { .. })
    ));
    drop(mapping);
}

#[test]
fn northwind_loads_as_the_neo4j_property_graph() {
    let mapping = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/northwind.toml");
    let options = LoadOptions {
        mapping: Some(mapping),
        ..quiet()
    };
    let (graph, report) =
        load_graph(&kgmesh_testkit::data::northwind_dir().join("csv"), &options).unwrap();
    assert_eq!(report.bad_line_count, 0, "{:?}", report.bad_lines);
    // 176 order rows and 9 supplier rows carry unquoted commas; orders.csv is read four
    // times (Order nodes, PURCHASED, SOLD, SHIPS_VIA), suppliers.csv once.
    assert_eq!(report.repaired_line_count, 176 * 4 + 9);
    let count = |label: &str| graph.nodes_with_label(graph.label_id(label).unwrap()).len();
    // Row counts of the CSV files.
    assert_eq!(count("Product"), 77);
    assert_eq!(count("Order"), 830);
    assert_eq!(count("Customer"), 91);
    assert_eq!(count("Employee"), 9);
    let counts = graph.relation_edge_counts();
    let edges = |relation: &str| counts[graph.relation_id(relation).unwrap().0 as usize];
    assert_eq!(edges("ORDERS"), 2155);
    assert_eq!(edges("PART_OF"), 77);
    assert_eq!(edges("SUPPLIES"), 77);
    assert_eq!(edges("REPORTS_TO"), 8);
    let chai = graph.lookup_exact("Chai")[0];
    assert_eq!(
        graph.node_property_by_name(chai, "unitPrice"),
        Some(&Value::Float(18.0))
    );
    assert_eq!(
        graph.node_property_by_name(chai, "discontinued"),
        Some(&Value::Bool(false))
    );
    assert_eq!(
        graph.node_property_by_name(chai, "productID"),
        Some(&Value::String("1".into()))
    );
    let orders = graph.relation_id("ORDERS").unwrap();
    let first = graph.lookup_exact("10248")[0];
    let line = graph.out_edges_via(first, orders);
    assert_eq!(line.len(), 3);
    let quantities: Vec<&Value> = (0..3)
        .filter_map(|index| graph.edge_property_by_name(line.edge_id(index), "quantity"))
        .collect();
    assert!(quantities.contains(&&Value::Int(12)));
    let hanari = graph.lookup_exact("10250")[0];
    assert_eq!(
        graph.node_property_by_name(hanari, "shipAddress"),
        Some(&Value::String("Rua do Paço, 67".into()))
    );
    let nancy = graph.lookup_normalized("nancy davolio");
    assert_eq!(nancy.len(), 1);
}

#[test]
fn metaqa_kb_loads_every_line() {
    // The slice of the MetaQA KB in the repository: 8,681 lines (`wc -l`), 9 relations.
    let path = kgmesh_testkit::data::metaqa_slice_dir().join("kb.tsv");
    let (graph, report) = load_graph(&path, &quiet()).unwrap();
    assert_eq!(report.lines, 8_681);
    assert_eq!(report.bad_line_count, 0);
    assert_eq!(graph.relation_count(), 9);
    assert!(graph.edge_count() > 8_600);
}

#[test]
fn a_latin1_file_is_said_once_with_its_encoding_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("films.tsv");
    // "Amélie", "Léon", "Café" in Latin-1: one byte 0xE9 each.
    let mut bytes = Vec::new();
    for title in [&b"Am\xe9lie"[..], b"L\xe9on", b"Caf\xe9 Society"] {
        bytes.extend_from_slice(title);
        bytes.extend_from_slice(b"\tin_language\tFrench\n");
    }
    bytes.extend_from_slice(b"Heat\tdirected_by\tMichael Mann\n");
    std::fs::write(&path, &bytes).unwrap();
    let tolerant = LoadOptions {
        max_bad_share: 1.0,
        ..quiet()
    };
    let (graph, report) = load_graph(&path, &tolerant).unwrap();
    assert_eq!(graph.edge_count(), 1);
    assert_eq!(report.bad_line_count, 3);
    // One reason for the three lines, naming the encoding and the conversion.
    assert_eq!(report.bad_lines.len(), 1, "{:?}", report.bad_lines);
    let reason = &report.bad_lines[0].reason;
    assert!(reason.contains("Latin-1"), "{reason}");
    assert!(
        reason.contains("iconv -f windows-1252 -t utf-8"),
        "{reason}"
    );
    assert!(reason.contains("0xE9 after \"Am\""), "{reason}");
    // Refused when most lines are unreadable, with the same reason.
    let error = load_graph(&path, &quiet()).unwrap_err().to_string();
    assert!(error.contains("iconv"), "{error}");
}

#[test]
fn a_table_of_records_is_not_taken_for_a_kg() {
    let dir = tempfile::tempdir().unwrap();
    let questions: String = (0..25)
        .map(|i| format!("q{i}\twhich film number {i} did someone direct?\tFilm {i}\n"))
        .collect();
    let path = write(&dir, "questions.tsv", &questions);
    let error = load_graph(&path, &quiet()).unwrap_err().to_string();
    assert!(error.contains("25 different relations"), "{error}");
    assert!(error.contains("questions file"), "{error}");
    // A small KG with a few relations used many times loads.
    let kg: String = (0..25)
        .map(|i| format!("Film {i}\tdirected_by\tPerson {}\n", i % 4))
        .collect();
    let path = write(&dir, "kg.tsv", &kg);
    assert_eq!(load_graph(&path, &quiet()).unwrap().0.edge_count(), 25);
}

#[test]
fn a_file_of_no_known_format_is_refused_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "notes.txt", "who directed Heat\nwhat is Heat about\n");
    let error = load_graph(&path, &quiet()).unwrap_err();
    assert!(matches!(error, StoreError::Unusable { .. }), "{error:?}");
    let text = error.to_string();
    assert!(!text.contains("invalid query"), "{text}");
    assert!(text.contains("`.txt` names no KG format"), "{text}");
}

#[test]
fn a_mapping_for_a_file_of_triples_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "kg.tsv", "Heat\tdirected_by\tMichael Mann\n");
    let mapping = write(&dir, "m.toml", "");
    let options = LoadOptions {
        mapping: Some(mapping),
        ..quiet()
    };
    let error = load_graph(&path, &options).unwrap_err().to_string();
    assert!(error.contains("not a folder of CSV files"), "{error}");
    assert!(error.contains("Drop --mapping"), "{error}");
}

#[test]
fn every_mistake_of_a_mapping_is_reported_at_once_with_the_nearest_name() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir,
        "people.csv",
        "id,first,last\n1,Ada,Lovelace\n2,Alan,Turing\n",
    );
    write(&dir, "knows.csv", "a,b\n1,2\n");
    let mapping = write(
        &dir,
        "kgmesh-mapping.toml",
        r#"
[[nodes]]
label = "Person"
file = "people.csv"
key = "idd"
name = "{first} {lst}"
[[relationships]]
type = "KNOWS"
file = "know.csv"
from = { label = "Person", column = "a" }
to = { label = "Person", column = "b" }
"#,
    );
    let options = LoadOptions {
        mapping: Some(mapping),
        ..quiet()
    };
    let error = load_graph(dir.path(), &options).unwrap_err().to_string();
    assert!(error.contains("3 problems"), "{error}");
    assert!(
        error.contains("`idd`") && error.contains("did you mean `id`?"),
        "{error}"
    );
    assert!(
        error.contains("`lst`") && error.contains("did you mean `last`?"),
        "{error}"
    );
    assert!(
        error.contains("`know.csv`") && error.contains("did you mean `knows.csv`?"),
        "{error}"
    );
    // A label typo is found when the mapping is read, with the nearest label.
    let typo = Mapping::from_toml(
        r#"
[[nodes]]
label = "Person"
file = "people.csv"
key = "id"
name = "first"
[[relationships]]
type = "KNOWS"
file = "knows.csv"
from = { label = "Persn", column = "a" }
to = { label = "Person", column = "b" }
"#,
    )
    .unwrap_err();
    assert!(typo.contains("did you mean `Person`?"), "{typo}");
}
