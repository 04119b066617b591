//! Feedback on an answer (`POST /v1/feedback`): the question, named by the id its reply
//! carried or by its text, and the user's verdict go to the cache manager, which counts
//! the verdict for or against the plan of the question's template or learns the plan a
//! correction verifies (see the cache manager's `feedback` op).

use std::time::Duration;

use kgmesh_schemas::{
    messages::cache::{CacheFeedback, Confirmations, Feedback, FeedbackOutcome, Principal},
    Meta, QuestionId, Role, Rpc,
};
use serde::Serialize;

use crate::{calls::send, Coordinator, CoordinatorError};

/// How feedback names the question it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FeedbackSubject {
    /// The `question_id` of a reply this coordinator gave (among the last
    /// [`crate::CoordinatorConfig::recent_questions`] it answered).
    QuestionId(String),
    /// The question itself: works whichever replica answered it.
    Question(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedbackRequest {
    pub subject: FeedbackSubject,
    pub verdict: Feedback,
    /// Who sent it (the API credential's name and whether it is an admin).
    pub principal: Principal,
}

/// What feedback did to the plan cache.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FeedbackReply {
    /// The id the feedback named, when it named one.
    pub question_id: Option<String>,
    pub question: String,
    pub outcome: FeedbackOutcome,
    /// The cache key of the question's template, when it has one.
    pub key: Option<String>,
    pub detail: String,
    /// For a held verdict (`pending`, `flagged`): the distinct principals who gave it
    /// and how many it needs (`null`: an admin).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirmations: Option<Confirmations>,
}

/// The outcome label of feedback in the metrics: what it did to the plan cache, or why
/// it was refused.
pub(crate) fn outcome_label(result: &Result<FeedbackReply, CoordinatorError>) -> &'static str {
    match result {
        Ok(reply) => reply.outcome.as_str(),
        Err(CoordinatorError::InvalidQuestion(_)) => "invalid",
        Err(CoordinatorError::UnknownQuestion(_)) => "unknown_question",
        Err(_) => "error",
    }
}

impl Coordinator {
    /// Applies a user's verdict on an answer to the plan cache.
    pub async fn feedback(
        &self,
        request: FeedbackRequest,
    ) -> Result<FeedbackReply, CoordinatorError> {
        let result = self.apply_feedback(request).await;
        crate::metrics::record_feedback(outcome_label(&result));
        result
    }

    async fn apply_feedback(
        &self,
        request: FeedbackRequest,
    ) -> Result<FeedbackReply, CoordinatorError> {
        let (question_id, question) = match request.subject {
            FeedbackSubject::QuestionId(id) => {
                let id = id.trim().to_owned();
                if id.is_empty() {
                    return Err(CoordinatorError::InvalidQuestion(
                        "question_id is empty".into(),
                    ));
                }
                let Some(question) = self.recent_questions().get(&id) else {
                    return Err(CoordinatorError::UnknownQuestion(format!(
                        "no question with id {id} among the last {} this server answered; \
                         send the question's text as `question` instead",
                        self.recent_questions().capacity()
                    )));
                };
                (Some(id), question)
            }
            FeedbackSubject::Question(question) => {
                let question = question.trim().to_owned();
                self.validate_question(&question)?;
                (None, question)
            }
        };
        let codec = self
            .require_role(Role::CACHE_MANAGER, CacheFeedback::OP)
            .await?;
        let timeout = self.config().call_timeout;
        let mut budget = self.config().budget;
        budget.deadline = kgmesh_schemas::Deadline::after(timeout);
        // The cache manager's spans and logs join the question's id when there is one.
        let meta_id = question_id
            .as_deref()
            .and_then(|id| uuid::Uuid::parse_str(id).ok())
            .map(QuestionId)
            .unwrap_or_else(QuestionId::new_random);
        let role = Role::well_known(Role::CACHE_MANAGER);
        let body = CacheFeedback {
            question: question.clone(),
            verdict: request.verdict,
            principal: request.principal,
        };
        let (reply, _cost) = send(
            self.bus().as_ref(),
            (&role, codec),
            Meta::new(meta_id, 0, budget),
            body,
            timeout.max(Duration::from_millis(1)),
            self.config().retries,
            None,
        )
        .await
        .map_err(|error| CoordinatorError::RoleFailed {
            role: role.to_string(),
            error: error.to_agent_error(&role.subject(CacheFeedback::OP)),
        })?;
        Ok(FeedbackReply {
            question_id,
            question,
            outcome: reply.outcome,
            key: reply.key,
            detail: reply.detail,
            confirmations: reply.confirmations,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feedback_is_counted_by_outcome() {
        use kgmesh_schemas::messages::cache::FeedbackOutcome;
        let reply = |outcome| {
            Ok(FeedbackReply {
                question_id: None,
                question: "who directed Heat".into(),
                outcome,
                key: None,
                detail: String::new(),
                confirmations: None,
            })
        };
        let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        metrics::with_local_recorder(&recorder, || {
            crate::metrics::record_feedback(outcome_label(&reply(FeedbackOutcome::Dropped)));
            crate::metrics::record_feedback(outcome_label(&reply(FeedbackOutcome::Dropped)));
            crate::metrics::record_feedback(outcome_label(&reply(FeedbackOutcome::NoPlan)));
            crate::metrics::record_feedback(outcome_label(&Err(
                CoordinatorError::UnknownQuestion("x".into()),
            )));
        });
        let text = handle.render();
        for line in [
            "kgmesh_feedback_total{outcome=\"dropped\"} 2",
            "kgmesh_feedback_total{outcome=\"no_plan\"} 1",
            "kgmesh_feedback_total{outcome=\"unknown_question\"} 1",
        ] {
            assert!(text.contains(line), "{line} missing from {text}");
        }
    }
}
