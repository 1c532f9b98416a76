//! The one error type of the events module. Each message names the field or limit and the
//! next step; none contains the access token.

use std::fmt;

use crate::outcome::ErrorKind;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventsError {
    /// A subscription filter field is invalid.
    InvalidFilter { field: String, problem: String },
    /// A `wait` argument is out of range.
    InvalidArgument { field: String, problem: String },
    /// The process already holds the most resources it may.
    /// The process holds `limit` resources, or (with `share`) the caller's principal holds
    /// its share of them.
    TooManyResources {
        limit: usize,
        share: Option<crate::config::principals::Share>,
    },
    /// The shared connection serves another account.
    OtherAccount { connected: i64, requested: i64 },
    /// The shared connection has stopped; resources must be released before a new one opens.
    ConnectionStopped { detail: String },
    /// SnowLuma closed the socket with 1008 after the handshake.
    TokenRejected,
    /// The socket could not be opened.
    ConnectFailed { detail: String },
    /// No such resource for this owner (or a malformed URI).
    UnknownResource { uri: String },
    /// A cursor is malformed, too new, or belongs to another resource.
    BadCursor { problem: String },
    /// Another call is already waiting on this resource.
    WaitInProgress { uri: String },
    /// The resource was released while a call waited on it.
    Released { uri: String },
    /// A stateless client's resource was released because nothing read it for its lease.
    LeaseExpired { uri: String, lease_secs: u64 },
    /// The caller cancelled the wait.
    Cancelled,
    /// No resource id could be made (the OS random source failed).
    RandomUnavailable,
}

impl fmt::Display for EventsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EventsError::InvalidFilter { field, problem } => write!(f, "`{field}` {problem}"),
            EventsError::InvalidArgument { field, problem } => write!(f, "`{field}` {problem}"),
            EventsError::TooManyResources { limit, share: None } => write!(
                f,
                "at most {limit} event resources may exist at once; release one with \
                 unsubscribe_events before subscribing again"
            ),
            EventsError::TooManyResources {
                limit,
                share: Some(share),
            } => write!(
                f,
                "this client already holds {} of the {limit} event resources; release one \
                 with unsubscribe_events before subscribing again",
                share.describe(*limit)
            ),
            EventsError::OtherAccount {
                connected,
                requested,
            } => write!(
                f,
                "the event connection serves self_id {connected}, not {requested}; release every \
                 event resource (unsubscribe_events) before subscribing for another account"
            ),
            EventsError::ConnectionStopped { detail } => write!(
                f,
                "the event connection has stopped ({detail}); release every event resource \
                 (unsubscribe_events) before subscribing again, which opens a new connection"
            ),
            EventsError::TokenRejected => f.write_str(
                "SnowLuma rejected the access token on the event socket (close code 1008); set \
                 SNOWLUMA_MCP_TOKEN to the WebSocket adapter's token",
            ),
            EventsError::ConnectFailed { detail } => write!(
                f,
                "could not open the event socket at SNOWLUMA_MCP_EVENTS_URL ({detail}); check \
                 that SnowLuma's WebSocket adapter is running and the URL's path matches its \
                 configured path exactly"
            ),
            EventsError::UnknownResource { uri } => write!(
                f,
                "no event resource {uri} exists in this session; subscribe_events returns the \
                 canonical snowluma://onebot/events/<id> URI"
            ),
            EventsError::BadCursor { problem } => write!(f, "cursor `after` {problem}"),
            EventsError::WaitInProgress { uri } => write!(
                f,
                "another call is already waiting on {uri}; only one wait per resource may run \
                 at a time, retry after it returns"
            ),
            EventsError::Released { uri } => {
                write!(f, "the event resource {uri} was released during the wait")
            }
            EventsError::LeaseExpired { uri, lease_secs } => write!(
                f,
                "the event resource {uri} no longer exists: its lease ran out after {lease_secs} s \
                 without a read_events or resources/read (SNOWLUMA_MCP_EVENT_LEASE_SECS); call \
                 subscribe_events again"
            ),
            EventsError::Cancelled => f.write_str("the wait for events was cancelled"),
            EventsError::RandomUnavailable => f.write_str(crate::ids::RandomUnavailable::MESSAGE),
        }
    }
}

impl std::error::Error for EventsError {}

impl EventsError {
    /// The failure category a tool result reports; each message already carries its own next
    /// step, the kind's usual one is the fallback.
    pub fn kind(&self) -> ErrorKind {
        match self {
            EventsError::InvalidFilter { .. } | EventsError::InvalidArgument { .. } => {
                ErrorKind::InvalidArguments
            }
            EventsError::TooManyResources { .. } | EventsError::OtherAccount { .. } => {
                ErrorKind::EventsLimit
            }
            EventsError::ConnectionStopped { .. } | EventsError::ConnectFailed { .. } => {
                ErrorKind::EventsConnection
            }
            EventsError::TokenRejected => ErrorKind::EventsToken,
            EventsError::UnknownResource { .. }
            | EventsError::Released { .. }
            | EventsError::LeaseExpired { .. } => ErrorKind::UnknownResource,
            EventsError::BadCursor { .. } => ErrorKind::BadCursor,
            EventsError::WaitInProgress { .. } => ErrorKind::WaitInProgress,
            EventsError::Cancelled => ErrorKind::Cancelled,
            EventsError::RandomUnavailable => ErrorKind::RandomUnavailable,
        }
    }
}
