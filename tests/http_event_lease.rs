//! Event-resource leases of 2026-07-28 (stateless) HTTP clients (issue 37), end to end over
//! loopback HTTP with a short SNOWLUMA_MCP_EVENT_LEASE_SECS: reads keep a resource alive past
//! its lease; a client that stops reading has it released, and a later read answers
//! `unknown_resource` saying the lease ran out.

#[path = "support/fake_snowluma_ws.rs"]
mod fake_snowluma_ws;
#[path = "support/http_server.rs"]
mod http_server;
#[path = "support/raw_client.rs"]
mod raw_client;

use std::time::{Duration, Instant};

use fake_snowluma_ws::{FakeEventSocket, WsOptions};
use http_server::{HttpServer, TOKEN, post};
use serde_json::{Value, json};

const LEASE_SECS: u64 = 2;

async fn modern(url: &str, id: i64, method: &str, name: Option<&str>, mut params: Value) -> Value {
    params["_meta"] = raw_client::modern_meta(json!({}));
    let mut headers = vec![
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
    ];
    if let Some(name) = name {
        headers.push(("mcp-name", name));
    }
    let reply = post(
        url,
        Some(TOKEN),
        &headers,
        &json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }),
    )
    .await;
    assert_eq!(reply.status, 200, "{method}: {}", reply.body);
    reply.json()
}

async fn read(url: &str, uri: &str) -> Value {
    modern(
        url,
        2,
        "tools/call",
        Some("read_events"),
        json!({ "name": "read_events", "arguments": { "uri": uri, "wait_ms": 0 } }),
    )
    .await["result"]["structuredContent"]["diagnostics"]
        .clone()
}

async fn listed(url: &str) -> Vec<String> {
    modern(url, 3, "resources/list", None, json!({})).await["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["uri"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn reads_renew_the_lease_and_an_abandoned_resource_is_released() {
    let ws = FakeEventSocket::start(WsOptions::default());
    let lease = LEASE_SECS.to_string();
    let server = HttpServer::start(
        &[
            ("SNOWLUMA_MCP_HTTP_TOKEN", TOKEN),
            ("SNOWLUMA_MCP_MODE", "read"),
            ("SNOWLUMA_MCP_ENDPOINT", "http://127.0.0.1:9/"),
            ("SNOWLUMA_MCP_EVENTS_URL", &ws.url),
            ("SNOWLUMA_MCP_EVENT_LEASE_SECS", &lease),
        ],
        &[],
    )
    .await;
    let url = &server.url;
    let sub = modern(
        url,
        1,
        "tools/call",
        Some("subscribe_events"),
        json!({ "name": "subscribe_events", "arguments": { "self_id": 10001 } }),
    )
    .await;
    let uri = sub["result"]["structuredContent"]["result"]["uri"]
        .as_str()
        .unwrap_or_else(|| panic!("{sub}"))
        .to_string();
    // Reading keeps it: reads for twice the lease, each well inside it, all succeed.
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(2 * LEASE_SECS) {
        assert_eq!(read(url, &uri).await["outcome"], "success");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(listed(url).await.contains(&uri));
    // The client goes away (listing does not renew): released, within a bound only a hang
    // reaches.
    let deadline = Instant::now() + Duration::from_secs(60);
    while listed(url).await.contains(&uri) {
        assert!(
            Instant::now() < deadline,
            "the abandoned resource was never released"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let late = read(url, &uri).await;
    assert_eq!(late["kind"], "unknown_resource", "{late}");
    let message = late["message"].as_str().unwrap();
    assert!(message.contains("lease ran out"), "{message}");
    assert!(
        message.contains("SNOWLUMA_MCP_EVENT_LEASE_SECS"),
        "{message}"
    );
    let resource = modern(url, 4, "resources/read", Some(&uri), json!({ "uri": uri })).await;
    assert!(
        resource["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("lease ran out")),
        "{resource}"
    );
    server.stop().await;
}
