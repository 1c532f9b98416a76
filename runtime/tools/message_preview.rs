//! The `preview_message` handler: parses the arguments, decides `can_send` from this
//! server's configuration and lets `preview::build_preview` write the draft. Nothing is sent.

use serde_json::Value;

use crate::outcome::{ErrorKind, ToolReply, parse_args};
use crate::preview::{self, PreviewArgs};

use super::call::Call;

pub fn preview_message(call: Call<'_>) -> ToolReply {
    let args: PreviewArgs = match parse_args("preview_message", call.args) {
        Ok(args) => args,
        Err(reply) => return reply,
    };
    let config = &call.shared.config;
    // Sending needs invoke_action, which only write mode offers, and somewhere to send to.
    let can_send = config.mode.writes() && config.endpoint.is_some();
    match preview::build_preview(&args, can_send) {
        // Strings, integers and maps only: serializing cannot fail.
        Ok(draft) => ToolReply::ok(serde_json::to_value(draft).unwrap_or(Value::Null)),
        // Each PreviewError names the field, the limit and what to do instead.
        Err(error) => ToolReply::error(
            ErrorKind::InvalidArguments,
            error.to_string(),
            "fix the named argument and call preview_message again",
        ),
    }
}
