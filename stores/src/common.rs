//! What the backends share, so that the embedded stores and the servers answer alike:
//! the error for an invalid query, the depth limits of path searches, the error for an
//! unknown node, the rule that a walk never turns straight back, the end of a
//! breadth-first level and the order of a schema's entries.

use std::collections::HashMap;

use kgmesh_schemas::{
    budget::MAX_DEPTH,
    graph::{LabelSchema, Metapath, RelationSchema},
    NodeId,
};

use crate::{StoreError, StoreResult};

/// A query or argument refused as invalid, with no repair hint.
pub(crate) fn invalid_query(reason: impl Into<String>) -> StoreError {
    StoreError::InvalidQuery {
        reason: reason.into(),
        hint: None,
    }
}

/// Refuses a path search deeper than [`MAX_DEPTH`].
pub(crate) fn check_depth(max_depth: u8) -> StoreResult<()> {
    if max_depth > MAX_DEPTH {
        return Err(StoreError::LimitExceeded {
            detail: format!("depth {max_depth} exceeds the maximum of {MAX_DEPTH}"),
        });
    }
    Ok(())
}

/// Refuses a metapath with more steps than the depth limit `max_depth`.
pub(crate) fn check_metapath(metapath: &Metapath, max_depth: u8) -> StoreResult<()> {
    if metapath.steps.len() > usize::from(max_depth) {
        return Err(StoreError::LimitExceeded {
            detail: format!(
                "metapath of {} steps is longer than the depth limit {max_depth}",
                metapath.steps.len()
            ),
        });
    }
    Ok(())
}

/// The error for a node id the graph does not hold.
pub(crate) fn node_not_found(id: NodeId) -> StoreError {
    StoreError::NotFound {
        what: format!("node {id}"),
    }
}

/// The node a walk from `start` along `steps` last came from: none before the first
/// step, `start` after it, else the node the step before the last reached (`node` reads
/// a step's node). A walk never turns straight back to it over the edge just walked.
pub(crate) fn previous_node<S, N: Copy>(
    start: N,
    steps: &[S],
    node: impl Fn(&S) -> N,
) -> Option<N> {
    match steps.len() {
        0 => None,
        1 => Some(start),
        n => Some(node(&steps[n - 2])),
    }
}

/// Ends a level of a breadth-first search that first met the nodes `next`: the targets
/// among them when the search stops here (it reached a target, or met nothing new),
/// `None` when it goes on.
pub(crate) fn level_end<N: Copy>(next: &[N], is_target: impl Fn(&N) -> bool) -> Option<Vec<N>> {
    let reached: Vec<N> = next
        .iter()
        .copied()
        .filter(|node| is_target(node))
        .collect();
    (!reached.is_empty() || next.is_empty()).then_some(reached)
}

/// A relation's endpoint label pairs with their counts, most common first, then by
/// labels.
pub(crate) fn ranked_endpoints(
    counts: HashMap<(String, String), u64>,
) -> Vec<(String, String, u64)> {
    let mut endpoints: Vec<(String, String, u64)> = counts
        .into_iter()
        .map(|((head, tail), count)| (head, tail, count))
        .collect();
    endpoints.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| (&a.0, &a.1).cmp(&(&b.0, &b.1))));
    endpoints
}

/// Puts a schema's labels and relations in order: most common first, then by name.
pub(crate) fn order_schema(labels: &mut [LabelSchema], relations: &mut [RelationSchema]) {
    labels.sort_by(|a, b| b.count.cmp(&a.count).then(a.name.cmp(&b.name)));
    relations.sort_by(|a, b| b.count.cmp(&a.count).then(a.name.cmp(&b.name)));
}
