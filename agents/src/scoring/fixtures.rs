//! A small movie graph on the real embedded store, shared by the retrieval cores' unit
//! tests.

use kgmesh_schemas::graph::{Direction, Entity, Metapath, RelationStep};
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

/// A word embedder for tests: the listed words get fixed vectors in the first
/// `reserved` dimensions; every other word is one-hot (by a hash) in the rest, so it is
/// apart from all others.
pub struct WordTable {
    name: &'static str,
    reserved: usize,
    words: &'static [TableWord],
}

/// Embeds "types" and "genre" alike and every other word apart.
pub const TYPES_MEAN_GENRE: WordTable = WordTable {
    name: "types-mean-genre",
    reserved: 1,
    words: &[
        ("types", &[(0, 1.0)]),
        ("genre", &[(0, 1.0)]),
        ("has genre", &[(0, 1.0)]),
    ],
};

/// Embeds the words of "what kind of movie is X" that ask something of X ("movie" is
/// X's class: "what kind of is") near the profile of a film's `has_genre` path (cosine
/// 0.9) and every other text apart: no single word names the relation, what the path
/// found does.
pub const KIND_OF_MOVIE_MEANS_GENRE: WordTable = WordTable {
    name: "kind-of-movie-means-genre",
    reserved: 2,
    words: &[
        ("what kind of is", &[(0, 1.0)]),
        ("has genre: Crime", &[(0, 0.9), (1, 0.436)]),
    ],
};

/// Embeds "acted in" as near the profile of a film's director path as near the
/// relation `cast member` (cosine 0.61 to each), less near the cast path's profile
/// (0.51), and apart from the relation `director`: by what it found alone, the
/// director's path reads nearest; by relations and profile together, the cast's.
pub const ACTED_NEARER_DIRECTOR_BY_PROFILE: WordTable = WordTable {
    name: "acted-nearer-director-by-profile",
    reserved: 3,
    words: &[
        ("acted in", &[(0, 0.6), (1, 0.6), (2, 0.5)]),
        ("cast member", &[(0, 1.0)]),
        ("director: Iain Softley", &[(1, 1.0)]),
        ("cast member: Angelina Jolie, Jonny Lee Miller", &[(2, 1.0)]),
    ],
};

/// Embeds "films" and "film" halfway between "genre" and "actors" (cosine 0.71 to each)
/// and every other word apart: a class word as close to two relations as to either.
pub const FILMS_NEAR_GENRE_AND_ACTORS: WordTable = WordTable {
    name: "films-near-genre-and-actors",
    reserved: 2,
    words: &[
        ("genre", &[(0, 1.0)]),
        ("has genre", &[(0, 1.0)]),
        ("actors", &[(1, 1.0)]),
        ("starred actors", &[(1, 1.0)]),
        ("films", HALFWAY),
        ("film", HALFWAY),
    ],
};

/// Embeds "movies" nearest to "starred actors" (cosine 0.64) but almost as near to
/// "has genre" and "directed by" (0.54 each): a word of the graph's own domain, near
/// every relation at once.
pub const MOVIES_NEAR_EVERY_RELATION: WordTable = WordTable {
    name: "movies-near-every-relation",
    reserved: 3,
    words: &[
        ("starred actors", &[(0, 1.0)]),
        ("has genre", &[(1, 1.0)]),
        ("directed by", &[(2, 1.0)]),
        ("movies", &[(0, 0.64), (1, 0.543), (2, 0.543)]),
    ],
};

/// The same relations, with "movies" a synonym of "starred actors" alone (cosine 0.8,
/// apart from the others).
pub const MOVIES_MEAN_ACTORS: WordTable = WordTable {
    name: "movies-mean-actors",
    reserved: 3,
    words: &[
        ("starred actors", &[(0, 1.0)]),
        ("has genre", &[(1, 1.0)]),
        ("directed by", &[(2, 1.0)]),
        ("movies", &[(0, 0.8), (3, 0.6)]),
    ],
};

/// Football relations, with "where" at cosine 0.45 from "is in country" and apart from
/// the others, as is "whereabouts" (a content word): below the floor of content words,
/// above that of an asking wh-word.
pub const WHERE_MEANS_COUNTRY: WordTable = WordTable {
    name: "where-means-country",
    reserved: 5,
    words: &[
        ("is in country", &[(0, 1.0)]),
        ("plays for country", &[(1, 1.0)]),
        ("plays in club", &[(2, 1.0)]),
        ("plays position", &[(3, 1.0)]),
        ("where", WHERE),
        ("whereabouts", WHERE),
    ],
};

/// "which football team do players from X play for" at cosine 0.6 from a path to a
/// player's club and 0.5 from one to a player's position (both named alike by
/// "players" and "play"); every other text apart.
pub const TEAM_NEARER_CLUB: WordTable = WordTable {
    name: "team-nearer-club",
    reserved: 3,
    words: &[
        TEAM_QUESTION,
        (TEAM_CLUB_PATH, &[(0, 0.6), (1, 0.8)]),
        TEAM_POSITION_PATH,
    ],
};

/// As [`TEAM_NEARER_CLUB`], with the club's path only 0.51 from the question: nearer,
/// but not clearly.
pub const TEAM_BARELY_NEARER_CLUB: WordTable = WordTable {
    name: "team-barely-nearer-club",
    reserved: 3,
    words: &[
        TEAM_QUESTION,
        (TEAM_CLUB_PATH, &[(0, 0.51), (1, 0.86)]),
        TEAM_POSITION_PATH,
    ],
};

/// The kinds of name ([`crate::summarizer::typing::KIND_DESCRIPTIONS`]) on four axes (a
/// person, an organization, a place, a thing), with names and class names near one each:
/// "Beatrix Nwosu" and "professor" a person, "Customer Care" an organization, "building"
/// a place, "course" a thing.
pub const KINDS_OF_NAMES: WordTable = WordTable {
    name: "kinds-of-names",
    reserved: 4,
    words: &[
        ("a person", &[(0, 1.0)]),
        ("a man", &[(0, 1.0)]),
        ("a woman", &[(0, 1.0)]),
        ("someone's full name", &[(0, 1.0)]),
        ("a company", &[(1, 1.0)]),
        ("an organization", &[(1, 1.0)]),
        ("a business firm", &[(1, 1.0)]),
        ("a team or department", &[(1, 1.0)]),
        ("a place", &[(2, 1.0)]),
        ("a city", &[(2, 1.0)]),
        ("a town", &[(2, 1.0)]),
        ("a region", &[(2, 1.0)]),
        ("a product", &[(3, 1.0)]),
        ("a thing", &[(3, 1.0)]),
        ("a document", &[(3, 1.0)]),
        ("an event", &[(3, 1.0)]),
        ("Beatrix Nwosu", &[(0, 0.9), (1, 0.3), (2, 0.3)]),
        ("Customer Care", &[(0, 0.3), (1, 0.9), (2, 0.3)]),
        ("professor", &[(0, 0.9), (3, 0.3)]),
        ("building", &[(2, 0.9), (3, 0.3)]),
        ("course", &[(3, 0.9), (1, 0.3)]),
    ],
};

/// Reads "original language" near languages' names and "film" near films' titles;
/// "sports team" near clubs' names, "member" near nothing.
pub const LANGUAGES_OF_FILMS: WordTable = WordTable {
    name: "languages-of-films",
    reserved: 3,
    words: &[
        ("original language", &[(0, 1.0)]),
        ("English", &[(0, 0.8), (2, 0.6)]),
        ("French", &[(0, 0.8), (2, 0.6)]),
        ("film", &[(1, 1.0)]),
        ("Heat", &[(1, 0.5), (2, 0.866)]),
        ("Ronin", &[(1, 0.5), (2, 0.866)]),
        ("sports team", &[(0, 0.2), (1, 0.2), (2, 0.959)]),
        ("Real Ortega", &[(2, 1.0)]),
        ("Ana Ruiz", &[(0, 0.8), (1, 0.6)]),
    ],
};

/// Embeds "types" 0.3 from `has genre` (as MiniLM does, under the synonym floor) and
/// every other text apart.
pub const TYPES_NEAR_GENRE: WordTable = WordTable {
    name: "types-near-genre",
    reserved: 2,
    words: &[
        ("types", &[(0, 0.3), (1, 0.954)]),
        ("has genre", &[(0, 1.0)]),
    ],
};

type TableWord = (&'static str, &'static [(usize, f32)]);

const TEAM_QUESTION: TableWord = ("which football team do players from play for", &[(0, 1.0)]);
const TEAM_CLUB_PATH: &str = "plays for country (inverse) -> plays in club";
const TEAM_POSITION_PATH: TableWord = (
    "plays for country (inverse) -> plays position",
    &[(0, 0.5), (2, 0.866)],
);

const WHERE: &[(usize, f32)] = &[(0, 0.45), (4, 0.893)];

const HALFWAY: &[(usize, f32)] = &[
    (0, std::f32::consts::FRAC_1_SQRT_2),
    (1, std::f32::consts::FRAC_1_SQRT_2),
];

const WORD_TABLE_DIM: usize = 1024;

#[async_trait::async_trait]
impl kgmesh_models::Embedder for WordTable {
    fn name(&self) -> &str {
        self.name
    }

    fn dim(&self) -> usize {
        WORD_TABLE_DIM
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, kgmesh_models::EmbedError> {
        Ok(texts
            .iter()
            .map(|text| {
                let mut vector = vec![0.0; WORD_TABLE_DIM];
                match self.words.iter().find(|(word, _)| *word == text) {
                    Some((_, entries)) => {
                        for &(slot, value) in *entries {
                            vector[slot] = value;
                        }
                    }
                    None => {
                        let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
                        });
                        let free = (WORD_TABLE_DIM - self.reserved) as u64;
                        vector[self.reserved + (hash % free) as usize] = 1.0;
                    }
                }
                vector
            })
            .collect())
    }
}

/// A metapath of `(relation, direction)` steps.
pub fn metapath(steps: &[(&str, Direction)]) -> Metapath {
    Metapath {
        steps: steps
            .iter()
            .map(|&(relation, direction)| RelationStep {
                relation: relation.to_owned(),
                direction,
            })
            .collect(),
    }
}
