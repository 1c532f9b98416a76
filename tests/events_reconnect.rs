//! The reconnect machinery of the event hub in process (issue 39): backoff while SnowLuma is
//! down (counted at the port), two missed heartbeat intervals treated as a dead connection,
//! a long-poll that waits through an outage, and the gap entry's notification.

#[path = "support/event_helpers.rs"]
mod event_helpers;
#[path = "support/fake_snowluma_ws.rs"]
mod fake_snowluma_ws;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use event_helpers::{GROUP, Recorder, SELF, USER, count, hub, owner, subscribe, texts};
use fake_snowluma_ws::{FakeEventSocket, WsOptions, group_message};
use serde_json::json;
use snowluma_mcp::events::{ConnectionStatus, EventHub, EventsError, EventsUrl};
use tokio_util::sync::CancellationToken;

/// Polls for at most 30 s, a bound only a hang reaches.
async fn within_30s(mut condition: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        if condition() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    condition()
}

fn reconnecting(hub: &EventHub) -> Option<u32> {
    match hub.connection_status() {
        Some(ConnectionStatus::Reconnecting { attempt, .. }) => Some(attempt),
        _ => None,
    }
}

/// With the shipped backoff (500 ms doubling, jitter in the upper half) a 10 s outage sees
/// at most five attempts (first delays of at least 0.25, 0.5, 1, 2 and 4 s); retrying at a fixed
/// 500 ms would make about twenty. The port accepts and drops each attempt, so each is counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backoff_bounds_the_attempts_of_a_ten_second_outage() {
    let mut fake = event_helpers::fake();
    let hub = hub(&fake);
    let me = owner("a");
    let uri = subscribe(&hub, &me, json!({"self_id": SELF})).await;
    fake.kill();
    // The port now accepts TCP and closes at once: a SnowLuma that is starting up.
    let listener = std::net::TcpListener::bind(("127.0.0.1", fake.port)).expect("rebind");
    listener.set_nonblocking(true).unwrap();
    let attempts = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let counter = {
        let (attempts, done) = (attempts.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        attempts.fetch_add(1, Ordering::SeqCst);
                        drop(stream);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        })
    };
    let outage = Instant::now();
    tokio::time::sleep(Duration::from_secs(10)).await;
    done.store(true, Ordering::SeqCst);
    counter.join().unwrap();
    let seen = attempts.load(Ordering::SeqCst);
    let elapsed = outage.elapsed();
    assert!(
        (2..=5).contains(&seen),
        "{seen} attempts in {elapsed:?} of outage"
    );
    let status = hub.connection_status();
    assert!(
        reconnecting(&hub).is_some_and(|n| n as usize >= seen),
        "{status:?}"
    );
    if let Some(ConnectionStatus::Reconnecting {
        next_attempt_at_ms,
        since,
        ..
    }) = status
    {
        assert!(next_attempt_at_ms / 1000 >= since, "{status:?}");
    }
    // Back up: the next attempt (at most 8 s away) reconnects and records the outage.
    fake.revive();
    assert!(within_30s(|| count(&hub, &me, &uri) == 1).await);
    let page = hub.read(&me, &uri).unwrap();
    assert!(page.entries[0].gap.is_some(), "{page:?}");
    assert!(matches!(page.status, ConnectionStatus::Connected { .. }));
}

/// SnowLuma hangs without closing: two heartbeat intervals of silence end the connection.
#[tokio::test]
async fn two_missed_heartbeats_reconnect() {
    let fake = FakeEventSocket::start(WsOptions {
        token: Some("ws-secret".into()),
        heartbeat: Duration::from_secs(1),
        ..WsOptions::default()
    });
    let hub = hub(&fake);
    let me = owner("a");
    let uri = subscribe(&hub, &me, json!({"self_id": SELF})).await;
    fake.mute_heartbeats();
    assert!(within_30s(|| count(&hub, &me, &uri) >= 1).await);
    let page = hub.read(&me, &uri).unwrap();
    let gap = page.entries[0].gap.as_ref().expect("a gap entry");
    assert!(gap.reason.contains("heartbeat"), "{gap:?}");
    // The gap starts at the last frame, two silent intervals (2 s) before it was noticed.
    assert!(gap.from < gap.to, "{gap:?}");
    assert!(fake.handshakes() >= 2, "reconnected");
    fake.push(&group_message(SELF, GROUP, USER, "after"));
    assert!(within_30s(|| texts(&hub.read(&me, &uri).unwrap()).contains(&"after".into())).await);
}

/// A long-poll started during an outage returns once the connection is back (with the gap),
/// not at the end of its wait; a short one returns empty with the reconnecting status.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_poll_waits_through_an_outage() {
    let mut fake = event_helpers::fake();
    let hub = hub(&fake);
    let me = owner("a");
    let uri = subscribe(&hub, &me, json!({"self_id": SELF})).await;
    fake.kill();
    assert!(within_30s(|| reconnecting(&hub).is_some()).await);
    let short = hub
        .wait(&me, &uri, None, 100, 256, CancellationToken::new())
        .await
        .unwrap();
    assert!(short.entries.is_empty());
    assert!(
        matches!(short.status, ConnectionStatus::Reconnecting { .. }),
        "{:?}",
        short.status
    );
    let waiter = {
        let (hub, me, uri) = (hub.clone(), me.clone(), uri.clone());
        tokio::spawn(async move {
            let start = Instant::now();
            let page = hub
                .wait(&me, &uri, None, 30_000, 256, CancellationToken::new())
                .await;
            (page, start.elapsed())
        })
    };
    // Revived only once the wait holds the resource, so the gap entry is what ends it.
    let mut held = false;
    for _ in 0..1500 {
        let probe = hub
            .wait(&me, &uri, None, 0, 256, CancellationToken::new())
            .await;
        if matches!(probe, Err(EventsError::WaitInProgress { .. })) {
            held = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(held, "the long poll never started waiting");
    fake.revive();
    let (page, waited) = waiter.await.unwrap();
    let page = page.unwrap();
    assert_eq!(page.entries.len(), 1, "{page:?}");
    assert!(page.entries[0].gap.is_some());
    assert!(
        waited < Duration::from_secs(25),
        "returned only at the end of wait_ms: {waited:?}"
    );
}

/// The gap entry is a change like an event: the resource's notifier is called for it.
#[tokio::test]
async fn the_gap_entry_notifies_the_resource() {
    let fake = event_helpers::fake();
    let hub = EventHub::new(
        EventsUrl::parse(&fake.url).unwrap(),
        Some("ws-secret".into()),
    );
    let me = owner("a");
    let recorder = Arc::new(Recorder::default());
    let uri = hub
        .subscribe(
            &me,
            event_helpers::filter(json!({"self_id": SELF})),
            recorder.clone(),
        )
        .await
        .unwrap();
    let before = recorder.calls.load(Ordering::SeqCst);
    fake.drop_connections();
    assert!(within_30s(|| count(&hub, &me, &uri) == 1).await);
    assert!(
        within_30s(|| recorder.calls.load(Ordering::SeqCst) > before).await,
        "no notification for the gap"
    );
}
