//! The audit log's principal over Streamable HTTP: a call through the single HTTP token is
//! recorded as `default`, one through a tokens file's token as that token's name (stdio
//! records the session id, see guard_audit.rs).

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/http_server.rs"]
mod http_server;

use fake_snowluma::FakeSnowLuma;
use http_server::{HttpServer, TOKEN, in_session, open_session};
use serde_json::{Value, json};

#[tokio::test]
async fn http_calls_are_recorded_as_the_default_principal() {
    audited_send(&[("SNOWLUMA_MCP_HTTP_TOKEN", TOKEN)], TOKEN, "default").await;
}

#[tokio::test]
async fn a_named_principals_calls_are_recorded_under_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, format!("ops-bot {TOKEN}\n")).unwrap();
    std::fs::set_permissions(&tokens, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let tokens = tokens.to_str().unwrap();
    audited_send(
        &[("SNOWLUMA_MCP_HTTP_TOKENS_FILE", tokens)],
        TOKEN,
        "ops-bot",
    )
    .await;
}

/// One audited send through a legacy session opened with `token`, recorded as `principal`.
async fn audited_send(auth: &[(&str, &str)], token: &str, principal: &str) {
    let fake = FakeSnowLuma::start(Some("onebot-token")).await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let mut env = auth.to_vec();
    env.extend_from_slice(&[
        ("SNOWLUMA_MCP_MODE", "write"),
        ("SNOWLUMA_MCP_ENDPOINT", fake.url.as_str()),
        ("SNOWLUMA_MCP_TOKEN", "onebot-token"),
        ("SNOWLUMA_MCP_AUDIT_LOG", log.to_str().unwrap()),
    ]);
    let server = HttpServer::start(&env, &[]).await;
    let session = open_session(&server.url, Some(token)).await;
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
    assert_eq!(entries[0]["principal"], principal);
    assert_eq!(entries[0]["targets"], json!(["user:30001"]));
    assert!(!text.contains(TOKEN) && !text.contains("onebot-token"));
    assert_eq!(fake.requests_for("send_private_msg").len(), 1);
    server.stop().await;
}
