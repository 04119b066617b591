//! Cache manager (CacheRAG §4.2, §4.4): intent representations and verified plans.

use serde::{Deserialize, Serialize};

use super::Rpc;
use crate::{
    graph::{Entity, Metapath},
    Role,
};

/// Intermediate semantic representation of a question (CacheRAG's ISR).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct Isr {
    pub topic_entities: Vec<String>,
    /// Constraints in the user's words.
    pub constraints: Vec<String>,
    pub domain: String,
    pub aspect: String,
}

/// What retrieved a verified answer, replayable without a model.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct Plan {
    pub entities: Vec<Entity>,
    pub metapaths: Vec<Metapath>,
    pub cypher: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct CacheEntry {
    pub question: String,
    /// The question with its entity mentions masked (what replay matching compares).
    pub template: String,
    pub isr: Isr,
    pub plan: Plan,
    pub answers: Vec<String>,
    /// Times replaying the plan succeeded / failed since it was stored.
    pub hits: u32,
    pub failures: u32,
}

/// A past plan shown to the KG-Linker as an example.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct FewShotExample {
    pub question: String,
    pub plan: Plan,
    pub answers: Vec<String>,
    pub similarity: f32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct CacheLookup {
    pub question: String,
    /// Entities linked in the question, when the caller already knows them; the cache
    /// masks their mentions so that questions differing only in entity match.
    pub entities: Vec<Entity>,
    /// Examples wanted (CacheRAG's k, default 5).
    pub k: u16,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct CacheLookupReply {
    pub isr: Isr,
    /// MMR-selected examples, most relevant first; empty when nothing is relevant.
    pub examples: Vec<FewShotExample>,
    /// A near-exact match worth replaying before calling a model.
    pub replay: Option<Plan>,
    /// Set when `replay` is the plan of a similar template rather than of the
    /// question's own: the two templates' similarity, in `[0, 1]`.
    #[serde(default)]
    pub replay_similarity: Option<f32>,
    /// What the words of this question meant in past verified plans (the learned
    /// phrase → relation lexicon), for the KG-Linker to compose a plan from.
    pub cues: Vec<RelationCue>,
}

/// One learned association of a question word with a relation step: across the
/// verified plans whose question used `word`, the share (smoothed) whose relation path
/// followed `relation` in this direction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct RelationCue {
    /// The word's stem, as the shared text toolkit stems it.
    pub word: String,
    pub relation: String,
    /// The relation followed tail → head.
    pub inverse: bool,
    /// Confidence in `[0, 1)`.
    pub weight: f32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct CacheStore {
    pub entry: CacheEntry,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct CacheStoreReply {
    pub stored: bool,
}

impl Rpc for CacheLookup {
    const OP: &'static str = "lookup";
    const DEFAULT_ROLE: &'static str = Role::CACHE_MANAGER;
    type Reply = CacheLookupReply;
}

impl Rpc for CacheStore {
    const OP: &'static str = "store";
    const READ_ONLY: bool = false;
    const DEFAULT_ROLE: &'static str = Role::CACHE_MANAGER;
    type Reply = CacheStoreReply;
}

/// What a user said about the answer to `question`: the cache finds the plan of the
/// question's template (masked as lookups mask it) and counts the verdict for or
/// against it, or learns the plan a correction verifies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct CacheFeedback {
    pub question: String,
    pub verdict: Feedback,
    /// Who gave it, for the cache's audit and for counting distinct confirmations.
    pub principal: Principal,
}

/// Who gave a piece of feedback: the name of the API credential it came with (never the
/// credential itself), and whether that credential holds the `admin` scope. Feedback
/// that came with no credential (an API without tokens, or the CLI on a local cache) is
/// [`Principal::anonymous`] or [`Principal::local`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct Principal {
    pub name: String,
    pub admin: bool,
}

impl Principal {
    /// A caller of an API that has no credentials configured.
    pub fn anonymous() -> Self {
        Self {
            name: "anonymous".to_owned(),
            admin: false,
        }
    }

    /// The operator at the command line, acting on a cache they hold the files of.
    pub fn local() -> Self {
        Self {
            name: "local".to_owned(),
            admin: true,
        }
    }
}

/// A user's verdict on an answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub enum Feedback {
    /// The answer was right: the plan counts one more success.
    Correct,
    /// The answer was wrong: the plan counts one more failure, and is dropped once it
    /// has failed more often than it succeeded.
    Incorrect,
    /// The right answers: the graph is searched for a plan that reaches them; a plan
    /// found becomes the template's plan, and a different cached plan counts a failure.
    Answers(Vec<String>),
}

impl Feedback {
    /// The verdict of a request that says `correct` or gives `answers` (exactly one of
    /// them, and at least one non-blank answer); why not otherwise.
    pub fn from_parts(correct: Option<bool>, answers: Option<Vec<String>>) -> Result<Self, String> {
        match (correct, answers) {
            (Some(_), Some(_)) => Err("give either `correct` or `answers`, not both".to_owned()),
            (None, None) => Err(
                "say whether the answer was right (`correct`: true or false) or give the right \
                 `answers`"
                    .to_owned(),
            ),
            (Some(true), None) => Ok(Feedback::Correct),
            (Some(false), None) => Ok(Feedback::Incorrect),
            (None, Some(answers)) => {
                let answers: Vec<String> = answers
                    .into_iter()
                    .map(|a| a.trim().to_owned())
                    .filter(|a| !a.is_empty())
                    .collect();
                if answers.is_empty() {
                    Err("`answers` must hold at least one non-empty answer".to_owned())
                } else {
                    Ok(Feedback::Answers(answers))
                }
            }
        }
    }
}

/// What feedback did to the plan cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum FeedbackOutcome {
    /// The cached plan counted one more success.
    Confirmed,
    /// The cached plan counted one more failure and is kept (it has not failed more
    /// often than it succeeded yet).
    Demoted,
    /// The cached plan failed more often than it succeeded and was removed.
    Dropped,
    /// The plan that reaches the corrected answers is now the template's plan.
    Learned,
    /// No cached plan for the question's template: nothing changed.
    NoPlan,
    /// No plan reaching the corrected answers was found: nothing changed.
    NotVerified,
    /// The verdict is held until enough distinct principals (or an admin) agree: a
    /// conflicting correction of a cached plan, the removal of a plan with verified
    /// successes, or (only an admin) a correction whose plan reads far from the
    /// question. The reply's `confirmations` says how many it has and needs, and why.
    Pending,
    /// The principal sent more feedback than the cache manager accepts per minute:
    /// nothing changed.
    Limited,
}

impl FeedbackOutcome {
    pub const ALL: [FeedbackOutcome; 8] = [
        FeedbackOutcome::Confirmed,
        FeedbackOutcome::Demoted,
        FeedbackOutcome::Dropped,
        FeedbackOutcome::Learned,
        FeedbackOutcome::NoPlan,
        FeedbackOutcome::NotVerified,
        FeedbackOutcome::Pending,
        FeedbackOutcome::Limited,
    ];

    /// A short stable name (the JSON spelling), for reports and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            FeedbackOutcome::Confirmed => "confirmed",
            FeedbackOutcome::Demoted => "demoted",
            FeedbackOutcome::Dropped => "dropped",
            FeedbackOutcome::Learned => "learned",
            FeedbackOutcome::NoPlan => "no_plan",
            FeedbackOutcome::NotVerified => "not_verified",
            FeedbackOutcome::Pending => "pending",
            FeedbackOutcome::Limited => "limited",
        }
    }

    /// Whether the cache's plans changed (a held verdict changes none).
    pub fn changed(self) -> bool {
        !matches!(
            self,
            FeedbackOutcome::NoPlan
                | FeedbackOutcome::NotVerified
                | FeedbackOutcome::Pending
                | FeedbackOutcome::Limited
        )
    }
}

impl std::fmt::Display for FeedbackOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct CacheFeedbackReply {
    pub outcome: FeedbackOutcome,
    /// The cache key of the question's template (`None` when the question has no
    /// entity mention to mask, so no template).
    pub key: Option<String>,
    /// What happened, in words (counts, or why nothing changed).
    pub detail: String,
    /// For a held verdict ([`FeedbackOutcome::Pending`]): the distinct principals who
    /// gave it so far, how many it needs, and why only an admin may apply it if so.
    #[serde(default)]
    pub confirmations: Option<Confirmations>,
}

/// How far a held verdict is from applying.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct Confirmations {
    /// Distinct principals who gave it (the same principal repeating it counts once).
    pub have: u32,
    /// Distinct principals it applies with; an admin principal applies it alone.
    /// `None`: only an admin can apply it (see `flagged`).
    pub need: Option<u32>,
    /// Why only an admin can apply it: the corrected plan reads far from the
    /// question's words (which relations no word of it explains).
    pub flagged: Option<String>,
}

impl Rpc for CacheFeedback {
    const OP: &'static str = "feedback";
    const READ_ONLY: bool = false;
    const DEFAULT_ROLE: &'static str = Role::CACHE_MANAGER;
    type Reply = CacheFeedbackReply;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verdict_is_either_correct_or_answers() {
        assert_eq!(
            Feedback::from_parts(Some(true), None),
            Ok(Feedback::Correct)
        );
        assert_eq!(
            Feedback::from_parts(Some(false), None),
            Ok(Feedback::Incorrect)
        );
        assert_eq!(
            Feedback::from_parts(None, Some(vec![" Michael Mann ".into(), "".into()])),
            Ok(Feedback::Answers(vec!["Michael Mann".into()]))
        );
        assert!(Feedback::from_parts(None, None).is_err());
        assert!(Feedback::from_parts(Some(true), Some(vec!["x".into()])).is_err());
        assert!(Feedback::from_parts(None, Some(vec![" ".into()])).is_err());
    }

    #[test]
    fn outcomes_are_spelled_as_in_json() {
        for outcome in FeedbackOutcome::ALL {
            let json = serde_json::to_string(&outcome).unwrap();
            assert_eq!(json, format!("\"{}\"", outcome.as_str()));
        }
    }
}
