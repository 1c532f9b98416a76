//! Asking the user to confirm (`SNOWLUMA_MCP_CONFIRM`): exec's guard decides that an
//! action needs the user's approval and hands the question to the [`RequestConfirmer`] of the
//! request at hand, which asks in that request's generation, like the `*_with_input` tools:
//! - legacy sessions: `elicitation/create` on the same connection, awaited;
//! - 2026-07-28 requests: `resultType: "input_required"` with a signed, single-use
//!   `requestState` bound to the tool and its exact arguments; the retry carries the answer;
//! - clients without form elicitation: unavailable, so nothing runs.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use super::call::{Answer, Call, ElicitError, InputRound};
use super::services::Services;
use crate::exec::{ActionArgs, Entry};
use crate::guard::confirm::{CONFIRM_REQUEST_KEY, ConfirmRequest, Verdict, verdict_of};
use crate::guard::{Caller, Confirmer};
use crate::input::InputForm;

/// Asks the user of one tool call.
pub struct RequestConfirmer<'a> {
    shared: &'a Arc<Services>,
    /// The tool and its arguments as the client sent them: a 2026-07-28 state is bound to
    /// both, so it cannot approve another call.
    tool: &'a str,
    args: Map<String, Value>,
    /// Whose states these are (see `Call::owner`): another owner's state does not verify.
    owner: String,
    input: &'a InputRound<'a>,
    cancel: &'a tokio_util::sync::CancellationToken,
    /// Whether a 2026-07-28 confirmation may be deferred to a retry. Not after a round that
    /// completed missing params: its retry would carry the incomplete arguments again.
    can_defer: bool,
    /// The `input_required` form and state, once a 2026-07-28 question went out.
    continuation: Mutex<Option<(InputForm, String)>>,
}

/// Runs `args` through exec's pipeline for a tool call, asking this request's user when the
/// guard wants a confirmation. `raw_args` are the tool's arguments as sent (a 2026-07-28
/// confirmation state is bound to them); `can_defer` is false after a round that completed
/// missing params.
pub async fn run(
    call: Call<'_>,
    tool: &str,
    raw_args: Map<String, Value>,
    entry: Entry,
    args: ActionArgs,
    can_defer: bool,
) -> Answer {
    let Call {
        shared,
        principal,
        owner,
        trace,
        cancel,
        mut progress,
        input,
        ..
    } = call;
    let confirmer = RequestConfirmer {
        shared,
        tool,
        owner,
        args: raw_args,
        input: &input,
        cancel,
        can_defer,
        continuation: Mutex::new(None),
    };
    let caller = Caller {
        principal,
        tool,
        confirmer: &confirmer,
    };
    let reply = shared
        .executor
        .run(&caller, entry, args, trace, cancel, &mut progress)
        .await;
    match confirmer.take_continuation() {
        Some((form, state)) => Answer::InputRequired {
            key: CONFIRM_REQUEST_KEY,
            form,
            state,
        },
        None => Answer::Reply(reply),
    }
}

impl RequestConfirmer<'_> {
    /// The `input_required` answer to send instead of the pipeline's reply, if the question
    /// went out that way.
    fn take_continuation(&self) -> Option<(InputForm, String)> {
        self.continuation
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// The state's tool name: confirmation states never redeem a missing-params prompt.
    fn state_tool(&self) -> String {
        format!("{}#confirm", self.tool)
    }

    fn modern(&self, request: &ConfirmRequest) -> Verdict {
        let tool = self.state_tool();
        if let Some(state) = &self.input.request_state {
            let response = self
                .input
                .input_responses
                .as_ref()
                .and_then(|responses| responses.get(CONFIRM_REQUEST_KEY));
            if let Some(response) = response {
                return match self
                    .shared
                    .continuations
                    .redeem(&self.owner, &tool, &self.args, state)
                {
                    Ok(()) => verdict_of(&serde_json::to_value(response).unwrap_or_default()),
                    Err(error) => Verdict::Invalid(error.to_string()),
                };
            }
        }
        if !self.can_defer {
            return Verdict::Unavailable(
                "a 2026-07-28 request that completed missing params cannot also be confirmed; \
                 call invoke_action with complete params to be asked"
                    .into(),
            );
        }
        match self
            .shared
            .continuations
            .open(&self.owner, &tool, &self.args)
        {
            Ok(pending) => {
                *self.continuation.lock().unwrap_or_else(|e| e.into_inner()) =
                    Some((form(request), pending.state));
                Verdict::Deferred
            }
            Err(error) => Verdict::Invalid(error.to_string()),
        }
    }

    async fn legacy(&self, request: &ConfirmRequest) -> Verdict {
        let timeout = self.shared.input_lifetime;
        let asked = self.input.client.elicit(form(request), timeout);
        let result = tokio::select! {
            _ = self.cancel.cancelled() => return Verdict::Cancelled,
            result = asked => result,
        };
        match result {
            Ok(answer) => verdict_of(&answer),
            Err(ElicitError::Timeout) => Verdict::Cancelled,
            Err(ElicitError::Failed(error)) => {
                Verdict::Unavailable(format!("the client did not answer: {error}"))
            }
        }
    }
}

impl Confirmer for RequestConfirmer<'_> {
    fn confirm<'b>(&'b self, request: &'b ConfirmRequest) -> BoxFuture<'b, Verdict> {
        Box::pin(async move {
            if !self.input.caps.form_elicitation {
                return Verdict::Unavailable(
                    "this client declared no form elicitation to ask with".into(),
                );
            }
            if self.input.modern {
                self.modern(request)
            } else {
                self.legacy(request).await
            }
        })
    }
}

fn form(request: &ConfirmRequest) -> InputForm {
    InputForm {
        message: request.message(),
        requested_schema: ConfirmRequest::schema(),
    }
}
