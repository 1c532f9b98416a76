//! Task records expire: finished records older than the retention are removed at start-up and
//! by the periodic sweep and then answer unknown_task, working tasks never expire, 0 keeps
//! records forever; start-up reads each record's summary, not its result body.

#[path = "support/task_store.rs"]
mod task_store;

use std::fs;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use snowluma_mcp::config::Config;
use snowluma_mcp::tasks::{TaskError, TaskSettings, TaskState, TaskStoreError};
use task_store::{
    fresh_dir, manager, manager_with, release, start_finished, start_pending, wait_for,
};

fn record_path(dir: &Path, id: &str) -> std::path::PathBuf {
    dir.join("tasks").join(format!("{id}.json"))
}

/// Rewrites a stored record's final update time, as if it had ended `age` ago. The field order
/// (version, summary, result) is kept, as the server writes it.
fn age_record(dir: &Path, id: &str, age: Duration) {
    let path = record_path(dir, id);
    let mut record: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    let then = chrono::Utc::now() - chrono::TimeDelta::from_std(age).unwrap();
    record["summary"]["updated_at"] =
        json!(then.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
    fs::write(&path, serde_json::to_vec(&record).unwrap()).unwrap();
}

const DAY: Duration = Duration::from_secs(24 * 3600);

#[tokio::test]
async fn records_past_the_retention_are_removed_at_start_up_and_are_unknown() {
    let (_keep, dir) = fresh_dir();
    let (old, recent) = {
        let manager = manager(&dir);
        let old = start_finished(&manager, json!({ "n": 1 })).await;
        let recent = start_finished(&manager, json!({ "n": 2 })).await;
        release(manager).await;
        (old, recent)
    };
    // The shipped retention is seven days.
    age_record(&dir, &old, 8 * DAY);
    age_record(&dir, &recent, 6 * DAY);

    let manager = manager(&dir);
    assert!(!record_path(&dir, &old).exists(), "expired record removed");
    assert!(matches!(
        manager.get(&old).await,
        Err(TaskError::UnknownTask { .. })
    ));
    assert!(matches!(
        manager.cancel(&old),
        Err(TaskError::UnknownTask { .. })
    ));
    let listed: Vec<String> = manager
        .list(None, None)
        .unwrap()
        .tasks
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(listed, vec![recent.clone()]);
    let kept = manager.get(&recent).await.unwrap();
    assert_eq!(kept.result, Some(json!({ "n": 2 })));

    // A task that was working when the server stopped is failed at open, as of now: it is
    // kept for a whole retention from then, however old it was.
    let working = start_pending(&manager).await;
    release(manager).await;
    age_record(&dir, &working, 30 * DAY);
    let manager = self::manager(&dir);
    assert_eq!(manager.store().recovered(), std::slice::from_ref(&working));
    assert_eq!(
        manager.get(&working).await.unwrap().summary.state,
        TaskState::Failed
    );
}

#[tokio::test]
async fn a_retention_of_zero_keeps_records_forever_and_advertises_no_ttl() {
    let (_keep, dir) = fresh_dir();
    let forever = TaskSettings {
        retention: None,
        ..TaskSettings::default()
    };
    let id = {
        let manager = manager_with(&dir, forever.clone());
        let handle = manager
            .start("download_file_stream", |_c, _p| async {
                snowluma_mcp::tasks::TaskOutcome::finished(json!(1), false)
            })
            .await
            .unwrap();
        assert_eq!(handle.ttl_ms, None);
        assert_eq!(manager.ttl_ms(), None);
        task_store::wait_finished(&manager, &handle.task_id).await;
        release(manager).await;
        handle.task_id
    };
    age_record(&dir, &id, 3650 * DAY);
    let manager = manager_with(&dir, forever);
    assert_eq!(manager.get(&id).await.unwrap().result, Some(json!(1)));

    // The setting: 0 turns expiry off, the default is seven days, and a value past ten years
    // is refused by name.
    let parse = |extra: &[&str]| {
        let mut args = vec!["snowluma-mcp"];
        args.extend_from_slice(extra);
        Config::try_from_args(args)
    };
    assert_eq!(
        parse(&[]).unwrap().task_retention,
        Some(Duration::from_secs(604_800))
    );
    assert_eq!(
        parse(&["--task-retention-secs", "0"])
            .unwrap()
            .task_retention,
        None
    );
    let err = parse(&["--task-retention-secs", "999999999999"]).expect_err("refused");
    assert!(
        err.to_string().contains("SNOWLUMA_MCP_TASK_RETENTION_SECS"),
        "{err}"
    );
}

#[tokio::test]
async fn the_periodic_sweep_removes_records_that_expire_while_the_server_runs() {
    let (_keep, dir) = fresh_dir();
    // A setting under test: one second, so the sweep (every second then) runs soon.
    let manager = manager_with(
        &dir,
        TaskSettings {
            retention: Some(Duration::from_secs(1)),
            ..TaskSettings::default()
        },
    );
    let done = start_finished(&manager, json!("done")).await;
    let working = start_pending(&manager).await;
    let path = record_path(&dir, &done);
    wait_for("the sweep to remove the finished record", || !path.exists()).await;
    assert!(matches!(
        manager.get(&done).await,
        Err(TaskError::UnknownTask { .. })
    ));
    // Working tasks never expire, however long they run.
    assert!(record_path(&dir, &working).exists());
    assert_eq!(
        manager.get(&working).await.unwrap().summary.state,
        TaskState::Working
    );
    let listed = manager.list(None, None).unwrap().tasks;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, working);
}

#[tokio::test]
async fn start_up_reads_summaries_and_leaves_result_bodies_on_disk() {
    let (_keep, dir) = fresh_dir();
    let id = {
        let manager = manager(&dir);
        let id = start_finished(&manager, json!({ "data": "x".repeat(200_000) })).await;
        release(manager).await;
        id
    };
    // Break the result body far past the summary: start-up does not read that far, so the
    // server starts and lists the task; reading the task itself reports the corruption.
    let path = record_path(&dir, &id);
    let mut bytes = fs::read(&path).unwrap();
    let body = bytes.len() - 1000;
    bytes[body..].fill(b'!');
    fs::write(&path, &bytes).unwrap();

    let manager = manager(&dir);
    let listed = manager.list(None, None).unwrap().tasks;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].state, TaskState::Completed);
    let err = manager.get(&id).await.unwrap_err();
    let TaskError::Store(TaskStoreError::Corrupt { path: named, .. }) = &err else {
        panic!("expected a corrupt record, got {err}");
    };
    assert_eq!(named, &path);

    // A head that is not a summary falls back to reading the whole record, which names the
    // problem at start-up.
    release(manager).await;
    fs::write(&path, b"{\"version\":1,\"summary\":{\"id\":\"nope\"}}").unwrap();
    let err = task_store::open(&dir).unwrap_err();
    assert!(matches!(err, TaskStoreError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains(&id), "{err}");
}
