//! Per-principal fair shares (issue 37), end to end over loopback HTTP: with two principals
//! and the default SNOWLUMA_MCP_PRINCIPAL_SHARE_PERCENT (50), one principal can run at most
//! two of the four background-task slots; its third start is refused with `task_limit`
//! naming the share, and the other principal still starts its own.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/gated_relay.rs"]
mod gated_relay;
#[path = "support/http_server.rs"]
mod http_server;
#[path = "support/raw_client.rs"]
mod raw_client;

use std::os::unix::fs::PermissionsExt;

use fake_snowluma::FakeSnowLuma;
use gated_relay::GatedRelay;
use http_server::{HttpServer, post};
use serde_json::{Value, json};

const ALICE: &str = "alice-share-token-19";
const BOB: &str = "bob-share-token-27";

async fn start_task(url: &str, token: &str, id: i64, file: &str) -> Value {
    let params = json!({
        "name": "invoke_action_background",
        "arguments": { "action": "download_file_stream", "params": { "file": file } },
        "_meta": raw_client::modern_meta(json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } })),
    });
    let reply = post(
        url,
        Some(token),
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "invoke_action_background"),
        ],
        &json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params }),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.json()
}

#[tokio::test]
async fn one_principal_filling_its_task_share_leaves_the_other_working() {
    let fake = FakeSnowLuma::start(None).await;
    // Transfers wait in the relay, so started tasks keep their slots during the checks.
    let relay = GatedRelay::start(fake.port).await;
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, format!("alice {ALICE}\nbob {BOB}\n")).unwrap();
    std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o600)).unwrap();
    let downloads = dir.path().join("downloads");
    let tasks = dir.path().join("tasks");
    let server = HttpServer::start(
        &[
            ("SNOWLUMA_MCP_HTTP_TOKENS_FILE", tokens.to_str().unwrap()),
            ("SNOWLUMA_MCP_MODE", "write"),
            ("SNOWLUMA_MCP_ENDPOINT", &relay.url),
            ("SNOWLUMA_MCP_DOWNLOAD_DIR", downloads.to_str().unwrap()),
            ("SNOWLUMA_MCP_TASK_DIR", tasks.to_str().unwrap()),
        ],
        &[],
    )
    .await;
    let url = &server.url;
    let files: Vec<String> = (0..4)
        .map(|n| fake.add_generated_file(&format!("share-{n}.bin"), 100_000 + n, n as u8))
        .collect();
    for (n, file) in files.iter().take(2).enumerate() {
        let started = start_task(url, ALICE, 1 + n as i64, file).await;
        assert_eq!(started["result"]["resultType"], "task", "{started}");
    }
    let refused = start_task(url, ALICE, 3, &files[2]).await;
    let diagnostics = &refused["result"]["structuredContent"]["diagnostics"];
    assert_eq!(diagnostics["kind"], "task_limit", "{refused}");
    let message = diagnostics["message"].as_str().unwrap();
    assert!(
        message.contains("SNOWLUMA_MCP_PRINCIPAL_SHARE_PERCENT") && message.contains("50 %"),
        "{message}"
    );
    let other = start_task(url, BOB, 4, &files[3]).await;
    assert_eq!(other["result"]["resultType"], "task", "{other}");
    relay.open();
    server.stop().await;
}
