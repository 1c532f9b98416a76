//! The tool registry: every tool's public definition (name, description, schemas,
//! annotations), what it needs to be offered (asked of `exec::gate`), and its handler. A
//! call finds its entry here and runs the entry's handler; nothing dispatches on tool names.

use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::model::{InputResponses, JsonObject, MetaObject, Tool, ToolAnnotations};
use rmcp::{Peer, RoleServer};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::docs;
use super::event_tools;
use super::input_tools;
use super::message_preview;
use super::render::{output_schema, schema_of};
use super::session::{Session, Shared};
use super::task_tools;
use super::tool_list::SchemaCopy;
use super::tool_schemas::{self, Schemas};
use crate::catalog::Listing;
use crate::config::Mode;
use crate::events::SubscribeRequest;
use crate::exec::{self, Access, ActionArgs, ClientCapabilities, Entry, Requirement, Setup};
use crate::outcome::{ToolReply, parse_args};
use crate::streams::Progress;
use crate::trace::TraceContext;

/// Everything a handler gets for one call.
pub struct Call<'a> {
    /// An `Arc` so work that outlives the call (a background task) can keep it.
    pub shared: &'a Arc<Shared>,
    /// This connection's state (its event resources).
    pub session: &'a Session,
    pub args: Option<Map<String, Value>>,
    pub trace: &'a TraceContext,
    pub cancel: &'a CancellationToken,
    pub progress: Progress,
    /// The protocol side of the request, for tools that ask the user for input.
    pub input: InputRound<'a>,
}

/// What the input completion tools need from the request beyond its arguments.
pub struct InputRound<'a> {
    /// The capabilities declared for this request (per request or at initialize).
    pub caps: ClientCapabilities,
    /// Whether this request speaks 2026-07-28 (MRTR) rather than a legacy session.
    pub modern: bool,
    /// A modern retry's echoed `requestState` and its `inputResponses`.
    pub request_state: Option<String>,
    pub input_responses: Option<InputResponses>,
    /// The client, for legacy `elicitation/create`.
    pub peer: &'a Peer<RoleServer>,
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
    /// How the input schema and the result schema are derived from the tool's types. Listing
    /// reads the derived schemas from the committed tool schemas (`tool_schemas`) instead (see `tool_schemas`).
    pub input_schema: fn() -> Arc<JsonObject>,
    pub result_schema: fn() -> Value,
    pub read_only: bool,
    /// Whether the tool can reach SnowLuma in the given mode.
    pub open_world: fn(Mode) -> bool,
    /// The tool `_meta` that points MCP Apps hosts at a bundled panel; sent only to clients
    /// that declared they render `text/html;profile=mcp-app`, since others cannot read the
    /// `ui://` resource it names.
    pub apps_meta: Option<fn() -> Value>,
    pub handler: Handler,
}

impl ToolSpec {
    pub fn available(&self, setup: Setup, caps: &ClientCapabilities) -> bool {
        exec::gate::tool_available(self.requirement, setup, caps)
    }

    /// The definition this client sees: it depends on the mode (annotations) and on the
    /// capabilities the client declared for the request (the Apps panel pointer).
    pub fn definition(&self, mode: Mode, caps: &ClientCapabilities, copy: SchemaCopy) -> Tool {
        let Schemas { input, output } = match copy {
            SchemaCopy::Committed if tool_schemas::committed_text(self.name).is_some() => {
                Schemas::placeholder()
            }
            _ => tool_schemas::committed(self.name).unwrap_or_else(|| self.derived_schemas()),
        };
        let mut tool = Tool::new(self.name, self.description, input);
        tool.title = Some(self.title.to_string());
        tool.output_schema = Some(Arc::new(output));
        let mut annotations = ToolAnnotations::new();
        annotations.title = Some(self.title.to_string());
        annotations.read_only_hint = Some(self.read_only);
        annotations.destructive_hint = Some(!self.read_only);
        annotations.idempotent_hint = Some(self.read_only);
        annotations.open_world_hint = Some((self.open_world)(mode));
        tool.annotations = Some(annotations);
        if let Some(Value::Object(meta)) = self.apps_meta.filter(|_| caps.apps_ui).map(|f| f()) {
            tool.meta = Some(MetaObject(meta));
        }
        tool
    }

    /// The schemas derived from the tool's types: what the committed tool schemas (`tool_schemas`) holds for it (a
    /// test keeps the two equal), and what a definition falls back to without an entry.
    pub fn derived_schemas(&self) -> Schemas {
        let output = match output_schema((self.result_schema)()) {
            Value::Object(object) => object,
            _ => JsonObject::new(),
        };
        Schemas {
            input: (self.input_schema)(),
            output,
        }
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

/// Read or write mode with `SNOWLUMA_MCP_EVENTS_URL` set.
const EVENTS: Requirement = Requirement {
    access: Access::Events,
    capability: None,
};

fn input_of<T: schemars::JsonSchema + std::any::Any>() -> Arc<JsonObject> {
    let object = rmcp::handler::server::tool::schema_for_type::<T>();
    let mut schema = schemars::Schema::from(object.as_ref().clone());
    super::render::standard_formats(&mut schema);
    match schema.to_value() {
        serde_json::Value::Object(object) => Arc::new(object),
        _ => object,
    }
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
        apps_meta: None,
        handler: |call| {
            Box::pin(async move {
                let policy = call.shared.executor.policy();
                Answer::Reply(docs::mark_denied(docs::list_actions(call.args), policy))
            })
        },
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
        apps_meta: None,
        handler: |call| {
            Box::pin(async move {
                let policy = call.shared.executor.policy();
                Answer::Reply(docs::mark_denied(docs::search_actions(call.args), policy))
            })
        },
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
        apps_meta: None,
        handler: |call| {
            Box::pin(async move {
                Answer::Reply(docs::get_action(call.args, call.shared.executor.policy()))
            })
        },
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
        apps_meta: None,
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
        apps_meta: None,
        handler: |call| Box::pin(async move { Answer::Reply(runtime_info(call).await) }),
    },
    ToolSpec {
        name: "preview_message",
        title: "Preview a text message",
        description: "Build a draft of a text message without sending it: message_type (`group` or \
            `private`), target_id (group or QQ number, 1..=9007199254740991), text (sent literally: \
            CQ-code-like text stays plain text) and optional reply_to (a non-zero signed 32-bit message \
            id to quote). Returns the readable draft, can_send (true only in write mode with a SnowLuma \
            endpoint) and the exact invoke_action arguments (a segment array) that would send it. \
            Available in every mode; nothing is sent until invoke_action is called.",
        requirement: DOCS,
        gated_per_action: false,
        input_schema: input_of::<crate::preview::PreviewArgs>,
        result_schema: schema_of::<crate::preview::MessagePreview>,
        read_only: true,
        open_world: never,
        apps_meta: Some(crate::preview::panel::preview_tool_meta),
        handler: |call| {
            Box::pin(async move { Answer::Reply(message_preview::preview_message(call)) })
        },
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
        apps_meta: None,
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
        apps_meta: None,
        handler: |call| Box::pin(async move { Answer::Reply(execute(Entry::Invoke, call).await) }),
    },
    ToolSpec {
        name: input_tools::QUERY_WITH_INPUT,
        title: "Run a read-only OneBot action, asking for missing params",
        description: "Same arguments, gates and result as query_action. When a param from the action's \
            required list is missing, the server asks the user for it through a form (one field, \
            params_json: a JSON object with exactly the missing fields) and runs the action with the \
            answer; complete arguments run at once. Needs a client with form elicitation; otherwise call \
            query_action with complete params.",
        requirement: Requirement {
            access: Access::Execution,
            capability: None,
        },
        gated_per_action: true,
        input_schema: input_of::<ActionArgs>,
        result_schema: envelope_schema,
        read_only: true,
        open_world: always,
        apps_meta: None,
        handler: |call| Box::pin(input_tools::execute_with_input(Entry::Query, call)),
    },
    ToolSpec {
        name: input_tools::INVOKE_WITH_INPUT,
        title: "Run any OneBot action, asking for missing params",
        description: "Same arguments, gates and result as invoke_action. When a param from the action's \
            required list is missing, the server asks the user for it through a form (one field, \
            params_json: a JSON object with exactly the missing fields) and runs the action with the \
            answer; complete arguments run at once. Needs a client with form elicitation; otherwise call \
            invoke_action with complete params. Write mode only.",
        requirement: Requirement {
            access: Access::Writes,
            capability: None,
        },
        gated_per_action: true,
        input_schema: input_of::<ActionArgs>,
        result_schema: invoke_result_schema,
        read_only: false,
        open_world: always,
        apps_meta: None,
        handler: |call| Box::pin(input_tools::execute_with_input(Entry::Invoke, call)),
    },
    ToolSpec {
        name: "subscribe_events",
        title: "Subscribe to live OneBot events",
        description: "Start buffering live OneBot events for one account and get a resource URI             (snowluma://onebot/events/<id>). self_id is the logged-in QQ account (get_login_info);             optional types (message, notice, request; default all), group_ids and user_ids (at most             100 each, combined with AND). Only events after this call are kept: at most 256 events             and 1 MiB per resource, 16 resources per server. Read with read_events or resources/read             (`?after=<next_cursor>` for newer ones); watch with resources/subscribe (legacy) or             subscriptions/listen. Never sends a QQ message.",
        requirement: EVENTS,
        gated_per_action: false,
        input_schema: input_of::<SubscribeRequest>,
        result_schema: schema_of::<event_tools::Subscribed>,
        read_only: true,
        open_world: always,
        apps_meta: None,
        handler: |call| {
            Box::pin(
                async move { Answer::Reply(event_tools::subscribe(call.session, call.args).await) },
            )
        },
    },
    ToolSpec {
        name: "read_events",
        title: "Read or wait for live events",
        description: "Read an event resource: the buffered events after `after` (a next_cursor; omit for             everything kept) with status, next_cursor, oldest_cursor, dropped_events, gap and             notification_failed. If none are buffered yet, waits up to wait_ms (0-30000, default             10000) for the first one; limit (1-256) bounds the entries. One waiting call per             resource; cancelling the call ends the wait. Reads do not consume events.",
        requirement: EVENTS,
        gated_per_action: false,
        input_schema: input_of::<event_tools::ReadEventsArgs>,
        result_schema: event_tools::page_schema,
        read_only: true,
        open_world: always,
        apps_meta: None,
        handler: |call| {
            Box::pin(async move {
                Answer::Reply(event_tools::read(call.session, call.args, call.cancel).await)
            })
        },
    },
    ToolSpec {
        name: "unsubscribe_events",
        title: "Release an event resource",
        description: "Release an event resource from subscribe_events: its buffer is dropped, listeners             hear nothing more, and releasing the last resource closes the event connection. Closing             the MCP connection releases its resources too.",
        requirement: EVENTS,
        gated_per_action: false,
        input_schema: input_of::<event_tools::UnsubscribeArgs>,
        result_schema: schema_of::<event_tools::Released>,
        read_only: false,
        open_world: never,
        apps_meta: None,
        handler: |call| {
            Box::pin(
                async move { Answer::Reply(event_tools::unsubscribe(call.session, call.args)) },
            )
        },
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
        apps_meta: None,
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
        apps_meta: None,
        handler: |call| Box::pin(async move { Answer::Reply(task_tools::list_tasks(call)) }),
    },
];

/// `query_action` and `invoke_action`: parse, then the one execution pipeline.
pub(super) async fn execute(entry: Entry, mut call: Call<'_>) -> ToolReply {
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
    if !args.check_connection {
        return call
            .shared
            .runtime_info
            .get_or_init(|| docs::overview_answer(executor.mode(), executor.overview()))
            .reply();
    }
    if !executor.mode().executes() {
        return docs::check_connection_refused();
    }
    let info = docs::runtime_info(executor.mode(), executor.overview());
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
pub(super) fn unconfirmed_branch(others: &[Value]) -> Value {
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

/// `{"oneOf": branches}`, the branches moved in (`json!` would copy them).
fn one_of(branches: Vec<Value>) -> Value {
    let mut schema = Map::with_capacity(1);
    schema.insert("oneOf".into(), Value::Array(branches));
    Value::Object(schema)
}

/// `query_action`'s result: the envelope, or an answer that is not one.
fn envelope_schema() -> Value {
    one_of(vec![envelope_branch(), unconfirmed_branch(&[])])
}

/// `invoke_action` returns the envelope for ordinary actions (and for a stream SnowLuma ended
/// with its error frame, which is an envelope), and a stream summary for completed streams.
/// Exactly one branch matches any real result.
fn invoke_result_schema() -> Value {
    let streams = crate::streams::completed_schemas();
    let mut branches = vec![envelope_branch(), unconfirmed_branch(&streams)];
    branches.extend(streams);
    one_of(branches)
}
