//! The Streamable HTTP transport driven by clients end to end: rmcp's own Streamable HTTP
//! client in both generations (docs surface, execution against the fake SnowLuma, every
//! result checked against the advertised outputSchema), and background tasks started and
//! polled with stateless 2026-07-28 requests.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/http_server.rs"]
mod http_server;
#[path = "support/http_transport_helpers.rs"]
mod http_transport_helpers;
#[path = "support/raw_client.rs"]
mod raw_client;
#[path = "support/rmcp_client.rs"]
mod rmcp_client;

use std::time::Duration;

use rmcp::model::ReadResourceRequestParams;
use serde_json::{Value, json};

use fake_snowluma::FakeSnowLuma;
use http_server::{HttpServer, TOKEN, post};
use http_transport_helpers::*;

#[tokio::test]
async fn rmcp_client_docs_and_execution_in_both_generations() {
    let fake = FakeSnowLuma::start(Some("snowluma-side-token")).await;
    let server = HttpServer::start(
        &[
            ("SNOWLUMA_MCP_HTTP_TOKEN", TOKEN),
            ("SNOWLUMA_MCP_MODE", "read"),
            ("SNOWLUMA_MCP_ENDPOINT", &fake.url),
            ("SNOWLUMA_MCP_TOKEN", "snowluma-side-token"),
        ],
        &[],
    )
    .await;
    for modern in [false, true] {
        let client = rmcp_client::connect_to((), rmcp_transport(&server.url, TOKEN), modern).await;
        let tools = client.list_all_tools().await.unwrap();
        assert!(tools.iter().any(|t| t.name == "query_action"), "{modern}");
        let (_, found) = rmcp_client::call_listed(
            &client,
            "search_actions",
            json!({ "query": "mute member", "match": "keywords" }),
        )
        .await;
        assert_eq!(found["diagnostics"]["outcome"], "success");
        let (_, action) =
            rmcp_client::call_listed(&client, "get_action", json!({ "name": "get_login_info" }))
                .await;
        assert_eq!(action["diagnostics"]["outcome"], "success");
        let (_, login) = rmcp_client::call_listed(
            &client,
            "query_action",
            json!({ "action": "get_login_info" }),
        )
        .await;
        assert_eq!(
            login["result"]["data"]["user_id"],
            fake_snowluma::SELF_ID,
            "{login}"
        );
        let catalog = client
            .read_resource(ReadResourceRequestParams::new("snowluma://onebot/actions"))
            .await
            .expect("resources/read of the catalog");
        assert!(!catalog.contents.is_empty());
        client.cancel().await.unwrap();
    }
    let log = server.log();
    assert!(
        !log.contains(TOKEN) && !log.contains("snowluma-side-token"),
        "{log}"
    );
    server.stop().await;
}

/// A stateless 2026-07-28 POST declaring the tasks extension, with the routing headers.
async fn modern_post(
    url: &str,
    id: i64,
    method: &str,
    name: Option<&str>,
    mut params: Value,
) -> Value {
    params["_meta"] =
        raw_client::modern_meta(json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } }));
    let mut headers = vec![
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
    ];
    if let Some(name) = name {
        headers.push(("mcp-name", name));
    }
    let reply = post(
        url,
        Some(TOKEN),
        &headers,
        &json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }),
    )
    .await;
    assert_eq!(reply.status, 200, "{method}: {}", reply.body);
    reply.json()
}

#[tokio::test]
async fn background_tasks_run_and_are_polled_over_http() {
    let fake = FakeSnowLuma::start(None).await;
    let file = fake.add_generated_file("http-task.bin", 200_000, 3);
    let dir = tempfile::tempdir().unwrap();
    let downloads = dir.path().join("downloads");
    let tasks = dir.path().join("tasks");
    let server = HttpServer::start(
        &[
            ("SNOWLUMA_MCP_HTTP_TOKEN", TOKEN),
            ("SNOWLUMA_MCP_MODE", "write"),
            ("SNOWLUMA_MCP_ENDPOINT", &fake.url),
            ("SNOWLUMA_MCP_DOWNLOAD_DIR", downloads.to_str().unwrap()),
            ("SNOWLUMA_MCP_TASK_DIR", tasks.to_str().unwrap()),
        ],
        &[],
    )
    .await;
    let url = &server.url;
    let created = modern_post(url, 1, "tools/call", Some("invoke_action_background"), json!({
        "name": "invoke_action_background",
        "arguments": { "action": "download_file_stream", "params": { "file": file, "chunk_size": 65536 } } })).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task_id = created["result"]["taskId"].as_str().unwrap().to_string();
    let mut done = Value::Null;
    for id in 2..200 {
        let got = modern_post(
            url,
            id,
            "tasks/get",
            Some(&task_id),
            json!({ "taskId": task_id }),
        )
        .await;
        if got["result"]["status"] != "working" {
            done = got;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(done["result"]["status"], "completed", "{done}");
    let saved = &done["result"]["result"]["structuredContent"];
    assert_eq!(saved["result"]["size"], 200_000);
    let listing = modern_post(url, 300, "tools/list", None, json!({})).await;
    let schema = listing["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "invoke_action_background")
        .expect("listed")["outputSchema"]
        .clone();
    raw_client::assert_valid("invoke_action_background", &schema, saved);
    server.stop().await;
}
