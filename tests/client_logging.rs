//! MCP logging of tool calls, over real stdio. Legacy sessions (issue 37, the conformance
//! suite's `logging-set-level`): `initialize` offers the `logging` capability,
//! `logging/setLevel` stores the client's level in its session, and from then on each
//! `tools/call` of that session sends its log line as one `notifications/message` at or above
//! that level. 2026-07-28 requests (whose revision dropped setLevel) ask for themselves with
//! `_meta["io.modelcontextprotocol/logLevel"]`: only that request's call is logged, at or
//! above its level. Nothing is sent to a client that does not ask.

#[path = "support/raw_client.rs"]
mod raw_client;

use raw_client::{RawServer, modern_meta};
use serde_json::{Value, json};

/// The `notifications/message` read so far (they arrive before the call's response, which
/// is what every wait below waits for), taken out of the backlog.
fn take_log_messages(server: &mut RawServer) -> Vec<Value> {
    let (messages, rest) = std::mem::take(&mut server.backlog)
        .into_iter()
        .partition(|m| m["method"] == "notifications/message");
    server.backlog = rest;
    messages
}

/// A `tools/call` of `(tool, arguments)`, with `_meta` when given.
async fn call(
    server: &mut RawServer,
    id: i64,
    (tool, arguments): (&str, Value),
    meta: Option<Value>,
) -> Value {
    let mut params = json!({ "name": tool, "arguments": arguments });
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    server.request(id, "tools/call", params).await
}

async fn set_level(server: &mut RawServer, id: i64, level: &str) {
    let answer = server
        .request(id, "logging/setLevel", json!({ "level": level }))
        .await;
    assert_eq!(answer["result"], json!({}), "{answer}");
}

/// A call that succeeds without SnowLuma, and one that fails (an action the catalog lacks).
fn succeeding() -> (&'static str, Value) {
    ("search_actions", json!({ "query": "禁言" }))
}

fn failing() -> (&'static str, Value) {
    ("get_action", json!({ "name": "no_such_action_xyz" }))
}

async fn succeeding_call(server: &mut RawServer, id: i64) -> Value {
    call(server, id, succeeding(), None).await
}

async fn failing_call(server: &mut RawServer, id: i64) -> Value {
    call(server, id, failing(), None).await
}

/// A 2026-07-28 call, with its own log level in `_meta` when one is given.
async fn modern_call(
    server: &mut RawServer,
    id: i64,
    what: (&str, Value),
    level: Option<&str>,
) -> Value {
    let mut meta = modern_meta(json!({}));
    if let Some(level) = level {
        meta["io.modelcontextprotocol/logLevel"] = json!(level);
    }
    call(server, id, what, Some(meta)).await
}

#[tokio::test]
async fn initialize_and_discover_offer_logging_and_set_level_is_legacy_only() {
    let mut server = RawServer::spawn(&[]);
    let init = server
        .request(
            0,
            "initialize",
            json!({ "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": { "name": "raw-test", "version": "1" } }),
        )
        .await;
    assert_eq!(
        init["result"]["capabilities"]["logging"],
        json!({}),
        "{init}"
    );

    let mut modern = RawServer::spawn(&[]);
    let discover = modern
        .request(
            1,
            "server/discover",
            json!({ "_meta": modern_meta(json!({})) }),
        )
        .await;
    assert_eq!(
        discover["result"]["capabilities"]["logging"],
        json!({}),
        "{discover}"
    );
    let refused = modern
        .request(
            2,
            "logging/setLevel",
            json!({ "level": "info", "_meta": modern_meta(json!({})) }),
        )
        .await;
    assert_eq!(refused["error"]["code"], -32601, "{refused}");
}

/// The one message of a successful `search_actions` call logged at info: its params.
fn the_search_logged<'a>(messages: &'a [Value], traceparent: &Value) -> &'a Value {
    assert_eq!(messages.len(), 1, "{messages:?}");
    let params = &messages[0]["params"];
    assert_eq!(params["level"], "info");
    assert_eq!(params["logger"], "snowluma-mcp");
    assert_eq!(params["data"]["tool"], "search_actions");
    assert_eq!(params["data"]["outcome"], "success");
    assert_eq!(params["data"]["traceparent"], *traceparent);
    params
}

#[tokio::test]
async fn nothing_is_sent_before_set_level_then_one_info_message_per_call() {
    let mut server = RawServer::spawn(&[]);
    server.initialize_legacy(json!({})).await;
    let answer = succeeding_call(&mut server, 1).await;
    assert!(answer["result"].is_object(), "{answer}");
    assert_eq!(take_log_messages(&mut server), Vec::<Value>::new());

    set_level(&mut server, 2, "info").await;
    let answer = succeeding_call(&mut server, 3).await;
    let traceparent = answer["result"]["_meta"]["traceparent"].clone();
    assert!(traceparent.is_string(), "{answer}");
    let messages = take_log_messages(&mut server);
    let params = the_search_logged(&messages, &traceparent);
    assert_eq!(params["data"]["kind"], Value::Null);
    assert!(params["data"]["duration_ms"].as_f64().is_some(), "{params}");
    // The call's facts and nothing else: never its params (the query) or results.
    let mut keys: Vec<&str> = params["data"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["duration_ms", "kind", "outcome", "tool", "traceparent"]
    );
    assert!(!messages[0].to_string().contains("禁言"));

    // A 2026-07-28 request on the same connection is unchanged: no message.
    let modern = modern_call(&mut server, 4, succeeding(), None).await;
    assert!(modern["result"].is_object(), "{modern}");
    assert_eq!(take_log_messages(&mut server), Vec::<Value>::new());
}

#[tokio::test]
async fn the_session_level_filters_messages() {
    let mut server = RawServer::spawn(&[]);
    server.initialize_legacy(json!({})).await;
    set_level(&mut server, 1, "error").await;

    let answer = succeeding_call(&mut server, 2).await;
    assert!(answer["result"].is_object(), "{answer}");
    assert_eq!(take_log_messages(&mut server), Vec::<Value>::new());

    let answer = failing_call(&mut server, 3).await;
    assert_eq!(
        answer["result"]["structuredContent"]["diagnostics"]["outcome"], "failed",
        "{answer}"
    );
    let messages = take_log_messages(&mut server);
    assert_eq!(messages.len(), 1, "{messages:?}");
    let params = &messages[0]["params"];
    assert_eq!(params["level"], "error");
    assert_eq!(params["data"]["tool"], "get_action");
    assert_eq!(params["data"]["outcome"], "failed");
    assert_eq!(
        params["data"]["kind"],
        answer["result"]["structuredContent"]["diagnostics"]["kind"]
    );
    assert!(!messages[0].to_string().contains("no_such_action_xyz"));

    // Raising the bar above error silences failures too.
    set_level(&mut server, 4, "critical").await;
    failing_call(&mut server, 5).await;
    assert_eq!(take_log_messages(&mut server), Vec::<Value>::new());
}

#[tokio::test]
async fn a_2026_request_asks_for_its_own_log_message() {
    let mut server = RawServer::spawn(&[]);
    // No level in `_meta`: no message.
    let answer = modern_call(&mut server, 1, succeeding(), None).await;
    assert!(answer["result"].is_object(), "{answer}");
    assert_eq!(take_log_messages(&mut server), Vec::<Value>::new());

    // `info` on this request: its call's facts, once.
    let answer = modern_call(&mut server, 2, succeeding(), Some("info")).await;
    let messages = take_log_messages(&mut server);
    the_search_logged(&messages, &answer["result"]["_meta"]["traceparent"]);
    assert!(!messages[0].to_string().contains("禁言"));

    // The level is this request's alone: the next request without one gets nothing.
    modern_call(&mut server, 3, succeeding(), None).await;
    assert_eq!(take_log_messages(&mut server), Vec::<Value>::new());

    // `error` filters a success out and lets a failure through.
    modern_call(&mut server, 4, succeeding(), Some("error")).await;
    assert_eq!(take_log_messages(&mut server), Vec::<Value>::new());
    let answer = modern_call(&mut server, 5, failing(), Some("error")).await;
    assert_eq!(
        answer["result"]["structuredContent"]["diagnostics"]["outcome"], "failed",
        "{answer}"
    );
    let messages = take_log_messages(&mut server);
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert_eq!(messages[0]["params"]["level"], "error");
    assert_eq!(messages[0]["params"]["data"]["tool"], "get_action");
}
