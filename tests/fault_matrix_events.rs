//! The fault matrix's event rows (issue 18): subscribe_events, read_events, unsubscribe_events
//! and the event resource against every fault SnowLuma's WebSocket side can show, over both
//! transports (the real binary over stdio and over Streamable HTTP) in both protocol
//! generations. Opening faults (nothing listening, a handshake that never completes, a rejected
//! token) fail subscribe_events with their kind. A lost connection (drop, close 1011) comes
//! back on its own (issue 39): the resource records one gap entry and keeps delivering, with no
//! new subscription. Configuration faults on an open connection (close 1008, an oversized or
//! malformed frame) stop it visibly: the resource keeps serving its buffered events with
//! `status: stopped` and the reason, nothing reconnects, a new subscription is refused until
//! the old one is released, and then one new connection opens.
//! Every tool result is checked against the advertised outputSchema.

#[path = "support/fake_snowluma_ws.rs"]
mod fake_snowluma_ws;
#[path = "support/http_server.rs"]
mod http_server;
#[path = "support/mcp_peer.rs"]
mod mcp_peer;
#[path = "support/raw_client.rs"]
mod raw_client;

use std::time::Duration;

use fake_snowluma_ws::{FakeEventSocket, WsOptions, group_message};
use mcp_peer::{EVERY_KIND, Peer, PeerKind, listen, refusing_port};
use serde_json::{Value, json};

const TOKEN: &str = "fault-matrix-events-token";
const SELF_ID: i64 = 10001;
const GROUP_ID: i64 = 20001;
const USER_ID: i64 = 30001;

/// A fault on an open event connection, and the stop reason the resource must report.
struct StopFault {
    name: &'static str,
    inject: fn(&FakeEventSocket),
    reason: &'static str,
}

/// A fault injected into the fake.
type Inject = fn(&FakeEventSocket);

/// A lost connection, which must come back with one gap entry.
const LOST_FAULTS: [(&str, Inject); 2] = [
    (
        "WebSocket drop (no close frame)",
        FakeEventSocket::drop_connections,
    ),
    ("close frame 1011", |ws| ws.close_connections(1011)),
];

const STOP_FAULTS: [StopFault; 3] = [
    StopFault {
        name: "close frame 1008 (token revoked)",
        inject: |ws| ws.close_connections(1008),
        reason: "token_rejected",
    },
    StopFault {
        name: "frame over 256 KiB",
        inject: |ws| {
            let text = "x".repeat(300 * 1024);
            ws.push(&group_message(SELF_ID, GROUP_ID, USER_ID, &text));
        },
        reason: "frame_too_large",
    },
    StopFault {
        name: "frame that is not JSON",
        inject: |ws| ws.push_raw("{\"post_type\": \"message\", "),
        reason: "malformed_event",
    },
];

fn subscribe_args() -> Value {
    json!({ "self_id": SELF_ID, "types": ["message"], "group_ids": [GROUP_ID] })
}

/// resources/read of an event resource: the page.
async fn read_page(peer: &mut Peer, uri: &str) -> Value {
    let read = peer.request("resources/read", json!({ "uri": uri })).await;
    let text = read["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{}: resources/read {uri}: {read}", peer.kind));
    serde_json::from_str(text).unwrap()
}

/// Reads until the page satisfies `done` (at most 5 s); returns the last page.
async fn read_until(peer: &mut Peer, uri: &str, done: impl Fn(&Value) -> bool) -> Value {
    let mut page = Value::Null;
    for _ in 0..100 {
        page = read_page(peer, uri).await;
        if done(&page) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    page
}

fn texts(page: &Value) -> Vec<String> {
    page["entries"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["event"]["raw_message"].as_str().map(str::to_string))
        .collect()
}

/// A subscription that must succeed; returns its URI.
async fn subscribe(peer: &mut Peer, cell: &str) -> String {
    let call = peer.call("subscribe_events", subscribe_args()).await;
    assert!(!call.is_error, "{cell}: subscribe failed: {}", call.body);
    call.body["result"]["uri"].as_str().unwrap().to_string()
}

/// A subscription that must fail with `kind`, leaving the server serving.
async fn subscribe_fails(peer: &mut Peer, kind: &str, cell: &str) {
    let call = peer.call("subscribe_events", subscribe_args()).await;
    assert!(call.is_error, "{cell}: {}", call.body);
    assert_eq!(call.kind(), kind, "{cell}: {}", call.body);
    assert_eq!(call.outcome(), "failed", "{cell}: {}", call.body);
    assert_eq!(call.body["result"], Value::Null, "{cell}");
    assert!(peer.alive(), "{cell}: the server exited");
}

async fn unsubscribe(peer: &mut Peer, uri: &str, cell: &str) {
    let call = peer.call("unsubscribe_events", json!({ "uri": uri })).await;
    assert_eq!(
        call.body["result"]["released"], uri,
        "{cell}: {}",
        call.body
    );
}

/// An event reaches the resource, which reports a connected socket.
async fn delivers(peer: &mut Peer, ws: &FakeEventSocket, uri: &str, text: &str, cell: &str) {
    ws.push(&group_message(SELF_ID, GROUP_ID, USER_ID, text));
    let page = read_until(peer, uri, |p| texts(p).iter().any(|t| t == text)).await;
    assert!(texts(&page).iter().any(|t| t == text), "{cell}: {page}");
    assert_eq!(page["status"]["state"], "connected", "{cell}: {page}");
}

async fn events_matrix(kind: PeerKind) -> usize {
    // One port throughout: it refuses, then accepts and never answers, then is the fake's.
    let (socket, port) = refusing_port();
    let url = format!("ws://127.0.0.1:{port}/");
    let mut peer = Peer::start(
        kind,
        &[
            ("SNOWLUMA_MCP_MODE", "read"),
            ("SNOWLUMA_MCP_ENDPOINT", "http://127.0.0.1:9/"),
            ("SNOWLUMA_MCP_TOKEN", TOKEN),
            ("SNOWLUMA_MCP_EVENTS_URL", &url),
        ],
    )
    .await;
    let mut cells = 0;

    // Opening faults: subscribe_events fails with the kind; nothing is left held.
    subscribe_fails(
        &mut peer,
        "events_connection",
        &format!("{kind} nothing listening"),
    )
    .await;
    cells += 1;
    // Accepted by the kernel, never answered: the handshake times out (10 s).
    let listener = listen(socket);
    peer.set_wait(raw_client::WAIT + Duration::from_secs(10));
    let cell = format!("{kind} stalled handshake");
    subscribe_fails(&mut peer, "events_connection", &cell).await;
    peer.set_wait(raw_client::WAIT);
    cells += 1;
    let options = WsOptions {
        token: Some(TOKEN.into()),
        ..WsOptions::default()
    };
    let ws = FakeEventSocket::start_on(listener, options);
    let cell = format!("{kind} after the opening faults");
    let mut uri = subscribe(&mut peer, &cell).await;
    delivers(&mut peer, &ws, &uri, "first", &cell).await;

    let cell = format!("{kind} token rejected at the handshake");
    unsubscribe(&mut peer, &uri, &cell).await;
    ws.set_token(Some("rotated-token"));
    subscribe_fails(&mut peer, "events_token", &cell).await;
    ws.set_token(Some(TOKEN));
    uri = subscribe(&mut peer, &cell).await;
    delivers(&mut peer, &ws, &uri, "after token", &cell).await;
    cells += 1;

    // Lost connections: back on their own, one gap entry each.
    for (name, inject) in &LOST_FAULTS {
        let cell = format!("{kind} {name}");
        let handshakes = ws.handshakes();
        let before = read_page(&mut peer, &uri).await["entries"]
            .as_array()
            .map_or(0, Vec::len);
        inject(&ws);
        let page = read_until(&mut peer, &uri, |p| {
            p["entries"].as_array().map_or(0, Vec::len) > before
        })
        .await;
        let entries = page["entries"].as_array().unwrap();
        assert_eq!(entries.len(), before + 1, "{cell}: {page}");
        assert!(
            entries[before]["gap"]["reason"]
                .as_str()
                .is_some_and(|r| !r.is_empty()),
            "{cell}: {page}"
        );
        assert_eq!(ws.handshakes(), handshakes + 1, "{cell}: one reconnect");
        // The tool shows the same gap.
        let read = peer
            .call("read_events", json!({ "uri": uri, "wait_ms": 0 }))
            .await;
        assert!(!read.is_error, "{cell}: {}", read.body);
        assert_eq!(read.body["result"]["entries"], page["entries"], "{cell}");
        delivers(&mut peer, &ws, &uri, &format!("after {name}"), &cell).await;
        assert!(peer.alive(), "{cell}: the server exited");
        cells += 1;
    }

    // Configuration faults on the open connection.
    for fault in &STOP_FAULTS {
        let cell = format!("{kind} {}", fault.name);
        let handshakes = ws.handshakes();
        (fault.inject)(&ws);
        let page = read_until(&mut peer, &uri, |p| p["status"]["state"] == "stopped").await;
        assert_eq!(page["status"]["state"], "stopped", "{cell}: {page}");
        assert_eq!(page["status"]["reason"], fault.reason, "{cell}: {page}");
        assert!(
            page["status"]["detail"]
                .as_str()
                .is_some_and(|d| !d.is_empty()),
            "{cell}: {page}"
        );
        // The resource keeps serving what it buffered, through the tool too.
        assert!(
            !texts(&page).is_empty(),
            "{cell}: buffered events lost: {page}"
        );
        let read = peer
            .call("read_events", json!({ "uri": uri, "wait_ms": 0 }))
            .await;
        assert!(!read.is_error, "{cell}: {}", read.body);
        assert_eq!(
            read.body["result"]["status"]["reason"], fault.reason,
            "{cell}"
        );
        assert_eq!(texts(&read.body["result"]), texts(&page), "{cell}");
        // No reconnect: a new subscription is refused until the old one is released.
        let refusal = match fault.reason {
            "token_rejected" => "events_token",
            _ => "events_connection",
        };
        subscribe_fails(&mut peer, refusal, &cell).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(
            ws.handshakes(),
            handshakes,
            "{cell}: reconnected on its own"
        );
        unsubscribe(&mut peer, &uri, &cell).await;
        uri = subscribe(&mut peer, &cell).await;
        assert_eq!(
            ws.handshakes(),
            handshakes + 1,
            "{cell}: one new connection"
        );
        delivers(
            &mut peer,
            &ws,
            &uri,
            &format!("after {}", fault.name),
            &cell,
        )
        .await;
        assert!(peer.alive(), "{cell}: the server exited");
        cells += 1;
    }
    unsubscribe(&mut peer, &uri, &format!("{kind} end")).await;
    // Every tool call above went through `Peer::call`, which validates its result.
    let lost = LOST_FAULTS.len();
    assert!(
        peer.validated >= 3 * (cells - lost) + lost,
        "{kind}: results validated"
    );
    peer.stop().await;
    cells
}

/// The four runs go concurrently: the stalled handshake alone waits out the 10 s connect timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_tools_meet_every_websocket_fault_on_both_transports() {
    let runs = EVERY_KIND.map(|kind| tokio::spawn(events_matrix(kind)));
    for (kind, run) in EVERY_KIND.iter().zip(runs) {
        let cells = run
            .await
            .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
        assert_eq!(cells, 3 + LOST_FAULTS.len() + STOP_FAULTS.len(), "{kind}");
    }
}
