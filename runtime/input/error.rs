//! Why an input round could not continue, in words a client (and a model) can act on.
//!
//! Messages name the field, the limit and what to do next. None of them repeats a value
//! from the answer or from the state string, so nothing a client sent is echoed back.

use std::fmt;

/// Every way opening or resuming an input round can fail. The server maps these onto its
/// own error kinds; [`InputError::code`] is a stable name for that mapping and for logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputError {
    /// The tool arguments are not `{action, params?, execution?}`.
    InvalidArguments { reason: String },
    /// The action named in the arguments is not in the catalog.
    UnknownAction { action: String },
    /// The process could not get random bytes for its signing key.
    RandomUnavailable,
    /// This process already holds the maximum number of unanswered prompts.
    /// With `share`: the caller's principal already holds its share of them.
    TooManyPending {
        limit: usize,
        share: Option<crate::config::principals::Share>,
    },
    /// The state string is malformed, was altered, or was issued by another process
    /// (for example before a restart).
    UnknownState,
    /// The state was issued for a different tool.
    WrongTool {
        issued_for: String,
        used_with: String,
    },
    /// The state was issued for different arguments than the retried call carries.
    WrongArguments,
    /// The state is older than the continuation lifetime.
    Expired { lifetime_secs: u64 },
    /// The state was already answered once; answers never run twice.
    Replayed,
    /// The user declined to provide the missing params.
    Declined,
    /// The user dismissed the prompt.
    Cancelled,
    /// The client's response is not an elicitation result with a `params_json` string.
    MalformedResponse { reason: String },
    /// `params_json` is not valid JSON.
    InvalidJson { reason: String },
    /// `params_json` is valid JSON but not an object.
    NotAnObject { found: &'static str },
    /// The answer left some of the asked-for fields out.
    StillMissing { fields: Vec<String> },
    /// The answer holds a field that was not asked for.
    ExtraField { field: String },
    /// The answer tries to replace a param the original call already set.
    Overwrite { field: String },
    /// The answer tries to change the action or the execution options.
    ReservedField { field: String },
    /// An answered field fails the catalog's checks.
    InvalidAnswerField { field: String, reason: String },
    /// A param from the original call fails the catalog's checks once the answer is merged.
    InvalidProvidedField { field: String, reason: String },
    /// The merged params break a rule that spans several fields.
    InvalidParams { reason: String },
}

impl InputError {
    /// A stable snake_case name for this error, for the server's error mapping and logs.
    pub fn code(&self) -> &'static str {
        match self {
            InputError::InvalidArguments { .. } => "invalid_arguments",
            InputError::UnknownAction { .. } => "unknown_action",
            InputError::RandomUnavailable => "random_unavailable",
            InputError::TooManyPending { .. } => "too_many_pending",
            InputError::UnknownState => "unknown_state",
            InputError::WrongTool { .. } => "wrong_tool",
            InputError::WrongArguments => "wrong_arguments",
            InputError::Expired { .. } => "expired",
            InputError::Replayed => "replayed",
            InputError::Declined => "declined",
            InputError::Cancelled => "cancelled",
            InputError::MalformedResponse { .. } => "malformed_response",
            InputError::InvalidJson { .. } => "invalid_json",
            InputError::NotAnObject { .. } => "not_an_object",
            InputError::StillMissing { .. } => "still_missing",
            InputError::ExtraField { .. } => "extra_field",
            InputError::Overwrite { .. } => "overwrite",
            InputError::ReservedField { .. } => "reserved_field",
            InputError::InvalidAnswerField { .. } => "invalid_answer_field",
            InputError::InvalidProvidedField { .. } => "invalid_provided_field",
            InputError::InvalidParams { .. } => "invalid_arguments",
        }
    }

    /// The field this error is about, when there is exactly one.
    pub fn field(&self) -> Option<&str> {
        match self {
            InputError::ExtraField { field }
            | InputError::Overwrite { field }
            | InputError::ReservedField { field }
            | InputError::InvalidAnswerField { field, .. }
            | InputError::InvalidProvidedField { field, .. } => Some(field),
            _ => None,
        }
    }

    /// True when the user chose not to answer (decline or cancel), as opposed to a failure.
    pub fn is_refusal(&self) -> bool {
        matches!(self, InputError::Declined | InputError::Cancelled)
    }

    /// What the caller can do next.
    pub fn next_step(&self) -> &'static str {
        match self {
            InputError::InvalidArguments { .. } => {
                "pass {action, params?, execution?} as for query_action / invoke_action"
            }
            InputError::UnknownAction { .. } => {
                "find the action with search_actions, then call again"
            }
            InputError::RandomUnavailable => {
                "the OS random source failed; call query_action / invoke_action with complete params"
            }
            InputError::TooManyPending { .. } => {
                "answer or abandon open prompts (they expire), or call query_action / invoke_action with complete params"
            }
            InputError::UnknownState
            | InputError::WrongTool { .. }
            | InputError::WrongArguments
            | InputError::Expired { .. }
            | InputError::Replayed => {
                "nothing was run; call the tool again without requestState to get a fresh prompt"
            }
            InputError::Declined | InputError::Cancelled => {
                "nothing was run; call again with complete params if the action is still wanted"
            }
            InputError::MalformedResponse { .. }
            | InputError::InvalidJson { .. }
            | InputError::NotAnObject { .. }
            | InputError::StillMissing { .. }
            | InputError::ExtraField { .. }
            | InputError::Overwrite { .. }
            | InputError::ReservedField { .. }
            | InputError::InvalidAnswerField { .. }
            | InputError::InvalidParams { .. } => {
                "nothing was run; call the tool again and answer params_json with a JSON object holding exactly the asked-for fields"
            }
            InputError::InvalidProvidedField { .. } => {
                "nothing was run; fix that param in the original call (get_action shows it) and call again"
            }
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::InvalidArguments { reason } => {
                write!(f, "the tool arguments are not valid: {reason}")
            }
            InputError::UnknownAction { action } => {
                write!(f, "`{action}` is not an action in the catalog")
            }
            InputError::RandomUnavailable => {
                f.write_str("no random bytes were available for signing prompts")
            }
            InputError::TooManyPending { limit, share: None } => write!(
                f,
                "{limit} prompts are already waiting for an answer, the most this server keeps"
            ),
            InputError::TooManyPending {
                limit,
                share: Some(share),
            } => write!(
                f,
                "this client already has {} of the {limit} prompts this server keeps waiting \
                 for an answer",
                share.describe(*limit)
            ),
            InputError::UnknownState => f.write_str(
                "requestState was not issued by this server process (it is malformed, altered, or from before a restart)",
            ),
            InputError::WrongTool {
                issued_for,
                used_with,
            } => write!(
                f,
                "requestState was issued for {issued_for}, not {used_with}"
            ),
            InputError::WrongArguments => f.write_str(
                "requestState belongs to a call with different arguments; retry with the exact original arguments",
            ),
            InputError::Expired { lifetime_secs } => write!(
                f,
                "requestState has expired (prompts are answerable for {lifetime_secs} s)"
            ),
            InputError::Replayed => f.write_str(
                "requestState was already answered; an answer is used at most once",
            ),
            InputError::Declined => f.write_str("the user declined to provide the missing params"),
            InputError::Cancelled => f.write_str("the user cancelled the prompt"),
            InputError::MalformedResponse { reason } => {
                write!(f, "the prompt response is not usable: {reason}")
            }
            InputError::InvalidJson { reason } => {
                write!(f, "params_json is not valid JSON: {reason}")
            }
            InputError::NotAnObject { found } => {
                write!(f, "params_json must be a JSON object, not {found}")
            }
            InputError::StillMissing { fields } => write!(
                f,
                "params_json leaves out required field(s): {}",
                fields.join(", ")
            ),
            InputError::ExtraField { field } => write!(
                f,
                "params_json holds `{field}`, which was not asked for; only the missing fields are accepted"
            ),
            InputError::Overwrite { field } => write!(
                f,
                "params_json holds `{field}`, which the original call already set; answers cannot replace it"
            ),
            InputError::ReservedField { field } => write!(
                f,
                "params_json holds `{field}`; the action name and execution options cannot be changed by an answer"
            ),
            InputError::InvalidAnswerField { field, reason } => {
                write!(f, "answered field `{field}` is invalid: {reason}")
            }
            InputError::InvalidProvidedField { field, reason } => {
                write!(f, "param `{field}` of the original call is invalid: {reason}")
            }
            InputError::InvalidParams { reason } => {
                write!(f, "the completed params are invalid: {reason}")
            }
        }
    }
}

impl std::error::Error for InputError {}
