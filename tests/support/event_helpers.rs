//! Shared helpers of the event tests: a recording notifier, a hub on the fake WebSocket
//! adapter, and bounded polling.
#![allow(dead_code)] // each includer uses a different part

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;
use snowluma_mcp::events::*;
use tokio::sync::Semaphore;

use super::fake_snowluma_ws::{FakeEventSocket, WsOptions};

pub const SELF: i64 = 10001;
pub const GROUP: i64 = 20001;
pub const USER: i64 = 30001;

/// Counts calls; optionally fails, optionally blocks each call until the test adds a permit.
#[derive(Default)]
pub struct Recorder {
    pub calls: AtomicUsize,
    pub fail: bool,
    pub gate: Option<Arc<Semaphore>>,
}

impl EventNotifier for Recorder {
    fn updated(&self, _uri: &str) -> BoxFuture<'static, Result<(), String>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let gate = self.gate.clone();
        let fail = self.fail;
        async move {
            if let Some(gate) = gate {
                gate.acquire().await.map_err(|e| e.to_string())?.forget();
            }
            if fail {
                Err("client went away".into())
            } else {
                Ok(())
            }
        }
        .boxed()
    }
}

pub fn quiet() -> Arc<dyn EventNotifier> {
    Arc::new(Recorder::default())
}

pub fn fake() -> FakeEventSocket {
    FakeEventSocket::start(WsOptions {
        token: Some("ws-secret".into()),
        ..WsOptions::default()
    })
}

pub fn hub(fake: &FakeEventSocket) -> EventHub {
    EventHub::new(
        EventsUrl::parse(&fake.url).unwrap(),
        Some("ws-secret".into()),
    )
}

pub fn filter(args: Value) -> EventFilter {
    EventFilter::from_json(&args).unwrap()
}

pub fn owner(name: &str) -> OwnerId {
    OwnerId::new(name)
}

pub async fn subscribe(hub: &EventHub, who: &OwnerId, args: Value) -> String {
    hub.subscribe(who, filter(args), quiet()).await.unwrap()
}

/// Polls `condition` every 10 ms for at most 5 s; the assertion after it says what failed.
pub async fn eventually(mut condition: impl FnMut() -> bool) {
    for _ in 0..500 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

pub fn count(hub: &EventHub, who: &OwnerId, uri: &str) -> usize {
    hub.read(who, uri).map_or(0, |p| p.entries.len())
}

pub fn texts(page: &Page) -> Vec<String> {
    page.entries
        .iter()
        .map(|e| {
            e.parsed()["raw_message"]
                .as_str()
                .unwrap_or("-")
                .to_string()
        })
        .collect()
}

pub async fn stopped_reason(hub: &EventHub) -> Option<StopReason> {
    eventually(|| hub.connection_status().is_some_and(|s| s.is_stopped())).await;
    match hub.connection_status() {
        Some(ConnectionStatus::Stopped { reason, .. }) => Some(reason),
        _ => None,
    }
}
