//! Values of any type, at most one per type: what [`super::AgentDeps`] carries for the
//! roles without knowing it.

use std::{
    any::{Any, TypeId},
    collections::HashMap,
    sync::Arc,
};

#[derive(Clone, Default)]
pub(super) struct Values(HashMap<TypeId, Value>);

#[derive(Clone)]
struct Value {
    type_name: &'static str,
    value: Arc<dyn Any + Send + Sync>,
}

impl Values {
    pub(super) fn insert<T: Any + Send + Sync>(&mut self, value: Arc<T>) {
        let value = Value {
            type_name: std::any::type_name::<T>(),
            value,
        };
        self.0.insert(TypeId::of::<T>(), value);
    }

    pub(super) fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.0
            .get(&TypeId::of::<T>())
            .and_then(|entry| entry.value.downcast_ref::<T>())
    }

    pub(super) fn get_arc<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        let entry = self.0.get(&TypeId::of::<T>())?;
        entry.value.clone().downcast::<T>().ok()
    }
}

impl std::fmt::Debug for Values {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&str> = self.0.values().map(|entry| entry.type_name).collect();
        names.sort_unstable();
        f.debug_set().entries(names).finish()
    }
}
