//! Durable background transfers end to end: the built binary over stdio (raw JSON lines)
//! against the fake SnowLuma. Who is offered the task tools, the start -> poll -> result
//! exchange, restarts after a kill or SIGTERM, the lease, corrupt records, a changed configuration,
//! cancellation, the limit of four running tasks and list_tasks pagination.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/raw_client.rs"]
mod raw_client;
#[path = "support/task_stdio.rs"]
mod task_stdio;

use std::os::unix::fs::PermissionsExt;

use fake_snowluma::{FakeSnowLuma, Fault};
use raw_client::{RawServer, assert_valid, modern_meta, structured, wait_until};
use serde_json::{Value, json};
use snowluma_mcp::tasks::test_knobs::TASK_WRITE_HOLD_VAR;
use task_stdio::{
    Dirs, TASKS_EXT, assert_no_replay, get, list_tasks, poll_until_done, spawn, start, start_id,
    tasks_meta, tool_names, wait_for_waiting,
};

async fn output_schema(server: &mut RawServer, id: i64, tool: &str) -> Value {
    let listing = server
        .request(id, "tools/list", json!({ "_meta": tasks_meta() }))
        .await;
    listing["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == tool)
        .unwrap()["outputSchema"]
        .clone()
}

#[tokio::test]
async fn only_modern_clients_declaring_tasks_see_and_reach_them() {
    let fake = FakeSnowLuma::start(None).await;
    let dirs = Dirs::new("offer");
    let mut server = spawn(&fake, &dirs, &[]);

    let discover = server
        .request(
            1,
            "server/discover",
            json!({ "_meta": modern_meta(json!({})) }),
        )
        .await;
    assert_eq!(
        discover["result"]["capabilities"]["extensions"][TASKS_EXT],
        json!({})
    );

    let with = tool_names(&mut server, 2, json!({ "_meta": tasks_meta() })).await;
    assert!(with.contains(&"invoke_action_background".to_string()));
    assert!(with.contains(&"list_tasks".to_string()));
    let without = tool_names(&mut server, 3, json!({ "_meta": modern_meta(json!({})) })).await;
    assert!(
        !without
            .iter()
            .any(|n| n.contains("task") || n.ends_with("_background"))
    );

    // A modern call without the extension: -32021 naming it.
    let refused = server
        .request(
            4,
            "tools/call",
            json!({ "name": "list_tasks", "arguments": {}, "_meta": modern_meta(json!({})) }),
        )
        .await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(
        refused["error"]["data"]["requiredCapabilities"]["extensions"][TASKS_EXT],
        json!({})
    );
    let refused = server
        .request(
            5,
            "tasks/get",
            json!({ "taskId": "00", "_meta": modern_meta(json!({})) }),
        )
        .await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");

    // The obsolete 2025-11-25 methods are not served.
    for (id, method) in [(6, "tasks/list"), (7, "tasks/result")] {
        let answer = server
            .request(id, method, json!({ "taskId": "00", "_meta": tasks_meta() }))
            .await;
        assert_eq!(answer["error"]["code"], -32601, "{method}: {answer}");
    }
    // An unknown task id is -32602.
    let unknown = get(&mut server, 8, "0123456789abcdef0123456789abcdef").await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert_eq!(unknown["error"]["data"]["kind"], "unknown_task");

    // A non-stream action is refused before anything is written.
    let ordinary = start(&mut server, 9, json!({ "action": "get_status" })).await;
    let body = structured(&ordinary);
    assert_eq!(ordinary["result"]["isError"], true);
    assert_eq!(body["diagnostics"]["kind"], "invalid_arguments");
    assert!(
        body["diagnostics"]["message"]
            .as_str()
            .unwrap()
            .contains("only runs stream actions")
    );
    assert!(
        list_tasks(&mut server, 10, json!({})).await["result"]["tasks"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    server.finish().await;

    // Legacy sessions never see the task tools, even declaring the extension at initialize.
    let mut legacy = spawn(&fake, &dirs, &[]);
    legacy
        .request(
            1,
            "initialize",
            json!({ "protocolVersion": "2025-11-25", "capabilities": { "extensions": { TASKS_EXT: {} } },
                    "clientInfo": { "name": "legacy", "version": "1" } }),
        )
        .await;
    legacy
        .send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
        .await;
    let names = tool_names(&mut legacy, 2, json!({})).await;
    assert!(!names.contains(&"invoke_action_background".to_string()));
    let call = legacy
        .request(
            3,
            "tools/call",
            json!({ "name": "list_tasks", "arguments": {} }),
        )
        .await;
    assert_eq!(call["error"]["code"], -32602, "{call}");
    let get = legacy
        .request(4, "tasks/get", json!({ "taskId": "00" }))
        .await;
    assert_eq!(get["error"]["code"], -32601, "{get}");
    legacy.finish().await;
}

#[tokio::test]
async fn a_background_download_is_started_polled_and_its_result_saved() {
    let fake = FakeSnowLuma::start(None).await;
    let file = fake.add_generated_file("big.bin", 300_000, 7);
    let dirs = Dirs::new("result");
    let mut server = spawn(&fake, &dirs, &[]);

    let created = start(
        &mut server,
        1,
        json!({ "action": "download_file_stream", "params": { "file": file, "chunk_size": 65536 } }),
    )
    .await;
    let handle = &created["result"];
    assert_eq!(handle["resultType"], "task", "{created}");
    assert_eq!(handle["status"], "working");
    assert_eq!(handle["pollIntervalMs"], 1000);
    // The shipped retention (SNOWLUMA_MCP_TASK_RETENTION_SECS, seven days) in milliseconds.
    assert_eq!(handle["ttlMs"], 604_800_000, "{created}");
    let task_id = handle["taskId"].as_str().unwrap().to_string();

    // The record is durable before the handle was sent: private directory, private file.
    let record = dirs.tasks.join("tasks").join(format!("{task_id}.json"));
    let mode = std::fs::metadata(&record).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let dir_mode = std::fs::metadata(&dirs.tasks).unwrap().permissions().mode();
    assert_eq!(dir_mode & 0o777, 0o700);

    let done = poll_until_done(&mut server, 100, &task_id).await;
    let task = &done["result"];
    assert_eq!(task["status"], "completed", "{done}");
    assert_eq!(task["resultType"], "complete");
    assert_eq!(task["result"]["isError"], false);
    let saved = &task["result"]["structuredContent"];
    assert_eq!(saved["result"]["size"], 300_000);
    assert_eq!(saved["diagnostics"]["outcome"], "success");
    let schema = output_schema(&mut server, 500, "invoke_action_background").await;
    assert_valid("invoke_action_background", &schema, saved);
    let path = saved["result"]["path"].as_str().unwrap();
    assert_eq!(std::fs::metadata(path).unwrap().len(), 300_000);

    // A stream SnowLuma ends with its error frame is a completed task holding a failure.
    fake.set_fault(Some("download_file_stream"), Fault::ErrorFrame);
    let created = start(
        &mut server,
        600,
        json!({ "action": "download_file_stream", "params": { "file": file } }),
    )
    .await;
    let failing = created["result"]["taskId"].as_str().unwrap().to_string();
    let done = poll_until_done(&mut server, 700, &failing).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    let saved = &done["result"]["result"]["structuredContent"];
    assert_eq!(saved["diagnostics"]["kind"], "stream_failed");
    assert_valid("invoke_action_background", &schema, saved);

    // list_tasks: metadata only, newest first.
    let listed = list_tasks(&mut server, 900, json!({})).await;
    let tasks = listed["result"]["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 2);
    assert_eq!(tasks[0]["taskId"], failing.as_str());
    assert_eq!(tasks[1]["taskId"], task_id.as_str());
    assert!(tasks[1].get("result").is_none());
    assert!(listed["result"]["nextCursor"].is_null());
    server.finish().await;
}

#[tokio::test]
async fn a_killed_server_reports_the_running_transfer_failed_and_never_replays_it() {
    let fake = FakeSnowLuma::start(None).await;
    let file = fake.add_generated_file("stall.bin", 200_000, 3);
    fake.set_fault(Some("download_file_stream"), Fault::StallBody);
    let dirs = Dirs::new("restart");
    let mut server = spawn(&fake, &dirs, &[]);
    let created = start(
        &mut server,
        1,
        json!({ "action": "download_file_stream", "params": { "file": file } }),
    )
    .await;
    let task_id = created["result"]["taskId"].as_str().unwrap().to_string();
    wait_until(raw_client::WAIT, || {
        !fake.requests_for("download_file_stream").is_empty()
    })
    .await;
    assert_eq!(
        get(&mut server, 2, &task_id).await["result"]["status"],
        "working"
    );
    server.kill().await;

    fake.clear_faults();
    let mut server = spawn(&fake, &dirs, &[]);
    let after = get(&mut server, 1, &task_id).await;
    let task = &after["result"];
    assert_eq!(task["status"], "failed", "{after}");
    assert_eq!(task["error"]["code"], -32603);
    assert!(
        task["error"]["message"]
            .as_str()
            .unwrap()
            .contains("remote outcome unknown")
    );
    assert_no_replay(&mut server, &fake, 2, 1).await;
    server.finish().await;
}

#[tokio::test]
async fn sigterm_cancels_background_transfers_and_saves_their_final_state_before_exiting() {
    let fake = FakeSnowLuma::start(None).await;
    let file = fake.add_generated_file("term.bin", 200_000, 4);
    fake.set_fault(Some("download_file_stream"), Fault::StallBody);
    let dirs = Dirs::new("sigterm");
    // The test-only slow disk (see below).
    let hold = dirs.root.join("hold");
    let held = dirs.root.join("hold.waiting");
    let hold_var = hold.to_string_lossy().to_string();
    let mut server = spawn(&fake, &dirs, &[(TASK_WRITE_HOLD_VAR, hold_var.as_str())]);
    let args = json!({ "action": "download_file_stream", "params": { "file": file } });
    // Two transfers hold both slots (the shipped SNOWLUMA_MCP_MAX_STREAMS=2); the third task
    // waits for one.
    let mut ids = Vec::new();
    for id in 1..=3 {
        ids.push(start_id(&mut server, id, args.clone()).await);
    }
    wait_until(raw_client::WAIT, || {
        fake.requests_for("download_file_stream").len() == 2
    })
    .await;
    assert_eq!(fake.requests_for("download_file_stream").len(), 2);
    wait_for_waiting(&mut server, 10, &ids, 1).await;

    // The disk stalls as the signal arrives, so the final records are still being written
    // when the transfers have stopped: the exit must wait for them (within its drain bound).
    std::fs::write(&hold, b"").unwrap();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    wait_until(raw_client::WAIT, || held.exists()).await;
    assert!(held.exists(), "no final record was written");
    std::fs::remove_file(&hold).unwrap();
    let (_, stderr) = server.exited().await;
    assert!(stderr.contains("SIGTERM"), "{stderr}");
    assert!(!stderr.contains("did not finish cleaning up"), "{stderr}");
    let leftovers: Vec<_> = std::fs::read_dir(&dirs.downloads)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".part"))
        .collect();
    assert!(leftovers.is_empty(), "partial file removed: {leftovers:?}");

    // Each task's own token was cancelled and its final record written before the exit: the
    // restarted server reads `cancelled`, not an unknown outcome, and replays nothing.
    fake.clear_faults();
    let mut server = spawn(&fake, &dirs, &[]);
    for (n, id) in ids.iter().enumerate() {
        let after = get(&mut server, 20 + n as i64, id).await;
        assert_eq!(after["result"]["status"], "cancelled", "{after}");
    }
    assert_no_replay(&mut server, &fake, 30, 2).await;
    server.finish().await;
}

#[tokio::test]
async fn the_directory_lease_a_changed_configuration_and_corrupt_records_stop_start_up() {
    let fake = FakeSnowLuma::start(Some("secret-one")).await;
    let dirs = Dirs::new("lease");
    let mut first = spawn(&fake, &dirs, &[("SNOWLUMA_MCP_TOKEN", "secret-one")]);
    // The first server has opened the directory once it answers.
    tool_names(&mut first, 1, json!({ "_meta": tasks_meta() })).await;

    let second = spawn(&fake, &dirs, &[("SNOWLUMA_MCP_TOKEN", "secret-one")]);
    let (code, stderr) = second.finish().await;
    assert_ne!(code, Some(0));
    assert!(stderr.contains("already in use"), "{stderr}");
    first.finish().await;

    let changed = spawn(&fake, &dirs, &[("SNOWLUMA_MCP_TOKEN", "secret-two")]);
    let (code, stderr) = changed.finish().await;
    assert_ne!(code, Some(0));
    assert!(
        stderr.contains("different mode, endpoint or token"),
        "{stderr}"
    );
    assert!(!stderr.contains("secret-"), "the token leaked: {stderr}");

    let corrupt = dirs
        .tasks
        .join("tasks")
        .join("0123456789abcdef0123456789abcdef.json");
    std::fs::write(&corrupt, b"{ not a record").unwrap();
    std::fs::set_permissions(&corrupt, std::fs::Permissions::from_mode(0o600)).unwrap();
    let broken = spawn(&fake, &dirs, &[("SNOWLUMA_MCP_TOKEN", "secret-one")]);
    let (code, stderr) = broken.finish().await;
    assert_ne!(code, Some(0));
    assert!(stderr.contains("corrupt"), "{stderr}");
    assert!(
        stderr.contains("0123456789abcdef0123456789abcdef.json"),
        "{stderr}"
    );

    let relative = RawServer::spawn(&[
        ("SNOWLUMA_MCP_MODE", "write"),
        ("SNOWLUMA_MCP_ENDPOINT", fake.url.as_str()),
        ("SNOWLUMA_MCP_TASK_DIR", "relative/tasks"),
    ]);
    let (code, stderr) = relative.finish().await;
    assert_ne!(code, Some(0));
    assert!(
        stderr.contains("SNOWLUMA_MCP_TASK_DIR must be an absolute path"),
        "{stderr}"
    );
}

#[tokio::test]
async fn four_tasks_run_at_once_cancel_is_cooperative_and_lists_page() {
    let fake = FakeSnowLuma::start(None).await;
    let file = fake.add_generated_file("slow.bin", 200_000, 5);
    fake.set_fault(Some("download_file_stream"), Fault::StallBody);
    let dirs = Dirs::new("limit");
    let mut server = spawn(&fake, &dirs, &[]);
    let args = json!({ "action": "download_file_stream", "params": { "file": file } });
    let mut ids = Vec::new();
    for id in 1..=4 {
        let created = start(&mut server, id, args.clone()).await;
        assert_eq!(created["result"]["resultType"], "task", "{created}");
        ids.push(created["result"]["taskId"].as_str().unwrap().to_string());
    }
    let fifth = start(&mut server, 5, args.clone()).await;
    assert_eq!(fifth["result"]["isError"], true, "{fifth}");
    let body = structured(&fifth);
    assert_eq!(body["diagnostics"]["kind"], "task_limit");
    assert!(
        body["diagnostics"]["message"]
            .as_str()
            .unwrap()
            .contains("at most 4")
    );

    // Cancel: an acknowledgement, then the task ends cancelled (the stall never completes).
    let ack = server
        .request(
            6,
            "tasks/cancel",
            json!({ "taskId": ids[0], "_meta": tasks_meta() }),
        )
        .await;
    assert_eq!(ack["result"], json!({ "resultType": "complete" }), "{ack}");
    let done = poll_until_done(&mut server, 100, &ids[0]).await;
    assert_eq!(done["result"]["status"], "cancelled", "{done}");
    // A second cancel of a finished task is still acknowledged; the state stays.
    let again = server
        .request(
            300,
            "tasks/cancel",
            json!({ "taskId": ids[0], "_meta": tasks_meta() }),
        )
        .await;
    assert_eq!(again["result"]["resultType"], "complete");
    assert_eq!(
        get(&mut server, 301, &ids[0]).await["result"]["status"],
        "cancelled"
    );
    // tasks/update has nothing to answer; unknown ids are -32602.
    let update = server
        .request(
            302,
            "tasks/update",
            json!({ "taskId": "ffffffffffffffffffffffffffffffff", "inputResponses": {}, "_meta": tasks_meta() }),
        )
        .await;
    assert_eq!(update["error"]["code"], -32602, "{update}");
    assert_eq!(update["error"]["data"]["kind"], "unknown_task", "{update}");
    // A known task never asked for input: the extension acknowledges an update and ignores
    // keys it does not know, and the task is unchanged.
    let update = server
        .request(
            304,
            "tasks/update",
            json!({ "taskId": ids[0], "inputResponses": { "anything": { "action": "accept", "content": {} } }, "_meta": tasks_meta() }),
        )
        .await;
    assert_eq!(
        update["result"],
        json!({ "resultType": "complete" }),
        "{update}"
    );
    assert_eq!(
        get(&mut server, 305, &ids[0]).await["result"]["status"],
        "cancelled"
    );

    // A slot is free again.
    let created = start(&mut server, 303, args.clone()).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    ids.push(created["result"]["taskId"].as_str().unwrap().to_string());

    // Five tasks, two per page, newest first.
    let mut seen = Vec::new();
    let mut cursor = Value::Null;
    for page in 0..3 {
        let mut args = json!({ "limit": 2 });
        if !cursor.is_null() {
            args["cursor"] = cursor.clone();
        }
        let listed = list_tasks(&mut server, 400 + page, args).await;
        for task in listed["result"]["tasks"].as_array().unwrap() {
            seen.push(task["taskId"].as_str().unwrap().to_string());
        }
        cursor = listed["result"]["nextCursor"].clone();
        assert_eq!(cursor.is_null(), page == 2, "page {page}: {listed}");
    }
    let newest_first: Vec<String> = ids.iter().rev().cloned().collect();
    assert_eq!(seen, newest_first);
    let bad = list_tasks(&mut server, 410, json!({ "limit": 0 })).await;
    assert_eq!(bad["diagnostics"]["kind"], "invalid_arguments");
    assert!(
        bad["diagnostics"]["message"]
            .as_str()
            .unwrap()
            .contains("limit")
    );
    let bad = list_tasks(&mut server, 411, json!({ "cursor": "nope" })).await;
    assert_eq!(bad["diagnostics"]["kind"], "invalid_arguments");
    assert!(server.validated >= 5);
    server.finish().await;
}
