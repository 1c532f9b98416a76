//! From a OneBot exchange to a tool result. The envelope is the result, unchanged. A business
//! failure is data (`outcome: failed`, no `isError`); a response that does not confirm success
//! is `unknown`; transport failures are tool errors with a known kind and a next step. Nothing
//! is guessed from message text.

use serde_json::Value;

use crate::onebot::CallError;
use crate::server::{Outcome, Reply};

pub fn classify(read_only: bool, outcome: Result<Value, CallError>) -> Reply {
    match outcome {
        Ok(envelope) => classify_envelope(envelope),
        Err(error) => transport_failure(read_only, error),
    }
}

fn classify_envelope(envelope: Value) -> Reply {
    let status = envelope
        .get("status")
        .and_then(Value::as_str)
        .map(str::to_string);
    let retcode = envelope.get("retcode").and_then(Value::as_i64);
    let wording = envelope
        .get("wording")
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut reply = Reply::ok(envelope);
    match (status.as_deref(), retcode) {
        (Some("ok"), Some(0)) => {}
        (Some("async"), _) | (_, Some(1)) => {
            reply.diagnostics.outcome = Outcome::Unknown;
            reply.diagnostics.kind = Some("async");
            reply.diagnostics.message =
                Some("SnowLuma acknowledged the call asynchronously; it does not confirm that the action succeeded".into());
            reply.diagnostics.next_step =
                Some("check the effect with a read-only action before repeating the call".into());
        }
        (Some("failed"), _) | (_, Some(_))
            if retcode != Some(0) || status.as_deref() == Some("failed") =>
        {
            reply.diagnostics.outcome = Outcome::Failed;
            reply.diagnostics.kind = Some("onebot_failure");
            reply.diagnostics.message = Some(match (&wording, retcode) {
                (Some(w), Some(code)) => format!("SnowLuma answered retcode {code}: {w}"),
                (None, Some(code)) => format!("SnowLuma answered retcode {code}"),
                (Some(w), None) => format!("SnowLuma answered status failed: {w}"),
                (None, None) => "SnowLuma answered status failed".into(),
            });
            reply.diagnostics.next_step = Some(
                match retcode {
                    Some(1400) => "SnowLuma rejected the params; compare them with get_action's params and invariants",
                    Some(1404) => "this SnowLuma does not know the action; check its version with get_runtime_info check_connection",
                    Some(100) => "the action ran and failed; the wording says why (e.g. an id it does not know)",
                    _ => "read status, retcode and wording in the result",
                }
                .into(),
            );
        }
        _ => {
            reply.diagnostics.outcome = Outcome::Unknown;
            reply.diagnostics.kind = Some("unconfirmed");
            reply.diagnostics.message = Some(
                "the response has no status \"ok\" with retcode 0, so success is not confirmed"
                    .into(),
            );
            reply.diagnostics.next_step =
                Some("inspect the result; check the effect with a read-only action".into());
        }
    }
    reply
}

fn transport_failure(read_only: bool, error: CallError) -> Reply {
    let remote_note = if read_only {
        ""
    } else {
        " SnowLuma may already have performed the action; check before repeating it."
    };
    let mut reply = match &error {
        CallError::Connect(cause) => Reply::error(
            "connection_refused",
            format!("could not connect to SnowLuma ({cause}); nothing was sent"),
            "check that SnowLuma is running with its HTTP server enabled at SNOWLUMA_MCP_ENDPOINT",
        ),
        CallError::Timeout => Reply::error(
            "timeout",
            format!("SnowLuma did not answer within SNOWLUMA_MCP_TIMEOUT_MS.{remote_note}"),
            "retry later or raise SNOWLUMA_MCP_TIMEOUT_MS; nothing is retried automatically",
        ),
        CallError::Cancelled => Reply::error(
            "cancelled",
            format!("the call was cancelled before SnowLuma answered.{remote_note}"),
            "check the effect with a read-only action before calling again",
        ),
        CallError::Broken(cause) => Reply::error(
            "connection_broken",
            format!(
                "the connection to SnowLuma broke before a complete answer ({cause}).{remote_note}"
            ),
            "check SnowLuma's logs; nothing is retried automatically",
        ),
        CallError::Status(401, _) => Reply::error(
            "unauthorized",
            "SnowLuma refused the access token (HTTP 401)",
            "check SNOWLUMA_MCP_TOKEN against SnowLuma's HTTP access token",
        ),
        CallError::Status(404, _) => Reply::error(
            "not_found",
            "SnowLuma's HTTP server has no such path (HTTP 404)",
            "check the path of SNOWLUMA_MCP_ENDPOINT against SnowLuma's HTTP base path (default `/`)",
        ),
        CallError::Status(code, wording) if *code >= 500 => Reply::error(
            "server_error",
            format!(
                "SnowLuma failed internally (HTTP {code}{}).{remote_note}",
                wording
                    .as_ref()
                    .map(|w| format!(": {w}"))
                    .unwrap_or_default()
            ),
            "check SnowLuma's logs; requests larger than 2 MiB are refused this way",
        ),
        CallError::Status(code, wording) => Reply::error(
            "http_error",
            format!(
                "SnowLuma answered HTTP {code}{}",
                wording
                    .as_ref()
                    .map(|w| format!(": {w}"))
                    .unwrap_or_default()
            ),
            "check SNOWLUMA_MCP_ENDPOINT points at SnowLuma's OneBot HTTP server",
        ),
        CallError::NotJson(cause) => Reply::error(
            "bad_response",
            format!("SnowLuma's answer is not a OneBot envelope: {cause}.{remote_note}"),
            "check SNOWLUMA_MCP_ENDPOINT points at SnowLuma's OneBot HTTP server, not another service",
        ),
        CallError::TooLarge => Reply::error(
            "bad_response",
            format!(
                "SnowLuma's answer exceeds {} MiB.{remote_note}",
                crate::onebot::MAX_RESPONSE_BYTES >> 20
            ),
            "use a narrower query (paging params) or a stream action",
        ),
    };
    // A timeout, cancellation or broken exchange does not tell whether SnowLuma acted.
    if matches!(
        error,
        CallError::Timeout
            | CallError::Cancelled
            | CallError::Broken(_)
            | CallError::NotJson(_)
            | CallError::TooLarge
    ) {
        reply.diagnostics.outcome = Outcome::Unknown;
    }
    reply
}
