//! Behaviour of the signed, single-use continuations of the modern input round.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use base64_simd::URL_SAFE_NO_PAD;
use serde_json::json;

use super::tests::{accept, group_msg_without_message, object};
use super::*;

const TOOL: &str = "invoke_action_with_input";
const OWNER: &str = "default";

/// A clock the test moves by hand, shared with the registry under test.
#[derive(Clone, Default)]
struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    fn advance(&self, by: Duration) {
        let millis = u64::try_from(by.as_millis()).expect("test durations fit");
        self.0.fetch_add(millis, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        Duration::from_millis(self.0.load(Ordering::SeqCst))
    }
}

fn fresh_registry() -> (Continuations, ManualClock) {
    let clock = ManualClock::default();
    let registry =
        Continuations::with_clock(Box::new(clock.clone()), STATE_LIFETIME).expect("random key");
    (registry, clock)
}

#[test]
fn an_opened_state_resumes_once_with_the_completed_arguments() {
    let (registry, _clock) = fresh_registry();
    let args = group_msg_without_message();
    let pending = registry.open(OWNER, TOOL, &args).expect("room");
    assert_eq!(pending.expires_in, STATE_LIFETIME);
    assert_eq!(registry.pending(), 1);
    let completed = registry
        .resume(
            OWNER,
            TOOL,
            &args,
            &pending.state,
            accept(r#"{"message": "Hello"}"#),
        )
        .expect("valid");
    assert_eq!(
        completed.params,
        Some(json!({"group_id": 20001, "message": "Hello"}))
    );
    assert_eq!(registry.pending(), 0);
}

#[test]
fn a_state_cannot_be_replayed() {
    let (registry, _clock) = fresh_registry();
    let args = group_msg_without_message();
    let state = registry.open(OWNER, TOOL, &args).expect("room").state;
    let answer = r#"{"message": "Hello"}"#;
    registry
        .resume(OWNER, TOOL, &args, &state, accept(answer))
        .expect("first answer");
    assert_eq!(
        registry
            .resume(OWNER, TOOL, &args, &state, accept(answer))
            .unwrap_err(),
        InputError::Replayed
    );
}

#[test]
fn refused_answers_still_use_the_state_up() {
    let (registry, _clock) = fresh_registry();
    let args = group_msg_without_message();
    for refused in [Answer::Decline, Answer::Cancel, accept("not json")] {
        let state = registry.open(OWNER, TOOL, &args).expect("room").state;
        assert!(
            registry
                .resume(OWNER, TOOL, &args, &state, refused)
                .is_err()
        );
        assert_eq!(
            registry
                .resume(
                    OWNER,
                    TOOL,
                    &args,
                    &state,
                    accept(r#"{"message": "Hello"}"#)
                )
                .unwrap_err(),
            InputError::Replayed
        );
    }
}

#[test]
fn altered_or_foreign_states_are_unknown() {
    let (registry, _clock) = fresh_registry();
    let args = group_msg_without_message();
    let state = registry.open(OWNER, TOOL, &args).expect("room").state;
    let answer = || accept(r#"{"message": "Hello"}"#);

    let mut parts: Vec<String> = state.split('.').map(String::from).collect();
    let mut body = URL_SAFE_NO_PAD.decode_to_vec(&parts[1]).expect("body");
    body[0] ^= 1; // a different sequence number
    parts[1] = URL_SAFE_NO_PAD.encode_to_string(&body);
    let altered = parts.join(".");
    let unknown = Err(InputError::UnknownState);
    assert_eq!(
        registry
            .resume(OWNER, TOOL, &args, &altered, answer())
            .map(drop),
        unknown
    );
    for garbage in [
        "",
        "sli1",
        "sli1..",
        "rs1.abc.def",
        "sli1.!!.??",
        &format!("{state}.x"),
    ] {
        assert_eq!(
            registry
                .resume(OWNER, TOOL, &args, garbage, answer())
                .map(drop),
            unknown
        );
    }
    // Another process (a restart) has another key.
    let (restarted, _clock) = fresh_registry();
    assert_eq!(
        restarted
            .resume(OWNER, TOOL, &args, &state, answer())
            .map(drop),
        unknown
    );
    // None of that used the genuine state up.
    assert!(
        registry
            .resume(OWNER, TOOL, &args, &state, answer())
            .is_ok()
    );
}

#[test]
fn a_state_is_bound_to_its_tool_and_exact_arguments() {
    let (registry, _clock) = fresh_registry();
    let args = group_msg_without_message();
    let state = registry.open(OWNER, TOOL, &args).expect("room").state;
    let answer = || accept(r#"{"message": "Hello"}"#);

    assert_eq!(
        registry
            .resume(OWNER, "query_action_with_input", &args, &state, answer())
            .unwrap_err(),
        InputError::WrongTool {
            issued_for: TOOL.into(),
            used_with: "query_action_with_input".into()
        }
    );
    let other_group = object(json!({"action": "send_group_msg", "params": {"group_id": 20002}}));
    assert_eq!(
        registry
            .resume(OWNER, TOOL, &other_group, &state, answer())
            .unwrap_err(),
        InputError::WrongArguments
    );
    let with_execution = object(json!({
        "action": "send_group_msg",
        "params": {"group_id": 20001},
        "execution": {}
    }));
    assert_eq!(
        registry
            .resume(OWNER, TOOL, &with_execution, &state, answer())
            .unwrap_err(),
        InputError::WrongArguments
    );
    // Mismatches do not consume; the same keys in another order are the same arguments.
    let reordered = object(json!({"params": {"group_id": 20001}, "action": "send_group_msg"}));
    assert!(
        registry
            .resume(OWNER, TOOL, &reordered, &state, answer())
            .is_ok()
    );
}

#[test]
fn a_state_expires_after_its_lifetime() {
    let (registry, clock) = fresh_registry();
    let args = group_msg_without_message();
    let state = registry.open(OWNER, TOOL, &args).expect("room").state;
    clock.advance(STATE_LIFETIME);
    assert_eq!(
        registry
            .resume(
                OWNER,
                TOOL,
                &args,
                &state,
                accept(r#"{"message": "Hello"}"#)
            )
            .unwrap_err(),
        InputError::Expired { lifetime_secs: 600 }
    );
    assert_eq!(registry.pending(), 0);
}

#[test]
fn a_state_is_answerable_until_just_before_expiry() {
    let (registry, clock) = fresh_registry();
    let args = group_msg_without_message();
    let state = registry.open(OWNER, TOOL, &args).expect("room").state;
    clock.advance(STATE_LIFETIME - Duration::from_millis(1));
    assert!(
        registry
            .resume(
                OWNER,
                TOOL,
                &args,
                &state,
                accept(r#"{"message": "Hello"}"#)
            )
            .is_ok()
    );
}

#[test]
fn the_lifetime_is_configurable() {
    let clock = ManualClock::default();
    let registry =
        Continuations::with_clock(Box::new(clock.clone()), Duration::from_secs(5)).expect("key");
    let args = group_msg_without_message();
    let state = registry.open(OWNER, TOOL, &args).expect("room").state;
    clock.advance(Duration::from_secs(5));
    assert_eq!(
        registry
            .resume(OWNER, TOOL, &args, &state, Answer::Decline)
            .unwrap_err(),
        InputError::Expired { lifetime_secs: 5 }
    );
}

#[test]
fn the_257th_pending_prompt_is_refused_and_nothing_is_evicted() {
    let (registry, clock) = fresh_registry();
    let args = group_msg_without_message();
    let states: Vec<String> = (0..MAX_PENDING)
        .map(|_| registry.open(OWNER, TOOL, &args).expect("room").state)
        .collect();
    assert_eq!(
        registry.open(OWNER, TOOL, &args).unwrap_err(),
        InputError::TooManyPending {
            limit: 256,
            share: None
        }
    );
    assert_eq!(registry.pending(), MAX_PENDING);
    // The oldest prompt is still answerable, which frees one slot.
    assert!(
        registry
            .resume(
                OWNER,
                TOOL,
                &args,
                &states[0],
                accept(r#"{"message": "Hello"}"#)
            )
            .is_ok()
    );
    assert!(registry.open(OWNER, TOOL, &args).is_ok());
    // Once the rest expire they are purged and make room.
    clock.advance(STATE_LIFETIME);
    assert!(registry.open(OWNER, TOOL, &args).is_ok());
    assert_eq!(registry.pending(), 1);
}

#[test]
fn concurrent_answers_run_a_state_at_most_once() {
    let (registry, _clock) = fresh_registry();
    let registry = Arc::new(registry);
    let args = group_msg_without_message();
    for _ in 0..20 {
        let state = registry.open(OWNER, TOOL, &args).expect("room").state;
        let barrier = Arc::new(Barrier::new(2));
        let racers: Vec<_> = (0..2)
            .map(|_| {
                let (registry, barrier) = (Arc::clone(&registry), Arc::clone(&barrier));
                let (args, state) = (args.clone(), state.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    registry
                        .resume(
                            OWNER,
                            TOOL,
                            &args,
                            &state,
                            accept(r#"{"message": "Hello"}"#),
                        )
                        .map(drop)
                })
            })
            .collect();
        let outcomes: Vec<_> = racers
            .into_iter()
            .map(|racer| racer.join().expect("no panic"))
            .collect();
        assert_eq!(outcomes.iter().filter(|o| o.is_ok()).count(), 1);
        assert!(outcomes.contains(&Err(InputError::Replayed)));
    }
}

#[test]
fn a_state_carries_no_param_values() {
    let (registry, _clock) = fresh_registry();
    let args = object(json!({
        "action": "send_group_msg",
        "params": {"group_id": 20001, "auto_escape": "secret-looking-value"}
    }));
    let state = registry.open(OWNER, TOOL, &args).expect("room").state;
    let body = URL_SAFE_NO_PAD
        .decode_to_vec(state.split('.').nth(1).expect("body"))
        .expect("base64url");
    let text = String::from_utf8_lossy(&body);
    assert!(!text.contains("secret-looking-value"));
    assert!(!text.contains("20001"));
    assert!(text.ends_with(TOOL));
}

#[test]
fn debug_output_does_not_show_the_key() {
    let (registry, _clock) = fresh_registry();
    let shown = format!("{registry:?}");
    assert!(shown.starts_with("Continuations"));
    assert!(shown.contains("pending: 0"));
    assert!(!shown.contains("mac"));
}

#[test]
fn every_error_says_what_to_do_next() {
    let errors = [
        InputError::UnknownState,
        InputError::Replayed,
        InputError::TooManyPending {
            limit: MAX_PENDING,
            share: None,
        },
        InputError::InvalidProvidedField {
            field: "group_id".into(),
            reason: "must be an integer".into(),
        },
    ];
    for error in errors {
        assert!(!error.next_step().is_empty());
        assert!(!error.to_string().is_empty());
    }
    assert!(
        InputError::TooManyPending {
            limit: MAX_PENDING,
            share: None
        }
        .to_string()
        .contains("256")
    );
}

#[test]
fn reopening_swaps_a_state_for_a_fresh_one() {
    let (registry, _clock) = fresh_registry();
    let args = group_msg_without_message();
    let first = registry.open(OWNER, TOOL, &args).expect("room").state;
    let second = registry
        .reopen(OWNER, TOOL, &args, &first)
        .expect("valid state")
        .state;
    assert_ne!(first, second);
    assert_eq!(registry.pending(), 1);
    let answer = || accept(r#"{"message": "Hello"}"#);
    assert_eq!(
        registry
            .resume(OWNER, TOOL, &args, &first, answer())
            .unwrap_err(),
        InputError::Replayed
    );
    assert!(
        registry
            .resume(OWNER, TOOL, &args, &second, answer())
            .is_ok()
    );
    // Reopening checks like resuming does.
    assert_eq!(
        registry.reopen(OWNER, TOOL, &args, "sli1.x.y").unwrap_err(),
        InputError::UnknownState
    );
}

#[test]
fn with_a_share_one_principal_fills_only_its_part_of_the_prompts() {
    let (registry, _clock) = fresh_registry();
    registry.set_principal_share(crate::config::principals::Share { percent: 50 });
    let args = group_msg_without_message();
    // A legacy session's owner key counts for its principal.
    for n in 0..MAX_PENDING / 2 {
        let owner = if n % 2 == 0 {
            "alice"
        } else {
            "alice/session-7"
        };
        registry
            .open(owner, TOOL, &args)
            .expect("within alice's share");
    }
    let refusal = registry.open("alice", TOOL, &args).unwrap_err();
    assert_eq!(
        refusal,
        InputError::TooManyPending {
            limit: MAX_PENDING,
            share: Some(crate::config::principals::Share { percent: 50 })
        }
    );
    assert!(
        refusal
            .to_string()
            .contains("SNOWLUMA_MCP_PRINCIPAL_SHARE_PERCENT"),
        "{refusal}"
    );
    // Bob is not affected.
    registry
        .open("bob", TOOL, &args)
        .expect("bob has his own share");
}
