//! The JSON Schemas in `docs/schemas/` are the wire messages as the Rust types define
//! them: a change to a message that is not written there fails here. Regenerate with
//! `KGMESH_WRITE_SCHEMAS=1 cargo test -p kgmesh --test json_schemas`.

use std::path::PathBuf;

use kgmesh_schemas::json_schema::wire_schemas;

fn folder() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/schemas")
}

#[test]
fn committed_schemas_match_the_wire_types() {
    let schemas = wire_schemas();
    assert_eq!(schemas.len(), 24, "a request and a reply per operation");
    if std::env::var_os("KGMESH_WRITE_SCHEMAS").is_some() {
        std::fs::create_dir_all(folder()).unwrap();
        for (name, schema) in &schemas {
            let text = serde_json::to_string_pretty(schema).unwrap() + "\n";
            std::fs::write(folder().join(name), text).unwrap();
        }
    }
    let mut stale = Vec::new();
    for (name, schema) in &schemas {
        let path = folder().join(name);
        let committed: Option<serde_json::Value> = std::fs::read_to_string(&path)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok());
        if committed.as_ref() != Some(schema) {
            stale.push(name.clone());
        }
    }
    let mut extra: Vec<String> = std::fs::read_dir(folder())
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| name.ends_with(".json"))
                .filter(|name| !schemas.iter().any(|(n, _)| n == name))
                .collect()
        })
        .unwrap_or_default();
    extra.sort();
    assert!(
        stale.is_empty() && extra.is_empty(),
        "docs/schemas/ differs from the wire types: changed or missing {stale:?}, \
         no longer a message {extra:?}; regenerate with KGMESH_WRITE_SCHEMAS=1 cargo test \
         -p kgmesh --test json_schemas, and bump SCHEMA_VERSION if the change is incompatible"
    );
}

#[test]
fn a_schema_describes_what_an_agent_really_receives() {
    // The retrieve request an external retriever gets names its body's fields.
    let schemas = wire_schemas();
    let (_, retrieve) = schemas
        .iter()
        .find(|(name, _)| name == "RetrieveRequest.request.json")
        .expect("the retrieve request's schema");
    let text = retrieve.to_string();
    for field in [
        "meta",
        "body",
        "question",
        "entities",
        "max_evidence",
        "deadline",
    ] {
        assert!(
            text.contains(&format!("\"{field}\"")),
            "{field} missing: {text}"
        );
    }
}
