//! A minimal stdio JSON-RPC server, the floor of the end-to-end benchmark: it answers every
//! request with an empty result (initialize with a minimal one), padded on request to a given
//! reply size (support/echo_reply.rs), and does nothing else.

#[path = "support/echo_reply.rs"]
mod echo_reply;

use std::io::{BufRead, Write};

fn main() {
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        let Some(reply) = echo_reply::reply_to(&message) else {
            continue;
        };
        if writeln!(stdout, "{reply}")
            .and_then(|_| stdout.flush())
            .is_err()
        {
            break;
        }
    }
}
