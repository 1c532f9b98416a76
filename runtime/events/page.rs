//! Reading an event resource: the page of a buffer after a cursor, and the `?after=` of a
//! resource URI. Pure functions of their inputs, so the fuzz targets drive them without a
//! connection.

use serde_json::value::RawValue;

use super::buffer::{EventBuffer, Gap, Kept, cursor, parse_cursor};
use super::status::ConnectionStatus;
use super::{EventsError, Page, PageEntry};

/// One read of resource `id` whose events are in `buffer`: at most `limit` events after the
/// cursor `after` (as the client sent it; `None` reads from the oldest kept event). Pure, so
/// the fuzz target can check cursors and pages without a connection.
pub fn read_page(
    id: &str,
    buffer: &EventBuffer,
    after: Option<&str>,
    limit: usize,
    status: ConnectionStatus,
    notification_failed: bool,
) -> Result<Page, EventsError> {
    let after = after
        .map(|raw| parse_cursor(id, buffer.last_seq(), raw))
        .transpose()?
        .unwrap_or(0);
    let slice = buffer.slice(after, limit);
    Ok(Page {
        entries: slice
            .entries
            .into_iter()
            .map(|(seq, kept)| match kept {
                Kept::Event {
                    text, recovered, ..
                } => PageEntry {
                    cursor: cursor(id, seq),
                    event: Some(raw_event(&text)),
                    gap: None,
                    recovered,
                },
                Kept::Gap(gap) => PageEntry {
                    cursor: cursor(id, seq),
                    event: None,
                    gap: Some(Gap::clone(&gap)),
                    recovered: false,
                },
            })
            .collect(),
        status,
        next_cursor: cursor(id, slice.next_seq),
        oldest_cursor: cursor(id, slice.oldest_seq),
        dropped_events: slice.dropped,
        gap: slice.gap,
        notification_failed,
    })
}

/// The kept text as a raw JSON value: it was parsed as a JSON object on arrival, so it is
/// valid JSON; the fallback only guards against that invariant breaking.
fn raw_event(text: &str) -> Box<RawValue> {
    RawValue::from_string(text.to_string())
        .unwrap_or_else(|_| RawValue::from_string("null".into()).expect("null is JSON"))
}

/// Splits `snowluma://onebot/events/<id>?after=<cursor>`; only `after` is understood.
pub fn split_after(uri: &str) -> Result<(&str, Option<String>), EventsError> {
    let Some((base, query)) = uri.split_once('?') else {
        return Ok((uri, None));
    };
    let mut after = None;
    for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
        if key != "after" || after.is_some() {
            return Err(EventsError::BadCursor {
                problem: "must be given once as ?after=<cursor>, with no other query parameters"
                    .into(),
            });
        }
        after = Some(value.into_owned());
    }
    Ok((base, after))
}
