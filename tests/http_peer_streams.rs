//! One peer's open `GET` event streams do not lock it out (issue 37), with the shipped
//! SNOWLUMA_MCP_HTTP_MAX_CONNS_PER_PEER (16), over real loopback TCP: a client that leaves
//! more standalone event streams open than its address may hold connections (the official
//! conformance runner leaves one per failed scenario) still gets its next request answered;
//! the server closes its oldest stream-only connection to make room.

#[path = "support/http_server.rs"]
mod http_server;

use std::time::Duration;

use http_server::{HttpServer, TOKEN, client, open_session};
use serde_json::json;

/// Generous: only a hang reaches it.
const HANG: Duration = Duration::from_secs(60);

#[tokio::test]
async fn open_event_streams_make_room_for_the_peers_next_request() {
    let server = HttpServer::start(&[("SNOWLUMA_MCP_HTTP_TOKEN", TOKEN)], &[]).await;
    let url = &server.url;
    // 16 sessions, each with its standalone event stream open on its own connection (one
    // client per stream: a client would otherwise reuse a connection for the next request).
    let mut streams = Vec::new();
    for _ in 0..16 {
        let session = open_session(url, Some(TOKEN)).await;
        let stream = tokio::time::timeout(
            HANG,
            client()
                .get(url)
                .bearer_auth(TOKEN)
                .header("accept", "text/event-stream")
                .header("mcp-session-id", session.as_str())
                .header("mcp-protocol-version", "2025-11-25")
                .send(),
        )
        .await
        .expect("a stream was not answered")
        .unwrap();
        assert_eq!(stream.status(), 200);
        streams.push(stream);
    }
    // A new connection from the same address is answered, not refused.
    let reply = tokio::time::timeout(
        HANG,
        client()
            .post(url)
            .bearer_auth(TOKEN)
            .header("accept", "application/json, text/event-stream")
            .json(
                &json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": { "name": "late", "version": "1" } } }),
            )
            .send(),
    )
    .await
    .expect("the request hung");
    let reply = reply.expect("the peer's new connection was refused");
    assert_eq!(reply.status(), 200);
    // The oldest stream was ended to make room: its body ends (within a bound only a hang
    // reaches).
    let mut oldest = streams.remove(0);
    let ended = tokio::time::timeout(HANG, async {
        while let Ok(Some(_)) = oldest.chunk().await {}
    })
    .await;
    assert!(ended.is_ok(), "the oldest event stream stayed open");
    drop(streams);
    server.stop().await;
}
