//! The input completion tools in legacy sessions, over real stdio with the raw JSON-lines
//! peer against the fake SnowLuma: the prompt is an `elicitation/create` on the same
//! connection, unanswered prompts end cleanly, and sessions without form elicitation get an
//! error.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/input_helpers.rs"]
mod input_helpers;
#[path = "support/raw_client.rs"]
mod raw_client;

use serde_json::{Value, json};

use input_helpers::*;
use raw_client::{RawServer, structured};

/// Sends a legacy tools/call and returns the server's `elicitation/create` request.
async fn legacy_call_until_prompt(
    server: &mut RawServer,
    id: i64,
    tool: &str,
    args: Value,
) -> Value {
    server
        .send(&json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": tool, "arguments": args } }))
        .await;
    loop {
        let message = server.next().await.expect("elicitation/create arrives");
        if message["method"] == "elicitation/create" {
            return message;
        }
        assert_ne!(
            message["id"],
            json!(id),
            "answered without a prompt: {message}"
        );
        server.backlog.push(message);
    }
}

async fn answer_prompt(server: &mut RawServer, prompt: &Value, result: Value) {
    server
        .send(&json!({ "jsonrpc": "2.0", "id": prompt["id"], "result": result }))
        .await;
}

#[tokio::test]
async fn legacy_sessions_answer_through_elicitation_create() {
    let (fake, mut server) = start(&[]).await;
    server
        .initialize_legacy(json!({ "elicitation": { "form": {} } }))
        .await;

    let prompt = legacy_call_until_prompt(
        &mut server,
        1,
        "invoke_action_with_input",
        send_group(20001),
    )
    .await;
    assert_eq!(prompt["params"]["mode"], "form");
    assert!(
        prompt["params"]["message"]
            .as_str()
            .unwrap()
            .contains("message")
    );
    assert_eq!(
        prompt["params"]["requestedSchema"]["properties"]["params_json"]["type"],
        "string"
    );
    assert!(fake.requests().is_empty());
    answer_prompt(
        &mut server,
        &prompt,
        json!({ "action": "accept", "content": { "params_json": "{\"message\":\"Hi\"}" } }),
    )
    .await;
    let done = server.wait_for_id(&json!(1)).await;
    assert!(
        done["result"]
            .get("resultType")
            .is_none_or(|t| t == "complete")
    );
    assert_eq!(structured(&done)["diagnostics"]["outcome"], "success");
    assert_eq!(
        fake.requests_for("send_group_msg")[0].json().unwrap()["params"],
        json!({ "group_id": 20001, "message": "Hi" })
    );

    let cases = [
        (json!({ "action": "decline" }), "input_declined"),
        (json!({ "action": "cancel" }), "input_cancelled"),
        (
            json!({ "action": "accept", "content": { "params_json": "{" } }),
            "input_invalid",
        ),
        (
            json!({ "action": "accept", "content": { "params_json": "{\"message\":\"x\",\"group_id\":2}" } }),
            "input_invalid",
        ),
    ];
    for (id, (answer, kind)) in (2..).zip(cases) {
        let prompt = legacy_call_until_prompt(
            &mut server,
            id,
            "invoke_action_with_input",
            send_group(20001),
        )
        .await;
        answer_prompt(&mut server, &prompt, answer).await;
        let r = server.wait_for_id(&json!(id)).await;
        assert_eq!(refusal(&r).0, kind);
    }
    assert_eq!(fake.requests_for("send_group_msg").len(), 1);

    // Complete arguments: the result comes without any elicitation/create.
    server
        .send(&json!({ "jsonrpc": "2.0", "id": 20, "method": "tools/call", "params": { "name": "query_action_with_input", "arguments": { "action": "get_group_info", "params": { "group_id": 1 } } } }))
        .await;
    let next = server.next().await.expect("a response");
    assert_eq!(next["id"], 20, "{next}");
    server.finish().await;
}

#[tokio::test]
async fn legacy_unanswered_prompts_end_cleanly_and_formless_sessions_get_an_error() {
    let (fake, mut server) = start(&[("SNOWLUMA_MCP_INPUT_STATE_TTL_MS", "300")]).await;
    server.initialize_legacy(json!({ "elicitation": {} })).await;
    let _prompt = legacy_call_until_prompt(
        &mut server,
        1,
        "query_action_with_input",
        json!({ "action": "get_group_info" }),
    )
    .await;
    let r = server.wait_for_id(&json!(1)).await;
    let (kind, _) = refusal(&r);
    assert_eq!(kind, "input_cancelled");
    server.finish().await;

    let (_, mut formless) = start(&[]).await;
    formless.initialize_legacy(json!({})).await;
    let r = formless
        .request(
            1,
            "tools/call",
            json!({ "name": "query_action_with_input", "arguments": { "action": "get_group_info" } }),
        )
        .await;
    assert_eq!(refusal(&r).0, "input_unsupported");
    assert!(fake.requests().is_empty());
    formless.finish().await;
}
