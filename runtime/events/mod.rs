//! Live OneBot events as MCP resources, without any MCP types.
//!
//! An [`EventHub`] is created once per process from [`EventsUrl`] and the access token. A
//! client subscribes with a [`SubscribeRequest`] (validated into an [`EventFilter`]) and gets
//! a canonical `snowluma://onebot/events/<id>` URI; it reads [`Page`]s with cursors, or waits
//! for the next event. All resources share one WebSocket connection, opened by the first
//! subscription and closed when the last resource is released. Limits: 16 resources per
//! process; per resource 256 events and 1 MiB of event JSON; 256 KiB per incoming frame.
//!
//! Ownership: every call names an [`OwnerId`] (the MCP session). Another owner's resource is
//! answered as if it did not exist.
//!
//! Restarts: the connection reopens with backoff after SnowLuma closes it, drops it or misses
//! heartbeats; each resource records the outage as one gap entry in its buffer, optionally after
//! the missed group messages (fetched through a [`MessageHistory`]). Readers never resubscribe.
//!
//! Notifications: each resource has an [`EventNotifier`] given at subscription, called with
//! the canonical URI when the resource gains entries or its connection stops. Calls are
//! coalesced (while one is pending or running, further changes collapse into one more call).
//! Whether anyone is listening (legacy `resources/subscribe`, modern `subscriptions/listen`)
//! is the notifier's business: the hub always calls it, and it may return `Ok(())` without
//! sending. An `Err` sets the resource's sticky `notification_failed` flag.

pub(crate) mod buffer;
pub(crate) mod connection;
mod error;
mod feed;
mod filter;
pub(crate) mod hub;
mod leases;
pub(crate) mod page;
mod probe;
mod recovery;
mod status;

pub use crate::config::EventsUrl;
pub use buffer::{Gap, MAX_BUFFERED_BYTES, MAX_BUFFERED_EVENTS};
pub use connection::MAX_FRAME_BYTES;
pub use error::EventsError;
pub use filter::{EventFilter, EventType, MAX_FILTER_IDS, SubscribeRequest};
pub use hub::{EventHub, MAX_RESOURCES, MAX_WAIT_LIMIT, MAX_WAIT_MS};
pub use leases::Leases;
pub use probe::{ProbeReport, probe};
pub use recovery::MessageHistory;
pub use status::{ConnectionStatus, StopReason};

use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// The prefix of every event resource URI.
pub const URI_PREFIX: &str = "snowluma://onebot/events/";

/// Who holds a resource: an opaque key, in practice one per MCP connection.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OwnerId(Arc<str>);

impl OwnerId {
    pub fn new(key: impl Into<String>) -> OwnerId {
        OwnerId(Arc::from(key.into()))
    }

    /// The principal whose resource this is (see `config::principals::principal_of`).
    pub fn principal(&self) -> &str {
        crate::config::principals::principal_of(&self.0)
    }
}

/// Told when a resource changed; implemented by the MCP server.
pub trait EventNotifier: Send + Sync {
    /// Deliver "resource `uri` changed" to whoever listens. `Err` describes a failed delivery.
    fn updated(&self, uri: &str) -> BoxFuture<'static, Result<(), String>>;
}

/// One read of a resource. Reads do not consume: the same cursor reads the same events while
/// they are still buffered.
#[derive(Debug, Clone, Serialize)]
pub struct Page {
    /// Events after the cursor, oldest first.
    pub entries: Vec<PageEntry>,
    pub status: ConnectionStatus,
    /// Pass as `?after=` to get only newer events.
    pub next_cursor: String,
    /// The position just before the oldest buffered event: reading after it returns everything
    /// still kept.
    pub oldest_cursor: String,
    /// Events evicted from this resource so far (buffer bounds).
    pub dropped_events: u64,
    /// True when events between the cursor and the oldest buffered event were evicted.
    pub gap: bool,
    /// True once a change notification for this resource failed to be delivered.
    pub notification_failed: bool,
}

/// One entry of a page: an event, or (`gap`) an outage of the connection.
#[derive(Debug, Clone, Serialize)]
pub struct PageEntry {
    /// The position of this entry; reading `?after=` it returns the entries that follow.
    pub cursor: String,
    /// The OneBot event as SnowLuma sent it (its JSON text, unparsed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<Box<RawValue>>,
    /// Where the connection was down; events from that time may be missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gap: Option<Gap>,
    /// The event was fetched with get_group_msg_history after an outage, not received live.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub recovered: bool,
}

impl PageEntry {
    /// The event parsed, for callers that inspect it; `Null` for a gap.
    pub fn parsed(&self) -> Value {
        self.event
            .as_ref()
            .and_then(|e| serde_json::from_str(e.get()).ok())
            .unwrap_or(Value::Null)
    }
}

/// One held resource, for `resources/list`.
#[derive(Debug, Clone, Serialize)]
pub struct ResourceSummary {
    pub uri: String,
    pub filter: EventFilter,
    pub buffered_events: usize,
}
