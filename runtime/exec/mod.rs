//! The one execution pipeline every executing tool uses:
//! resolve -> gate -> check params -> call -> classify -> tool result.
//!
//! The gate ([`gate`]) is the only place mode rules are written; this module also owns the
//! arguments of the executing tools ([`ActionArgs`]), the connection check behind
//! `get_runtime_info`, and the mapping of call and stream failures to outcomes.

mod check;
mod classify;
pub mod gate;
mod history;
pub mod policy;
pub mod toolsets;

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::catalog::{self, Resolved, StreamKind};
use crate::config::{Config, Mode};
use crate::guard::{Caller, Guard, Refusal};
use crate::onebot::OneBotClient;
use crate::outcome::{ErrorKind, ToolReply, json_kind};
use crate::streams::{Progress, StreamOverview, Streams};
use crate::trace::TraceContext;

pub use check::ConnectionCheck;
pub use classify::{classify, unknown_action};
pub use gate::{Access, Capability, ClientCapabilities, Entry, Requirement, Setup};
pub use history::PipelineHistory;
pub use policy::{ActionPolicy, Denial};

/// Arguments of `query_action` and `invoke_action`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Execution {
    /// upload_file_stream only: a file on the MCP host, inside SNOWLUMA_MCP_UPLOAD_ROOT, that this
    /// server uploads in chunks (stream id, chunks, sha256 and the completion call are its job).
    pub input_file: Option<String>,
}

/// The runtime overview's execution settings (never the endpoint or token).
#[derive(Debug, Serialize, JsonSchema)]
pub struct ExecutionOverview {
    /// Timeout of ordinary calls.
    pub request_timeout_ms: u64,
    /// Largest ordinary answer read.
    pub max_response_bytes: usize,
    /// Ordinary calls that may wait for SnowLuma at once.
    pub max_calls: usize,
    #[serde(flatten)]
    pub streams: StreamOverview,
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

/// Hears what background work waits for (a transfer slot), and `None` once it runs.
pub type SlotStatus<'a> = dyn Fn(Option<&str>) + Send + Sync + 'a;

/// Runs actions for the whole process; shared by every session.
pub struct Executor {
    mode: Mode,
    /// The allow and deny lists and typed toolsets, resolved at start-up.
    policy: ActionPolicy,
    /// Present in read and write mode only; docs mode has no way to reach SnowLuma.
    client: Option<OneBotClient>,
    streams: Streams,
    /// Ordinary calls in flight, bounded like streams.
    calls: Arc<Semaphore>,
    max_calls: usize,
    /// Send limits, confirmation and the audit log, consulted for every write.
    guard: Guard,
}

impl Executor {
    pub fn new(config: &Config) -> Result<Executor, String> {
        let client = match (&config.endpoint, config.mode.executes()) {
            (Some(endpoint), true) => Some(OneBotClient::new(
                endpoint,
                config.token.as_deref(),
                config.timeout,
                config.max_response_bytes,
                config.tls.client_config(),
            )?),
            (None, true) => return Err("execution needs SNOWLUMA_MCP_ENDPOINT".into()),
            (_, false) => None,
        };
        let policy = ActionPolicy::resolve(&config.actions)?;
        Ok(Executor {
            mode: config.mode,
            policy,
            client,
            streams: Streams::new(config.streams.clone()),
            calls: Arc::new(Semaphore::new(config.max_calls)),
            max_calls: config.max_calls,
            guard: Guard::new(&config.guard),
        })
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn policy(&self) -> &ActionPolicy {
        &self.policy
    }

    /// The gate for one action through one executing tool (mode, allow and deny lists).
    pub fn gate(&self, entry: Entry, resolved: Resolved) -> Result<(), ToolReply> {
        gate::action_gate(entry, self.mode, &self.policy, resolved)
    }

    /// The execution fields of the runtime overview; `None` in docs mode.
    pub fn overview(&self) -> Option<ExecutionOverview> {
        let client = self.client.as_ref()?;
        Some(ExecutionOverview {
            request_timeout_ms: client.timeout().as_millis() as u64,
            max_response_bytes: client.max_response(),
            max_calls: self.max_calls,
            streams: self.streams.overview(),
        })
    }

    /// The checks [`Executor::run`] makes before contacting SnowLuma (resolve, gate, params),
    /// for callers that must refuse bad input before committing to work, such as a background
    /// task whose record is written before it runs. `run` repeats them; they are cheap.
    pub fn preflight(&self, entry: Entry, args: &ActionArgs) -> Result<Resolved, ToolReply> {
        let resolved = catalog::lookup(&args.action).map_err(unknown_action)?;
        self.gate(entry, resolved)?;
        if self.client.is_none() {
            return Err(ToolReply::error(
                ErrorKind::Mode,
                "execution is not configured",
                "set SNOWLUMA_MCP_ENDPOINT",
            ));
        }
        check_params(entry, resolved, args)?;
        Ok(resolved)
    }

    /// Runs one action call through the whole pipeline. A stream call answers `busy` at once
    /// when every transfer slot is taken. `caller` names who calls (for the audit log) and
    /// how to ask them for a confirmation.
    pub async fn run(
        &self,
        caller: &Caller<'_>,
        entry: Entry,
        args: ActionArgs,
        trace: &TraceContext,
        cancel: &CancellationToken,
        progress: &mut Progress,
    ) -> ToolReply {
        self.execute(caller, entry, args, trace, cancel, progress, None)
            .await
    }

    /// Runs background work (a task started through invoke_action_background): the same
    /// pipeline as [`Executor::run`], except that a stream call waits for a transfer slot
    /// instead of answering `busy`. `status` hears what the call waits for, and `None` once
    /// it runs. Cancelling while it waits ends it before anything is sent.
    pub async fn run_background(
        &self,
        caller: &Caller<'_>,
        args: ActionArgs,
        trace: &TraceContext,
        cancel: &CancellationToken,
        progress: &mut Progress,
        status: &SlotStatus<'_>,
    ) -> ToolReply {
        self.execute(
            caller,
            Entry::Invoke,
            args,
            trace,
            cancel,
            progress,
            Some(status),
        )
        .await
    }

    /// The one pipeline behind `run` and `run_background`: resolve, gate, check params, the
    /// guards (audit log, confirmation, send limits), the call, and its audit line.
    /// `wait_status` is set for background work, which waits for a stream slot.
    #[allow(clippy::too_many_arguments)]
    async fn execute(
        &self,
        caller: &Caller<'_>,
        entry: Entry,
        args: ActionArgs,
        trace: &TraceContext,
        cancel: &CancellationToken,
        progress: &mut Progress,
        wait_status: Option<&SlotStatus<'_>>,
    ) -> ToolReply {
        let resolved = match catalog::lookup(&args.action) {
            Ok(resolved) => resolved,
            Err(unknown) => return unknown_action(unknown),
        };
        if let Err(refusal) = self.gate(entry, resolved) {
            let params = match &args.params {
                Some(Value::Object(params)) => params.clone(),
                _ => Map::new(),
            };
            return self
                .guard
                .gate_refused(caller, resolved.meta, &params, trace, refusal)
                .await;
        }
        let params = match check_params(entry, resolved, &args) {
            Ok(params) => params,
            Err(refusal) => return refusal,
        };
        let admitted = match self
            .guard
            .admit(caller, resolved.meta, &params, trace)
            .await
        {
            Ok(admitted) => admitted,
            Err(Refusal::Reply(reply)) => return reply,
            Err(Refusal::Deferred) => {
                // The server answers with the confirmer's continuation instead of this.
                return ToolReply::error(
                    ErrorKind::ConfirmationUnavailable,
                    "the confirmation was sent to the client; nothing has run yet",
                    "answer the confirmation",
                );
            }
        };
        let reply = self
            .dispatch(
                &caller.principal,
                resolved,
                args,
                params,
                trace,
                cancel,
                progress,
                wait_status,
            )
            .await;
        self.guard.finish(admitted, reply).await
    }

    /// Limits each principal to its share of the stream slots (see
    /// `Streams::set_principal_share`).
    pub fn set_principal_share(&self, share: crate::config::principals::Share) {
        self.streams.set_principal_share(share);
    }

    /// Sends a checked, admitted call: a stream through its link, an ordinary call through
    /// the client.
    #[allow(clippy::too_many_arguments)]
    async fn dispatch(
        &self,
        principal: &str,
        resolved: Resolved,
        args: ActionArgs,
        params: Map<String, Value>,
        trace: &TraceContext,
        cancel: &CancellationToken,
        progress: &mut Progress,
        wait_status: Option<&SlotStatus<'_>>,
    ) -> ToolReply {
        let Some(client) = &self.client else {
            // The gate refuses every action in docs mode, the only mode without a client.
            return ToolReply::error(
                ErrorKind::Mode,
                "execution is not configured",
                "set SNOWLUMA_MCP_ENDPOINT",
            );
        };
        let input_file = args.execution.and_then(|e| e.input_file);
        let name = args.action.trim();
        if resolved.meta.is_stream() {
            let slot = match wait_status {
                None => None,
                Some(status) => match self
                    .streams
                    .wait_slot(principal, cancel, |m| status(Some(m)))
                    .await
                {
                    Some(slot) => {
                        status(None);
                        Some(slot)
                    }
                    None => {
                        return ToolReply::error(
                            ErrorKind::Cancelled,
                            "the call was cancelled while it waited for a transfer slot; \
                             nothing was sent to SnowLuma",
                            "call again when it should run",
                        );
                    }
                },
            };
            let link = self.streams.link(client, trace, cancel);
            let outcome = self
                .streams
                .run(
                    link,
                    resolved.meta,
                    name,
                    params,
                    input_file.as_deref(),
                    progress,
                    slot,
                    principal,
                )
                .await;
            let mut reply = classify::classify_stream(resolved.meta, outcome);
            classify::explain_1404(&mut reply, client.endpoint_path());
            return reply;
        }
        let Ok(_call_slot) = self.calls.clone().try_acquire_owned() else {
            return ToolReply::error(
                ErrorKind::Busy,
                format!(
                    "{} ordinary calls are already waiting for SnowLuma (SNOWLUMA_MCP_MAX_CALLS)",
                    self.max_calls
                ),
                "wait for a running call to finish, then call again",
            );
        };
        let outcome = client.call(name, &params, trace, cancel).await;
        let mut reply = classify(resolved.meta.read_only, outcome);
        classify::explain_1404(&mut reply, client.endpoint_path());
        reply
    }
}

/// The params as an object, checked against the catalog (and `execution` against the tool
/// and action), or the refusal naming what is wrong.
fn check_params(
    entry: Entry,
    resolved: Resolved,
    args: &ActionArgs,
) -> Result<Map<String, Value>, ToolReply> {
    let name = resolved.meta.name;
    let params = match &args.params {
        None => Map::new(),
        Some(Value::Object(params)) => params.clone(),
        Some(other) => {
            return Err(ToolReply::error(
                ErrorKind::InvalidArguments,
                format!(
                    "params must be an object of OneBot params, not {}",
                    json_kind(other)
                ),
                format!("pass params as an object; get_action {name} lists them"),
            ));
        }
    };
    let input_file = args
        .execution
        .as_ref()
        .and_then(|e| e.input_file.as_deref());
    check_execution(entry, resolved, input_file, &params)?;
    // An automatic upload's stream id is chosen later; the rest is checked as usual.
    let checked = if input_file.is_some() {
        let mut checked = params.clone();
        checked.insert("stream_id".into(), Value::String("automatic".into()));
        resolved.meta.check_params(&checked)
    } else {
        resolved.meta.check_params(&params)
    };
    if let Err(error) = checked {
        return Err(ToolReply::error(
            ErrorKind::InvalidArguments,
            format!("{name}: {error}"),
            format!(
                "nothing was sent; fix the params (get_action {name} shows them) and call again"
            ),
        ));
    }
    Ok(params)
}

/// `execution` belongs to invoke_action, and `input_file` to upload_file_stream, whose
/// stream-managing params the server then sets itself.
fn check_execution(
    entry: Entry,
    resolved: Resolved,
    input_file: Option<&str>,
    params: &Map<String, Value>,
) -> Result<(), ToolReply> {
    let Some(input_file) = input_file else {
        return Ok(());
    };
    let refuse = |message: String, next: &str| {
        Err(ToolReply::error(
            ErrorKind::InvalidArguments,
            message,
            next.to_string(),
        ))
    };
    if entry == Entry::Query || resolved.meta.stream != StreamKind::Upload {
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
    Ok(())
}
