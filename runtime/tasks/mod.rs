//! Durable background tasks: a private, leased directory of task records
//! ([`TaskStore`]) and the process-wide runner that starts work, persists its progress and
//! final outcome, and answers get/cancel/list ([`TaskManager`]).
//!
//! This layer knows no protocol types. The server maps [`TaskError`] and [`TaskStoreError`]
//! onto its error kinds and renders [`TaskRecord`]s as MCP `Task` objects.
//!
//! Durability: a task's record is written (fsync'd) before its work starts; results survive
//! restarts and are kept for the retention period after their final update (removed at
//! start-up and periodically; forever when the retention is off); a task still working when
//! the process stopped is marked failed with [`UNKNOWN_OUTCOME_MESSAGE`] on the next open and
//! is never replayed. Every record read and write runs on tokio's blocking pool, never on the
//! runtime thread that answers requests (opening the store at start-up excepted).

mod error;
mod manager;
mod private_fs;
mod record;
mod store;
#[cfg(feature = "test-knobs")]
pub mod test_knobs;

pub use error::{TaskError, TaskStoreError};
pub use manager::{
    CancelAck, DEFAULT_PAGE_LIMIT, DEFAULT_RETENTION, MAX_PAGE_LIMIT, POLL_INTERVAL_MS, TaskHandle,
    TaskManager, TaskOutcome, TaskPage, TaskProgress, TaskSettings,
};
pub use record::{
    INTERNAL_ERROR_CODE, TaskProgressValue, TaskRecord, TaskState, TaskSummary,
    UNKNOWN_OUTCOME_MESSAGE,
};
pub use store::{ScopeInputs, TaskStore};
pub use tokio_util::sync::CancellationToken;

/// Largest serialized task record (16 MiB).
pub const MAX_RECORD_BYTES: usize = 16 * 1024 * 1024;

/// Tasks that may be working at once; the next start is refused.
pub const MAX_RUNNING_TASKS: usize = 4;
