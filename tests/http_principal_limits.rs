//! Per-principal shares of the process-wide limits other than task slots (issue 37), and
//! paged results owned by their principal, end to end over loopback HTTP with two principals
//! from a tokens file and the shipped SNOWLUMA_MCP_PRINCIPAL_SHARE_PERCENT (50): one principal
//! fills its share of event resources (8 of 16), pending input prompts (128 of 256) or stream
//! slots (1 of 2); its next one is refused with the limit's own kind naming the share, and the
//! other principal still gets one. A `read_more` continuation of one principal's stateless
//! requests, used by the other, is refused exactly like a made-up one.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/fake_snowluma_ws.rs"]
mod fake_snowluma_ws;
#[path = "support/gated_relay.rs"]
mod gated_relay;
#[path = "support/http_server.rs"]
mod http_server;
#[path = "support/raw_client.rs"]
mod raw_client;

use std::os::unix::fs::PermissionsExt;

use fake_snowluma::FakeSnowLuma;
use fake_snowluma_ws::{FakeEventSocket, WsOptions};
use gated_relay::GatedRelay;
use http_server::{HttpServer, post};
use serde_json::{Value, json};

const ALICE: &str = "alice-limits-token-3b";
const BOB: &str = "bob-limits-token-8e";

async fn two_principal_server(extra: &[(&str, &str)]) -> (tempfile::TempDir, HttpServer) {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, format!("alice {ALICE}\nbob {BOB}\n")).unwrap();
    std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o600)).unwrap();
    let tokens = tokens.to_str().unwrap().to_string();
    let mut env = vec![("SNOWLUMA_MCP_HTTP_TOKENS_FILE", tokens.as_str())];
    env.extend_from_slice(extra);
    let server = HttpServer::start(&env, &[]).await;
    (dir, server)
}

/// A stateless 2026-07-28 `tools/call` as `token`, declaring form elicitation.
async fn call(url: &str, token: &str, id: i64, tool: &str, args: Value) -> Value {
    let params = json!({
        "name": tool,
        "arguments": args,
        "_meta": raw_client::modern_meta(json!({ "elicitation": { "form": {} } })),
    });
    let reply = post(
        url,
        Some(token),
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", tool),
        ],
        &json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params }),
    )
    .await;
    assert_eq!(reply.status, 200, "{tool}: {}", reply.body);
    reply.json()
}

fn diagnostics(reply: &Value) -> &Value {
    &reply["result"]["structuredContent"]["diagnostics"]
}

/// The refusal keeps the limit's kind and names the share.
fn assert_share_refusal(reply: &Value, kind: &str) {
    assert_eq!(diagnostics(reply)["kind"], kind, "{reply}");
    let message = diagnostics(reply)["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("its share") && message.contains("SNOWLUMA_MCP_PRINCIPAL_SHARE_PERCENT"),
        "{message}"
    );
}

#[tokio::test]
async fn one_principal_filling_its_event_share_leaves_the_other_subscribing() {
    let ws = FakeEventSocket::start(WsOptions::default());
    let (_dir, server) = two_principal_server(&[
        ("SNOWLUMA_MCP_MODE", "read"),
        ("SNOWLUMA_MCP_ENDPOINT", "http://127.0.0.1:9/"),
        ("SNOWLUMA_MCP_EVENTS_URL", &ws.url),
    ])
    .await;
    let url = &server.url;
    let subscribe = |token: &'static str, n: i64| async move {
        call(
            url,
            token,
            n,
            "subscribe_events",
            json!({ "self_id": 10001, "group_ids": [20000 + n] }),
        )
        .await
    };
    for n in 0..8 {
        let sub = subscribe(ALICE, n).await;
        assert!(
            sub["result"]["structuredContent"]["result"]["uri"].is_string(),
            "alice's resource {n}: {sub}"
        );
    }
    assert_share_refusal(&subscribe(ALICE, 8).await, "events_limit");
    let bob = subscribe(BOB, 9).await;
    assert!(
        bob["result"]["structuredContent"]["result"]["uri"].is_string(),
        "{bob}"
    );
    server.stop().await;
}

#[tokio::test]
async fn one_principal_filling_its_prompt_share_leaves_the_other_asked() {
    let (_dir, server) = two_principal_server(&[
        ("SNOWLUMA_MCP_MODE", "read"),
        ("SNOWLUMA_MCP_ENDPOINT", "http://127.0.0.1:9/"),
    ])
    .await;
    let url = &server.url;
    // get_group_info without its group_id: the server asks for it and keeps the prompt open.
    let ask = |token: &'static str, n: i64| async move {
        call(
            url,
            token,
            n,
            "query_action_with_input",
            json!({ "action": "get_group_info", "params": {} }),
        )
        .await
    };
    for n in 0..128 {
        let asked = ask(ALICE, n).await;
        assert!(
            asked["result"]["requestState"].is_string(),
            "alice's prompt {n}: {asked}"
        );
    }
    assert_share_refusal(&ask(ALICE, 128).await, "input_limit");
    let bob = ask(BOB, 129).await;
    assert!(bob["result"]["requestState"].is_string(), "{bob}");
    server.stop().await;
}

#[tokio::test]
async fn one_principal_filling_its_stream_share_leaves_the_other_transferring() {
    let fake = FakeSnowLuma::start(None).await;
    // Transfers wait in the relay, so a started one keeps its slot during the checks.
    let relay = GatedRelay::start(fake.port).await;
    let dir = tempfile::tempdir().unwrap();
    let downloads = dir.path().join("downloads");
    let (_tokens, server) = two_principal_server(&[
        ("SNOWLUMA_MCP_MODE", "write"),
        ("SNOWLUMA_MCP_ENDPOINT", &relay.url),
        ("SNOWLUMA_MCP_DOWNLOAD_DIR", downloads.to_str().unwrap()),
    ])
    .await;
    let url = server.url.clone();
    let files: Vec<String> = (0..3)
        .map(|n| fake.add_generated_file(&format!("slot-{n}.bin"), 50_000 + n, n as u8))
        .collect();
    let download = |token: &'static str, n: usize| {
        let url = url.clone();
        let file = files[n].clone();
        async move {
            call(
                &url,
                token,
                n as i64,
                "invoke_action",
                json!({ "action": "download_file_stream", "params": { "file": file } }),
            )
            .await
        }
    };
    // Alice starts two transfers: whichever comes second finds her share (1 of 2 slots) full
    // and is refused at once, while the other waits in the relay.
    let mut first = tokio::spawn(download(ALICE, 0));
    let mut second = tokio::spawn(download(ALICE, 1));
    let (refused, mut waiting) = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        tokio::select! {
            done = &mut first => (done.unwrap(), second),
            done = &mut second => (done.unwrap(), first),
        }
    })
    .await
    .expect("neither of alice's transfers was refused within 60 s");
    assert_share_refusal(&refused, "busy");
    // Bob still gets the other slot: his transfer reaches SnowLuma while Alice's still holds
    // hers (the relay holds both answers).
    let bob = tokio::spawn(download(BOB, 2));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while fake.requests_for("download_file_stream").len() < 2 {
        assert!(
            !bob.is_finished() && std::time::Instant::now() < deadline,
            "bob's transfer did not start while alice held her share"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    relay.open();
    let bob = bob.await.unwrap();
    assert_eq!(diagnostics(&bob)["outcome"], "success", "{bob}");
    let alice = (&mut waiting).await.unwrap();
    assert_eq!(diagnostics(&alice)["outcome"], "success", "{alice}");
    server.stop().await;
}

#[tokio::test]
async fn a_stateless_continuation_is_foreign_to_another_principal() {
    let (_dir, server) = two_principal_server(&[]).await;
    let url = &server.url;
    let listing = call(url, ALICE, 1, "list_actions", json!({})).await;
    let continuation = diagnostics(&listing)["page"]["continuation"]
        .as_str()
        .unwrap_or_else(|| panic!("list_actions is paged over HTTP: {listing}"))
        .to_string();
    let read = |token: &'static str, continuation: String| async move {
        call(
            url,
            token,
            2,
            "read_more",
            json!({ "continuation": continuation }),
        )
        .await
    };
    let foreign = read(BOB, continuation.clone()).await;
    let made_up = read(BOB, "slp1.made-up".into()).await;
    assert_eq!(foreign["result"]["isError"], true, "{foreign}");
    assert_eq!(diagnostics(&foreign)["kind"], "invalid_arguments");
    assert_eq!(diagnostics(&foreign), diagnostics(&made_up));
    // Bob's attempt did not use it up: Alice reads her next page.
    let own = read(ALICE, continuation).await;
    assert_eq!(own["result"]["isError"], false, "{own}");
    server.stop().await;
}
