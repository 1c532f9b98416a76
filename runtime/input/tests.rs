//! Behaviour of the input round: which fields are missing, the form, the shared answer
//! validator and the signed single-use continuations.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value, json};

use super::*;
use crate::catalog::{self, ACTIONS};

const TOOL: &str = "invoke_action_with_input";

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("test arguments must be an object, got {other}"),
    }
}

fn meta(name: &str) -> &'static crate::catalog::ActionMeta {
    catalog::resolve(name).expect("action in catalog").meta
}

fn group_msg_without_message() -> Map<String, Value> {
    object(json!({"action": "send_group_msg", "params": {"group_id": 20001}}))
}

fn accept(text: &str) -> Answer {
    Answer::Accept(text.to_string())
}

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

// --- missing_fields ---------------------------------------------------------------------

#[test]
fn missing_fields_lists_absent_required_fields_in_catalog_order() {
    let action = meta("send_group_msg");
    assert_eq!(
        missing_fields(action, &group_msg_without_message()),
        ["message"]
    );
    let no_params = object(json!({"action": "send_group_msg"}));
    assert_eq!(missing_fields(action, &no_params), ["group_id", "message"]);
    let null_params = object(json!({"action": "send_group_msg", "params": null}));
    assert_eq!(
        missing_fields(action, &null_params),
        ["group_id", "message"]
    );
}

#[test]
fn complete_arguments_have_nothing_missing() {
    let args = object(json!({
        "action": "send_group_msg",
        "params": {"group_id": 20001, "message": "hi"}
    }));
    assert!(missing_fields(meta("send_group_msg"), &args).is_empty());
    let no_required = object(json!({"action": "get_login_info"}));
    assert!(missing_fields(meta("get_login_info"), &no_required).is_empty());
}

#[test]
fn only_absence_counts_as_missing() {
    // A null or mistyped field is present; the normal checks report it, nobody is asked.
    let args = object(json!({
        "action": "send_group_msg",
        "params": {"group_id": null, "message": 5}
    }));
    assert!(missing_fields(meta("send_group_msg"), &args).is_empty());
    // Optional fields are never asked for.
    let without_optional = group_msg_without_message();
    assert!(
        !missing_fields(meta("send_group_msg"), &without_optional)
            .contains(&"auto_escape".to_string())
    );
}

#[test]
fn non_object_params_bypass_the_round() {
    let args = object(json!({"action": "send_group_msg", "params": [1, 2]}));
    assert!(missing_fields(meta("send_group_msg"), &args).is_empty());
}

#[test]
fn automatic_upload_does_not_ask_for_its_stream_id() {
    let action = meta("upload_file_stream");
    let manual = object(json!({"action": "upload_file_stream", "params": {}}));
    assert_eq!(missing_fields(action, &manual), ["stream_id"]);
    let automatic = object(json!({
        "action": "upload_file_stream",
        "params": {},
        "execution": {"input_file": "a.bin"}
    }));
    assert!(missing_fields(action, &automatic).is_empty());
}

#[test]
fn required_lists_match_every_generated_input_schema() {
    // missing_fields trusts ActionMeta::required; it must be the inputSchema's list.
    for action in ACTIONS.iter() {
        let contract: Value = serde_json::from_str(action.contract_json()).expect("contract");
        let schema_required: Vec<&str> = contract
            .pointer("/inputSchema/required")
            .and_then(Value::as_array)
            .map(|list| list.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        assert_eq!(
            action.required,
            schema_required.as_slice(),
            "{}",
            action.name
        );
    }
}

// --- form -------------------------------------------------------------------------------

#[test]
fn form_is_one_required_string_field_and_names_the_missing_fields() {
    let form = form(meta("send_group_msg"), &["message".to_string()]);
    assert!(form.message.contains("send_group_msg"));
    assert!(form.message.contains("message"));
    let schema = &form.requested_schema;
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!([PARAMS_JSON]));
    let properties = schema["properties"].as_object().expect("properties");
    assert_eq!(properties.len(), 1);
    assert_eq!(properties[PARAMS_JSON]["type"], "string");
    let description = properties[PARAMS_JSON]["description"]
        .as_str()
        .expect("text");
    assert!(description.contains("message"));
}

#[test]
fn form_lists_every_missing_field_with_its_catalog_description() {
    let missing = vec!["group_id".to_string(), "message".to_string()];
    let form = form(meta("send_group_msg"), &missing);
    assert!(form.message.contains("group_id, message"));
    assert!(form.message.contains("\n- group_id: "));
    assert!(form.message.contains("\n- message: "));
}

// --- Answer::from_elicit_result ---------------------------------------------------------

#[test]
fn elicit_results_become_answers() {
    let accepted = json!({"action": "accept", "content": {"params_json": "{\"message\":\"hi\"}"}});
    assert_eq!(
        Answer::from_elicit_result(&accepted),
        Ok(accept("{\"message\":\"hi\"}"))
    );
    assert_eq!(
        Answer::from_elicit_result(&json!({"action": "decline"})),
        Ok(Answer::Decline)
    );
    assert_eq!(
        Answer::from_elicit_result(&json!({"action": "cancel"})),
        Ok(Answer::Cancel)
    );
}

#[test]
fn unusable_elicit_results_are_malformed() {
    for result in [
        json!({"action": "accept"}),
        json!({"action": "accept", "content": {"params_json": {"message": "hi"}}}),
        json!({"action": "maybe"}),
        json!({"content": {}}),
        json!("accept"),
    ] {
        let error = Answer::from_elicit_result(&result).expect_err("malformed");
        assert_eq!(error.code(), "malformed_response", "{result}");
    }
}

// --- complete (the shared validator) ----------------------------------------------------

#[test]
fn an_accepted_answer_completes_the_params_and_keeps_the_rest() {
    let args = object(json!({
        "action": "send_group_msg",
        "params": {"group_id": 20001, "auto_escape": true}
    }));
    let completed = complete(&args, accept(r#"{"message": "Hello"}"#)).expect("valid answer");
    assert_eq!(completed.action, "send_group_msg");
    assert_eq!(
        completed.params,
        Some(json!({"group_id": 20001, "auto_escape": true, "message": "Hello"}))
    );
    assert!(completed.execution.is_none());
}

#[test]
fn execution_options_survive_completion() {
    let args = object(json!({
        "action": "upload_file_stream",
        "params": {},
        "execution": {"input_file": "a.bin"}
    }));
    let completed = complete(&args, accept("{}")).expect("nothing was missing");
    let execution = completed.execution.expect("execution kept");
    assert_eq!(execution.input_file.as_deref(), Some("a.bin"));
}

#[test]
fn declined_and_cancelled_answers_do_not_complete() {
    let args = group_msg_without_message();
    assert_eq!(
        complete(&args, Answer::Decline).unwrap_err(),
        InputError::Declined
    );
    assert_eq!(
        complete(&args, Answer::Cancel).unwrap_err(),
        InputError::Cancelled
    );
    assert!(InputError::Declined.is_refusal());
}

#[test]
fn invalid_json_is_refused() {
    let error = complete(&group_msg_without_message(), accept("{message: hi")).unwrap_err();
    assert_eq!(error.code(), "invalid_json");
    // serde's message gives a position, not the text.
    assert!(!error.to_string().contains("message: hi"));
}

#[test]
fn a_json_value_that_is_not_an_object_is_refused() {
    let error = complete(&group_msg_without_message(), accept(r#"["Hello"]"#)).unwrap_err();
    assert_eq!(error, InputError::NotAnObject { found: "an array" });
    let error = complete(&group_msg_without_message(), accept(r#""Hello""#)).unwrap_err();
    assert_eq!(error, InputError::NotAnObject { found: "a string" });
}

#[test]
fn an_answer_that_leaves_a_field_out_is_refused() {
    let args = object(json!({"action": "send_group_msg"}));
    let error = complete(&args, accept(r#"{"group_id": 20001}"#)).unwrap_err();
    assert_eq!(
        error,
        InputError::StillMissing {
            fields: vec!["message".into()]
        }
    );
    assert!(error.to_string().contains("message"));
}

#[test]
fn fields_that_were_not_asked_for_are_refused() {
    let error = complete(
        &group_msg_without_message(),
        accept(r#"{"message": "Hello", "auto_escape": true}"#),
    )
    .unwrap_err();
    assert_eq!(
        error,
        InputError::ExtraField {
            field: "auto_escape".into()
        }
    );
    assert_eq!(error.field(), Some("auto_escape"));
}

#[test]
fn provided_params_cannot_be_overwritten() {
    let error = complete(
        &group_msg_without_message(),
        accept(r#"{"message": "Hello", "group_id": 666}"#),
    )
    .unwrap_err();
    assert_eq!(
        error,
        InputError::Overwrite {
            field: "group_id".into()
        }
    );
    assert!(error.to_string().contains("group_id"));
}

#[test]
fn the_action_and_execution_cannot_be_changed_by_an_answer() {
    for field in ["action", "execution"] {
        let answer = format!(r#"{{"message": "Hello", "{field}": "x"}}"#);
        let error = complete(&group_msg_without_message(), accept(&answer)).unwrap_err();
        assert_eq!(
            error,
            InputError::ReservedField {
                field: field.into()
            }
        );
    }
}

#[test]
fn an_answered_field_failing_the_catalog_check_is_named() {
    let args = object(json!({"action": "send_group_msg", "params": {"message": "Hello"}}));
    let error = complete(&args, accept(r#"{"group_id": "not a number"}"#)).unwrap_err();
    assert_eq!(error.code(), "invalid_answer_field");
    assert_eq!(error.field(), Some("group_id"));
    assert!(error.to_string().contains("group_id"));
}

#[test]
fn a_provided_field_failing_the_check_is_blamed_on_the_original_call() {
    let args = object(json!({"action": "send_group_msg", "params": {"group_id": "abc"}}));
    let error = complete(&args, accept(r#"{"message": "Hello"}"#)).unwrap_err();
    assert_eq!(error.code(), "invalid_provided_field");
    assert_eq!(error.field(), Some("group_id"));
}

#[test]
fn malformed_original_arguments_are_refused() {
    let cases = [
        json!({"params": {}}),
        json!({"action": 5}),
        json!({"action": "send_group_msg", "params": "group_id=1"}),
        json!({"action": "send_group_msg", "extra": 1}),
        json!({"action": "send_group_msg", "execution": {"unknown": 1}}),
    ];
    for case in cases {
        let error = complete(&object(case.clone()), accept(r#"{"message": "x"}"#)).unwrap_err();
        assert_eq!(error.code(), "invalid_arguments", "{case}");
    }
    let unknown = object(json!({"action": "no_such_action"}));
    assert_eq!(
        complete(&unknown, accept("{}")).unwrap_err(),
        InputError::UnknownAction {
            action: "no_such_action".into()
        }
    );
}

// --- Continuations ----------------------------------------------------------------------

#[test]
fn an_opened_state_resumes_once_with_the_completed_arguments() {
    let (registry, _clock) = fresh_registry();
    let args = group_msg_without_message();
    let pending = registry.open(TOOL, &args).expect("room");
    assert_eq!(pending.expires_in, STATE_LIFETIME);
    assert_eq!(registry.pending(), 1);
    let completed = registry
        .resume(
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
    let state = registry.open(TOOL, &args).expect("room").state;
    let answer = r#"{"message": "Hello"}"#;
    registry
        .resume(TOOL, &args, &state, accept(answer))
        .expect("first answer");
    assert_eq!(
        registry
            .resume(TOOL, &args, &state, accept(answer))
            .unwrap_err(),
        InputError::Replayed
    );
}

#[test]
fn refused_answers_still_use_the_state_up() {
    let (registry, _clock) = fresh_registry();
    let args = group_msg_without_message();
    for refused in [Answer::Decline, Answer::Cancel, accept("not json")] {
        let state = registry.open(TOOL, &args).expect("room").state;
        assert!(registry.resume(TOOL, &args, &state, refused).is_err());
        assert_eq!(
            registry
                .resume(TOOL, &args, &state, accept(r#"{"message": "Hello"}"#))
                .unwrap_err(),
            InputError::Replayed
        );
    }
}

#[test]
fn altered_or_foreign_states_are_unknown() {
    let (registry, _clock) = fresh_registry();
    let args = group_msg_without_message();
    let state = registry.open(TOOL, &args).expect("room").state;
    let answer = || accept(r#"{"message": "Hello"}"#);

    let mut parts: Vec<String> = state.split('.').map(String::from).collect();
    let mut body = URL_SAFE_NO_PAD.decode(&parts[1]).expect("body");
    body[0] ^= 1; // a different sequence number
    parts[1] = URL_SAFE_NO_PAD.encode(&body);
    let altered = parts.join(".");
    let unknown = Err(InputError::UnknownState);
    assert_eq!(
        registry.resume(TOOL, &args, &altered, answer()).map(drop),
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
            registry.resume(TOOL, &args, garbage, answer()).map(drop),
            unknown
        );
    }
    // Another process (a restart) has another key.
    let (restarted, _clock) = fresh_registry();
    assert_eq!(
        restarted.resume(TOOL, &args, &state, answer()).map(drop),
        unknown
    );
    // None of that used the genuine state up.
    assert!(registry.resume(TOOL, &args, &state, answer()).is_ok());
}

#[test]
fn a_state_is_bound_to_its_tool_and_exact_arguments() {
    let (registry, _clock) = fresh_registry();
    let args = group_msg_without_message();
    let state = registry.open(TOOL, &args).expect("room").state;
    let answer = || accept(r#"{"message": "Hello"}"#);

    assert_eq!(
        registry
            .resume("query_action_with_input", &args, &state, answer())
            .unwrap_err(),
        InputError::WrongTool {
            issued_for: TOOL.into(),
            used_with: "query_action_with_input".into()
        }
    );
    let other_group = object(json!({"action": "send_group_msg", "params": {"group_id": 20002}}));
    assert_eq!(
        registry
            .resume(TOOL, &other_group, &state, answer())
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
            .resume(TOOL, &with_execution, &state, answer())
            .unwrap_err(),
        InputError::WrongArguments
    );
    // Mismatches do not consume; the same keys in another order are the same arguments.
    let reordered = object(json!({"params": {"group_id": 20001}, "action": "send_group_msg"}));
    assert!(registry.resume(TOOL, &reordered, &state, answer()).is_ok());
}

#[test]
fn a_state_expires_after_its_lifetime() {
    let (registry, clock) = fresh_registry();
    let args = group_msg_without_message();
    let state = registry.open(TOOL, &args).expect("room").state;
    clock.advance(STATE_LIFETIME);
    assert_eq!(
        registry
            .resume(TOOL, &args, &state, accept(r#"{"message": "Hello"}"#))
            .unwrap_err(),
        InputError::Expired { lifetime_secs: 600 }
    );
    assert_eq!(registry.pending(), 0);
}

#[test]
fn a_state_is_answerable_until_just_before_expiry() {
    let (registry, clock) = fresh_registry();
    let args = group_msg_without_message();
    let state = registry.open(TOOL, &args).expect("room").state;
    clock.advance(STATE_LIFETIME - Duration::from_millis(1));
    assert!(
        registry
            .resume(TOOL, &args, &state, accept(r#"{"message": "Hello"}"#))
            .is_ok()
    );
}

#[test]
fn the_lifetime_is_configurable() {
    let clock = ManualClock::default();
    let registry =
        Continuations::with_clock(Box::new(clock.clone()), Duration::from_secs(5)).expect("key");
    let args = group_msg_without_message();
    let state = registry.open(TOOL, &args).expect("room").state;
    clock.advance(Duration::from_secs(5));
    assert_eq!(
        registry
            .resume(TOOL, &args, &state, Answer::Decline)
            .unwrap_err(),
        InputError::Expired { lifetime_secs: 5 }
    );
}

#[test]
fn the_257th_pending_prompt_is_refused_and_nothing_is_evicted() {
    let (registry, clock) = fresh_registry();
    let args = group_msg_without_message();
    let states: Vec<String> = (0..MAX_PENDING)
        .map(|_| registry.open(TOOL, &args).expect("room").state)
        .collect();
    assert_eq!(
        registry.open(TOOL, &args).unwrap_err(),
        InputError::TooManyPending { limit: 256 }
    );
    assert_eq!(registry.pending(), MAX_PENDING);
    // The oldest prompt is still answerable, which frees one slot.
    assert!(
        registry
            .resume(TOOL, &args, &states[0], accept(r#"{"message": "Hello"}"#))
            .is_ok()
    );
    assert!(registry.open(TOOL, &args).is_ok());
    // Once the rest expire they are purged and make room.
    clock.advance(STATE_LIFETIME);
    assert!(registry.open(TOOL, &args).is_ok());
    assert_eq!(registry.pending(), 1);
}

#[test]
fn concurrent_answers_run_a_state_at_most_once() {
    let (registry, _clock) = fresh_registry();
    let registry = Arc::new(registry);
    let args = group_msg_without_message();
    for _ in 0..20 {
        let state = registry.open(TOOL, &args).expect("room").state;
        let barrier = Arc::new(Barrier::new(2));
        let racers: Vec<_> = (0..2)
            .map(|_| {
                let (registry, barrier) = (Arc::clone(&registry), Arc::clone(&barrier));
                let (args, state) = (args.clone(), state.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    registry
                        .resume(TOOL, &args, &state, accept(r#"{"message": "Hello"}"#))
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
    let state = registry.open(TOOL, &args).expect("room").state;
    let body = URL_SAFE_NO_PAD
        .decode(state.split('.').nth(1).expect("body"))
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
        InputError::TooManyPending { limit: MAX_PENDING },
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
        InputError::TooManyPending { limit: MAX_PENDING }
            .to_string()
            .contains("256")
    );
}
