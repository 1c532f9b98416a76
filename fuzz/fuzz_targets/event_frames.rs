//! SnowLuma's WebSocket events as the event resources see them: the subscription filter, the
//! check every frame gets, the bounded buffer, `?after=` cursors and page assembly.
//!
//! Input: text lines. The first is a subscription's arguments (JSON; not valid: the filter
//! `{"self_id": 10001}`). Each later line is one of:
//! - `?<query>`: a `resources/read` of the resource with that query (`?after=<cursor>`);
//! - `#<n>`: read the whole buffer in pages of `n` by following `next_cursor`;
//! - `*<n>`: the previous frame arrives `n` more times (to reach the buffer's bounds);
//! - anything else: one text frame from SnowLuma.
//!
//! Checked: the filter's bounds; each frame's verdict against an independent reading of the
//! rules (JSON object, integer `self_id` of the account, string `post_type`), and that the
//! first bad frame stops the connection; kept events obey the filter, the buffer keeps the
//! newest events within its bounds and hands them back as sent; a cursor reads exactly the
//! events after it, a cursor the resource never issued is refused, and paging by
//! `next_cursor` returns every kept event once, in order.

#![no_main]

use std::collections::BTreeSet;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use snowluma_mcp::events::{
    ConnectionStatus, EventFilter, EventType, MAX_BUFFERED_BYTES, MAX_BUFFERED_EVENTS,
    MAX_FILTER_IDS, MAX_WAIT_LIMIT, StopReason, URI_PREFIX,
};
use snowluma_mcp::fuzz_api::{
    EventBuffer, FrameVerdict, check_frame, cursor, parse_cursor, read_page, split_after,
};

/// The resource id every cursor in the seeds names.
const ID: &str = "00112233aabbccdd";
/// Most frames one input delivers, repeats included.
const MAX_FRAMES: usize = 1200;

#[derive(Debug, PartialEq)]
enum Expected {
    Malformed,
    OtherAccount,
    Heartbeat(Option<i64>),
    Event(EventType),
    Ignored,
}

fn expected(text: &str, self_id: i64) -> Expected {
    let Ok(event) = serde_json::from_str::<Value>(text) else {
        return Expected::Malformed;
    };
    let (Some(id), Some(post_type)) = (
        event.get("self_id").and_then(Value::as_i64),
        event.get("post_type").and_then(Value::as_str),
    ) else {
        return Expected::Malformed;
    };
    if id != self_id {
        return Expected::OtherAccount;
    }
    match post_type {
        "meta_event" => Expected::Heartbeat(event.get("time").and_then(Value::as_i64)),
        "message" | "message_sent" => Expected::Event(EventType::Message),
        "notice" => Expected::Event(EventType::Notice),
        "request" => Expected::Event(EventType::Request),
        _ => Expected::Ignored,
    }
}

fn check_ids(ids: &Option<BTreeSet<i64>>) {
    if let Some(ids) = ids {
        assert!((1..=MAX_FILTER_IDS).contains(&ids.len()));
        assert!(ids.iter().all(|id| *id > 0));
    }
}

fn filter_of(line: &str) -> EventFilter {
    let fallback = || EventFilter::from_json(&json!({"self_id": 10001})).unwrap();
    let Ok(args) = serde_json::from_str::<Value>(line) else {
        return fallback();
    };
    match EventFilter::from_json(&args) {
        Ok(filter) => {
            assert!(filter.self_id > 0);
            assert!(!filter.types.is_empty());
            check_ids(&filter.group_ids);
            check_ids(&filter.user_ids);
            filter
        }
        Err(error) => {
            assert!(!error.to_string().is_empty());
            fallback()
        }
    }
}

/// The JSON text of a frame as a resource hands it back: without surrounding white space.
fn json_trimmed(text: &str) -> &str {
    text.trim_matches([' ', '\t', '\n', '\r'])
}

struct Resource {
    filter: EventFilter,
    buffer: EventBuffer,
    /// Every event the filter kept, oldest first; event n has sequence number n + 1.
    kept: Vec<String>,
    status: ConnectionStatus,
}

impl Resource {
    fn frame(&mut self, text: &str) {
        if self.status.is_stopped() {
            return;
        }
        let verdict = check_frame(text, self.filter.self_id);
        let want = expected(text, self.filter.self_id);
        match (verdict, want) {
            (Err((reason @ StopReason::MalformedEvent, detail)), Expected::Malformed)
            | (Err((reason @ StopReason::AccountMismatch, detail)), Expected::OtherAccount) => {
                // The first bad frame stops the connection; later frames are never read.
                assert!(!detail.is_empty());
                self.status = ConnectionStatus::Stopped { reason, detail };
            }
            (Ok(FrameVerdict::Heartbeat { time, .. }), Expected::Heartbeat(want)) => {
                assert_eq!(time, want);
                self.status = ConnectionStatus::Connected {
                    last_heartbeat: time,
                };
            }
            (Ok(FrameVerdict::Event { kind, event }), Expected::Event(want)) => {
                assert_eq!(kind, want);
                if self.filter.accepts(kind, &event) {
                    assert!(self.filter.types.contains(&kind));
                    for (ids, key) in [
                        (&self.filter.group_ids, "group_id"),
                        (&self.filter.user_ids, "user_id"),
                    ] {
                        if let Some(ids) = ids {
                            let id = event.get(key).and_then(Value::as_i64);
                            assert!(id.is_some_and(|id| ids.contains(&id)));
                        }
                    }
                    self.buffer.push(Arc::from(text));
                    self.kept.push(text.to_string());
                    assert!((1..=MAX_BUFFERED_EVENTS).contains(&self.buffer.len()));
                }
            }
            (Ok(FrameVerdict::Ignored), Expected::Ignored) => {}
            (verdict, want) => panic!("frame {text:?}: got {verdict:?}, expected {want:?}"),
        }
    }

    fn check_bounds(&self) {
        if self.kept.is_empty() {
            return;
        }
        let page = self
            .read(None, MAX_WAIT_LIMIT)
            .expect("reading from the start");
        let held = page.entries.len();
        assert!((1..=MAX_BUFFERED_EVENTS).contains(&held));
        assert_eq!(held, self.buffer.len());
        let bytes: usize = self.kept[self.kept.len() - held..]
            .iter()
            .map(String::len)
            .sum();
        assert!(bytes <= MAX_BUFFERED_BYTES || held == 1);
        assert_eq!(page.dropped_events as usize, self.kept.len() - held);
    }

    fn read(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<snowluma_mcp::events::Page, snowluma_mcp::events::EventsError> {
        let page = read_page(ID, &self.buffer, after, limit, self.status.clone(), false)?;
        assert_eq!(page.status, self.status);
        Ok(page)
    }

    /// Sequence number of the oldest event still held (last + 1 when none is).
    fn oldest_held(&self) -> u64 {
        (self.kept.len() - self.buffer.len()) as u64 + 1
    }

    /// A read with a raw `after` cursor, checked against what the buffer holds.
    fn read_after(&self, raw: Option<&str>, limit: usize) {
        let last = self.kept.len() as u64;
        let after = match raw.map(|raw| parse_cursor(ID, last, raw)) {
            None => 0,
            Some(Ok(seq)) => {
                assert!(seq <= last, "a cursor past the newest event was accepted");
                seq
            }
            Some(Err(_)) => {
                assert!(self.read(raw, limit).is_err(), "a bad cursor was read");
                return;
            }
        };
        let page = self.read(raw, limit).expect("a valid cursor reads");
        let first = (after + 1).max(self.oldest_held());
        let want: Vec<u64> = (first..=last).take(limit).collect();
        assert_eq!(page.entries.len(), want.len());
        for (entry, seq) in page.entries.iter().zip(&want) {
            assert_eq!(entry.cursor, cursor(ID, *seq));
            assert_eq!(
                entry.event.as_ref().expect("an event entry").get(),
                json_trimmed(&self.kept[*seq as usize - 1])
            );
        }
        let next = want.last().copied().unwrap_or(after);
        assert_eq!(page.next_cursor, cursor(ID, next));
        assert_eq!(page.oldest_cursor, cursor(ID, self.oldest_held() - 1));
        assert_eq!(page.gap, after + 1 < self.oldest_held());
        // The cursors it hands out are accepted again.
        for issued in [&page.next_cursor, &page.oldest_cursor] {
            assert!(parse_cursor(ID, last, issued).is_ok());
        }
    }

    /// Reads everything held in pages of `limit`, following `next_cursor`.
    fn page_through(&self, limit: usize) {
        let all = self.read(None, MAX_WAIT_LIMIT).unwrap();
        let mut after: Option<String> = None;
        let mut seen = Vec::new();
        loop {
            let page = self.read(after.as_deref(), limit).unwrap();
            assert!(page.entries.len() <= limit);
            if page.entries.is_empty() {
                break;
            }
            seen.extend(page.entries.iter().map(|e| e.cursor.clone()));
            after = Some(page.next_cursor);
        }
        let want: Vec<String> = all.entries.iter().map(|e| e.cursor.clone()).collect();
        assert_eq!(seen, want);
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut lines = text.split('\n');
    let filter = filter_of(lines.next().unwrap_or_default());
    let mut resource = Resource {
        filter,
        buffer: EventBuffer::new(),
        kept: Vec::new(),
        status: ConnectionStatus::Connecting,
    };
    let mut previous: Option<&str> = None;
    let mut frames = 0;
    for line in lines {
        if let Some(query) = line.strip_prefix('?') {
            let uri = format!("{URI_PREFIX}{ID}?{query}");
            if let Ok((base, after)) = split_after(&uri) {
                assert_eq!(base, format!("{URI_PREFIX}{ID}"));
                resource.read_after(after.as_deref(), MAX_WAIT_LIMIT);
            }
        } else if let Some(n) = line.strip_prefix('#') {
            let limit = n
                .trim()
                .parse::<usize>()
                .unwrap_or(1)
                .clamp(1, MAX_WAIT_LIMIT);
            resource.check_bounds();
            resource.page_through(limit);
            resource.read_after(None, limit);
        } else if let Some(n) = line.strip_prefix('*') {
            let Some(frame) = previous else { continue };
            let times = n.trim().parse::<usize>().unwrap_or(1);
            for _ in 0..times.min(MAX_FRAMES.saturating_sub(frames)) {
                resource.frame(frame);
                frames += 1;
            }
        } else if frames < MAX_FRAMES {
            resource.frame(line);
            previous = Some(line);
            frames += 1;
        }
    }
    if !resource.kept.is_empty() {
        resource.check_bounds();
        resource.read_after(
            Some(&cursor(ID, resource.kept.len() as u64)),
            MAX_WAIT_LIMIT,
        );
    }
});
