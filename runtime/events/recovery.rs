//! Recovery of group messages missed during an outage (`SNOWLUMA_MCP_EVENTS_RECOVER=1`).
//!
//! After a reconnect, the groups that event resources filter on are asked for their latest
//! messages with get_group_msg_history. The events module cannot run actions itself (exec sits
//! above it), so the caller hands in a [`MessageHistory`] that goes through the one execution
//! pipeline; the hub then keeps, per resource, the messages of the outage that its filter
//! accepts and it does not already hold.

use std::collections::BTreeSet;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use super::filter::EventType;

/// Fetches a group's latest messages; implemented over exec's pipeline.
pub trait MessageHistory: Send + Sync {
    /// get_group_msg_history's `messages` for `group_id` (the latest `count`, oldest first),
    /// or why they could not be fetched.
    fn group_history(
        &self,
        group_id: i64,
        count: u32,
    ) -> BoxFuture<'static, Result<Vec<Value>, String>>;
}

/// One message from a group's history.
pub struct Recovered {
    pub message_id: i64,
    /// The event's `time` (unix seconds).
    pub time: i64,
    pub kind: EventType,
    pub event: Value,
    pub text: Arc<str>,
}

/// What one recovery found, for every resource to pick from.
#[derive(Default)]
pub struct Recovery {
    pub messages: Vec<Recovered>,
    /// One line per group whose history could not be fetched.
    pub errors: Vec<String>,
}

/// Asks each group for its latest `max` messages, one group at a time (the pipeline bounds
/// concurrent calls, and a restarted SnowLuma is better not flooded).
pub async fn recover(history: &dyn MessageHistory, groups: BTreeSet<i64>, max: u32) -> Recovery {
    let mut recovery = Recovery::default();
    for group in groups {
        match history.group_history(group, max).await {
            Ok(messages) => recovery
                .messages
                .extend(messages.into_iter().filter_map(recovered)),
            Err(error) => recovery.errors.push(format!("group {group}: {error}")),
        }
    }
    recovery
}

/// A history entry usable as an event: a message with an id and a time. Others are skipped,
/// as SnowLuma's own history skips malformed rows.
fn recovered(event: Value) -> Option<Recovered> {
    let message_id = event.get("message_id")?.as_i64()?;
    let time = event.get("time")?.as_i64()?;
    let kind = EventType::of_post_type(event.get("post_type")?.as_str()?)?;
    (kind == EventType::Message).then(|| Recovered {
        message_id,
        time,
        kind,
        text: Arc::from(event.to_string()),
        event,
    })
}
