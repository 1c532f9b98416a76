//! `query_action_with_input` and `invoke_action_with_input`: query_action / invoke_action
//! that ask the user for missing required params instead of failing. The pure work (what is
//! missing, the form, validating an answer, signed single-use state) is `crate::input`; this
//! file only speaks the protocol of each generation:
//! - 2026-07-28 requests get `resultType: "input_required"` with a signed `requestState`,
//!   and come back with `inputResponses` plus the echoed state (MRTR);
//! - legacy sessions get an `elicitation/create` request on the same connection;
//! - clients that declared no form elicitation get a tool error.

use serde_json::{Map, Value};

use super::call::{Answer, Call, ElicitError};
use crate::catalog;
use crate::exec::{self, ActionArgs, Entry};
use crate::guard::confirm::CONFIRM_REQUEST_KEY;
use crate::input::{self, INPUT_REQUEST_KEY, InputError};
use crate::outcome::{ErrorKind, ToolReply, parse_args};

pub const QUERY_WITH_INPUT: &str = "query_action_with_input";
pub const INVOKE_WITH_INPUT: &str = "invoke_action_with_input";

fn tool_name(entry: Entry) -> &'static str {
    match entry {
        Entry::Query => QUERY_WITH_INPUT,
        Entry::Invoke => INVOKE_WITH_INPUT,
    }
}

/// The whole tool: resume a modern round, or check the call and ask for what is missing.
pub async fn execute_with_input(entry: Entry, mut call: Call<'_>) -> Answer {
    let tool = tool_name(entry);
    let args = call.args.clone().unwrap_or_default();
    // A confirmation round's retry carries its own state; the pipeline redeems it.
    let confirming = call
        .input
        .input_responses
        .as_ref()
        .is_some_and(|responses| responses.contains_key(CONFIRM_REQUEST_KEY));
    if !confirming && let Some(state) = call.input.request_state.take() {
        return resume(entry, call, &args, &state).await;
    }
    let parsed: ActionArgs = match parse_args(tool, Some(args.clone())) {
        Ok(parsed) => parsed,
        Err(reply) => return Answer::Reply(reply),
    };
    let resolved = match catalog::lookup(&parsed.action) {
        Ok(resolved) => resolved,
        Err(unknown) => return Answer::Reply(exec::unknown_action(unknown)),
    };
    if let Err(refusal) = call.shared.executor.gate(entry, resolved) {
        return Answer::Reply(refusal);
    }
    let missing = input::missing_fields(resolved.meta, &args);
    if missing.is_empty() {
        // Complete arguments never see a prompt: exactly the original tool's pipeline.
        return run(entry, call, args, parsed, true).await;
    }
    if !call.input.caps.form_elicitation {
        return Answer::Reply(unsupported(entry, &missing));
    }
    let form = input::form(resolved.meta, &missing);
    if call.input.modern {
        return match call.shared.continuations.open(&call.owner, tool, &args) {
            Ok(pending) => Answer::InputRequired {
                key: INPUT_REQUEST_KEY,
                form,
                state: pending.state,
            },
            Err(error) => Answer::Reply(input_error(error)),
        };
    }
    let answer = match elicit(&call, form).await {
        Ok(answer) => answer,
        Err(reply) => return Answer::Reply(reply),
    };
    match input::complete(&args, answer) {
        Ok(completed) => run(entry, call, args, completed, true).await,
        Err(error) => Answer::Reply(input_error(error)),
    }
}

/// A modern retry carrying `requestState`: with an answer, redeem the state (once) and run;
/// without one, MRTR asks the server to prompt again, under a fresh state.
async fn resume(entry: Entry, call: Call<'_>, args: &Map<String, Value>, state: &str) -> Answer {
    let tool = tool_name(entry);
    if !call.input.modern {
        return Answer::Reply(ToolReply::error(
            ErrorKind::InputState,
            "requestState belongs to 2026-07-28 requests; this legacy session answers prompts through elicitation/create",
            "call the tool again without requestState",
        ));
    }
    let response = call
        .input
        .input_responses
        .as_ref()
        .and_then(|responses| responses.get(INPUT_REQUEST_KEY));
    let Some(response) = response else {
        return match reprompt(tool, &call, args, state) {
            Ok(answer) => answer,
            Err(error) => Answer::Reply(input_error(error)),
        };
    };
    let completed = input::Answer::from_elicit_result(response).and_then(|answer| {
        call.shared
            .continuations
            .resume(&call.owner, tool, args, state, answer)
    });
    let args = args.clone();
    match completed {
        Ok(completed) => run(entry, call, args, completed, false).await,
        Err(error) => Answer::Reply(input_error(error)),
    }
}

/// Swaps the state for a fresh one and asks the same question again.
fn reprompt(
    tool: &str,
    call: &Call<'_>,
    args: &Map<String, Value>,
    state: &str,
) -> Result<Answer, InputError> {
    let pending = call
        .shared
        .continuations
        .reopen(&call.owner, tool, args, state)?;
    // The state matched these exact arguments, which were checked when it was issued.
    let action = args.get("action").and_then(Value::as_str).unwrap_or("");
    let resolved = catalog::resolve(action.trim()).ok_or_else(|| InputError::UnknownAction {
        action: action.trim().to_string(),
    })?;
    let missing = input::missing_fields(resolved.meta, args);
    Ok(Answer::InputRequired {
        key: INPUT_REQUEST_KEY,
        form: input::form(resolved.meta, &missing),
        state: pending.state,
    })
}

/// The normal execution pipeline, gates and guards included, as query_action /
/// invoke_action run it. `can_defer`: see `confirm::run`.
async fn run(
    entry: Entry,
    call: Call<'_>,
    raw: Map<String, Value>,
    args: ActionArgs,
    can_defer: bool,
) -> Answer {
    super::confirm::run(call, tool_name(entry), raw, entry, args, can_defer).await
}

/// Legacy: asks through `elicitation/create` and waits, bounded by the prompt lifetime and
/// by the call's own cancellation.
async fn elicit(call: &Call<'_>, form: input::InputForm) -> Result<input::Answer, ToolReply> {
    let timeout = call.shared.input_lifetime;
    let request = call.input.client.elicit(form, timeout);
    let result = tokio::select! {
        _ = call.cancel.cancelled() => {
            return Err(ToolReply::error(
                ErrorKind::InputCancelled,
                "the call was cancelled while waiting for the missing params",
                "nothing was run; call again if the action is still wanted",
            ));
        }
        result = request => result,
    };
    match result {
        Ok(wire) => input::Answer::from_elicit_result(&wire).map_err(input_error),
        Err(ElicitError::Timeout) => Err(ToolReply::error(
            ErrorKind::InputCancelled,
            format!(
                "no answer to the prompt for missing params within {} s",
                timeout.as_secs_f64()
            ),
            "nothing was run; call again and answer the prompt, or call the original tool with complete params",
        )),
        Err(ElicitError::Failed(error)) => Err(ToolReply::error(
            ErrorKind::InputUnsupported,
            format!("the client did not answer the prompt for missing params: {error}"),
            "nothing was run; call query_action / invoke_action with complete params",
        )),
    }
}

/// A client without form elicitation: point at the original tool.
fn unsupported(entry: Entry, missing: &[String]) -> ToolReply {
    ToolReply::error(
        ErrorKind::InputUnsupported,
        format!(
            "missing required param(s) {}, and this client declared no form elicitation to ask for them",
            missing.join(", ")
        ),
        format!(
            "nothing was run; call {} with complete params (get_action shows them)",
            entry.tool()
        ),
    )
    .with_detail("missing", Value::from(missing.to_vec()))
}

/// An input failure as a tool error: the kind says what to do, the message names the field.
fn input_error(error: InputError) -> ToolReply {
    let kind = match &error {
        InputError::InvalidArguments { .. } | InputError::InvalidProvidedField { .. } => {
            ErrorKind::InvalidArguments
        }
        InputError::UnknownAction { .. } => ErrorKind::UnknownAction,
        InputError::RandomUnavailable | InputError::TooManyPending { .. } => ErrorKind::InputLimit,
        InputError::UnknownState
        | InputError::WrongTool { .. }
        | InputError::WrongArguments
        | InputError::Expired { .. }
        | InputError::Replayed => ErrorKind::InputState,
        InputError::Declined => ErrorKind::InputDeclined,
        InputError::Cancelled => ErrorKind::InputCancelled,
        InputError::MalformedResponse { .. }
        | InputError::InvalidJson { .. }
        | InputError::NotAnObject { .. }
        | InputError::StillMissing { .. }
        | InputError::ExtraField { .. }
        | InputError::Overwrite { .. }
        | InputError::ReservedField { .. }
        | InputError::InvalidAnswerField { .. }
        | InputError::InvalidParams { .. } => ErrorKind::InputInvalid,
    };
    let mut reply = ToolReply::error(kind, error.to_string(), error.next_step())
        .with_detail("input_error", Value::from(error.code()));
    if let Some(field) = error.field() {
        reply = reply.with_detail("field", Value::from(field));
    }
    reply
}
