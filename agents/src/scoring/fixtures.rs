//! A small movie graph on the real embedded store, shared by the retrieval cores' unit
//! tests.

use kgmesh_schemas::graph::Entity;
use kgmesh_stores::{embedded::GraphBuilder, EmbeddedGraph};

pub const MOVIES: &[(&str, &str, &str)] = &[
    ("Heat", "directed_by", "Michael Mann"),
    ("Heat", "starred_actors", "Al Pacino"),
    ("Heat", "starred_actors", "Robert De Niro"),
    ("Heat", "release_year", "1995"),
    ("Heat", "in_language", "English"),
    ("Heat", "has_genre", "Crime"),
    ("Collateral", "directed_by", "Michael Mann"),
    ("Collateral", "starred_actors", "Tom Cruise"),
    ("Collateral", "in_language", "English"),
    ("Collateral", "in_language", "Spanish"),
    ("Collateral", "release_year", "2004"),
    ("Top Gun", "starred_actors", "Tom Cruise"),
    ("Top Gun", "directed_by", "Tony Scott"),
    ("Top Gun", "release_year", "1986"),
    ("The Godfather", "starred_actors", "Al Pacino"),
    ("The Godfather", "directed_by", "Francis Ford Coppola"),
    ("The Godfather", "has_genre", "Crime"),
];

pub fn graph(triples: &[(&str, &str, &str)]) -> EmbeddedGraph {
    let mut builder = GraphBuilder::new();
    for (head, relation, tail) in triples {
        let head = builder.node(head);
        let tail = builder.node(tail);
        builder.add_edge(head, relation, tail);
    }
    builder.finish()
}

pub fn movies() -> EmbeddedGraph {
    graph(MOVIES)
}

pub fn entity(graph: &EmbeddedGraph, name: &str) -> Entity {
    let nodes = graph.lookup_exact(name);
    assert_eq!(nodes.len(), 1, "fixture node {name:?}");
    graph.entity(nodes[0])
}

/// Embeds "types" and "genre" alike and every other word apart (one-hot by a hash).
pub struct TypesMeanGenre;

#[async_trait::async_trait]
impl kgmesh_models::Embedder for TypesMeanGenre {
    fn name(&self) -> &str {
        "types-mean-genre"
    }

    fn dim(&self) -> usize {
        1024
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, kgmesh_models::EmbedError> {
        Ok(texts
            .iter()
            .map(|text| {
                let mut vector = vec![0.0; 1024];
                let slot = match text.as_str() {
                    "types" | "genre" => 0,
                    other => {
                        let hash = other.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
                        });
                        1 + (hash % 1023) as usize
                    }
                };
                vector[slot] = 1.0;
                vector
            })
            .collect())
    }
}

/// Embeds "films" halfway between "genre" and "actors" (cosine 0.71 to each) and every
/// other word apart: a class word as close to two relations as to either.
pub struct FilmsNearGenreAndActors;

#[async_trait::async_trait]
impl kgmesh_models::Embedder for FilmsNearGenreAndActors {
    fn name(&self) -> &str {
        "films-near-genre-and-actors"
    }

    fn dim(&self) -> usize {
        1024
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, kgmesh_models::EmbedError> {
        Ok(texts
            .iter()
            .map(|text| {
                let mut vector = vec![0.0; 1024];
                match text.as_str() {
                    "genre" => vector[0] = 1.0,
                    "actors" => vector[1] = 1.0,
                    "films" => {
                        vector[0] = std::f32::consts::FRAC_1_SQRT_2;
                        vector[1] = std::f32::consts::FRAC_1_SQRT_2;
                    }
                    other => {
                        let hash = other.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
                        });
                        vector[2 + (hash % 1022) as usize] = 1.0;
                    }
                }
                vector
            })
            .collect())
    }
}
