//! Behaviour of the input round before any state is involved: which fields are missing,
//! the form, reading elicitation results and the shared answer validator.

use serde_json::{Map, Value, json};

use super::*;
use crate::catalog::{self, ACTIONS};

pub(super) fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("test arguments must be an object, got {other}"),
    }
}

fn meta(name: &str) -> &'static crate::catalog::ActionMeta {
    catalog::resolve(name).expect("action in catalog").meta
}

pub(super) fn group_msg_without_message() -> Map<String, Value> {
    object(json!({"action": "send_group_msg", "params": {"group_id": 20001}}))
}

pub(super) fn accept(text: &str) -> Answer {
    Answer::Accept(text.to_string())
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
