//! Live events that survive SnowLuma restarts (issue 39), end to end over stdio with the built
//! binary: the fake WebSocket adapter is killed and restarted three times while a reader
//! follows one resource with read_events; every event sent while it was up arrives exactly
//! once and in order, each outage is one gap entry, legacy subscribers are notified of each
//! gap, and the reader never subscribes again. A token changed during an outage stops the
//! reconnecting with `events_token`. With SNOWLUMA_MCP_EVENTS_RECOVER=1 the messages of an
//! outage are fetched with get_group_msg_history (through the HTTP fake) and appear once,
//! marked `recovered`.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/fake_snowluma_ws.rs"]
mod fake_snowluma_ws;
#[path = "support/raw_client.rs"]
mod raw_client;

use std::time::Duration;

use fake_snowluma::FakeSnowLuma;
use fake_snowluma_ws::{FakeEventSocket, WsOptions, group_message, group_message_numbered};
use raw_client::{RawServer, structured, wait_until};
use serde_json::{Value, json};

const TOKEN: &str = "reconnect-secret-token";
const SELF: i64 = 10001;
const GROUP: i64 = 20001;
const USER: i64 = 30001;
/// A bound only a hang reaches.
const LIMIT: Duration = Duration::from_secs(30);

fn fake() -> FakeEventSocket {
    FakeEventSocket::start(WsOptions {
        token: Some(TOKEN.into()),
        ..WsOptions::default()
    })
}

async fn legacy_server(env: &[(&str, &str)]) -> RawServer {
    let mut server = RawServer::spawn(env);
    server
        .request(
            1,
            "initialize",
            json!({ "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }),
        )
        .await;
    server
        .send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
        .await;
    server
}

/// The reader: one resource, followed with read_events and its cursors.
struct Reader {
    server: RawServer,
    uri: String,
    cursor: Option<String>,
    next_id: i64,
    /// Every entry read so far, in order.
    seen: Vec<Value>,
}

impl Reader {
    async fn subscribe(mut server: RawServer, args: Value) -> Reader {
        let response = server
            .request(
                2,
                "tools/call",
                json!({ "name": "subscribe_events", "arguments": args }),
            )
            .await;
        let uri = structured(&response)["result"]["uri"]
            .as_str()
            .unwrap_or_else(|| panic!("{response}"))
            .to_string();
        Reader {
            server,
            uri,
            cursor: None,
            next_id: 10,
            seen: Vec::new(),
        }
    }

    async fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.next_id += 1;
        let response = self
            .server
            .request(
                self.next_id,
                "tools/call",
                json!({ "name": name, "arguments": arguments }),
            )
            .await;
        structured(&response)
    }

    /// One read_events after the cursor; the entries are kept and the cursor advances.
    async fn read(&mut self, wait_ms: u64) -> Value {
        let mut args = json!({ "uri": self.uri, "wait_ms": wait_ms });
        if let Some(cursor) = &self.cursor {
            args["after"] = json!(cursor);
        }
        let body = self.call("read_events", args).await;
        let page = body["result"].clone();
        assert!(page.is_object(), "read_events failed: {body}");
        self.seen
            .extend(page["entries"].as_array().into_iter().flatten().cloned());
        self.cursor = page["next_cursor"].as_str().map(str::to_string);
        page
    }

    /// Reads until `done` holds for the entries seen; panics after [`LIMIT`].
    async fn read_until(&mut self, what: &str, done: impl Fn(&[Value]) -> bool) -> Value {
        let start = std::time::Instant::now();
        loop {
            let page = self.read(2_000).await;
            if done(&self.seen) {
                return page;
            }
            assert!(
                start.elapsed() < LIMIT,
                "{what}: not seen within {LIMIT:?}; seen {:?}, last page {page}",
                self.seen
            );
        }
    }

    /// Reads (without consuming) until the status state is `state`.
    async fn status_until(&mut self, state: &str) -> Value {
        let start = std::time::Instant::now();
        loop {
            let body = self
                .call("read_events", json!({ "uri": self.uri, "wait_ms": 0 }))
                .await;
            let status = body["result"]["status"].clone();
            if status["state"] == state {
                return status;
            }
            assert!(start.elapsed() < LIMIT, "status never {state}: {status}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn texts(entries: &[Value]) -> Vec<String> {
    entries
        .iter()
        .map(|e| match (&e["event"]["raw_message"], &e["gap"]) {
            (Value::String(text), _) => text.clone(),
            (_, gap) if gap.is_object() => "<gap>".into(),
            _ => panic!("neither an event nor a gap: {e}"),
        })
        .collect()
}

/// Waits for a notifications/resources/updated about `uri`, keeping other messages.
async fn updated(server: &mut RawServer, uri: &str) -> bool {
    let is_it =
        |m: &Value| m["method"] == "notifications/resources/updated" && m["params"]["uri"] == uri;
    if let Some(i) = server.backlog.iter().position(is_it) {
        server.backlog.remove(i);
        return true;
    }
    while let Some(message) = server.next().await {
        if is_it(&message) {
            return true;
        }
        server.backlog.push(message);
    }
    false
}

/// Drops every pending resources/updated notification.
fn forget_notifications(server: &mut RawServer) {
    server
        .backlog
        .retain(|m| m["method"] != "notifications/resources/updated");
}

#[tokio::test]
async fn three_restarts_lose_nothing_sent_and_leave_one_gap_each() {
    let mut ws = fake();
    let server = legacy_server(&[
        ("SNOWLUMA_MCP_MODE", "read"),
        ("SNOWLUMA_MCP_ENDPOINT", "http://127.0.0.1:9/"),
        ("SNOWLUMA_MCP_TOKEN", TOKEN),
        ("SNOWLUMA_MCP_EVENTS_URL", &ws.url),
    ])
    .await;
    let mut reader = Reader::subscribe(
        server,
        json!({ "self_id": SELF, "types": ["message"], "group_ids": [GROUP] }),
    )
    .await;
    let subscribed = reader
        .server
        .request(
            3,
            "resources/subscribe",
            json!({ "uri": reader.uri.clone() }),
        )
        .await;
    assert!(subscribed.get("error").is_none(), "{subscribed}");

    let mut expected: Vec<String> = Vec::new();
    let mut sent = 0;
    for round in 0..4 {
        // Up: a burst of events, all read before SnowLuma goes away.
        for _ in 0..10 {
            let text = format!("event {sent}");
            ws.push(&group_message(SELF, GROUP, USER, &text));
            expected.push(text);
            sent += 1;
        }
        let want = expected.clone();
        reader
            .read_until(&format!("round {round} events"), |seen| texts(seen) == want)
            .await;
        if round == 3 {
            break;
        }
        // Down: a crash; then back on the same port.
        ws.kill();
        let status = reader.status_until("reconnecting").await;
        assert!(
            status["attempt"].as_u64().is_some_and(|n| n >= 1),
            "{status}"
        );
        assert!(status["next_attempt_at_ms"].is_i64(), "{status}");
        forget_notifications(&mut reader.server);
        ws.revive();
        expected.push("<gap>".into());
        let want = expected.clone();
        reader
            .read_until(&format!("outage {round} gap"), |seen| texts(seen) == want)
            .await;
        let uri = reader.uri.clone();
        assert!(
            updated(&mut reader.server, &uri).await,
            "outage {round}: no resources/updated for the gap entry"
        );
        reader.status_until("connected").await;
    }
    assert_eq!(ws.handshakes(), 4, "one connection per restart, no more");
    let gaps: Vec<&Value> = reader
        .seen
        .iter()
        .filter(|e| e["gap"].is_object())
        .collect();
    assert_eq!(gaps.len(), 3, "{:?}", reader.seen);
    for gap in gaps {
        let gap = &gap["gap"];
        assert!(gap["from"].as_i64() <= gap["to"].as_i64(), "{gap}");
        assert!(
            gap["reason"].as_str().is_some_and(|r| !r.is_empty()),
            "{gap}"
        );
        assert!(gap.get("recovered").is_none(), "recovery is off: {gap}");
    }
    // The whole buffer, read again from the start, is the same sequence: reads never consume.
    let read = reader
        .server
        .request(99, "resources/read", json!({ "uri": reader.uri.clone() }))
        .await;
    let page: Value =
        serde_json::from_str(read["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(texts(page["entries"].as_array().unwrap()), expected);

    // A token changed while SnowLuma was down: the reconnect is refused and stops for good.
    ws.kill();
    reader.status_until("reconnecting").await;
    ws.set_token(Some("rotated-token"));
    ws.revive();
    let status = reader.status_until("stopped").await;
    assert_eq!(status["reason"], "token_rejected", "{status}");
    let handshakes = ws.handshakes();
    let again = reader
        .call("subscribe_events", json!({ "self_id": SELF }))
        .await;
    assert_eq!(again["diagnostics"]["kind"], "events_token", "{again}");
    // Stopped means no further attempts, even while the resource is held: the status names no
    // next attempt, and the refused subscription above opened no connection either.
    assert!(
        status.get("next_attempt_at_ms").is_none_or(Value::is_null),
        "{status}"
    );
    assert_eq!(ws.handshakes(), handshakes, "kept reconnecting after 1008");
    reader.server.kill().await;
}

#[tokio::test]
async fn recovery_inserts_the_missed_messages_once_before_the_gap() {
    let http = FakeSnowLuma::start(Some(TOKEN)).await;
    let mut ws = fake();
    let server = legacy_server(&[
        ("SNOWLUMA_MCP_MODE", "read"),
        ("SNOWLUMA_MCP_ENDPOINT", &http.url),
        ("SNOWLUMA_MCP_TOKEN", TOKEN),
        ("SNOWLUMA_MCP_EVENTS_URL", &ws.url),
        ("SNOWLUMA_MCP_EVENTS_RECOVER", "1"),
        ("SNOWLUMA_MCP_EVENTS_RECOVER_MAX", "50"),
    ])
    .await;
    let mut reader = Reader::subscribe(
        server,
        json!({ "self_id": SELF, "types": ["message"], "group_ids": [GROUP] }),
    )
    .await;
    let before = group_message_numbered(SELF, GROUP, USER, "before", 101);
    ws.push(&before);
    reader
        .read_until("the live message", |seen| texts(seen) == ["before"])
        .await;

    ws.kill();
    reader.status_until("reconnecting").await;
    // Sent while the reader was cut off; SnowLuma's history has them (and the older one).
    let missed = [
        group_message_numbered(SELF, GROUP, USER, "missed 1", 102),
        group_message_numbered(SELF, GROUP, USER, "missed 2", -103),
    ];
    let other_group = group_message_numbered(SELF, GROUP + 1, USER, "elsewhere", 104);
    http.set_answer(
        "get_group_msg_history",
        json!({ "status": "ok", "retcode": 0, "message": "", "wording": "",
                "data": { "messages": [before, missed[0], missed[1], other_group] } }),
    );
    ws.revive();
    reader
        .read_until("recovered messages and the gap", |seen| seen.len() >= 4)
        .await;
    // The second missed message also arrives live just after the reconnect: kept once.
    wait_until(LIMIT, || ws.open_connections() == 1).await;
    ws.push(&missed[1]);
    ws.push(&group_message_numbered(SELF, GROUP, USER, "after", 105));
    reader
        .read_until("the message after", |seen| {
            texts(seen).last().is_some_and(|t| t == "after")
        })
        .await;
    assert_eq!(
        texts(&reader.seen),
        ["before", "missed 1", "missed 2", "<gap>", "after"]
    );
    let flags: Vec<bool> = reader.seen.iter().map(|e| e["recovered"] == true).collect();
    assert_eq!(flags, [false, true, true, false, false]);
    assert_eq!(reader.seen[3]["gap"]["recovered"], 2, "{:?}", reader.seen);
    // One history call, through the pipeline, for the filtered group with the set maximum.
    let calls = http.requests_for("get_group_msg_history");
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].params,
        Some(json!({ "group_id": GROUP, "count": 50 }))
    );
    reader.server.kill().await;
}

/// A 2026-07-28 client listening with subscriptions/listen hears of the gap entry too.
#[tokio::test]
async fn modern_listeners_are_notified_of_the_gap() {
    let ws = fake();
    let mut server = RawServer::spawn(&[
        ("SNOWLUMA_MCP_MODE", "read"),
        ("SNOWLUMA_MCP_ENDPOINT", "http://127.0.0.1:9/"),
        ("SNOWLUMA_MCP_TOKEN", TOKEN),
        ("SNOWLUMA_MCP_EVENTS_URL", &ws.url),
    ]);
    let meta = raw_client::modern_meta(json!({}));
    let sub = server
        .request(
            1,
            "tools/call",
            json!({ "name": "subscribe_events", "arguments": { "self_id": SELF }, "_meta": meta }),
        )
        .await;
    let uri = structured(&sub)["result"]["uri"]
        .as_str()
        .unwrap_or_else(|| panic!("{sub}"))
        .to_string();
    server
        .send(&json!({ "jsonrpc": "2.0", "id": 2, "method": "subscriptions/listen",
                       "params": { "notifications": { "resourceSubscriptions": [uri] }, "_meta": meta } }))
        .await;
    let acknowledged = loop {
        let message = server.next().await.expect("an acknowledgement");
        if message["method"] == "notifications/subscriptions/acknowledged" {
            break message;
        }
        server.backlog.push(message);
    };
    assert_eq!(
        acknowledged["params"]["notifications"]["resourceSubscriptions"],
        json!([uri])
    );
    ws.drop_connections();
    assert!(
        updated(&mut server, &uri).await,
        "no resources/updated for the gap entry"
    );
    let read = server
        .request(3, "resources/read", json!({ "uri": uri, "_meta": meta }))
        .await;
    let page: Value =
        serde_json::from_str(read["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(texts(page["entries"].as_array().unwrap()), ["<gap>"]);
    server.kill().await;
}
