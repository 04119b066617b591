//! Which candidates return a row, asked of a database server in one round trip.
//!
//! GraphRAFT keeps only queries that exist in the database. Running candidates one by
//! one to find them costs a round trip each (up to [`super::EXISTENCE_TRIES`]). Here the
//! best candidate runs in full first, since most often it is the one. If it returns no
//! row and the store is a server ([`CypherRunner::remote`]), one probe asks about the
//! rest at once: each candidate becomes a part of a `UNION ALL` that returns the
//! candidate's number when the candidate has a row with a value, and only those then
//! run in full, best first. GraphRAFT batches one template over many source names with
//! `UNWIND`; kgmesh's candidates differ in shape, not only in values, hence a union of
//! shapes. The database sends back only numbers.
//!
//! The probe evaluates every part, where running in order stops at the first candidate
//! found; so it pays only where round trips cost more than the parts. Northwind, 684
//! questions, the cold choice's p99 (p50 equal within 0.1 ms):
//!
//! | store | in order | probe |
//! |---|---:|---:|
//! | embedded | 2.4 ms | 6.7 ms |
//! | ArcadeDB, loopback | 9.9 ms | 22.2 ms |
//! | ArcadeDB, 1 ms added each way per packet | 121.6 ms | 58.8 ms |
//!
//! Hence the probe on a server only, the in-process engine runs in order. A probe the
//! server refuses or fails leaves the old way: one candidate at a time.

use kgmesh_schemas::graph::{Rows, Value};
use kgmesh_stores::cypher::lexer::{lex, Tok, Token};
use kgmesh_stores::QueryLimits;

use super::{has_rows, Candidate, CypherRunner};

/// The probe's one column: the number of a candidate that returns a row.
const PROBE_COLUMN: &str = "candidate";

/// The probe for `candidates`: one `UNION ALL` part per candidate, each returning the
/// candidate's position in `candidates` when it has a row with some value, with every
/// parameter renamed to `c{position}_{name}`. `None` when a candidate's text does not
/// lex or has no final `RETURN` with named items to rewrite (never for the
/// enumerator's candidates).
pub(super) fn probe(candidates: &[&Candidate]) -> Option<(String, Vec<(String, Value)>)> {
    let mut parts = Vec::with_capacity(candidates.len());
    let mut params = Vec::new();
    for (position, candidate) in candidates.iter().enumerate() {
        let prefix = format!("c{position}_");
        let cypher = renamed_params(&candidate.cypher, &prefix)?;
        parts.push(probe_part(&cypher, position)?);
        params.extend(
            candidate
                .params
                .iter()
                .map(|(name, value)| (format!("{prefix}{name}"), value.clone())),
        );
    }
    (!parts.is_empty()).then(|| (parts.join(" UNION ALL "), params))
}

/// `MATCH … RETURN items [ORDER BY …] [LIMIT k]` as `MATCH … WITH items WHERE some
/// item IS NOT NULL RETURN position AS candidate LIMIT 1`. Ordering and a limit of at
/// least one change nothing about whether a row exists. Read with the Cypher lexer, so
/// names in backticks and string literals are never taken for keywords.
fn probe_part(cypher: &str, position: usize) -> Option<String> {
    let tokens = lex(cypher).ok()?;
    let keyword = |token: &Token, word: &str| matches!(&token.tok, Tok::Ident(w) if w.eq_ignore_ascii_case(word));
    let ret = tokens.iter().rposition(|t| keyword(t, "RETURN"))?;
    let projection = &tokens[ret + 1..];
    let end = projection
        .iter()
        .position(|t| keyword(t, "ORDER") || keyword(t, "LIMIT") || t.tok == Tok::Eof)
        .map_or(cypher.len(), |at| projection[at].span.start);
    let head = cypher[..tokens[ret].span.start].trim_end();
    let items = cypher[tokens[ret].span.end..end].trim();
    // The `AS` names of the items (every item of an enumerated candidate has one).
    let mut present = Vec::new();
    for pair in projection.windows(2) {
        if keyword(&pair[0], "AS") {
            match &pair[1].tok {
                Tok::Ident(alias) => present.push(format!("{alias} IS NOT NULL")),
                _ => return None,
            }
        }
    }
    if present.is_empty() {
        return None;
    }
    Some(format!(
        "{head} WITH {items} WHERE {} RETURN {position} AS {PROBE_COLUMN} LIMIT 1",
        present.join(" OR ")
    ))
}

/// `$name` as `${prefix}name` for every parameter the Cypher lexer finds; `None` when
/// the text does not lex.
fn renamed_params(cypher: &str, prefix: &str) -> Option<String> {
    let tokens = lex(cypher).ok()?;
    let mut out = String::with_capacity(cypher.len() + 16);
    let mut copied = 0;
    for token in &tokens {
        if let Tok::Param(name) = &token.tok {
            out.push_str(&cypher[copied..token.span.start]);
            out.push('$');
            out.push_str(prefix);
            out.push_str(name);
            copied = token.span.end;
        }
    }
    out.push_str(&cypher[copied..]);
    Some(out)
}

/// Runs the candidates of `order` (entries of [`super::GroundedCypher::rescored`]'s
/// shape, best first), at most `tries` of them, until `want` have returned a row: the
/// first in full, then one probe for the rest and those it names in full. Returns
/// those with their rows, and the rows of the first one (`None` when it failed).
pub(super) async fn with_rows<R: CypherRunner + ?Sized>(
    runner: &R,
    ranked: &[(Candidate, f32)],
    order: &[(usize, f32, f32)],
    want: usize,
    tries: usize,
    limits: &QueryLimits,
) -> (Vec<((usize, f32, f32), Rows)>, Option<Rows>) {
    let order = &order[..tries.max(1).min(order.len())];
    let mut found = Vec::with_capacity(want);
    let Some((first, rest)) = order.split_first() else {
        return (found, None);
    };
    let run = |entry: &(usize, f32, f32)| {
        let candidate = &ranked[entry.0].0;
        runner.run(&candidate.cypher, &candidate.params, limits)
    };
    let first_rows = match run(first).await.ok() {
        Some(rows) if has_rows(&rows) => {
            found.push((*first, rows));
            None
        }
        rows => rows,
    };
    if found.len() >= want || rest.is_empty() {
        return (found, first_rows);
    }
    let exist = if runner.remote() {
        existing(runner, ranked, rest, limits).await
    } else {
        None
    };
    for (position, entry) in rest.iter().enumerate() {
        if exist.as_ref().is_some_and(|exist| !exist[position]) {
            continue;
        }
        if let Some(rows) = run(entry).await.ok().filter(has_rows) {
            found.push((*entry, rows));
            if found.len() >= want {
                break;
            }
        }
    }
    (found, first_rows)
}

/// For each of `entries`, whether its candidate returns a row, by one probe; `None`
/// when the probe could not be built or did not run.
async fn existing<R: CypherRunner + ?Sized>(
    runner: &R,
    ranked: &[(Candidate, f32)],
    entries: &[(usize, f32, f32)],
    limits: &QueryLimits,
) -> Option<Vec<bool>> {
    let candidates: Vec<&Candidate> = entries.iter().map(|e| &ranked[e.0].0).collect();
    let (query, params) = probe(&candidates)?;
    let rows = match runner.run(&query, &params, limits).await {
        Ok(rows) => rows,
        Err(error) => {
            tracing::debug!(%error, "grounded Cypher: the existence probe failed; candidates run one by one");
            return None;
        }
    };
    let mut exist = vec![false; entries.len()];
    for row in &rows.rows {
        if let Some(Value::Int(position)) = row.first() {
            if let Some(slot) = usize::try_from(*position)
                .ok()
                .and_then(|p| exist.get_mut(p))
            {
                *slot = true;
            }
        }
    }
    Some(exist)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_part_keeps_the_match_and_drops_order_and_limit() {
        let part = probe_part(
            "MATCH (x:`Supplier`)-[:`SUPPLIES`]->(m) WHERE x.`country` = $c0_v0 RETURN x.`companyName` AS answer, count(*) AS value ORDER BY value DESC LIMIT 1",
            3,
        )
        .unwrap();
        assert_eq!(
            part,
            "MATCH (x:`Supplier`)-[:`SUPPLIES`]->(m) WHERE x.`country` = $c0_v0 WITH x.`companyName` AS answer, count(*) AS value WHERE answer IS NOT NULL OR value IS NOT NULL RETURN 3 AS candidate LIMIT 1"
        );
        let distinct = probe_part("MATCH (x:`A`) RETURN DISTINCT x.`n` AS answer LIMIT 5", 0);
        assert_eq!(
            distinct.as_deref(),
            Some("MATCH (x:`A`) WITH DISTINCT x.`n` AS answer WHERE answer IS NOT NULL RETURN 0 AS candidate LIMIT 1")
        );
    }

    #[test]
    fn keywords_and_dollars_inside_quoted_names_are_left_alone() {
        let cypher =
            "MATCH (x:`a RETURN b`) WHERE x.`$v0 AS q` = $v0 RETURN x.`c ORDER BY d` AS answer";
        assert_eq!(
            renamed_params(cypher, "c1_").as_deref(),
            Some("MATCH (x:`a RETURN b`) WHERE x.`$v0 AS q` = $c1_v0 RETURN x.`c ORDER BY d` AS answer")
        );
        assert_eq!(
            probe_part(cypher, 1).as_deref(),
            Some("MATCH (x:`a RETURN b`) WHERE x.`$v0 AS q` = $v0 WITH x.`c ORDER BY d` AS answer WHERE answer IS NOT NULL RETURN 1 AS candidate LIMIT 1")
        );
        assert_eq!(probe_part("MATCH (x) RETURN x", 0), None);
    }
}
