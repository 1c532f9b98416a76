//! The log line people read and scripts parse, on the built binary's stderr: the per-call line
//! keeps its exact layout (UTC time with microseconds, the level padded to five, the target,
//! then the documented fields in order), whatever writes and formats it.

#[path = "support/raw_client.rs"]
mod raw_client;

use raw_client::RawServer;
use serde_json::json;

/// `2026-12-04T17:35:45.427089Z`: digits where digits go, the rest exactly.
fn is_timestamp(text: &str) -> bool {
    const SHAPE: &[u8; 27] = b"dddd-dd-ddTdd:dd:dd.ddddddZ";
    text.len() == SHAPE.len()
        && text.bytes().zip(SHAPE).all(|(byte, shape)| match shape {
            b'd' => byte.is_ascii_digit(),
            _ => byte == *shape,
        })
}

/// The part of a call line after its traceparent value: `outcome="…" failure="…" duration_ms=…`.
fn check_tail(tail: &str, outcome: &str, failure: &str, line: &str) {
    let expected = format!(" outcome=\"{outcome}\" failure=\"{failure}\" duration_ms=");
    let duration = tail
        .strip_prefix(&expected)
        .unwrap_or_else(|| panic!("fields after traceparent: {line}"));
    assert!(
        duration.parse::<f64>().is_ok_and(|ms| ms >= 0.0),
        "duration_ms is a number: {line}"
    );
}

#[tokio::test]
async fn call_lines_keep_their_layout() {
    let mut server = RawServer::spawn(&[("SNOWLUMA_MCP_LOG", "info")]);
    server
        .request(
            0,
            "initialize",
            json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": { "name": "log-test", "version": "1.0" }
            }),
        )
        .await;
    server
        .send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
        .await;
    server
        .request(
            1,
            "tools/call",
            json!({ "name": "list_categories", "arguments": {} }),
        )
        .await;
    server
        .request(
            2,
            "tools/call",
            json!({ "name": "get_action", "arguments": { "action": "no_such_action" } }),
        )
        .await;
    let (code, stderr) = server.finish().await;
    assert_eq!(code, Some(0), "{stderr}");

    let calls: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains(" snowluma_mcp::call: "))
        .collect();
    assert_eq!(calls.len(), 2, "{stderr}");
    for (line, tool, outcome, failure) in [
        (calls[0], "list_categories", "success", "-"),
        (calls[1], "get_action", "failed", "invalid_arguments"),
    ] {
        let (time, rest) = line.split_at_checked(27).expect("a time first");
        assert!(is_timestamp(time), "{line}");
        // The principal follows the tool: on stdio the guards' principal, its session id.
        let prefix = format!("  INFO snowluma_mcp::call: tool=\"{tool}\" principal=\"session-");
        let rest = rest
            .strip_prefix(&prefix)
            .unwrap_or_else(|| panic!("level, target, tool and principal: {line}"));
        let rest = rest
            .trim_start_matches(|c: char| c.is_ascii_digit())
            .strip_prefix("\" traceparent=00-")
            .unwrap_or_else(|| panic!("the principal, then the traceparent: {line}"));
        // traceparent: 00-<32 hex>-<16 hex>-01, written bare (not as a quoted string).
        let (ids, tail) = rest
            .split_at_checked(32 + 1 + 16 + 3)
            .expect("a traceparent");
        assert!(
            ids.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-') && ids.ends_with("-01"),
            "{line}"
        );
        check_tail(tail, outcome, failure, line);
    }
    // The start-up line is laid out the same way.
    let ready = stderr
        .lines()
        .find(|line| line.contains(" ready: "))
        .unwrap_or_else(|| panic!("a ready line: {stderr}"));
    assert!(is_timestamp(&ready[..27]), "{ready}");
    assert!(
        ready[27..].starts_with("  INFO snowluma_mcp: snowluma-mcp "),
        "{ready}"
    );
}
