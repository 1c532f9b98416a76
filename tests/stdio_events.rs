//! Live events over MCP, end to end over stdio with the built binary and the fake SnowLuma
//! WebSocket adapter, in both protocol generations, on the exact wire (raw JSON lines).

#[path = "support/fake_snowluma_ws.rs"]
mod fake_snowluma_ws;
#[path = "support/raw_client.rs"]
mod raw_client;

use fake_snowluma_ws::{FakeEventSocket, WsOptions, group_message};
use raw_client::{RawServer, modern_meta, structured, wait_until};
use serde_json::{Value, json};

const TOKEN: &str = "events-secret-token";

fn fake() -> FakeEventSocket {
    FakeEventSocket::start(WsOptions {
        token: Some(TOKEN.into()),
        ..WsOptions::default()
    })
}

fn spawn(url: &str) -> RawServer {
    RawServer::spawn(&[
        ("SNOWLUMA_MCP_MODE", "read"),
        ("SNOWLUMA_MCP_ENDPOINT", "http://127.0.0.1:9/"),
        ("SNOWLUMA_MCP_TOKEN", TOKEN),
        ("SNOWLUMA_MCP_EVENTS_URL", url),
    ])
}

async fn initialize(server: &mut RawServer) -> Value {
    let init = server
        .request(
            1,
            "initialize",
            json!({ "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }),
        )
        .await;
    server
        .send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
        .await;
    init
}

fn tool_names(listing: &Value) -> Vec<String> {
    listing["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

/// Waits for a notification with `method`, keeping everything else in the backlog.
async fn notification(server: &mut RawServer, method: &str) -> Option<Value> {
    if let Some(i) = server.backlog.iter().position(|m| m["method"] == method) {
        return Some(server.backlog.remove(i));
    }
    while let Some(message) = server.next().await {
        if message["method"] == method {
            return Some(message);
        }
        server.backlog.push(message);
    }
    None
}

#[tokio::test]
async fn legacy_subscribe_read_wait_notify_and_unsubscribe() {
    let socket = fake();
    let mut server = spawn(&socket.url);
    let init = initialize(&mut server).await;
    assert_eq!(
        init["result"]["capabilities"]["resources"]["subscribe"],
        true
    );

    let listing = server.request(2, "tools/list", json!({})).await;
    let names = tool_names(&listing);
    for tool in ["subscribe_events", "read_events", "unsubscribe_events"] {
        assert!(
            names.contains(&tool.to_string()),
            "{tool} listed: {names:?}"
        );
    }
    server.request(3, "resources/list", json!({})).await;
    assert_eq!(socket.handshakes(), 0, "listing never connects");

    // A bad filter names the field and nothing connects.
    let bad = server
        .request(4, "tools/call", json!({ "name": "subscribe_events", "arguments": { "self_id": 10001, "types": ["bogus"] } }))
        .await;
    let bad = structured(&bad);
    assert_eq!(bad["diagnostics"]["kind"], "invalid_arguments");
    assert!(
        bad["diagnostics"]["message"]
            .as_str()
            .unwrap()
            .contains("types")
    );

    let sub = server
        .request(5, "tools/call", json!({ "name": "subscribe_events", "arguments": { "self_id": 10001, "group_ids": [20001] } }))
        .await;
    let uri = structured(&sub)["result"]["uri"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(uri.starts_with("snowluma://onebot/events/"), "{uri}");
    assert_eq!(socket.handshakes(), 1);
    assert_eq!(
        socket.authorizations(),
        vec![Some(format!("Bearer {TOKEN}"))],
        "the shared connection carries the token as a Bearer header"
    );
    let text = sub.to_string();
    assert!(!text.contains(TOKEN), "the token never leaks");

    let resources = server.request(6, "resources/list", json!({})).await;
    let uris: Vec<&str> = resources["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert!(uris.contains(&uri.as_str()), "{uris:?}");

    let subscribed = server
        .request(7, "resources/subscribe", json!({ "uri": uri }))
        .await;
    assert!(subscribed.get("error").is_none(), "{subscribed}");

    socket.push(&group_message(10001, 99999, 30001, "other group"));
    socket.push(&group_message(10001, 20001, 30001, "hello"));
    let updated = notification(&mut server, "notifications/resources/updated")
        .await
        .expect("an update notification");
    assert_eq!(updated["params"]["uri"], uri.as_str());

    let read = server
        .request(8, "resources/read", json!({ "uri": uri }))
        .await;
    let page: Value =
        serde_json::from_str(read["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    let entries = page["entries"].as_array().unwrap();
    assert_eq!(
        entries.len(),
        1,
        "the group filter dropped the other group: {page}"
    );
    assert_eq!(entries[0]["event"]["raw_message"], "hello");
    assert_eq!(page["status"]["state"], "connected");
    assert_eq!(page["gap"], false);
    let next = page["next_cursor"].as_str().unwrap().to_string();

    // Nothing newer yet: read_events waits, then the next event ends the wait.
    let waiting = json!({ "jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": { "name": "read_events", "arguments": { "uri": uri, "after": next, "wait_ms": 20000 } } });
    server.send(&waiting).await;
    let second = server
        .request(10, "tools/call", json!({ "name": "read_events", "arguments": { "uri": uri, "after": next, "wait_ms": 0 } }))
        .await;
    let second = structured(&second);
    assert!(
        second["diagnostics"]["kind"] == "wait_in_progress"
            || second["result"]["entries"]
                .as_array()
                .is_some_and(Vec::is_empty),
        "{second}"
    );
    socket.push(&group_message(10001, 20001, 30002, "second"));
    let woke = server.wait_for_id(&json!(9)).await;
    let woke = structured(&woke);
    assert_eq!(
        woke["result"]["entries"][0]["event"]["raw_message"],
        "second"
    );

    // A cursor of the wrong shape is refused with its own kind.
    let bad_cursor = server
        .request(11, "tools/call", json!({ "name": "read_events", "arguments": { "uri": uri, "after": "nope", "wait_ms": 0 } }))
        .await;
    assert_eq!(structured(&bad_cursor)["diagnostics"]["kind"], "bad_cursor");
    let over = server
        .request(
            12,
            "tools/call",
            json!({ "name": "read_events", "arguments": { "uri": uri, "wait_ms": 30001 } }),
        )
        .await;
    let over = structured(&over);
    assert_eq!(over["diagnostics"]["kind"], "invalid_arguments");
    assert!(
        over["diagnostics"]["message"]
            .as_str()
            .unwrap()
            .contains("wait_ms")
    );

    // resources/unsubscribe releases; the last release closes the socket.
    let released = server
        .request(13, "resources/unsubscribe", json!({ "uri": uri }))
        .await;
    assert!(released.get("error").is_none(), "{released}");
    wait_until(raw_client::WAIT, || socket.open_connections() == 0).await;
    assert_eq!(socket.open_connections(), 0);
    let gone = server
        .request(14, "resources/read", json!({ "uri": uri }))
        .await;
    assert!(gone.get("error").is_some(), "{gone}");
    let again = server
        .request(
            15,
            "tools/call",
            json!({ "name": "unsubscribe_events", "arguments": { "uri": uri } }),
        )
        .await;
    assert_eq!(
        structured(&again)["diagnostics"]["kind"],
        "unknown_resource"
    );
    assert!(server.validated >= 5);
    server.finish().await;
}

#[tokio::test]
async fn modern_listen_notifies_only_listened_uris_and_reads_are_uncached() {
    let socket = fake();
    let mut server = spawn(&socket.url);
    let meta = modern_meta(json!({}));
    let discover = server
        .request(1, "server/discover", json!({ "_meta": meta }))
        .await;
    assert_eq!(
        discover["result"]["capabilities"]["resources"]["subscribe"], true,
        "{discover}"
    );
    let listing = server
        .request(2, "resources/list", json!({ "_meta": meta }))
        .await;
    assert_eq!(
        listing["result"]["ttlMs"], 0,
        "resources/list is never cached with events"
    );

    let mut uris = Vec::new();
    for (id, group) in [(3, 20001), (4, 20002)] {
        let sub = server
            .request(id, "tools/call", json!({ "name": "subscribe_events", "arguments": { "self_id": 10001, "group_ids": [group] }, "_meta": meta }))
            .await;
        uris.push(
            structured(&sub)["result"]["uri"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    assert_eq!(socket.handshakes(), 1, "one shared connection");

    // Legacy subscribe is not part of 2026-07-28.
    let legacy = server
        .request(
            5,
            "resources/subscribe",
            json!({ "uri": uris[0], "_meta": meta }),
        )
        .await;
    assert_eq!(legacy["error"]["code"], -32601);

    server
        .send(&json!({ "jsonrpc": "2.0", "id": 6, "method": "subscriptions/listen", "params": { "notifications": { "resourceSubscriptions": [uris[0], "snowluma://onebot/events/someoneelse"] }, "_meta": meta } }))
        .await;
    let ack = notification(&mut server, "notifications/subscriptions/acknowledged")
        .await
        .expect("acknowledged");
    assert_eq!(
        ack["params"]["notifications"]["resourceSubscriptions"],
        json!([uris[0]]),
        "only this session's resources are accepted"
    );

    socket.push(&group_message(10001, 20002, 30001, "not listened"));
    socket.push(&group_message(10001, 20001, 30001, "listened"));
    let updated = notification(&mut server, "notifications/resources/updated")
        .await
        .expect("an update");
    assert_eq!(updated["params"]["uri"], uris[0].as_str());
    assert!(
        !server
            .backlog
            .iter()
            .any(|m| m["method"] == "notifications/resources/updated"
                && m["params"]["uri"] == uris[1].as_str()),
        "no notification for a resource nobody listens to"
    );

    let read = server
        .request(
            7,
            "resources/read",
            json!({ "uri": uris[0], "_meta": meta }),
        )
        .await;
    assert_eq!(read["result"]["ttlMs"], 0);
    assert_eq!(read["result"]["cacheScope"], "private");
    let page: Value =
        serde_json::from_str(read["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(page["entries"][0]["event"]["raw_message"], "listened");
    let newer = server
        .request(8, "resources/read", json!({ "uri": format!("{}?after={}", uris[0], page["next_cursor"].as_str().unwrap()), "_meta": meta }))
        .await;
    let newer: Value =
        serde_json::from_str(newer["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(newer["entries"], json!([]));

    // Cancelling a waiting read ends it at once.
    server
        .send(&json!({ "jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": { "name": "read_events", "arguments": { "uri": uris[1], "after": format!("{}-1", uris[1].rsplit('/').next().unwrap()), "wait_ms": 30000 }, "_meta": meta } }))
        .await;
    server
        .send(&json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 9, "_meta": meta } }))
        .await;

    for (id, uri) in [(10, &uris[0]), (11, &uris[1])] {
        let done = server
            .request(
                id,
                "tools/call",
                json!({ "name": "unsubscribe_events", "arguments": { "uri": uri }, "_meta": meta }),
            )
            .await;
        assert_eq!(structured(&done)["result"]["released"], uri.as_str());
    }
    wait_until(raw_client::WAIT, || socket.open_connections() == 0).await;
    assert_eq!(socket.open_connections(), 0);
    server.finish().await;
}

#[tokio::test]
async fn a_rejected_token_is_reported_without_leaking_it() {
    let socket = fake();
    let mut server = RawServer::spawn(&[
        ("SNOWLUMA_MCP_MODE", "read"),
        ("SNOWLUMA_MCP_ENDPOINT", "http://127.0.0.1:9/"),
        ("SNOWLUMA_MCP_TOKEN", "wrong-secret"),
        ("SNOWLUMA_MCP_EVENTS_URL", &socket.url),
    ]);
    initialize(&mut server).await;
    let sub = server
        .request(
            2,
            "tools/call",
            json!({ "name": "subscribe_events", "arguments": { "self_id": 10001 } }),
        )
        .await;
    assert!(!sub.to_string().contains("wrong-secret"));
    assert_eq!(structured(&sub)["diagnostics"]["kind"], "events_token");
    server.finish().await;
}

#[tokio::test]
async fn without_an_events_url_the_tools_are_neither_listed_nor_callable() {
    let mut server = RawServer::spawn(&[
        ("SNOWLUMA_MCP_MODE", "read"),
        ("SNOWLUMA_MCP_ENDPOINT", "http://127.0.0.1:9/"),
    ]);
    let init = initialize(&mut server).await;
    assert!(
        init["result"]["capabilities"]["resources"]
            .get("subscribe")
            .is_none()
    );
    let names = tool_names(&server.request(2, "tools/list", json!({})).await);
    assert!(!names.iter().any(|n| n.contains("events")), "{names:?}");
    let call = server
        .request(
            3,
            "tools/call",
            json!({ "name": "subscribe_events", "arguments": { "self_id": 10001 } }),
        )
        .await;
    let call = structured(&call);
    assert_eq!(call["diagnostics"]["kind"], "mode");
    assert!(
        call["diagnostics"]["next_step"]
            .as_str()
            .unwrap()
            .contains("SNOWLUMA_MCP_EVENTS_URL")
    );
    server.finish().await;
}
