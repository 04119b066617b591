use std::{sync::Arc, time::Duration};

use kgmesh_bus::LocalBus;
use kgmesh_models::LlmError;
use kgmesh_schemas::{
    graph::{Direction, Entity, Path, PathStep},
    messages::{
        context::{Context, Evidence, EvidenceItem},
        judge::{JudgeRequest, Verdict},
    },
    Budget, Meta, NodeId, QuestionId, Role,
};

use super::{core::decide, core::JudgeRule, Judge};
use crate::{
    runtime::{start_role, AgentDeps, CallContext, Client},
    testing::ScriptedModel,
};

fn entity(id: u64, name: &str) -> Entity {
    Entity {
        id: NodeId(id),
        name: name.into(),
    }
}

fn path(start: &Entity, relation: &str, inverse: bool, end: &Entity, score: f32) -> Evidence {
    Evidence {
        source: "path-follower".into(),
        score,
        item: EvidenceItem::Path(Path {
            start: start.clone(),
            steps: vec![PathStep {
                relation: relation.into(),
                inverse,
                node: end.clone(),
            }],
        }),
    }
}

fn request(evidence: Vec<Evidence>, frontier: Vec<Entity>, left: u8) -> JudgeRequest {
    JudgeRequest {
        question: "who directed Heat".into(),
        context: Context {
            evidence,
            notes: Vec::new(),
        },
        frontier,
        depth_expansions_left: left,
    }
}

#[test]
fn a_high_scoring_path_is_complete() {
    let heat = entity(1, "Heat");
    let mann = entity(2, "Michael Mann");
    let reply = decide(
        &request(
            vec![path(&heat, "directed_by", false, &mann, 0.9)],
            vec![mann.clone()],
            3,
        ),
        &JudgeRule::default(),
    );
    assert_eq!(reply.verdict, Verdict::Complete, "{}", reply.reason);
}

#[test]
fn weak_evidence_is_followed_one_relation_further_while_the_budget_allows() {
    let heat = entity(1, "Heat");
    let mann = entity(2, "Michael Mann");
    let weak = vec![
        path(&heat, "written_by", true, &mann, 0.3),
        path(&heat, "directed_by", false, &mann, 0.1),
    ];
    let reply = decide(
        &request(weak.clone(), vec![mann.clone()], 1),
        &JudgeRule::default(),
    );
    assert_eq!(
        reply.verdict,
        Verdict::ExpandDepth {
            relation: "written_by".into(),
            direction: Direction::In,
            frontier: vec![mann.clone()],
        }
    );
    let reply = decide(&request(weak, vec![mann], 0), &JudgeRule::default());
    assert_eq!(reply.verdict, Verdict::NextRound);
}

#[test]
fn nothing_retrieved_scans_the_frontier_and_no_frontier_means_next_round() {
    let heat = entity(1, "Heat");
    let reply = decide(
        &request(Vec::new(), vec![heat.clone()], 2),
        &JudgeRule::default(),
    );
    assert_eq!(
        reply.verdict,
        Verdict::ExpandBreadth {
            frontier: vec![heat]
        }
    );
    let reply = decide(&request(Vec::new(), Vec::new(), 2), &JudgeRule::default());
    assert_eq!(reply.verdict, Verdict::NextRound);
}

fn judge_with(model: ScriptedModel) -> Judge {
    Judge {
        llm: Some(Arc::new(model)),
        graph: None,
        rule: JudgeRule::default(),
    }
}

#[tokio::test]
async fn the_model_decides_when_there_is_one_and_its_call_is_charged() {
    let heat = entity(1, "Heat");
    let mann = entity(2, "Michael Mann");
    let judge = judge_with(
        ScriptedModel::always(Ok(
            "<verdict>EXPAND_DEPTH</verdict><relation>directed_by</relation><direction>in</direction><from>Michael Mann</from>",
        ))
        .with_usage(50, 5),
    );
    let ctx = CallContext::for_test(Role::JUDGE);
    let reply = judge
        .judge(
            &ctx,
            request(
                vec![path(&heat, "directed_by", false, &mann, 0.9)],
                vec![mann.clone()],
                3,
            ),
        )
        .await
        .unwrap();
    // The rule alone would have said COMPLETE.
    assert_eq!(
        reply.verdict,
        Verdict::ExpandDepth {
            relation: "directed_by".into(),
            direction: Direction::In,
            frontier: vec![mann],
        }
    );
    assert_eq!(ctx.cost().llm_calls, 1);
    assert_eq!(ctx.cost().prompt_tokens, 50);
}

#[tokio::test]
async fn a_failing_model_falls_back_to_the_rule_and_says_so() {
    let heat = entity(1, "Heat");
    let mann = entity(2, "Michael Mann");
    let judge = judge_with(ScriptedModel::always(Err(LlmError::Timeout(
        Duration::from_secs(1),
    ))));
    let ctx = CallContext::for_test(Role::JUDGE);
    let reply = judge
        .judge(
            &ctx,
            request(
                vec![path(&heat, "directed_by", false, &mann, 0.9)],
                vec![mann],
                3,
            ),
        )
        .await
        .unwrap();
    assert_eq!(reply.verdict, Verdict::Complete);
    assert!(
        reply.reason.contains("model unavailable"),
        "{}",
        reply.reason
    );
    assert_eq!(ctx.cost().llm_calls, 0);
    assert_eq!(ctx.cost().model_fallbacks, 1);
}

#[tokio::test]
async fn the_role_answers_on_the_bus() {
    let bus = Arc::new(LocalBus::new());
    let deps = AgentDeps::new(bus.clone());
    let handle = start_role(bus.clone(), super::role(&deps).unwrap())
        .await
        .unwrap();
    let client = Client::new(bus);
    let meta = Meta::new(QuestionId::new_random(), 1, Budget::default());
    let heat = entity(1, "Heat");
    let role = Role::well_known(Role::JUDGE);
    let body = request(Vec::new(), vec![heat.clone()], 1);
    let call = client.call(&role, &meta, &body);
    let (reply, _cost) = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("in time")
        .expect("the judge answers");
    assert_eq!(
        reply.verdict,
        Verdict::ExpandBreadth {
            frontier: vec![heat]
        }
    );
    handle.stop(Duration::from_secs(5)).await;
}
