//! `tools/call` from the request to the rendered result: the trace context, the capability and
//! mode gates, the tool's handler (or a typed action tool through the execution pipeline), the
//! call's log line and the rendering. Also the per-request capability helpers the handler in
//! `mod.rs` shares with it.

use std::time::Instant;

use rmcp::model::{CallToolRequestParams, CallToolResponse};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};

use super::call_log::CallRecord;
use super::session::{Session, is_modern, request_capabilities};
use super::{SnowlumaServer, input_round, progress, render, result_meta, task_methods};
use crate::exec::{Capability, ClientCapabilities, gate};
use crate::tools::{Answer, Call, ConnectionEvents, InputRound, action_tools, read_more, registry};
use crate::trace::TraceContext;

impl SnowlumaServer {
    /// The client's capabilities for this request, less what this server cannot serve: the
    /// tasks extension counts only when a task directory is configured.
    pub(super) fn capabilities(&self, ctx: &RequestContext<RoleServer>) -> ClientCapabilities {
        let mut caps = request_capabilities(ctx);
        caps.tasks &= self.shared.tasks.is_some();
        caps
    }

    /// A call to a tool this request is not offered because of a missing capability: a
    /// 2026-07-28 client that could declare it gets -32021 naming it; anyone else (a legacy
    /// session, or a server without the feature) gets the unknown-tool error.
    fn refuse_capability(
        &self,
        tool: &str,
        needed: Capability,
        ctx: &RequestContext<RoleServer>,
    ) -> ErrorData {
        if needed == Capability::Tasks && is_modern(ctx) && self.shared.tasks.is_some() {
            return task_methods::missing_tasks_capability();
        }
        ErrorData::invalid_params(format!("tool not found: {tool}"), None)
    }

    /// The task manager for a tasks/* request (rmcp already refused clients that did not
    /// declare the extension, and every request when the server does not advertise it).
    pub(super) fn task_manager(
        &self,
        method: &str,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<&crate::tasks::TaskManager, ErrorData> {
        if !is_modern(ctx) {
            return Err(task_methods::refuse_legacy(method));
        }
        self.shared
            .tasks
            .as_deref()
            .ok_or_else(|| task_methods::refuse_legacy(method))
    }
}

/// What a `tools/call` names: a registry tool, or a typed action tool
/// (`SNOWLUMA_MCP_TOOLSETS`).
#[derive(Clone, Copy)]
enum Target {
    Tool(&'static registry::ToolSpec),
    Action(crate::catalog::Resolved),
}

impl Target {
    /// The name the call's log line and message carry.
    fn name(self) -> &'static str {
        match self {
            Target::Tool(tool) => tool.name,
            Target::Action(action) => action.meta.name,
        }
    }
}

impl SnowlumaServer {
    /// `tools/call`: the trace context, the tool's capability and mode gates, its handler (or
    /// a typed action tool through the execution pipeline), and the rendering of its reply
    /// (see `call_tool` for why this is a separate future).
    pub(super) async fn dispatch_tool_call(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let started = Instant::now();
        // Without the OS random source there is no trace id to send or report; the call fails
        // with its kind rather than go out under a guessable one.
        let trace = TraceContext::start(ctx.meta.get("traceparent"), ctx.meta.get("tracestate"))
            .map_err(|error| {
                let kind = crate::outcome::ErrorKind::RandomUnavailable;
                ErrorData::internal_error(
                    error.to_string(),
                    Some(serde_json::json!({ "kind": kind.as_str(), "next_step": kind.usual_next_step() })),
                )
            })?;
        let name = request.name.as_ref();
        let target = match registry::find(name) {
            Some(tool) => Some(Target::Tool(tool)),
            None => action_tools::find(&self.shared, name).map(Target::Action),
        };
        let Some(target) = target else {
            self.log_call(
                &ctx,
                CallRecord {
                    tool: "unknown",
                    trace: &trace,
                    outcome: "failed",
                    failure: Some(crate::outcome::ErrorKind::UnknownTool),
                    started,
                },
            )
            .await;
            return Err(ErrorData::invalid_params(
                format!("tool not found: {name}"),
                None,
            ));
        };
        // Capabilities are gated on every call, whether or not the tool was listed.
        if let Target::Tool(tool) = target
            && let Some(needed) = tool.requirement.capability
            && !self.capabilities(&ctx).has(needed)
        {
            return Err(self.refuse_capability(tool.name, needed, &ctx));
        }
        // `budget` is taken out of the arguments before the tool sees them (for a typed tool,
        // it is the one argument beside the action's params).
        let mut arguments = request.arguments;
        let budget = read_more::take_budget(
            &mut arguments,
            &self.shared.config.results,
            self.shared.config.http.is_some(),
        );
        let session = self.session_for(&ctx);
        let call = |args| Call {
            shared: &self.shared.services,
            principal: session.principal.clone(),
            owner: session.owner.clone(),
            events: connection_events(session),
            args,
            trace: &trace,
            cancel: &ctx.ct,
            progress: progress::for_request(&ctx.peer, ctx.meta.get_progress_token()),
            input: InputRound {
                caps: request_capabilities(&ctx),
                modern: is_modern(&ctx),
                request_state: request.request_state,
                input_responses: request.input_responses,
                client: &ctx.peer,
            },
            stored_result: render::stored_result,
            budget: budget.clone().ok().flatten(),
        };
        let answer = match target {
            Target::Tool(tool) => {
                match gate::tool_gate(tool.name, tool.requirement.access, self.shared.setup()) {
                    Err(refusal) if !tool.gated_per_action => Answer::Reply(refusal),
                    _ if let Err(refusal) = &budget => Answer::Reply(refusal.clone()),
                    _ => (tool.handler)(call(arguments)).await,
                }
            }
            // A typed tool's gate is the execution pipeline's, per action.
            Target::Action(action) => match &budget {
                Err(refusal) => Answer::Reply(refusal.clone()),
                Ok(_) => action_tools::call(action, call(arguments)).await,
            },
        };
        let continuation = match answer {
            Answer::Reply(reply) => Err(reply),
            Answer::InputRequired { key, form, state } => {
                Ok(input_round::input_required(key, form, state))
            }
            Answer::TaskStarted(handle) => Ok(task_methods::created(handle).into()),
        };
        let reply = match continuation {
            Err(reply) => reply,
            Ok(continuation) => {
                // Not an outcome yet: the call goes on when the client answers (input round)
                // or in the background (task).
                self.log_call(
                    &ctx,
                    CallRecord {
                        tool: target.name(),
                        trace: &trace,
                        outcome: "continued",
                        failure: None,
                        started,
                    },
                )
                .await;
                return Ok(continuation);
            }
        };
        self.log_call(
            &ctx,
            CallRecord {
                tool: target.name(),
                trace: &trace,
                outcome: reply.outcome().as_str(),
                failure: reply.diagnostics.kind,
                started,
            },
        )
        .await;
        let reply = read_more::fit(
            reply,
            budget.ok().flatten(),
            &self.shared.pages,
            &session.owner,
        );
        let meta = result_meta(&ctx).unwrap_or_default();
        Ok(render::into_result(reply, &trace, meta, self.structured).into())
    }
}

/// A session's event resources as the event tools see them.
fn connection_events(session: &Session) -> Option<ConnectionEvents<'_>> {
    session.events.as_ref().map(|events| ConnectionEvents {
        hub: &events.hub,
        owner: &events.owner,
        routes: events.routes.clone(),
        leases: events.leases.as_ref(),
    })
}
