//! Issue 10's connection and input rules end to end (built binary over stdio, fake SnowLuma):
//! request bodies over SnowLuma's 2 MiB cap are refused before sending, answers over the
//! response cap and calls over the in-flight cap are clear errors, a 401 without a configured
//! token says so, an endpoint with a path explains SnowLuma's 1404, and oversized names and
//! queries are refused before any lookup.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/raw_client.rs"]
mod raw_client;

use std::time::Duration;

use fake_snowluma::{FakeSnowLuma, Fault};
use raw_client::{RawServer, modern_meta, structured};
use serde_json::{Value, json};

const TOKEN: &str = "limits-token-value";

fn spawn(url: &str, extra: &[(&str, &str)]) -> RawServer {
    let mut env = vec![
        ("SNOWLUMA_MCP_MODE", "write"),
        ("SNOWLUMA_MCP_ENDPOINT", url),
        ("SNOWLUMA_MCP_TOKEN", TOKEN),
    ];
    env.extend_from_slice(extra);
    RawServer::spawn(&env)
}

fn call_message(id: i64, tool: &str, args: Value) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": tool, "arguments": args, "_meta": modern_meta(json!({})) }
    })
}

async fn call(server: &mut RawServer, id: i64, tool: &str, args: Value) -> (Value, Value) {
    server.send(&call_message(id, tool, args)).await;
    let response = server.wait_for_id(&json!(id)).await;
    let body = structured(&response);
    (response, body)
}

#[tokio::test]
async fn a_body_over_two_mib_is_refused_before_sending() {
    let fake = FakeSnowLuma::start(Some(TOKEN)).await;
    let mut server = spawn(&fake.url, &[]);
    let text = "x".repeat(3 * 1024 * 1024);
    let (response, body) = call(
        &mut server,
        1,
        "invoke_action",
        json!({ "action": "send_group_msg", "params": { "group_id": 20001, "message": text } }),
    )
    .await;
    assert_eq!(response["result"]["isError"], true);
    assert_eq!(body["diagnostics"]["kind"], "invalid_arguments");
    let message = body["diagnostics"]["message"].as_str().unwrap();
    assert!(
        message.contains("2 MiB") && message.contains("nothing was sent"),
        "{message}"
    );
    assert!(
        body["diagnostics"]["next_step"]
            .as_str()
            .unwrap()
            .contains("upload_file_stream")
    );
    assert!(
        fake.requests_for("send_group_msg").is_empty(),
        "the body was sent"
    );
    server.finish().await;
}

#[tokio::test]
async fn answers_over_the_response_cap_are_a_clear_error() {
    let fake = FakeSnowLuma::start(Some(TOKEN)).await;
    // The fake's oversized answer is a valid 17 MiB envelope, over the 16 MiB default.
    fake.set_fault(Some("get_status"), Fault::OversizedFrame);
    let mut server = spawn(&fake.url, &[]);
    let (response, body) = call(
        &mut server,
        1,
        "query_action",
        json!({ "action": "get_status" }),
    )
    .await;
    assert_eq!(response["result"]["isError"], true);
    assert_eq!(body["diagnostics"]["kind"], "bad_response");
    assert!(
        body["diagnostics"]["message"]
            .as_str()
            .unwrap()
            .contains("SNOWLUMA_MCP_MAX_RESPONSE_BYTES"),
        "{body}"
    );
    // The cap is configurable: a small one refuses an ordinary answer of a few KiB.
    fake.set_answer(
        "get_group_list",
        json!({ "status": "ok", "retcode": 0, "data": [{ "group_id": 1, "group_name": "g".repeat(4096) }] }),
    );
    let mut small = spawn(&fake.url, &[("SNOWLUMA_MCP_MAX_RESPONSE_BYTES", "1024")]);
    let (_, body) = call(
        &mut small,
        1,
        "query_action",
        json!({ "action": "get_group_list" }),
    )
    .await;
    assert_eq!(body["diagnostics"]["kind"], "bad_response", "{body}");
    let (_, body) = call(&mut small, 2, "get_runtime_info", json!({})).await;
    assert_eq!(body["result"]["max_response_bytes"], 1024);
    server.finish().await;
    small.finish().await;
}

#[tokio::test]
async fn calls_over_the_in_flight_cap_are_busy() {
    let fake = FakeSnowLuma::start(Some(TOKEN)).await;
    fake.set_fault(Some("get_status"), Fault::Slow(Duration::from_millis(1500)));
    let mut server = spawn(&fake.url, &[("SNOWLUMA_MCP_MAX_CALLS", "1")]);
    server
        .send(&call_message(
            1,
            "query_action",
            json!({ "action": "get_status" }),
        ))
        .await;
    // The first call reaches the fake before the second is sent.
    raw_client::wait_until(raw_client::WAIT, || {
        !fake.requests_for("get_status").is_empty()
    })
    .await;
    let (_, busy) = call(
        &mut server,
        2,
        "query_action",
        json!({ "action": "get_login_info" }),
    )
    .await;
    assert_eq!(busy["diagnostics"]["kind"], "busy", "{busy}");
    assert!(
        busy["diagnostics"]["message"]
            .as_str()
            .unwrap()
            .contains("SNOWLUMA_MCP_MAX_CALLS")
    );
    let first = structured(&server.wait_for_id(&json!(1)).await);
    assert_eq!(first["diagnostics"]["outcome"], "success", "{first}");
    // With the slot free again, calls go through.
    let (_, after) = call(
        &mut server,
        3,
        "query_action",
        json!({ "action": "get_login_info" }),
    )
    .await;
    assert_eq!(after["diagnostics"]["outcome"], "success", "{after}");
    server.finish().await;
}

#[tokio::test]
async fn a_401_without_a_configured_token_says_none_is_configured() {
    let fake = FakeSnowLuma::start(Some(TOKEN)).await;
    let mut server = RawServer::spawn(&[
        ("SNOWLUMA_MCP_MODE", "read"),
        ("SNOWLUMA_MCP_ENDPOINT", fake.url.as_str()),
    ]);
    let (_, body) = call(
        &mut server,
        1,
        "query_action",
        json!({ "action": "get_status" }),
    )
    .await;
    assert_eq!(body["diagnostics"]["kind"], "unauthorized");
    let message = body["diagnostics"]["message"].as_str().unwrap();
    assert!(message.contains("none is configured"), "{message}");
    let mut wrong = RawServer::spawn(&[
        ("SNOWLUMA_MCP_MODE", "read"),
        ("SNOWLUMA_MCP_ENDPOINT", fake.url.as_str()),
        ("SNOWLUMA_MCP_TOKEN", "not-the-token"),
    ]);
    let (_, body) = call(
        &mut wrong,
        1,
        "query_action",
        json!({ "action": "get_status" }),
    )
    .await;
    assert!(
        body["diagnostics"]["message"]
            .as_str()
            .unwrap()
            .contains("refused the access token"),
        "{body}"
    );
    server.finish().await;
    let (_, stderr) = wrong.finish().await;
    assert!(
        !stderr.contains("not-the-token"),
        "token in stderr: {stderr}"
    );
}

#[tokio::test]
async fn an_endpoint_with_a_path_explains_snowlumas_1404() {
    let fake = FakeSnowLuma::start(Some(TOKEN)).await;
    let url = format!("{}onebot/", fake.url);
    let mut server = spawn(&url, &[]);
    let (response, body) = call(
        &mut server,
        1,
        "query_action",
        json!({ "action": "get_status" }),
    )
    .await;
    assert_eq!(
        response["result"]["isError"], false,
        "a 1404 envelope is data"
    );
    assert_eq!(body["result"]["retcode"], 1404, "{body}");
    let next = body["diagnostics"]["next_step"].as_str().unwrap();
    assert!(
        next.contains("endpoint path") && next.contains("/onebot/"),
        "{next}"
    );
    // A stream answered by one plain envelope (no frame delimiter) reports that envelope.
    let (response, body) = call(
        &mut server,
        2,
        "invoke_action",
        json!({ "action": "test_download_stream" }),
    )
    .await;
    assert_eq!(response["result"]["isError"], false, "{body}");
    assert_eq!(body["diagnostics"]["kind"], "stream_failed", "{body}");
    assert_eq!(body["result"]["retcode"], 1404, "{body}");
    assert!(
        body["diagnostics"]["next_step"]
            .as_str()
            .unwrap()
            .contains("endpoint path")
    );
    // At the root, the same answer blames the action, not the path.
    let mut root = spawn(&fake.url, &[]);
    fake.set_answer(
        "get_status",
        json!({ "status": "failed", "retcode": 1404, "data": null, "wording": "unknown action" }),
    );
    let (_, body) = call(
        &mut root,
        1,
        "query_action",
        json!({ "action": "get_status" }),
    )
    .await;
    assert!(
        !body["diagnostics"]["next_step"]
            .as_str()
            .unwrap()
            .contains("endpoint path"),
        "{body}"
    );
    server.finish().await;
    root.finish().await;
}

#[tokio::test]
async fn oversized_names_and_queries_are_refused_before_lookup() {
    let mut server = RawServer::spawn(&[]);
    let long = "a".repeat(300);
    let (_, body) = call(&mut server, 1, "get_action", json!({ "name": long })).await;
    assert_eq!(body["diagnostics"]["kind"], "unknown_action");
    let message = body["diagnostics"]["message"].as_str().unwrap();
    assert!(
        message.contains("300 characters") && message.contains("256"),
        "{message}"
    );
    let (_, body) = call(
        &mut server,
        2,
        "search_actions",
        json!({ "query": "群 ".repeat(200), "match": "keywords" }),
    )
    .await;
    assert_eq!(body["diagnostics"]["kind"], "invalid_arguments");
    assert!(
        body["diagnostics"]["message"]
            .as_str()
            .unwrap()
            .contains("at most 256")
    );
    // Exactly 256 characters is still looked up (and simply not found).
    let (_, body) = call(
        &mut server,
        3,
        "get_action",
        json!({ "name": "b".repeat(256) }),
    )
    .await;
    assert!(
        !body["diagnostics"]["message"]
            .as_str()
            .unwrap()
            .contains("characters")
    );
    server.finish().await;
}
