//! The learned phrase → relation lexicon: what the words of past questions meant.
//!
//! Every verified plan in the cache pairs a question (its entity mentions masked) with
//! the relation steps that answered it. Across plans, a word that keeps appearing with
//! one step ("heir" with `children`, "darling" with `spouse`, "acted" with
//! `starred_actors` followed backwards) is evidence that the word expresses that
//! relation, whatever the rest of the question says. The lexicon counts, per content
//! word, the verified plans it appeared in and, per relation step, how many of those
//! followed the step; a word's confidence in a step is that share, shrunk towards 0
//! while the word has been seen only a few times.
//!
//! The lexicon is a function of the cache's verified entries: it is updated when an
//! entry is stored, replaced or removed, so every replica that follows the shared
//! store (file or JetStream KV) holds the same lexicon without storing it separately.
//! Nothing in it knows a data set: words and relations come from the plans alone.

use std::collections::{HashMap, HashSet};

use kgmesh_schemas::{
    graph::{Direction, RelationStep},
    messages::cache::{CacheEntry, Plan, RelationCue},
};

use super::template::ENTITY_SLOT;
use crate::scoring::text::{
    chain_order, content_stems, is_stop_word, relation_stems, stem, stem_similarity, words,
    STRONG_CUE,
};

/// Lexical similarity from which a question word spells a relation's name.
const SPELLED: f32 = 0.8;

/// Pseudo-count of plans added to every word's total: a word seen once with a step gets
/// 1/3, seen four times always with it 2/3. A word seen once is weak evidence: with 1
/// instead of 2, a cache warmed with 100 MetaQA 1-hop dev pairs answered the other half
/// of the dev file below the cold figure (76.4 against 79.8 % Hits@1; with 2, 79.6).
const SMOOTHING: f32 = 2.0;

/// Cues below this confidence are not offered.
const MIN_WEIGHT: f32 = 0.1;

/// At most this many steps offered per question word, most confident first.
const MAX_STEPS_PER_WORD: usize = 8;

/// A relation followed in one direction, as the lexicon counts it.
type StepKey = (String, bool);

#[derive(Debug, Default, Clone)]
struct WordCounts {
    /// Verified plans whose question used the word.
    plans: u32,
    /// Of those, how many followed each step.
    steps: HashMap<StepKey, u32>,
}

impl WordCounts {
    /// One plan less followed `step`.
    fn forget_step(&mut self, step: &StepKey) {
        if let Some(count) = self.steps.get_mut(step) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.steps.remove(step);
            }
        }
    }
}

/// One plan less used `word`; a word no plan uses any more is dropped.
fn forget_plan(counts: &mut HashMap<String, WordCounts>, word: &str) {
    if let Some(word_counts) = counts.get_mut(word) {
        word_counts.plans = word_counts.plans.saturating_sub(1);
        if word_counts.plans == 0 {
            counts.remove(word);
        }
    }
}

/// Counts of question words against the relation steps of verified plans.
#[derive(Debug, Default, Clone)]
pub struct Lexicon {
    words: HashMap<String, WordCounts>,
    plans: u64,
    /// Every word of the templates (question words such as "when" included) against
    /// the last step of their plans, which is what the answer is: the answer types
    /// the words ask for (see [`Self::fits_answer_type`]).
    finals: HashMap<String, WordCounts>,
}

/// Verified plans a word needs before it may rule out an answer type.
const TYPE_MIN_PLANS: u32 = 5;

/// A word whose plans ended in more distinct last steps than this asks for no type
/// ("the", "movies"); one whose plans all ended in a few ("when": `release_year`) does.
const TYPE_MAX_FINALS: usize = 3;

/// Whether an entry's plan is verified enough to learn from (imported from QA pairs,
/// judged complete by a model, or confirmed by feedback) and not failing more often
/// than it worked.
pub fn learnable(entry: &CacheEntry) -> bool {
    entry.hits >= 1 && entry.failures <= entry.hits && !entry.plan.metapaths.is_empty()
}

/// The content stems of a template, without its entity slots.
fn template_words(template: &str) -> Vec<String> {
    content_stems(&template.replace(ENTITY_SLOT, " "))
}

/// The distinct steps of an entry's plan.
fn plan_steps(entry: &CacheEntry) -> Vec<StepKey> {
    let mut seen = HashSet::new();
    entry
        .plan
        .metapaths
        .iter()
        .flat_map(|m| &m.steps)
        .map(step_key)
        .filter(|key| seen.insert(key.clone()))
        .collect()
}

/// Every word of a template (stop words included: "when" and "who" ask for a type),
/// stemmed, without its entity slots.
fn asking_words(template: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    words(&template.replace(ENTITY_SLOT, " "))
        .into_iter()
        .map(|word| stem(&word))
        .filter(|word| seen.insert(word.clone()))
        .collect()
}

/// A relation step as the lexicon counts it.
fn step_key(step: &RelationStep) -> StepKey {
    (step.relation.clone(), step.direction == Direction::In)
}

/// The last step of a plan's first metapath: the relation that reaches the answer.
fn final_step(entry: &CacheEntry) -> Option<StepKey> {
    entry.plan.metapaths.first()?.steps.last().map(step_key)
}

/// Whether a question word (a stem) spells a relation's name ("gender" and `gender`).
fn spells(word: &str, relation: &str) -> bool {
    relation_stems(relation)
        .iter()
        .any(|r| stem_similarity(r, word) >= SPELLED)
}

/// An entry's words, and the steps credited to each (by word position).
type Credits = (Vec<String>, Vec<(usize, StepKey)>);

/// What an entry teaches: its words, and which word is credited with which step. A
/// step whose relation name some word of the question spells ("gender" and
/// `gender`) is explained by that word and credited to it alone, so that "dad" in
/// "the gender of X 's dad" is not taught `gender`; any other step is credited to
/// every word, and the counts over many plans tell which word carries it.
fn credits(entry: &CacheEntry) -> Option<Credits> {
    let steps = plan_steps(entry);
    if steps.is_empty() {
        return None;
    }
    let words = template_words(&entry.template);
    let mut credits = Vec::new();
    for step in steps {
        let spelled: Vec<usize> = (0..words.len())
            .filter(|&w| spells(&words[w], &step.0))
            .collect();
        if spelled.is_empty() {
            credits.extend((0..words.len()).map(|w| (w, step.clone())));
        } else {
            credits.extend(spelled.into_iter().map(|w| (w, step.clone())));
        }
    }
    Some((words, credits))
}

impl Lexicon {
    /// Verified plans learned from.
    pub fn plans(&self) -> u64 {
        self.plans
    }

    /// Distinct words learned.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Learns from a verified entry (its `template` masks the entity mentions).
    pub fn add(&mut self, entry: &CacheEntry) {
        let Some((words, credits)) = credits(entry) else {
            return;
        };
        self.plans += 1;
        for word in &words {
            self.words.entry(word.clone()).or_default().plans += 1;
        }
        if let Some(last) = final_step(entry) {
            for word in asking_words(&entry.template) {
                let counts = self.finals.entry(word).or_default();
                counts.plans += 1;
                *counts.steps.entry(last.clone()).or_default() += 1;
            }
        }
        for (word, step) in credits {
            if let Some(counts) = self.words.get_mut(&words[word]) {
                *counts.steps.entry(step).or_default() += 1;
            }
        }
    }

    /// Forgets an entry learned by [`Self::add`] (replaced, evicted or demoted).
    pub fn remove(&mut self, entry: &CacheEntry) {
        let Some((words, credits)) = credits(entry) else {
            return;
        };
        self.plans = self.plans.saturating_sub(1);
        if let Some(last) = final_step(entry) {
            for word in asking_words(&entry.template) {
                if let Some(counts) = self.finals.get_mut(&word) {
                    counts.forget_step(&last);
                }
                forget_plan(&mut self.finals, &word);
            }
        }
        for (word, step) in credits {
            if let Some(counts) = self.words.get_mut(&words[word]) {
                counts.forget_step(&step);
            }
        }
        for word in &words {
            forget_plan(&mut self.words, word);
        }
    }

    /// Confidence that `word` (a stem) expresses `relation` followed this way.
    pub fn weight(&self, word: &str, relation: &str, inverse: bool) -> f32 {
        self.words.get(word).map_or(0.0, |counts| {
            let count = counts
                .steps
                .get(&(relation.to_owned(), inverse))
                .copied()
                .unwrap_or(0);
            count as f32 / (counts.plans as f32 + SMOOTHING)
        })
    }

    /// Whether a plan fits a question's `template` by what the lexicon learned: its
    /// words account for the plan's relation path ([`Self::explains`]), and its last
    /// step gives the answer type they ask for ([`Self::fits_answer_type`]). A plan of
    /// Cypher only is never taken as fitting.
    pub fn fits(&self, template: &str, plan: &Plan) -> bool {
        let Some(path) = plan.metapaths.first() else {
            return false;
        };
        let steps: Vec<StepKey> = path.steps.iter().map(step_key).collect();
        let Some((relation, inverse)) = steps.last() else {
            return false;
        };
        self.explains(template, &steps) && self.fits_answer_type(template, relation, *inverse)
    }

    /// Whether a plan ending in `relation` (followed backwards when `inverse`) gives
    /// the kind of answer the question of `template` asks for. The types are learned:
    /// a word of the question that came in at least [`TYPE_MIN_PLANS`] verified plans,
    /// all of which ended in at most [`TYPE_MAX_FINALS`] distinct last steps, asks for
    /// one of those ("when" for `release_year`, not `directed_by`); a plan ending
    /// otherwise does not fit. Words that came with many last steps ask for nothing.
    fn fits_answer_type(&self, template: &str, relation: &str, inverse: bool) -> bool {
        let last = (relation.to_owned(), inverse);
        asking_words(template).iter().all(|word| {
            self.finals.get(word).is_none_or(|counts| {
                counts.plans < TYPE_MIN_PLANS
                    || counts.steps.len() > TYPE_MAX_FINALS
                    || counts.steps.contains_key(&last)
            })
        })
    }

    /// Whether the words of `template` account for every step of `steps`: each step
    /// is spelled by a word ("gender" and `gender`) or was learned with one (a cue of
    /// at least [`MIN_WEIGHT`]); no word strongly tied to another step (half or more
    /// of its plans) is left without one; and the words most tied to the steps stand
    /// in the question's chain order ([`chain_order`]: "X 's kid 's mom" is `children`
    /// then `parents`, never the reverse).
    fn explains(&self, template: &str, steps: &[StepKey]) -> bool {
        const SLOT: &str = "kgmeshentityslot";
        let all = words(&template.replace(ENTITY_SLOT, &format!(" {SLOT} ")));
        let order = match all.iter().position(|w| w == SLOT) {
            Some(at) if template.matches(ENTITY_SLOT).count() == 1 => chain_order(&all, at, 1),
            _ => vec![None; all.len()],
        };
        // How strongly word `i` of `all` stands for a step (1 when it spells it).
        let tie = |i: usize, (relation, inverse): &(String, bool)| -> f32 {
            let word = &all[i];
            if word == SLOT || is_stop_word(word) {
                return 0.0;
            }
            let word = stem(word);
            if spells(&word, relation) {
                1.0
            } else {
                self.weight(&word, relation, *inverse)
            }
        };
        let mut previous: Option<u16> = None;
        for step in steps {
            let best = (0..all.len())
                .map(|i| (tie(i, step), i))
                .max_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)));
            let Some((_, at)) = best.filter(|(strength, _)| *strength >= MIN_WEIGHT) else {
                return false;
            };
            if let Some(key) = order[at] {
                if previous.is_some_and(|previous| key < previous) {
                    return false;
                }
                previous = Some(key);
            }
        }
        template_words(template).iter().all(|word| {
            self.words.get(word).is_none_or(|counts| {
                let total = counts.plans as f32 + SMOOTHING;
                counts
                    .steps
                    .iter()
                    .filter(|(_, &count)| count as f32 / total >= STRONG_CUE)
                    .all(|(step, _)| steps.contains(step))
            })
        })
    }

    /// The cues for a question: for each of its content words (entity mentions masked
    /// in `template`), the steps it was learned with, most confident first.
    pub fn cues(&self, template: &str) -> Vec<RelationCue> {
        let mut cues = Vec::new();
        for word in template_words(template) {
            let Some(counts) = self.words.get(&word) else {
                continue;
            };
            let total = counts.plans as f32 + SMOOTHING;
            let mut steps: Vec<(&StepKey, f32)> = counts
                .steps
                .iter()
                .map(|(step, &count)| (step, count as f32 / total))
                .filter(|(_, weight)| *weight >= MIN_WEIGHT)
                .collect();
            steps.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
            cues.extend(steps.into_iter().take(MAX_STEPS_PER_WORD).map(
                |((relation, inverse), weight)| RelationCue {
                    word: word.clone(),
                    relation: relation.clone(),
                    inverse: *inverse,
                    weight,
                },
            ));
        }
        cues
    }
}

#[cfg(test)]
mod tests {
    use kgmesh_schemas::{
        graph::{Metapath, RelationStep},
        messages::cache::{Isr, Plan},
    };

    use super::*;

    fn entry(template: &str, steps: &[(&str, Direction)]) -> CacheEntry {
        CacheEntry {
            question: template.replace(ENTITY_SLOT, "X"),
            template: template.to_owned(),
            isr: Isr::default(),
            plan: Plan {
                entities: Vec::new(),
                metapaths: vec![Metapath {
                    steps: steps
                        .iter()
                        .map(|(relation, direction)| RelationStep {
                            relation: (*relation).to_owned(),
                            direction: *direction,
                        })
                        .collect(),
                }],
                cypher: Vec::new(),
            },
            answers: vec!["a".into()],
            hits: 1,
            failures: 0,
        }
    }

    #[test]
    fn answer_types_are_learned_from_the_last_steps_of_verified_plans() {
        let mut lexicon = Lexicon::default();
        for template in [
            "when was <e> released",
            "when did <e> come out",
            "when was <e> first shown",
            "when did <e> premiere",
            "when was <e> made",
        ] {
            lexicon.add(&entry(template, &[("release_year", Direction::Out)]));
        }
        for (template, relation) in [
            ("who directed <e>", "directed_by"),
            ("who wrote <e>", "written_by"),
            ("who is the director of <e>", "directed_by"),
            ("who made <e>", "directed_by"),
            ("who starred in <e>", "starred_actors"),
            ("who composed <e>", "music_by"),
        ] {
            lexicon.add(&entry(template, &[(relation, Direction::Out)]));
        }
        let when = "when did the films directed by <e> come out";
        // "when" came in five plans, all ending in a release year: it asks for one.
        assert!(lexicon.fits_answer_type(when, "release_year", false));
        assert!(!lexicon.fits_answer_type(when, "directed_by", false));
        // "who" came with four last steps: it rules out none.
        assert!(lexicon.fits_answer_type("who photographed <e>", "shot_by", false));
        // Forgetting the plans forgets the type.
        for template in ["when was <e> released", "when did <e> come out"] {
            lexicon.remove(&entry(template, &[("release_year", Direction::Out)]));
        }
        assert!(lexicon.fits_answer_type(when, "directed_by", false));
    }

    #[test]
    fn a_plan_fits_a_question_whose_words_account_for_its_steps() {
        let mut lexicon = Lexicon::default();
        for template in [
            "who is <e> 's kid",
            "what is the job of <e> 's kid",
            "<e> 's kid is who",
        ] {
            lexicon.add(&entry(template, &[("children", Direction::Out)]));
        }
        for template in [
            "who is <e> 's mom",
            "where was <e> 's mom born",
            "<e> 's mom is who",
        ] {
            lexicon.add(&entry(template, &[("parents", Direction::Out)]));
        }
        let kid = [("children".to_owned(), false)];
        let mom_gender = [("parents".to_owned(), false), ("gender".to_owned(), false)];
        // "kid" was learned with `children`; "gender" spells `gender`.
        assert!(lexicon.explains("what does <e> 's kid like", &kid));
        assert!(lexicon.explains("the gender of <e> 's mom", &mom_gender));
        // A step no word accounts for, or a word asking for a step the plan lacks.
        assert!(!lexicon.explains("the gender of <e> 's kid", &mom_gender));
        assert!(!lexicon.explains("who is <e> 's mom", &kid));
        // The same words in the other order ask for the other path.
        let kid_mom = [
            ("children".to_owned(), false),
            ("parents".to_owned(), false),
        ];
        let mom_kid = [
            ("parents".to_owned(), false),
            ("children".to_owned(), false),
        ];
        assert!(lexicon.explains("who is <e> 's kid 's mom", &kid_mom));
        assert!(!lexicon.explains("who is <e> 's kid 's mom", &mom_kid));
        assert!(lexicon.explains("who is the mom of the kid of <e>", &kid_mom));
        assert!(!lexicon.explains("who is the mom of the kid of <e>", &mom_kid));
    }

    #[test]
    fn a_word_seen_with_one_step_across_plans_gains_confidence_in_it() {
        let mut lexicon = Lexicon::default();
        use Direction::{In, Out};
        lexicon.add(&entry("who is <e> s heir", &[("kid_of", Out)]));
        assert_eq!(lexicon.weight("heir", "kid_of", false), 1.0 / 3.0);
        lexicon.add(&entry(
            "the birthplace of <e> s heir",
            &[("kid_of", Out), ("born_in", Out)],
        ));
        lexicon.add(&entry(
            "<e> s heir s spouse",
            &[("kid_of", Out), ("married_to", In)],
        ));
        // Always with `kid_of`: 3 of 3 plans (+2 smoothing).
        assert_eq!(lexicon.weight("heir", "kid_of", false), 3.0 / 5.0);
        // The other steps came and went with the rest of the question.
        assert_eq!(lexicon.weight("heir", "born_in", false), 1.0 / 5.0);
        // Direction is part of the step.
        assert_eq!(lexicon.weight("heir", "kid_of", true), 0.0);
        assert_eq!(lexicon.weight("spous", "married_to", true), 1.0 / 3.0);
        assert_eq!(lexicon.plans(), 3);

        let cues = lexicon.cues("what is <e> s heir");
        assert_eq!(cues[0].word, "heir");
        assert_eq!(cues[0].relation, "kid_of");
        assert!(!cues[0].inverse);
        assert_eq!(cues[0].weight, 3.0 / 5.0);
        assert!(cues.iter().all(|c| c.word == "heir"));
    }

    #[test]
    fn a_step_the_question_spells_is_not_taught_to_its_other_words() {
        let mut lexicon = Lexicon::default();
        lexicon.add(&entry(
            "the gender of <e> s dad",
            &[("parents", Direction::Out), ("gender", Direction::Out)],
        ));
        assert_eq!(lexicon.weight("dad", "parents", false), 1.0 / 3.0);
        assert_eq!(lexicon.weight("dad", "gender", false), 0.0);
        // (Words are kept as stems: "gender" is "gend".)
        assert_eq!(lexicon.weight("gend", "gender", false), 1.0 / 3.0);
        // Still taught what nothing spells: the counts across plans sort it out.
        assert_eq!(lexicon.weight("gend", "parents", false), 1.0 / 3.0);
    }

    #[test]
    fn removing_an_entry_undoes_what_it_taught() {
        let mut lexicon = Lexicon::default();
        let first = entry("films acted by <e>", &[("stars", Direction::In)]);
        let second = entry("films directed by <e>", &[("directed", Direction::In)]);
        lexicon.add(&first);
        lexicon.add(&second);
        lexicon.remove(&second);
        let mut alone = Lexicon::default();
        alone.add(&first);
        assert_eq!(lexicon.len(), alone.len());
        assert_eq!(lexicon.plans(), 1);
        assert_eq!(
            lexicon.weight("film", "stars", true),
            alone.weight("film", "stars", true)
        );
        assert_eq!(lexicon.weight("direct", "directed", true), 0.0);
        lexicon.remove(&first);
        assert!(lexicon.is_empty());
    }

    #[test]
    fn only_verified_plans_with_relation_paths_teach() {
        let mut rule_judged = entry("who directed <e>", &[("directed_by", Direction::Out)]);
        rule_judged.hits = 0;
        assert!(!learnable(&rule_judged));
        let mut failing = entry("who directed <e>", &[("directed_by", Direction::Out)]);
        failing.failures = 2;
        assert!(!learnable(&failing));
        assert!(learnable(&entry(
            "who directed <e>",
            &[("directed_by", Direction::Out)]
        )));
    }
}
