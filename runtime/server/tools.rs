//! The tool registry: every tool's public definition (name, description, schemas,
//! annotations), which modes offer it, and argument parsing with errors that name the field.
//! Whether a tool may run is decided here, in [`ToolSpec::available_in`], for listing and for
//! every call alike.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::docs;
use super::reply::{Reply, output_schema};
use crate::config::Mode;

pub struct ToolSpec {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    /// The least mode that offers the tool.
    pub min_mode: Mode,
    pub input_schema: fn() -> Arc<JsonObject>,
    pub result_schema: fn() -> Value,
    pub read_only: bool,
    /// Whether the tool can reach SnowLuma in the given mode.
    pub open_world: fn(Mode) -> bool,
}

impl ToolSpec {
    pub fn available_in(&self, mode: Mode) -> bool {
        match self.min_mode {
            Mode::Docs => true,
            Mode::Read => mode.executes(),
            Mode::Write => mode.writes(),
        }
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

fn always(_: Mode) -> bool {
    true
}

fn never(_: Mode) -> bool {
    false
}

fn when_executing(mode: Mode) -> bool {
    mode.executes()
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
        min_mode: Mode::Docs,
        input_schema: rmcp::handler::server::tool::schema_for_type::<docs::ListArgs>,
        result_schema: docs::listing_schema,
        read_only: true,
        open_world: never,
    },
    ToolSpec {
        name: "search_actions",
        title: "Search OneBot actions",
        description: "Search the bundled catalog. By default a case-insensitive substring of the name, an \
            alias or the summary, in catalog order. With match=\"keywords\", space-separated terms are \
            combined with AND, common Chinese/English synonyms match each other (禁言/mute/ban, 撤回/recall, \
            群/group …), filler words are dropped, and exact names or aliases rank first. Accepts the same \
            filters and pagination as list_actions.",
        min_mode: Mode::Docs,
        input_schema: rmcp::handler::server::tool::schema_for_type::<docs::SearchArgs>,
        result_schema: docs::listing_schema,
        read_only: true,
        open_world: never,
    },
    ToolSpec {
        name: "get_action",
        title: "Get one action's contract",
        description: "The full contract of one OneBot action, by name or alias: params with types, bounds \
            and descriptions, invariants, inputSchema, returnsSchema (the successful `data`, not the \
            envelope) and examples with notes on where each identifier comes from.",
        min_mode: Mode::Docs,
        input_schema: rmcp::handler::server::tool::schema_for_type::<docs::GetActionArgs>,
        result_schema: docs::contract_schema,
        read_only: true,
        open_world: never,
    },
    ToolSpec {
        name: "list_categories",
        title: "List action categories",
        description: "The catalog's categories: id, Chinese name, description and action count.",
        min_mode: Mode::Docs,
        input_schema: rmcp::handler::server::tool::schema_for_type::<docs::NoArgs>,
        result_schema: docs::categories_schema,
        read_only: true,
        open_world: never,
    },
    ToolSpec {
        name: "get_runtime_info",
        title: "Runtime overview",
        description: "What this server is configured to do: mode, whether execution and writes are enabled, \
            the bundled catalog version and action count. server_support stays \"unknown\": the catalog is a \
            bundled snapshot, not proof of what the connected SnowLuma supports. Never shows the endpoint or \
            token.",
        min_mode: Mode::Docs,
        input_schema: rmcp::handler::server::tool::schema_for_type::<docs::RuntimeInfoArgs>,
        result_schema: docs::runtime_info_schema,
        read_only: true,
        open_world: when_executing,
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
        min_mode: Mode::Read,
        input_schema: rmcp::handler::server::tool::schema_for_type::<crate::exec::ActionArgs>,
        result_schema: envelope_schema,
        read_only: true,
        open_world: always,
    },
    ToolSpec {
        name: "invoke_action",
        title: "Run any OneBot action",
        description: "Run any catalog action (name or alias) against SnowLuma, including ones that send \
            messages or change the account, groups or files, and return its OneBot envelope unchanged as \
            `result`. Params are checked before anything is sent and forwarded exactly as given. A timeout \
            or cancellation leaves the outcome unknown: SnowLuma may have acted. Nothing is retried. Write \
            mode only.",
        min_mode: Mode::Write,
        input_schema: rmcp::handler::server::tool::schema_for_type::<crate::exec::ActionArgs>,
        result_schema: invoke_result_schema,
        read_only: false,
        open_world: always,
    },
];

/// The schema of `query_action`'s result: SnowLuma's envelope, unchanged.
fn envelope_schema() -> Value {
    serde_json::json!({
        "type": "object",
        "description": "SnowLuma's OneBot envelope exactly as received: status, retcode, data (see the action's returnsSchema), wording on failure",
        "properties": {
            "status": { "type": "string" },
            "retcode": { "type": "integer" },
            "data": {},
            "wording": { "type": "string" }
        }
    })
}

/// `invoke_action` returns the envelope for ordinary actions and a stream summary for stream
/// actions.
fn invoke_result_schema() -> Value {
    serde_json::json!({ "anyOf": [envelope_schema(), crate::streams::result_schema()] })
}

pub fn find(name: &str) -> Option<&'static ToolSpec> {
    TOOLS.iter().find(|t| t.name == name)
}

/// Parses tool arguments into `T`, naming the offending field on failure.
pub fn parse_args<T: DeserializeOwned>(tool: &str, args: Option<JsonObject>) -> Result<T, Reply> {
    let value = Value::Object(args.unwrap_or_default());
    serde_path_to_error::deserialize::<_, T>(value).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner().to_string();
        let message = if path == "." {
            format!("invalid arguments: {inner}")
        } else {
            format!("invalid argument `{path}`: {inner}")
        };
        Reply::error(
            "invalid_arguments",
            message,
            format!(
                "fix the arguments to match {tool}'s inputSchema (see tools/list) and call again"
            ),
        )
    })
}

/// The JSON Schema of a tool's arguments, for tests and docs.
pub fn schema_of<T: JsonSchema + std::any::Any>() -> Arc<JsonObject> {
    rmcp::handler::server::tool::schema_for_type::<T>()
}
