//! The one validator for answers, shared by the legacy `elicitation/create` path and the
//! modern `input_required` path: an answer may only fill the fields that were missing, and
//! the merged params must pass the catalog's generated checks before anything runs.

use serde_json::{Map, Value};

use super::{InputError, PARAMS_JSON, is_automatic_upload, json_kind, missing_fields};
use crate::catalog::{self, ParamError};
use crate::exec::ActionArgs;

/// Top-level keys of the tool arguments; an answer may never set the first and last.
const ARGUMENT_KEYS: [&str; 3] = ["action", "params", "execution"];
const RESERVED_KEYS: [&str; 2] = ["action", "execution"];

/// What the user did with the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Submitted the form; the text of its `params_json` field.
    Accept(String),
    Decline,
    Cancel,
}

impl Answer {
    /// Reads an elicitation result as JSON, `{"action": "accept"|"decline"|"cancel",
    /// "content": {"params_json": "..."}}`: an `inputResponses` entry as it arrives, or a
    /// legacy `elicitation/create` result serialized back to JSON. Other content keys are
    /// ignored; an accept without a `params_json` string is malformed.
    pub fn from_elicit_result(result: &Value) -> Result<Answer, InputError> {
        let malformed = |reason: &str| InputError::MalformedResponse {
            reason: reason.to_string(),
        };
        match result.get("action").and_then(Value::as_str) {
            Some("accept") => match result.get("content").and_then(|c| c.get(PARAMS_JSON)) {
                Some(Value::String(text)) => Ok(Answer::Accept(text.clone())),
                Some(_) => Err(malformed("content.params_json must be a string")),
                None => Err(malformed("an accepted answer needs content.params_json")),
            },
            Some("decline") => Ok(Answer::Decline),
            Some("cancel") => Ok(Answer::Cancel),
            Some(_) => Err(malformed("action must be accept, decline or cancel")),
            None => Err(malformed("action is missing or not a string")),
        }
    }
}

/// Validates `answer` against the fields `original` leaves out and returns the completed
/// arguments: the original action and execution options, and the original params plus the
/// answered fields. The missing fields are derived from `original` through the catalog
/// again, so a caller cannot pass a stale list.
///
/// Refuses (and so nothing may run) when the user declined or cancelled, when
/// `params_json` is not a JSON object, leaves an asked-for field out, holds a field that was
/// not asked for, tries to replace a provided param, the action or the execution options,
/// or when the merged params fail the action's generated checks (the error names the field
/// and says whether it came from the answer or from the original call).
pub fn complete(original: &Map<String, Value>, answer: Answer) -> Result<ActionArgs, InputError> {
    let call = OriginalCall::parse(original)?;
    let resolved =
        catalog::resolve(call.action.trim()).ok_or_else(|| InputError::UnknownAction {
            action: call.action.trim().to_string(),
        })?;
    let missing = missing_fields(resolved.meta, original);

    let text = match answer {
        Answer::Accept(text) => text,
        Answer::Decline => return Err(InputError::Declined),
        Answer::Cancel => return Err(InputError::Cancelled),
    };
    let answered = match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(answered)) => answered,
        Ok(other) => {
            return Err(InputError::NotAnObject {
                found: json_kind(&other),
            });
        }
        // serde_json's syntax errors give a position and never quote the input.
        Err(error) => {
            return Err(InputError::InvalidJson {
                reason: error.to_string(),
            });
        }
    };

    for field in answered.keys() {
        if missing.contains(field) {
            continue;
        }
        if RESERVED_KEYS.contains(&field.as_str()) {
            return Err(InputError::ReservedField {
                field: field.clone(),
            });
        }
        if call.params.contains_key(field) {
            return Err(InputError::Overwrite {
                field: field.clone(),
            });
        }
        return Err(InputError::ExtraField {
            field: field.clone(),
        });
    }
    let still_missing: Vec<String> = missing
        .iter()
        .filter(|field| !answered.contains_key(*field))
        .cloned()
        .collect();
    if !still_missing.is_empty() {
        return Err(InputError::StillMissing {
            fields: still_missing,
        });
    }

    let mut params = call.params.clone();
    params.extend(answered.iter().map(|(k, v)| (k.clone(), v.clone())));
    // The executor fills an automatic upload's stream id later and checks the rest; so here.
    let mut checked = params.clone();
    if call.automatic_upload {
        checked.insert("stream_id".into(), Value::String("automatic".into()));
    }
    resolved
        .meta
        .check_params(&checked)
        .map_err(|error| blame(error, &answered, &call.params))?;

    let mut completed = original.clone();
    completed.insert("params".into(), Value::Object(params));
    serde_json::from_value(Value::Object(completed)).map_err(|error| InputError::InvalidArguments {
        reason: error.to_string(),
    })
}

/// Says whether a failed check is the answer's fault or the original call's.
fn blame(
    error: ParamError,
    answered: &Map<String, Value>,
    provided: &Map<String, Value>,
) -> InputError {
    match error.field {
        Some(field) if answered.contains_key(&field) => InputError::InvalidAnswerField {
            field,
            reason: error.reason,
        },
        Some(field) if provided.contains_key(&field) => InputError::InvalidProvidedField {
            field,
            reason: error.reason,
        },
        Some(field) => InputError::InvalidParams {
            reason: format!("{field}: {}", error.reason),
        },
        None => InputError::InvalidParams {
            reason: error.reason,
        },
    }
}

/// The parts of the original tool arguments an answer is checked against.
struct OriginalCall<'a> {
    action: &'a str,
    params: Map<String, Value>,
    automatic_upload: bool,
}

impl<'a> OriginalCall<'a> {
    fn parse(args: &'a Map<String, Value>) -> Result<OriginalCall<'a>, InputError> {
        let invalid = |reason: String| InputError::InvalidArguments { reason };
        if let Some(key) = args.keys().find(|k| !ARGUMENT_KEYS.contains(&k.as_str())) {
            return Err(invalid(format!(
                "unknown argument `{key}`; expected action, params and execution"
            )));
        }
        let action = match args.get("action") {
            Some(Value::String(action)) => action,
            Some(other) => {
                return Err(invalid(format!(
                    "action must be a string, not {}",
                    json_kind(other)
                )));
            }
            None => return Err(invalid("action is required".into())),
        };
        let params = match args.get("params") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(params)) => params.clone(),
            Some(other) => {
                return Err(invalid(format!(
                    "params must be an object, not {}",
                    json_kind(other)
                )));
            }
        };
        // Whatever else the executor's own argument type refuses (a bad `execution`, say)
        // is refused here as well, before the answer is looked at.
        serde_json::from_value::<ActionArgs>(Value::Object(args.clone()))
            .map_err(|error| invalid(error.to_string()))?;
        Ok(OriginalCall {
            action,
            params,
            automatic_upload: is_automatic_upload(args),
        })
    }
}
