//! Live event resources: `EventHub` driven directly against the fake SnowLuma WebSocket
//! adapter. Filters, bounds and cursors, connection failures (token, account, malformed and
//! oversized frames, drops), ownership and limits. Waits and notifications: events_wait.rs.

#[path = "support/event_helpers.rs"]
mod event_helpers;
#[path = "support/fake_snowluma_ws.rs"]
mod fake_snowluma_ws;

use std::time::Duration;

use event_helpers::*;
use fake_snowluma_ws::*;
use serde_json::json;
use snowluma_mcp::events::*;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn only_subscribe_connects_and_it_sends_the_bearer_token() {
    let fake = fake();
    let hub = hub(&fake);
    let me = owner("a");
    assert!(hub.list(&me).is_empty());
    assert!(hub.read(&me, "snowluma://onebot/events/nothing").is_err());
    assert_eq!(fake.handshakes(), 0, "listing or reading must not connect");
    let uri = subscribe(&hub, &me, json!({"self_id": SELF})).await;
    assert!(uri.starts_with("snowluma://onebot/events/"));
    assert_eq!(
        fake.authorizations(),
        vec![Some("Bearer ws-secret".to_string())]
    );
    assert_eq!(hub.list(&me)[0].uri, uri);
}

#[tokio::test]
async fn filters_by_type_group_and_user_with_and() {
    let fake = fake();
    let hub = hub(&fake);
    let me = owner("a");
    let all = subscribe(&hub, &me, json!({"self_id": SELF})).await;
    let messages = subscribe(&hub, &me, json!({"self_id": SELF, "types": ["message"]})).await;
    let notices = subscribe(&hub, &me, json!({"self_id": SELF, "types": ["notice"]})).await;
    let group = subscribe(
        &hub,
        &me,
        json!({"self_id": SELF, "group_ids": [GROUP, GROUP]}),
    )
    .await;
    let both = subscribe(
        &hub,
        &me,
        json!({"self_id": SELF, "group_ids": [GROUP], "user_ids": [USER]}),
    )
    .await;
    fake.push(&group_message(SELF, GROUP, USER, "g-u"));
    fake.push(&group_message(SELF, GROUP, 999, "g-other"));
    fake.push(&group_message(SELF, 777, USER, "other-u"));
    fake.push(&private_message(SELF, USER, "private"));
    fake.push(&private_message_sent(SELF, "sent"));
    fake.push(&group_poke(SELF, GROUP, USER));
    fake.push(&friend_request(SELF, USER));
    eventually(|| count(&hub, &me, &all) == 7).await;
    let read = |uri: &str| texts(&hub.read(&me, uri).unwrap());
    assert_eq!(read(&all).len(), 7);
    assert_eq!(
        read(&messages),
        ["g-u", "g-other", "other-u", "private", "sent"]
    );
    assert_eq!(read(&notices), ["-"]);
    assert_eq!(
        read(&group),
        ["g-u", "g-other", "-"],
        "events without group_id excluded"
    );
    assert_eq!(read(&both), ["g-u", "-"]);
}

#[tokio::test]
async fn meta_events_are_status_and_only_later_events_exist() {
    let fake = FakeEventSocket::start(WsOptions {
        token: Some("ws-secret".into()),
        heartbeat: Duration::from_millis(20),
        ..WsOptions::default()
    });
    let hub = hub(&fake);
    let me = owner("a");
    let first = subscribe(&hub, &me, json!({"self_id": SELF})).await;
    fake.push(&private_message(SELF, USER, "before"));
    eventually(|| count(&hub, &me, &first) == 1).await;
    let second = subscribe(&hub, &me, json!({"self_id": SELF})).await;
    fake.push(&private_message(SELF, USER, "after"));
    eventually(|| count(&hub, &me, &first) == 2).await;
    // Several heartbeats have passed by now; none of them is an entry.
    eventually(|| {
        matches!(
            hub.connection_status(),
            Some(ConnectionStatus::Connected {
                last_heartbeat: Some(_)
            })
        )
    })
    .await;
    assert_eq!(texts(&hub.read(&me, &first).unwrap()), ["before", "after"]);
    assert_eq!(texts(&hub.read(&me, &second).unwrap()), ["after"]);
    let page = hub.read(&me, &second).unwrap();
    assert!(
        matches!(page.status, ConnectionStatus::Connected { .. }),
        "{:?}",
        page.status
    );
}

#[tokio::test]
async fn count_bound_evicts_oldest_with_gap_and_dropped() {
    let fake = fake();
    let hub = hub(&fake);
    let me = owner("a");
    let uri = subscribe(&hub, &me, json!({"self_id": SELF})).await;
    let first = hub.read(&me, &uri).unwrap();
    for i in 0..300 {
        fake.push(&private_message(SELF, USER, &i.to_string()));
    }
    eventually(|| hub.read(&me, &uri).unwrap().dropped_events == 44).await;
    let page = hub.read(&me, &uri).unwrap();
    assert_eq!(page.entries.len(), MAX_BUFFERED_EVENTS);
    assert_eq!(page.dropped_events, 44);
    assert!(page.gap);
    assert_eq!(texts(&page)[0], "44");
    let stale = hub
        .read(&me, &format!("{uri}?after={}", first.next_cursor))
        .unwrap();
    assert!(stale.gap, "a cursor from before the eviction sees the gap");
    let caught_up = hub
        .read(&me, &format!("{uri}?after={}", page.oldest_cursor))
        .unwrap();
    assert!(!caught_up.gap);
    assert_eq!(caught_up.entries.len(), 256);
}

#[tokio::test]
async fn byte_bound_evicts_oldest() {
    let fake = fake();
    let hub = hub(&fake);
    let me = owner("a");
    let uri = subscribe(&hub, &me, json!({"self_id": SELF})).await;
    // The text appears twice in the event (segment and raw_message): about 200 KB a frame.
    let big = "x".repeat(100_000);
    for _ in 0..10 {
        fake.push(&private_message(SELF, USER, &big));
    }
    eventually(|| hub.read(&me, &uri).unwrap().dropped_events == 5).await;
    let page = hub.read(&me, &uri).unwrap();
    assert_eq!(
        page.entries.len(),
        5,
        "five 200 KB events fit in 1 MiB, six do not"
    );
    assert!(page.gap);
}

#[tokio::test]
async fn cursors_page_forward_without_consuming_and_belong_to_one_resource() {
    let fake = fake();
    let hub = hub(&fake);
    let me = owner("a");
    let uri = subscribe(&hub, &me, json!({"self_id": SELF})).await;
    let other = subscribe(&hub, &me, json!({"self_id": SELF})).await;
    fake.push(&private_message(SELF, USER, "one"));
    fake.push(&private_message(SELF, USER, "two"));
    eventually(|| count(&hub, &me, &uri) == 2).await;
    let page = hub.read(&me, &uri).unwrap();
    assert_eq!(
        texts(&page),
        texts(&hub.read(&me, &uri).unwrap()),
        "reads do not consume"
    );
    let after_one = hub
        .read(&me, &format!("{uri}?after={}", page.entries[0].cursor))
        .unwrap();
    assert_eq!(texts(&after_one), ["two"]);
    let after_all = hub
        .read(&me, &format!("{uri}?after={}", page.next_cursor))
        .unwrap();
    assert!(after_all.entries.is_empty());
    assert_eq!(after_all.next_cursor, page.next_cursor);
    assert!(!after_all.gap);
    let foreign = hub
        .read(&me, &format!("{other}?after={}", page.next_cursor))
        .unwrap_err();
    assert!(
        matches!(foreign, EventsError::BadCursor { .. }),
        "{foreign}"
    );
    assert!(
        foreign.to_string().contains("another event resource"),
        "{foreign}"
    );
    for bad in ["garbage", "zz-1", "%00", "x&y=1"] {
        let err = hub.read(&me, &format!("{uri}?after={bad}")).unwrap_err();
        assert!(matches!(err, EventsError::BadCursor { .. }), "{bad}: {err}");
    }
    let ahead = page.next_cursor.replace("-2", "-99");
    assert!(hub.read(&me, &format!("{uri}?after={ahead}")).is_err());
}

#[tokio::test]
async fn a_rejected_token_is_reported_as_a_token_problem() {
    let fake = fake();
    let hub = EventHub::new(
        EventsUrl::parse(&fake.url).unwrap(),
        Some("wrong-token".into()),
    );
    let me = owner("a");
    let err = hub
        .subscribe(&me, filter(json!({"self_id": SELF})), quiet())
        .await
        .unwrap_err();
    assert_eq!(err, EventsError::TokenRejected);
    assert!(err.to_string().contains("SNOWLUMA_MCP_TOKEN"));
    assert!(!err.to_string().contains("wrong-token"));
    assert!(!format!("{hub:?}").contains("wrong-token"));
    assert!(hub.list(&me).is_empty(), "no dead resource is left behind");
    assert!(hub.connection_status().is_none());
}

#[tokio::test]
async fn a_wrong_path_fails_to_connect() {
    let fake = fake();
    let url = EventsUrl::parse(&format!("ws://127.0.0.1:{}/event", fake.port)).unwrap();
    let hub = EventHub::new(url, Some("ws-secret".into()));
    let err = hub
        .subscribe(&owner("a"), filter(json!({"self_id": SELF})), quiet())
        .await;
    assert!(
        matches!(err, Err(EventsError::ConnectFailed { .. })),
        "{err:?}"
    );
}

async fn stops_on(frame: &str) -> (Option<StopReason>, FakeEventSocket, EventHub, String) {
    let fake = fake();
    let hub = hub(&fake);
    let me = owner("a");
    let uri = subscribe(&hub, &me, json!({"self_id": SELF})).await;
    fake.push_raw(frame);
    let reason = stopped_reason(&hub).await;
    (reason, fake, hub, uri)
}

#[tokio::test]
async fn an_account_mismatch_stops_the_connection_and_blocks_new_subscriptions() {
    let frame = group_message(99999, GROUP, USER, "x").to_string();
    let (reason, fake, hub, uri) = stops_on(&frame).await;
    assert_eq!(reason, Some(StopReason::AccountMismatch));
    let me = owner("a");
    let page = hub.read(&me, &uri).unwrap();
    assert!(page.entries.is_empty(), "the foreign event is not buffered");
    assert!(page.status.is_stopped());
    eventually(|| fake.open_connections() == 0).await;
    assert_eq!(fake.open_connections(), 0);
    let again = hub
        .subscribe(&me, filter(json!({"self_id": SELF})), quiet())
        .await;
    assert!(
        matches!(again, Err(EventsError::ConnectionStopped { .. })),
        "{again:?}"
    );
}

#[tokio::test]
async fn malformed_frames_stop_the_connection() {
    for frame in [
        "not json",
        "[1,2]",
        r#"{"post_type":"message"}"#,
        r#"{"self_id":10001}"#,
    ] {
        let (reason, ..) = stops_on(frame).await;
        assert_eq!(reason, Some(StopReason::MalformedEvent), "{frame}");
    }
}

#[tokio::test]
async fn an_oversized_frame_stops_the_connection() {
    let frame = private_message(SELF, USER, &"y".repeat(MAX_FRAME_BYTES)).to_string();
    let (reason, _fake, hub, uri) = stops_on(&frame).await;
    assert_eq!(reason, Some(StopReason::FrameTooLarge));
    assert!(hub.read(&owner("a"), &uri).unwrap().entries.is_empty());
}

#[tokio::test]
async fn a_disconnect_reconnects_and_every_resource_records_one_gap() {
    let fake = fake();
    let hub = hub(&fake);
    let me = owner("a");
    let one = subscribe(&hub, &me, json!({"self_id": SELF})).await;
    let two = subscribe(&hub, &me, json!({"self_id": SELF})).await;
    fake.push(&private_message(SELF, USER, "kept"));
    eventually(|| count(&hub, &me, &one) == 1).await;
    fake.drop_connections();
    // Back on its own: no release, no new subscription.
    eventually(|| count(&hub, &me, &one) == 2 && count(&hub, &me, &two) == 2).await;
    assert_eq!(fake.handshakes(), 2, "one reconnect");
    fake.push(&private_message(SELF, USER, "after"));
    eventually(|| count(&hub, &me, &two) == 3).await;
    for uri in [&one, &two] {
        let page = hub.read(&me, uri).unwrap();
        assert!(
            matches!(page.status, ConnectionStatus::Connected { .. }),
            "{:?}",
            page.status
        );
        assert_eq!(texts(&page), ["kept", "-", "after"]);
        let gap = page.entries[1]
            .gap
            .as_ref()
            .expect("the middle entry is the gap");
        assert!(page.entries[1].event.is_none());
        assert!(gap.from <= gap.to, "{gap:?}");
        assert!(gap.reason.contains("event socket"), "{gap:?}");
    }
}

#[tokio::test]
async fn a_close_frame_is_named_in_the_gap() {
    let fake = fake();
    let hub = hub(&fake);
    let uri = subscribe(&hub, &owner("a"), json!({"self_id": SELF})).await;
    fake.close_connections(1001);
    eventually(|| count(&hub, &owner("a"), &uri) == 1).await;
    let page = hub.read(&owner("a"), &uri).unwrap();
    let gap = page.entries[0].gap.as_ref().expect("a gap entry");
    assert!(gap.reason.contains("1001"), "{gap:?}");
}

#[tokio::test]
async fn releasing_the_last_resource_closes_the_socket() {
    let fake = fake();
    let hub = hub(&fake);
    let me = owner("a");
    let one = subscribe(&hub, &me, json!({"self_id": SELF})).await;
    let two = subscribe(&hub, &me, json!({"self_id": SELF})).await;
    assert_eq!(fake.handshakes(), 1, "resources share one connection");
    hub.release(&me, &one).unwrap();
    assert!(hub.read(&me, &one).is_err());
    assert_eq!(fake.open_connections(), 1);
    hub.release(&me, &two).unwrap();
    eventually(|| fake.open_connections() == 0).await;
    assert_eq!(fake.open_connections(), 0);
    assert!(hub.connection_status().is_none());
}

#[tokio::test]
async fn owners_only_see_their_own_resources() {
    let fake = fake();
    let hub = hub(&fake);
    let (alice, bob) = (owner("alice"), owner("bob"));
    let a1 = subscribe(&hub, &alice, json!({"self_id": SELF})).await;
    subscribe(&hub, &alice, json!({"self_id": SELF})).await;
    let b1 = subscribe(&hub, &bob, json!({"self_id": SELF})).await;
    let err = hub.read(&bob, &a1).unwrap_err();
    assert!(matches!(err, EventsError::UnknownResource { .. }));
    assert_eq!(
        hub.release(&bob, &a1).unwrap_err(),
        err,
        "same answer as a missing resource"
    );
    assert!(
        hub.wait(&bob, &a1, None, 0, 1, CancellationToken::new())
            .await
            .is_err()
    );
    assert_eq!(hub.list(&bob).len(), 1);
    assert_eq!(hub.release_owner(&alice), 2);
    assert!(hub.list(&alice).is_empty());
    assert!(
        hub.read(&bob, &b1).is_ok(),
        "bob keeps his resource and the connection"
    );
    assert_eq!(fake.open_connections(), 1);
    assert_eq!(hub.release_owner(&bob), 1);
    eventually(|| fake.open_connections() == 0).await;
    assert_eq!(fake.open_connections(), 0);
}

#[tokio::test]
async fn at_most_sixteen_resources_and_one_account() {
    let fake = fake();
    let hub = hub(&fake);
    let me = owner("a");
    let other = hub
        .subscribe(&me, filter(json!({"self_id": SELF})), quiet())
        .await
        .unwrap();
    let err = hub
        .subscribe(&me, filter(json!({"self_id": 10002})), quiet())
        .await
        .unwrap_err();
    assert_eq!(
        err,
        EventsError::OtherAccount {
            connected: SELF,
            requested: 10002
        }
    );
    for _ in 1..MAX_RESOURCES {
        subscribe(&hub, &owner("b"), json!({"self_id": SELF})).await;
    }
    let err = hub
        .subscribe(&me, filter(json!({"self_id": SELF})), quiet())
        .await
        .unwrap_err();
    assert_eq!(
        err,
        EventsError::TooManyResources {
            limit: 16,
            share: None
        }
    );
    assert!(err.to_string().contains("16"));
    hub.release(&me, &other).unwrap();
    assert!(
        hub.subscribe(&me, filter(json!({"self_id": SELF})), quiet())
            .await
            .is_ok()
    );
}

#[test]
fn the_events_url_is_validated_at_start_up() {
    use snowluma_mcp::config::Config;
    let config =
        Config::try_from_args(["snowluma-mcp", "--events-url", "ws://127.0.0.1:3001/"]).unwrap();
    assert_eq!(config.events_url.unwrap().as_str(), "ws://127.0.0.1:3001/");
    let err = Config::try_from_args(["snowluma-mcp", "--events-url", "http://127.0.0.1:3001/"])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("SNOWLUMA_MCP_EVENTS_URL") && err.contains("ws:"),
        "{err}"
    );
}
