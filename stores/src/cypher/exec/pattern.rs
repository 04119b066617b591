//! Pattern matching: binds the variables of a MATCH's patterns for one input row,
//! starting each pattern at its most selective node and expanding along it, with
//! openCypher's rule that one relationship is bound at most once per match.

use super::eval::{eval, stored, Env};
use super::value::{equals, Val};
use super::Ctx;
use crate::cypher::ast::{NodePattern, PatternPart, PropertyMap, RelDirection, RelPattern};
use crate::cypher::error::{CypherError, CypherResult, ErrorKind};
use crate::cypher::graph::EdgeRef;
use kgmesh_schemas::graph::Value;

/// Variables a list of patterns introduces beyond `columns`, in order of appearance.
pub fn new_variables(patterns: &[PatternPart], columns: &[String]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut add = |name: &Option<String>| {
        if let Some(name) = name {
            if !columns.contains(name) && !names.contains(name) {
                names.push(name.clone());
            }
        }
    };
    for pattern in patterns {
        add(&pattern.path_variable);
        add(&pattern.start.variable);
        for (rel, node) in &pattern.chain {
            add(&rel.variable);
            add(&node.variable);
        }
    }
    names
}

struct CNode {
    slot: Option<usize>,
    /// `None` when a label does not exist in the graph (nothing can match).
    labels: Option<Vec<u32>>,
    props: Vec<(String, Val)>,
}

struct CRel {
    slot: Option<usize>,
    /// `None`: any type. An empty list: none of the named types exist.
    types: Option<Vec<u32>>,
    direction: RelDirection,
    /// Hops, for a variable-length relationship.
    range: Option<(u32, u32)>,
    props: Vec<(String, Val)>,
}

struct CPart {
    nodes: Vec<CNode>,
    rels: Vec<CRel>,
    path_slot: Option<usize>,
}

/// One pattern part's walk in progress: where it started and the nodes and edges bound
/// along it so far.
struct Walk<'w> {
    ctx: &'w Ctx<'w>,
    part: &'w CPart,
    /// The part's place in the matching order.
    position: usize,
    /// The node the walk started from.
    start: usize,
    path_nodes: Vec<u32>,
    path_rels: Vec<Vec<EdgeRef>>,
}

/// A variable-length relationship of a walk: its hop, the relationship and the node it
/// leads to, the way it is walked and its bounds.
#[derive(Clone, Copy)]
struct VarHop {
    hop: usize,
    rel_index: usize,
    to: usize,
    forward: bool,
    min: u32,
    max: u32,
}

/// The state of one match in progress.
struct State {
    row: Vec<Val>,
    assigned: Vec<bool>,
    used_edges: Vec<u64>,
}

pub struct Matcher<'q> {
    parts: Vec<CPart>,
    order: Vec<usize>,
    _patterns: &'q [PatternPart],
}

fn slot_of(columns: &[String], name: &Option<String>) -> Option<usize> {
    name.as_ref()
        .and_then(|name| columns.iter().position(|column| column == name))
}

fn eval_props(ctx: &Ctx, map: &Option<PropertyMap>, env: &Env) -> CypherResult<Vec<(String, Val)>> {
    match map {
        None => Ok(Vec::new()),
        Some(PropertyMap::Literal(entries)) => entries
            .iter()
            .map(|(key, expr)| Ok((key.clone(), eval(ctx, expr, env)?)))
            .collect(),
        Some(PropertyMap::Parameter(name)) => match ctx.params.get(name) {
            Some(Val::Map(entries)) => Ok(entries.clone()),
            Some(other) => Err(CypherError::runtime(format!(
                "parameter ${name} used as a property map is a {}",
                other.type_name()
            ))),
            None => Err(CypherError::runtime(format!(
                "parameter ${name} is missing"
            ))),
        },
    }
}

impl<'q> Matcher<'q> {
    /// Compiles `patterns` for one input row; `columns` is the output layout (input
    /// columns followed by the new variables).
    pub fn new(
        ctx: &Ctx,
        patterns: &'q [PatternPart],
        columns: &[String],
        env: &Env,
    ) -> CypherResult<Self> {
        let graph = ctx.graph;
        // Matching recurses once per relationship and per pattern: bound both.
        let hops: usize = patterns.iter().map(|pattern| pattern.chain.len() + 1).sum();
        if hops > 64 {
            return Err(CypherError::new(
                ErrorKind::Limit,
                "a MATCH may have at most 64 nodes and relationships in all",
            ));
        }
        let mut parts = Vec::new();
        for pattern in patterns {
            if pattern.shortest.is_some() {
                return Err(CypherError::new(
                    ErrorKind::Unsupported,
                    "shortestPath is not supported",
                ));
            }
            let compile_node = |node: &NodePattern| -> CypherResult<CNode> {
                let labels: Option<Vec<u32>> = node
                    .labels
                    .iter()
                    .map(|label| graph.label_id(label))
                    .collect();
                Ok(CNode {
                    slot: slot_of(columns, &node.variable),
                    labels,
                    props: eval_props(ctx, &node.properties, env)?,
                })
            };
            let compile_rel = |rel: &RelPattern| -> CypherResult<CRel> {
                let types = if rel.types.is_empty() {
                    None
                } else {
                    Some(
                        rel.types
                            .iter()
                            .filter_map(|name| graph.rel_type_id(name))
                            .collect(),
                    )
                };
                let range = rel.range.map(|range| {
                    let max_depth = u64::from(ctx.max_depth);
                    let min = range.min.unwrap_or(1).min(max_depth + 1) as u32;
                    let max = range.max.unwrap_or(max_depth).min(max_depth) as u32;
                    (min, max)
                });
                Ok(CRel {
                    slot: slot_of(columns, &rel.variable),
                    types,
                    direction: rel.direction,
                    range,
                    props: eval_props(ctx, &rel.properties, env)?,
                })
            };
            let mut nodes = vec![compile_node(&pattern.start)?];
            let mut rels = Vec::new();
            for (rel, node) in &pattern.chain {
                rels.push(compile_rel(rel)?);
                nodes.push(compile_node(node)?);
            }
            parts.push(CPart {
                nodes,
                rels,
                path_slot: slot_of(columns, &pattern.path_variable),
            });
        }
        let order = (0..parts.len()).collect();
        Ok(Self {
            parts,
            order,
            _patterns: patterns,
        })
    }

    /// Calls `emit` with every complete row; `emit` returns `false` to stop early.
    pub fn run(
        &mut self,
        ctx: &Ctx,
        input: &[Val],
        width: usize,
        emit: &mut dyn FnMut(&[Val]) -> CypherResult<bool>,
    ) -> CypherResult<()> {
        let mut row = input.to_vec();
        row.resize(width, Val::Null);
        let mut assigned = vec![false; width];
        assigned[..input.len()]
            .iter_mut()
            .for_each(|flag| *flag = true);
        self.plan_order(&assigned);
        let mut state = State {
            row,
            assigned,
            used_edges: Vec::new(),
        };
        self.part(ctx, 0, &mut state, emit)?;
        Ok(())
    }

    /// Patterns that share an already bound variable go first, then the cheapest.
    fn plan_order(&mut self, assigned: &[bool]) {
        let mut covered: Vec<bool> = assigned.to_vec();
        let mut remaining: Vec<usize> = (0..self.parts.len()).collect();
        let mut order = Vec::new();
        while !remaining.is_empty() {
            let pick = remaining
                .iter()
                .position(|index| {
                    self.parts[*index]
                        .nodes
                        .iter()
                        .any(|node| node.slot.is_some_and(|slot| covered[slot]))
                })
                .unwrap_or(0);
            let index = remaining.remove(pick);
            for node in &self.parts[index].nodes {
                if let Some(slot) = node.slot {
                    covered[slot] = true;
                }
            }
            order.push(index);
        }
        self.order = order;
    }

    fn part(
        &self,
        ctx: &Ctx,
        position: usize,
        state: &mut State,
        emit: &mut dyn FnMut(&[Val]) -> CypherResult<bool>,
    ) -> CypherResult<bool> {
        let Some(&part_index) = self.order.get(position) else {
            ctx.tick(1)?;
            return emit(&state.row);
        };
        let part = &self.parts[part_index];
        let start = self.start_node(ctx, part, state);
        let candidates: Vec<u32> = self.candidates(ctx, part, start, state);
        let mut walk = Walk {
            ctx,
            part,
            position,
            start,
            path_nodes: vec![0u32; part.nodes.len()],
            path_rels: vec![Vec::new(); part.rels.len()],
        };
        for node in candidates {
            ctx.tick(1)?;
            let Some(undo) = self.bind_node(ctx, &part.nodes[start], node, state)? else {
                continue;
            };
            walk.path_nodes[start] = node;
            let keep_going = self.step(&mut walk, 0, state, emit);
            unbind(state, undo);
            if !keep_going? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn start_node(&self, ctx: &Ctx, part: &CPart, state: &State) -> usize {
        let graph = ctx.graph;
        let cost = |node: &CNode| -> u64 {
            if node.slot.is_some_and(|slot| state.assigned[slot]) {
                return 0;
            }
            let label_cost = match &node.labels {
                None => return 0,
                Some(labels) if labels.is_empty() => graph.node_count() as u64 * 2,
                Some(labels) => labels
                    .iter()
                    .map(|label| graph.nodes_with_label(*label).len() as u64)
                    .min()
                    .unwrap_or(0),
            };
            if node.props.is_empty() {
                label_cost + 1
            } else {
                label_cost / 8 + 1
            }
        };
        (0..part.nodes.len())
            .min_by_key(|index| cost(&part.nodes[*index]))
            .unwrap_or(0)
    }

    fn candidates(&self, ctx: &Ctx, part: &CPart, start: usize, state: &State) -> Vec<u32> {
        let node = &part.nodes[start];
        if let Some(slot) = node.slot {
            if state.assigned[slot] {
                return match state.row[slot] {
                    Val::Node(id) => vec![id],
                    _ => Vec::new(),
                };
            }
        }
        match &node.labels {
            None => Vec::new(),
            Some(labels) if labels.is_empty() => (0..ctx.graph.node_count() as u32).collect(),
            Some(labels) => labels
                .iter()
                .map(|label| ctx.graph.nodes_with_label(*label))
                .min_by_key(|nodes| nodes.len())
                .map(<[u32]>::to_vec)
                .unwrap_or_default(),
        }
    }

    /// Checks `node` against the pattern and binds its variable. `None`: no match;
    /// `Some(slot)`: the slot newly assigned (to undo), if any.
    fn bind_node(
        &self,
        ctx: &Ctx,
        pattern: &CNode,
        node: u32,
        state: &mut State,
    ) -> CypherResult<Option<Option<usize>>> {
        let graph = ctx.graph;
        if let Some(slot) = pattern.slot {
            if state.assigned[slot] && state.row[slot] != Val::Node(node) {
                return Ok(None);
            }
        }
        match &pattern.labels {
            None => return Ok(None),
            Some(labels) => {
                if !labels.iter().all(|label| graph.has_label(node, *label)) {
                    return Ok(None);
                }
            }
        }
        if !props_match(ctx, &pattern.props, |key| graph.node_property(node, key)) {
            return Ok(None);
        }
        Ok(Some(assign(state, pattern.slot, Val::Node(node))))
    }

    fn rel_matches(&self, ctx: &Ctx, rel: &CRel, edge: &EdgeRef) -> bool {
        props_match(ctx, &rel.props, |key| ctx.graph.edge_property(edge, key))
    }

    /// Edges leaving `node` along `rel`, traversed forward (pattern order) or backward,
    /// each with the node at its other end.
    fn expand(
        &self,
        ctx: &Ctx,
        rel: &CRel,
        node: u32,
        forward: bool,
    ) -> CypherResult<Vec<(EdgeRef, u32)>> {
        let mut edges = Vec::new();
        let (out, inc) = match (rel.direction, forward) {
            (RelDirection::Right, true) | (RelDirection::Left, false) => (true, false),
            (RelDirection::Left, true) | (RelDirection::Right, false) => (false, true),
            (RelDirection::Either, _) => (true, true),
        };
        let mut buffer = Vec::new();
        let collect = |outgoing: bool, buffer: &mut Vec<EdgeRef>| match &rel.types {
            None => ctx.graph.edges(node, outgoing, None, buffer),
            Some(types) => {
                for rel_type in types {
                    ctx.graph.edges(node, outgoing, Some(*rel_type), buffer);
                }
            }
        };
        if out {
            collect(true, &mut buffer);
            for edge in buffer.drain(..) {
                edges.push((edge, edge.end));
            }
        }
        if inc {
            collect(false, &mut buffer);
            for edge in buffer.drain(..) {
                // A self-loop followed either way is one match, not two.
                if out && edge.start == edge.end {
                    continue;
                }
                edges.push((edge, edge.start));
            }
        }
        ctx.tick(edges.len() as u64 + 1)?;
        Ok(edges)
    }

    /// Matches hop `hop` of the walk: rightwards from `start` to the end of the pattern,
    /// then leftwards from `start` to its beginning.
    fn step(
        &self,
        walk: &mut Walk,
        hop: usize,
        state: &mut State,
        emit: &mut dyn FnMut(&[Val]) -> CypherResult<bool>,
    ) -> CypherResult<bool> {
        let (ctx, part, start) = (walk.ctx, walk.part, walk.start);
        let rel_count = part.rels.len();
        let right_hops = rel_count - start;
        if hop == rel_count {
            let undo = match part.path_slot {
                Some(slot) => {
                    let path = build_path(&walk.path_nodes, &walk.path_rels);
                    assign(state, Some(slot), path)
                }
                None => None,
            };
            let result = self.part(ctx, walk.position + 1, state, emit);
            unbind(state, undo);
            return result;
        }
        let (rel_index, from, to, forward) = if hop < right_hops {
            let rel_index = start + hop;
            (rel_index, rel_index, rel_index + 1, true)
        } else {
            let rel_index = start - 1 - (hop - right_hops);
            (rel_index, rel_index + 1, rel_index, false)
        };
        let rel = &part.rels[rel_index];
        if rel.types.as_ref().is_some_and(|types| types.is_empty()) {
            return Ok(true);
        }
        let current = walk.path_nodes[from];
        let target = &part.nodes[to];
        match rel.range {
            None => {
                for (edge, other) in self.expand(ctx, rel, current, forward)? {
                    if state.used_edges.contains(&edge.id) || !self.rel_matches(ctx, rel, &edge) {
                        continue;
                    }
                    if let Some(slot) = rel.slot {
                        if state.assigned[slot]
                            && !matches!(&state.row[slot], Val::Rel(bound) if bound.id == edge.id)
                        {
                            continue;
                        }
                    }
                    let Some(node_undo) = self.bind_node(ctx, target, other, state)? else {
                        continue;
                    };
                    let rel_undo = assign(state, rel.slot, Val::Rel(edge));
                    state.used_edges.push(edge.id);
                    walk.path_nodes[to] = other;
                    walk.path_rels[rel_index] = vec![edge];
                    let result = self.step(walk, hop + 1, state, emit);
                    state.used_edges.pop();
                    unbind(state, rel_undo);
                    unbind(state, node_undo);
                    if !result? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Some((min, max)) => {
                let mut trail: Vec<EdgeRef> = Vec::new();
                let var = VarHop {
                    hop,
                    rel_index,
                    to,
                    forward,
                    min,
                    max,
                };
                self.var_length(walk, var, current, &mut trail, state, emit)
            }
        }
    }

    /// Walks a variable-length hop on from `current`, the edges of `trail` behind it:
    /// ends it here when `trail` is long enough, then follows each further edge.
    fn var_length(
        &self,
        walk: &mut Walk,
        var: VarHop,
        current: u32,
        trail: &mut Vec<EdgeRef>,
        state: &mut State,
        emit: &mut dyn FnMut(&[Val]) -> CypherResult<bool>,
    ) -> CypherResult<bool> {
        let depth = trail.len() as u32;
        if depth >= var.min && !self.var_length_end(walk, var, current, trail, state, emit)? {
            return Ok(false);
        }
        if depth >= var.max {
            return Ok(true);
        }
        let (ctx, rel) = (walk.ctx, &walk.part.rels[var.rel_index]);
        for (edge, other) in self.expand(ctx, rel, current, var.forward)? {
            if state.used_edges.contains(&edge.id) || !self.rel_matches(ctx, rel, &edge) {
                continue;
            }
            trail.push(edge);
            state.used_edges.push(edge.id);
            let result = self.var_length(walk, var, other, trail, state, emit);
            state.used_edges.pop();
            trail.pop();
            if !result? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Ends a variable-length hop at `current` after the edges of `trail` and matches the
    /// rest of the walk; `false` to stop early.
    fn var_length_end(
        &self,
        walk: &mut Walk,
        var: VarHop,
        current: u32,
        trail: &[EdgeRef],
        state: &mut State,
        emit: &mut dyn FnMut(&[Val]) -> CypherResult<bool>,
    ) -> CypherResult<bool> {
        let (ctx, part) = (walk.ctx, walk.part);
        let rel = &part.rels[var.rel_index];
        let Some(node_undo) = self.bind_node(ctx, &part.nodes[var.to], current, state)? else {
            return Ok(true);
        };
        let mut in_pattern_order = trail.to_vec();
        if !var.forward {
            in_pattern_order.reverse();
        }
        let list = Val::List(
            in_pattern_order
                .iter()
                .map(|edge| Val::Rel(*edge))
                .collect(),
        );
        let rel_undo = match rel.slot {
            Some(slot) if state.assigned[slot] => {
                if state.row[slot] != list {
                    unbind(state, node_undo);
                    return Ok(true);
                }
                None
            }
            slot => assign(state, slot, list),
        };
        walk.path_nodes[var.to] = current;
        walk.path_rels[var.rel_index] = in_pattern_order;
        let result = self.step(walk, var.hop + 1, state, emit);
        unbind(state, rel_undo);
        unbind(state, node_undo);
        result
    }
}

/// Whether each wanted property equals the one `property` reads (a missing one is null).
fn props_match(
    ctx: &Ctx,
    wanted: &[(String, Val)],
    property: impl Fn(&str) -> Option<Value>,
) -> bool {
    wanted
        .iter()
        .all(|(key, wanted)| equals(&stored(ctx, property(key)), wanted) == Some(true))
}

fn assign(state: &mut State, slot: Option<usize>, value: Val) -> Option<usize> {
    let slot = slot?;
    if state.assigned[slot] {
        return None;
    }
    state.assigned[slot] = true;
    state.row[slot] = value;
    Some(slot)
}

fn unbind(state: &mut State, undo: Option<usize>) {
    if let Some(slot) = undo {
        state.assigned[slot] = false;
        state.row[slot] = Val::Null;
    }
}

fn build_path(nodes: &[u32], rels: &[Vec<EdgeRef>]) -> Val {
    let mut path_nodes = vec![nodes[0]];
    let mut path_edges = Vec::new();
    let mut current = nodes[0];
    for edges in rels {
        for edge in edges {
            current = if edge.start == current {
                edge.end
            } else {
                edge.start
            };
            path_nodes.push(current);
            path_edges.push(*edge);
        }
    }
    Val::Path(path_nodes, path_edges)
}
