//! What every tool call ends in, independent of the protocol: an [`Outcome`], the
//! [`Diagnostics`] that explain it, the one [`ErrorKind`] enum naming every failure category
//! the server reports, and [`ToolReply`], the value each tool handler returns. The protocol
//! layer (`server/`) turns a `ToolReply` into an MCP result; nothing here knows MCP.

use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Success,
    Failed,
    Unknown,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Failed => "failed",
            Outcome::Unknown => "unknown",
        }
    }
}

/// Declares [`ErrorKind`] with its wire name, meaning and usual next step in one table, so the
/// enum, the output schemas' `kind` enum and README's table cannot drift apart.
macro_rules! error_kinds {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal, $meaning:literal, $next:literal; )*) => {
        /// Every failure category a result's `diagnostics.kind` can name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorKind {
            $( $(#[$doc])* $variant, )*
        }

        impl ErrorKind {
            pub const ALL: &'static [ErrorKind] = &[$(ErrorKind::$variant),*];

            /// The name clients see in `diagnostics.kind`.
            pub fn as_str(self) -> &'static str {
                match self { $(ErrorKind::$variant => $name,)* }
            }

            /// One line on what the kind means (README's table).
            pub fn meaning(self) -> &'static str {
                match self { $(ErrorKind::$variant => $meaning,)* }
            }

            /// The usual next step (README's table; each result names its own, more precise one).
            pub fn usual_next_step(self) -> &'static str {
                match self { $(ErrorKind::$variant => $next,)* }
            }
        }
    };
}

error_kinds! {
    // Misuse of a tool: nothing was sent.
    /// The tool's arguments or the action's params fail a check.
    InvalidArguments = "invalid_arguments", "the tool's arguments or the action's params fail a check; nothing was sent", "fix the named field (tools/list and get_action show the schemas) and call again";
    UnknownTool = "unknown_tool", "no tool of that name", "call tools/list";
    UnknownAction = "unknown_action", "the action is neither a name nor an alias in the bundled catalog", "use a suggested name, or find the action with search_actions";
    /// The server's mode (or the tool used) does not allow the call.
    Mode = "mode", "the server's mode, or the tool used, does not allow this action", "use the tool the message names, or change SNOWLUMA_MCP_MODE";
    /// SNOWLUMA_MCP_DENY_ACTIONS names the action, or SNOWLUMA_MCP_ALLOW_ACTIONS does not.
    Denied = "denied", "this server's allow or deny list does not let the action run; nothing was sent", "use another action, or change the setting the message names";
    UploadDisabled = "upload_disabled", "automatic upload needs SNOWLUMA_MCP_UPLOAD_ROOT", "set SNOWLUMA_MCP_UPLOAD_ROOT, or send chunk calls yourself";
    /// `execution.input_file` was refused (outside the root, missing, unreadable, not a file).
    InputFile = "input_file", "execution.input_file cannot be uploaded", "pass a regular, readable file inside SNOWLUMA_MCP_UPLOAD_ROOT";
    Busy = "busy", "the limit of concurrent transfers is reached", "wait for a running transfer to finish, then call again";
    /// Background tasks: the limit of tasks working at once is reached.
    /// A send limit (per target or overall) is reached; `diagnostics.retry_after_ms` and
    /// `diagnostics.bucket` say when and which.
    RateLimited = "rate_limited", "a send limit (SNOWLUMA_MCP_SEND_*) is reached; nothing was sent", "wait diagnostics.retry_after_ms, then send again";
    TaskLimit = "task_limit", "four background tasks are already working; nothing was started", "wait for a task to finish (poll tasks/get) or cancel one, then start again";
    UnknownTask = "unknown_task", "no background task with that id in SNOWLUMA_MCP_TASK_DIR", "call list_tasks for the known task ids";
    // Local resources.
    DownloadDir = "download_dir", "the download directory cannot be used or written", "check SNOWLUMA_MCP_DOWNLOAD_DIR and its disk";
    FileTooLarge = "file_too_large", "the file is larger than SNOWLUMA_MCP_MAX_FILE_BYTES", "raise SNOWLUMA_MCP_MAX_FILE_BYTES or move a smaller file";
    /// The task directory could not be read or written.
    TaskStore = "task_store", "the task directory cannot be read or written, or a record in it is invalid", "check SNOWLUMA_MCP_TASK_DIR, its permissions and its disk, then call again";
    QuotaExceeded = "quota_exceeded", "the download directory would exceed SNOWLUMA_MCP_DIR_QUOTA_BYTES", "delete files from the download directory or raise the quota";
    // Talking to SnowLuma.
    ConnectionRefused = "connection_refused", "no connection to SnowLuma could be made; nothing was sent", "check that SnowLuma runs with its HTTP server at SNOWLUMA_MCP_ENDPOINT";
    /// An https/wss handshake failed, most often an untrusted certificate.
    Tls = "tls", "the TLS handshake with SnowLuma failed (e.g. an untrusted certificate); nothing was sent", "trust its CA with SNOWLUMA_MCP_CA_FILE (a PEM file), or check the URL's scheme and host name";
    Timeout = "timeout", "SnowLuma did not answer in time; it may have acted", "check the effect with a read-only action, then retry or raise SNOWLUMA_MCP_TIMEOUT_MS";
    Cancelled = "cancelled", "the MCP client cancelled the call; SnowLuma may have acted", "check the effect with a read-only action before calling again";
    ConnectionBroken = "connection_broken", "the connection broke before a complete answer; SnowLuma may have acted", "check SnowLuma's logs and the effect before calling again";
    Unauthorized = "unauthorized", "SnowLuma answered HTTP 401: the access token is missing or wrong", "set SNOWLUMA_MCP_TOKEN to SnowLuma's HTTP access token";
    NotFound = "not_found", "SnowLuma's HTTP server has no such path (HTTP 404)", "check the path of SNOWLUMA_MCP_ENDPOINT";
    ServerError = "server_error", "SnowLuma failed internally (HTTP 5xx)", "check SnowLuma's logs";
    HttpError = "http_error", "SnowLuma answered an unexpected HTTP status", "check SNOWLUMA_MCP_ENDPOINT points at SnowLuma's OneBot HTTP server";
    BadResponse = "bad_response", "the answer is not a OneBot envelope, or is too large", "check SNOWLUMA_MCP_ENDPOINT points at SnowLuma's OneBot HTTP server";
    // Streams.
    StreamIdleTimeout = "stream_idle_timeout", "a stream sent nothing for SNOWLUMA_MCP_STREAM_IDLE_MS", "check SnowLuma and the network, or raise SNOWLUMA_MCP_STREAM_IDLE_MS";
    StreamIncomplete = "stream_incomplete", "a stream ended without its terminal frame", "check SnowLuma's logs; nothing is retried automatically";
    BadFrame = "bad_frame", "a stream frame is malformed, too large or out of order", "check that the endpoint is SnowLuma's OneBot HTTP server";
    SizeMismatch = "size_mismatch", "the bytes received differ from the size SnowLuma announced", "transfer again; the partial file was removed";
    Sha256Mismatch = "sha256_mismatch", "SnowLuma assembled a file whose sha256 differs from the local file", "upload again; the partial upload was reset";
    /// The OS random source failed; ids are never made up without it.
    RandomUnavailable = "random_unavailable", "the operating system's random source failed, so no unpredictable id could be made; nothing was sent", "check the host's random source (getrandom), then call again";
    // Completing missing params (query_action_with_input / invoke_action_with_input).
    /// The client cannot show a form (no form elicitation declared for this request).
    InputUnsupported = "input_unsupported", "params are missing and the client declared no form elicitation; nothing was run", "call query_action / invoke_action with complete params";
    InputDeclined = "input_declined", "the user declined the prompt (missing params, or the confirmation SNOWLUMA_MCP_CONFIRM asks for); nothing was run", "call again with complete params if the action is still wanted; after a declined confirmation, only if the user asks";
    /// Cancelled prompt, a cancelled call while waiting, or no answer in time.
    InputCancelled = "input_cancelled", "the prompt (missing params or a confirmation) was cancelled or not answered in time; nothing was run", "call again if the action is still wanted";
    /// The answer is not a JSON object holding exactly the asked-for, valid fields.
    InputInvalid = "input_invalid", "the answer to the prompt is invalid (names the field); nothing was run", "call the tool again and answer params_json with exactly the asked-for fields";
    /// requestState is expired, altered, from another process, tool or arguments, or used.
    InputState = "input_state", "requestState cannot be used: expired, altered, already answered, or issued for another tool, other arguments or before a restart; nothing was run", "call the tool again without requestState for a fresh prompt";
    InputLimit = "input_limit", "the server already holds its maximum of unanswered prompts (256); nothing was run", "answer or abandon open prompts (they expire after ten minutes), or call query_action / invoke_action with complete params";
    // Write guards.
    /// SNOWLUMA_MCP_CONFIRM asks for confirmation and this caller cannot be asked.
    ConfirmationUnavailable = "confirmation_unavailable", "SNOWLUMA_MCP_CONFIRM needs the user's confirmation and the client declared no form elicitation; nothing was sent", "use an MCP client with form elicitation, or change SNOWLUMA_MCP_CONFIRM";
    /// SNOWLUMA_MCP_AUDIT_LOG cannot be written, so the call was refused.
    AuditLog = "audit_log", "the audit log (SNOWLUMA_MCP_AUDIT_LOG) cannot be written; nothing was run", "fix the file's directory, permissions or disk, or change SNOWLUMA_MCP_AUDIT_LOG";
    // Live events.
    /// The event socket could not be opened, or has stopped.
    EventsConnection = "events_connection", "the event WebSocket could not be opened or has stopped; the status names the reason", "check SnowLuma's WebSocket adapter and SNOWLUMA_MCP_EVENTS_URL; release every event resource before subscribing again";
    EventsToken = "events_token", "SnowLuma rejected the access token on the event socket (close 1008)", "set SNOWLUMA_MCP_TOKEN to the WebSocket adapter's access token";
    /// 16 resources per process, or one account per connection.
    EventsLimit = "events_limit", "an event limit is reached: 16 resources per process, one account per connection", "release event resources with unsubscribe_events, then subscribe again";
    UnknownResource = "unknown_resource", "no such event resource in this MCP session (never created, released, or another session's)", "subscribe_events returns the canonical snowluma://onebot/events/<id> URI";
    BadCursor = "bad_cursor", "the cursor `after` is malformed, too new or from another resource", "pass next_cursor or oldest_cursor from a read of the same resource, or omit it";
    WaitInProgress = "wait_in_progress", "another read_events call is already waiting on this resource", "wait for that call to return, then call again";
    // Answers that are data, not tool errors.
    /// A OneBot business failure (`status: failed` or `retcode != 0`).
    OnebotFailure = "onebot_failure", "SnowLuma ran the action and answered a failure (retcode != 0); the envelope is the result", "read status, retcode and wording in the result";
    /// A stream that ended with SnowLuma's error frame; the frame is the result.
    StreamFailed = "stream_failed", "a stream ended with SnowLuma's error frame; the frame is the result", "read the frame's retcode and message";
    Async = "async", "SnowLuma acknowledged the call asynchronously; success is not confirmed", "check the effect with a read-only action";
    Unconfirmed = "unconfirmed", "the answer does not confirm success", "inspect the result and check the effect with a read-only action";
    /// read_more: the continuation ran out its lifetime, or its result was evicted.
    ContinuationExpired = "continuation_expired", "the continuation of a paged result expired or its result was evicted to bound memory", "call the tool again";
    ConnectionCheck = "connection_check", "some of get_runtime_info's connection checks did not succeed", "read each check's diagnostics";
}

impl Serialize for ErrorKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Diagnostics {
    pub outcome: Outcome,
    /// The known failure category, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<ErrorKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_step: Option<String>,
    /// Tool-specific details (search terms, trace warnings, transfer details …).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
    /// A paged result's first line of text: what the page holds and how to get the rest
    /// (`crate::paging`). Not part of the JSON: rendered as its own text block before it.
    /// Kept here, behind the reply's box, so a `ToolReply` stays small.
    #[serde(skip)]
    pub summary: Option<String>,
}

impl Diagnostics {
    pub fn success() -> Self {
        Diagnostics {
            outcome: Outcome::Success,
            kind: None,
            message: None,
            next_step: None,
            extra: Map::new(),
            summary: None,
        }
    }

    /// Marks the result with an outcome, a kind and an explanation.
    pub fn set(
        &mut self,
        outcome: Outcome,
        kind: ErrorKind,
        message: impl Into<String>,
        next_step: impl Into<String>,
    ) {
        self.outcome = outcome;
        self.kind = Some(kind);
        self.message = Some(message.into());
        self.next_step = Some(next_step.into());
    }
}

/// What a tool handler produces; the protocol layer renders it as `structuredContent
/// {result, diagnostics}` plus the same JSON as text.
#[derive(Debug, Clone)]
pub struct ToolReply {
    /// The result, except in a reply made by [`ToolReply::serialized`], whose result exists
    /// only as `result_json` until [`ToolReply::take_result`] or [`ToolReply::result_mut`]
    /// builds it (null until then).
    pub result: Value,
    /// Boxed to keep `Result<_, ToolReply>` small.
    pub diagnostics: Box<Diagnostics>,
    /// Tool misuse and transport errors; a OneBot business failure is not an error.
    pub is_error: bool,
    /// `result` already serialized, so rendering copies these bytes instead of serializing
    /// `result` again. Only [`ToolReply::serialized`] sets it, and [`ToolReply::result_mut`]
    /// clears it.
    pub result_json: Option<Arc<RawValue>>,
    /// `result` is still to be built from `result_json`.
    deferred: bool,
}

impl ToolReply {
    pub fn ok(result: Value) -> Self {
        ToolReply {
            result,
            diagnostics: Box::new(Diagnostics::success()),
            is_error: false,
            result_json: None,
            deferred: false,
        }
    }

    /// A successful reply whose result is only its JSON text: most replies are written out
    /// as text and never need the value tree (the stdio transport writes `structuredContent`
    /// from the text), so the tree is built only when someone asks for it.
    pub fn serialized(json: Arc<RawValue>) -> Self {
        ToolReply {
            result_json: Some(json),
            deferred: true,
            ..ToolReply::ok(Value::Null)
        }
    }

    /// Serializes `result` straight to text (no value tree) for [`ToolReply::serialized`].
    pub fn ok_typed<T: serde::Serialize + ?Sized>(result: &T) -> Self {
        match serde_json::value::to_raw_value(result) {
            Ok(json) => ToolReply::serialized(json.into()),
            Err(_) => ToolReply::ok(Value::Null),
        }
    }

    /// Builds `result` from `result_json` if it exists only there.
    fn materialize(&mut self) {
        if std::mem::take(&mut self.deferred)
            && let Some(json) = &self.result_json
        {
            self.result = serde_json::from_str(json.get()).unwrap_or(Value::Null);
        }
    }

    /// `result` for changing: drops the serialized copy, which would no longer match.
    pub fn result_mut(&mut self) -> &mut Value {
        self.materialize();
        self.result_json = None;
        &mut self.result
    }

    /// Moves the result out (built from its text if need be), leaving null.
    pub fn take_result(&mut self) -> Value {
        self.materialize();
        std::mem::take(&mut self.result)
    }

    /// A tool error: `result` is null and the diagnostics say what went wrong and what to do.
    pub fn error(
        kind: ErrorKind,
        message: impl Into<String>,
        next_step: impl Into<String>,
    ) -> Self {
        let mut diagnostics = Diagnostics::success();
        diagnostics.set(Outcome::Failed, kind, message, next_step);
        ToolReply {
            result: Value::Null,
            diagnostics: Box::new(diagnostics),
            is_error: true,
            result_json: None,
            deferred: false,
        }
    }

    /// Adds a detail to the diagnostics.
    pub fn with_detail(mut self, key: &str, value: Value) -> Self {
        self.diagnostics.extra.insert(key.into(), value);
        self
    }

    pub fn outcome(&self) -> Outcome {
        self.diagnostics.outcome
    }
}

/// `{"result":…,"diagnostics":…}` as text: the same bytes as serializing the
/// `structuredContent` object (keys in this order), without building it first.
pub fn reply_text(reply: &ToolReply) -> String {
    let result = match &reply.result_json {
        Some(json) => ResultText::Serialized(json),
        None => ResultText::Value(&reply.result),
    };
    let structured = Structured {
        result,
        diagnostics: &reply.diagnostics,
    };
    serde_json::to_string(&structured).unwrap_or_default()
}

#[derive(Serialize)]
struct Structured<'a> {
    result: ResultText<'a>,
    diagnostics: &'a Diagnostics,
}

#[derive(Serialize)]
#[serde(untagged)]
enum ResultText<'a> {
    Serialized(&'a RawValue),
    Value(&'a Value),
}

/// Parses a tool's arguments into `T`, naming the offending field on failure.
pub fn parse_args<T: DeserializeOwned>(
    tool: &str,
    args: Option<Map<String, Value>>,
) -> Result<T, ToolReply> {
    let value = Value::Object(args.unwrap_or_default());
    serde_path_to_error::deserialize::<_, T>(&value).map_err(|error| {
        let path = error.path().to_string();
        let inner = without_value(&error.inner().to_string(), &value, error.path());
        let message = if path == "." {
            format!("invalid arguments: {inner}")
        } else {
            format!("invalid argument `{path}`: {inner}")
        };
        ToolReply::error(
            ErrorKind::InvalidArguments,
            message,
            format!(
                "fix the arguments to match {tool}'s inputSchema (see tools/list) and call again"
            ),
        )
    })
}

/// serde's message about a value it refused, without the value. serde quotes a refused string
/// (`invalid type: string "…"`, `` unknown variant `…` ``), and a string in the wrong place can
/// be message text the caller meant to send: diagnostics are shown to users and kept in
/// client logs and task records, so they name the field and what it expects, never its
/// contents. `path` locates the refused value inside `root`.
pub fn without_value(message: &str, root: &Value, path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut at = root;
    for segment in path {
        let next = match segment {
            Segment::Seq { index } => at.get(*index),
            Segment::Map { key } => at.get(key.as_str()),
            Segment::Enum { .. } | Segment::Unknown => None,
        };
        match next {
            Some(value) => at = value,
            None => break,
        }
    }
    match at {
        // Exactly serde's two renderings of a refused string, so the rest of the message
        // (the field, what was expected) stays as serde wrote it.
        Value::String(text) => message
            .replace(&format!("string {text:?}"), "a string")
            .replace(
                &format!("unknown variant `{text}`"),
                "unknown variant (value not shown)",
            ),
        _ => message.to_string(),
    }
}

/// A value's JSON type, for messages ("not an array").
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_names_are_unique_snake_case() {
        let mut seen = std::collections::BTreeSet::new();
        for kind in ErrorKind::ALL {
            let name = kind.as_str();
            assert!(seen.insert(name), "duplicate kind {name}");
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_lowercase() || b == b'_' || b.is_ascii_digit())
            );
            assert!(!kind.meaning().is_empty() && !kind.usual_next_step().is_empty());
        }
    }

    #[test]
    fn refused_strings_are_not_repeated_in_argument_errors() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Args {
            id: i64,
            kind: Option<Kind>,
            list: Option<Vec<Kind>>,
        }
        #[derive(serde::Deserialize, Debug)]
        #[serde(rename_all = "lowercase")]
        enum Kind {
            Group,
        }
        let secret = "a \"quoted\" secret";
        for (args, field) in [
            (serde_json::json!({ "id": secret }), "`id`"),
            (serde_json::json!({ "id": 1, "kind": secret }), "`kind`"),
            (
                serde_json::json!({ "id": 1, "list": ["group", secret] }),
                "`list[1]`",
            ),
        ] {
            let Value::Object(map) = args else {
                unreachable!()
            };
            let reply = parse_args::<Args>("t", Some(map)).unwrap_err();
            let message = reply.diagnostics.message.clone().unwrap_or_default();
            assert!(message.contains(field), "{message}");
            assert!(!message.contains("secret"), "{message}");
        }
        let Value::Object(map) = serde_json::json!({ "id": 1, "kind": "x" }) else {
            unreachable!()
        };
        let message = parse_args::<Args>("t", Some(map))
            .unwrap_err()
            .diagnostics
            .message
            .clone();
        assert!(
            message.unwrap().contains("expected `group`"),
            "the expectation stays"
        );
    }

    #[test]
    fn errors_serialize_their_kind_and_null_result() {
        let reply = ToolReply::error(ErrorKind::Mode, "no", "change mode");
        assert!(reply.is_error);
        assert_eq!(reply.result, Value::Null);
        let diagnostics = serde_json::to_value(&*reply.diagnostics).unwrap();
        assert_eq!(diagnostics["kind"], "mode");
        assert_eq!(diagnostics["outcome"], "failed");
    }
}
