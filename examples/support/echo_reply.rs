//! The replies of the native stdio floors (`stdio_echo`, `stdio_relay`): an empty result
//! (initialize a minimal one), or, when the request's params carry `"pad": N`, a result padded
//! so that the whole reply line is N bytes long (at least the empty reply's length), so a
//! benchmark can compare a tool call with a floor that writes a reply of the same size.
//! Include it with `#[path = "support/echo_reply.rs"] mod echo_reply;`.

use serde_json::{Value, json};

/// The reply line (without its newline) to a parsed message; `None` for a notification.
pub fn reply_to(message: &Value) -> Option<String> {
    let id = message.get("id")?;
    let pad = message["params"]["pad"].as_u64().unwrap_or(0) as usize;
    Some(if message["method"] == "initialize" {
        let result = json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "serverInfo": { "name": "echo", "version": "0" }
        });
        json!({ "jsonrpc": "2.0", "id": id, "result": result }).to_string()
    } else if pad > 0 {
        // {"jsonrpc":"2.0","id":ID,"result":{"pad":"xxx…"}} plus the newline = pad bytes.
        let head = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"pad":""#);
        let fill = pad.saturating_sub(head.len() + 4);
        let mut reply = String::with_capacity(pad);
        reply.push_str(&head);
        reply.extend(std::iter::repeat_n('x', fill));
        reply.push_str("\"}}");
        reply
    } else {
        json!({ "jsonrpc": "2.0", "id": id, "result": {} }).to_string()
    })
}
