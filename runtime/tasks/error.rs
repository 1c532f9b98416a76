//! Errors of the task store and the task manager. Each message names what went wrong, the
//! path or limit involved and what to do next; none ever contains the token.

use std::fmt;
use std::io;
use std::path::PathBuf;

use super::{MAX_RECORD_BYTES, MAX_RUNNING_TASKS};

/// Opening, reading or writing the task directory failed. Nothing is skipped silently: a
/// record that cannot be read is reported, never dropped from a listing.
#[derive(Debug)]
pub enum TaskStoreError {
    /// `SNOWLUMA_MCP_TASK_DIR` must be absolute so a changed working directory never points the
    /// server at a different history.
    NotAbsolute { dir: PathBuf },
    /// The path is a symlink, the wrong kind of file, owned by someone else or readable by
    /// group/other.
    NotPrivate { path: PathBuf, problem: String },
    /// Another live store (this process or another) holds the directory's lease.
    Locked { dir: PathBuf },
    /// The directory belongs to a different mode, endpoint or token.
    ScopeChanged { dir: PathBuf },
    /// A file in the directory is not a valid record (or scope record).
    Corrupt { path: PathBuf, reason: String },
    /// A record would exceed [`MAX_RECORD_BYTES`] once serialized.
    TooLarge { task_id: String, bytes: usize },
    /// An operating-system call failed.
    Io {
        doing: &'static str,
        path: PathBuf,
        source: io::Error,
    },
}

impl fmt::Display for TaskStoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotAbsolute { dir } => write!(
                f,
                "SNOWLUMA_MCP_TASK_DIR must be an absolute path, got {}; set it to an absolute \
                 path of a private directory",
                dir.display()
            ),
            Self::NotPrivate { path, problem } => write!(
                f,
                "task storage path {} is not private: {problem}",
                path.display()
            ),
            Self::Locked { dir } => write!(
                f,
                "task directory {} is already in use by another running snowluma-mcp (its \
                 lease is held); stop that server or give this one a different \
                 SNOWLUMA_MCP_TASK_DIR",
                dir.display()
            ),
            Self::ScopeChanged { dir } => write!(
                f,
                "task directory {} was created for a different mode, endpoint or token; \
                 choose a new private directory for this configuration and keep the old one \
                 for its history",
                dir.display()
            ),
            Self::Corrupt { path, reason } => write!(
                f,
                "task record {} is corrupt: {reason}; move the file out of the task directory \
                 (keep a copy) and restart",
                path.display()
            ),
            Self::TooLarge { task_id, bytes } => write!(
                f,
                "task {task_id}: the record would be {bytes} bytes, over the limit of \
                 {MAX_RECORD_BYTES} bytes (16 MiB) per task record"
            ),
            Self::Io {
                doing,
                path,
                source,
            } => write!(
                f,
                "task storage: could not {doing} {}: {source}; check that the directory \
                 exists, is writable by this user and the disk is not full",
                path.display()
            ),
        }
    }
}

impl std::error::Error for TaskStoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// A task operation was refused or failed.
#[derive(Debug)]
pub enum TaskError {
    /// [`MAX_RUNNING_TASKS`] tasks are already working.
    TooManyRunning,
    /// The principal already runs its share of the task slots
    /// (SNOWLUMA_MCP_PRINCIPAL_SHARE_PERCENT).
    ShareUsed {
        share: crate::config::principals::Share,
    },
    /// No task with this id exists in this directory.
    UnknownTask { id: String },
    /// `list` got a cursor it did not issue.
    BadCursor,
    /// `list` got a limit outside 1..=100.
    BadLimit { limit: u32 },
    /// `update` was called, but the task has no outstanding input request.
    NoInputRequested { id: String },
    /// `start` was called outside a tokio runtime (a wiring bug, reported instead of a panic).
    NoRuntime,
    /// The store failed underneath.
    Store(TaskStoreError),
    /// No task id could be made (the OS random source failed); nothing was started.
    RandomUnavailable,
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooManyRunning => write!(
                f,
                "at most {MAX_RUNNING_TASKS} background tasks can run at once; wait for one to \
                 finish (poll tasks/get) or cancel one, then start again"
            ),
            Self::ShareUsed { share } => write!(
                f,
                "this client already runs {} of the {MAX_RUNNING_TASKS} background tasks; wait \
                 for one to finish (poll tasks/get) or cancel one, then start again",
                share.describe(MAX_RUNNING_TASKS)
            ),
            Self::UnknownTask { id } => write!(
                f,
                "no task with id {id:?}; use list_tasks to see the known task ids"
            ),
            Self::BadCursor => write!(
                f,
                "cursor was not issued by list_tasks; omit it to start from the first page"
            ),
            Self::BadLimit { limit } => {
                write!(
                    f,
                    "limit must be between 1 and 100 (default 50), got {limit}"
                )
            }
            Self::NoInputRequested { id } => write!(
                f,
                "task {id} has no outstanding input request: background transfers never ask \
                 for input, so there is nothing to answer; poll tasks/get for its state or \
                 tasks/cancel to stop it"
            ),
            Self::NoRuntime => write!(
                f,
                "background tasks need a tokio runtime; start them from the server's runtime"
            ),
            Self::Store(err) => err.fmt(f),
            Self::RandomUnavailable => f.write_str(crate::ids::RandomUnavailable::MESSAGE),
        }
    }
}

impl std::error::Error for TaskError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Store(err) => Some(err),
            _ => None,
        }
    }
}

impl From<TaskStoreError> for TaskError {
    fn from(err: TaskStoreError) -> Self {
        Self::Store(err)
    }
}
