//! The audit log's principal over Streamable HTTP: there are no named principals yet, so a
//! call through the HTTP token is recorded as `default` (stdio records the session id, see
//! guard_audit.rs).

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/http_server.rs"]
mod http_server;

use fake_snowluma::FakeSnowLuma;
use http_server::{HttpServer, TOKEN, in_session, open_session};
use serde_json::{Value, json};

#[tokio::test]
async fn http_calls_are_recorded_as_the_default_principal() {
    let fake = FakeSnowLuma::start(Some("onebot-token")).await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let server = HttpServer::start(
        &[
            ("SNOWLUMA_MCP_HTTP_TOKEN", TOKEN),
            ("SNOWLUMA_MCP_MODE", "write"),
            ("SNOWLUMA_MCP_ENDPOINT", fake.url.as_str()),
            ("SNOWLUMA_MCP_TOKEN", "onebot-token"),
            ("SNOWLUMA_MCP_AUDIT_LOG", log.to_str().unwrap()),
        ],
        &[],
    )
    .await;
    let session = open_session(&server.url, Some(TOKEN)).await;
    let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "invoke_action",
        "arguments": { "action": "send_private_msg", "params": { "user_id": 30001, "message": "hi" } }
    } });
    let reply = in_session(&server.url, &session, &call).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let result = reply.json();
    assert_eq!(
        result["result"]["structuredContent"]["diagnostics"]["outcome"], "success",
        "{result}"
    );
    let text = std::fs::read_to_string(&log).unwrap();
    let entries: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(entries.len(), 1, "{text}");
    assert_eq!(entries[0]["principal"], "default");
    assert_eq!(entries[0]["targets"], json!(["user:30001"]));
    assert!(!text.contains(TOKEN) && !text.contains("onebot-token"));
    assert_eq!(fake.requests_for("send_private_msg").len(), 1);
    server.stop().await;
}
