//! Turning a [`ToolReply`] into the MCP result every tool returns: `structuredContent
//! {result, diagnostics}` plus the same JSON as text, and `_meta.traceparent` naming the call.
//! Also the output schemas that describe that shape.

use rmcp::model::{CallToolResult, ContentBlock, MetaObject};
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use crate::outcome::{ErrorKind, ToolReply, reply_text};
use crate::trace::TraceContext;

/// How `structuredContent` reaches the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StructuredCopy {
    /// The stdio transport writes it from the text block (`super::encode`): the result holds
    /// an empty object as a placeholder ([`placeholder`]) and no value tree is built.
    FromText,
    /// Whoever sends or stores the result serializes it generically (rmcp's HTTP transport,
    /// task records), so it holds the value.
    Value,
}

/// What a result rendered with [`StructuredCopy::FromText`] holds as `structuredContent`: an
/// empty object (no allocation), which no rendered result has (they all have `result` and
/// `diagnostics`). An object, because rmcp moves any other value into a text block for legacy
/// clients before the transport sees the result.
pub fn placeholder() -> Value {
    Value::Object(Map::new())
}

/// Whether `structured` is the [`placeholder`].
pub fn is_placeholder(structured: &Value) -> bool {
    structured.as_object().is_some_and(Map::is_empty)
}

/// The final result; `meta` carries anything else the result's `_meta` needs (server info
/// for modern clients).
///
/// The text is written straight from the reply (a result serialized ahead of time is copied
/// in). With [`StructuredCopy::FromText`] that text is the only serialization of the reply;
/// otherwise the value tree is built (or moved in) as well.
pub fn into_result(
    mut reply: ToolReply,
    trace: &TraceContext,
    mut meta: MetaObject,
    copy: StructuredCopy,
) -> CallToolResult {
    if let Some(warning) = trace.warning {
        reply
            .diagnostics
            .extra
            .insert("trace".into(), json!(warning));
    }
    let text = reply_text(&reply);
    let summary = reply.diagnostics.summary.take();
    // The stdio encoder writes structuredContent from a lone text block; a page has two.
    let copy = if summary.is_some() {
        StructuredCopy::Value
    } else {
        copy
    };
    let structured = match copy {
        StructuredCopy::FromText => placeholder(),
        StructuredCopy::Value => {
            // Moved in, not `json!`: the macro would copy the whole result through `to_value`.
            let mut structured = Map::with_capacity(2);
            structured.insert("result".into(), reply.take_result());
            structured.insert(
                "diagnostics".into(),
                serde_json::to_value(&reply.diagnostics).unwrap_or(Value::Null),
            );
            Value::Object(structured)
        }
    };
    // A page's summary line is a block of its own, so the JSON block stays parsable.
    let content = match summary {
        Some(line) => vec![ContentBlock::text(line), ContentBlock::text(text)],
        None => vec![ContentBlock::text(text)],
    };
    let mut result = if reply.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
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
            "next_step": { "type": "string", "description": "what to do about the failure" },
            "page": super::read_more::page_schema()
        },
        "required": ["outcome"],
        "additionalProperties": true
    })
}

/// `{result, diagnostics}` where result follows `result_schema`, or is null for a tool error.
///
/// Built by moving the parts in: `json!` would copy `result_schema` through `to_value`, and
/// this runs for every tool when the first `tools/list` of a process is answered.
pub fn output_schema(result_schema: Value) -> Value {
    let mut result = Map::with_capacity(1);
    // A page keeps the result's shape, except that an element alone larger than the budget
    // is cut short (`truncated: true`), which the tool's own schema may not allow.
    let page = json!({
        "type": ["object", "array"],
        "description": "one page of a larger result (diagnostics.page says which elements); an element cut short carries truncated: true"
    });
    result.insert(
        "anyOf".into(),
        Value::Array(vec![result_schema, page, json!({ "type": "null" })]),
    );
    let mut properties = Map::with_capacity(2);
    properties.insert("result".into(), Value::Object(result));
    properties.insert("diagnostics".into(), diagnostics_schema());
    let mut schema = Map::with_capacity(3);
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), Value::Object(properties));
    schema.insert("required".into(), json!(["result", "diagnostics"]));
    Value::Object(schema)
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
