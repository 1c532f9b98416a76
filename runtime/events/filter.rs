//! Which events a resource keeps: one account, some categories, optional group and user ids.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::EventsError;

/// Most distinct ids one `group_ids` or `user_ids` filter may name.
pub const MAX_FILTER_IDS: usize = 100;

/// The arguments of a subscription, as a client sends them.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubscribeRequest {
    /// The logged-in QQ account whose events to receive (see `get_login_info`). Every event on
    /// the connection must carry it.
    pub self_id: i64,
    /// Event categories to keep; omitted means all three. `message` includes the bot's own
    /// `message_sent` events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub types: Option<Vec<EventType>>,
    /// Keep only events whose `group_id` is one of these (at most 100 distinct positive ids);
    /// events without a `group_id` are then dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_ids: Option<Vec<i64>>,
    /// Keep only events whose `user_id` is one of these (at most 100 distinct positive ids).
    /// Combined with `group_ids` by AND.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_ids: Option<Vec<i64>>,
}

/// An event category, by OneBot `post_type`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum EventType {
    /// `post_type` `message` or `message_sent`.
    Message,
    /// `post_type` `notice`.
    Notice,
    /// `post_type` `request`.
    Request,
}

impl EventType {
    /// The category of a OneBot `post_type`; `None` for meta events and anything unknown.
    pub fn of_post_type(post_type: &str) -> Option<EventType> {
        match post_type {
            "message" | "message_sent" => Some(EventType::Message),
            "notice" => Some(EventType::Notice),
            "request" => Some(EventType::Request),
            _ => None,
        }
    }
}

/// A validated filter; ids are deduplicated and sorted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventFilter {
    pub self_id: i64,
    pub types: BTreeSet<EventType>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_ids: Option<BTreeSet<i64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_ids: Option<BTreeSet<i64>>,
}

impl EventFilter {
    /// Reads a filter from tool arguments; type errors name the offending field.
    pub fn from_json(args: &Value) -> Result<EventFilter, EventsError> {
        let request: SubscribeRequest = serde_path_to_error::deserialize(args).map_err(|e| {
            let field = e.path().to_string();
            EventsError::InvalidFilter {
                field: if field == "." {
                    "arguments".into()
                } else {
                    field
                },
                problem: crate::outcome::without_value(&e.inner().to_string(), args, e.path()),
            }
        })?;
        EventFilter::new(request)
    }

    pub fn new(request: SubscribeRequest) -> Result<EventFilter, EventsError> {
        if request.self_id <= 0 {
            return Err(invalid(
                "self_id",
                format!(
                    "must be the positive QQ account id of the logged-in bot (got {}); get it \
                     from get_login_info",
                    request.self_id
                ),
            ));
        }
        let types = match request.types {
            None => [EventType::Message, EventType::Notice, EventType::Request].into(),
            Some(list) if list.is_empty() => {
                return Err(invalid(
                    "types",
                    "is empty; name at least one of message, notice, request, or omit it for all \
                     three"
                        .into(),
                ));
            }
            Some(list) => list.into_iter().collect(),
        };
        Ok(EventFilter {
            self_id: request.self_id,
            types,
            group_ids: id_set("group_ids", request.group_ids)?,
            user_ids: id_set("user_ids", request.user_ids)?,
        })
    }

    /// Whether an event (already known to carry this filter's account) belongs in the resource.
    pub fn accepts(&self, kind: EventType, event: &Value) -> bool {
        self.types.contains(&kind)
            && id_matches(&self.group_ids, event.get("group_id"))
            && id_matches(&self.user_ids, event.get("user_id"))
    }
}

fn id_matches(wanted: &Option<BTreeSet<i64>>, actual: Option<&Value>) -> bool {
    match wanted {
        None => true,
        Some(ids) => actual
            .and_then(Value::as_i64)
            .is_some_and(|id| ids.contains(&id)),
    }
}

fn id_set(field: &str, ids: Option<Vec<i64>>) -> Result<Option<BTreeSet<i64>>, EventsError> {
    let Some(ids) = ids else { return Ok(None) };
    if ids.is_empty() {
        return Err(invalid(
            field,
            "is empty; list the ids to keep, or omit it to keep every id".into(),
        ));
    }
    if let Some(bad) = ids.iter().find(|id| **id <= 0) {
        return Err(invalid(
            field,
            format!("must contain positive ids only (got {bad})"),
        ));
    }
    let set: BTreeSet<i64> = ids.into_iter().collect();
    if set.len() > MAX_FILTER_IDS {
        return Err(invalid(
            field,
            format!(
                "names {} distinct ids; at most {MAX_FILTER_IDS} are allowed, split the ids over \
                 several subscriptions",
                set.len()
            ),
        ));
    }
    Ok(Some(set))
}

fn invalid(field: &str, problem: String) -> EventsError {
    EventsError::InvalidFilter {
        field: field.to_string(),
        problem,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn message_sent_counts_as_message_and_meta_is_no_category() {
        assert_eq!(
            EventType::of_post_type("message_sent"),
            Some(EventType::Message)
        );
        assert_eq!(EventType::of_post_type("meta_event"), None);
    }

    #[test]
    fn duplicates_collapse_before_the_limit_is_checked() {
        let mut ids: Vec<i64> = (1..=100).collect();
        ids.extend(1..=100);
        let filter = EventFilter::from_json(&json!({"self_id": 1, "group_ids": ids})).unwrap();
        assert_eq!(filter.group_ids.unwrap().len(), 100);
        let err = EventFilter::from_json(
            &json!({"self_id": 1, "user_ids": (1..=101).collect::<Vec<i64>>()}),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("user_ids") && err.contains("100"), "{err}");
    }

    #[test]
    fn errors_name_the_field() {
        let cases = [
            (json!({}), "self_id"),
            (json!({"self_id": 0}), "self_id"),
            (json!({"self_id": 1, "types": ["meta_event"]}), "types"),
            (json!({"self_id": 1, "types": []}), "types"),
            (json!({"self_id": 1, "group_ids": [-5]}), "group_ids"),
            (json!({"self_id": 1, "user_ids": "30001"}), "user_ids"),
            (json!({"self_id": 1, "colour": 1}), "colour"),
        ];
        for (args, field) in cases {
            let err = EventFilter::from_json(&args).unwrap_err().to_string();
            assert!(err.contains(field), "{args}: {err}");
        }
        // The refused value itself is not repeated (it could be message text).
        for args in [
            json!({"self_id": 1, "types": ["private words"]}),
            json!({"self_id": "private words"}),
        ] {
            let err = EventFilter::from_json(&args).unwrap_err().to_string();
            assert!(!err.contains("private words"), "{err}");
        }
    }
}
