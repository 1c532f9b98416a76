//! Helpers for the task store and manager tests (tests/tasks_store.rs, tests/tasks_expiry.rs):
//! fresh private directories, opening with the test scope, and waiting for task states.

#![allow(dead_code)]

use std::future::pending;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use snowluma_mcp::tasks::{
    ScopeInputs, TaskManager, TaskOutcome, TaskRecord, TaskSettings, TaskStore, TaskStoreError,
};

pub const ENDPOINT: &str = "http://127.0.0.1:3000";
pub const TOKEN: &str = "token-under-test";

pub fn scope(token: &str) -> ScopeInputs<'_> {
    ScopeInputs {
        mode: "write",
        endpoint: ENDPOINT,
        token: Some(token),
    }
}

pub fn open(dir: &Path) -> Result<TaskStore, TaskStoreError> {
    TaskStore::open(dir, scope(TOKEN))
}

/// A manager with the shipped settings (seven days' retention).
pub fn manager(dir: &Path) -> Arc<TaskManager> {
    manager_with(dir, TaskSettings::default())
}

pub fn manager_with(dir: &Path, settings: TaskSettings) -> Arc<TaskManager> {
    TaskManager::new(open(dir).expect("open store"), settings).expect("index store")
}

pub fn fresh_dir() -> (tempfile::TempDir, PathBuf) {
    let parent = tempfile::tempdir().expect("tempdir");
    let dir = parent.path().join("task-home");
    (parent, dir)
}

/// Polls `condition` every 10 ms for up to 30 s (a bound against hangs, not a speed check).
pub async fn wait_for(what: &str, mut condition: impl FnMut() -> bool) {
    for _ in 0..3000 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for {what}");
}

/// Waits until the task is no longer working, then reads its whole record.
pub async fn wait_finished(manager: &TaskManager, id: &str) -> TaskRecord {
    wait_for("the task to finish", || {
        manager
            .summary(id)
            .is_some_and(|summary| summary.state.is_terminal())
    })
    .await;
    manager.get(id).await.expect("get finished task")
}

/// Drops the manager once finished work has let go of it (each finished task holds it briefly
/// while saving its outcome), so the lease is free for a reopen.
pub async fn release(manager: Arc<TaskManager>) {
    wait_for("finished work to release the manager", || {
        Arc::strong_count(&manager) == 1
    })
    .await;
}

/// Starts a task whose work never ends.
pub async fn start_pending(manager: &Arc<TaskManager>) -> String {
    manager
        .start("upload_file_stream", |_cancel, _progress| async {
            pending::<TaskOutcome>().await
        })
        .await
        .expect("start")
        .task_id
}

/// Starts a task that completes at once with `result`, and waits for its final record.
pub async fn start_finished(manager: &Arc<TaskManager>, result: serde_json::Value) -> String {
    let id = manager
        .start("download_file_stream", move |_c, _p| async move {
            TaskOutcome::finished(result, false)
        })
        .await
        .expect("start")
        .task_id;
    wait_finished(manager, &id).await;
    id
}
