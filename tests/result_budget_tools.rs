//! Budgets beyond the generic tools: typed action tools (SNOWLUMA_MCP_TOOLSETS) take the same
//! `budget` argument and page like query_action, and a background task's saved result is
//! paged within the budget of the call that started it, the rest read with `read_more`. Both
//! protocol generations (tasks: 2026-07-28 only), stdio and HTTP.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/http_server.rs"]
mod http_server;
#[path = "support/mcp_peer.rs"]
mod mcp_peer;
#[path = "support/pages.rs"]
mod pages;
#[path = "support/raw_client.rs"]
mod raw_client;
#[path = "support/task_stdio.rs"]
mod task_stdio;

use std::time::Duration;

use fake_snowluma::{FakeSnowLuma, Fault, LARGE_GROUP_ID, LARGE_GROUP_MEMBERS};
use mcp_peer::{EVERY_KIND, Peer, PeerKind, ToolCall, Transport};
use pages::{joined, page, read_rest, text_chars};
use serde_json::{Value, json};
use task_stdio::Dirs;

/// The typed tools of both actions the budget tests read.
const TOOLSETS: &str = "group_info,extended";

fn typed_env(fake: &FakeSnowLuma) -> Vec<(&str, &str)> {
    vec![
        ("SNOWLUMA_MCP_ENDPOINT", fake.url.as_str()),
        ("SNOWLUMA_MCP_MODE", "read"),
        ("SNOWLUMA_MCP_TOOLSETS", TOOLSETS),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_action_tools_take_a_budget_and_page_like_query_action() {
    let fake = FakeSnowLuma::start(None).await;
    let history_args = json!({ "group_id": LARGE_GROUP_ID, "count": 500 });
    // The whole history, over stdio where nothing is paged by default.
    let mut stdio = Peer::start(PeerKind::new(Transport::Stdio, false), &typed_env(&fake)).await;
    let full = stdio
        .call("get_group_msg_history", history_args.clone())
        .await;
    assert!(page(&full).is_null(), "{}", full.body);
    let messages = full.body["result"]["data"]["messages"].clone();
    assert_eq!(messages.as_array().unwrap().len(), 200, "SnowLuma's cap");
    stdio.stop().await;

    for kind in EVERY_KIND {
        let mut peer = Peer::start(kind, &typed_env(&fake)).await;
        // Listed with the argument, like every other tool.
        let listing = peer.request("tools/list", json!({})).await;
        let tool = listing["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|tool| tool["name"] == "get_group_member_list")
            .unwrap_or_else(|| panic!("{kind}: the typed tool is listed: {listing}"));
        assert_eq!(
            tool["inputSchema"]["properties"]["budget"]["minimum"], 1000,
            "{kind}: {tool}"
        );

        // Without the argument: the transport's default (HTTP pages at 8,000, stdio not).
        let members = peer
            .call(
                "get_group_member_list",
                json!({ "group_id": LARGE_GROUP_ID }),
            )
            .await;
        assert!(!members.is_error, "{kind}: {}", members.body);
        match kind.transport {
            Transport::Http => {
                assert!(text_chars(&members) <= 8000, "{kind}");
                assert_eq!(page(&members)["total"], LARGE_GROUP_MEMBERS, "{kind}");
                assert!(page(&members)["continuation"].is_string(), "{kind}");
            }
            Transport::Stdio => {
                assert!(page(&members).is_null(), "{kind}: {}", members.body);
                assert_eq!(
                    members.body["result"]["data"].as_array().unwrap().len(),
                    LARGE_GROUP_MEMBERS as usize
                );
            }
        }

        // With it: pages of at most 2,000 characters that join into the whole history.
        let mut args = history_args.clone();
        args["budget"] = json!(2000);
        let first = peer.call("get_group_msg_history", args).await;
        assert!(!first.is_error, "{kind}: {}", first.body);
        let pages = read_rest(&mut peer, first, 2000).await;
        assert!(pages.len() > 2, "{kind}: several pages");
        let joined = joined(&pages, "result.data.messages", 200);
        assert_eq!(Value::Array(joined), messages, "{kind}: the original array");

        // Checked like everywhere: too small a budget names the argument and its minimum.
        let small = peer
            .call(
                "get_group_member_list",
                json!({ "group_id": LARGE_GROUP_ID, "budget": 10 }),
            )
            .await;
        assert!(small.is_error, "{kind}");
        assert_eq!(small.kind(), "invalid_arguments", "{kind}");
        let message = small.body["diagnostics"]["message"].as_str().unwrap();
        assert!(
            message.contains("`budget`") && message.contains("1000"),
            "{message}"
        );
        peer.stop().await;
    }
}

/// tasks/get until the task leaves `working` (bounded: 600 polls).
async fn poll_until_done(peer: &mut Peer, task_id: &str) -> Value {
    for _ in 0..600 {
        let got = peer
            .request("tasks/get", json!({ "taskId": task_id }))
            .await;
        if got["result"]["status"] != "working" {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {task_id} still working after 600 polls");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_tasks_result_is_paged_within_its_calls_budget() {
    const FRAMES: usize = 500;
    let fake = FakeSnowLuma::start(None).await;
    fake.set_fault(Some("test_download_stream"), Fault::ManyFrames(FRAMES));
    let expected: Vec<Value> = (1..=FRAMES)
        .map(|i| Value::from(format!("Index-> {i}")))
        .collect();
    for transport in [Transport::Stdio, Transport::Http] {
        let kind = PeerKind::new(transport, true);
        let dirs = Dirs::new(&format!("budget-{transport:?}"));
        let tasks = dirs.tasks.to_string_lossy().into_owned();
        let downloads = dirs.downloads.to_string_lossy().into_owned();
        let mut peer = Peer::start(
            kind,
            &[
                ("SNOWLUMA_MCP_ENDPOINT", &fake.url),
                ("SNOWLUMA_MCP_MODE", "write"),
                ("SNOWLUMA_MCP_TASK_DIR", &tasks),
                ("SNOWLUMA_MCP_DOWNLOAD_DIR", &downloads),
            ],
        )
        .await;
        let created = peer
            .request(
                "tools/call",
                json!({ "name": "invoke_action_background",
                        "arguments": { "action": "test_download_stream", "budget": 1000 } }),
            )
            .await;
        assert_eq!(created["result"]["resultType"], "task", "{kind}: {created}");
        let task_id = created["result"]["taskId"].as_str().unwrap().to_string();
        let done = poll_until_done(&mut peer, &task_id).await;
        assert_eq!(done["result"]["status"], "completed", "{kind}: {done}");

        // The saved result is the first page, as invoke_action would have answered it.
        let saved = &done["result"]["result"];
        let first = ToolCall {
            response: json!({ "result": saved }),
            is_error: saved["isError"] == json!(true),
            body: saved["structuredContent"].clone(),
        };
        assert!(!first.is_error, "{kind}: {saved}");
        peer.validate("invoke_action_background", &first.body).await;
        assert!(text_chars(&first) <= 1000, "{kind}: {saved}");
        // Every frame counts and is kept, the terminal one too.
        assert_eq!(first.body["result"]["frame_count"], FRAMES + 1, "{kind}");

        // The rest through read_more, joined into every frame in order.
        let pages = read_rest(&mut peer, first, 1000).await;
        assert!(pages.len() > 2, "{kind}: several pages");
        let joined = joined(&pages, "result.frames", FRAMES + 1);
        let texts: Vec<&Value> = joined[..FRAMES]
            .iter()
            .map(|frame| &frame["data"])
            .collect();
        let expected: Vec<&Value> = expected.iter().collect();
        assert!(
            texts == expected,
            "{kind}: the pages are every frame, in order"
        );
        assert_eq!(joined[FRAMES]["data_type"], "data_complete", "{kind}");
        peer.stop().await;
    }
}
