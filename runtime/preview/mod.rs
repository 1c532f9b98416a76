//! `preview_message`: turns a requested text message into a readable draft plus the exact
//! `invoke_action` arguments that would send it. Nothing here sends anything or knows the
//! protocol; the server decides `can_send` (write mode with an endpoint) and passes it in.
//!
//! The draft always uses a segment array (an optional `reply` segment, then one `text`
//! segment) rather than a string, because SnowLuma parses a string message as CQ code: text
//! such as `[CQ:at,qq=all]` must reach QQ literally, not as an @everyone.
//!
//! The bundled HTML panel that shows the draft to MCP Apps hosts lives in [`panel`].

pub mod panel;

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// The largest integer a JavaScript client can hold exactly (2^53 - 1). Ids above it would
/// be silently rounded by JSON clients, so a target beyond it cannot be previewed faithfully.
pub const MAX_SAFE_INTEGER: i64 = 9_007_199_254_740_991;

/// Upper bound on `text`, in UTF-8 bytes. SnowLuma caps HTTP request bodies at 2 MiB, and
/// JSON escaping can grow control characters up to six-fold, so 256 KiB of text always fits.
pub const MAX_TEXT_BYTES: usize = 256 * 1024;

/// Which conversation the message goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MessageType {
    /// A group chat; `target_id` is the group number.
    Group,
    /// A private chat; `target_id` is the user's QQ number.
    Private,
}

impl MessageType {
    /// The OneBot action that sends this kind of message.
    pub fn send_action(self) -> &'static str {
        match self {
            MessageType::Group => "send_group_msg",
            MessageType::Private => "send_private_msg",
        }
    }

    /// The param of [`Self::send_action`] that names the target.
    pub fn target_param(self) -> &'static str {
        match self {
            MessageType::Group => "group_id",
            MessageType::Private => "user_id",
        }
    }
}

/// Arguments of the `preview_message` tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PreviewArgs {
    /// `group` for a group chat, `private` for a private chat.
    pub message_type: MessageType,
    /// Group number (group) or QQ number (private): a positive integer no larger than
    /// 9007199254740991 (2^53 - 1).
    #[schemars(range(min = 1, max = MAX_SAFE_INTEGER))]
    pub target_id: i64,
    /// The message text. It is sent literally: CQ-code-like text such as `[CQ:at,qq=all]`
    /// stays plain text.
    #[schemars(length(min = 1))]
    pub text: String,
    /// Optional message id to quote: a non-zero signed 32-bit id as returned by SnowLuma
    /// (negative ids are normal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = -2_147_483_648, max = 2_147_483_647))]
    pub reply_to: Option<i64>,
}

/// The arguments to pass unchanged to the `invoke_action` tool to send the draft.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InvokeActionArgs {
    /// `send_group_msg` or `send_private_msg`.
    pub action: String,
    /// `group_id` or `user_id`, and `message` as a segment array.
    pub params: Map<String, Value>,
}

/// The result of `preview_message`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MessagePreview {
    /// The draft in readable form: target, quoted message and text.
    pub draft: String,
    /// `group` or `private`.
    pub message_type: MessageType,
    /// The group or user the message goes to.
    pub target_id: i64,
    /// The quoted message id, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<i32>,
    /// The text exactly as it will be sent.
    pub text: String,
    /// True only when this server can send (write mode with a SnowLuma endpoint).
    pub can_send: bool,
    /// Exact arguments for `invoke_action`; only an explicit call sends anything.
    pub invoke_action: InvokeActionArgs,
}

/// Why a preview could not be built. Each message names the field, the limit and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreviewError {
    /// `target_id` is zero, negative or above 2^53 - 1.
    TargetId(i64),
    /// `reply_to` is zero or outside the signed 32-bit range.
    ReplyTo(i64),
    /// `text` is empty or only whitespace.
    EmptyText,
    /// `text` is longer than [`MAX_TEXT_BYTES`].
    TextTooLong(usize),
}

impl fmt::Display for PreviewError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PreviewError::TargetId(id) => write!(
                f,
                "target_id must be a positive integer no larger than {MAX_SAFE_INTEGER}, \
                 got {id}; pass the group number (group) or QQ number (private)"
            ),
            PreviewError::ReplyTo(id) => write!(
                f,
                "reply_to must be a non-zero signed 32-bit message id \
                 (-2147483648..=2147483647, not 0), got {id}; use the message_id SnowLuma \
                 returned, or omit reply_to"
            ),
            PreviewError::EmptyText => write!(
                f,
                "text must contain at least one non-whitespace character; SnowLuma rejects \
                 an empty message"
            ),
            PreviewError::TextTooLong(bytes) => write!(
                f,
                "text is {bytes} bytes, over the {MAX_TEXT_BYTES}-byte limit; split it into \
                 several messages"
            ),
        }
    }
}

impl std::error::Error for PreviewError {}

/// Validates the arguments and builds the draft. `can_send` is decided by the caller (write
/// mode with an endpoint) and only reported back; nothing is sent here.
pub fn build_preview(args: &PreviewArgs, can_send: bool) -> Result<MessagePreview, PreviewError> {
    if !(1..=MAX_SAFE_INTEGER).contains(&args.target_id) {
        return Err(PreviewError::TargetId(args.target_id));
    }
    let reply_to = match args.reply_to {
        None => None,
        Some(id) => match i32::try_from(id) {
            Ok(id) if id != 0 => Some(id),
            _ => return Err(PreviewError::ReplyTo(id)),
        },
    };
    if args.text.trim().is_empty() {
        return Err(PreviewError::EmptyText);
    }
    if args.text.len() > MAX_TEXT_BYTES {
        return Err(PreviewError::TextTooLong(args.text.len()));
    }

    let mut message = Vec::with_capacity(2);
    if let Some(id) = reply_to {
        // SnowLuma resolves a numeric reply id through its message store; ids are signed.
        message.push(json!({"type": "reply", "data": {"id": id}}));
    }
    message.push(json!({"type": "text", "data": {"text": args.text}}));
    let mut params = Map::new();
    params.insert(
        args.message_type.target_param().into(),
        Value::from(args.target_id),
    );
    params.insert("message".into(), Value::Array(message));

    Ok(MessagePreview {
        draft: readable_draft(
            args.message_type,
            args.target_id,
            reply_to,
            &args.text,
            can_send,
        ),
        message_type: args.message_type,
        target_id: args.target_id,
        reply_to,
        text: args.text.clone(),
        can_send,
        invoke_action: InvokeActionArgs {
            action: args.message_type.send_action().into(),
            params,
        },
    })
}

fn readable_draft(
    message_type: MessageType,
    target_id: i64,
    reply_to: Option<i32>,
    text: &str,
    can_send: bool,
) -> String {
    let target = match message_type {
        MessageType::Group => format!("group {target_id}"),
        MessageType::Private => format!("user {target_id} (private)"),
    };
    let mut draft = format!("Draft message to {target}\n");
    if let Some(id) = reply_to {
        draft.push_str(&format!("Replying to message {id}\n"));
    }
    draft.push_str("Text (sent literally):\n");
    draft.push_str(text);
    draft.push_str("\n\n");
    if can_send {
        draft.push_str(
            "Nothing has been sent. To send, call invoke_action with the invoke_action \
             arguments. An acknowledgement is not proof of delivery: check the outcome before \
             drafting again.",
        );
    } else {
        draft.push_str(
            "Nothing has been sent, and this server cannot send (it needs write mode with a \
             SnowLuma endpoint).",
        );
    }
    draft
}

#[cfg(test)]
mod tests;
