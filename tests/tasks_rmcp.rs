//! Durable background transfers driven by rmcp's own client over real stdio: a 2026-07-28
//! client declaring the tasks extension starts a download with invoke_action_background,
//! polls `tasks/get` until the saved result arrives (checked against the advertised
//! outputSchema), sees `tasks/update` refused, and races `tasks/cancel` against completion
//! (either end is valid; every later poll and list_tasks agree). A legacy rmcp client is
//! offered no task tools.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/raw_client.rs"]
mod raw_client;
#[path = "support/rmcp_client.rs"]
mod rmcp_client;
#[path = "support/stream_helpers.rs"]
mod stream_helpers;

use std::time::Duration;

use fake_snowluma::{FakeSnowLuma, Fault};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientConfig, GetTaskParams,
    UpdateTaskParams,
};
use rmcp::service::RunningService;
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Value, json};
use stream_helpers::{Dirs, pseudo_random, sha256};
use tokio::process::Command;

/// A client that declares the tasks extension.
struct TasksClient;

impl ClientHandler for TasksClient {
    fn get_info(&self) -> ClientConfig {
        serde_json::from_value(json!({
            "protocolVersion": "2026-07-28",
            "capabilities": { "extensions": { "io.modelcontextprotocol/tasks": {} } },
            "clientInfo": { "name": "rmcp-tasks-test", "version": "1.0" }
        }))
        .expect("client info")
    }
}

fn command(fake: &FakeSnowLuma, dirs: &Dirs, extra: &[(&str, &str)]) -> Command {
    let mut command = Command::new(raw_client::binary());
    command
        .env("SNOWLUMA_MCP_MODE", "write")
        .env("SNOWLUMA_MCP_ENDPOINT", &fake.url)
        .env("SNOWLUMA_MCP_DOWNLOAD_DIR", &dirs.downloads)
        .env("SNOWLUMA_MCP_TASK_DIR", dirs.root.join("tasks"))
        .env_remove("SNOWLUMA_MCP_TOKEN")
        .env_remove("SNOWLUMA_MCP_UPLOAD_ROOT")
        .env("SNOWLUMA_MCP_LOG", "warn");
    for (key, value) in extra {
        command.env(key, value);
    }
    command
}

async fn tool_names<H: ClientHandler>(client: &RunningService<RoleClient, H>) -> Vec<String> {
    client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect()
}

async fn output_schema(client: &RunningService<RoleClient, TasksClient>, tool: &str) -> Value {
    let tools = client.list_all_tools().await.unwrap();
    let schema = tools
        .iter()
        .find(|t| t.name == tool)
        .and_then(|t| t.output_schema.clone())
        .unwrap_or_else(|| panic!("{tool} listed with an outputSchema"));
    Value::Object((*schema).clone())
}

/// Starts a background download; returns the task handle as JSON.
async fn start(client: &RunningService<RoleClient, TasksClient>, file: &str) -> Value {
    let mut params = CallToolRequestParams::new("invoke_action_background");
    params.arguments = json!({ "action": "download_file_stream", "params": { "file": file, "chunk_size": 16384 } })
        .as_object()
        .cloned();
    match client.call_tool_once(params).await.expect("tools/call") {
        CallToolResponse::Task(created) => serde_json::to_value(created).unwrap(),
        other => panic!("expected a task handle, got {other:?}"),
    }
}

async fn get(client: &RunningService<RoleClient, TasksClient>, id: &str) -> Value {
    let result = client
        .get_task(GetTaskParams::new(id))
        .await
        .expect("tasks/get");
    serde_json::to_value(result).unwrap()
}

async fn poll_until_done(client: &RunningService<RoleClient, TasksClient>, id: &str) -> Value {
    for _ in 0..400 {
        let task = get(client, id).await;
        if task["status"] != "working" {
            return task;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {id} still working after 400 polls");
}

async fn list_tasks(client: &RunningService<RoleClient, TasksClient>) -> Value {
    rmcp_client::call_listed(client, "list_tasks", json!({ "limit": 100 }))
        .await
        .1
}

#[tokio::test]
async fn rmcp_client_starts_polls_and_reads_a_saved_result() {
    let dirs = Dirs::new("rmcp-tasks");
    let fake = FakeSnowLuma::start(None).await;
    let bytes = pseudo_random(200_000, 21);
    let file = fake.add_file("task.bin", bytes.clone());
    let client = rmcp_client::connect(TasksClient, command(&fake, &dirs, &[]), true).await;
    let names = tool_names(&client).await;
    assert!(names.contains(&"invoke_action_background".to_string()));
    assert!(names.contains(&"list_tasks".to_string()));

    let created = start(&client, &file).await;
    assert_eq!(created["resultType"], "task", "{created}");
    assert_eq!(created["pollIntervalMs"], 1000, "{created}");
    // The shipped retention, seven days, in milliseconds: rmcp's client reads it as a number.
    assert_eq!(created["ttlMs"], 604_800_000, "{created}");
    let id = created["taskId"].as_str().unwrap().to_string();

    let done = poll_until_done(&client, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    let result = &done["result"];
    assert_eq!(result["isError"], false, "{done}");
    let saved = &result["structuredContent"];
    raw_client::assert_valid(
        "invoke_action_background",
        &output_schema(&client, "invoke_action_background").await,
        saved,
    );
    assert_eq!(saved["diagnostics"]["outcome"], "success", "{saved}");
    assert_eq!(saved["result"]["sha256"], sha256(&bytes));
    let path = saved["result"]["path"].as_str().unwrap();
    assert_eq!(std::fs::read(path).unwrap(), bytes);
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(&text, saved);

    // tasks/update is acknowledged (the extension ignores keys it does not know) and
    // changes nothing: a transfer never asks for input.
    let update: UpdateTaskParams = serde_json::from_value(
        json!({ "taskId": id, "inputResponses": { "nothing-asked": { "action": "decline" } } }),
    )
    .unwrap();
    client
        .update_task(update)
        .await
        .expect("tasks/update of a known task is acknowledged");
    assert_eq!(get(&client, &id).await["status"], "completed");
    let listed = list_tasks(&client).await;
    let entry = &listed["result"]["tasks"][0];
    assert_eq!(entry["taskId"], id.as_str(), "{listed}");
    assert_eq!(entry["status"], "completed", "{listed}");
    client.cancel().await.unwrap();

    // A legacy rmcp client is offered no task tools.
    let legacy = rmcp_client::connect((), command(&fake, &dirs, &[]), false).await;
    let names = tool_names(&legacy).await;
    assert!(
        !names
            .iter()
            .any(|n| n == "invoke_action_background" || n == "list_tasks")
    );
    legacy.cancel().await.unwrap();
}

#[tokio::test]
async fn cancel_racing_completion_ends_in_one_consistent_state() {
    let dirs = Dirs::new("rmcp-tasks-race");
    let fake = FakeSnowLuma::start(None).await;
    let bytes = pseudo_random(64 * 1024, 22);
    let file = fake.add_file("race.bin", bytes.clone());
    // Each chunk write takes a moment, so a cancel lands before, during or after completion.
    let client = rmcp_client::connect(
        TasksClient,
        command(&fake, &dirs, &[("SNOWLUMA_MCP_TEST_WRITE_DELAY_MS", "20")]),
        true,
    )
    .await;
    let mut ends = Vec::new();
    for (round, wait_ms) in [0u64, 30, 60, 200].into_iter().enumerate() {
        let id = start(&client, &file).await["taskId"]
            .as_str()
            .unwrap()
            .to_string();
        tokio::time::sleep(Duration::from_millis(wait_ms)).await;
        let cancel: CancelTaskParams = serde_json::from_value(json!({ "taskId": id })).unwrap();
        client
            .cancel_task(cancel)
            .await
            .expect("cancel is acknowledged");
        let done = poll_until_done(&client, &id).await;
        let status = done["status"].as_str().unwrap().to_string();
        match status.as_str() {
            "completed" => {
                // The completion won: the file is whole and the result says so.
                let saved = &done["result"]["structuredContent"];
                assert_eq!(saved["diagnostics"]["outcome"], "success", "{done}");
                let path = saved["result"]["path"].as_str().unwrap();
                assert_eq!(std::fs::read(path).unwrap(), bytes, "round {round}");
            }
            "cancelled" => {}
            other => panic!("round {round}: unexpected end {other}: {done}"),
        }
        // Later polls and the listing tell the same story.
        for _ in 0..3 {
            assert_eq!(get(&client, &id).await["status"], status.as_str());
        }
        let listed = list_tasks(&client).await;
        let entry = listed["result"]["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["taskId"] == id.as_str())
            .cloned()
            .unwrap();
        assert_eq!(entry["status"], status.as_str(), "{listed}");
        ends.push(status);
    }
    eprintln!("cancel race ends: {ends:?}");
    // No partial file survives whichever way a round ended.
    assert!(
        dirs.downloaded()
            .iter()
            .all(|p| !p.to_string_lossy().ends_with(".part")),
        "{:?}",
        dirs.downloaded()
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_result_over_the_16_mib_record_limit_fails_the_task_with_the_limit_named() {
    let dirs = Dirs::new("rmcp-tasks-limit");
    let fake = FakeSnowLuma::start(None).await;
    // Frames of 1.4 MB each: the collection keeps about 7 MB of them, and the saved tool
    // result (structuredContent plus its text copy, escaped twice) is far over 16 MiB.
    fake.set_fault(Some("test_download_stream"), Fault::BigFrames);
    let client = rmcp_client::connect(TasksClient, command(&fake, &dirs, &[]), true).await;
    let mut params = CallToolRequestParams::new("invoke_action_background");
    params.arguments = json!({ "action": "test_download_stream" })
        .as_object()
        .cloned();
    let id = match client.call_tool_once(params).await.expect("tools/call") {
        CallToolResponse::Task(created) => created.task.task_id,
        other => panic!("expected a task handle, got {other:?}"),
    };
    let done = poll_until_done(&client, &id).await;
    assert_eq!(
        done["status"],
        "failed",
        "{}",
        &done.to_string()[..500.min(done.to_string().len())]
    );
    let message = done["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("16 MiB"), "{message}");
    assert!(message.contains("exceeds"), "{message}");
    let listed = list_tasks(&client).await;
    assert_eq!(listed["result"]["tasks"][0]["status"], "failed", "{listed}");
    client.cancel().await.unwrap();

    // The record on disk is valid: a restarted server reports the same failure.
    let client = rmcp_client::connect(TasksClient, command(&fake, &dirs, &[]), true).await;
    let again = get(&client, &id).await;
    assert_eq!(again["status"], "failed");
    assert_eq!(again["error"]["message"], message.as_str());
    client.cancel().await.unwrap();
    for entry in std::fs::read_dir(dirs.root.join("tasks"))
        .unwrap()
        .flatten()
    {
        let len = entry.metadata().unwrap().len();
        assert!(len <= 16 * 1024 * 1024, "{:?} is {len} bytes", entry.path());
    }
}
