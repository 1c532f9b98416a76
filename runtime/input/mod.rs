//! Input completion for `query_action_with_input` / `invoke_action_with_input`: when a call
//! leaves out a field from the action's top-level `required` list, the server asks the user
//! for exactly those fields through a one-field form (`params_json`) and runs the action once
//! a valid answer arrives.
//!
//! This module is pure and synchronous, and knows nothing about MCP or rmcp:
//! - [`missing_fields`] decides whether a round is needed at all (complete calls skip it);
//! - [`form`] builds the prompt (message plus a flat JSON Schema for form elicitation);
//! - [`Answer`] is what the user did with the prompt, parsed from an elicitation result;
//! - [`complete`] validates an answer and merges it into the original arguments. Both
//!   protocol generations use it: the legacy `elicitation/create` path calls it directly,
//!   the modern `input_required` path through [`Continuations::resume`];
//! - [`Continuations`] issues ([`open`](Continuations::open)), redeems
//!   ([`resume`](Continuations::resume)) and re-issues ([`reopen`](Continuations::reopen)) the
//!   signed, single-use `requestState` strings.
//!
//! The original tool arguments are always passed as the exact JSON object the client sent
//! (`{action, params?, execution?}`), because the state is bound to a digest of it.

mod answer;
mod error;
mod state;

#[cfg(test)]
mod state_tests;
#[cfg(test)]
mod tests;

use serde_json::{Map, Value, json};

use crate::catalog::ActionMeta;

pub use answer::{Answer, complete};
pub use error::InputError;
pub use state::{Clock, Continuations, MAX_PENDING, Pending, STATE_LIFETIME, SystemClock};

/// The only property of the form.
pub const PARAMS_JSON: &str = "params_json";

/// The key the server uses for its one entry in `inputRequests` / `inputResponses`.
pub const INPUT_REQUEST_KEY: &str = "missing_params";

/// Longest catalog description quoted per field in the form message.
const DESCRIPTION_CHARS: usize = 160;

/// A prompt for form elicitation: a message and a flat `requestedSchema`.
#[derive(Debug, Clone, PartialEq)]
pub struct InputForm {
    pub message: String,
    pub requested_schema: Value,
}

/// The fields of `meta`'s top-level `required` list that the arguments leave out, in catalog
/// order. Only absence counts: a field sent as `null` or with a wrong type is present and is
/// left to the normal param checks, and conditional requirements are never inferred.
///
/// Arguments whose `params` is not an object yield no missing fields, so they bypass the
/// input round and get the normal pipeline's error. With `execution.input_file` set, the
/// upload's `stream_id` is chosen by the server and is not missing either.
pub fn missing_fields(meta: &ActionMeta, args: &Map<String, Value>) -> Vec<String> {
    let params = match args.get("params") {
        None | Some(Value::Null) => None,
        Some(Value::Object(params)) => Some(params),
        Some(_) => return Vec::new(),
    };
    let server_filled = server_filled_fields(args);
    meta.required
        .iter()
        .filter(|field| !server_filled.contains(field))
        .filter(|field| params.is_none_or(|params| !params.contains_key(**field)))
        .map(|field| (*field).to_string())
        .collect()
}

/// Required params the server fills in itself for these arguments: an automatic upload
/// (`execution.input_file`) picks its own `stream_id`, as the executor does.
fn server_filled_fields(args: &Map<String, Value>) -> &'static [&'static str] {
    if is_automatic_upload(args) {
        &["stream_id"]
    } else {
        &[]
    }
}

/// True when `execution.input_file` asks the server to run the upload itself.
fn is_automatic_upload(args: &Map<String, Value>) -> bool {
    args.get("execution")
        .and_then(|execution| execution.get("input_file"))
        .is_some_and(Value::is_string)
}

/// The prompt for `missing` fields of `action`: the message names every field (with the
/// catalog's description where there is one) and the schema has one required string
/// property, `params_json`.
pub fn form(action: &ActionMeta, missing: &[String]) -> InputForm {
    let descriptions = field_descriptions(action);
    let mut message = format!(
        "`{}` needs {} more param(s): {}. Answer params_json with a JSON object holding exactly these fields.",
        action.name,
        missing.len(),
        missing.join(", ")
    );
    for field in missing {
        if let Some(text) = descriptions.get(field).and_then(Value::as_str) {
            message.push_str(&format!("\n- {field}: {}", shorten(text)));
        }
    }
    let example = missing
        .iter()
        .map(|field| format!("\"{field}\": ..."))
        .collect::<Vec<_>>()
        .join(", ");
    let requested_schema = json!({
        "type": "object",
        "properties": {
            PARAMS_JSON: {
                "type": "string",
                "title": "Missing params (JSON object)",
                "description": format!(
                    "A JSON object with exactly these fields of {}: {}. For example {{{example}}}. Values follow the catalog (get_action {}).",
                    action.name,
                    missing.join(", "),
                    action.name
                ),
                "minLength": 2
            }
        },
        "required": [PARAMS_JSON]
    });
    InputForm {
        message,
        requested_schema,
    }
}

/// `inputSchema.properties` from the action's contract, or an empty map if it has none.
fn field_descriptions(action: &ActionMeta) -> Map<String, Value> {
    let contract: Value = serde_json::from_str(action.contract_json()).unwrap_or(Value::Null);
    let Some(Value::Object(properties)) = contract.pointer("/inputSchema/properties").cloned()
    else {
        return Map::new();
    };
    properties
        .into_iter()
        .filter_map(|(name, schema)| Some((name, schema.get("description")?.clone())))
        .collect()
}

fn shorten(text: &str) -> String {
    if text.chars().count() <= DESCRIPTION_CHARS {
        return text.to_string();
    }
    let mut short: String = text.chars().take(DESCRIPTION_CHARS).collect();
    short.push('…');
    short
}

/// The JSON kind of a value, for messages.
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
