//! The `echo` role: answers with the text it got and who served it. It proves the
//! path from a client through the bus and the runtime to an actor and back, and
//! shows load spreading between replicas.

pub mod core;

use kgmesh_schemas::{messages::echo::EchoRequest, Role, RoleKind};

use crate::runtime::{AgentDeps, CallContext, Needs, RoleBuildError, RoleDescriptor, RoleSpec};

/// The role, as the registry runs it.
pub const DESCRIPTOR: RoleDescriptor = RoleDescriptor {
    name: Role::ECHO,
    kind: RoleKind::Core,
    summary: "answers with the text it got (smoke tests)",
    smoke_test: true,
    uses_model: false,
    needs: Needs::NOTHING,
    config: None,
    build: role,
};

/// The role's factory (see [`DESCRIPTOR`]). Echo needs nothing but the bus.
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
