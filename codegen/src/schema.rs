//! JSON Schemas derived from params: what a client sees as an action's `inputSchema`.

use serde_json::{Map, Value, json};

use crate::model::ParamDef;

/// Argument names the server's typed action tools take beside an action's params (the
/// runtime's `read_more::BUDGET_ARG`), so no param may be called that.
pub const RESERVED_PARAMS: &[&str] = &["budget"];

/// The param types SnowLuma's action kit knows, in the spec's spelling.
pub const PARAM_TYPES: &[&str] = &[
    "uint",
    "int",
    "message_id",
    "number",
    "string",
    "bool",
    "message",
    "enum",
    "raw",
    "string[]",
    "uint[]",
];

/// What other schema languages call our param types: too far from the spelling for an edit
/// distance (`integer` is four edits from `int`), but what a newcomer types first.
const TYPE_SYNONYMS: &[(&str, &str)] = &[
    ("integer", "int"),
    ("i32", "int"),
    ("i64", "int"),
    ("long", "int"),
    ("unsigned", "uint"),
    ("u32", "uint"),
    ("u64", "uint"),
    ("float", "number"),
    ("double", "number"),
    ("f64", "number"),
    ("boolean", "bool"),
    ("str", "string"),
    ("text", "string"),
    ("array", "string[]"),
    ("object", "raw"),
    ("any", "raw"),
    ("json", "raw"),
];

/// The param type meant by a common synonym (`integer` -> `int`), case-insensitively.
pub fn type_synonym(wrong: &str) -> Option<&'static str> {
    let wrong = wrong.to_ascii_lowercase();
    TYPE_SYNONYMS
        .iter()
        .find(|(synonym, _)| *synonym == wrong)
        .map(|(_, ty)| *ty)
}

/// Checks SnowLuma makes in an action's body (see runtime/catalog/checks.rs).
pub const CHECKS: &[&str] = &[
    "truthy",
    "non_zero_number",
    "path_list",
    "array",
    "even_hex",
    "as_string_in",
];

/// The checks that refuse an absent key, so the schema lists their param as required.
pub fn check_requires_presence(check: &str) -> bool {
    !matches!(check, "even_hex" | "as_string_in")
}

/// The JSON Schema pattern of an even-length hex string.
pub const EVEN_HEX_PATTERN: &str = "^([0-9a-fA-F]{2})*$";

pub const ROLES: &[&str] = &[
    "group_id",
    "user_id",
    "member_id",
    "message_id",
    "file_id",
    "file",
    "image",
    "record",
    "video",
    "duration",
    "timestamp",
    "face_id",
];

/// One param's schema. Numeric strings are accepted by SnowLuma, but clients are shown the
/// canonical JSON type they should send.
pub fn param_schema(param: &ParamDef) -> Value {
    let mut schema = match param.ty.as_str() {
        "uint" => json!({ "type": "integer", "minimum": param.minimum.unwrap_or(1) }),
        "int" => json!({ "type": "integer" }),
        "message_id" => json!({ "type": "integer", "not": { "const": 0 } }),
        "number" => json!({ "type": "number" }),
        "string" => json!({ "type": "string" }),
        "bool" => json!({ "type": "boolean" }),
        "message" => json!({ "anyOf": [
            { "type": "string", "description": "CQ 码字符串 (CQ code string)" },
            { "type": "array", "items": { "type": "object" }, "description": "消息段数组 (segment array)" },
            { "type": "object", "description": "单个消息段 (one segment)" }
        ] }),
        "enum" => json!({ "enum": param.values.clone().unwrap_or_default() }),
        "string[]" => {
            let mut items = json!({ "type": "string" });
            if let Some(n) = param.item_min_length {
                items["minLength"] = json!(n);
            }
            json!({ "type": "array", "items": items })
        }
        "uint[]" => json!({ "type": "array", "items": { "type": "integer", "minimum": 1 } }),
        _ => json!({}),
    };
    let object = schema.as_object_mut().expect("schemas above are objects");
    if let Some(min) = param.minimum.filter(|_| param.ty != "uint") {
        object.insert("minimum".into(), json!(min));
    }
    if let Some(max) = param.maximum {
        object.insert("maximum".into(), json!(max));
    }
    if param.non_zero && param.ty != "message_id" {
        object.insert("not".into(), json!({ "const": 0 }));
    }
    if let Some(values) = param.values.as_ref().filter(|_| param.ty != "enum") {
        object.insert("enum".into(), json!(values));
    }
    if param.check.as_deref() == Some("even_hex") {
        object.insert("pattern".into(), json!(EVEN_HEX_PATTERN));
    }
    if let Some(n) = param.min_length {
        object.insert("minLength".into(), json!(n));
    }
    if let Some(n) = param.min_items {
        object.insert("minItems".into(), json!(n));
    }
    if let Some(default) = &param.default {
        object.insert("default".into(), default.clone());
    }
    if !param.description.is_empty() {
        object.insert("description".into(), json!(param.description));
    }
    if let Some(role) = &param.role {
        object.insert("x-role".into(), json!(role));
    }
    if param.undeclared {
        object.insert("x-undeclared".into(), json!(true));
    }
    schema
}

/// The whole `inputSchema`: unknown keys are allowed because SnowLuma ignores them.
pub fn input_schema(params: &[ParamDef]) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for param in params {
        properties.insert(param.name.clone(), param_schema(param));
        let checked = param.check.as_deref().is_some_and(check_requires_presence);
        if param.required || checked {
            required.push(json!(param.name));
        }
    }
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        schema.insert("required".into(), Value::Array(required));
    }
    schema.insert("additionalProperties".into(), json!(true));
    Value::Object(schema)
}
