//! The one execution pipeline every executing tool uses:
//! resolve -> gate -> check params -> call -> classify -> structured result.
//!
//! The gate is decided here and nowhere else, on every call: read-only actions through
//! `query_action` in read or write mode, everything else through `invoke_action` in write
//! mode, stream actions in write mode only.

mod classify;

use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::catalog::{self, Resolved};
use crate::config::{Config, Mode};
use crate::onebot::OneBotClient;
use crate::server::Reply;
use crate::streams::{Progress, StreamCall, Streams};
use crate::trace::TraceContext;

pub use classify::classify;

/// Which executing tool a call came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    Query,
    Invoke,
}

impl Entry {
    pub fn tool(self) -> &'static str {
        match self {
            Entry::Query => "query_action",
            Entry::Invoke => "invoke_action",
        }
    }
}

/// Arguments of `query_action` and `invoke_action`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ActionArgs {
    /// Action name or alias from the catalog, e.g. `get_group_list`.
    pub action: String,
    /// The action's OneBot params, forwarded exactly as given (see get_action for them).
    #[serde(default)]
    #[schemars(with = "Option<Map<String, Value>>")]
    pub params: Option<Value>,
    /// Options for this server, never sent to SnowLuma (invoke_action only).
    #[serde(default)]
    pub execution: Option<Execution>,
}

/// How this server should carry out the call; a sibling of `params`, never forwarded.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Execution {
    /// upload_file_stream only: a file on the MCP host, inside SNOWLUMA_MCP_UPLOAD_ROOT, that this
    /// server uploads in chunks (stream id, chunks, sha256 and the completion call are its job).
    pub input_file: Option<String>,
}

/// Params the server sets itself during an automatic upload.
const UPLOAD_MANAGED: &[&str] = &[
    "stream_id",
    "chunk_data",
    "chunk_index",
    "total_chunks",
    "file_size",
    "expected_sha256",
    "is_complete",
    "reset",
    "verify_only",
];

pub struct Executor {
    client: OneBotClient,
    mode: Mode,
    streams: Streams,
}

impl Executor {
    pub fn new(config: &Config) -> Result<Executor, String> {
        let endpoint = config
            .endpoint
            .as_deref()
            .ok_or("execution needs SNOWLUMA_MCP_ENDPOINT")?;
        Ok(Executor {
            client: OneBotClient::new(endpoint, config.token.as_deref(), config.timeout)?,
            mode: config.mode,
            streams: Streams::new(config.streams.clone()),
        })
    }

    pub fn timeout_ms(&self) -> u128 {
        self.client.timeout().as_millis()
    }

    pub fn streams(&self) -> &Streams {
        &self.streams
    }

    /// Runs one action call through the whole pipeline.
    pub async fn run(
        &self,
        entry: Entry,
        args: ActionArgs,
        trace: &TraceContext,
        cancel: &CancellationToken,
        progress: &mut Progress,
    ) -> Reply {
        let resolved = match catalog::resolve(args.action.trim()) {
            Some(resolved) => resolved,
            None => return crate::server::unknown_action(args.action.trim()),
        };
        if let Err(refusal) = gate(entry, self.mode, resolved) {
            return refusal;
        }
        let params = match args.params {
            None => Map::new(),
            Some(Value::Object(params)) => params,
            Some(other) => {
                return Reply::error(
                    "invalid_params",
                    format!(
                        "params must be an object of OneBot params, not {}",
                        json_kind(&other)
                    ),
                    format!(
                        "pass params as an object; get_action {} lists them",
                        resolved.meta.name
                    ),
                );
            }
        };
        let input_file = args.execution.and_then(|e| e.input_file);
        if let Some(refusal) = check_execution(entry, resolved, input_file.as_deref(), &params) {
            return refusal;
        }
        // An automatic upload's stream id is chosen later; the rest is checked as usual.
        let mut checked = params.clone();
        if input_file.is_some() {
            checked.insert("stream_id".into(), Value::String("automatic".into()));
        }
        if let Err(error) = resolved.meta.check_params(&checked) {
            return Reply::error(
                "invalid_params",
                format!("{}: {error}", resolved.meta.name),
                format!(
                    "nothing was sent; fix the params (get_action {} shows them) and call again",
                    resolved.meta.name
                ),
            );
        }
        let name = args.action.trim();
        if resolved.meta.is_stream() {
            let call = StreamCall {
                trace,
                cancel,
                progress,
            };
            return self
                .streams
                .run(
                    &self.client,
                    resolved.meta,
                    name,
                    params,
                    input_file.as_deref(),
                    call,
                )
                .await;
        }
        let outcome = self.client.call(name, &params, trace, cancel).await;
        classify(resolved.meta.read_only, outcome)
    }
}

/// The single place that decides whether an action may run through a tool in a mode.
pub fn gate(entry: Entry, mode: Mode, resolved: Resolved) -> Result<(), Reply> {
    let action = resolved.meta;
    if !mode.executes() {
        return Err(Reply::error(
            "mode",
            format!(
                "{} cannot run `{}`: this server runs in docs mode and never contacts SnowLuma",
                entry.tool(),
                action.name
            ),
            "set SNOWLUMA_MCP_ENDPOINT and SNOWLUMA_MCP_MODE=read (or write) in the MCP client's server configuration",
        ));
    }
    if action.is_stream() && (!mode.writes() || entry == Entry::Query) {
        return Err(Reply::error(
            "mode",
            format!(
                "`{}` is a stream action; stream actions need invoke_action in write mode",
                action.name
            ),
            if mode.writes() {
                "call invoke_action instead"
            } else {
                "set SNOWLUMA_MCP_MODE=write to allow stream actions"
            },
        ));
    }
    match entry {
        Entry::Query if !action.read_only => Err(Reply::error(
            "mode",
            format!(
                "query_action only runs read-only actions; `{}` changes state",
                action.name
            ),
            if mode.writes() {
                "call invoke_action with the same arguments".to_string()
            } else {
                "this server runs in read mode; writes need SNOWLUMA_MCP_MODE=write and invoke_action".to_string()
            },
        )),
        Entry::Invoke if !mode.writes() => Err(Reply::error(
            "mode",
            format!(
                "invoke_action needs write mode; this server runs in {} mode",
                mode.as_str()
            ),
            if action.read_only {
                format!("`{}` is read-only: call query_action instead", action.name)
            } else {
                "set SNOWLUMA_MCP_MODE=write in the MCP client's server configuration".to_string()
            },
        )),
        _ => Ok(()),
    }
}

/// `execution` belongs to invoke_action, and `input_file` to upload_file_stream, whose
/// stream-managing params the server then sets itself.
fn check_execution(
    entry: Entry,
    resolved: Resolved,
    input_file: Option<&str>,
    params: &Map<String, Value>,
) -> Option<Reply> {
    let input_file = input_file?;
    let refuse = |message: String, next: &str| {
        Some(Reply::error("invalid_params", message, next.to_string()))
    };
    if entry == Entry::Query || resolved.meta.stream != crate::catalog::StreamKind::Upload {
        return refuse(
            format!(
                "execution.input_file applies to invoke_action with upload_file_stream, not {} with `{}`",
                entry.tool(),
                resolved.meta.name
            ),
            "drop execution, or call invoke_action with action upload_file_stream",
        );
    }
    if input_file.trim().is_empty() {
        return refuse(
            "execution.input_file must not be empty".into(),
            "pass a file path inside SNOWLUMA_MCP_UPLOAD_ROOT",
        );
    }
    let managed: Vec<&str> = UPLOAD_MANAGED
        .iter()
        .copied()
        .filter(|k| params.contains_key(*k))
        .collect();
    if !managed.is_empty() {
        return refuse(
            format!(
                "with execution.input_file the server sets {} itself",
                managed.join(", ")
            ),
            "drop those params (filename and file_retention may stay), or upload chunk by chunk without execution",
        );
    }
    None
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Parses the arguments of an executing tool.
pub fn parse(tool: &str, args: Option<JsonObject>) -> Result<ActionArgs, Reply> {
    crate::server::tools::parse_args(tool, args)
}
