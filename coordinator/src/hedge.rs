//! Hedged calls: a read-only call to a role with several replicas that has no reply
//! after the role's recent p95 time is sent again, to one replica after another on
//! their direct subjects, and the first reply wins. A frozen or just-killed replica
//! then costs a question one hedge delay instead of the whole call timeout.
//!
//! When one attempt wins, the replicas get a cancel message for the call (its id is
//! in every attempt's `Kgmesh-Call` header) and a kgmesh agent stops the losers' work.
//! Operations that change something (`Rpc::READ_ONLY = false`, the cache's store and
//! feedback) are never hedged.

use std::{
    collections::{HashMap, VecDeque},
    sync::atomic::{AtomicUsize, Ordering},
    time::Duration,
};

use parking_lot::Mutex;

use crate::config::HedgePolicy;

/// Latencies kept per role and operation.
const WINDOW: usize = 256;
/// Calls seen before the p95 is trusted; until then the policy's first delay applies.
const MIN_SAMPLES: usize = 8;

/// Recent successful calls' times per role and operation, as the roles report them
/// (`Cost::elapsed_us`, else the wall time), shared by all questions.
#[derive(Default)]
pub(crate) struct Latencies {
    recent: Mutex<HashMap<(String, &'static str), VecDeque<u32>>>,
    /// Where the next hedge starts in a role's list of replicas, so that hedges
    /// spread over them.
    rotation: AtomicUsize,
}

impl Latencies {
    pub(crate) fn record(&self, role: &str, op: &'static str, elapsed: Duration) {
        let micros = u32::try_from(elapsed.as_micros()).unwrap_or(u32::MAX);
        let mut recent = self.recent.lock();
        let window = recent.entry((role.to_owned(), op)).or_default();
        if window.len() == WINDOW {
            window.pop_front();
        }
        window.push_back(micros);
    }

    /// The p95 of the recent calls, once there are enough of them.
    pub(crate) fn p95(&self, role: &str, op: &'static str) -> Option<Duration> {
        let recent = self.recent.lock();
        let window = recent.get(&(role.to_owned(), op))?;
        if window.len() < MIN_SAMPLES {
            return None;
        }
        let mut sorted: Vec<u32> = window.iter().copied().collect();
        sorted.sort_unstable();
        let rank = (sorted.len() * 95).div_ceil(100) - 1;
        Some(Duration::from_micros(u64::from(sorted[rank])))
    }

    /// The hedge of a call to `role`'s `op`, whose live replicas are `instances` and
    /// which had `recent_replicas` replicas lately (a frozen one stops answering
    /// discovery but may still take requests); `None` when hedging is off or the role
    /// has had a single replica, where a hedge would only ask it twice.
    pub(crate) fn hedge(
        &self,
        policy: &HedgePolicy,
        role: &str,
        op: &'static str,
        instances: &[String],
        recent_replicas: usize,
    ) -> Option<Hedge> {
        if !policy.enabled || recent_replicas < 2 || instances.is_empty() {
            return None;
        }
        let after = self.p95(role, op).map_or(policy.first_delay, |p95| {
            p95.clamp(policy.min_delay, policy.max_delay)
        });
        let start = self.rotation.fetch_add(1, Ordering::Relaxed) % instances.len();
        let mut order = instances.to_vec();
        order.rotate_left(start);
        Some(Hedge {
            after,
            instances: order,
        })
    }
}

/// When to send a call again and to which replicas, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hedge {
    pub after: Duration,
    pub instances: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_delay_is_the_recent_p95_held_within_the_policy() {
        let latencies = Latencies::default();
        let policy = HedgePolicy {
            enabled: true,
            min_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(100),
            first_delay: Duration::from_millis(50),
        };
        let two = ["a".to_owned(), "b".to_owned()];
        // Too few calls seen: the first delay.
        for ms in 1..MIN_SAMPLES as u64 {
            latencies.record("r", "op", Duration::from_millis(ms));
        }
        let hedge = latencies.hedge(&policy, "r", "op", &two, 2).unwrap();
        assert_eq!(hedge.after, Duration::from_millis(50));
        for _ in 0..WINDOW {
            latencies.record("r", "op", Duration::from_millis(500));
        }
        assert_eq!(
            latencies.hedge(&policy, "r", "op", &two, 2).unwrap().after,
            Duration::from_millis(100),
            "a slow role is hedged no later than the policy's longest delay"
        );
        for ms in 1..=WINDOW as u64 {
            latencies.record("r", "op", Duration::from_millis(ms));
        }
        // 1..=256 ms: the 95th percentile is the 244th.
        assert_eq!(latencies.p95("r", "op"), Some(Duration::from_millis(244)));
        // Within the bounds, the p95 itself.
        for i in 0..WINDOW as u64 {
            latencies.record("r", "op", Duration::from_millis(20 + i % 50));
        }
        assert_eq!(latencies.p95("r", "op"), Some(Duration::from_millis(67)));
        assert_eq!(
            latencies.hedge(&policy, "r", "op", &two, 2).unwrap().after,
            latencies.p95("r", "op").unwrap()
        );
        for _ in 0..WINDOW {
            latencies.record("r", "op", Duration::from_millis(1));
        }
        assert_eq!(
            latencies.hedge(&policy, "r", "op", &two, 2).unwrap().after,
            Duration::from_millis(10),
            "a fast role is hedged no sooner than the policy's least delay"
        );
        // One replica, or hedging off: nothing to hedge.
        assert!(latencies.hedge(&policy, "r", "op", &two[..1], 1).is_none());
        // One live replica of two seen lately (the other frozen): hedged to the live one.
        let hedge = latencies.hedge(&policy, "r", "op", &two[1..], 2).unwrap();
        assert_eq!(hedge.instances, ["b"]);
        let off = HedgePolicy {
            enabled: false,
            ..policy
        };
        assert!(latencies.hedge(&off, "r", "op", &two, 2).is_none());
    }

    #[test]
    fn hedges_spread_over_the_replicas() {
        let latencies = Latencies::default();
        let three = ["a".to_owned(), "b".to_owned(), "c".to_owned()];
        let firsts: Vec<String> = (0..3)
            .map(|_| {
                latencies
                    .hedge(&HedgePolicy::default(), "r", "op", &three, 3)
                    .unwrap()
                    .instances[0]
                    .clone()
            })
            .collect();
        assert_eq!(firsts, ["a", "b", "c"]);
    }
}
