//! The process-wide task runner: starts work on the tokio runtime after its record is durable,
//! persists throttled progress and the final outcome, and answers get, cancel, update and list.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use futures::FutureExt as _;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::error::{TaskError, TaskStoreError};
use super::record::{RECORD_VERSION, TaskProgressValue, TaskRecord, TaskState, TaskSummary, now};
use super::store::TaskStore;
use super::{MAX_RECORD_BYTES, MAX_RUNNING_TASKS};
use crate::ids;

/// What task handles advertise as `pollIntervalMs`. (`ttlMs` is always `null`: results never
/// expire.)
pub const POLL_INTERVAL_MS: u64 = 1000;
/// `list` page size when the caller gives none.
pub const DEFAULT_PAGE_LIMIT: u32 = 50;
/// Largest `list` page.
pub const MAX_PAGE_LIMIT: u32 = 100;

/// Progress reaches disk at most this often; the latest value is always kept in memory.
const PROGRESS_PERSIST_EVERY: Duration = Duration::from_secs(1);
const PANICKED_MESSAGE: &str = "remote outcome unknown: the transfer stopped on an internal \
     error (a bug in snowluma-mcp) before reporting its result; check SnowLuma before retrying";
const CURSOR_PREFIX: &str = "tasks-v1:";

/// Where running work reports progress. `total` is `None` when unknown.
pub trait TaskProgress: Send + Sync {
    fn update(&self, value: f64, total: Option<f64>);
}

/// How the work ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskOutcome {
    /// The final tool result JSON (a `CallToolResult` as the server renders it).
    pub result: Value,
    /// The tool result is an error (`isError: true`); the task is still `completed`.
    pub is_error: bool,
    /// The work stopped because its cancellation token fired; the task becomes `cancelled`.
    pub cancelled: bool,
}

impl TaskOutcome {
    /// The work ran to its end; `is_error` mirrors the tool result's `isError`.
    pub fn finished(result: Value, is_error: bool) -> Self {
        TaskOutcome {
            result,
            is_error,
            cancelled: false,
        }
    }

    /// The work honoured a cancellation; `result` says what is known (e.g. outcome unknown).
    pub fn cancelled(result: Value) -> Self {
        TaskOutcome {
            result,
            is_error: true,
            cancelled: true,
        }
    }
}

/// What `start` returns: enough for an MCP `CreateTaskResult`.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskHandle {
    pub task_id: String,
    pub state: TaskState,
    pub status_message: Option<String>,
    pub created_at: String,
    pub last_updated_at: String,
    pub poll_interval_ms: u64,
    /// Always `None` (no expiry); rendered as `ttlMs: null`.
    pub ttl_ms: Option<u64>,
}

/// What `cancel` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelAck {
    /// The work was asked to stop; poll for the final state (a completion may still win).
    Requested,
    /// The task had already ended in this state.
    AlreadyFinished(TaskState),
}

/// One page of `list`.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskPage {
    /// Newest first.
    pub tasks: Vec<TaskSummary>,
    /// Pass back to get the next page; `None` on the last page.
    pub next_cursor: Option<String>,
}

struct Running {
    cancel: CancellationToken,
    last_persisted: Option<Instant>,
}

#[derive(Default)]
struct Index {
    /// Every task's metadata by creation order; result bodies stay on disk.
    by_seq: BTreeMap<u64, TaskSummary>,
    seq_of: HashMap<String, u64>,
    running: HashMap<String, Running>,
    next_seq: u64,
}

/// Shared by every connection (wrap in `Arc`, as [`TaskManager::new`] does).
pub struct TaskManager {
    store: TaskStore,
    index: Mutex<Index>,
}

impl std::fmt::Debug for TaskManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskManager")
            .field("dir", &self.store.dir())
            .finish_non_exhaustive()
    }
}

impl TaskManager {
    /// Indexes every record of an opened store (already recovered by [`TaskStore::open`]).
    pub fn new(store: TaskStore) -> Result<Arc<TaskManager>, TaskStoreError> {
        let mut index = Index::default();
        for record in store.read_all()? {
            let summary = record.summary;
            index.next_seq = index.next_seq.max(summary.seq + 1);
            index.seq_of.insert(summary.id.clone(), summary.seq);
            index.by_seq.insert(summary.seq, summary);
        }
        Ok(Arc::new(TaskManager {
            store,
            index: Mutex::new(index),
        }))
    }

    /// The store underneath (its directory, the ids recovered at open).
    pub fn store(&self) -> &TaskStore {
        &self.store
    }

    fn lock(&self) -> MutexGuard<'_, Index> {
        // A panic elsewhere must not take task bookkeeping down with it.
        self.index
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Starts `action` in the background. The task's record is on disk before `spawn` is
    /// called; `spawn` gets the task's cancellation token and a progress sink, and its future
    /// runs on the current tokio runtime (so call this from inside one). Refused when
    /// [`MAX_RUNNING_TASKS`] are working.
    pub fn start<F, Fut>(self: &Arc<Self>, action: &str, spawn: F) -> Result<TaskHandle, TaskError>
    where
        F: FnOnce(CancellationToken, Box<dyn TaskProgress>) -> Fut,
        Fut: Future<Output = TaskOutcome> + Send + 'static,
    {
        // Checked before anything is written: without a runtime the work could never run.
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| TaskError::NoRuntime)?;
        let cancel = CancellationToken::new();
        let summary = {
            let mut index = self.lock();
            if index.running.len() >= MAX_RUNNING_TASKS {
                return Err(TaskError::TooManyRunning);
            }
            let stamp = now();
            let summary = TaskSummary {
                id: ids::random_hex::<16>().map_err(|_| TaskError::RandomUnavailable)?,
                seq: index.next_seq,
                action: action.to_owned(),
                created_at: stamp.clone(),
                updated_at: stamp,
                state: TaskState::Working,
                status_message: Some(format!("{action} is running")),
                progress: None,
            };
            self.store.write(&working_record(&summary))?;
            index.next_seq += 1;
            index.seq_of.insert(summary.id.clone(), summary.seq);
            index.by_seq.insert(summary.seq, summary.clone());
            index.running.insert(
                summary.id.clone(),
                Running {
                    cancel: cancel.clone(),
                    last_persisted: None,
                },
            );
            summary
        };
        let progress = Box::new(ProgressRecorder {
            manager: Arc::downgrade(self),
            id: summary.id.clone(),
        });
        let work = spawn(cancel, progress);
        // Weak: dropping the last manager (and so the lease) must not wait for running work.
        let manager = Arc::downgrade(self);
        let id = summary.id.clone();
        runtime.spawn(async move {
            // A panicking transfer must still end its task and free its slot.
            let outcome = AssertUnwindSafe(work).catch_unwind().await.ok();
            if let Some(manager) = manager.upgrade() {
                let _ = tokio::task::spawn_blocking(move || manager.finish(&id, outcome)).await;
            }
        });
        Ok(TaskHandle {
            task_id: summary.id,
            state: summary.state,
            status_message: summary.status_message,
            created_at: summary.created_at,
            last_updated_at: summary.updated_at,
            poll_interval_ms: POLL_INTERVAL_MS,
            ttl_ms: None,
        })
    }

    /// Records the outcome. Runs on a blocking thread: a result may be 16 MiB to fsync.
    /// `None`: the work panicked.
    fn finish(&self, id: &str, outcome: Option<TaskOutcome>) {
        let summary = {
            let mut index = self.lock();
            // From here on no progress write can land after the final record.
            index.running.remove(id);
            let Some(summary) = index.seq_of.get(id).and_then(|seq| index.by_seq.get(seq)) else {
                return;
            };
            summary.clone()
        };
        let Some(outcome) = outcome else {
            let failed = working_record(&summary).into_failed(PANICKED_MESSAGE, now());
            self.save_final(id, &summary, failed);
            return;
        };
        let mut record = working_record(&summary);
        record.summary.updated_at = now();
        record.summary.state = if outcome.cancelled {
            TaskState::Cancelled
        } else {
            TaskState::Completed
        };
        record.summary.status_message = Some(match (outcome.cancelled, outcome.is_error) {
            (true, _) => format!("{} was cancelled", summary.action),
            (false, false) => format!("{} finished", summary.action),
            (false, true) => format!("{} finished with an error result", summary.action),
        });
        record.result = Some(outcome.result);
        record.result_is_error = outcome.is_error;
        let saved = match self.store.write(&record) {
            Err(TaskStoreError::TooLarge { bytes, .. }) => {
                let message = format!(
                    "the work finished, but its result ({bytes} bytes as a record) exceeds the \
                     {MAX_RECORD_BYTES}-byte (16 MiB) limit per task record, so it was not \
                     saved; the remote effect may have happened: check SnowLuma before \
                     retrying, and ask for a smaller result"
                );
                let failed = working_record(&summary).into_failed(&message, now());
                self.store.write(&failed).map(|()| failed)
            }
            other => other.map(|()| record),
        };
        self.settle(id, &summary, saved);
    }

    /// Writes a failure record for work that panicked, then settles it.
    fn save_final(&self, id: &str, summary: &TaskSummary, failed: TaskRecord) {
        let saved = self.store.write(&failed).map(|()| failed);
        self.settle(id, summary, saved);
    }

    /// Puts the final state (or the failure to save it) into the index.
    fn settle(&self, id: &str, summary: &TaskSummary, saved: Result<TaskRecord, TaskStoreError>) {
        let final_summary = match saved {
            Ok(record) => record.summary,
            Err(err) => {
                // The disk still says working, so a restart reports an unknown outcome; this
                // process reports the write failure itself.
                tracing::error!(task = id, error = %err, "could not save a task's final state");
                let message =
                    format!("the work ended but its final state could not be saved: {err}");
                working_record(summary).into_failed(&message, now()).summary
            }
        };
        let mut index = self.lock();
        index.by_seq.insert(final_summary.seq, final_summary);
    }

    fn record_progress(&self, id: &str, value: f64, total: Option<f64>) {
        // JSON has no NaN or infinity; such a record would not read back.
        if !value.is_finite() || total.is_some_and(|t| !t.is_finite()) {
            return;
        }
        let mut index = self.lock();
        let Index {
            by_seq,
            seq_of,
            running,
            ..
        } = &mut *index;
        let (Some(run), Some(summary)) = (
            running.get_mut(id),
            seq_of.get(id).and_then(|seq| by_seq.get_mut(seq)),
        ) else {
            return;
        };
        summary.progress = Some(TaskProgressValue { value, total });
        summary.updated_at = now();
        let due = run
            .last_persisted
            .is_none_or(|at| at.elapsed() >= PROGRESS_PERSIST_EVERY);
        if due {
            // Written under the lock so it can never land after the final record.
            match self.store.write(&working_record(summary)) {
                Ok(()) => run.last_persisted = Some(Instant::now()),
                Err(err) => tracing::warn!(task = id, error = %err, "could not save progress"),
            }
        }
    }

    /// The task's current state; finished tasks include their saved result or error.
    pub fn get(&self, id: &str) -> Result<TaskRecord, TaskError> {
        let summary = {
            let index = self.lock();
            index
                .seq_of
                .get(id)
                .and_then(|seq| index.by_seq.get(seq))
                .cloned()
        };
        let summary = summary.ok_or_else(|| TaskError::UnknownTask { id: id.to_owned() })?;
        if !summary.state.is_terminal() {
            return Ok(working_record(&summary));
        }
        match self.store.read(id)? {
            Some(record) if record.summary.state.is_terminal() => Ok(record),
            // The final write failed: memory holds that failure, the disk an older state.
            Some(_) => Ok(working_record(&summary).into_failed(
                summary
                    .status_message
                    .as_deref()
                    .unwrap_or("the final state was not saved"),
                summary.updated_at.clone(),
            )),
            None => Err(TaskStoreError::Corrupt {
                path: self.store.record_path(id),
                reason: "the record of this finished task has disappeared from disk".into(),
            }
            .into()),
        }
    }

    /// Asks the work to stop. Cooperative: poll `get` for the final state, which is
    /// `cancelled` only if the work honoured the request.
    pub fn cancel(&self, id: &str) -> Result<CancelAck, TaskError> {
        let mut index = self.lock();
        if let Some(run) = index.running.get(id) {
            run.cancel.cancel();
            if let Some(summary) = index
                .seq_of
                .get(id)
                .copied()
                .and_then(|seq| index.by_seq.get_mut(&seq))
            {
                summary.status_message = Some("cancellation requested".into());
            }
            return Ok(CancelAck::Requested);
        }
        match index.seq_of.get(id).and_then(|seq| index.by_seq.get(seq)) {
            // The work has returned and its outcome is being saved: the completion won the
            // race, which the caller learns by polling, as with any cancel.
            Some(summary) if summary.state == TaskState::Working => Ok(CancelAck::Requested),
            Some(summary) => Ok(CancelAck::AlreadyFinished(summary.state)),
            None => Err(TaskError::UnknownTask { id: id.to_owned() }),
        }
    }

    /// Answers input requests. Background transfers never ask for input, so a known task
    /// gets [`TaskError::NoInputRequested`] and an unknown one [`TaskError::UnknownTask`].
    pub fn update(&self, id: &str) -> Result<(), TaskError> {
        if self.lock().seq_of.contains_key(id) {
            Err(TaskError::NoInputRequested { id: id.to_owned() })
        } else {
            Err(TaskError::UnknownTask { id: id.to_owned() })
        }
    }

    /// Task metadata, newest first, `limit` (1..=100, default 50) at a time.
    pub fn list(&self, cursor: Option<&str>, limit: Option<u32>) -> Result<TaskPage, TaskError> {
        let limit = limit.unwrap_or(DEFAULT_PAGE_LIMIT);
        if !(1..=MAX_PAGE_LIMIT).contains(&limit) {
            return Err(TaskError::BadLimit { limit });
        }
        let before = cursor.map(decode_cursor).transpose()?;
        let index = self.lock();
        let mut newer_first = index
            .by_seq
            .range(..before.unwrap_or(u64::MAX))
            .rev()
            .map(|(_, summary)| summary);
        let tasks: Vec<TaskSummary> = newer_first.by_ref().take(limit as usize).cloned().collect();
        let next_cursor = match (newer_first.next(), tasks.last()) {
            (Some(_), Some(last)) => Some(encode_cursor(last.seq)),
            _ => None,
        };
        Ok(TaskPage { tasks, next_cursor })
    }

    /// Tasks currently working.
    pub fn running_count(&self) -> usize {
        self.lock().running.len()
    }
}

fn working_record(summary: &TaskSummary) -> TaskRecord {
    TaskRecord {
        version: RECORD_VERSION,
        summary: summary.clone(),
        result: None,
        result_is_error: false,
        error: None,
    }
}

fn encode_cursor(seq: u64) -> String {
    URL_SAFE_NO_PAD.encode(format!("{CURSOR_PREFIX}{seq}"))
}

fn decode_cursor(cursor: &str) -> Result<u64, TaskError> {
    URL_SAFE_NO_PAD
        .decode(cursor)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|text| text.strip_prefix(CURSOR_PREFIX)?.parse().ok())
        .ok_or(TaskError::BadCursor)
}

struct ProgressRecorder {
    manager: Weak<TaskManager>,
    id: String,
}

impl TaskProgress for ProgressRecorder {
    fn update(&self, value: f64, total: Option<f64>) {
        if let Some(manager) = self.manager.upgrade() {
            manager.record_progress(&self.id, value, total);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_foreign_ones_are_refused() {
        assert_eq!(decode_cursor(&encode_cursor(41)).unwrap(), 41);
        assert!(matches!(decode_cursor("41"), Err(TaskError::BadCursor)));
        assert!(matches!(decode_cursor("!!"), Err(TaskError::BadCursor)));
        let wrong_prefix = URL_SAFE_NO_PAD.encode("other:3");
        assert!(matches!(
            decode_cursor(&wrong_prefix),
            Err(TaskError::BadCursor)
        ));
    }
}
