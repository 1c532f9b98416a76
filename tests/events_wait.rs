//! Live event resources: waiting for events (first event, deadline, cancel, one waiter per
//! resource, argument bounds) and change notifications (coalescing, failure flag).

#[path = "support/event_helpers.rs"]
mod event_helpers;
#[path = "support/fake_snowluma_ws.rs"]
mod fake_snowluma_ws;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use event_helpers::*;
use fake_snowluma_ws::*;
use serde_json::json;
use snowluma_mcp::events::*;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn wait_returns_on_the_first_event_at_the_deadline_or_on_cancel() {
    let fake = fake();
    let hub = hub(&fake);
    let me = owner("a");
    let uri = subscribe(&hub, &me, json!({"self_id": SELF})).await;

    let empty = hub
        .wait(&me, &uri, None, 30, 10, CancellationToken::new())
        .await
        .unwrap();
    assert!(
        empty.entries.is_empty(),
        "nothing arrived before the deadline"
    );

    let waiter = {
        let (hub, me, uri) = (hub.clone(), me.clone(), uri.clone());
        tokio::spawn(async move {
            hub.wait(&me, &uri, None, 30_000, 10, CancellationToken::new())
                .await
        })
    };
    // Once the wait holds the slot, a second waiter is refused.
    let mut second = None;
    for _ in 0..500 {
        match hub
            .wait(&me, &uri, None, 0, 10, CancellationToken::new())
            .await
        {
            Err(e @ EventsError::WaitInProgress { .. }) => {
                second = Some(e);
                break;
            }
            _ => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
    assert!(second.is_some(), "a second concurrent wait must be refused");
    fake.push(&private_message(SELF, USER, "wake"));
    let page = waiter.await.unwrap().unwrap();
    assert_eq!(texts(&page), ["wake"]);

    let cancel = CancellationToken::new();
    let waiter = {
        let (hub, me, uri, cancel) = (hub.clone(), me.clone(), uri.clone(), cancel.clone());
        let after = page.next_cursor.clone();
        tokio::spawn(async move { hub.wait(&me, &uri, Some(&after), 30_000, 10, cancel).await })
    };
    cancel.cancel();
    assert_eq!(waiter.await.unwrap().unwrap_err(), EventsError::Cancelled);
    // The slot is free again.
    assert!(
        hub.wait(&me, &uri, None, 0, 10, CancellationToken::new())
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn wait_arguments_are_bounded() {
    let fake = fake();
    let hub = hub(&fake);
    let me = owner("a");
    let uri = subscribe(&hub, &me, json!({"self_id": SELF})).await;
    for (wait_ms, limit, field) in [(30_001, 10, "wait_ms"), (0, 0, "limit"), (0, 257, "limit")] {
        let err = hub
            .wait(&me, &uri, None, wait_ms, limit, CancellationToken::new())
            .await;
        let err = err.unwrap_err().to_string();
        assert!(err.contains(field), "{err}");
    }
}

#[tokio::test]
async fn notifications_are_coalesced_per_resource() {
    let fake = fake();
    let hub = hub(&fake);
    let me = owner("a");
    let gate = Arc::new(Semaphore::new(0));
    let recorder = Arc::new(Recorder {
        gate: Some(gate.clone()),
        ..Recorder::default()
    });
    let uri = hub
        .subscribe(&me, filter(json!({"self_id": SELF})), recorder.clone())
        .await
        .unwrap();
    fake.push(&private_message(SELF, USER, "first"));
    eventually(|| recorder.calls.load(Ordering::SeqCst) == 1).await;
    assert_eq!(recorder.calls.load(Ordering::SeqCst), 1);
    for i in 0..20 {
        fake.push(&private_message(SELF, USER, &i.to_string()));
    }
    eventually(|| count(&hub, &me, &uri) == 21).await;
    assert_eq!(
        recorder.calls.load(Ordering::SeqCst),
        1,
        "one delivery in flight"
    );
    gate.add_permits(100);
    eventually(|| recorder.calls.load(Ordering::SeqCst) == 2).await;
    // One more event proves the loop is idle again, not stuck, after the coalesced call.
    fake.push(&private_message(SELF, USER, "last"));
    eventually(|| recorder.calls.load(Ordering::SeqCst) == 3).await;
    assert_eq!(
        recorder.calls.load(Ordering::SeqCst),
        3,
        "21 events, 2 deliveries, then 1"
    );
    assert!(!hub.read(&me, &uri).unwrap().notification_failed);
}

#[tokio::test]
async fn a_failed_notification_is_flagged_on_the_resource() {
    let fake = fake();
    let hub = hub(&fake);
    let me = owner("a");
    let failing = Arc::new(Recorder {
        fail: true,
        ..Recorder::default()
    });
    let uri = hub
        .subscribe(&me, filter(json!({"self_id": SELF})), failing)
        .await
        .unwrap();
    let fine = subscribe(&hub, &me, json!({"self_id": SELF})).await;
    assert!(!hub.read(&me, &uri).unwrap().notification_failed);
    fake.push(&private_message(SELF, USER, "x"));
    eventually(|| hub.read(&me, &uri).unwrap().notification_failed).await;
    assert!(hub.read(&me, &uri).unwrap().notification_failed);
    assert!(!hub.read(&me, &fine).unwrap().notification_failed);
}
