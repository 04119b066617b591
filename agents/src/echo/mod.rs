//! The `echo` role: answers with the text it got and who served it. It proves the
//! path from a client through the bus and the runtime to an actor and back, and
//! shows load spreading between replicas.

pub mod core;

use kgmesh_schemas::{messages::echo::EchoRequest, Role, RoleKind};

use crate::runtime::{AgentDeps, CallContext, RoleBuildError, RoleSpec};

/// The role's factory (see [`crate::runtime::registry`]). Echo needs nothing but the bus.
pub fn role(_deps: &AgentDeps) -> Result<RoleSpec, RoleBuildError> {
    Ok(
        RoleSpec::new(Role::well_known(Role::ECHO), RoleKind::Core).op(
            |ctx: CallContext, request: EchoRequest| async move {
                core::echo(&request, &ctx.served_by())
            },
        ),
    )
}

#[cfg(test)]
mod tests;
