//! Helpers for the end-to-end task tests over stdio (tests/tasks_stdio.rs,
//! tests/tasks_slots.rs): private directories, a write-mode server with the shipped limits,
//! and the task requests.

#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use crate::fake_snowluma::FakeSnowLuma;
use crate::raw_client::{RawServer, modern_meta, structured};

pub const TASKS_EXT: &str = "io.modelcontextprotocol/tasks";

pub struct Dirs {
    pub root: PathBuf,
    pub downloads: PathBuf,
    pub tasks: PathBuf,
}

impl Dirs {
    pub fn new(name: &str) -> Dirs {
        let root =
            std::env::temp_dir().join(format!("snowluma-mcp-tasks-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let downloads = root.join("downloads");
        std::fs::create_dir_all(&downloads).unwrap();
        // The server refuses a download directory that other users can enter.
        std::fs::set_permissions(
            &downloads,
            <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o700),
        )
        .unwrap();
        Dirs {
            tasks: root.join("tasks"),
            root,
            downloads,
        }
    }
}

impl Drop for Dirs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// A write-mode server on `endpoint` with tasks in `dirs`, and the shipped limits (two
/// streams at once) unless `extra` is about a setting.
pub fn spawn_on(endpoint: &str, dirs: &Dirs, extra: &[(&str, &str)]) -> RawServer {
    let downloads = dirs.downloads.to_string_lossy().to_string();
    let tasks = dirs.tasks.to_string_lossy().to_string();
    let mut env = vec![
        ("SNOWLUMA_MCP_MODE", "write"),
        ("SNOWLUMA_MCP_ENDPOINT", endpoint),
        ("SNOWLUMA_MCP_DOWNLOAD_DIR", downloads.as_str()),
        ("SNOWLUMA_MCP_TASK_DIR", tasks.as_str()),
    ];
    env.extend_from_slice(extra);
    RawServer::spawn(&env)
}

pub fn spawn(fake: &FakeSnowLuma, dirs: &Dirs, extra: &[(&str, &str)]) -> RawServer {
    spawn_on(&fake.url, dirs, extra)
}

pub fn tasks_meta() -> Value {
    modern_meta(json!({ "extensions": { TASKS_EXT: {} } }))
}

pub fn start_request(id: i64, args: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": "invoke_action_background", "arguments": args, "_meta": tasks_meta() } })
}

pub async fn start(server: &mut RawServer, id: i64, args: Value) -> Value {
    server.send(&start_request(id, args)).await;
    server.wait_for_id(&json!(id)).await
}

/// Starts a task and returns its id.
pub async fn start_id(server: &mut RawServer, id: i64, args: Value) -> String {
    let created = start(server, id, args).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    created["result"]["taskId"].as_str().unwrap().to_string()
}

pub async fn get(server: &mut RawServer, id: i64, task_id: &str) -> Value {
    server
        .request(
            id,
            "tasks/get",
            json!({ "taskId": task_id, "_meta": tasks_meta() }),
        )
        .await
}

/// Polls tasks/get until the task leaves `working` (bounded: 600 polls, 30 s at least).
pub async fn poll_until_done(server: &mut RawServer, first_id: i64, task_id: &str) -> Value {
    for attempt in 0..600 {
        let response = get(server, first_id + attempt, task_id).await;
        if response["result"]["status"] != "working" {
            return response;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {task_id} still working after 600 polls");
}

pub async fn list_tasks(server: &mut RawServer, id: i64, args: Value) -> Value {
    let response = server
        .request(
            id,
            "tools/call",
            json!({ "name": "list_tasks", "arguments": args, "_meta": tasks_meta() }),
        )
        .await;
    structured(&response)
}

pub async fn tool_names(server: &mut RawServer, id: i64, params: Value) -> Vec<String> {
    let listing = server.request(id, "tools/list", params).await;
    listing["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

/// A foreground download through invoke_action, answered when it ends.
pub async fn foreground_download(server: &mut RawServer, id: i64, file: &str) -> Value {
    server
        .request(
            id,
            "tools/call",
            json!({ "name": "invoke_action", "_meta": modern_meta(json!({})), "arguments":
                    { "action": "download_file_stream", "params": { "file": file } } }),
        )
        .await
}

/// Proves nothing was replayed after a restart: a marker download run to its end through the
/// restarted server is the only download it asked for, after `before` earlier ones. A replay
/// would have been started while the store was opened, before the first request was read.
pub async fn assert_no_replay(server: &mut RawServer, fake: &FakeSnowLuma, id: i64, before: usize) {
    let marker = fake.add_generated_file("replay-marker.bin", 1000, 9);
    let answer = foreground_download(server, id, &marker).await;
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let asked: Vec<Value> = fake
        .requests_for("download_file_stream")
        .iter()
        .map(|r| r.params.clone().unwrap_or_default()["file"].clone())
        .collect();
    assert_eq!(
        asked.len(),
        before + 1,
        "a replay reached SnowLuma: {asked:?}"
    );
    assert_eq!(asked.last(), Some(&json!(marker)), "{asked:?}");
}

/// The status message of a task waiting for a transfer slot contains this.
pub const WAITING: &str = "waiting for a transfer slot";

/// Polls the tasks until exactly `expected` of them report `working` with the waiting status
/// message (bounded: 600 rounds, 30 s at least); returns the waiting tasks' ids.
pub async fn wait_for_waiting(
    server: &mut RawServer,
    first_id: i64,
    ids: &[String],
    expected: usize,
) -> Vec<String> {
    let mut request = first_id;
    for _ in 0..600 {
        let mut waiting = Vec::new();
        for id in ids {
            let task = get(server, request, id).await;
            request += 1;
            assert_eq!(task["result"]["status"], "working", "{task}");
            if task["result"]["statusMessage"]
                .as_str()
                .is_some_and(|m| m.contains(WAITING))
            {
                waiting.push(id.clone());
            }
        }
        if waiting.len() == expected {
            return waiting;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{expected} tasks never reported `{WAITING}`");
}
