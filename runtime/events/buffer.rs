//! One resource's bounded event buffer and its cursors.
//!
//! Events are numbered 1, 2, 3... per resource. A cursor names a position "after event n" of
//! one resource: `<resource id>-<n>`. The oldest events are evicted first when the count or the
//! byte budget is exceeded; a reader whose cursor points before the oldest kept event sees
//! `gap: true`.

use std::collections::VecDeque;
use std::sync::Arc;

use super::EventsError;

/// Most events one resource keeps.
pub const MAX_BUFFERED_EVENTS: usize = 256;
/// Most bytes of event JSON (as received) one resource keeps.
pub const MAX_BUFFERED_BYTES: usize = 1 << 20;

/// One kept event: the frame's JSON text exactly as received. Keeping text rather than a
/// parsed `Value` holds memory close to the JSON size (a parsed object costs several times
/// its text); one text is shared by every resource whose filter kept it.
struct Buffered {
    seq: u64,
    event: Arc<str>,
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
    pub entries: Vec<(u64, Arc<str>)>,
    pub next_seq: u64,
    pub oldest_seq: u64,
    pub dropped: u64,
    pub gap: bool,
}

impl EventBuffer {
    pub fn new() -> EventBuffer {
        EventBuffer::default()
    }

    pub fn push(&mut self, event: Arc<str>) {
        self.last_seq += 1;
        self.bytes += event.len();
        self.kept.push_back(Buffered {
            seq: self.last_seq,
            event,
        });
        // The newest event always stays: one frame (256 KiB) is below the byte budget.
        while self.kept.len() > 1
            && (self.kept.len() > MAX_BUFFERED_EVENTS || self.bytes > MAX_BUFFERED_BYTES)
        {
            if let Some(old) = self.kept.pop_front() {
                self.bytes -= old.event.len();
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

    /// Up to `limit` events after position `after` (0 = from the start).
    pub fn slice(&self, after: u64, limit: usize) -> Slice {
        let oldest_kept = self.kept.front().map_or(self.last_seq + 1, |b| b.seq);
        // Kept sequence numbers are contiguous, so the first wanted one is found by offset.
        let skip = (after + 1).saturating_sub(oldest_kept) as usize;
        let entries: Vec<(u64, Arc<str>)> = self
            .kept
            .iter()
            .skip(skip)
            .take(limit)
            .map(|b| (b.seq, b.event.clone()))
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
        assert_eq!(from_start.entries[0].1.trim(), "44");
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
