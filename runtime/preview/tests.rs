use serde_json::{Value, json};

use super::*;
use crate::catalog;

fn args(
    message_type: MessageType,
    target_id: i64,
    text: &str,
    reply_to: Option<i64>,
) -> PreviewArgs {
    PreviewArgs {
        message_type,
        target_id,
        text: text.into(),
        reply_to,
    }
}

fn group(target_id: i64, text: &str, reply_to: Option<i64>) -> PreviewArgs {
    args(MessageType::Group, target_id, text, reply_to)
}

/// The produced params must pass the same checks `invoke_action` applies.
fn assert_passes_catalog_checks(preview: &MessagePreview) {
    let resolved = catalog::resolve(&preview.invoke_action.action).expect("send action in catalog");
    assert_eq!(resolved.meta.name, preview.invoke_action.action);
    assert!(!resolved.meta.read_only);
    resolved
        .meta
        .check_params(&preview.invoke_action.params)
        .expect("params pass the catalog's checks");
}

#[test]
fn group_draft_with_reply_builds_exact_invoke_arguments() {
    let preview = build_preview(&group(20001, "Hello", Some(-123456)), true).unwrap();
    assert_eq!(
        serde_json::to_value(&preview.invoke_action).unwrap(),
        json!({
            "action": "send_group_msg",
            "params": {
                "group_id": 20001,
                "message": [
                    {"type": "reply", "data": {"id": -123456}},
                    {"type": "text", "data": {"text": "Hello"}}
                ]
            }
        })
    );
    assert!(preview.can_send);
    assert_eq!(preview.reply_to, Some(-123456));
    assert!(preview.draft.contains("group 20001"));
    assert!(preview.draft.contains("-123456"));
    assert!(preview.draft.contains("Hello"));
    assert_passes_catalog_checks(&preview);
}

#[test]
fn private_draft_without_reply_uses_user_id_and_one_text_segment() {
    let preview = build_preview(&args(MessageType::Private, 30001, "hi", None), false).unwrap();
    assert_eq!(preview.invoke_action.action, "send_private_msg");
    assert_eq!(
        Value::Object(preview.invoke_action.params.clone()),
        json!({"user_id": 30001, "message": [{"type": "text", "data": {"text": "hi"}}]})
    );
    assert!(!preview.can_send);
    assert!(preview.draft.contains("cannot send"));
    assert_passes_catalog_checks(&preview);
}

#[test]
fn cq_looking_text_stays_one_literal_text_segment() {
    let text = "[CQ:at,qq=all] <script>alert(1)</script> &#91;x&#93;";
    let preview = build_preview(&group(20001, text, None), true).unwrap();
    let message = preview.invoke_action.params["message"].as_array().unwrap();
    assert_eq!(message.len(), 1);
    assert_eq!(message[0], json!({"type": "text", "data": {"text": text}}));
    assert_passes_catalog_checks(&preview);
}

#[test]
fn json_array_looking_text_is_still_a_segment_array() {
    // A string "[1,2]" would be parsed by SnowLuma as a segment array; ours never is a string.
    let preview = build_preview(&group(20001, "[1,2]", None), true).unwrap();
    assert!(preview.invoke_action.params["message"].is_array());
}

#[test]
fn target_id_bounds() {
    for bad in [0, -1, i64::MIN, MAX_SAFE_INTEGER + 1, 1 << 53, i64::MAX] {
        assert_eq!(
            build_preview(&group(bad, "x", None), true),
            Err(PreviewError::TargetId(bad)),
            "target_id {bad}"
        );
    }
    for good in [1, MAX_SAFE_INTEGER] {
        let preview = build_preview(&group(good, "x", None), true).unwrap();
        assert_eq!(preview.invoke_action.params["group_id"], json!(good));
        assert_passes_catalog_checks(&preview);
    }
}

#[test]
fn reply_to_bounds() {
    let too_big = i64::from(i32::MAX) + 1;
    let too_small = i64::from(i32::MIN) - 1;
    for bad in [0, too_big, too_small, i64::MAX] {
        assert_eq!(
            build_preview(&group(20001, "x", Some(bad)), true),
            Err(PreviewError::ReplyTo(bad)),
            "reply_to {bad}"
        );
    }
    for good in [i64::from(i32::MIN), -1, 1, i64::from(i32::MAX)] {
        let preview = build_preview(&group(20001, "x", Some(good)), true).unwrap();
        assert_eq!(
            preview.invoke_action.params["message"][0]["data"]["id"],
            json!(good)
        );
        assert_passes_catalog_checks(&preview);
    }
}

#[test]
fn text_must_be_non_blank_and_bounded() {
    assert_eq!(
        build_preview(&group(20001, " \n\t", None), true),
        Err(PreviewError::EmptyText)
    );
    let long = "a".repeat(MAX_TEXT_BYTES + 1);
    assert_eq!(
        build_preview(&group(20001, &long, None), true),
        Err(PreviewError::TextTooLong(MAX_TEXT_BYTES + 1))
    );
    assert!(build_preview(&group(20001, &"a".repeat(MAX_TEXT_BYTES), None), true).is_ok());
}

#[test]
fn errors_name_the_field_and_the_limit() {
    let target = PreviewError::TargetId(0).to_string();
    assert!(target.contains("target_id") && target.contains("9007199254740991"));
    let reply = PreviewError::ReplyTo(0).to_string();
    assert!(reply.contains("reply_to") && reply.contains("2147483647"));
}

#[test]
fn args_reject_unknown_fields_and_bad_message_types() {
    let unknown = json!({"message_type": "group", "target_id": 1, "text": "x", "extra": 1});
    assert!(serde_json::from_value::<PreviewArgs>(unknown).is_err());
    let bad_type = json!({"message_type": "channel", "target_id": 1, "text": "x"});
    assert!(serde_json::from_value::<PreviewArgs>(bad_type).is_err());
    let ok = json!({"message_type": "private", "target_id": 1, "text": "x", "reply_to": -5});
    let parsed: PreviewArgs = serde_json::from_value(ok).unwrap();
    assert_eq!(parsed.message_type, MessageType::Private);
    assert_eq!(parsed.reply_to, Some(-5));
}

#[test]
fn input_schema_states_the_bounds() {
    let schema = serde_json::to_value(schemars::schema_for!(PreviewArgs)).unwrap();
    let props = &schema["properties"];
    assert_eq!(props["target_id"]["minimum"], json!(1));
    assert_eq!(props["target_id"]["maximum"], json!(MAX_SAFE_INTEGER));
    assert_eq!(schema["additionalProperties"], json!(false));
    let required: Vec<&str> = schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(required, ["message_type", "target_id", "text"]);
}

#[test]
fn result_serializes_with_the_documented_fields() {
    let preview = build_preview(&group(20001, "Hello", None), false).unwrap();
    let value = serde_json::to_value(&preview).unwrap();
    for key in [
        "draft",
        "message_type",
        "target_id",
        "text",
        "can_send",
        "invoke_action",
    ] {
        assert!(value.get(key).is_some(), "missing {key}");
    }
    assert!(
        value.get("reply_to").is_none(),
        "absent reply_to is omitted"
    );
    assert_eq!(value["message_type"], "group");
}

/// The browser tests feed these recorded results to the panel; they must stay what the
/// builder produces, or the panel would be tested against a shape the server never sends.
#[test]
fn browser_test_fixtures_match_the_builder() {
    let fixtures = [
        include_str!("../../ui/test/fixtures/group-reply.json"),
        include_str!("../../ui/test/fixtures/hostile.json"),
        include_str!("../../ui/test/fixtures/read-mode.json"),
    ];
    for text in fixtures {
        let fixture: Value = serde_json::from_str(text).unwrap();
        let parsed: PreviewArgs = serde_json::from_value(fixture["arguments"].clone()).unwrap();
        let can_send = fixture["can_send"].as_bool().unwrap();
        let built = build_preview(&parsed, can_send).unwrap();
        assert_eq!(serde_json::to_value(&built).unwrap(), fixture["result"]);
    }
}
