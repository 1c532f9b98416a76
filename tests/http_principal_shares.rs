//! Per-principal fair shares (issue 37), end to end over loopback HTTP: with two principals
//! and the default SNOWLUMA_MCP_PRINCIPAL_SHARE_PERCENT (50), one principal can run at most
//! two of the four background-task slots; its third start is refused with `task_limit`
//! naming the share, and the other principal still starts its own. A background transfer
//! waits for a stream slot within its principal's share, leaving the other slot to others.

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

/// Alice and Bob from a tokens file, write mode, tasks, SnowLuma behind `relay`.
async fn two_principal_server(relay: &GatedRelay) -> (tempfile::TempDir, HttpServer) {
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
    (dir, server)
}

/// A background download of `file` as `token`.
async fn start_task(url: &str, token: &str, id: i64, file: &str) -> Value {
    let args = json!({ "action": "download_file_stream", "params": { "file": file } });
    let params = json!({ "name": "invoke_action_background", "arguments": args });
    modern(url, token, id, "tools/call", params).await
}

#[tokio::test]
async fn one_principal_filling_its_task_share_leaves_the_other_working() {
    let fake = FakeSnowLuma::start(None).await;
    // Transfers wait in the relay, so started tasks keep their slots during the checks.
    let relay = GatedRelay::start(fake.port).await;
    let (_dir, server) = two_principal_server(&relay).await;
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

/// A 2026-07-28 request as `token` (the routing headers name the tool or task).
async fn modern(url: &str, token: &str, id: i64, method: &str, params: Value) -> Value {
    let name = ["name", "taskId"]
        .iter()
        .find_map(|key| params[*key].as_str())
        .unwrap_or_default()
        .to_string();
    let mut params = params;
    params["_meta"] =
        raw_client::modern_meta(json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } }));
    let reply = post(
        url,
        Some(token),
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", method),
            ("mcp-name", &name),
        ],
        &json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }),
    )
    .await;
    assert_eq!(reply.status, 200, "{method}: {}", reply.body);
    reply.json()
}

#[tokio::test]
async fn background_transfers_wait_within_their_principals_stream_share() {
    let fake = FakeSnowLuma::start(None).await;
    // Transfers wait in the relay, so a started one keeps its slot during the checks.
    let relay = GatedRelay::start(fake.port).await;
    let (_dir, server) = two_principal_server(&relay).await;
    let url = server.url.clone();
    let files: Vec<String> = (0..3)
        .map(|n| fake.add_generated_file(&format!("wait-{n}.bin"), 70_000 + n, n as u8))
        .collect();
    // Alice starts two background transfers (her task share): one takes her one stream slot
    // (of two), the other waits for it rather than taking the second slot.
    let mut alice = Vec::new();
    for (n, file) in files.iter().take(2).enumerate() {
        let started = start_task(&url, ALICE, 1 + n as i64, file).await;
        assert_eq!(started["result"]["resultType"], "task", "{started}");
        alice.push(started["result"]["taskId"].as_str().unwrap().to_string());
    }
    let mut id = 10;
    let mut waiting = None;
    for _ in 0..600 {
        for task in &alice {
            id += 1;
            let got = modern(&url, ALICE, id, "tasks/get", json!({ "taskId": task })).await;
            let status = got["result"]["statusMessage"].as_str().unwrap_or_default();
            if status.contains("waiting for a transfer slot") {
                waiting = Some(status.to_string());
            }
        }
        if waiting.is_some() && fake.requests_for("download_file_stream").len() == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let waiting = waiting.expect("neither of alice's background transfers waited for her share");
    assert!(
        waiting.contains("already runs")
            && waiting.contains("SNOWLUMA_MCP_PRINCIPAL_SHARE_PERCENT"),
        "{waiting}"
    );
    // Bob's transfer takes the other slot and reaches SnowLuma.
    let bob = {
        let url = url.clone();
        let file = files[2].clone();
        tokio::spawn(async move {
            let args = json!({ "action": "download_file_stream", "params": { "file": file } });
            modern(
                &url,
                BOB,
                2,
                "tools/call",
                json!({ "name": "invoke_action", "arguments": args }),
            )
            .await
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while fake.requests_for("download_file_stream").len() < 2 {
        assert!(
            !bob.is_finished() && std::time::Instant::now() < deadline,
            "bob's transfer did not start while alice's second one waited"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    relay.open();
    let bob = bob.await.unwrap();
    let outcome = &bob["result"]["structuredContent"]["diagnostics"]["outcome"];
    assert_eq!(outcome, "success", "{bob}");
    // Both of Alice's transfers finish, the waiting one after the other.
    for task in &alice {
        let mut done = Value::Null;
        for _ in 0..600 {
            id += 1;
            done = modern(&url, ALICE, id, "tasks/get", json!({ "taskId": task })).await;
            if done["result"]["status"] != "working" {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        assert_eq!(done["result"]["status"], "completed", "{done}");
    }
    server.stop().await;
}
