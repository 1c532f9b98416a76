//! Turning a [`ToolReply`] into the MCP result every tool returns: `structuredContent
//! {result, diagnostics}` plus the same JSON as text, and `_meta.traceparent` naming the call.
//! Also the output schemas that describe that shape.

use rmcp::model::{CallToolResult, ContentBlock, MetaObject};
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use schemars::transform::{RestrictFormats, Transform};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::outcome::{Diagnostics, ErrorKind, ToolReply};
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
    let text = structured_text(&reply);
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

/// `{"result":…,"diagnostics":…}` as text: the same bytes as serializing the
/// `structuredContent` object (keys in this order), without building it first.
fn structured_text(reply: &ToolReply) -> String {
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
///
/// Built by moving the parts in: `json!` would copy `result_schema` through `to_value`, and
/// this runs for every tool when the first `tools/list` of a process is answered.
pub fn output_schema(result_schema: Value) -> Value {
    let mut result = Map::with_capacity(1);
    result.insert(
        "anyOf".into(),
        Value::Array(vec![result_schema, json!({ "type": "null" })]),
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

/// `schema` with only the `format` values JSON Schema 2020-12 defines: schemars writes Rust's
/// integer widths as formats (`uint`, `int64` …), which validators do not know and some MCP
/// SDKs warn about once per schema; `minimum: 0` already says what `uint` meant.
pub fn standard_formats(schema: &mut schemars::Schema) {
    RestrictFormats::default().transform(schema);
}

/// The schema of what `T` serializes to, self-contained (no `$ref`s), so it can sit inside
/// the `{result, diagnostics}` wrapper.
pub fn schema_of<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .for_serialize()
        .with(|s| s.inline_subschemas = true)
        .with_transform(RestrictFormats::default())
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
    }
    schema
}
