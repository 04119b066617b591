//! The context a question accumulates: evidence from every retriever and expansion,
//! merged in a stable order and de-duplicated, plus notes about what failed.
//!
//! Evidence keeps its first position (answers cite evidence by index, and the same
//! question must cite the same indices whichever replica answered first); a duplicate
//! only raises the kept item's score.

use std::collections::{HashMap, HashSet};

use kgmesh_schemas::{
    codec,
    graph::{Entity, Value},
    messages::{
        ask::{EvidenceEdge, EvidenceLine},
        context::{Context, Evidence, EvidenceItem},
        summarizer::Answer,
    },
    render::{self, Style},
    ContentType, NodeId,
};

#[derive(Debug, Default)]
pub struct ContextState {
    context: Context,
    index_by_key: HashMap<String, usize>,
}

impl ContextState {
    /// Adds `items` in order; returns how many were new.
    pub fn merge(&mut self, items: Vec<Evidence>) -> usize {
        let mut added = 0;
        for item in items {
            let key = evidence_key(&item.item);
            match self.index_by_key.get(&key) {
                Some(&index) => {
                    let kept = &mut self.context.evidence[index];
                    if item.score > kept.score {
                        kept.score = item.score;
                    }
                }
                None => {
                    self.index_by_key.insert(key, self.context.evidence.len());
                    self.context.evidence.push(item);
                    added += 1;
                }
            }
        }
        added
    }

    pub fn note(&mut self, note: String) {
        if !self.context.notes.contains(&note) {
            self.context.notes.push(note);
        }
    }

    pub fn context(&self) -> &Context {
        &self.context
    }

    /// The context to send in a request that may take `max_bytes` encoded as `codec`:
    /// all of it when it fits; else the best-scored evidence (each line's score
    /// divided by the best of its source, since retrievers score on their own scales)
    /// that fits, in the original order, with a note saying what was cut. The second
    /// value maps each sent line to its index in the whole context (`None`: nothing
    /// was cut), so that a reply citing the sent lines can be read against the whole.
    pub fn to_send(&self, max_bytes: usize, codec: ContentType) -> (Context, Option<Vec<usize>>) {
        let size =
            |context: &Context| codec::encode(codec, context).map_or(usize::MAX, |b| b.len());
        if size(&self.context) <= max_bytes {
            return (self.context.clone(), None);
        }
        let normalized = self.context.normalized_scores();
        let mut ranked: Vec<usize> = (0..self.context.evidence.len()).collect();
        ranked.sort_by(|&a, &b| normalized[b].total_cmp(&normalized[a]).then(a.cmp(&b)));
        let keep = |count: usize| -> (Context, Vec<usize>) {
            let mut kept: Vec<usize> = ranked[..count].to_vec();
            kept.sort_unstable();
            let context = Context {
                evidence: kept
                    .iter()
                    .map(|&i| self.context.evidence[i].clone())
                    .collect(),
                notes: self.context.notes.clone(),
            };
            (context, kept)
        };
        // The most lines that fit (sizes grow with the count).
        let (mut low, mut high) = (0, ranked.len());
        while low < high {
            let middle = (low + high).div_ceil(2);
            if size(&keep(middle).0) <= max_bytes {
                low = middle;
            } else {
                high = middle - 1;
            }
        }
        let (mut context, kept) = keep(low);
        context.notes.push(format!(
            "the context was cut to its {low} best-scored of {} evidence lines to fit a \
             {max_bytes}-byte message",
            self.context.evidence.len()
        ));
        (context, Some(kept))
    }

    pub fn len(&self) -> usize {
        self.context.evidence.len()
    }

    pub fn is_empty(&self) -> bool {
        self.context.evidence.is_empty()
    }

    /// Entities at the edge of the evidence from `from` on: path ends and the
    /// non-topic ends of triples, best-scored first, at most `max`. Falls back to the
    /// topic entities when the evidence reaches nothing new.
    pub fn frontier(&self, from: usize, topic: &[Entity], max: usize) -> Vec<Entity> {
        let topic_ids: HashSet<NodeId> = topic.iter().map(|e| e.id).collect();
        let mut scored: Vec<(f32, usize, Entity)> = Vec::new();
        let mut seen: HashSet<NodeId> = HashSet::new();
        for (position, evidence) in self.context.evidence.iter().enumerate().skip(from) {
            let ends: Vec<&Entity> = match &evidence.item {
                EvidenceItem::Path(path) => vec![path.end()],
                EvidenceItem::Triple(triple) => vec![&triple.head, &triple.tail],
                EvidenceItem::Query { .. } | EvidenceItem::Excerpt(_) => Vec::new(),
            };
            for end in ends {
                if topic_ids.contains(&end.id) || !seen.insert(end.id) {
                    continue;
                }
                scored.push((evidence.score, position, end.clone()));
            }
        }
        if scored.is_empty() {
            return topic.iter().take(max).cloned().collect();
        }
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.into_iter().take(max).map(|(_, _, e)| e).collect()
    }

    /// The evidence as people read it, in context order (answers' indices point here),
    /// each line with the graph edges it stands on when `with_edges`.
    pub fn lines(&self, with_edges: bool) -> Vec<EvidenceLine> {
        self.context
            .evidence
            .iter()
            .map(|evidence| EvidenceLine {
                source: evidence.source.clone(),
                text: verbalize(&evidence.item),
                edges: if with_edges {
                    edges(&evidence.item)
                } else {
                    Vec::new()
                },
            })
            .collect()
    }

    pub fn into_context(self) -> Context {
        self.context
    }
}

/// Makes every answer cite each line people read once: lines that read the same (a
/// triple and the one-hop path over the same edge, found by two retrievers) are one
/// line, cited by the first index that reads so. `explanation`'s "evidence line N"
/// follows (N counts from 1, as the text shows lines).
pub fn cite_each_line_once(
    lines: &[EvidenceLine],
    answers: &mut [Answer],
    explanation: &mut String,
) {
    let mut first: HashMap<&str, u32> = HashMap::new();
    let canonical: Vec<u32> = lines
        .iter()
        .enumerate()
        .map(|(index, line)| *first.entry(line.text.as_str()).or_insert(index as u32))
        .collect();
    let read = |index: u32| canonical.get(index as usize).copied().unwrap_or(index);
    for answer in answers.iter_mut() {
        let mut cited: Vec<u32> = Vec::with_capacity(answer.evidence.len());
        for index in answer.evidence.iter().map(|&i| read(i)) {
            if !cited.contains(&index) {
                cited.push(index);
            }
        }
        answer.evidence = cited;
    }
    *explanation = renumber_lines(explanation, |number| {
        number
            .checked_sub(1)
            .map_or(number, |index| read(index) + 1)
    });
}

/// `text` with the number after each "evidence line " mapped by `map`.
fn renumber_lines(text: &str, map: impl Fn(u32) -> u32) -> String {
    const MARK: &str = "evidence line ";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(MARK) {
        let after = at + MARK.len();
        out.push_str(&rest[..after]);
        rest = &rest[after..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        match rest[..digits].parse::<u32>() {
            Ok(number) => out.push_str(&map(number).to_string()),
            Err(_) => out.push_str(&rest[..digits]),
        }
        rest = &rest[digits..];
    }
    out.push_str(rest);
    out
}

/// The graph edges an evidence item stands on, each as stored (head → tail).
fn edges(item: &EvidenceItem) -> Vec<EvidenceEdge> {
    match item {
        EvidenceItem::Triple(triple) => vec![EvidenceEdge {
            head: triple.head.clone(),
            relation: triple.relation.clone(),
            tail: triple.tail.clone(),
        }],
        EvidenceItem::Path(path) => {
            let mut from = &path.start;
            path.steps
                .iter()
                .map(|step| {
                    let (head, tail) = if step.inverse {
                        (&step.node, from)
                    } else {
                        (from, &step.node)
                    };
                    from = &step.node;
                    EvidenceEdge {
                        head: head.clone(),
                        relation: step.relation.clone(),
                        tail: tail.clone(),
                    }
                })
                .collect()
        }
        EvidenceItem::Query { rows, .. } => query_edges(&rows.rows),
        EvidenceItem::Excerpt(_) => Vec::new(),
    }
}

/// Most edges taken from one query's rows (a graph view cuts further).
const MAX_QUERY_EDGES: usize = 500;

/// The relationships a query's rows hold (as values, inside lists or paths), each
/// with its ends named as the rows' nodes name them (a node the rows do not hold is
/// named by its id). Rows of plain values (`RETURN m.name`) hold none.
fn query_edges(rows: &[Vec<Value>]) -> Vec<EvidenceEdge> {
    fn walk<'v>(
        value: &'v Value,
        nodes: &mut HashMap<NodeId, String>,
        relationships: &mut Vec<&'v kgmesh_schemas::graph::RelationshipValue>,
    ) {
        match value {
            Value::Node(node) => {
                nodes.entry(node.id).or_insert_with(|| value.text());
            }
            Value::Relationship(relationship) => relationships.push(relationship),
            Value::Path(path) => {
                for node in &path.nodes {
                    nodes
                        .entry(node.id)
                        .or_insert_with(|| Value::Node(node.clone()).text());
                }
                relationships.extend(path.relationships.iter());
            }
            Value::List(items) => items.iter().for_each(|v| walk(v, nodes, relationships)),
            Value::Map(entries) => entries
                .iter()
                .for_each(|(_, v)| walk(v, nodes, relationships)),
            _ => {}
        }
    }
    let mut nodes = HashMap::new();
    let mut relationships = Vec::new();
    for value in rows.iter().flatten() {
        walk(value, &mut nodes, &mut relationships);
    }
    let entity = |id: NodeId| Entity {
        id,
        name: nodes
            .get(&id)
            .cloned()
            .unwrap_or_else(|| format!("node {}", id.0)),
    };
    let mut seen = HashSet::new();
    relationships
        .into_iter()
        .filter(|r| seen.insert((r.start, r.rel_type.as_str(), r.end)))
        .take(MAX_QUERY_EDGES)
        .map(|r| EvidenceEdge {
            head: entity(r.start),
            relation: r.rel_type.clone(),
            tail: entity(r.end),
        })
        .collect()
}

/// Identity of an evidence item: graph ids, not names (two nodes may share a name).
fn evidence_key(item: &EvidenceItem) -> String {
    match item {
        EvidenceItem::Triple(triple) => {
            format!(
                "t|{}|{}|{}",
                triple.head.id.0, triple.relation, triple.tail.id.0
            )
        }
        EvidenceItem::Path(path) => {
            let mut key = format!("p|{}", path.start.id.0);
            for step in &path.steps {
                let arrow = if step.inverse { "<" } else { ">" };
                key.push_str(&format!("|{arrow}{}|{}", step.relation, step.node.id.0));
            }
            key
        }
        EvidenceItem::Query { cypher, .. } => format!("q|{cypher}"),
        EvidenceItem::Excerpt(excerpt) => format!("x|{}|{}", excerpt.file, excerpt.id),
    }
}

/// One line of text per evidence item (`h -> r -> t`; an inverted hop reads
/// `a <- r <- b`), each relation as people read it (an IRI by its label or local name):
/// [`Style::SHOWN`].
pub fn verbalize(item: &EvidenceItem) -> String {
    render::line(item, &Style::SHOWN)
}

#[cfg(test)]
mod tests {
    use kgmesh_schemas::graph::{Path, PathStep, Triple};

    use super::*;

    fn entity(id: u64, name: &str) -> Entity {
        Entity {
            id: NodeId(id),
            name: name.to_owned(),
        }
    }

    fn triple(h: u64, r: &str, t: u64, score: f32) -> Evidence {
        Evidence {
            source: "test".into(),
            score,
            item: EvidenceItem::Triple(Triple {
                head: entity(h, &format!("n{h}")),
                relation: r.into(),
                tail: entity(t, &format!("n{t}")),
            }),
        }
    }

    #[test]
    fn duplicates_keep_their_first_place_and_the_best_score() {
        let mut state = ContextState::default();
        assert_eq!(
            state.merge(vec![triple(1, "r", 2, 0.2), triple(1, "r", 3, 0.5)]),
            2
        );
        assert_eq!(state.merge(vec![triple(1, "r", 2, 0.9)]), 0);
        assert_eq!(state.len(), 2);
        assert_eq!(state.context().evidence[0].score, 0.9);
        assert_eq!(state.lines(false)[1].text, "n1 -> r -> n3");
    }

    #[test]
    fn evidence_lines_carry_their_edges_as_stored() {
        let mut state = ContextState::default();
        // Michael Mann <-directed_by- Heat -starred_actors-> Al Pacino
        state.merge(vec![Evidence {
            source: "p".into(),
            score: 1.0,
            item: EvidenceItem::Path(Path {
                start: entity(1, "Michael Mann"),
                steps: vec![
                    PathStep {
                        relation: "directed_by".into(),
                        inverse: true,
                        node: entity(2, "Heat"),
                    },
                    PathStep {
                        relation: "starred_actors".into(),
                        inverse: false,
                        node: entity(3, "Al Pacino"),
                    },
                ],
            }),
        }]);
        state.merge(vec![triple(4, "r", 5, 0.5)]);
        let lines = state.lines(true);
        assert!(state.lines(false).iter().all(|line| line.edges.is_empty()));
        let edges: Vec<(u64, &str, u64)> = lines[0]
            .edges
            .iter()
            .map(|e| (e.head.id.0, e.relation.as_str(), e.tail.id.0))
            .collect();
        assert_eq!(edges, [(2, "directed_by", 1), (2, "starred_actors", 3)]);
        assert_eq!(lines[1].edges.len(), 1);
        assert_eq!(
            (lines[1].edges[0].head.id.0, lines[1].edges[0].tail.id.0),
            (4, 5)
        );
    }

    #[test]
    fn the_frontier_skips_topic_entities_and_prefers_high_scores() {
        let mut state = ContextState::default();
        state.merge(vec![triple(1, "r", 2, 0.2), triple(1, "r", 3, 0.5)]);
        state.merge(vec![Evidence {
            source: "p".into(),
            score: 0.1,
            item: EvidenceItem::Path(Path {
                start: entity(1, "n1"),
                steps: vec![PathStep {
                    relation: "s".into(),
                    inverse: true,
                    node: entity(4, "n4"),
                }],
            }),
        }]);
        let frontier = state.frontier(0, &[entity(1, "n1")], 10);
        let ids: Vec<u64> = frontier.iter().map(|e| e.id.0).collect();
        assert_eq!(ids, vec![3, 2, 4]);
        assert_eq!(state.lines(false)[2].text, "n1 <- s <- n4");
        // Nothing new from position 3 on: the topic entities are the frontier.
        assert_eq!(state.frontier(3, &[entity(1, "n1")], 10)[0].id.0, 1);
    }

    #[test]
    fn lines_that_read_the_same_are_cited_once_by_the_first() {
        let line = |text: &str| EvidenceLine {
            source: "test".into(),
            text: text.into(),
            edges: Vec::new(),
        };
        let lines = [
            line("a -> r -> b"),
            line("c -> r -> d"),
            line("a -> r -> b"),
        ];
        let mut answers = vec![Answer {
            text: "b".into(),
            entity: None,
            score: 1.0,
            evidence: vec![2, 0, 1],
        }];
        let mut explanation = "1 answer, best supported by evidence line 3.".to_owned();
        cite_each_line_once(&lines, &mut answers, &mut explanation);
        assert_eq!(answers[0].evidence, [0, 1]);
        assert_eq!(explanation, "1 answer, best supported by evidence line 1.");
        // A number that names no line is left as written.
        let mut explanation = "evidence line 9 and evidence line x".to_owned();
        cite_each_line_once(&lines, &mut answers, &mut explanation);
        assert_eq!(explanation, "evidence line 9 and evidence line x");
    }

    #[test]
    fn query_rows_give_the_relationships_they_hold() {
        use kgmesh_schemas::graph::{NodeValue, PathValue, RelationshipValue, Rows};
        let node = |id: u64, name: &str| NodeValue {
            id: NodeId(id),
            labels: Vec::new(),
            properties: vec![("name".into(), Value::String(name.into()))],
        };
        let rel = |start: u64, end: u64| RelationshipValue {
            start: NodeId(start),
            end: NodeId(end),
            rel_type: "directed_by".into(),
            properties: Vec::new(),
        };
        let query = |rows: Vec<Vec<Value>>| EvidenceItem::Query {
            cypher: "MATCH …".into(),
            rows: Rows {
                columns: vec!["x".into()],
                rows,
                truncated: false,
            },
            grounded: false,
        };
        let found = edges(&query(vec![
            vec![
                Value::Node(node(1, "Heat")),
                Value::Relationship(rel(1, 2)),
                Value::Node(node(2, "Michael Mann")),
            ],
            // The same relationship again, and one inside a path whose far end the
            // rows never name.
            vec![Value::Relationship(rel(1, 2))],
            vec![Value::Path(PathValue {
                nodes: vec![node(3, "Ronin")],
                relationships: vec![rel(3, 4)],
            })],
        ]));
        let read: Vec<(String, String)> = found
            .iter()
            .map(|e| (e.head.name.clone(), e.tail.name.clone()))
            .collect();
        assert_eq!(
            read,
            [
                ("Heat".to_owned(), "Michael Mann".to_owned()),
                ("Ronin".to_owned(), "node 4".to_owned())
            ]
        );
        // Rows of plain values hold no edges.
        assert!(edges(&query(vec![vec![Value::String("Michael Mann".into())]])).is_empty());
    }
}
