//! Idle legacy sessions at the session cap (issue 37), over raw loopback HTTP: most clients
//! never send DELETE, so at SNOWLUMA_MCP_HTTP_MAX_SESSIONS a new `initialize` ends the least
//! recently used idle session of the principal holding the most sessions; that session then
//! answers 404. Only when every session is busy does `initialize` get 503.

#[path = "support/http_server.rs"]
mod http_server;

use std::os::unix::fs::PermissionsExt;

use http_server::{HttpServer, initialize_body, post};
use serde_json::{Value, json};

const ALICE: &str = "alice-token-0b1c";
const BOB: &str = "bob-token-77ee";

fn list() -> Value {
    json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" })
}

async fn open(url: &str, token: &str) -> String {
    let reply = post(url, Some(token), &[], &initialize_body(1)).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.header("mcp-session-id").unwrap().to_string()
}

async fn use_session(url: &str, token: &str, session: &str) -> u16 {
    post(
        url,
        Some(token),
        &[
            ("mcp-session-id", session),
            ("mcp-protocol-version", "2025-11-25"),
        ],
        &list(),
    )
    .await
    .status
}

#[tokio::test]
async fn at_the_cap_the_busiest_principals_least_recently_used_idle_session_ends() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens");
    std::fs::write(&file, format!("alice {ALICE}\nbob {BOB}\n")).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let server = HttpServer::start(
        &[("SNOWLUMA_MCP_HTTP_TOKENS_FILE", file.to_str().unwrap())],
        &["--http-max-sessions", "3"],
    )
    .await;
    let url = &server.url;
    // Alice holds two sessions, Bob one. Alice's first is the older; her second is used
    // after Bob's, so the least recently used session overall (Bob's) is not the one to go.
    let alice_old = open(url, ALICE).await;
    let bob = open(url, BOB).await;
    let alice_new = open(url, ALICE).await;
    assert_eq!(use_session(url, BOB, &bob).await, 200);
    assert_eq!(use_session(url, ALICE, &alice_new).await, 200);
    // The cap is reached; a fourth client is served, not refused.
    let fourth = open(url, BOB).await;
    assert_eq!(
        use_session(url, ALICE, &alice_old).await,
        404,
        "alice's LRU session ends"
    );
    assert_eq!(use_session(url, ALICE, &alice_new).await, 200);
    assert_eq!(use_session(url, BOB, &bob).await, 200);
    assert_eq!(use_session(url, BOB, &fourth).await, 200);
    // The log line arrives through the server's stderr: wait for it, bounded.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !server
        .log()
        .contains("ended the least recently used idle session")
    {
        assert!(std::time::Instant::now() < deadline, "{}", server.log());
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }

    // When every session is busy (an open GET stream each), initialize gets 503.
    let mut streams = Vec::new();
    for (token, session) in [(ALICE, &alice_new), (BOB, &bob), (BOB, &fourth)] {
        let stream = http_server::client()
            .get(url.as_str())
            .bearer_auth(token)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", session.as_str())
            .header("mcp-protocol-version", "2025-11-25")
            .send()
            .await
            .unwrap();
        assert_eq!(stream.status(), 200);
        streams.push(stream);
    }
    let refused = post(url, Some(ALICE), &[], &initialize_body(9)).await;
    assert_eq!(refused.status, 503, "{}", refused.body);
    assert_eq!(
        refused.json()["error"]["data"]["limit"],
        "SNOWLUMA_MCP_HTTP_MAX_SESSIONS"
    );
    // A stream's end makes its session idle again: the next initialize is served.
    drop(streams);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let reply = post(url, Some(ALICE), &[], &initialize_body(10)).await;
        if reply.status == 200 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{}", reply.body);
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    server.stop().await;
}
