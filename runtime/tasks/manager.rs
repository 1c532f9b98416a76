//! The process-wide task runner: starts work on the tokio runtime after its record is durable,
//! persists throttled progress and the final outcome; expiry.rs forgets old records and answers.rs
//! answers get, cancel, update and list. Record I/O runs on the blocking pool, never under the
//! index lock.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use futures::FutureExt as _;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::error::{TaskError, TaskStoreError};
use super::record::{TaskProgressValue, TaskRecord, TaskState, TaskSummary, now};
use super::store::TaskStore;
use super::{MAX_RECORD_BYTES, MAX_RUNNING_TASKS};
use crate::config::Shutdown;
use crate::config::principals::{DEFAULT_PRINCIPAL, Share, principal_of};
use crate::ids;

mod answers;
mod expiry;

use expiry::expired;

/// What task handles advertise as `pollIntervalMs`.
pub const POLL_INTERVAL_MS: u64 = 1000;
/// `list` page size when the caller gives none.
pub const DEFAULT_PAGE_LIMIT: u32 = 50;
/// Largest `list` page.
pub const MAX_PAGE_LIMIT: u32 = 100;
/// How long finished records are kept unless configured otherwise (seven days).
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// Progress reaches disk at most this often; the latest value is always kept in memory.
const PROGRESS_PERSIST_EVERY: Duration = Duration::from_secs(1);
/// Expired records are looked for this often (or at half the retention, when that is
/// shorter, but never more than once a second).
pub(super) const SWEEP_EVERY: Duration = Duration::from_secs(600);
const PANICKED_MESSAGE: &str = "remote outcome unknown: the transfer stopped on an internal \
     error (a bug in snowluma-mcp) before reporting its result; check SnowLuma before retrying";

/// Where running work reports progress and what it is doing.
pub trait TaskProgress: Send + Sync {
    /// The work moved on; `total` is `None` when unknown.
    fn update(&self, value: f64, total: Option<f64>);
    /// What the task's status message says while it waits, e.g. for a transfer slot; `None`
    /// puts back the usual "<action> is running". Kept in memory only: a restart reports an
    /// unknown outcome for a working task whatever it was doing.
    fn status(&self, message: Option<&str>);
}

/// How the manager keeps and stops tasks.
#[derive(Debug, Clone)]
pub struct TaskSettings {
    /// Finished records are removed this long after their final update; `None` keeps them.
    pub retention: Option<Duration>,
    /// The process's shutdown: every task's cancellation token is a child of its token, and
    /// each task holds one of its guards until its final record is written, so a SIGTERM
    /// cancels the work and main's drain waits for the record.
    pub shutdown: Shutdown,
}

impl Default for TaskSettings {
    fn default() -> Self {
        TaskSettings {
            retention: Some(DEFAULT_RETENTION),
            shutdown: Shutdown::default(),
        }
    }
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
    /// The retention in milliseconds (how long the result is kept after the task ends);
    /// `None` (`ttlMs: null`) when records are kept forever.
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

/// Orders one task's record writes: a progress write and the final write take it in turn,
/// and once `finished` is set no progress write touches the record again.
#[derive(Default)]
struct RecordWrites {
    finished: Mutex<bool>,
}

impl RecordWrites {
    fn lock(&self) -> MutexGuard<'_, bool> {
        self.finished
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

struct Running {
    cancel: CancellationToken,
    writes: Arc<RecordWrites>,
    last_persisted: Option<Instant>,
}

#[derive(Default)]
struct Index {
    /// Every known task's metadata by creation order; result bodies stay on disk. A task is
    /// added once its first record is durable.
    by_seq: BTreeMap<u64, TaskSummary>,
    seq_of: HashMap<String, u64>,
    /// Working tasks, including ones whose first record is still being written (they hold
    /// their slot from the start).
    running: HashMap<String, Running>,
    next_seq: u64,
}

impl Index {
    fn summary(&self, id: &str) -> Option<&TaskSummary> {
        self.seq_of.get(id).and_then(|seq| self.by_seq.get(seq))
    }

    fn summary_mut(&mut self, id: &str) -> Option<&mut TaskSummary> {
        let seq = *self.seq_of.get(id)?;
        self.by_seq.get_mut(&seq)
    }

    fn forget(&mut self, id: &str) {
        if let Some(seq) = self.seq_of.remove(id) {
            self.by_seq.remove(&seq);
        }
    }
}

/// Shared by every connection (wrap in `Arc`, as [`TaskManager::new`] does).
pub struct TaskManager {
    /// Shared with the blocking-pool jobs that read and write records.
    store: Arc<TaskStore>,
    index: Mutex<Index>,
    settings: TaskSettings,
    /// The periodic expiry sweep runs once a runtime is at hand (see `ensure_sweeper`).
    sweeping: AtomicBool,
    /// Each principal's share of the running slots, when several principals use the server.
    share: std::sync::OnceLock<Share>,
}

impl std::fmt::Debug for TaskManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskManager")
            .field("dir", &self.store.dir())
            .finish_non_exhaustive()
    }
}

impl TaskManager {
    /// Indexes the summaries an opened store read (already recovered by
    /// [`TaskStore::open`]), removing records that expired while the server was stopped, and
    /// starts the periodic expiry sweep when called on a tokio runtime.
    pub fn new(
        mut store: TaskStore,
        settings: TaskSettings,
    ) -> Result<Arc<TaskManager>, TaskStoreError> {
        let mut index = Index::default();
        let now = chrono::Utc::now();
        for summary in store.take_loaded() {
            index.next_seq = index.next_seq.max(summary.seq + 1);
            if expired(settings.retention, &summary, now) {
                store.remove(&summary.id)?;
                continue;
            }
            index.seq_of.insert(summary.id.clone(), summary.seq);
            index.by_seq.insert(summary.seq, summary);
        }
        let manager = Arc::new(TaskManager {
            store: Arc::new(store),
            index: Mutex::new(index),
            settings,
            sweeping: AtomicBool::new(false),
            share: std::sync::OnceLock::new(),
        });
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            manager.ensure_sweeper(&runtime);
        }
        Ok(manager)
    }

    /// Limits each principal to `percent` % of the running slots (rounded up), so one cannot
    /// take them all. Set once, at start-up, when several principals use the server.
    pub fn set_principal_share(&self, share: Share) {
        let _ = self.share.set(share);
    }

    /// The store underneath (its directory, the ids recovered at open).
    pub fn store(&self) -> &TaskStore {
        &self.store
    }

    /// What task handles advertise as `ttlMs`: the retention in milliseconds, `None` when
    /// records are kept forever.
    pub fn ttl_ms(&self) -> Option<u64> {
        self.settings
            .retention
            .map(|retention| u64::try_from(retention.as_millis()).unwrap_or(u64::MAX))
    }

    fn lock(&self) -> MutexGuard<'_, Index> {
        // A panic elsewhere must not take task bookkeeping down with it.
        self.index
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Starts `action` in the background. The task's record is on disk (written on the
    /// blocking pool) before `spawn` is called; `spawn` gets the task's cancellation token and
    /// a progress sink, and its future runs on the current tokio runtime (so call this from
    /// inside one). Refused when [`MAX_RUNNING_TASKS`] are working. Once begun, a start
    /// completes even if the caller stops waiting for it: the task then shows in `list`.
    pub async fn start<F, Fut>(
        self: &Arc<Self>,
        action: &str,
        spawn: F,
    ) -> Result<TaskHandle, TaskError>
    where
        F: FnOnce(CancellationToken, Box<dyn TaskProgress>) -> Fut + Send + 'static,
        Fut: Future<Output = TaskOutcome> + Send + 'static,
    {
        self.start_for(DEFAULT_PRINCIPAL, action, spawn).await
    }

    /// [`Self::start`] for `owner`: only that principal sees the task afterwards, and it may
    /// hold at most its share of the running slots.
    pub async fn start_for<F, Fut>(
        self: &Arc<Self>,
        owner: &str,
        action: &str,
        spawn: F,
    ) -> Result<TaskHandle, TaskError>
    where
        F: FnOnce(CancellationToken, Box<dyn TaskProgress>) -> Fut + Send + 'static,
        Fut: Future<Output = TaskOutcome> + Send + 'static,
    {
        // Checked before anything is written: without a runtime the work could never run.
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| TaskError::NoRuntime)?;
        self.ensure_sweeper(&runtime);
        let cancel = self.settings.shutdown.token.child_token();
        let writes = Arc::new(RecordWrites::default());
        let summary = {
            let mut index = self.lock();
            if index.running.len() >= MAX_RUNNING_TASKS {
                return Err(TaskError::TooManyRunning);
            }
            if let Some(share) = self.share.get().copied() {
                let principal = principal_of(owner);
                let mine = index
                    .running
                    .keys()
                    .filter_map(|id| index.summary(id))
                    .filter(|s| {
                        principal_of(s.owner.as_deref().unwrap_or(DEFAULT_PRINCIPAL)) == principal
                    })
                    .count();
                if mine >= share.of(MAX_RUNNING_TASKS) {
                    return Err(TaskError::ShareUsed { share });
                }
            }
            let stamp = now();
            let summary = TaskSummary {
                id: ids::random_hex::<16>().map_err(|_| TaskError::RandomUnavailable)?,
                seq: index.next_seq,
                action: action.to_owned(),
                created_at: stamp.clone(),
                updated_at: stamp,
                state: TaskState::Working,
                status_message: Some(running_message(action)),
                progress: None,
                owner: Some(owner.to_owned()).filter(|o| o != DEFAULT_PRINCIPAL),
            };
            // The slot and the sequence number are taken now; a failed first write gives the
            // slot back (a skipped number is harmless: pages go by order, not by count).
            index.next_seq += 1;
            index.running.insert(
                summary.id.clone(),
                Running {
                    cancel: cancel.clone(),
                    writes: Arc::clone(&writes),
                    last_persisted: None,
                },
            );
            summary
        };
        let begin = Arc::clone(self).begin(summary, cancel, writes, spawn);
        match runtime.spawn(begin).await {
            Ok(started) => started,
            Err(join) if join.is_panic() => std::panic::resume_unwind(join.into_panic()),
            Err(_) => Err(TaskError::NoRuntime),
        }
    }

    /// The rest of `start`, as its own tokio task: writes the first record, then runs the
    /// work and saves its outcome.
    async fn begin<F, Fut>(
        self: Arc<Self>,
        summary: TaskSummary,
        cancel: CancellationToken,
        writes: Arc<RecordWrites>,
        spawn: F,
    ) -> Result<TaskHandle, TaskError>
    where
        F: FnOnce(CancellationToken, Box<dyn TaskProgress>) -> Fut,
        Fut: Future<Output = TaskOutcome> + Send + 'static,
    {
        // Held from here until the final record is written: main's drain waits for it. (None
        // when shutdown has begun: the work's token is then cancelled already and it ends at
        // once.)
        let draining = self.settings.shutdown.enter().await;
        let id = summary.id.clone();
        let first = TaskRecord::working(&summary);
        if let Err(err) = self.on_disk(move |store| store.write(&first)).await {
            self.lock().running.remove(&id);
            return Err(err.into());
        }
        {
            let mut index = self.lock();
            index.seq_of.insert(id.clone(), summary.seq);
            index.by_seq.insert(summary.seq, summary.clone());
        }
        let progress = Box::new(ProgressRecorder {
            manager: Arc::downgrade(&self),
            id: id.clone(),
        });
        let work = spawn(cancel, progress);
        // Weak: dropping the last manager (and so the lease) must not wait for running work.
        let manager = Arc::downgrade(&self);
        tokio::spawn(async move {
            // A panicking transfer must still end its task and free its slot.
            let outcome = AssertUnwindSafe(work).catch_unwind().await.ok();
            if let Some(manager) = manager.upgrade() {
                let _ = tokio::task::spawn_blocking(move || manager.finish(&id, outcome, &writes))
                    .await;
            }
            drop(draining);
        });
        Ok(TaskHandle {
            task_id: summary.id,
            state: summary.state,
            status_message: summary.status_message,
            created_at: summary.created_at,
            last_updated_at: summary.updated_at,
            poll_interval_ms: POLL_INTERVAL_MS,
            ttl_ms: self.ttl_ms(),
        })
    }

    /// Runs store I/O on the blocking pool.
    async fn on_disk<T, F>(&self, job: F) -> Result<T, TaskStoreError>
    where
        T: Send + 'static,
        F: FnOnce(&TaskStore) -> Result<T, TaskStoreError> + Send + 'static,
    {
        let store = Arc::clone(&self.store);
        match tokio::task::spawn_blocking(move || job(&store)).await {
            Ok(done) => done,
            Err(join) if join.is_panic() => std::panic::resume_unwind(join.into_panic()),
            Err(join) => Err(TaskStoreError::Io {
                doing: "finish an operation on",
                path: self.store.dir().to_path_buf(),
                source: std::io::Error::other(join.to_string()),
            }),
        }
    }

    /// Records the outcome. Runs on a blocking thread: a result may be 16 MiB to fsync.
    /// `None`: the work panicked.
    fn finish(&self, id: &str, outcome: Option<TaskOutcome>, writes: &RecordWrites) {
        let summary = {
            let mut index = self.lock();
            // The slot is free from here on; the task still reads as working until settled.
            index.running.remove(id);
            let Some(summary) = index.summary(id) else {
                return;
            };
            summary.clone()
        };
        // From here on no progress write can land after the final record.
        let mut finished = writes.lock();
        *finished = true;
        let Some(outcome) = outcome else {
            let failed = TaskRecord::working(&summary).into_failed(PANICKED_MESSAGE, now());
            let saved = self.store.write(&failed).map(|()| failed);
            self.settle(id, &summary, saved);
            return;
        };
        let mut record = TaskRecord::working(&summary);
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
                let failed = TaskRecord::working(&summary).into_failed(&message, now());
                self.store.write(&failed).map(|()| failed)
            }
            other => other.map(|()| record),
        };
        self.settle(id, &summary, saved);
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
                TaskRecord::working(summary)
                    .into_failed(&message, now())
                    .summary
            }
        };
        let mut index = self.lock();
        index.by_seq.insert(final_summary.seq, final_summary);
    }

    fn record_progress(self: &Arc<Self>, id: &str, value: f64, total: Option<f64>) {
        // JSON has no NaN or infinity; such a record would not read back.
        if !value.is_finite() || total.is_some_and(|t| !t.is_finite()) {
            return;
        }
        let writes = {
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
            if !due {
                return;
            }
            run.last_persisted = Some(Instant::now());
            Arc::clone(&run.writes)
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let manager = Arc::clone(self);
        let id = id.to_owned();
        // Off the runtime thread, and without the index lock during the write: the task's own
        // write lock orders it against the final record.
        runtime.spawn_blocking(move || {
            let finished = writes.lock();
            if *finished {
                return;
            }
            // The latest state, whichever of several queued progress writes runs last.
            let Some(summary) = manager.lock().summary(&id).cloned() else {
                return;
            };
            if let Err(err) = manager.store.write(&TaskRecord::working(&summary)) {
                tracing::warn!(task = id.as_str(), error = %err, "could not save progress");
            }
            drop(finished);
        });
    }

    fn record_status(&self, id: &str, message: Option<&str>) {
        let mut index = self.lock();
        if !index.running.contains_key(id) {
            return;
        }
        if let Some(summary) = index.summary_mut(id) {
            summary.status_message = Some(match message {
                Some(message) => message.to_owned(),
                None => running_message(&summary.action),
            });
            summary.updated_at = now();
        }
    }
}

fn running_message(action: &str) -> String {
    format!("{action} is running")
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

    fn status(&self, message: Option<&str>) {
        if let Some(manager) = self.manager.upgrade() {
            manager.record_status(&self.id, message);
        }
    }
}
