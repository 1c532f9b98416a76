//! The tool registry: every tool's public definition (name, description, schemas,
//! annotations), what it needs to be offered (asked of `exec::gate`), and its handler. A
//! call finds its entry here and runs the entry's handler; nothing dispatches on tool names.

use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::docs;
use super::render::{output_schema, schema_of};
use super::session::Shared;
use super::task_tools;
use crate::catalog::Listing;
use crate::config::Mode;
use crate::exec::{self, Access, ActionArgs, ClientCapabilities, Entry, Requirement};
use crate::outcome::{ToolReply, parse_args};
use crate::streams::Progress;
use crate::trace::TraceContext;

/// Everything a handler gets for one call.
pub struct Call<'a> {
    /// An `Arc` so work that outlives the call (a background task) can keep it.
    pub shared: &'a Arc<Shared>,
    pub args: Option<Map<String, Value>>,
    pub trace: &'a TraceContext,
    pub cancel: &'a CancellationToken,
    pub progress: Progress,
}

/// What a handler answers: a completed result, or a protocol continuation the server passes on
/// as it is (`input_required`, a task handle).
pub enum Answer {
    Reply(ToolReply),
    Continuation(rmcp::model::CallToolResponse),
}

pub type Handler = for<'a> fn(Call<'a>) -> BoxFuture<'a, Answer>;

pub struct ToolSpec {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    /// What the tool needs to be listed and called.
    pub requirement: Requirement,
    /// The executing tools are gated per action (`exec::gate::action_gate`), which names the
    /// right tool or mode for that action; the others are gated as a whole.
    pub gated_per_action: bool,
    pub input_schema: fn() -> Arc<JsonObject>,
    pub result_schema: fn() -> Value,
    pub read_only: bool,
    /// Whether the tool can reach SnowLuma in the given mode.
    pub open_world: fn(Mode) -> bool,
    pub handler: Handler,
}

impl ToolSpec {
    pub fn available(&self, mode: Mode, caps: &ClientCapabilities) -> bool {
        exec::gate::tool_available(self.requirement, mode, caps)
    }

    pub fn definition(&self, mode: Mode) -> Tool {
        let output = match output_schema((self.result_schema)()) {
            Value::Object(object) => object,
            _ => JsonObject::new(),
        };
        let mut tool = Tool::new(self.name, self.description, (self.input_schema)());
        tool.title = Some(self.title.to_string());
        tool.output_schema = Some(Arc::new(output));
        let mut annotations = ToolAnnotations::new();
        annotations.title = Some(self.title.to_string());
        annotations.read_only_hint = Some(self.read_only);
        annotations.destructive_hint = Some(!self.read_only);
        annotations.idempotent_hint = Some(self.read_only);
        annotations.open_world_hint = Some((self.open_world)(mode));
        tool.annotations = Some(annotations);
        tool
    }
}

pub fn find(name: &str) -> Option<&'static ToolSpec> {
    TOOLS.iter().find(|t| t.name == name)
}

fn always(_: Mode) -> bool {
    true
}

fn never(_: Mode) -> bool {
    false
}

fn when_executing(mode: Mode) -> bool {
    mode.executes()
}

const DOCS: Requirement = Requirement {
    access: Access::Always,
    capability: None,
};

fn input_of<T: schemars::JsonSchema + std::any::Any>() -> Arc<JsonObject> {
    rmcp::handler::server::tool::schema_for_type::<T>()
}

pub static TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "list_actions",
        title: "List OneBot actions",
        description: "List the bundled SnowLuma OneBot action catalog (compact entries: name, aliases, \
            category, summary, read_only, stream). Optional filters: category (id such as `group_admin` \
            or Chinese name such as `群管理`), read_only, stream. Optional pagination: limit (1-200) and \
            offset; without them the whole matching list is returned as {count, actions}, with them \
            {count, total, next_offset, actions}. Use get_action for one action's full contract.",
        requirement: DOCS,
        gated_per_action: false,
        input_schema: input_of::<docs::ListArgs>,
        result_schema: schema_of::<Listing>,
        read_only: true,
        open_world: never,
        handler: |call| Box::pin(async move { Answer::Reply(docs::list_actions(call.args)) }),
    },
    ToolSpec {
        name: "search_actions",
        title: "Search OneBot actions",
        description: "Search the bundled catalog. By default a case-insensitive substring of the name, an \
            alias or the summary, in catalog order. With match=\"keywords\", space-separated terms are \
            combined with AND, common Chinese/English synonyms match each other (禁言/mute/ban, 撤回/recall, \
            群/group …), filler words are dropped, and exact names or aliases rank first. Accepts the same \
            filters and pagination as list_actions.",
        requirement: DOCS,
        gated_per_action: false,
        input_schema: input_of::<docs::SearchArgs>,
        result_schema: schema_of::<Listing>,
        read_only: true,
        open_world: never,
        handler: |call| Box::pin(async move { Answer::Reply(docs::search_actions(call.args)) }),
    },
    ToolSpec {
        name: "get_action",
        title: "Get one action's contract",
        description: "The full contract of one OneBot action, by name or alias: params with types, bounds \
            and descriptions, invariants, inputSchema, returnsSchema (the successful `data`, not the \
            envelope) and examples with notes on where each identifier comes from.",
        requirement: DOCS,
        gated_per_action: false,
        input_schema: input_of::<docs::GetActionArgs>,
        result_schema: schema_of::<docs::ActionContract>,
        read_only: true,
        open_world: never,
        handler: |call| Box::pin(async move { Answer::Reply(docs::get_action(call.args)) }),
    },
    ToolSpec {
        name: "list_categories",
        title: "List action categories",
        description: "The catalog's categories: id, Chinese name, description and action count.",
        requirement: DOCS,
        gated_per_action: false,
        input_schema: input_of::<docs::NoArgs>,
        result_schema: schema_of::<Vec<docs::CategoryEntry>>,
        read_only: true,
        open_world: never,
        handler: |call| Box::pin(async move { Answer::Reply(docs::list_categories(call.args)) }),
    },
    ToolSpec {
        name: "get_runtime_info",
        title: "Runtime overview",
        description: "What this server is configured to do: mode, whether execution and writes are enabled, \
            the bundled catalog version and action count. server_support stays \"unknown\": the catalog is a \
            bundled snapshot, not proof of what the connected SnowLuma supports. Never shows the endpoint or \
            token.",
        requirement: DOCS,
        gated_per_action: false,
        input_schema: input_of::<docs::RuntimeInfoArgs>,
        result_schema: schema_of::<docs::RuntimeInfo>,
        read_only: true,
        open_world: when_executing,
        handler: |call| Box::pin(async move { Answer::Reply(runtime_info(call).await) }),
    },
    ToolSpec {
        name: "query_action",
        title: "Run a read-only OneBot action",
        description: "Run one read-only catalog action (name or alias) against SnowLuma and return its OneBot \
            envelope unchanged as `result`. Params are checked against the catalog before anything is sent \
            and then forwarded exactly as given (negative message ids and numeric strings included). A \
            business failure (retcode != 0) is returned as data with diagnostics.outcome \"failed\"; \
            transport problems are tool errors with a kind and a next step. Actions that change state need \
            invoke_action in write mode.",
        requirement: Requirement {
            access: Access::Execution,
            capability: None,
        },
        gated_per_action: true,
        input_schema: input_of::<ActionArgs>,
        result_schema: envelope_schema,
        read_only: true,
        open_world: always,
        handler: |call| Box::pin(async move { Answer::Reply(execute(Entry::Query, call).await) }),
    },
    ToolSpec {
        name: "invoke_action",
        title: "Run any OneBot action",
        description: "Run any catalog action (name or alias) against SnowLuma, including ones that send \
            messages or change the account, groups or files, and return its OneBot envelope unchanged as \
            `result`. Params are checked before anything is sent and forwarded exactly as given. A timeout \
            or cancellation leaves the outcome unknown: SnowLuma may have acted. Nothing is retried. Write \
            mode only.",
        requirement: Requirement {
            access: Access::Writes,
            capability: None,
        },
        gated_per_action: true,
        input_schema: input_of::<ActionArgs>,
        result_schema: invoke_result_schema,
        read_only: false,
        open_world: always,
        handler: |call| Box::pin(async move { Answer::Reply(execute(Entry::Invoke, call).await) }),
    },
    ToolSpec {
        name: "invoke_action_background",
        title: "Run a stream action as a background task",
        description: "Start a stream action (download_file_stream and its variants, upload_file_stream with \
            execution.input_file, other frame streams) as a durable background task and return at once \
            with a task handle (resultType \"task\"). Takes invoke_action's arguments. Poll tasks/get for \
            the state and, when completed, the same result invoke_action would have returned (a OneBot \
            failure included); tasks/cancel asks it to stop. Tasks survive a server restart; one that was \
            running when the server stopped is reported failed with the remote outcome unknown and is \
            never replayed. At most four run at once. Write mode, 2026-07-28 clients that declare the \
            io.modelcontextprotocol/tasks extension only.",
        requirement: task_tools::REQUIREMENT,
        gated_per_action: false,
        input_schema: input_of::<ActionArgs>,
        result_schema: invoke_result_schema,
        read_only: false,
        open_world: always,
        handler: |call| Box::pin(task_tools::invoke_background(call)),
    },
    ToolSpec {
        name: "list_tasks",
        title: "List background tasks",
        description: "The background tasks in this server's task directory, newest first, without their \
            result bodies: taskId, action, status, statusMessage, timestamps and the last progress. \
            Optional cursor (from nextCursor) and limit (1-100, default 50). Read one task's result with \
            tasks/get.",
        requirement: task_tools::REQUIREMENT,
        gated_per_action: false,
        input_schema: input_of::<task_tools::ListTasksArgs>,
        result_schema: schema_of::<task_tools::TaskList>,
        read_only: true,
        open_world: never,
        handler: |call| Box::pin(async move { Answer::Reply(task_tools::list_tasks(call)) }),
    },
];

/// `query_action` and `invoke_action`: parse, then the one execution pipeline.
async fn execute(entry: Entry, mut call: Call<'_>) -> ToolReply {
    let args: ActionArgs = match parse_args(entry.tool(), call.args.take()) {
        Ok(args) => args,
        Err(reply) => return reply,
    };
    call.shared
        .executor
        .run(entry, args, call.trace, call.cancel, &mut call.progress)
        .await
}

/// `get_runtime_info`: the local overview, and with `check_connection` three read-only calls
/// through the ordinary gate.
async fn runtime_info(call: Call<'_>) -> ToolReply {
    let args: docs::RuntimeInfoArgs = match parse_args("get_runtime_info", call.args) {
        Ok(args) => args,
        Err(reply) => return reply,
    };
    let executor = &call.shared.executor;
    let info = docs::runtime_info(executor.mode(), executor.overview());
    if !args.check_connection {
        return docs::runtime_info_reply(&info);
    }
    if !executor.mode().executes() {
        return docs::check_connection_refused();
    }
    let check = executor.check_connection(call.trace, call.cancel).await;
    docs::with_connection_check(info, check)
}

/// SnowLuma's envelope, unchanged: every OneBot answer carries `status` and `retcode`.
fn envelope_branch() -> Value {
    serde_json::json!({
        "title": "OneBot envelope",
        "type": "object",
        "description": "SnowLuma's OneBot envelope exactly as received: status, retcode, data (see the action's returnsSchema), wording on failure",
        "properties": {
            "status": { "type": "string", "description": "ok, failed or async" },
            "retcode": { "type": "integer", "description": "0 on success" },
            "data": {},
            "message": { "type": "string" },
            "wording": { "type": "string" }
        },
        "required": ["status", "retcode"]
    })
}

/// A JSON object that is not a OneBot envelope (no `status` or no `retcode`) and none of
/// `others`: returned as received with `diagnostics.kind: "unconfirmed"`.
fn unconfirmed_branch(others: &[Value]) -> Value {
    let mut excluded = vec![serde_json::json!({ "required": ["status", "retcode"] })];
    excluded.extend(
        others
            .iter()
            .map(|branch| serde_json::json!({ "required": branch["required"].clone() })),
    );
    serde_json::json!({
        "title": "unconfirmed answer",
        "type": "object",
        "description": "an answer without status or retcode, returned as received; success is not confirmed (diagnostics.kind unconfirmed)",
        "not": { "anyOf": excluded }
    })
}

/// `query_action`'s result: the envelope, or an answer that is not one.
fn envelope_schema() -> Value {
    serde_json::json!({ "oneOf": [envelope_branch(), unconfirmed_branch(&[])] })
}

/// `invoke_action` returns the envelope for ordinary actions (and for a stream SnowLuma ended
/// with its error frame, which is an envelope), and a stream summary for completed streams.
/// Exactly one branch matches any real result.
fn invoke_result_schema() -> Value {
    let streams = crate::streams::completed_schemas();
    let mut branches = vec![envelope_branch(), unconfirmed_branch(&streams)];
    branches.extend(streams);
    serde_json::json!({ "oneOf": branches })
}
