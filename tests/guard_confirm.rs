//! Confirmation (SNOWLUMA_MCP_CONFIRM) end to end over raw stdio, in both generations: the
//! question the user sees, accept runs once, decline and cancel send nothing, a state cannot
//! be replayed, and a client without form elicitation gets confirmation_unavailable.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/raw_client.rs"]
mod raw_client;

use fake_snowluma::FakeSnowLuma;
use raw_client::{RawServer, modern_meta, structured};
use serde_json::{Value, json};

const TOKEN: &str = "guard-confirm-token";
const KEY: &str = "confirm_action";

async fn start(confirm: &str, extra: &[(&str, &str)]) -> (FakeSnowLuma, RawServer) {
    let fake = FakeSnowLuma::start(Some(TOKEN)).await;
    let mut env = vec![
        ("SNOWLUMA_MCP_MODE", "write"),
        ("SNOWLUMA_MCP_ENDPOINT", fake.url.as_str()),
        ("SNOWLUMA_MCP_TOKEN", TOKEN),
        ("SNOWLUMA_MCP_LOG", "warn"),
        ("SNOWLUMA_MCP_CONFIRM", confirm),
    ];
    env.extend_from_slice(extra);
    let server = RawServer::spawn(&env);
    (fake, server)
}

fn forms() -> Value {
    json!({ "elicitation": { "form": {} } })
}

async fn modern(server: &mut RawServer, id: i64, caps: Value, args: Value, extra: Value) -> Value {
    let mut params =
        json!({ "name": "invoke_action", "arguments": args, "_meta": modern_meta(caps) });
    if let Value::Object(extra) = extra {
        params.as_object_mut().unwrap().extend(extra);
    }
    server.request(id, "tools/call", params).await
}

fn send_group() -> Value {
    json!({ "action": "send_group_msg", "params": { "group_id": 20001, "message": [
        { "type": "reply", "data": { "id": -42 } },
        { "type": "text", "data": { "text": "晚上八点开会" } }
    ] } })
}

fn kind(response: &Value) -> String {
    assert_eq!(response["result"]["isError"], true, "{response}");
    let body = structured(response);
    assert_eq!(body["result"], Value::Null);
    body["diagnostics"]["kind"].as_str().unwrap().to_string()
}

/// The question of an `input_required` result, and its state.
fn question(response: &Value) -> (String, String) {
    let result = &response["result"];
    assert_eq!(result["resultType"], "input_required", "{response}");
    let request = &result["inputRequests"][KEY];
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(
        request["params"]["requestedSchema"]["properties"]["confirm"]["type"],
        "boolean"
    );
    (
        request["params"]["message"].as_str().unwrap().to_string(),
        result["requestState"].as_str().unwrap().to_string(),
    )
}

fn answer(action: &str, confirm: Option<bool>, state: &str) -> Value {
    let mut response = json!({ "action": action });
    if let Some(confirm) = confirm {
        response["content"] = json!({ "confirm": confirm });
    }
    json!({ "inputResponses": { KEY: response }, "requestState": state })
}

#[tokio::test]
async fn modern_clients_confirm_through_input_required() {
    let (fake, mut server) = start("writes", &[]).await;
    let asked = modern(&mut server, 1, forms(), send_group(), json!({})).await;
    let (message, state) = question(&asked);
    assert!(message.contains("send_group_msg"), "{message}");
    assert!(message.contains("group:20001"), "{message}");
    assert!(
        message.contains("(Replying to message -42) 晚上八点开会"),
        "{message}"
    );
    assert!(fake.requests().is_empty(), "nothing runs before the answer");

    let done = modern(
        &mut server,
        2,
        forms(),
        send_group(),
        answer("accept", Some(true), &state),
    )
    .await;
    assert_eq!(
        structured(&done)["diagnostics"]["outcome"],
        "success",
        "{done}"
    );
    assert_eq!(fake.requests_for("send_group_msg").len(), 1);
    // The state is single-use, and bound to these arguments.
    let replay = modern(
        &mut server,
        3,
        forms(),
        send_group(),
        answer("accept", Some(true), &state),
    )
    .await;
    assert_eq!(kind(&replay), "input_state");
    let (_, other) = question(&modern(&mut server, 4, forms(), send_group(), json!({})).await);
    let mut changed = send_group();
    changed["params"]["group_id"] = json!(20002);
    let swapped = modern(
        &mut server,
        5,
        forms(),
        changed,
        answer("accept", Some(true), &other),
    )
    .await;
    assert_eq!(kind(&swapped), "input_state");

    for (id, (action, confirm, expected)) in (10..).zip([
        ("decline", None, "input_declined"),
        ("cancel", None, "input_cancelled"),
        ("accept", Some(false), "input_declined"),
    ]) {
        let (_, state) = question(&modern(&mut server, id, forms(), send_group(), json!({})).await);
        let refused = modern(
            &mut server,
            id + 100,
            forms(),
            send_group(),
            answer(action, confirm, &state),
        )
        .await;
        assert_eq!(kind(&refused), expected);
    }
    assert_eq!(fake.requests_for("send_group_msg").len(), 1);

    // No form elicitation: refused, never run unasked.
    let formless = modern(&mut server, 30, json!({}), send_group(), json!({})).await;
    assert_eq!(kind(&formless), "confirmation_unavailable");
    let next = structured(&formless)["diagnostics"]["next_step"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(next.contains("SNOWLUMA_MCP_CONFIRM"), "{next}");
    // Reads are never asked about.
    let read = modern(
        &mut server,
        31,
        json!({}),
        json!({ "action": "get_status" }),
        json!({}),
    )
    .await;
    assert_eq!(structured(&read)["diagnostics"]["outcome"], "success");
    assert_eq!(fake.requests_for("send_group_msg").len(), 1);
    server.finish().await;
}

#[tokio::test]
async fn danger_asks_only_for_dangerous_actions() {
    let (fake, mut server) = start("danger", &[]).await;
    let sent = modern(&mut server, 1, json!({}), send_group(), json!({})).await;
    assert_eq!(structured(&sent)["diagnostics"]["outcome"], "success");
    let exit = modern(
        &mut server,
        2,
        json!({}),
        json!({ "action": "bot_exit" }),
        json!({}),
    )
    .await;
    assert_eq!(kind(&exit), "confirmation_unavailable");
    let (message, _) = question(
        &modern(
            &mut server,
            3,
            forms(),
            json!({ "action": "bot_exit" }),
            json!({}),
        )
        .await,
    );
    assert!(message.contains("DANGER"), "{message}");
    assert!(fake.requests_for("bot_exit").is_empty());
    server.finish().await;
}

/// Sends a legacy tools/call; answers the `elicitation/create` that comes with `result` and
/// returns the call's response with the prompt's message.
async fn legacy(
    server: &mut RawServer,
    id: i64,
    tool: &str,
    args: Value,
    result: Value,
) -> (Value, String) {
    server
        .send(&json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": tool, "arguments": args } }))
        .await;
    let prompt = loop {
        let message = server.next().await.expect("elicitation/create arrives");
        if message["method"] == "elicitation/create" {
            break message;
        }
        assert_ne!(
            message["id"],
            json!(id),
            "answered without a prompt: {message}"
        );
        server.backlog.push(message);
    };
    server
        .send(&json!({ "jsonrpc": "2.0", "id": prompt["id"], "result": result }))
        .await;
    let message = prompt["params"]["message"].as_str().unwrap().to_string();
    (server.wait_for_id(&json!(id)).await, message)
}

#[tokio::test]
async fn legacy_sessions_confirm_through_elicitation_create() {
    let (fake, mut server) = start("writes", &[("SNOWLUMA_MCP_TOOLSETS", "message")]).await;
    server.initialize_legacy(forms()).await;
    let (done, message) = legacy(
        &mut server,
        1,
        "invoke_action",
        send_group(),
        json!({ "action": "accept", "content": { "confirm": true } }),
    )
    .await;
    assert!(message.contains("晚上八点开会"), "{message}");
    assert_eq!(structured(&done)["diagnostics"]["outcome"], "success");
    assert_eq!(fake.requests_for("send_group_msg").len(), 1);
    for (id, result, expected) in [
        (2, json!({ "action": "decline" }), "input_declined"),
        (3, json!({ "action": "cancel" }), "input_cancelled"),
    ] {
        let (refused, _) = legacy(&mut server, id, "invoke_action", send_group(), result).await;
        assert_eq!(kind(&refused), expected);
    }
    // A typed tool asks the same way.
    let (typed, _) = legacy(
        &mut server,
        4,
        "send_group_msg",
        json!({ "group_id": 20001, "message": "typed" }),
        json!({ "action": "decline" }),
    )
    .await;
    assert_eq!(kind(&typed), "input_declined");
    assert_eq!(fake.requests_for("send_group_msg").len(), 1);
    server.finish().await;
}

#[tokio::test]
async fn legacy_sessions_without_elicitation_are_refused() {
    let (fake, mut server) = start("writes", &[]).await;
    server.initialize_legacy(json!({})).await;
    let response = server
        .request(
            1,
            "tools/call",
            json!({ "name": "invoke_action", "arguments": send_group() }),
        )
        .await;
    assert_eq!(kind(&response), "confirmation_unavailable");
    assert!(fake.requests().is_empty());
    server.finish().await;
}
