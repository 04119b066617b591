//! Where tests, benches and examples find their data.
//!
//! The suite reads only data that lives in the repository: [`northwind_dir`] (the
//! Northwind property graph with its example) and [`metaqa_slice_dir`] (a slice of the
//! MetaQA KB with a few dev questions per hop). Long runs (full evaluations, the chaos
//! long form, benches) read the full benchmark data sets from [`data_dir`]:
//! `KGMESH_DATA_DIR` when set, else the `shared/data` folder beside the workspace; they
//! go through [`long_run_data`], which says what is missing and how to provide it.

use std::path::PathBuf;

/// The workspace root (the parent of this crate's folder).
pub fn workspace_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `examples/northwind`: `csv/` (the graph), `text2cypher.jsonl`, `questions.jsonl`.
pub fn northwind_dir() -> PathBuf {
    workspace_dir().join("examples/northwind")
}

/// `tests/data/metaqa-slice`: `kb.tsv` and `{1,2,3}-hop/dev.txt` (20 questions each),
/// cut from MetaQA by `scripts/metaqa-slice`.
pub fn metaqa_slice_dir() -> PathBuf {
    workspace_dir().join("tests/data/metaqa-slice")
}

/// The folder holding the full `metaqa/`, `pathquestion-2h/`, `northwind/`, … for long
/// runs: `KGMESH_DATA_DIR`, else `<workspace>/../shared/data`. It may not exist.
pub fn data_dir() -> PathBuf {
    match std::env::var_os("KGMESH_DATA_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => default_data_dir(),
    }
}

/// `relative` inside [`data_dir`], e.g. `data_path("metaqa/kb.tsv")`.
pub fn data_path(relative: &str) -> PathBuf {
    data_dir().join(relative)
}

/// `relative` inside [`data_dir`] for a long run, or why it cannot run: the path that
/// was looked for and how to point the run at the data.
pub fn long_run_data(relative: &str) -> Result<PathBuf, String> {
    let path = data_path(relative);
    if path.exists() {
        Ok(path)
    } else {
        Err(format!(
            "this long run needs the full benchmark data and {} does not exist: set \
             KGMESH_DATA_DIR to the folder holding {} (the suite itself needs none of it)",
            path.display(),
            relative.split('/').next().unwrap_or(relative)
        ))
    }
}

/// `<workspace>/../shared/data`.
fn default_data_dir() -> PathBuf {
    workspace_dir().join("../shared/data")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_suites_data_is_in_the_repository() {
        assert!(workspace_dir().join("Cargo.toml").is_file());
        for file in ["csv/products.csv", "csv/orders.csv", "text2cypher.jsonl"] {
            assert!(northwind_dir().join(file).is_file(), "{file}");
        }
        for file in ["kb.tsv", "1-hop/dev.txt", "2-hop/dev.txt", "3-hop/dev.txt"] {
            assert!(metaqa_slice_dir().join(file).is_file(), "{file}");
        }
    }

    #[test]
    fn the_long_run_data_sits_beside_the_workspace_and_says_when_missing() {
        assert_eq!(default_data_dir(), workspace_dir().join("../shared/data"));
        assert!(data_path("metaqa/kb.tsv").ends_with("metaqa/kb.tsv"));
        let missing = long_run_data("no-such-set/kb.tsv").unwrap_err();
        assert!(missing.contains("KGMESH_DATA_DIR"), "{missing}");
        assert!(missing.contains("no-such-set"), "{missing}");
    }
}
