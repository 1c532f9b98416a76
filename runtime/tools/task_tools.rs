//! Durable background transfers as tools: `invoke_action_background` and `list_tasks`, and
//! the work a task runs (the one execution pipeline, progress fed into the task record).
//!
//! `tasks/` knows no protocol and no executor; this module composes them: the work closure
//! calls `Executor::run`. The tasks extension's methods (`tasks/get` and the rest) and the
//! task handle's protocol shape are the server's (`server/task_methods.rs`).

use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::call::{Answer, Call};
use super::read_more;
use crate::exec::{Access, ActionArgs, Capability, Entry, Requirement};
use crate::guard::{Caller, CannotAsk};
use crate::outcome::{ErrorKind, ToolReply, parse_args};
use crate::streams::{Progress, ProgressSink};
use crate::tasks::{
    TaskError, TaskHandle, TaskManager, TaskOutcome, TaskProgress, TaskState, TaskSummary,
};

/// Both task tools: write mode, and a 2026-07-28 request declaring the tasks extension.
pub const REQUIREMENT: Requirement = Requirement {
    access: Access::Writes,
    capability: Some(Capability::Tasks),
};

/// `list_tasks` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListTasksArgs {
    /// `nextCursor` of the previous page; omit for the newest tasks.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Tasks per page, 1-100 (default 50).
    #[serde(default)]
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<u32>,
}

/// One page of task metadata (never result bodies).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskList {
    /// Newest first.
    pub tasks: Vec<TaskEntry>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// A task's metadata as `list_tasks` shows it.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskEntry {
    pub task_id: String,
    /// The action's catalog name (or the alias it was started with).
    pub action: String,
    /// working, completed, failed or cancelled.
    pub status: String,
    pub status_message: Option<String>,
    pub created_at: String,
    pub last_updated_at: String,
    /// The last progress the transfer reported (bytes or chunks), if any.
    pub progress: Option<EntryProgress>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct EntryProgress {
    pub value: f64,
    pub total: Option<f64>,
}

fn state_name(state: TaskState) -> &'static str {
    match state {
        TaskState::Working => "working",
        TaskState::Completed => "completed",
        TaskState::Failed => "failed",
        TaskState::Cancelled => "cancelled",
    }
}

impl From<TaskSummary> for TaskEntry {
    fn from(summary: TaskSummary) -> Self {
        TaskEntry {
            task_id: summary.id,
            action: summary.action,
            status: state_name(summary.state).to_string(),
            status_message: summary.status_message,
            created_at: summary.created_at,
            last_updated_at: summary.updated_at,
            progress: summary.progress.map(|p| EntryProgress {
                value: p.value,
                total: p.total,
            }),
        }
    }
}

/// The registry only lists these tools when a manager exists; a call that still arrives
/// without one (a stale tool list) gets a tool error, not a panic.
fn manager_of(call: &Call<'_>) -> Result<Arc<TaskManager>, ToolReply> {
    call.shared.tasks.clone().ok_or_else(|| {
        ToolReply::error(
            ErrorKind::Mode,
            "background tasks are disabled on this server",
            "set SNOWLUMA_MCP_TASK_DIR (an absolute, private directory) with SNOWLUMA_MCP_MODE=write",
        )
    })
}

/// `invoke_action_background`: checks everything `invoke_action` would check before
/// anything is written, refuses non-stream actions, then starts the task.
pub async fn invoke_background(call: Call<'_>) -> Answer {
    match start(call).await {
        Ok(handle) => Answer::TaskStarted(handle),
        Err(reply) => Answer::Reply(reply),
    }
}

async fn start(mut call: Call<'_>) -> Result<TaskHandle, ToolReply> {
    let manager = manager_of(&call)?;
    let args: ActionArgs = parse_args("invoke_action_background", call.args.take())?;
    let resolved = call.shared.executor.preflight(Entry::Invoke, &args)?;
    if !resolved.meta.is_stream() {
        return Err(ToolReply::error(
            ErrorKind::InvalidArguments,
            format!(
                "action: invoke_action_background only runs stream actions; `{}` is an ordinary \
                 action",
                resolved.meta.name
            ),
            "call invoke_action with the same arguments",
        ));
    }
    let shared = Arc::clone(call.shared);
    let trace = call.trace.clone();
    let principal = call.principal.clone();
    let owner = call.owner.clone();
    let budget = call.budget;
    let stored_result = call.stored_result;
    manager
        .start_for(
            &call.owner,
            resolved.meta.name,
            move |cancel, progress| async move {
                let progress = Arc::<dyn TaskProgress>::from(progress);
                let status = Arc::clone(&progress);
                let mut progress = Progress::new(Some(Box::new(TaskProgressSink(progress))));
                // Waits for a transfer slot rather than answering busy; the task's status message
                // says so meanwhile.
                // A task runs after its call has answered, so there is nobody to ask: actions
                // that need a confirmation are refused (confirmation_unavailable), never run.
                let cannot_ask =
                    CannotAsk("a background task cannot ask the user; call invoke_action instead");
                let caller = Caller {
                    principal,
                    tool: "invoke_action_background",
                    confirmer: &cannot_ask,
                };
                let reply = shared
                    .executor
                    .run_background(&caller, args, &trace, &cancel, &mut progress, &|message| {
                        status.status(message)
                    })
                    .await;
                let honoured_cancel =
                    cancel.is_cancelled() && reply.diagnostics.kind == Some(ErrorKind::Cancelled);
                let is_error = reply.is_error;
                // Paged like every tool result (a frame collection can be large): the saved
                // result is the first page, the rest held for read_more by its owner.
                let reply = read_more::fit(reply, budget, &shared.pages, &owner);
                // Saved exactly as invoke_action would have answered, so tasks/get can return it.
                let result = stored_result(reply, &trace);
                if honoured_cancel {
                    TaskOutcome::cancelled(result)
                } else {
                    TaskOutcome::finished(result, is_error)
                }
            },
        )
        .await
        .map_err(task_error_reply)
}

/// Feeds the stream's (already throttled) progress into the task record.
struct TaskProgressSink(Arc<dyn TaskProgress>);

impl ProgressSink for TaskProgressSink {
    fn deliver(&self, value: f64, total: Option<f64>) -> BoxFuture<'_, Result<(), String>> {
        self.0.update(value, total);
        Box::pin(async { Ok(()) })
    }
}

/// `list_tasks`.
pub fn list_tasks(mut call: Call<'_>) -> ToolReply {
    let manager = match manager_of(&call) {
        Ok(manager) => manager,
        Err(reply) => return reply,
    };
    let args: ListTasksArgs = match parse_args("list_tasks", call.args.take()) {
        Ok(args) => args,
        Err(reply) => return reply,
    };
    match manager.list_as(&call.owner, args.cursor.as_deref(), args.limit) {
        Ok(page) => {
            let list = TaskList {
                tasks: page.tasks.into_iter().map(TaskEntry::from).collect(),
                next_cursor: page.next_cursor,
            };
            ToolReply::ok(serde_json::to_value(list).unwrap_or(Value::Null))
        }
        Err(err) => task_error_reply(err),
    }
}

/// A task failure as a tool error naming its kind and next step.
fn task_error_reply(err: TaskError) -> ToolReply {
    let message = err.to_string();
    match err {
        TaskError::TooManyRunning | TaskError::ShareUsed { .. } => ToolReply::error(
            ErrorKind::TaskLimit,
            message,
            ErrorKind::TaskLimit.usual_next_step(),
        ),
        TaskError::UnknownTask { .. } => ToolReply::error(
            ErrorKind::UnknownTask,
            message,
            ErrorKind::UnknownTask.usual_next_step(),
        ),
        TaskError::BadCursor => ToolReply::error(
            ErrorKind::InvalidArguments,
            format!("cursor: {message}"),
            "omit cursor, or pass a nextCursor list_tasks returned",
        ),
        TaskError::BadLimit { .. } => ToolReply::error(
            ErrorKind::InvalidArguments,
            message,
            "pass a limit from 1 to 100, or omit it for 50",
        ),
        TaskError::RandomUnavailable => ToolReply::error(
            ErrorKind::RandomUnavailable,
            message,
            ErrorKind::RandomUnavailable.usual_next_step(),
        ),
        TaskError::NoInputRequested { .. } | TaskError::NoRuntime | TaskError::Store(_) => {
            ToolReply::error(
                ErrorKind::TaskStore,
                message,
                ErrorKind::TaskStore.usual_next_step(),
            )
        }
    }
}
