//! Confirmation (`SNOWLUMA_MCP_CONFIRM`): which actions wait for the user, what the user is
//! shown, and the form they answer. Asking is the protocol's job: exec's gate hands a
//! [`ConfirmRequest`] to a [`Confirmer`] that the server implements for each request.

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

use crate::catalog::ActionMeta;
use crate::config::ConfirmSetting;

/// The one field of the confirmation form.
pub const CONFIRM_FIELD: &str = "confirm";

/// The key of the confirmation in a 2026-07-28 `inputRequests` map.
pub const CONFIRM_REQUEST_KEY: &str = "confirm_action";

/// Longest params summary shown, in characters.
const SUMMARY_CHARS: usize = 1200;

/// Whether `action` waits for the user's confirmation under `setting`.
pub fn needs_confirmation(setting: ConfirmSetting, action: &ActionMeta) -> bool {
    match setting {
        ConfirmSetting::Off => false,
        ConfirmSetting::Danger => action.danger.is_some(),
        ConfirmSetting::Writes => !action.read_only,
    }
}

/// What the user is asked to approve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfirmRequest {
    pub action: &'static str,
    /// `group:<id>` / `user:<id>`, when the params name one.
    pub target: Option<String>,
    /// The params, readable: messages as preview_message renders them.
    pub summary: String,
    /// The action's danger note, if the spec has one.
    pub danger: Option<&'static str>,
}

impl ConfirmRequest {
    pub fn new(action: &ActionMeta, target: Option<String>, params: &Map<String, Value>) -> Self {
        ConfirmRequest {
            action: action.name,
            target,
            summary: summarize(params),
            danger: action.danger,
        }
    }

    /// The form's message: the action, its target and the params.
    pub fn message(&self) -> String {
        let mut text = format!("Run `{}`", self.action);
        if let Some(target) = &self.target {
            text.push_str(&format!(" on {target}"));
        }
        text.push_str("?\n");
        if let Some(danger) = self.danger {
            text.push_str(&format!("DANGER: {danger}\n"));
        }
        text.push_str("Params:\n");
        text.push_str(&self.summary);
        text.push_str("\nNothing runs unless you confirm.");
        text
    }

    /// The form's schema: one required boolean.
    pub fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                CONFIRM_FIELD: {
                    "type": "boolean",
                    "title": "Run this action",
                    "description": "true runs the action once; false refuses it"
                }
            },
            "required": [CONFIRM_FIELD]
        })
    }
}

/// The user's answer, or why there is none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Approved,
    Declined,
    Cancelled,
    /// The client cannot be asked; the text says why (no form elicitation, a background task).
    Unavailable(String),
    /// The answer's `requestState` cannot be used (expired, altered, used, another call's),
    /// or no new one could be issued; the text says why.
    Invalid(String),
    /// The question went out as a protocol continuation (2026-07-28 `input_required`); the
    /// call ends now and comes back with the answer.
    Deferred,
}

/// Reads an elicitation result (`{"action": …, "content": {"confirm": bool}}`) as a verdict:
/// only an accepted `confirm: true` approves.
pub fn verdict_of(result: &Value) -> Verdict {
    match result.get("action").and_then(Value::as_str) {
        Some("accept") => {
            match result
                .get("content")
                .and_then(|c| c.get(CONFIRM_FIELD))
                .and_then(Value::as_bool)
            {
                Some(true) => Verdict::Approved,
                _ => Verdict::Declined,
            }
        }
        Some("decline") => Verdict::Declined,
        _ => Verdict::Cancelled,
    }
}

/// Asks the user; the server implements it per request, for its protocol generation.
pub trait Confirmer: Send + Sync {
    fn confirm<'a>(&'a self, request: &'a ConfirmRequest) -> BoxFuture<'a, Verdict>;
}

/// A caller that can never ask (background tasks, internal calls).
pub struct CannotAsk(pub &'static str);

impl Confirmer for CannotAsk {
    fn confirm<'a>(&'a self, _: &'a ConfirmRequest) -> BoxFuture<'a, Verdict> {
        let why = self.0.to_string();
        Box::pin(async move { Verdict::Unavailable(why) })
    }
}

/// The params as `key: value` lines; `message` values rendered as readable text.
pub fn summarize(params: &Map<String, Value>) -> String {
    let mut lines = Vec::new();
    for (key, value) in params {
        let text = if key == "message" || key == "messages" {
            render_message(value)
        } else {
            match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            }
        };
        lines.push(format!("- {key}: {text}"));
    }
    if lines.is_empty() {
        lines.push("(none)".into());
    }
    let text = lines.join("\n");
    if text.chars().count() <= SUMMARY_CHARS {
        return text;
    }
    let mut short: String = text.chars().take(SUMMARY_CHARS).collect();
    short.push('…');
    short
}

/// A message (CQ string, segment array or one segment) as readable text: text segments as
/// they are, a reply as "Replying to message <id>", other segments as `[type k=v]`.
pub fn render_message(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Array(segments) => segments.iter().map(render_segment).collect(),
        Value::Object(_) => render_segment(value),
        other => other.to_string(),
    }
}

fn render_segment(segment: &Value) -> String {
    let kind = segment.get("type").and_then(Value::as_str).unwrap_or("?");
    let data = segment.get("data").and_then(Value::as_object);
    match (kind, data) {
        ("text", Some(data)) => data
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        ("reply", Some(data)) => format!(
            "(Replying to message {}) ",
            data.get("id").map(Value::to_string).unwrap_or_default()
        ),
        (kind, Some(data)) => {
            let fields: Vec<String> = data
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => format!("{k}={s}"),
                    other => format!("{k}={other}"),
                })
                .collect();
            format!("[{kind} {}]", fields.join(" "))
        }
        (kind, None) => format!("[{kind}]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_read_like_the_preview() {
        let params = json!({"group_id": 1, "message": [
            {"type": "reply", "data": {"id": -5}},
            {"type": "text", "data": {"text": "hello"}},
            {"type": "at", "data": {"qq": "all"}}
        ]});
        let summary = summarize(params.as_object().unwrap());
        assert_eq!(
            summary,
            "- group_id: 1\n- message: (Replying to message -5) hello[at qq=all]"
        );
    }

    #[test]
    fn only_an_accepted_true_approves() {
        assert_eq!(
            verdict_of(&json!({"action": "accept", "content": {"confirm": true}})),
            Verdict::Approved
        );
        assert_eq!(
            verdict_of(&json!({"action": "accept", "content": {"confirm": false}})),
            Verdict::Declined
        );
        assert_eq!(verdict_of(&json!({"action": "accept"})), Verdict::Declined);
        assert_eq!(verdict_of(&json!({"action": "decline"})), Verdict::Declined);
        assert_eq!(verdict_of(&json!({"action": "cancel"})), Verdict::Cancelled);
    }

    #[test]
    fn the_setting_picks_the_actions() {
        let send = crate::catalog::resolve("send_group_msg").unwrap().meta;
        let exit = crate::catalog::resolve("bot_exit").unwrap().meta;
        let read = crate::catalog::resolve("get_status").unwrap().meta;
        assert!(!needs_confirmation(ConfirmSetting::Off, exit));
        assert!(needs_confirmation(ConfirmSetting::Danger, exit));
        assert!(!needs_confirmation(ConfirmSetting::Danger, send));
        assert!(needs_confirmation(ConfirmSetting::Writes, send));
        assert!(!needs_confirmation(ConfirmSetting::Writes, read));
    }
}
