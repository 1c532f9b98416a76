//! Typed per-action tools (`SNOWLUMA_MCP_TOOLSETS`): one tool per action of the chosen
//! categories, named after the action. Their definitions come from generated/tools.rs; this
//! module only wraps them the way every tool is wrapped (`{result, diagnostics}`) and runs a
//! call through the same pipeline and gate as query_action / invoke_action.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::call::{Answer, Call};
use super::definition::{Definition, Schemas};
use super::schemas::{output_schema, unconfirmed_branch};
use super::services::Services;
use crate::catalog::{ACTION_TOOLS, ACTIONS, Resolved, resolve};
use crate::exec::{ActionArgs, gate};

/// The typed action tool called `name`, when the toolsets include it. Tool names are the
/// generated ones (an action's name, or its safe spelling), never aliases.
pub fn find(shared: &Services, name: &str) -> Option<Resolved> {
    let tool = ACTION_TOOLS.iter().find(|tool| tool.name == name)?;
    let resolved = resolve(tool.action).filter(|r| r.alias.is_none())?;
    shared
        .executor
        .policy()
        .typed_tool(resolved.index)
        .then_some(resolved)
}

/// The typed tools this server lists: those in the toolsets that the gate would let run
/// (mode, allow and deny lists), in catalog order. Empty without `SNOWLUMA_MCP_TOOLSETS`.
pub fn definitions(shared: &Services) -> Vec<Definition> {
    let executor = &shared.executor;
    executor
        .policy()
        .typed_tools()
        .filter_map(|index| {
            let resolved = resolve(ACTIONS[index].name)?;
            let entry = gate::action_tool_entry(resolved.meta);
            executor
                .gate(entry, resolved)
                .is_ok()
                .then(|| definition(index))
        })
        .collect()
}

fn definition(index: usize) -> Definition {
    let meta = &ACTIONS[index];
    let generated = &ACTION_TOOLS[index];
    let input = match serde_json::from_str(generated.input_schema) {
        Ok(Value::Object(object)) => object,
        _ => Map::new(),
    };
    let output = match output_schema(result_schema(index)) {
        Value::Object(object) => object,
        _ => Map::new(),
    };
    Definition {
        name: generated.name,
        title: meta.summary,
        description: generated.description,
        schemas: Schemas {
            input: super::read_more::with_budget(Arc::new(input)),
            output,
        },
        read_only: meta.read_only,
        open_world: true,
        // The action's real name, for clients that show or log it (the tool name may be a
        // safe spelling of it).
        meta: Some(Map::from_iter([(
            ACTION_META_KEY.to_string(),
            Value::from(generated.action),
        )])),
    }
}

/// The typed tool's `_meta` key naming the OneBot action it runs.
pub const ACTION_META_KEY: &str = "snowluma/action";

/// The action's typed envelope or an answer that is not an envelope, like query_action's
/// result; stream actions add the stream summaries, like invoke_action's.
fn result_schema(index: usize) -> Value {
    let typed = serde_json::from_str(ACTION_TOOLS[index].envelope_schema).unwrap_or(Value::Null);
    if ACTIONS[index].is_stream() {
        let streams = crate::streams::completed_schemas();
        let mut branches = vec![typed, unconfirmed_branch(&streams)];
        branches.extend(streams);
        return serde_json::json!({ "oneOf": branches });
    }
    serde_json::json!({ "oneOf": [typed, unconfirmed_branch(&[])] })
}

/// A call of a typed tool: its arguments are the action's params; the rest is the ordinary
/// pipeline with the entry query_action or invoke_action would use for the action.
pub async fn call(resolved: Resolved, mut call: Call<'_>) -> Answer {
    let params = call.args.take().unwrap_or_default();
    let args = ActionArgs {
        action: resolved.meta.name.to_string(),
        params: Some(Value::Object(params.clone())),
        execution: None,
    };
    let entry = gate::action_tool_entry(resolved.meta);
    super::confirm::run(call, resolved.meta.name, params, entry, args, true).await
}
