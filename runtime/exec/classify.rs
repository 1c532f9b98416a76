//! From a OneBot exchange to a tool result. The envelope is the result, unchanged. A business
//! failure is data (`outcome: failed`, no `isError`), and so is a stream that SnowLuma ended
//! with its error frame: the frame is the result. A response that does not confirm success is
//! `unknown`; transport and local failures are tool errors with a known kind and a next step.
//! Nothing is guessed from message text.

use serde_json::{Map, Value};

use crate::catalog::{ActionMeta, StreamKind, UnknownAction};
use crate::onebot::frames;
use crate::onebot::{CallError, StreamStop};
use crate::outcome::{ErrorKind, Outcome, ToolReply};
use crate::streams::{StreamEnd, StreamError, StreamOutcome};

pub fn classify(read_only: bool, outcome: Result<Value, CallError>) -> ToolReply {
    match outcome {
        Ok(envelope) => classify_envelope(envelope),
        Err(error) => transport_failure(read_only, error),
    }
}

/// SnowLuma reads everything after its root path as the action name, so an endpoint with a
/// path (`http://host:3000/onebot/`) makes every catalog action answer retcode 1404. When a
/// catalog action gets 1404 and the endpoint has a path, say so instead of blaming the version.
pub fn explain_1404(reply: &mut ToolReply, endpoint_path: &str) {
    let failed_1404 = reply.diagnostics.outcome == Outcome::Failed
        && reply.result.get("retcode").and_then(Value::as_i64) == Some(1404);
    if failed_1404 && endpoint_path != "/" {
        reply.diagnostics.next_step = Some(format!(
            "the endpoint path may be wrong: SnowLuma reads everything after its root as the action name, and SNOWLUMA_MCP_ENDPOINT's path is `{endpoint_path}`; point it at SnowLuma's root (e.g. http://127.0.0.1:3000/)"
        ));
    }
}

pub fn unknown_action(unknown: UnknownAction) -> ToolReply {
    ToolReply::error(
        ErrorKind::UnknownAction,
        unknown.to_string(),
        unknown.next_step(),
    )
}

/// A stream's end or failure as a tool result.
pub fn classify_stream(action: &ActionMeta, outcome: StreamOutcome) -> ToolReply {
    let (mut reply, details) = match outcome {
        Ok(result) => {
            let reply = match result.end {
                StreamEnd::Completed(value) => ToolReply::ok(value),
                StreamEnd::RemoteFailure(frame) => remote_failure(action, frame),
            };
            (reply, result.details)
        }
        Err(failure) => (stream_failure(action, failure.error), *failure.details),
    };
    extend(&mut reply.diagnostics.extra, details);
    reply
}

fn extend(target: &mut Map<String, Value>, details: Map<String, Value>) {
    for (key, value) in details {
        target.insert(key, value);
    }
}

/// SnowLuma's error frame ends the stream: like a failed envelope, it is the result.
fn remote_failure(action: &ActionMeta, frame: Value) -> ToolReply {
    let reason = frames::reason(&frame);
    let mut reply = ToolReply::ok(frame);
    let next_step = match action.stream {
        StreamKind::Download => {
            "read the frame's message; check the file or file_id (get_action download_file_stream explains the sources)"
        }
        StreamKind::Upload => {
            "read the frame's message; the partial upload was reset, so start a new upload"
        }
        _ => "read the frame's retcode and message",
    };
    reply.diagnostics.set(
        Outcome::Failed,
        ErrorKind::StreamFailed,
        format!("SnowLuma ended the stream with an error: {reason}"),
        next_step,
    );
    reply
}

fn stream_failure(action: &ActionMeta, error: StreamError) -> ToolReply {
    match error {
        StreamError::Stop(StreamStop::Call(error)) => transport_failure(action.read_only, error),
        StreamError::Stop(StreamStop::Idle(idle)) => unknown_for_writes(
            action,
            ToolReply::error(
                ErrorKind::StreamIdleTimeout,
                format!(
                    "SnowLuma sent nothing for {} ms (SNOWLUMA_MCP_STREAM_IDLE_MS).",
                    idle.as_millis()
                ),
                "check SnowLuma and the network, or raise SNOWLUMA_MCP_STREAM_IDLE_MS",
            ),
        ),
        StreamError::Stop(StreamStop::Frame(error)) => unknown_for_writes(
            action,
            ToolReply::error(
                ErrorKind::BadFrame,
                error.to_string(),
                "check that the endpoint is SnowLuma's OneBot HTTP server",
            ),
        ),
        StreamError::Incomplete => unknown_for_writes(
            action,
            ToolReply::error(
                ErrorKind::StreamIncomplete,
                "the stream ended without a terminal frame",
                "check SnowLuma's logs; nothing is retried automatically",
            ),
        ),
        StreamError::Refused {
            kind,
            message,
            next_step,
        } => ToolReply::error(kind, message, next_step),
    }
}

/// A write stream that stopped after its request went out (no answer in time, a malformed
/// frame, no terminal frame) does not tell whether SnowLuma acted, exactly like an ordinary
/// write whose answer is missing or not JSON: its outcome is unknown. A read claims nothing.
fn unknown_for_writes(action: &ActionMeta, mut reply: ToolReply) -> ToolReply {
    if !action.read_only {
        reply.diagnostics.outcome = Outcome::Unknown;
        if let Some(message) = &mut reply.diagnostics.message {
            message.push_str(" SnowLuma may already have received part of the transfer.");
        }
    }
    reply
}

fn classify_envelope(envelope: Value) -> ToolReply {
    let status = envelope
        .get("status")
        .and_then(Value::as_str)
        .map(str::to_string);
    let retcode = envelope.get("retcode").and_then(Value::as_i64);
    let wording = envelope
        .get("wording")
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut reply = ToolReply::ok(envelope);
    match (status.as_deref(), retcode) {
        (Some("ok"), Some(0)) => {}
        (Some("async"), _) | (_, Some(1)) => {
            reply.diagnostics.outcome = Outcome::Unknown;
            reply.diagnostics.kind = Some(ErrorKind::Async);
            reply.diagnostics.message =
                Some("SnowLuma acknowledged the call asynchronously; it does not confirm that the action succeeded".into());
            reply.diagnostics.next_step =
                Some("check the effect with a read-only action before repeating the call".into());
        }
        (Some("failed"), _) | (_, Some(_))
            if retcode != Some(0) || status.as_deref() == Some("failed") =>
        {
            reply.diagnostics.outcome = Outcome::Failed;
            reply.diagnostics.kind = Some(ErrorKind::OnebotFailure);
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
            reply.diagnostics.kind = Some(ErrorKind::Unconfirmed);
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

fn transport_failure(read_only: bool, error: CallError) -> ToolReply {
    let remote_note = if read_only {
        ""
    } else {
        " SnowLuma may already have performed the action; check before repeating it."
    };
    let mut reply = match &error {
        CallError::Connect(cause) => ToolReply::error(
            ErrorKind::ConnectionRefused,
            format!("could not connect to SnowLuma ({cause}); nothing was sent"),
            "check that SnowLuma is running with its HTTP server enabled at SNOWLUMA_MCP_ENDPOINT",
        ),
        CallError::Tls(failure) => ToolReply::error(
            ErrorKind::Tls,
            failure.describe("SnowLuma's HTTPS endpoint"),
            failure.next_step(),
        ),
        CallError::Timeout => ToolReply::error(
            ErrorKind::Timeout,
            format!("SnowLuma did not answer within SNOWLUMA_MCP_TIMEOUT_MS.{remote_note}"),
            "retry later or raise SNOWLUMA_MCP_TIMEOUT_MS; nothing is retried automatically",
        ),
        CallError::Cancelled => ToolReply::error(
            ErrorKind::Cancelled,
            format!("the call was cancelled before SnowLuma answered.{remote_note}"),
            "check the effect with a read-only action before calling again",
        ),
        CallError::Broken(cause) => ToolReply::error(
            ErrorKind::ConnectionBroken,
            format!(
                "the connection to SnowLuma broke before a complete answer ({cause}).{remote_note}"
            ),
            "check SnowLuma's logs; nothing is retried automatically",
        ),
        CallError::Unauthorized { token_sent: true } => ToolReply::error(
            ErrorKind::Unauthorized,
            "SnowLuma refused the access token (HTTP 401)",
            "check SNOWLUMA_MCP_TOKEN (or SNOWLUMA_MCP_TOKEN_FILE) against SnowLuma's HTTP access token",
        ),
        CallError::Unauthorized { token_sent: false } => ToolReply::error(
            ErrorKind::Unauthorized,
            "SnowLuma requires an access token (HTTP 401) and none is configured",
            "set SNOWLUMA_MCP_TOKEN or SNOWLUMA_MCP_TOKEN_FILE to SnowLuma's HTTP access token",
        ),
        CallError::BodyTooLarge(size) => ToolReply::error(
            ErrorKind::InvalidArguments,
            format!(
                "the request would be {size} bytes, over SnowLuma's {} MiB body cap; nothing was sent",
                crate::onebot::MAX_REQUEST_BYTES >> 20
            ),
            "send large files with upload_file_stream (execution.input_file uploads in chunks) and pass its file_path instead",
        ),
        CallError::Status(404, _) => ToolReply::error(
            ErrorKind::NotFound,
            "SnowLuma's HTTP server has no such path (HTTP 404)",
            "check the path of SNOWLUMA_MCP_ENDPOINT against SnowLuma's HTTP base path (default `/`)",
        ),
        CallError::Status(code, wording) if *code >= 500 => ToolReply::error(
            ErrorKind::ServerError,
            format!(
                "SnowLuma failed internally (HTTP {code}{}).{remote_note}",
                wording
                    .as_ref()
                    .map(|w| format!(": {w}"))
                    .unwrap_or_default()
            ),
            "check SnowLuma's logs; requests larger than 2 MiB are refused this way",
        ),
        CallError::Status(code, wording) => ToolReply::error(
            ErrorKind::HttpError,
            format!(
                "SnowLuma answered HTTP {code}{}",
                wording
                    .as_ref()
                    .map(|w| format!(": {w}"))
                    .unwrap_or_default()
            ),
            "check SNOWLUMA_MCP_ENDPOINT points at SnowLuma's OneBot HTTP server",
        ),
        CallError::NotJson(cause) => ToolReply::error(
            ErrorKind::BadResponse,
            format!("SnowLuma's answer is not a OneBot envelope: {cause}.{remote_note}"),
            "check SNOWLUMA_MCP_ENDPOINT points at SnowLuma's OneBot HTTP server, not another service",
        ),
        CallError::TooLarge(cap) => ToolReply::error(
            ErrorKind::BadResponse,
            format!(
                "SnowLuma's answer exceeds SNOWLUMA_MCP_MAX_RESPONSE_BYTES ({cap} bytes).{remote_note}"
            ),
            "use a narrower query (paging params) or raise SNOWLUMA_MCP_MAX_RESPONSE_BYTES",
        ),
    };
    // A timeout, cancellation or broken exchange does not tell whether SnowLuma acted.
    if matches!(
        error,
        CallError::Timeout
            | CallError::Cancelled
            | CallError::Broken(_)
            | CallError::NotJson(_)
            | CallError::TooLarge(_)
    ) {
        reply.diagnostics.outcome = Outcome::Unknown;
    }
    reply
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::onebot::frames::FrameError;

    #[test]
    fn a_write_stream_that_broke_off_is_unknown_and_a_read_is_failed() {
        for (name, outcome) in [
            ("upload_file_stream", Outcome::Unknown),
            ("download_file_stream", Outcome::Failed),
        ] {
            let meta = crate::catalog::lookup(name).unwrap().meta;
            let stops = [
                StreamError::Stop(StreamStop::Idle(Duration::from_millis(5))),
                StreamError::Stop(StreamStop::Frame(FrameError::Oversized)),
                StreamError::Incomplete,
            ];
            for stop in stops {
                let reply = stream_failure(meta, stop);
                assert!(reply.is_error, "{name}");
                assert_eq!(reply.outcome(), outcome, "{name}: {reply:?}");
                let message = reply.diagnostics.message.as_deref().unwrap_or_default();
                assert_eq!(
                    message.contains("may already have received"),
                    outcome == Outcome::Unknown,
                    "{name}: {message}"
                );
            }
        }
        // A refusal before anything was sent stays failed, even for a write.
        let upload = crate::catalog::lookup("upload_file_stream").unwrap().meta;
        let refused = StreamError::Refused {
            kind: ErrorKind::InputFile,
            message: "no".into(),
            next_step: "fix it".into(),
        };
        assert_eq!(stream_failure(upload, refused).outcome(), Outcome::Failed);
    }
}
