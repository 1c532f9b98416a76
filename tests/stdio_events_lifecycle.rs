//! Live events, lifecycle and concurrency (issue 13): closing the MCP connection (stdin EOF)
//! releases the session's resources and closes the WebSocket cleanly at the fake; cancelling
//! a waiting read_events (notifications/cancelled) ends the wait at once, no response is sent
//! for it (MCP's rule for cancelled requests) and the resource keeps working; concurrent waits
//! on different resources are each woken by their own events only.

#[path = "support/event_helpers.rs"]
mod event_helpers;
#[path = "support/fake_snowluma_ws.rs"]
mod fake_snowluma_ws;
#[path = "support/raw_client.rs"]
mod raw_client;

use std::time::Duration;

use event_helpers::{SELF, hub, owner, subscribe, texts};
use fake_snowluma_ws::{FakeEventSocket, WsOptions, group_message};
use raw_client::{RawServer, structured, wait_until};
use serde_json::json;
use snowluma_mcp::events::{EventHub, EventsError, OwnerId, Page};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const TOKEN: &str = "ws-secret";

fn socket() -> FakeEventSocket {
    FakeEventSocket::start(WsOptions {
        token: Some(TOKEN.into()),
        ..WsOptions::default()
    })
}

async fn legacy_server(url: &str) -> RawServer {
    let mut server = RawServer::spawn(&[
        ("SNOWLUMA_MCP_MODE", "read"),
        ("SNOWLUMA_MCP_ENDPOINT", "http://127.0.0.1:9/"),
        ("SNOWLUMA_MCP_TOKEN", TOKEN),
        ("SNOWLUMA_MCP_EVENTS_URL", url),
    ]);
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

async fn subscribe_tool(server: &mut RawServer, id: i64) -> String {
    let response = server
        .request(
            id,
            "tools/call",
            json!({ "name": "subscribe_events", "arguments": { "self_id": SELF } }),
        )
        .await;
    structured(&response)["result"]["uri"]
        .as_str()
        .unwrap_or_else(|| panic!("{response}"))
        .to_string()
}

#[tokio::test]
async fn stdin_eof_releases_the_resources_and_closes_the_socket_cleanly() {
    let socket = socket();
    let mut server = legacy_server(&socket.url).await;
    subscribe_tool(&mut server, 2).await;
    subscribe_tool(&mut server, 3).await;
    assert_eq!(socket.open_connections(), 1, "one shared socket");
    assert_eq!(socket.client_closes(), 0);

    let (code, stderr) = server.finish().await;
    assert_eq!(code, Some(0), "{stderr}");
    wait_until(raw_client::WAIT, || socket.open_connections() == 0).await;
    assert_eq!(socket.open_connections(), 0);
    // A close frame from the client: the resources were released and the last release closed
    // the socket, rather than the process vanishing under it.
    assert_eq!(socket.client_closes(), 1, "{stderr}");
    assert!(
        stderr.contains("released the event resources of a closed session"),
        "{stderr}"
    );
}

#[tokio::test]
async fn cancelling_a_waiting_read_events_ends_it_and_the_resource_still_works() {
    let socket = socket();
    let mut server = legacy_server(&socket.url).await;
    let uri = subscribe_tool(&mut server, 2).await;

    server
        .send(&json!({ "jsonrpc": "2.0", "id": 9, "method": "tools/call",
                       "params": { "name": "read_events", "arguments": { "uri": uri, "wait_ms": 30000 } } }))
        .await;
    // The wait has started once a second call on the resource is refused.
    let mut id = 100;
    until_waiting(&mut server, &mut id, &uri, "the first read_events").await;

    server
        .send(
            &json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": { "requestId": 9, "reason": "user gave up" } }),
        )
        .await;
    // The wait ends at once (well inside its 30 s): the slot frees up within two seconds.
    let freed = tokio::time::timeout(Duration::from_secs(2), async {
        loop {
            id += 1;
            let probe = server
                .request(
                    id,
                    "tools/call",
                    json!({ "name": "read_events", "arguments": { "uri": uri, "wait_ms": 0 } }),
                )
                .await;
            if structured(&probe)["diagnostics"]["kind"] != "wait_in_progress" {
                return probe;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the cancelled wait still held the resource after 2 s");
    assert_eq!(freed["result"]["isError"], false, "{freed}");

    // The resource still works: a new wait is woken by the next event.
    server
        .send(&json!({ "jsonrpc": "2.0", "id": 50, "method": "tools/call",
                       "params": { "name": "read_events", "arguments": { "uri": uri, "wait_ms": 20000 } } }))
        .await;
    // Pushed only once that wait holds the resource, so the event is what wakes it.
    until_waiting(&mut server, &mut id, &uri, "the second read_events").await;
    socket.push(&group_message(SELF, 20001, 30001, "after cancel"));
    let woke = structured(&server.wait_for_id(&json!(50)).await);
    assert_eq!(
        woke["result"]["entries"][0]["event"]["raw_message"], "after cancel",
        "{woke}"
    );
    // No response is ever sent for the cancelled request.
    assert!(
        !server.backlog.iter().any(|m| m["id"] == json!(9)),
        "{:?}",
        server.backlog
    );
    server.finish().await;
}

/// Returns once a `read_events` wait holds `uri`: a zero-wait probe (request ids from `id` on)
/// is refused with `wait_in_progress`. Bounded at about 30 s.
async fn until_waiting(server: &mut RawServer, id: &mut i64, uri: &str, what: &str) {
    for _ in 0..1500 {
        *id += 1;
        let probe = server
            .request(
                *id,
                "tools/call",
                json!({ "name": "read_events", "arguments": { "uri": uri, "wait_ms": 0 } }),
            )
            .await;
        if structured(&probe)["diagnostics"]["kind"] == "wait_in_progress" {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{what} never started waiting");
}

type Waiter = JoinHandle<Result<Page, EventsError>>;

/// A `read_events`-style wait for events after `after` on `uri`, as its own task.
fn waiter(
    hub: &EventHub,
    who: &OwnerId,
    uri: &str,
    after: Option<String>,
) -> (Waiter, CancellationToken) {
    let (hub, who, uri) = (hub.clone(), who.clone(), uri.to_string());
    let cancel = CancellationToken::new();
    let token = cancel.clone();
    let task = tokio::spawn(async move {
        hub.wait(&who, &uri, after.as_deref(), 30_000, 16, token)
            .await
    });
    (task, cancel)
}

async fn woken(task: Waiter) -> Page {
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("woken within 5 s")
        .unwrap()
        .unwrap()
}

/// Returns once a wait holds `uri` (a zero-wait read is refused with `WaitInProgress`), so an
/// event pushed afterwards is one that wait sees arrive.
async fn waiting(hub: &EventHub, who: &OwnerId, uri: &str) {
    for _ in 0..1500 {
        let probe = hub
            .wait(who, uri, None, 0, 16, CancellationToken::new())
            .await;
        if matches!(probe, Err(EventsError::WaitInProgress { .. })) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no wait started on {uri} within 30 s");
}

#[tokio::test]
async fn concurrent_waits_are_woken_by_their_own_events_only() {
    let fake = fake_snowluma_ws::FakeEventSocket::start(WsOptions {
        token: Some(TOKEN.into()),
        ..WsOptions::default()
    });
    let hub = hub(&fake);
    let (alice, bob) = (owner("alice"), owner("bob"));
    let group_a = subscribe(&hub, &alice, json!({"self_id": SELF, "group_ids": [20001]})).await;
    let group_b = subscribe(&hub, &alice, json!({"self_id": SELF, "group_ids": [20002]})).await;
    let user_c = subscribe(&hub, &alice, json!({"self_id": SELF, "user_ids": [30009]})).await;
    let bob_a = subscribe(&hub, &bob, json!({"self_id": SELF, "group_ids": [20001]})).await;

    let (on_a, _) = waiter(&hub, &alice, &group_a, None);
    let (on_b, _) = waiter(&hub, &alice, &group_b, None);
    let (on_c, _) = waiter(&hub, &alice, &user_c, None);
    let (on_bob, _) = waiter(&hub, &bob, &bob_a, None);
    // Several waits on one resource: a second one is refused while the first waits.
    for (who, uri) in [
        (&alice, &group_a),
        (&alice, &group_b),
        (&alice, &user_c),
        (&bob, &bob_a),
    ] {
        waiting(&hub, who, uri).await;
    }

    // An event for group B (from a user nobody filters on) wakes the group B wait. Had it also
    // woken the others, they would have returned without their own event, which the next
    // step checks: each returns exactly the event meant for it.
    fake.push(&group_message(SELF, 20002, 30001, "to b"));
    let b_page = woken(on_b).await;
    assert_eq!(texts(&b_page), vec!["to b"]);

    // An event in group A from user 30009 wakes A, bob's copy of A, and the user filter.
    let (on_b, _) = waiter(&hub, &alice, &group_b, Some(b_page.next_cursor.clone()));
    waiting(&hub, &alice, &group_b).await;
    fake.push(&group_message(SELF, 20001, 30009, "to a and c"));
    for task in [on_a, on_bob, on_c] {
        assert_eq!(texts(&woken(task).await), vec!["to a and c"]);
    }
    // The new group B wait was not woken by it: it returns with the next group B event only.
    fake.push(&group_message(SELF, 20002, 30001, "to b again"));
    let b_page = woken(on_b).await;
    assert_eq!(texts(&b_page), vec!["to b again"]);
    let (on_b, cancel_b) = waiter(&hub, &alice, &group_b, Some(b_page.next_cursor.clone()));
    waiting(&hub, &alice, &group_b).await;

    // Cancelling one wait ends only that wait; the others' buffers are as delivered.
    cancel_b.cancel();
    let cancelled = tokio::time::timeout(Duration::from_secs(2), on_b)
        .await
        .expect("cancel ends the wait at once")
        .unwrap();
    assert!(
        matches!(cancelled, Err(EventsError::Cancelled)),
        "{cancelled:?}"
    );
    let page = hub.read(&alice, &group_b).unwrap();
    assert_eq!(texts(&page), vec!["to b", "to b again"]);
    assert_eq!(texts(&hub.read(&bob, &bob_a).unwrap()), vec!["to a and c"]);
}
