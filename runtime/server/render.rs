//! Turning a [`ToolReply`] into the MCP result every tool returns: `structuredContent
//! {result, diagnostics}` plus the same JSON as text, and `_meta.traceparent` naming the call.
//! Also the output schemas that describe that shape.

use rmcp::model::{CallToolResult, ContentBlock, MetaObject};
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Value, json};

use crate::outcome::{ErrorKind, ToolReply};
use crate::trace::TraceContext;

/// The final result; `meta` carries anything else the result's `_meta` needs (server info
/// for modern clients).
pub fn into_result(
    mut reply: ToolReply,
    trace: &TraceContext,
    mut meta: MetaObject,
) -> CallToolResult {
    if let Some(warning) = trace.warning {
        reply
            .diagnostics
            .extra
            .insert("trace".into(), json!(warning));
    }
    let structured = json!({ "result": reply.result, "diagnostics": reply.diagnostics });
    let text = structured.to_string();
    let mut result = if reply.is_error {
        CallToolResult::error(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::success(vec![ContentBlock::text(text)])
    };
    result.structured_content = Some(structured);
    meta.set_traceparent(trace.traceparent.clone());
    if let Some(state) = &trace.tracestate {
        meta.set_tracestate(state.clone());
    }
    result.with_meta(Some(meta))
}

/// The JSON Schema of diagnostics, shared by every tool's outputSchema: `kind` is one of
/// [`ErrorKind`]'s names.
pub fn diagnostics_schema() -> Value {
    let kinds: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.as_str()).collect();
    json!({
        "type": "object",
        "properties": {
            "outcome": { "enum": ["success", "failed", "unknown"] },
            "kind": { "enum": kinds, "description": "known failure category (README lists each with its meaning)" },
            "message": { "type": "string" },
            "next_step": { "type": "string", "description": "what to do about the failure" }
        },
        "required": ["outcome"],
        "additionalProperties": true
    })
}

/// `{result, diagnostics}` where result follows `result_schema`, or is null for a tool error.
pub fn output_schema(result_schema: Value) -> Value {
    json!({
        "type": "object",
        "properties": {
            "result": { "anyOf": [result_schema, { "type": "null" }] },
            "diagnostics": diagnostics_schema()
        },
        "required": ["result", "diagnostics"]
    })
}

/// The schema of what `T` serializes to, self-contained (no `$ref`s), so it can sit inside
/// the `{result, diagnostics}` wrapper.
pub fn schema_of<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .for_serialize()
        .with(|s| s.inline_subschemas = true)
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
    }
    schema
}
