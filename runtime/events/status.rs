//! What the reader task and the hub say to each other: where the connection stands, and the
//! calls the task makes into the hub ([`Feed`]). A leaf of its own, so the task
//! (`connection.rs`) and the hub (`hub.rs`, fed by `feed.rs`) never import each other's files
//! the other way round: the hub starts the task, and the task knows the hub only as a `Feed`.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::Value;

use super::filter::EventType;
use super::recovery::Recovery;

/// Where the shared connection stands, as every read reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ConnectionStatus {
    /// Opening the socket or waiting for SnowLuma's first frame.
    Connecting,
    /// Open; `last_heartbeat` is the `time` of SnowLuma's latest heartbeat or lifecycle event.
    Connected { last_heartbeat: Option<i64> },
    /// Lost; the next attempt to reopen it is number `attempt`, at `next_attempt_at_ms` (unix
    /// milliseconds). `since` (unix seconds) is when it was lost; `detail` says why it was
    /// lost or why the latest attempt failed.
    Reconnecting {
        attempt: u32,
        next_attempt_at_ms: i64,
        since: i64,
        detail: String,
    },
    /// Closed for good. Release every resource before subscribing again.
    Stopped { reason: StopReason, detail: String },
}

/// Why the connection stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Close code 1008 (or HTTP 401/403 at the handshake): the access token was rejected.
    TokenRejected,
    /// An event carried another `self_id`.
    AccountMismatch,
    /// A frame was not a OneBot event.
    MalformedEvent,
    /// A frame exceeded 256 KiB.
    FrameTooLarge,
    /// The first connection could not be opened, or the URL is not a WebSocket adapter.
    ConnectFailed,
}

impl ConnectionStatus {
    pub fn is_stopped(&self) -> bool {
        matches!(self, ConnectionStatus::Stopped { .. })
    }
}

/// One outage of the connection, ended by a successful reconnect.
pub struct Outage {
    pub since: i64,
    pub until: i64,
    pub reason: String,
    pub recovered: Option<Recovery>,
}

/// The reader task's calls into the hub. Every call names the connection's generation, so a
/// task that lost its place (all resources released, a new connection opened) changes
/// nothing.
pub trait Feed: Send + Sync {
    /// A lifecycle or heartbeat event: the connection is alive.
    fn meta_event(&self, generation: u64, time: Option<i64>);
    /// An event for the resources whose filters match it.
    fn deliver(&self, generation: u64, kind: EventType, event: &Value, text: &str);
    /// The connection is open, after `outage` when it had been lost.
    fn opened(&self, generation: u64, outage: Option<Outage>);
    /// The connection was lost and the task tries again.
    fn reconnecting(&self, generation: u64, status: ConnectionStatus);
    /// The groups whose messages an outage's recovery fetches.
    fn recovery_groups(&self) -> BTreeSet<i64>;
    /// The connection stopped for good.
    fn connection_stopped(&self, generation: u64, status: ConnectionStatus);
}
