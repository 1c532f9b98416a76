//! Send limits: token buckets per target (a group or a user) and over all targets, for the
//! actions the spec marks `sends`. Time is passed in ([`SendLimits::admit_at`]), so unit
//! tests drive it instead of sleeping.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Map, Value};
use std::time::Instant;

use crate::config::GuardConfig;

/// Per-target buckets kept before full ones are forgotten (a full bucket is the same as none).
const MAX_TRACKED_TARGETS: usize = 4096;

/// Which bucket refused a send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bucket {
    /// The target's own bucket (SNOWLUMA_MCP_SEND_PER_TARGET_PER_MIN and _SEND_BURST).
    Target,
    /// The bucket over all targets (SNOWLUMA_MCP_SEND_TOTAL_PER_MIN).
    Overall,
}

impl Bucket {
    pub fn as_str(self) -> &'static str {
        match self {
            Bucket::Target => "target",
            Bucket::Overall => "overall",
        }
    }

    /// The setting that sizes this bucket.
    pub fn setting(self) -> &'static str {
        match self {
            Bucket::Target => "SNOWLUMA_MCP_SEND_PER_TARGET_PER_MIN",
            Bucket::Overall => "SNOWLUMA_MCP_SEND_TOTAL_PER_MIN",
        }
    }
}

/// A refused send: which bucket, and when it will hold a token again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limited {
    pub bucket: Bucket,
    pub retry_after: Duration,
    /// The target the send was for (`group:<id>` / `user:<id>`), if the params name one.
    pub target: Option<String>,
}

/// One token bucket: `capacity` tokens, refilled at `per_min` tokens a minute.
#[derive(Debug, Clone, Copy)]
struct TokenBucket {
    tokens: f64,
    updated: Instant,
}

#[derive(Debug, Clone, Copy)]
struct Rate {
    capacity: f64,
    per_min: f64,
}

impl Rate {
    fn new(per_min: u32, capacity: u32) -> Option<Rate> {
        (per_min > 0).then(|| Rate {
            capacity: f64::from(capacity.max(1)),
            per_min: f64::from(per_min),
        })
    }

    /// The bucket's tokens at `now`.
    fn refill(self, bucket: &mut TokenBucket, now: Instant) {
        let elapsed = now.saturating_duration_since(bucket.updated).as_secs_f64() * 1000.0;
        bucket.tokens = (bucket.tokens + elapsed * self.per_min / 60_000.0).min(self.capacity);
        bucket.updated = now;
    }

    /// How long until the bucket holds one whole token (zero if it does now).
    fn wait(self, bucket: &TokenBucket) -> Duration {
        let missing = 1.0 - bucket.tokens;
        if missing <= 0.0 {
            return Duration::ZERO;
        }
        // Rounded up to the next millisecond, so a retry at that time is admitted.
        Duration::from_millis((missing * 60_000.0 / self.per_min).ceil() as u64)
    }

    fn full(self, now: Instant) -> TokenBucket {
        TokenBucket {
            tokens: self.capacity,
            updated: now,
        }
    }
}

/// The buckets of one process, shared by every session, tool and background task.
#[derive(Debug)]
pub struct SendLimits {
    target: Option<Rate>,
    overall: Option<Rate>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    overall: Option<TokenBucket>,
    targets: HashMap<String, TokenBucket>,
}

impl SendLimits {
    /// Per target: `burst` at once, then `per_target_per_min` a minute. Overall: up to a
    /// minute's worth at once, then `total_per_min` a minute. A rate of 0 disables its bucket.
    pub fn new(config: &GuardConfig) -> SendLimits {
        SendLimits {
            target: Rate::new(config.per_target_per_min, config.burst),
            overall: Rate::new(config.total_per_min, config.total_per_min),
            state: Mutex::new(State::default()),
        }
    }

    /// Takes one token from the target's bucket and one from the overall bucket, or none
    /// when either is empty (a refused send costs nothing).
    pub fn admit(&self, target: Option<String>) -> Result<(), Limited> {
        self.admit_at(target, Instant::now())
    }

    /// [`SendLimits::admit`] at the time `now`.
    pub fn admit_at(&self, target: Option<String>, now: Instant) -> Result<(), Limited> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let State { overall, targets } = &mut *state;
        let mut overall_bucket = self.overall.map(|rate| {
            let mut bucket = overall.unwrap_or_else(|| rate.full(now));
            rate.refill(&mut bucket, now);
            (rate, bucket)
        });
        let mut target_bucket = match (self.target, &target) {
            (Some(rate), Some(key)) => {
                let mut bucket = targets.get(key).copied().unwrap_or_else(|| rate.full(now));
                rate.refill(&mut bucket, now);
                Some((rate, bucket))
            }
            _ => None,
        };
        let refuse = |bucket: Bucket, wait: Duration| Limited {
            bucket,
            retry_after: wait,
            target: target.clone(),
        };
        if let Some((rate, bucket)) = &target_bucket
            && bucket.tokens < 1.0
        {
            return Err(refuse(Bucket::Target, rate.wait(bucket)));
        }
        if let Some((rate, bucket)) = &overall_bucket
            && bucket.tokens < 1.0
        {
            return Err(refuse(Bucket::Overall, rate.wait(bucket)));
        }
        if let Some((_, bucket)) = &mut overall_bucket {
            bucket.tokens -= 1.0;
            *overall = Some(*bucket);
        }
        if let (Some((rate, bucket)), Some(key)) = (&mut target_bucket, target) {
            bucket.tokens -= 1.0;
            if targets.len() >= MAX_TRACKED_TARGETS && !targets.contains_key(&key) {
                let rate = *rate;
                targets.retain(|_, b| {
                    rate.refill(b, now);
                    b.tokens < rate.capacity
                });
            }
            targets.insert(key, *bucket);
        }
        Ok(())
    }
}

/// The target of a send, from its params: `group:<id>` or `user:<id>`. send_msg names its
/// kind in `message_type`; other actions carry either id. Numbers and numeric strings name the
/// same target.
pub fn send_target(params: &Map<String, Value>) -> Option<String> {
    let id = |key: &str| params.get(key).and_then(id_text);
    let group = id("group_id").map(|id| format!("group:{id}"));
    let user = id("user_id").map(|id| format!("user:{id}"));
    match params.get("message_type").and_then(Value::as_str) {
        Some("private") => user.or(group),
        _ => group.or(user),
    }
}

fn id_text(value: &Value) -> Option<String> {
    match value {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) if !s.trim().is_empty() => Some(match s.trim().parse::<i64>() {
            Ok(n) => n.to_string(),
            Err(_) => s.trim().to_string(),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn limits(per_target: u32, burst: u32, total: u32) -> SendLimits {
        SendLimits::new(&GuardConfig {
            per_target_per_min: per_target,
            burst,
            total_per_min: total,
            ..GuardConfig::default()
        })
    }

    fn at(t0: Instant, ms: u64) -> Instant {
        t0 + Duration::from_millis(ms)
    }

    fn group(id: u64) -> Option<String> {
        Some(format!("group:{id}"))
    }

    #[test]
    fn defaults_let_a_burst_of_five_through_then_one_every_three_seconds() {
        let limits = limits(20, 5, 60);
        let t0 = Instant::now();
        for _ in 0..5 {
            limits.admit_at(group(1), t0).unwrap();
        }
        let refused = limits.admit_at(group(1), t0).unwrap_err();
        assert_eq!(refused.bucket, Bucket::Target);
        assert_eq!(refused.retry_after, Duration::from_millis(3000));
        assert!(
            limits.admit_at(group(1), at(t0, 2999)).is_err(),
            "not refilled yet"
        );
        limits.admit_at(group(1), at(t0, 3000)).unwrap();
        assert!(limits.admit_at(group(1), at(t0, 3000)).is_err());
    }

    #[test]
    fn targets_have_separate_buckets_and_share_the_overall_one() {
        let limits = limits(20, 5, 8);
        let t0 = Instant::now();
        for _ in 0..5 {
            limits.admit_at(group(1), t0).unwrap();
        }
        let refused = limits.admit_at(group(1), t0).unwrap_err();
        assert_eq!(refused.bucket, Bucket::Target);
        assert_eq!(refused.target, group(1));
        for _ in 0..3 {
            limits.admit_at(group(2), t0).unwrap();
        }
        let refused = limits.admit_at(group(2), t0).unwrap_err();
        assert_eq!(refused.bucket, Bucket::Overall);
        // 8 a minute: one token every 7.5 s.
        assert_eq!(refused.retry_after, Duration::from_millis(7500));
    }

    #[test]
    fn a_refused_send_costs_no_token_and_zero_disables_a_bucket() {
        let limits = limits(20, 1, 0);
        let t0 = Instant::now();
        limits.admit_at(group(1), t0).unwrap();
        for _ in 0..100 {
            assert!(limits.admit_at(group(1), t0).is_err());
        }
        limits.admit_at(group(1), at(t0, 3000)).unwrap();
        let open = self::limits(0, 5, 0);
        for _ in 0..1000 {
            open.admit(group(1)).unwrap();
        }
    }

    #[test]
    fn targets_come_from_group_or_user_ids() {
        let params = |v: Value| v.as_object().unwrap().clone();
        assert_eq!(
            send_target(&params(json!({"group_id": "20001"}))),
            group(20001)
        );
        assert_eq!(
            send_target(&params(json!({"group_id": 20001}))),
            group(20001)
        );
        assert_eq!(
            send_target(&params(json!({"user_id": 3}))).as_deref(),
            Some("user:3")
        );
        assert_eq!(
            send_target(&params(
                json!({"message_type": "private", "group_id": 1, "user_id": 3})
            ))
            .as_deref(),
            Some("user:3")
        );
        assert_eq!(send_target(&params(json!({"message": "x"}))), None);
    }
}
