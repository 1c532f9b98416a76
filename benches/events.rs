//! Live events throughput and memory: frames from the fake SnowLuma WebSocket adapter through
//! the reader, the filter and a resource buffer to `EventHub::wait`/`read`.
//!
//! `cargo bench --bench events` prints:
//! - events/s: N group messages sent in one burst, timed from the push until a reader has
//!   seen the last one (the reader pages with `wait`, so it may lag and see gaps; the figure is
//!   the rate at which events became readable);
//! - the native floor for the same burst: a tokio-tungstenite client on its own connection to
//!   the fake, parsing every frame as JSON and applying the same filter, timed the same way,
//!   and the hub's rate over it (runs alternate, each with only its own connection open);
//! - across a reconnect: half a burst, the connection dropped (as a restarting SnowLuma would),
//!   the hub reconnecting with the shipped backoff and recording the gap, then the other half;
//!   the rate over the whole window (outage included), the outage itself (drop until the gap
//!   entry is readable) and the rate of the second half alone;
//! - heap bytes per buffered event: allocations held by one full resource (256 events),
//!   counted by a wrapping global allocator, next to the JSON size of one frame.
//!
//! Measured 2026-12-01 on the 2-core development VM while other builds ran (load 4-7), so
//! the rate swings with the load: 37,600-70,800 events/s over six runs of 100,000 events of
//! 375 B (median near 50,000), and 1,943 B of heap per buffered event for a 403 B frame, with
//! events held as their raw JSON text. Before that change: about 60-65k events/s and 5.3 KB
//! per event. On 2026-12-02, idle: 106,800-109,200 events/s through the hub against
//! 255,600-289,500 for the native client (0.37-0.43x); the hub's reader pages with `wait` and
//! took about two events a page, so part of the gap is one wake-up per page.
//!
//! Across a reconnect (issue 39), measured 2026-12-04 with the dev profile (`cargo bench
//! --profile dev --bench events`: the shared disk had no room for a release build) on the
//! loaded 2-core VM: 3,770-4,300 events/s over the whole window of 100,000 events with the
//! outage inside it (the outage, drop until the gap entry is readable, 305-349 ms: the first
//! backoff of 250-500 ms), 3,980-4,840 events/s after the reconnect, against 4,840-6,650
//! events/s for a burst without one in the same runs. The second half runs at the plain rate;
//! the window's figure is the plain rate less the backoff.

#[path = "../tests/support/fake_snowluma_ws.rs"]
mod fake_snowluma_ws;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::{Duration, Instant};

use fake_snowluma_ws::{FakeEventSocket, WsOptions, group_message};
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use serde_json::{Value, json};
use snowluma_mcp::events::{EventFilter, EventHub, EventNotifier, EventsUrl, OwnerId};
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;

struct Counting;

static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

struct Silent;

impl EventNotifier for Silent {
    fn updated(&self, _uri: &str) -> BoxFuture<'static, Result<(), String>> {
        async { Ok(()) }.boxed()
    }
}

const SELF: i64 = 10001;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let fake = FakeEventSocket::start(WsOptions::default());
        let hub = EventHub::new(EventsUrl::parse(&fake.url).expect("url"), None);
        for _ in 0..2 {
            let hub_rate = throughput(&fake, &hub, 100_000).await;
            let native_rate = native_throughput(&fake, 100_000).await;
            println!(
                "native client events/s: {native_rate:.0}; hub / native: {:.2}x",
                hub_rate / native_rate
            );
        }
        for _ in 0..2 {
            across_reconnect(&fake, &hub, 100_000).await;
        }
        memory(&fake, &hub).await;
    });
}

/// The burst of `n` group messages both readers get, and the text of the last one.
fn burst(n: usize) -> (Vec<String>, String) {
    let frames = (0..n)
        .map(|i| group_message(SELF, 20001, 30001, &format!("message {i}")).to_string())
        .collect();
    (frames, format!("message {}", n - 1))
}

/// The filter's group list: 100 ids, the one sent among them.
fn group_ids() -> Vec<i64> {
    (20001..20101).collect()
}

/// Events per second through the hub (0 if the connection stopped).
async fn throughput(fake: &FakeEventSocket, hub: &EventHub, n: usize) -> f64 {
    let me = OwnerId::new("bench");
    // A filter that has to look at every event: a group list of 100 ids including the one sent.
    let filter = EventFilter::from_json(&json!({
        "self_id": SELF, "types": ["message"], "group_ids": group_ids()
    }))
    .expect("filter");
    let uri = hub
        .subscribe(&me, filter, Arc::new(Silent))
        .await
        .expect("subscribe");
    let (frames, last_text) = burst(n);
    let frame_bytes = frames[0].len();
    let mut rate = 0.0;
    let started = Instant::now();
    fake.push_batch(Arc::new(frames));
    let (mut after, mut pages, mut read) = (None::<String>, 0usize, 0usize);
    loop {
        let page = hub
            .wait(
                &me,
                &uri,
                after.as_deref(),
                30_000,
                256,
                CancellationToken::new(),
            )
            .await
            .expect("wait");
        pages += 1;
        read += page.entries.len();
        let done = page
            .entries
            .last()
            .is_some_and(|e| e.parsed()["raw_message"] == last_text.as_str());
        after = Some(page.next_cursor);
        if done {
            let elapsed = started.elapsed();
            rate = n as f64 / elapsed.as_secs_f64();
            let dropped = hub.read(&me, &uri).expect("read").dropped_events;
            println!(
                "events/s: {rate:.0} ({n} events of {frame_bytes} B in {:.1} ms; reader took \
                 {read} in {pages} pages, buffer evicted {dropped})",
                elapsed.as_secs_f64() * 1000.0
            );
            break;
        }
        if page.status.is_stopped() {
            println!("connection stopped: {:?}", page.status);
            break;
        }
    }
    hub.release(&me, &uri).expect("release");
    tokio::time::sleep(Duration::from_millis(100)).await;
    rate
}

/// Events per second read by a plain WebSocket client: every frame parsed as JSON and checked
/// against the same filter (self id, message type, group list), timed from the push until the
/// last message is seen.
async fn native_throughput(fake: &FakeEventSocket, n: usize) -> f64 {
    // Only this client's connection may be open, or the burst would be shared with the hub's.
    open_connections(fake, 0, "the hub's connection is still open").await;
    let (mut socket, _) = tokio_tungstenite::connect_async(fake.url.as_str())
        .await
        .expect("connect to the fake");
    open_connections(fake, 1, "the fake did not count the native client").await;
    let groups = group_ids();
    let (frames, last_text) = burst(n);
    let started = Instant::now();
    fake.push_batch(Arc::new(frames));
    let mut matched = 0usize;
    // Bounded: a lost last event ends the wait after 60 s instead of never.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while let Ok(Some(message)) = tokio::time::timeout_at(deadline, socket.next()).await {
        let Ok(Message::Text(text)) = message else {
            continue;
        };
        let event: Value = serde_json::from_str(&text).expect("a JSON frame");
        let wanted = event["self_id"] == SELF
            && event["post_type"] == "message"
            && event["group_id"]
                .as_i64()
                .is_some_and(|id| groups.contains(&id));
        if wanted {
            matched += 1;
            if event["raw_message"] == last_text.as_str() {
                break;
            }
        }
    }
    let elapsed = started.elapsed();
    assert_eq!(matched, n, "the native client saw every event");
    let _ = socket.close(None).await;
    n as f64 / elapsed.as_secs_f64()
}

/// Reads `uri` from `after` until an entry satisfies `last`; returns the cursor after it.
async fn read_until(
    hub: &EventHub,
    me: &OwnerId,
    uri: &str,
    mut after: Option<String>,
    last: impl Fn(&snowluma_mcp::events::PageEntry) -> bool,
) -> Option<String> {
    loop {
        let page = hub
            .wait(
                me,
                uri,
                after.as_deref(),
                30_000,
                256,
                CancellationToken::new(),
            )
            .await
            .expect("wait");
        let done = page.entries.iter().any(&last);
        after = Some(page.next_cursor);
        if done || page.status.is_stopped() {
            return after;
        }
    }
}

/// The hub's rate across one reconnect: half the burst, a dropped connection, the other half.
async fn across_reconnect(fake: &FakeEventSocket, hub: &EventHub, n: usize) {
    let me = OwnerId::new("bench");
    let filter = EventFilter::from_json(&json!({
        "self_id": SELF, "types": ["message"], "group_ids": group_ids()
    }))
    .expect("filter");
    let uri = hub
        .subscribe(&me, filter, Arc::new(Silent))
        .await
        .expect("subscribe");
    let (frames, last_text) = burst(n);
    let first_last = format!("message {}", n / 2 - 1);
    let second: Vec<String> = frames[n / 2..].to_vec();
    let first: Vec<String> = frames[..n / 2].to_vec();
    let started = Instant::now();
    fake.push_batch(Arc::new(first));
    let after = read_until(hub, &me, &uri, None, |e| {
        e.parsed()["raw_message"] == first_last.as_str()
    })
    .await;
    let dropped_at = Instant::now();
    fake.drop_connections();
    let after = read_until(hub, &me, &uri, after, |e| e.gap.is_some()).await;
    let outage = dropped_at.elapsed();
    open_connections(fake, 1, "the hub did not reconnect").await;
    let resumed = Instant::now();
    fake.push_batch(Arc::new(second));
    read_until(hub, &me, &uri, after, |e| {
        e.parsed()["raw_message"] == last_text.as_str()
    })
    .await;
    let total = started.elapsed();
    let after_rate = (n - n / 2) as f64 / resumed.elapsed().as_secs_f64();
    println!(
        "across a reconnect: {:.0} events/s over {:.1} ms ({n} events, outage {:.1} ms until \
         the gap entry); after the reconnect {after_rate:.0} events/s",
        n as f64 / total.as_secs_f64(),
        total.as_secs_f64() * 1000.0,
        outage.as_secs_f64() * 1000.0,
    );
    hub.release(&me, &uri).expect("release");
    open_connections(fake, 0, "the hub's connection is still open").await;
}

async fn memory(fake: &FakeEventSocket, hub: &EventHub) {
    let me = OwnerId::new("bench");
    let filter = EventFilter::from_json(&json!({"self_id": SELF})).expect("filter");
    let uri = hub
        .subscribe(&me, filter, Arc::new(Silent))
        .await
        .expect("subscribe");
    let frame = group_message(SELF, 20001, 30001, "a typical short message").to_string();
    // Fill once so buffers and channels reach their steady size, then measure a full refill.
    fake.push_batch(Arc::new(vec![frame.clone(); 256]));
    wait_for_total(hub, &me, &uri, 256).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let before = LIVE_BYTES.load(Ordering::Relaxed);
    fake.push_batch(Arc::new(vec![frame.clone(); 256]));
    wait_for_total(hub, &me, &uri, 512).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let after = LIVE_BYTES.load(Ordering::Relaxed);
    // The refill replaced 256 old events with 256 new ones, so compare against an empty buffer.
    hub.release(&me, &uri).expect("release");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let released = LIVE_BYTES.load(Ordering::Relaxed);
    println!(
        "heap per buffered event: {:.0} B (frame JSON {} B; 256 events held {} B, steady-state \
         refill delta {} B)",
        (after - released) as f64 / 256.0,
        frame.len(),
        after - released,
        after - before
    );
}

/// Waits (at most 5 s) until the fake has `count` open connections; panics with `why` if not.
async fn open_connections(fake: &FakeEventSocket, count: usize, why: &str) {
    for _ in 0..500 {
        if fake.open_connections() == count {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{why}: {} open connections", fake.open_connections());
}

async fn wait_for_total(hub: &EventHub, me: &OwnerId, uri: &str, total: u64) {
    for _ in 0..1000 {
        let page = hub.read(me, uri).expect("read");
        if page.entries.len() as u64 + page.dropped_events >= total {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
