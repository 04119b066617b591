//! Types from the graph itself, for graphs that have no labels: what class a node is.
//!
//! Two sources, both read from the node's own edges:
//! - **Declared classes**: the far end of a *type relation* (`rdf:type`, `is_a`,
//!   `instance of`, `type.object.type`, a property graph's exported `LABEL`, or any
//!   `*_type` relation such as `ship_type`), read by [`is_type_relation`].
//! - **Induced classes**: the relations a node has, by direction (its signature). A
//!   class seldom has a name of its own in a triple graph, but its relations often
//!   carry it (`ship_type`, `home_stadium` of a club, `aviation.airline.hubs`): the
//!   words of a node's relations are the words its class may be called by.

use std::collections::{HashMap, HashSet};

use kgmesh_schemas::{graph::Direction, NodeId};
use kgmesh_stores::{GraphStore, NeighborEdges, NeighborQuery, StoreResult};

use crate::scoring::text::{
    content_stems, names_what_it_reaches, participle_not_by_agent, relation_label, words,
};

/// Whether a relation declares its head's class: its name, read as words, is one of
/// the conventions for "is of type" (`rdf:type` → "type", `is_a`, `instance of`,
/// `type.object.type` → "type", `LABEL`), or ends in "type" (`ship_type`).
pub fn is_type_relation(relation: &str) -> bool {
    let label = relation_label(relation).to_lowercase();
    let words: Vec<&str> = label.split_whitespace().collect();
    matches!(
        words.as_slice(),
        ["type"] | ["is", "a"] | ["isa"] | ["instance", "of"] | ["label"] | ["labels"] | ["class"]
    ) || words.last() == Some(&"type")
}

/// What the edges around some nodes say about each node's class.
#[derive(Debug, Default)]
pub struct NodeTypes {
    /// Node → stems of its declared classes' names.
    declared: HashMap<NodeId, HashSet<String>>,
    /// Node → (relation, followed from the node outwards) of each of its edges.
    signature: HashMap<NodeId, HashSet<(String, bool)>>,
    /// Node → its name, where the edges gave it.
    names: HashMap<NodeId, String>,
    /// Node → its declared classes' names as written.
    declared_names: HashMap<NodeId, HashSet<String>>,
    /// Node → stems of its declared classes' head nouns ([`Self::declared_heads`]).
    declared_heads: HashMap<NodeId, HashSet<String>>,
}

impl NodeTypes {
    /// Reads classes from one expansion around the nodes.
    pub fn from_edges(edges: &NeighborEdges) -> Self {
        let mut types = Self::default();
        for edge in &edges.edges {
            let relation = edges.names.relation_name(edge.relation).unwrap_or_default();
            let head = edges.names.node_name(edge.head).unwrap_or_default();
            let tail = edges.names.node_name(edge.tail).unwrap_or_default();
            types
                .names
                .entry(edge.head)
                .or_insert_with(|| head.to_owned());
            types
                .names
                .entry(edge.tail)
                .or_insert_with(|| tail.to_owned());
            if is_type_relation(relation) {
                types
                    .declared_names
                    .entry(edge.head)
                    .or_default()
                    .insert(tail.to_owned());
                types
                    .declared
                    .entry(edge.head)
                    .or_default()
                    .extend(content_stems(tail));
                // The class word of a `*_type` relation names its subject's class too
                // ("ship type" is had by ships).
                let typed: Vec<String> = content_stems(&relation_label(relation))
                    .into_iter()
                    .filter(|s| s != "type")
                    .collect();
                types
                    .declared
                    .entry(edge.head)
                    .or_default()
                    .extend(typed.iter().cloned());
                let heads = types.declared_heads.entry(edge.head).or_default();
                heads.extend(crate::scoring::text::relation_head_stems(tail));
                heads.extend(typed);
            }
            types
                .signature
                .entry(edge.head)
                .or_default()
                .insert((relation.to_owned(), true));
            types
                .signature
                .entry(edge.tail)
                .or_default()
                .insert((relation.to_owned(), false));
        }
        types
    }

    /// Reads the classes of `nodes` from their edges, in either direction (at most
    /// [`super::TYPE_FANOUT`] per node), in one store call; none for no nodes.
    pub async fn read(store: &dyn GraphStore, nodes: &[NodeId]) -> StoreResult<Self> {
        let mut nodes = nodes.to_vec();
        nodes.sort_unstable();
        nodes.dedup();
        if nodes.is_empty() {
            return Ok(Self::default());
        }
        let query = NeighborQuery {
            direction: Direction::Both,
            relations: None,
            fanout_cap: super::TYPE_FANOUT,
        };
        Ok(Self::from_edges(
            &store.neighbor_edges(&nodes, &query).await?,
        ))
    }

    pub fn name(&self, node: NodeId) -> Option<&str> {
        self.names.get(&node).map(String::as_str)
    }

    /// Stems of the node's declared classes.
    pub fn declared(&self, node: NodeId) -> impl Iterator<Item = &str> {
        self.declared
            .get(&node)
            .into_iter()
            .flatten()
            .map(String::as_str)
    }

    /// Stems of the head nouns of the node's declared classes' names ("research
    /// *group*", "music *genre*", `aviation.*airline*`) and of a `*_type` relation's
    /// class word: what the node is, where [`Self::declared`] also holds what kind of
    /// it ("music").
    pub fn declared_heads(&self, node: NodeId) -> impl Iterator<Item = &str> {
        self.declared_heads
            .get(&node)
            .into_iter()
            .flatten()
            .map(String::as_str)
    }

    /// The relations pointing to the node (walked from their heads to it), type
    /// relations, `except` and those whose names relate their subject to it rather than
    /// say what it is ([`names_what_it_reaches`]: the club a player `plays for`) left
    /// out: what call the node what it is.
    fn pointing<'a>(
        &'a self,
        node: NodeId,
        except: Option<&'a str>,
    ) -> impl Iterator<Item = &'a str> + 'a {
        self.signature
            .get(&node)
            .into_iter()
            .flatten()
            .filter(move |(relation, outward)| {
                !outward
                    && Some(relation.as_str()) != except
                    && !is_type_relation(relation)
                    && names_what_it_reaches(relation)
            })
            .map(|(relation, _)| relation.as_str())
    }

    /// What the node's class may be called: its declared classes' names, else the
    /// labels of its relations but `except` (see [`Self::signature_stems`]).
    pub fn class_texts(&self, node: NodeId, except: Option<&str>) -> Vec<String> {
        if let Some(names) = self.declared_names.get(&node).filter(|n| !n.is_empty()) {
            let mut names: Vec<String> = names.iter().cloned().collect();
            names.sort();
            return names;
        }
        let mut labels: Vec<String> = self.pointing(node, except).map(relation_label).collect();
        labels.sort();
        labels.dedup();
        labels
    }

    /// Stems of what the relations pointing to the node call what they reach
    /// ([`reached_name_stems`] with each relation's `holders`; type relations left out):
    /// `former_club` makes a node a club, `original language of film` a language, not a
    /// film, where the graph's names show that films have languages. A relation named
    /// by a past participle before a preposition other than "by" (`programmed in`,
    /// [`participle_not_by_agent`]) gives its stems only where `participles`, and
    /// then none naming a person: it reaches no doer of its verb (what a course is
    /// `taught in` is no teacher), though it may say another kind (`based in`, a place).
    pub fn reached_name_stems(
        &self,
        node: NodeId,
        holders: &HashMap<String, Vec<String>>,
        participles: bool,
    ) -> HashSet<String> {
        use crate::scoring::answer_type::{stem_type, AnswerType};
        self.pointing(node, None)
            .flat_map(|relation| {
                let participle = participle_not_by_agent(relation);
                let holder = holders.get(relation).map_or(&[][..], Vec::as_slice);
                reached_name_stems(relation, holder)
                    .into_iter()
                    .filter(move |stem| {
                        !participle || (participles && stem_type(stem) != Some(AnswerType::Person))
                    })
            })
            .collect()
    }

    /// Whether the node declares a class at all.
    pub fn has_declared(&self, node: NodeId) -> bool {
        self.declared.get(&node).is_some_and(|d| !d.is_empty())
    }

    /// Stems of the relations that point to the node (a node is what those relations
    /// name: the `home_stadium` of clubs is a stadium, the `in_language` of films a
    /// language), leaving out type relations and `except` (the relation a path reached
    /// it over, which says how it was reached, not what it is). Relations leaving the
    /// node name what it has, not what it is.
    pub fn signature_stems(&self, node: NodeId, except: Option<&str>) -> HashSet<String> {
        self.pointing(node, except)
            .flat_map(|relation| content_stems(&relation_label(relation)))
            .collect()
    }
}

/// The stems of the words of a relation's name that call what it reaches: a compound's
/// head (`home_library` → "library", `aviation.airline.hubs` → "hubs"), else every
/// word, but those the graph's names show to call what has the relation (`holder`, see
/// `kg_linker::core::holder_words`: `original language of film` → "original language",
/// `member of sports team` → "sports team").
pub fn reached_name_stems(relation: &str, holder: &[String]) -> Vec<String> {
    let stems = crate::scoring::text::relation_head_stems(relation);
    stems.into_iter().filter(|s| !holder.contains(s)).collect()
}

/// Whether a node name reads as a number, a year or a date.
pub fn looks_numeric(name: &str) -> bool {
    let tokens = words(name);
    !tokens.is_empty()
        && tokens.iter().any(|w| w.chars().all(|c| c.is_ascii_digit()))
        && tokens
            .iter()
            .filter(|w| w.chars().any(|c| c.is_ascii_digit()))
            .count()
            * 2
            >= tokens.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_relations_in_every_naming_convention() {
        for relation in [
            "http://www.w3.org/1999/02/22-rdf-syntax-ns#type",
            "is_a",
            "instance of",
            "type.object.type",
            "LABEL",
            "ship_type",
        ] {
            assert!(is_type_relation(relation), "{relation}");
        }
        for relation in ["written_by", "typeface", "IN_CATEGORY", "genre", "label_of"] {
            assert!(!is_type_relation(relation), "{relation}");
        }
    }

    #[test]
    fn numbers_years_and_dates_look_numeric_names_do_not() {
        for name in ["1987", "12 May 1994", "3.5"] {
            assert!(looks_numeric(name), "{name}");
        }
        for name in ["Harbor Street Library", "Apollo 13 Crew", "Gate"] {
            assert!(!looks_numeric(name), "{name}");
        }
    }
}
