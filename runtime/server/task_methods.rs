//! The tasks extension on the wire: a started task's handle as `CreateTaskResult`, and the
//! `tasks/get`, `tasks/cancel` and `tasks/update` methods over the task manager. The tools
//! that start and list tasks are `tools/task_tools.rs`.

use rmcp::ErrorData;
use rmcp::model::{
    ClientCapabilities as McpClientCapabilities, CreateTaskResult, DetailedTask, ErrorCode,
    GetTaskResult, JsonObject, Task, TaskPayload, TaskStatus,
};
use serde_json::{Value, json};

use crate::outcome::ErrorKind;
use crate::tasks::{CancelAck, TaskError, TaskHandle, TaskManager, TaskRecord, TaskState};

/// The answer to a call that started a background task.
pub fn created(handle: TaskHandle) -> CreateTaskResult {
    let mut task = Task::new(
        handle.task_id,
        status_of(handle.state),
        handle.created_at,
        handle.last_updated_at,
    )
    .with_poll_interval_ms(handle.poll_interval_ms);
    task.status_message = handle.status_message;
    task.ttl_ms = handle.ttl_ms;
    CreateTaskResult::new(task)
}

fn status_of(state: TaskState) -> TaskStatus {
    match state {
        TaskState::Working => TaskStatus::Working,
        TaskState::Completed => TaskStatus::Completed,
        TaskState::Failed => TaskStatus::Failed,
        TaskState::Cancelled => TaskStatus::Cancelled,
    }
}

/// The JSON-RPC error a tasks/* method answers with; `data.kind` names the error kind.
fn task_error_data(err: TaskError) -> ErrorData {
    let message = err.to_string();
    let data = |kind: ErrorKind| Some(json!({ "kind": kind.as_str() }));
    match err {
        // The extension: an unknown taskId is -32602.
        TaskError::UnknownTask { .. } => {
            ErrorData::invalid_params(message, data(ErrorKind::UnknownTask))
        }
        TaskError::BadCursor | TaskError::BadLimit { .. } | TaskError::NoInputRequested { .. } => {
            ErrorData::invalid_params(message, data(ErrorKind::InvalidArguments))
        }
        TaskError::TooManyRunning | TaskError::ShareUsed { .. } => {
            ErrorData::internal_error(message, data(ErrorKind::TaskLimit))
        }
        TaskError::NoRuntime | TaskError::Store(_) => {
            ErrorData::internal_error(message, data(ErrorKind::TaskStore))
        }
        TaskError::RandomUnavailable => {
            ErrorData::internal_error(message, data(ErrorKind::RandomUnavailable))
        }
    }
}

/// A stored record as the extension's `DetailedTask`: completed tasks carry the saved
/// `CallToolResult` (a failed OneBot answer is still a completed task), failed ones their
/// JSON-RPC error.
fn detailed(record: TaskRecord, ttl_ms: Option<u64>) -> DetailedTask {
    let summary = record.summary;
    let mut task = Task::new(
        summary.id,
        status_of(summary.state),
        summary.created_at,
        summary.updated_at,
    )
    .with_poll_interval_ms(crate::tasks::POLL_INTERVAL_MS);
    task.status_message = summary.status_message;
    task.ttl_ms = ttl_ms;
    let object = |value: Option<Value>, fallback: Value| match value {
        Some(Value::Object(map)) => map,
        _ => match fallback {
            Value::Object(map) => map,
            _ => JsonObject::new(),
        },
    };
    let payload = match summary.state {
        TaskState::Working => TaskPayload::Working,
        TaskState::Completed => TaskPayload::Completed {
            result: object(
                record.result,
                json!({ "content": [], "isError": record.result_is_error }),
            ),
        },
        TaskState::Failed => TaskPayload::Failed {
            error: object(
                record.error,
                json!({ "code": crate::tasks::INTERNAL_ERROR_CODE, "message": "the task failed" }),
            ),
        },
        TaskState::Cancelled => TaskPayload::Cancelled,
    };
    DetailedTask::new(task, payload)
}

/// Only 2026-07-28 requests reach tasks; a legacy session (even one that declared the
/// extension at initialize) gets "method not found", as if tasks were not served.
pub fn refuse_legacy(method: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("{method} is served to 2026-07-28 requests only"),
        None,
    )
}

/// The `-32021` a modern request without the tasks extension gets for a task tool.
pub fn missing_tasks_capability() -> ErrorData {
    ErrorData::missing_required_client_capability(
        McpClientCapabilities::builder().enable_tasks().build(),
    )
}

/// Reads a finished task's record on the blocking pool.
pub async fn get(manager: &TaskManager, owner: &str, id: &str) -> Result<GetTaskResult, ErrorData> {
    let record = manager.get_as(owner, id).await.map_err(task_error_data)?;
    Ok(GetTaskResult::new(detailed(record, manager.ttl_ms())))
}

/// Cooperative: the acknowledgement only says the request was taken; the final state may
/// still be `completed` when the transfer finished first.
pub fn cancel(manager: &TaskManager, owner: &str, id: &str) -> Result<(), ErrorData> {
    match manager.cancel_as(owner, id).map_err(task_error_data)? {
        CancelAck::Requested | CancelAck::AlreadyFinished(_) => Ok(()),
    }
}

/// `tasks/update` carries answers to a task's outstanding input requests. The 2026-07-28
/// tasks extension makes it an acknowledgement that ignores unknown or already answered keys,
/// and background transfers never ask for input, so for a known task every key is unknown:
/// acknowledged, nothing delivered, the task unchanged. An unknown task is -32602.
pub fn update(manager: &TaskManager, owner: &str, id: &str) -> Result<(), ErrorData> {
    match manager.update_as(owner, id) {
        Err(TaskError::NoInputRequested { .. }) | Ok(()) => Ok(()),
        Err(err) => Err(task_error_data(err)),
    }
}
