//! Question templates: a question with its entity mentions masked, so that "who directed
//! [Heat]" and "who directed [Alien]" share one template and one plan.

/// The token that stands for a masked entity mention.
pub const ENTITY_SLOT: &str = "<e>";

/// Lowercased word tokens of `text` (letters and digits; everything else separates).
/// `<e>` slots survive as their own token.
pub fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for piece in text.split(ENTITY_SLOT).enumerate().flat_map(|(i, part)| {
        let slot = if i == 0 {
            None
        } else {
            Some(ENTITY_SLOT.to_owned())
        };
        slot.into_iter().chain(words(part))
    }) {
        out.push(piece);
    }
    out
}

/// The toolkit's words ([`crate::scoring::text::words`]), as the scorer reads them.
fn words(text: &str) -> impl Iterator<Item = String> {
    crate::scoring::text::words(text).into_iter()
}

/// The question's template: its tokens joined by single spaces, with every occurrence
/// of a mention (case-insensitive, on token boundaries) replaced by [`ENTITY_SLOT`].
/// Longer mentions are masked first so that a mention inside another does not split it.
pub fn mask(question: &str, mentions: &[&str]) -> String {
    let mut question_tokens: Vec<String> = words(question).collect();
    let mut mention_tokens: Vec<Vec<String>> = mentions
        .iter()
        .map(|m| words(m).collect::<Vec<_>>())
        .filter(|m| !m.is_empty())
        .collect();
    mention_tokens.sort_by_key(|m| std::cmp::Reverse(m.len()));
    for mention in &mention_tokens {
        let mut masked = Vec::with_capacity(question_tokens.len());
        let mut i = 0;
        while i < question_tokens.len() {
            if question_tokens[i..].starts_with(mention) {
                masked.push(ENTITY_SLOT.to_owned());
                i += mention.len();
            } else {
                masked.push(std::mem::take(&mut question_tokens[i]));
                i += 1;
            }
        }
        question_tokens = masked;
    }
    question_tokens.join(" ")
}

/// How many entity slots a template has.
pub fn slots(template: &str) -> usize {
    template.split(' ').filter(|t| *t == ENTITY_SLOT).count()
}

/// The question's entity mentions as the cache links them: the spans the graph's name
/// index finds, each linked to its best candidate but named as the question wrote it
/// (that text is what gets masked). Lookups and pre-warming must agree on this, or a
/// warmed plan would never be rebound to a new question.
///
/// A graph may name entities with plain words ("writer", "film" as tags), and masking
/// those would merge "who is the writer of X" with "who is the director of X" into one
/// template. So, as the KG-Linker links, only the mentions that name the question's
/// entities count ([`entity_mention_mask`]): beside a name written as one, a one-word
/// mention in lower case is a relation cue; a question whose written name is not in the
/// graph has no entity at all.
///
/// [`entity_mention_mask`]: crate::scoring::text::entity_mention_mask
pub fn linked_mentions(
    gazetteer: &kgmesh_models::lexical::gazetteer::Gazetteer,
    question: &str,
) -> Vec<kgmesh_schemas::graph::Entity> {
    entity_mentions(gazetteer, question)
        .into_iter()
        .filter_map(|mention| {
            mention
                .candidates
                .first()
                .map(|c| kgmesh_schemas::graph::Entity {
                    id: c.entity.id,
                    name: mention.text.clone(),
                })
        })
        .collect()
}

/// Further nodes sharing the name of each of the question's mentions (beyond the one
/// [`linked_mentions`] links), at most `per_mention - 1` each: a replayed plan starts
/// from all of them, since the relation path tells which one the question means (the
/// actor, not the tag of the same name).
pub fn namesakes(
    gazetteer: &kgmesh_models::lexical::gazetteer::Gazetteer,
    question: &str,
    per_mention: usize,
) -> Vec<kgmesh_schemas::graph::Entity> {
    entity_mentions(gazetteer, question)
        .into_iter()
        .filter(|mention| mention.exact)
        .flat_map(|mention| {
            mention
                .candidates
                .into_iter()
                .skip(1)
                .take(per_mention.saturating_sub(1))
                .map(|c| c.entity)
        })
        .collect()
}

/// The gazetteer's mentions in `question` that name its entities
/// ([`entity_mention_mask`](crate::scoring::text::entity_mention_mask)).
fn entity_mentions(
    gazetteer: &kgmesh_models::lexical::gazetteer::Gazetteer,
    question: &str,
) -> Vec<kgmesh_models::lexical::gazetteer::Mention> {
    let mentions = gazetteer.find_mentions(question);
    let texts: Vec<&str> = mentions.iter().map(|m| m.text.as_str()).collect();
    let keep = crate::scoring::text::entity_mention_mask(question, &texts);
    mentions
        .into_iter()
        .zip(keep)
        .filter_map(|(mention, keep)| keep.then_some(mention))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gazetteer(names: &[&str]) -> kgmesh_models::lexical::gazetteer::Gazetteer {
        kgmesh_models::lexical::gazetteer::Gazetteer::build(
            names
                .iter()
                .enumerate()
                .map(|(i, name)| (kgmesh_schemas::NodeId(i as u64 + 1), (*name).to_owned())),
        )
    }

    #[test]
    fn a_plain_word_naming_a_tag_is_not_masked_beside_a_written_name() {
        // "writer", "director" and "film" are tags of this graph as well as words.
        let index = gazetteer(&["writer", "director", "film", "Cloverfield"]);
        let writer = "who is the writer of the film Cloverfield";
        let director = "who is the director of the film Cloverfield";
        let names = |q: &str| -> Vec<String> {
            linked_mentions(&index, q)
                .into_iter()
                .map(|e| e.name)
                .collect()
        };
        assert_eq!(names(writer), vec!["Cloverfield".to_owned()]);
        let template = |q: &str| {
            let mentions = names(q);
            let mentions: Vec<&str> = mentions.iter().map(String::as_str).collect();
            mask(q, &mentions)
        };
        assert_eq!(template(writer), "who is the writer of the film <e>");
        assert_ne!(template(writer), template(director));
        // With no name written as one, the plain words are all the question has.
        assert_eq!(names("who is the writer"), vec!["writer".to_owned()]);
    }

    #[test]
    fn questions_that_differ_only_in_entity_share_a_template() {
        let a = mask("Who directed [Heat]?", &["Heat"]);
        let b = mask("who directed [The Dark Knight]", &["the dark knight"]);
        assert_eq!(a, "who directed <e>");
        assert_eq!(a, b);
    }

    #[test]
    fn longer_mentions_win_and_boundaries_hold() {
        let t = mask(
            "films by New York Stories star in New York",
            &["New York", "New York Stories"],
        );
        assert_eq!(t, "films by <e> star in <e>");
        // "heat" inside "heathers" is not a mention.
        assert_eq!(
            mask("what about heathers", &["heat"]),
            "what about heathers"
        );
    }

    #[test]
    fn tokens_keep_slots() {
        assert_eq!(
            tokens("who directed <e> in 1999"),
            vec!["who", "directed", "<e>", "in", "1999"]
        );
    }
}
