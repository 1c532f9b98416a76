//! One resource's bounded buffer of entries (events and outage gaps) and its cursors.
//!
//! Entries are numbered 1, 2, 3... per resource. A cursor names a position "after entry n" of
//! one resource: `<resource id>-<n>`. The oldest entries are evicted first when the count or
//! the byte budget is exceeded; a reader whose cursor points before the oldest kept entry sees
//! `gap: true`. An outage of the connection is one entry of its own ([`Gap`]), so a reader
//! who reads across a SnowLuma restart sees where events may be missing.

use std::collections::VecDeque;
use std::sync::Arc;

use serde::Serialize;

use super::EventsError;

/// Most entries one resource keeps.
pub const MAX_BUFFERED_EVENTS: usize = 256;
/// Most bytes of event JSON (as received) one resource keeps.
pub const MAX_BUFFERED_BYTES: usize = 1 << 20;

/// Where the connection was down, as a resource records it once the connection is back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Gap {
    /// When the connection was lost (unix seconds; for a resource created during the outage,
    /// its creation).
    pub from: i64,
    /// When the connection was open again (unix seconds).
    pub to: i64,
    /// Why the connection was lost.
    pub reason: String,
    /// With recovery on: how many missed messages were inserted just before this entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovered: Option<usize>,
    /// With recovery on: why some group's history could not be fetched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery_error: Option<String>,
}

/// One kept entry. Events keep the frame's JSON text exactly as received: text holds memory
/// close to the JSON size (a parsed object costs several times its text), and one text is
/// shared by every resource whose filter kept it.
#[derive(Debug, Clone)]
pub enum Kept {
    Event {
        text: Arc<str>,
        /// A message event's `message_id`, for recovery's duplicate check.
        message_id: Option<i64>,
        /// Fetched with get_group_msg_history after an outage, not received live.
        recovered: bool,
    },
    Gap(Arc<Gap>),
}

impl Kept {
    fn bytes(&self) -> usize {
        match self {
            Kept::Event { text, .. } => text.len(),
            // About its JSON size; gaps are rare and small.
            Kept::Gap(gap) => 96 + gap.reason.len(),
        }
    }
}

struct Buffered {
    seq: u64,
    entry: Kept,
}

#[derive(Default)]
pub struct EventBuffer {
    kept: VecDeque<Buffered>,
    bytes: usize,
    last_seq: u64,
    dropped: u64,
}

/// What a read of the buffer found, before status is attached.
pub struct Slice {
    pub entries: Vec<(u64, Kept)>,
    pub next_seq: u64,
    pub oldest_seq: u64,
    pub dropped: u64,
    pub gap: bool,
}

impl EventBuffer {
    pub fn new() -> EventBuffer {
        EventBuffer::default()
    }

    /// Keeps one live event (its JSON text).
    pub fn push(&mut self, event: Arc<str>) {
        self.push_entry(Kept::Event {
            text: event,
            message_id: None,
            recovered: false,
        });
    }

    pub fn push_entry(&mut self, entry: Kept) {
        self.last_seq += 1;
        self.bytes += entry.bytes();
        self.kept.push_back(Buffered {
            seq: self.last_seq,
            entry,
        });
        // The newest event always stays: one frame (256 KiB) is below the byte budget.
        while self.kept.len() > 1
            && (self.kept.len() > MAX_BUFFERED_EVENTS || self.bytes > MAX_BUFFERED_BYTES)
        {
            if let Some(old) = self.kept.pop_front() {
                self.bytes -= old.entry.bytes();
                self.dropped += 1;
            }
        }
    }

    pub fn len(&self) -> usize {
        self.kept.len()
    }

    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }

    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// Whether a kept event carries this `message_id`.
    pub fn holds_message(&self, id: i64) -> bool {
        self.kept
            .iter()
            .any(|b| matches!(b.entry, Kept::Event { message_id: Some(kept), .. } if kept == id))
    }

    /// Up to `limit` events after position `after` (0 = from the start).
    pub fn slice(&self, after: u64, limit: usize) -> Slice {
        let oldest_kept = self.kept.front().map_or(self.last_seq + 1, |b| b.seq);
        // Kept sequence numbers are contiguous, so the first wanted one is found by offset.
        let skip = (after + 1).saturating_sub(oldest_kept) as usize;
        let entries: Vec<(u64, Kept)> = self
            .kept
            .iter()
            .skip(skip)
            .take(limit)
            .map(|b| (b.seq, b.entry.clone()))
            .collect();
        Slice {
            next_seq: entries.last().map_or(after, |(seq, _)| *seq),
            oldest_seq: oldest_kept - 1,
            dropped: self.dropped,
            gap: after + 1 < oldest_kept,
            entries,
        }
    }
}

pub fn cursor(resource_id: &str, seq: u64) -> String {
    format!("{resource_id}-{seq}")
}

/// Reads a cursor issued for `resource_id` whose position is at most `last_seq`.
pub fn parse_cursor(resource_id: &str, last_seq: u64, raw: &str) -> Result<u64, EventsError> {
    let malformed = || EventsError::BadCursor {
        problem: "is not a cursor this server issued; use next_cursor or oldest_cursor from a \
                  previous read of the same resource, or read without ?after"
            .into(),
    };
    let (id, seq) = raw.rsplit_once('-').ok_or_else(malformed)?;
    let seq: u64 = seq.parse().map_err(|_| malformed())?;
    if id != resource_id {
        return Err(EventsError::BadCursor {
            problem: "belongs to another event resource; cursors are only valid for the \
                      resource that issued them"
                .into(),
        });
    }
    if seq > last_seq {
        return Err(malformed());
    }
    Ok(seq)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(i: usize, len: usize) -> Arc<str> {
        let digits = i.to_string();
        Arc::from(format!(
            "{digits}{}",
            " ".repeat(len.saturating_sub(digits.len()))
        ))
    }

    #[test]
    fn count_bound_evicts_oldest_and_reports_a_gap() {
        let mut buffer = EventBuffer::new();
        for i in 0..300 {
            buffer.push(text(i, 10));
        }
        assert_eq!(buffer.len(), MAX_BUFFERED_EVENTS);
        let from_start = buffer.slice(0, 1000);
        assert!(from_start.gap);
        assert_eq!(from_start.dropped, 44);
        let Kept::Event { text, .. } = &from_start.entries[0].1 else {
            panic!("an event was kept")
        };
        assert_eq!(text.trim(), "44");
        let caught_up = buffer.slice(from_start.oldest_seq, 1000);
        assert!(!caught_up.gap);
        assert_eq!(caught_up.entries.len(), 256);
    }

    #[test]
    fn byte_bound_evicts_oldest() {
        let mut buffer = EventBuffer::new();
        for i in 0..10 {
            buffer.push(text(i, 200 * 1024));
        }
        assert_eq!(buffer.len(), 5);
        assert_eq!(buffer.slice(0, 10).dropped, 5);
    }

    #[test]
    fn cursors_are_bound_to_one_resource() {
        assert_eq!(parse_cursor("abc", 5, &cursor("abc", 3)).unwrap(), 3);
        assert!(
            parse_cursor("abc", 5, &cursor("other", 3))
                .unwrap_err()
                .to_string()
                .contains("another")
        );
        assert!(parse_cursor("abc", 5, "abc-9").is_err());
        assert!(parse_cursor("abc", 5, "garbage").is_err());
        assert!(parse_cursor("abc", 5, "abc--1").is_err());
    }
}
