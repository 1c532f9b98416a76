//! SnowLuma's body checks, end to end: the built binary refuses what SnowLuma would answer
//! with 1400 without sending it, and forwards unchecked params exactly as given.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/raw_client.rs"]
mod raw_client;

use fake_snowluma::FakeSnowLuma;
use raw_client::{RawServer, modern_meta, structured};
use serde_json::{Value, json};

async fn invoke(server: &mut RawServer, id: i64, action: &str, params: Value) -> Value {
    let response = server
        .request(
            id,
            "tools/call",
            json!({
                "name": "invoke_action",
                "arguments": { "action": action, "params": params },
                "_meta": modern_meta(json!({})),
            }),
        )
        .await;
    structured(&response)
}

#[tokio::test]
async fn body_checks_refuse_before_sending_and_unchecked_params_are_forwarded() {
    let fake = FakeSnowLuma::start(None).await;
    let mut server = RawServer::spawn(&[
        ("SNOWLUMA_MCP_MODE", "write"),
        ("SNOWLUMA_MCP_ENDPOINT", fake.url.as_str()),
    ]);

    let refused = [
        (
            "send_packet",
            json!({ "cmd": "Svc.X", "data": "abc" }),
            "data: must be a hex string",
        ),
        (
            "click_inline_keyboard_button",
            json!({ "group_id": 20001, "bot_appid": 1, "msg_seq": 2 }),
            "button_id: is required",
        ),
        (
            "translate_en2zh",
            json!({ "words": "hello" }),
            "words: must be an array",
        ),
        (
            "send_qzone_msg",
            json!({ "content": "hi", "ugc_right": 2 }),
            "ugc_right: expected one of",
        ),
    ];
    for (id, (action, params, reason)) in refused.into_iter().enumerate() {
        let body = invoke(&mut server, id as i64 + 1, action, params).await;
        assert_eq!(
            body["diagnostics"]["kind"], "invalid_arguments",
            "{action}: {body}"
        );
        let message = body["diagnostics"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(reason), "{action}: {message}");
    }
    assert!(
        fake.requests().is_empty(),
        "nothing refused reaches SnowLuma"
    );

    let params = json!({ "group_id": 20001, "bot_appid": 1, "msg_seq": 2, "button_id": 7,
        "callback_data": { "not": "a string" } });
    invoke(
        &mut server,
        10,
        "click_inline_keyboard_button",
        params.clone(),
    )
    .await;
    assert_eq!(
        fake.requests().last().unwrap().json().unwrap()["params"],
        params,
        "undeclared params go to SnowLuma exactly as sent"
    );
    server.finish().await;
}
