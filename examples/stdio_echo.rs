//! A minimal stdio JSON-RPC server, the floor of the end-to-end benchmark: it answers every
//! request with an empty result (initialize with a minimal one) and does nothing else.
//!
//! A request whose params carry `"pad": N` is answered with a result padded so that the whole
//! reply line is N bytes long (at least the empty reply's length), so a benchmark can compare a
//! tool call with an echo that writes a reply of the same size.

use std::io::{BufRead, Write};

fn main() {
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        let Some(id) = message.get("id") else {
            continue;
        };
        let pad = message["params"]["pad"].as_u64().unwrap_or(0) as usize;
        let reply = if message["method"] == "initialize" {
            let result = serde_json::json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "serverInfo": { "name": "echo", "version": "0" }
            });
            serde_json::json!({ "jsonrpc": "2.0", "id": id, "result": result }).to_string()
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
            serde_json::json!({ "jsonrpc": "2.0", "id": id, "result": {} }).to_string()
        };
        if writeln!(stdout, "{reply}")
            .and_then(|_| stdout.flush())
            .is_err()
        {
            break;
        }
    }
}
