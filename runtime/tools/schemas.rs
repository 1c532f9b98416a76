//! The JSON Schemas tools are described with: input schemas derived from argument types,
//! result schemas wrapped in the `{result, diagnostics}` shape every tool returns, and the
//! result schemas shared by the action-running tools.

use std::sync::Arc;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use schemars::transform::RestrictFormats;
use serde_json::{Map, Value, json};

use crate::outcome::ErrorKind;

/// The input schema of a tool taking `T`: what `T` accepts (JSON Schema 2020-12, the version
/// MCP names), its root an object. Serialized through `Schema`'s own `Serialize`, which puts
/// `$schema` and `title` first (as rmcp's `schema_for_type` writes it; `to_value` would keep
/// the generator's insertion order instead, and the committed text would change).
pub fn input_of<T: JsonSchema>() -> Arc<Map<String, Value>> {
    let schema = SchemaSettings::draft2020_12()
        .with_transform(RestrictFormats::default())
        .into_generator()
        .into_root_schema_for::<T>();
    match serde_json::to_value(schema).unwrap_or(Value::Null) {
        Value::Object(object) => Arc::new(object),
        _ => Arc::new(Map::new()),
    }
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
        .with_transform(RestrictFormats::default())
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
    }
    schema
}

/// SnowLuma's envelope, unchanged: every OneBot answer carries `status` and `retcode`.
fn envelope_branch() -> Value {
    json!({
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
pub fn unconfirmed_branch(others: &[Value]) -> Value {
    let mut excluded = vec![json!({ "required": ["status", "retcode"] })];
    excluded.extend(
        others
            .iter()
            .map(|branch| json!({ "required": branch["required"].clone() })),
    );
    json!({
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
pub fn envelope_schema() -> Value {
    one_of(vec![envelope_branch(), unconfirmed_branch(&[])])
}

/// `invoke_action` returns the envelope for ordinary actions (and for a stream SnowLuma ended
/// with its error frame, which is an envelope), and a stream summary for completed streams.
/// Exactly one branch matches any real result.
pub fn invoke_result_schema() -> Value {
    let streams = crate::streams::completed_schemas();
    let mut branches = vec![envelope_branch(), unconfirmed_branch(&streams)];
    branches.extend(streams);
    one_of(branches)
}
