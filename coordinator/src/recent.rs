//! The questions a coordinator answered last, by question id, so that feedback can name
//! a question by the id its reply carried.
//!
//! Bounded (the oldest is forgotten first) and in memory: an id another `serve` replica
//! handed out, or one from before a restart, is unknown here, which is why feedback may
//! also name the question by its text.

use std::{
    collections::{HashMap, VecDeque},
    sync::Mutex,
};

/// The last `capacity` questions answered, by id.
#[derive(Debug)]
pub struct RecentQuestions {
    capacity: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    by_id: HashMap<String, String>,
    /// Ids, oldest first.
    order: VecDeque<String>,
}

impl RecentQuestions {
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            inner: Mutex::default(),
        }
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Two plain collections updated together; a panic between the two updates
        // leaves at worst an id that resolves to nothing.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Remembers `question` under `id`, forgetting the oldest beyond the capacity.
    pub fn remember(&self, id: String, question: String) {
        if self.capacity == 0 {
            return;
        }
        let mut inner = self.inner();
        if inner.by_id.insert(id.clone(), question).is_none() {
            inner.order.push_back(id);
        }
        while inner.order.len() > self.capacity {
            if let Some(oldest) = inner.order.pop_front() {
                inner.by_id.remove(&oldest);
            }
        }
    }

    /// The question answered under `id`, while it is among the last `capacity`.
    pub fn get(&self, id: &str) -> Option<String> {
        self.inner().by_id.get(id).cloned()
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn len(&self) -> usize {
        self.inner().by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_question_is_forgotten_first() {
        let recent = RecentQuestions::new(2);
        recent.remember("a".into(), "who directed Heat".into());
        recent.remember("b".into(), "who wrote Heat".into());
        recent.remember("c".into(), "when was Heat released".into());
        assert_eq!(recent.len(), 2);
        assert_eq!(recent.get("a"), None);
        assert_eq!(recent.get("b").as_deref(), Some("who wrote Heat"));
        assert_eq!(recent.get("c").as_deref(), Some("when was Heat released"));
    }

    #[test]
    fn no_capacity_remembers_nothing() {
        let recent = RecentQuestions::new(0);
        recent.remember("a".into(), "q".into());
        assert!(recent.is_empty());
        assert_eq!(recent.get("a"), None);
    }
}
