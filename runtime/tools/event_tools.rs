//! `subscribe_events`, `unsubscribe_events` and `read_events`: the tool face of the session's
//! event resources. The tools only translate arguments and errors; the hub does the work.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::call::ConnectionEvents;
use crate::events::{EventFilter, EventNotifier, EventsError, MAX_WAIT_LIMIT};
use crate::outcome::{ErrorKind, ToolReply, parse_args};

/// `read_events` waits this long when `wait_ms` is omitted.
const DEFAULT_WAIT_MS: u64 = 10_000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnsubscribeArgs {
    /// The canonical `snowluma://onebot/events/<id>` URI subscribe_events returned.
    pub uri: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadEventsArgs {
    /// The canonical `snowluma://onebot/events/<id>` URI subscribe_events returned.
    pub uri: String,
    /// Return only events after this cursor (`next_cursor` of a previous read); omitted means
    /// every buffered event.
    #[serde(default)]
    pub after: Option<String>,
    /// Longest wait in milliseconds for the first matching event (0-30000, default 10000);
    /// 0 reads without waiting.
    #[serde(default)]
    #[schemars(range(max = 30000))]
    pub wait_ms: Option<u64>,
    /// Most entries returned (1-256, default 256).
    #[serde(default)]
    #[schemars(range(min = 1, max = 256))]
    pub limit: Option<usize>,
}

/// What `subscribe_events` returns.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Subscribed {
    /// The canonical resource URI: read it with resources/read (optionally `?after=<cursor>`)
    /// or read_events, watch it with resources/subscribe or subscriptions/listen.
    pub uri: String,
}

/// What `unsubscribe_events` returns.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Released {
    /// The resource that was released; its buffer is gone.
    pub released: String,
}

/// A tool error from an events failure: its kind, its own message, the kind's next step.
pub fn events_error(error: &EventsError) -> ToolReply {
    let kind = error.kind();
    ToolReply::error(kind, error.to_string(), kind.usual_next_step())
}

/// The session's events; the gate only lets these tools run with events configured, so
/// `None` is a server without events reached anyway.
fn session_events<'a>(
    events: Option<&'a ConnectionEvents<'a>>,
) -> Result<&'a ConnectionEvents<'a>, ToolReply> {
    events.ok_or_else(|| {
        ToolReply::error(
            ErrorKind::Mode,
            "live events are not configured on this server",
            "set SNOWLUMA_MCP_EVENTS_URL in the MCP client's server configuration",
        )
    })
}

pub async fn subscribe(
    events: Option<&ConnectionEvents<'_>>,
    args: Option<Map<String, Value>>,
) -> ToolReply {
    let events = match session_events(events) {
        Ok(events) => events,
        Err(reply) => return reply,
    };
    let filter = match EventFilter::from_json(&Value::Object(args.unwrap_or_default())) {
        Ok(filter) => filter,
        Err(error) => return events_error(&error),
    };
    match events
        .hub
        .subscribe(events.owner, filter, notifier(events))
        .await
    {
        Ok(uri) => reply_of(&Subscribed { uri }),
        Err(error) => events_error(&error),
    }
}

pub fn unsubscribe(
    events: Option<&ConnectionEvents<'_>>,
    args: Option<Map<String, Value>>,
) -> ToolReply {
    let events = match session_events(events) {
        Ok(events) => events,
        Err(reply) => return reply,
    };
    let args: UnsubscribeArgs = match parse_args("unsubscribe_events", args) {
        Ok(args) => args,
        Err(reply) => return reply,
    };
    match events.hub.release(events.owner, &args.uri) {
        Ok(()) => {
            events.routes.forget(&args.uri);
            reply_of(&Released { released: args.uri })
        }
        Err(error) => events_error(&error),
    }
}

pub async fn read(
    events: Option<&ConnectionEvents<'_>>,
    args: Option<Map<String, Value>>,
    cancel: &CancellationToken,
) -> ToolReply {
    let events = match session_events(events) {
        Ok(events) => events,
        Err(reply) => return reply,
    };
    let args: ReadEventsArgs = match parse_args("read_events", args) {
        Ok(args) => args,
        Err(reply) => return reply,
    };
    if let Err(error) = events.renew(&args.uri) {
        return events_error(&error);
    }
    let page = events
        .hub
        .wait(
            events.owner,
            &args.uri,
            args.after.as_deref(),
            args.wait_ms.unwrap_or(DEFAULT_WAIT_MS),
            args.limit.unwrap_or(MAX_WAIT_LIMIT),
            cancel.clone(),
        )
        .await;
    match page {
        Ok(page) => reply_of(&page),
        Err(error) => events_error(&error),
    }
}

/// The connection's routes, as the hub's notifier for a new resource.
fn notifier(events: &ConnectionEvents<'_>) -> std::sync::Arc<dyn EventNotifier> {
    events.routes.clone()
}

fn reply_of<T: Serialize>(value: &T) -> ToolReply {
    ToolReply::ok(serde_json::to_value(value).unwrap_or(Value::Null))
}

/// The schema of a `Page`, written out: its events are raw JSON and its status a tagged
/// enum, which schemars cannot derive from the core's types without MCP-facing attributes.
pub fn page_schema() -> Value {
    let cursor = json!({ "type": "string", "description": "an opaque position in this resource" });
    json!({
        "type": "object",
        "properties": {
            "entries": {
                "type": "array",
                "maxItems": MAX_WAIT_LIMIT,
                "items": {
                    "type": "object",
                    "description": "an event, or (gap) an outage of the connection: events from that time may be missing",
                    "properties": {
                        "cursor": cursor,
                        "event": { "type": "object", "description": "the OneBot event exactly as SnowLuma sent it" },
                        "recovered": { "type": "boolean", "description": "fetched with get_group_msg_history after an outage, not received live" },
                        "gap": {
                            "type": "object",
                            "description": "where the connection was down (unix seconds); recovered counts the messages inserted just before this entry",
                            "properties": {
                                "from": { "type": "integer" },
                                "to": { "type": "integer" },
                                "reason": { "type": "string" },
                                "recovered": { "type": "integer", "minimum": 0 },
                                "recovery_error": { "type": "string" }
                            },
                            "required": ["from", "to", "reason"]
                        }
                    },
                    "required": ["cursor"]
                }
            },
            "status": {
                "type": "object",
                "description": "the shared event connection: connecting, connected (last_heartbeat), reconnecting (attempt, next_attempt_at_ms, since, detail) or stopped (reason, detail)",
                "properties": {
                    "state": { "enum": ["connecting", "connected", "reconnecting", "stopped"] },
                    "last_heartbeat": { "type": ["integer", "null"] },
                    "attempt": { "type": "integer", "minimum": 1 },
                    "next_attempt_at_ms": { "type": "integer" },
                    "since": { "type": "integer" },
                    "reason": { "enum": ["token_rejected", "account_mismatch", "malformed_event", "frame_too_large", "connect_failed"] },
                    "detail": { "type": "string" }
                },
                "required": ["state"]
            },
            "next_cursor": cursor,
            "oldest_cursor": cursor,
            "dropped_events": { "type": "integer", "minimum": 0 },
            "gap": { "type": "boolean", "description": "events between the cursor and the oldest kept event were evicted" },
            "notification_failed": { "type": "boolean" }
        },
        "required": ["entries", "status", "next_cursor", "oldest_cursor", "dropped_events", "gap", "notification_failed"]
    })
}
