//! A minimal stdio JSON-RPC server, the baseline of the end-to-end benchmark: it answers
//! every request with an empty result (initialize with a minimal one) and does nothing else.

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
        let result = if message["method"] == "initialize" {
            serde_json::json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "serverInfo": { "name": "echo", "version": "0" }
            })
        } else {
            serde_json::json!({})
        };
        let reply = serde_json::json!({ "jsonrpc": "2.0", "id": id, "result": result });
        if writeln!(stdout, "{reply}")
            .and_then(|_| stdout.flush())
            .is_err()
        {
            break;
        }
    }
}
