//! Where the benchmark data sets (MetaQA, PathQuestion, WC2014, Northwind) are found by
//! tests, benches and examples: `KGMESH_DATA_DIR` when set, else the `shared/data`
//! folder beside the workspace, located from this crate's source folder rather than a
//! fixed machine path.

use std::path::PathBuf;

/// The folder holding `metaqa/`, `pathquestion-2h/`, `northwind/`, …:
/// `KGMESH_DATA_DIR`, else `<workspace>/../shared/data`.
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

/// `<workspace>/../shared/data`, the workspace being the parent of this crate's folder.
fn default_data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_sits_beside_the_workspace() {
        let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        assert!(
            workspace.join("Cargo.toml").is_file(),
            "{}",
            workspace.display()
        );
        assert_eq!(default_data_dir(), workspace.join("../shared/data"));
        assert!(data_path("metaqa/kb.tsv").ends_with("metaqa/kb.tsv"));
    }
}
