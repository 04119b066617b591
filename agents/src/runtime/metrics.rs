//! What the runtime counts about each call a role serves (see `kgmesh_telemetry::metrics`
//! for the recorder and the descriptions). Labels are the role, the operation and the
//! outcome: `ok` or the [`AgentError`] kind, so cardinality stays bounded.

use std::time::Duration;

use kgmesh_schemas::{AgentError, Role};

pub(crate) const ROLE_REQUESTS_TOTAL: &str = "kgmesh_role_requests_total";
pub(crate) const ROLE_REQUEST_DURATION_SECONDS: &str = "kgmesh_role_request_duration_seconds";

/// The outcome label of a handler's result.
pub(crate) fn outcome<T>(result: &Result<T, AgentError>) -> &'static str {
    match result {
        Ok(_) => "ok",
        Err(error) => error.kind(),
    }
}

/// Counts one served call and its duration.
pub(crate) fn record_call(role: &Role, op: &str, outcome: &'static str, elapsed: Duration) {
    let labels = [
        ("role", role.as_str().to_owned()),
        ("op", op.to_owned()),
        ("outcome", outcome.to_owned()),
    ];
    metrics::counter!(ROLE_REQUESTS_TOTAL, &labels).increment(1);
    metrics::histogram!(ROLE_REQUEST_DURATION_SECONDS, &labels).record(elapsed.as_secs_f64());
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kgmesh_bus::LocalBus;
    use kgmesh_schemas::{
        messages::echo::{EchoReply, EchoRequest},
        Meta, QuestionId, RoleKind,
    };

    use crate::runtime::{start_role, CallContext, Client, RoleSpec};

    use super::*;

    #[test]
    fn served_calls_are_counted_by_role_op_and_outcome() {
        let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        // The actix system runs the role's actor and the bus on this thread, where the
        // local recorder is in force.
        metrics::with_local_recorder(&recorder, || {
            actix::System::new().block_on(async {
                let bus = Arc::new(LocalBus::new());
                let spec =
                    RoleSpec::new(Role::new("shouter").expect("a role name"), RoleKind::Core).op(
                        |ctx: CallContext, request: EchoRequest| async move {
                            if request.text.is_empty() {
                                return Err(AgentError::BadRequest {
                                    detail: "empty text".into(),
                                });
                            }
                            Ok(EchoReply {
                                text: request.text.to_uppercase(),
                                served_by: ctx.served_by(),
                            })
                        },
                    );
                let role_handle = start_role(bus.clone(), spec).await.expect("starts");
                let client = Client::new(bus);
                let role = Role::new("shouter").expect("a role name");
                let meta = Meta::new(
                    QuestionId::new_random(),
                    1,
                    kgmesh_schemas::Budget::default(),
                );
                for text in ["a", "b", ""] {
                    let request = EchoRequest { text: text.into() };
                    let _ = tokio::time::timeout(
                        Duration::from_secs(10),
                        client.call(&role, &meta, &request),
                    )
                    .await
                    .expect("answered in time");
                }
                role_handle.stop(Duration::from_secs(5)).await;
            })
        });
        let text = handle.render();
        for line in [
            r#"kgmesh_role_requests_total{role="shouter",op="echo",outcome="ok"} 2"#,
            r#"kgmesh_role_requests_total{role="shouter",op="echo",outcome="bad_request"} 1"#,
            r#"kgmesh_role_request_duration_seconds_count{role="shouter",op="echo",outcome="ok"} 2"#,
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
    }
}
