//! The record one `tools/call` leaves: the stderr line (`trace::log_call`) and, when the
//! client asked for them, the same facts as an MCP `notifications/message`. A legacy session
//! asks once with `logging/setLevel`; a 2026-07-28 request asks for itself alone with
//! `_meta["io.modelcontextprotocol/logLevel"]` (that revision dropped setLevel, and a request
//! without the key gets no message whatever its connection asked before). Clients that never
//! ask see nothing.
//!
//! Level of a call's message: `info` when it succeeded or continues (input round, task),
//! `warning` when its outcome is unknown (it may have taken effect), `error` when it failed.

// rmcp marks MCP logging deprecated (SEP-2577, the 2026-07-28 revision); sessions that
// negotiated 2025-11-25 or earlier still have it.
#![allow(deprecated)]

use std::time::{Duration, Instant};

use rmcp::RoleServer;
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::RequestContext;

use super::SnowlumaServer;
use super::log_level;
use super::session::is_modern;
use crate::outcome::ErrorKind;
use crate::trace::{self, TraceContext};

/// The `logger` of every message this server sends.
pub const LOGGER: &str = "snowluma-mcp";

/// The level of a call's message from its outcome (see the module header).
fn call_level(outcome: &str) -> LoggingLevel {
    match outcome {
        "failed" => LoggingLevel::Error,
        "unknown" => LoggingLevel::Warning,
        _ => LoggingLevel::Info,
    }
}

/// What one call did, as its log line and its message carry it.
pub(super) struct CallRecord<'a> {
    pub tool: &'a str,
    pub trace: &'a TraceContext,
    /// `success`, `failed`, `unknown`, or `continued` (not an outcome yet).
    pub outcome: &'a str,
    pub failure: Option<ErrorKind>,
    pub started: Instant,
}

impl SnowlumaServer {
    /// Writes the call's stderr line and, when this session's client asked for messages at
    /// the call's level, sends it the same facts (never params, results or tokens).
    pub(super) async fn log_call(&self, ctx: &RequestContext<RoleServer>, call: CallRecord<'_>) {
        let elapsed = call.started.elapsed();
        trace::log_call(
            call.tool,
            &self.session_for(ctx).principal,
            call.trace,
            call.outcome,
            call.failure,
            elapsed,
        );
        let level = call_level(call.outcome);
        let wanted = if is_modern(ctx) {
            ctx.meta
                .log_level()
                .is_some_and(|asked| log_level::reaches(level, asked))
        } else {
            self.session.log_level.wants(level)
        };
        if !wanted {
            return;
        }
        let message = LoggingMessageNotificationParam::new(level, message_data(&call, elapsed))
            .with_logger(LOGGER);
        // A client that has gone away misses its log message; the call's answer fails anyway.
        if let Err(error) = ctx.peer.notify_logging_message(message).await {
            tracing::debug!(%error, "the call's log message was not sent");
        }
    }
}

fn message_data(call: &CallRecord<'_>, elapsed: Duration) -> serde_json::Value {
    serde_json::json!({
        "tool": call.tool,
        "outcome": call.outcome,
        "kind": call.failure.map(ErrorKind::as_str),
        "duration_ms": elapsed.as_micros() as f64 / 1000.0,
        "traceparent": call.trace.traceparent,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_map_to_levels() {
        assert_eq!(call_level("success"), LoggingLevel::Info);
        assert_eq!(call_level("continued"), LoggingLevel::Info);
        assert_eq!(call_level("unknown"), LoggingLevel::Warning);
        assert_eq!(call_level("failed"), LoggingLevel::Error);
    }
}
