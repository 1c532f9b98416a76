//! Event resources over the Streamable HTTP transport: two legacy sessions keep theirs
//! apart, ending a session releases them, and cancelling a waiting read_events ends it in
//! both generations.

#[path = "support/fake_snowluma_ws.rs"]
mod fake_snowluma_ws;
#[path = "support/http_server.rs"]
mod http_server;
#[path = "support/http_transport_helpers.rs"]
mod http_transport_helpers;
#[path = "support/raw_client.rs"]
mod raw_client;
#[path = "support/rmcp_client.rs"]
mod rmcp_client;

use std::time::Duration;

use rmcp::model::ReadResourceRequestParams;
use serde_json::{Value, json};

use fake_snowluma_ws::{FakeEventSocket, WsOptions};
use http_server::{Exchange, HttpServer, TOKEN, in_session, open_session, post, send};
use http_transport_helpers::*;

#[tokio::test]
async fn two_legacy_sessions_keep_their_event_resources_apart() {
    let ws = FakeEventSocket::start(WsOptions::default());
    let server = HttpServer::start(
        &[
            ("SNOWLUMA_MCP_HTTP_TOKEN", TOKEN),
            ("SNOWLUMA_MCP_MODE", "read"),
            ("SNOWLUMA_MCP_ENDPOINT", "http://127.0.0.1:9/"),
            ("SNOWLUMA_MCP_EVENTS_URL", &ws.url),
        ],
        &[],
    )
    .await;
    let a = rmcp_client::connect_to((), rmcp_transport(&server.url, TOKEN), false).await;
    let b = rmcp_client::connect_to((), rmcp_transport(&server.url, TOKEN), false).await;
    let (_, sub) = rmcp_client::call_listed(
        &a,
        "subscribe_events",
        json!({ "self_id": 10001, "group_ids": [20001] }),
    )
    .await;
    let uri = sub["result"]["uri"].as_str().expect("uri").to_string();
    let listed_a = a.list_all_resources().await.unwrap();
    assert!(listed_a.iter().any(|r| r.uri == uri));
    let listed_b = b.list_all_resources().await.unwrap();
    assert!(
        !listed_b.iter().any(|r| r.uri == uri),
        "B sees A's resource"
    );
    assert!(
        b.read_resource(ReadResourceRequestParams::new(uri.clone()))
            .await
            .is_err()
    );
    let (_, read_b) = rmcp_client::call_listed(&b, "read_events", json!({ "uri": uri })).await;
    assert_eq!(read_b["diagnostics"]["outcome"], "failed", "{read_b}");
    assert!(
        a.read_resource(ReadResourceRequestParams::new(uri.clone()))
            .await
            .is_ok()
    );
    // Ending A's session releases its resources on the hub.
    a.cancel().await.unwrap();
    b.cancel().await.unwrap();
    server.stop().await;
}

#[tokio::test]
async fn ending_a_session_releases_its_event_resources() {
    let ws = FakeEventSocket::start(WsOptions::default());
    let server = HttpServer::start(
        &[
            ("SNOWLUMA_MCP_HTTP_TOKEN", TOKEN),
            ("SNOWLUMA_MCP_MODE", "read"),
            ("SNOWLUMA_MCP_ENDPOINT", "http://127.0.0.1:9/"),
            ("SNOWLUMA_MCP_EVENTS_URL", &ws.url),
        ],
        &["--http-idle-secs", "1"],
    )
    .await;
    let url = &server.url;
    let subscribe = json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
        "name": "subscribe_events", "arguments": { "self_id": 10001, "group_ids": [20001] } } });
    // DELETE releases the session's resources, closing the shared socket with the last one.
    let session = open_session(url, Some(TOKEN)).await;
    let sub = in_session(url, &session, &subscribe).await;
    assert!(
        sub.json()["result"]["structuredContent"]["result"]["uri"].is_string(),
        "{}",
        sub.body
    );
    assert_eq!(ws.open_connections(), 1);
    send(
        reqwest::Method::DELETE,
        url,
        Some(TOKEN),
        &[("mcp-session-id", &session)],
        None,
    )
    .await;
    wait_for(
        || ws.open_connections() == 0,
        "DELETE did not release the event resource",
    )
    .await;
    // So does idle expiry.
    let session = open_session(url, Some(TOKEN)).await;
    in_session(url, &session, &subscribe).await;
    wait_for(
        || ws.open_connections() == 1,
        "the subscription did not connect",
    )
    .await;
    wait_for(
        || ws.open_connections() == 0,
        "idle expiry did not release the event resource",
    )
    .await;
    assert_eq!(in_session(url, &session, &tools_list(6)).await.status, 404);
    server.stop().await;
}

async fn wait_for(mut condition: impl FnMut() -> bool, what: &str) {
    for _ in 0..600 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what}");
}

/// A `read_events` call with the given wait, as a JSON-RPC request.
fn read_events(id: i64, uri: &str, wait_ms: u64, modern: bool) -> Value {
    let mut params =
        json!({ "name": "read_events", "arguments": { "uri": uri, "wait_ms": wait_ms } });
    if modern {
        params["_meta"] = raw_client::modern_meta(json!({}));
    }
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params })
}

/// Sends `body` in a legacy session, or as a stateless 2026-07-28 request.
async fn call_in(url: &str, session: Option<&str>, body: &Value) -> Exchange {
    match session {
        Some(session) => in_session(url, session, body).await,
        None => {
            let name = body["params"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            post(
                url,
                Some(TOKEN),
                &[
                    ("mcp-protocol-version", "2026-07-28"),
                    ("mcp-method", "tools/call"),
                    ("mcp-name", &name),
                ],
                body,
            )
            .await
        }
    }
}

fn kind_of(reply: &Exchange) -> Value {
    reply.json()["result"]["structuredContent"]["diagnostics"]["kind"].clone()
}

#[tokio::test]
async fn cancelling_a_waiting_call_ends_it_in_both_generations() {
    let ws = FakeEventSocket::start(WsOptions::default());
    let server = HttpServer::start(
        &[
            ("SNOWLUMA_MCP_HTTP_TOKEN", TOKEN),
            ("SNOWLUMA_MCP_MODE", "read"),
            ("SNOWLUMA_MCP_ENDPOINT", "http://127.0.0.1:9/"),
            ("SNOWLUMA_MCP_EVENTS_URL", &ws.url),
        ],
        &[],
    )
    .await;
    let url = server.url.clone();
    for modern in [false, true] {
        let session = if modern {
            None
        } else {
            Some(open_session(&url, Some(TOKEN)).await)
        };
        let mut subscribe = json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
            "name": "subscribe_events", "arguments": { "self_id": 10001, "group_ids": [20001] } } });
        if modern {
            subscribe["params"]["_meta"] = raw_client::modern_meta(json!({}));
        }
        let sub = call_in(&url, session.as_deref(), &subscribe).await;
        let uri = sub.json()["result"]["structuredContent"]["result"]["uri"]
            .as_str()
            .unwrap_or_else(|| panic!("{}", sub.body))
            .to_string();
        let waiting = {
            let (url, session, body) = (
                url.clone(),
                session.clone(),
                read_events(7, &uri, 30_000, modern),
            );
            tokio::spawn(async move { call_in(&url, session.as_deref(), &body).await })
        };
        // While the first read waits, a second one is refused.
        let mut busy = false;
        for _ in 0..50 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if kind_of(&call_in(&url, session.as_deref(), &read_events(8, &uri, 100, modern)).await)
                == "wait_in_progress"
            {
                busy = true;
                break;
            }
        }
        assert!(busy, "modern={modern}: the first read never waited");
        if let Some(session) = &session {
            // Legacy: notifications/cancelled, as over stdio.
            let cancel = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 7 } });
            assert_eq!(in_session(&url, session, &cancel).await.status, 202);
        } else {
            // 2026-07-28: closing the response cancels the request.
            waiting.abort();
        }
        let mut ended = false;
        for _ in 0..50 {
            let probe = call_in(&url, session.as_deref(), &read_events(9, &uri, 100, modern)).await;
            if probe.json()["result"]["structuredContent"]["diagnostics"]["outcome"] == "success" {
                ended = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(ended, "modern={modern}: the cancelled read kept waiting");
        let release = json!({ "jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {
            "name": "unsubscribe_events", "arguments": { "uri": uri },
            "_meta": if modern { raw_client::modern_meta(json!({})) } else { json!({}) } } });
        let released = call_in(&url, session.as_deref(), &release).await;
        assert_eq!(
            released.json()["result"]["structuredContent"]["result"]["released"],
            uri.as_str(),
            "{}",
            released.body
        );
    }
    server.stop().await;
}
