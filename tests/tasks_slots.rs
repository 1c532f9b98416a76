//! Background tasks on a busy server, end to end over stdio with the shipped limits: tasks
//! wait for a transfer slot instead of failing `busy` (foreground calls still get `busy` at
//! once), and a slow disk under the task store never holds up other requests.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/gated_relay.rs"]
mod gated_relay;
#[path = "support/raw_client.rs"]
mod raw_client;
#[path = "support/task_stdio.rs"]
mod task_stdio;

use fake_snowluma::FakeSnowLuma;
use gated_relay::GatedRelay;
use raw_client::{structured, wait_until};
use serde_json::json;
use snowluma_mcp::tasks::test_knobs::TASK_WRITE_HOLD_VAR;
use task_stdio::{
    Dirs, foreground_download, get, list_tasks, poll_until_done, spawn, spawn_on, start_id,
    start_request, tasks_meta, tool_names, wait_for_waiting,
};

#[tokio::test]
async fn four_background_downloads_share_two_slots_and_all_complete() {
    let fake = FakeSnowLuma::start(None).await;
    // Every answer waits in the relay until the gate opens, so the first two transfers keep
    // their slots for as long as the checks below take.
    let relay = GatedRelay::start(fake.port).await;
    let dirs = Dirs::new("slots");
    let mut server = spawn_on(&relay.url, &dirs, &[]);
    let files: Vec<String> = (0..4)
        .map(|n| fake.add_generated_file(&format!("slot-{n}.bin"), 150_000 + n, n as u8))
        .collect();
    let mut ids = Vec::new();
    for (n, file) in files.iter().enumerate() {
        let args = json!({ "action": "download_file_stream", "params": { "file": file } });
        ids.push(start_id(&mut server, 1 + n as i64, args).await);
    }
    // Two transfers reached SnowLuma; the other two tasks wait, still `working`, and say why.
    let waiting = wait_for_waiting(&mut server, 100, &ids, 2).await;
    wait_until(raw_client::WAIT, || {
        fake.requests_for("download_file_stream").len() == 2
    })
    .await;
    assert_eq!(fake.requests_for("download_file_stream").len(), 2);
    let listed = list_tasks(&mut server, 5000, json!({})).await;
    for task in listed["result"]["tasks"].as_array().unwrap() {
        assert_eq!(task["status"], "working", "{listed}");
    }

    // A foreground stream call meanwhile is refused at once, as always.
    let busy = foreground_download(&mut server, 5001, &files[0]).await;
    assert_eq!(busy["result"]["isError"], true, "{busy}");
    let body = structured(&busy);
    assert_eq!(body["diagnostics"]["kind"], "busy", "{busy}");
    assert!(
        body["diagnostics"]["message"]
            .as_str()
            .unwrap()
            .contains("SNOWLUMA_MCP_MAX_STREAMS")
    );
    assert_eq!(fake.requests_for("download_file_stream").len(), 2);

    // Once the running transfers end, the waiting tasks run: all four complete, each with
    // its own file.
    relay.open();
    for (n, id) in ids.iter().enumerate() {
        let done = poll_until_done(&mut server, 6000 + 1000 * n as i64, id).await;
        assert_eq!(done["result"]["status"], "completed", "{done}");
        let saved = &done["result"]["result"]["structuredContent"];
        assert_eq!(saved["diagnostics"]["outcome"], "success", "{done}");
        assert_eq!(saved["result"]["size"], 150_000 + n as u64, "{done}");
        if waiting.contains(id) {
            assert!(
                !done["result"]["statusMessage"]
                    .as_str()
                    .unwrap()
                    .contains("waiting"),
                "{done}"
            );
        }
    }
    assert_eq!(fake.requests_for("download_file_stream").len(), 4);
    server.finish().await;
}

#[tokio::test]
async fn other_requests_are_answered_while_a_task_record_write_is_held() {
    let fake = FakeSnowLuma::start(None).await;
    let file = fake.add_generated_file("disk.bin", 50_000, 2);
    let dirs = Dirs::new("slow-disk");
    // The test-only slow disk: while `hold` exists, task record writes wait.
    let hold = dirs.root.join("hold");
    let held = dirs.root.join("hold.waiting");
    let hold_var = hold.to_string_lossy().to_string();
    let mut server = spawn(&fake, &dirs, &[(TASK_WRITE_HOLD_VAR, hold_var.as_str())]);
    let args = json!({ "action": "download_file_stream", "params": { "file": file } });
    let first = start_id(&mut server, 1, args.clone()).await;
    let done = poll_until_done(&mut server, 100, &first).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");

    // The disk stalls; a second task's first record write is held.
    std::fs::write(&hold, b"").unwrap();
    server.send(&start_request(1000, args)).await;
    wait_until(raw_client::WAIT, || held.exists()).await;
    assert!(held.exists(), "the record write never reached the disk");

    // Meanwhile the server answers everything else: the tool list, another task's saved
    // result (read from disk), the task list.
    let names = tool_names(&mut server, 1001, json!({ "_meta": tasks_meta() })).await;
    assert!(names.contains(&"invoke_action_background".to_string()));
    let other = get(&mut server, 1002, &first).await;
    assert_eq!(other["result"]["status"], "completed", "{other}");
    assert_eq!(
        other["result"]["result"]["structuredContent"]["result"]["size"],
        50_000
    );
    let listed = list_tasks(&mut server, 1003, json!({})).await;
    assert_eq!(listed["result"]["tasks"][0]["taskId"], first.as_str());
    // The held start cannot have been answered: its handle follows the durable record.
    assert!(
        !server.backlog.iter().any(|m| m["id"] == 1000),
        "a task handle was sent before its record was written"
    );

    // The disk recovers: the start is answered and the task runs to its end.
    std::fs::remove_file(&hold).unwrap();
    let created = server.wait_for_id(&json!(1000)).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let second = created["result"]["taskId"].as_str().unwrap();
    let done = poll_until_done(&mut server, 2000, second).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    server.finish().await;
}
