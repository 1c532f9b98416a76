//! MCP logging over a legacy Streamable HTTP session: `logging/setLevel` is per session and
//! the call's `notifications/message` goes out on the session's standalone GET stream (rmcp
//! routes a log message there: unlike progress, it names no request), while each POST keeps
//! its plain JSON answer. A 2026-07-28 request without a `_meta` log level is unchanged; one
//! with it gets its message on its own response stream, before its answer.

#[path = "support/http_server.rs"]
mod http_server;
#[path = "support/raw_client.rs"]
mod raw_client;

use std::time::Duration;

use http_server::{HttpServer, TOKEN, in_session, open_session, post};
use serde_json::{Value, json};

/// A session's standalone SSE stream (GET), read message by message.
struct EventStream {
    response: reqwest::Response,
    buffer: String,
}

impl EventStream {
    async fn open(url: &str, session: &str) -> EventStream {
        let response = http_server::client()
            .get(url)
            .bearer_auth(TOKEN)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        EventStream {
            response,
            buffer: String::new(),
        }
    }

    /// The next JSON-RPC message on the stream; a hang bound only.
    async fn next(&mut self) -> Value {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..end + 2).collect();
                let data: Vec<&str> = event
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                if let Ok(message) = serde_json::from_str(&data.join("\n")) {
                    return message;
                }
                continue;
            }
            let chunk = tokio::time::timeout(Duration::from_secs(60), self.response.chunk())
                .await
                .expect("no message on the GET stream within 60 s")
                .expect("GET stream read")
                .expect("GET stream ended");
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// The next `notifications/message` on the stream.
    async fn next_log(&mut self) -> Value {
        loop {
            let message = self.next().await;
            if message["method"] == "notifications/message" {
                return message;
            }
        }
    }
}

async fn set_level(url: &str, session: &str, id: i64, level: &str) {
    let set = in_session(
        url,
        session,
        &json!({ "jsonrpc": "2.0", "id": id, "method": "logging/setLevel",
                 "params": { "level": level } }),
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.body);
    assert_eq!(set.json()["result"], json!({}), "{}", set.body);
}

/// A successful legacy call in `session`; returns its traceparent.
async fn search(url: &str, session: &str, id: i64) -> Value {
    let reply = in_session(
        url,
        session,
        &json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                 "params": { "name": "search_actions", "arguments": { "query": "mute" } } }),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    // The POST's answer stays plain JSON: the log message is not on this stream.
    assert!(reply.content_type_is("application/json"), "{}", reply.body);
    let traceparent = reply.json()["result"]["_meta"]["traceparent"].clone();
    assert!(traceparent.is_string(), "{}", reply.body);
    traceparent
}

/// A 2026-07-28 `search_actions` call (no session) with `meta` as its `_meta`.
async fn modern_search(url: &str, id: i64, meta: Value) -> http_server::Exchange {
    post(
        url,
        Some(TOKEN),
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "search_actions"),
        ],
        &json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                 "params": { "name": "search_actions", "arguments": { "query": "mute" },
                             "_meta": meta } }),
    )
    .await
}

#[tokio::test]
async fn a_legacy_http_session_gets_its_call_log_after_set_level() {
    let server = HttpServer::start(&[("SNOWLUMA_MCP_HTTP_TOKEN", TOKEN)], &[]).await;
    let url = &server.url;
    let asking = open_session(url, Some(TOKEN)).await;
    let late = open_session(url, Some(TOKEN)).await;
    let mut asking_stream = EventStream::open(url, &asking).await;
    let mut late_stream = EventStream::open(url, &late).await;

    set_level(url, &asking, 2, "info").await;
    let traceparent = search(url, &asking, 3).await;
    let log = asking_stream.next_log().await;
    assert_eq!(log["params"]["level"], "info", "{log}");
    assert_eq!(log["params"]["logger"], "snowluma-mcp", "{log}");
    assert_eq!(log["params"]["data"]["tool"], "search_actions", "{log}");
    assert_eq!(log["params"]["data"]["traceparent"], traceparent, "{log}");

    // The level belongs to the session that set it: `late`'s first call, before it asks,
    // sends nothing, so the first message on its stream is its second call's.
    search(url, &late, 4).await;
    set_level(url, &late, 5, "info").await;
    let second = search(url, &late, 6).await;
    let log = late_stream.next_log().await;
    assert_eq!(log["params"]["data"]["traceparent"], second, "{log}");

    // A 2026-07-28 request is answered as before: plain JSON.
    let modern = modern_search(url, 7, raw_client::modern_meta(json!({}))).await;
    assert_eq!(modern.status, 200, "{}", modern.body);
    assert!(
        modern.content_type_is("application/json"),
        "{:?}",
        modern.headers
    );
    assert!(modern.json()["result"].is_object(), "{}", modern.body);
    server.stop().await;
}

#[tokio::test]
async fn a_2026_http_request_with_a_log_level_gets_its_message_on_its_own_stream() {
    let server = HttpServer::start(&[("SNOWLUMA_MCP_HTTP_TOKEN", TOKEN)], &[]).await;
    let mut meta = raw_client::modern_meta(json!({}));
    meta["io.modelcontextprotocol/logLevel"] = json!("info");
    let reply = modern_search(&server.url, 8, meta).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    // Something goes out before the answer, so the answer is an event stream: the log
    // message first, then the result, both on this request's own response.
    assert!(
        reply.content_type_is("text/event-stream"),
        "{:?}",
        reply.headers
    );
    let messages = reply.sse_messages();
    let log = messages
        .iter()
        .position(|m| m["method"] == "notifications/message")
        .unwrap_or_else(|| panic!("no log message: {}", reply.body));
    let answer = messages
        .iter()
        .position(|m| m["id"] == 8)
        .unwrap_or_else(|| panic!("no answer: {}", reply.body));
    assert!(log < answer, "{}", reply.body);
    let params = &messages[log]["params"];
    assert_eq!(params["level"], "info");
    assert_eq!(params["data"]["tool"], "search_actions");
    assert_eq!(
        params["data"]["traceparent"],
        messages[answer]["result"]["_meta"]["traceparent"]
    );
    server.stop().await;
}
