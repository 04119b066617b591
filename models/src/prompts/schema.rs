//! The graph's schema as a model reads it, sampled and cut to a token budget.
//!
//! Relations come most frequent first, each with its endpoint labels and one example
//! triple. When the budget runs out the remaining relations are still listed by name
//! (a model cannot use a relation it never saw), and when even the names do not fit the
//! text says how many were left out.

use kgmesh_schemas::graph::GraphSchema;

use super::{quote, quoted_list};
use crate::tokens::estimate_tokens;

/// Schema text within roughly `budget_tokens` tokens.
pub fn schema_text(schema: &GraphSchema, budget_tokens: usize) -> String {
    let budget = budget_tokens as u64;
    let mut out = format!(
        "The graph has {} nodes and {} edges.\n",
        schema.node_count, schema.edge_count
    );

    let mut labels: Vec<_> = schema.labels.iter().collect();
    labels.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
    if !labels.is_empty() {
        out.push_str("Node labels:");
        for label in labels {
            let mut piece = format!(" {} ({})", quote(&label.name), label.count);
            if !label.property_keys.is_empty() {
                let keys = quoted_list(label.property_keys.iter().take(8), ", ");
                piece.push_str(&format!(" {{{keys}}}"));
            }
            if estimate_tokens(&out) + estimate_tokens(&piece) > budget / 4 {
                out.push_str(" …");
                break;
            }
            out.push_str(&piece);
            out.push(';');
        }
        out.push('\n');
    }

    let mut relations: Vec<_> = schema.relations.iter().collect();
    relations.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
    out.push_str("Relations (head label -> tail label, edge count, example):\n");
    let mut detailed = 0;
    for relation in &relations {
        let mut line = format!("- {}", quote(&relation.name));
        if let Some((head, tail, _)) = relation.endpoints.first() {
            line.push_str(&format!(": ({}) -> ({})", quote(head), quote(tail)));
        }
        line.push_str(&format!(", {} edges", relation.count));
        if let Some(example) = relation.examples.first() {
            line.push_str(&format!(", e.g. {}", quote(example)));
        }
        line.push('\n');
        // Keep room for listing the rest by name.
        let rest_names: u64 = relations[detailed + 1..]
            .iter()
            .map(|r| estimate_tokens(&r.name) + 1)
            .sum();
        if estimate_tokens(&out) + estimate_tokens(&line) + rest_names.min(budget / 3) > budget {
            break;
        }
        out.push_str(&line);
        detailed += 1;
    }
    let remaining = &relations[detailed..];
    if !remaining.is_empty() {
        let mut names = String::from("More relations: ");
        let mut listed = 0;
        for relation in remaining {
            let piece = format!("{}, ", quote(&relation.name));
            if estimate_tokens(&out) + estimate_tokens(&names) + estimate_tokens(&piece) + 8
                > budget
            {
                break;
            }
            names.push_str(&piece);
            listed += 1;
        }
        if listed > 0 {
            out.push_str(names.trim_end_matches([',', ' ']));
            out.push('\n');
        }
        if listed < remaining.len() {
            out.push_str(&format!(
                "({} more relations not shown)\n",
                remaining.len() - listed
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use kgmesh_schemas::graph::{LabelSchema, RelationSchema};

    fn schema(relations: usize) -> GraphSchema {
        GraphSchema {
            labels: vec![LabelSchema {
                name: "Movie".into(),
                count: 10,
                property_keys: vec!["name".into()],
            }],
            relations: (0..relations)
                .map(|i| RelationSchema {
                    name: format!("relation_{i}"),
                    count: 1000 - i as u64,
                    endpoints: vec![("Movie".into(), "Person".into(), 5)],
                    examples: vec![format!("Heat -relation_{i}-> Someone")],
                })
                .collect(),
            relationship_property_keys: vec![],
            node_count: 100,
            edge_count: 1000,
        }
    }

    #[test]
    fn small_schemas_are_shown_whole() {
        let text = schema_text(&schema(3), 1000);
        assert!(text.contains(
            "- relation_0: (Movie) -> (Person), 1000 edges, e.g. Heat -relation_0-> Someone"
        ));
        assert!(text.contains("- relation_2"));
        assert!(!text.contains("More relations"));
    }

    #[test]
    fn large_schemas_fit_the_budget_and_say_what_was_cut() {
        for budget in [50, 200, 800] {
            let text = schema_text(&schema(500), budget);
            assert!(
                estimate_tokens(&text) <= budget as u64 + 40,
                "budget {budget}: {} tokens",
                estimate_tokens(&text)
            );
            assert!(text.contains("more relations not shown"), "{text}");
            // The most frequent relation always comes first.
            assert!(text.contains("relation_0"));
        }
    }
}
