//! The docs tools driven by rmcp's own client over real stdio, in both generations, with one
//! snapshot per tool definition (what clients see) and per stable tool output.

#[path = "support/raw_client.rs"]
mod raw_client;

use raw_client::sorted;
use rmcp::model::{CallToolRequestParams, ProtocolVersion, ReadResourceRequestParams};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use snowluma_mcp::catalog::ACTIONS;
use tokio::process::Command;

async fn connect(modern: bool) -> RunningService<RoleClient, ()> {
    connect_in(modern, "docs").await
}

/// Connects to a server in `mode`; read and write point at a closed loopback port, which
/// listing tools never contacts.
async fn connect_in(modern: bool, mode: &str) -> RunningService<RoleClient, ()> {
    let mut command = Command::new(raw_client::binary());
    command
        .env_remove("SNOWLUMA_MCP_ENDPOINT")
        .env("SNOWLUMA_MCP_MODE", mode)
        .env("SNOWLUMA_MCP_LOG", "warn");
    if mode != "docs" {
        command.env("SNOWLUMA_MCP_ENDPOINT", "http://127.0.0.1:9/");
    }
    let transport = TokioChildProcess::new(command).expect("spawn");
    let client = if modern {
        ().serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
    } else {
        ().serve(transport).await
    };
    client.expect("connect")
}

async fn call(client: &RunningService<RoleClient, ()>, name: &str, args: Value) -> (bool, Value) {
    let mut params = CallToolRequestParams::new(name.to_string());
    params.arguments = args.as_object().cloned();
    let result = client.call_tool(params).await.expect("tools/call");
    let structured = result
        .structured_content
        .clone()
        .expect("structuredContent");
    // Every result is checked against the outputSchema the server advertised for the tool.
    let tools = client.list_all_tools().await.expect("tools/list");
    if let Some(schema) = tools
        .iter()
        .find(|t| t.name == name)
        .and_then(|t| t.output_schema.clone())
    {
        raw_client::assert_valid(name, &Value::Object((*schema).clone()), &structured);
    }
    let text = result.content[0]
        .as_text()
        .expect("text block")
        .text
        .clone();
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), structured);
    (result.is_error == Some(true), structured)
}

#[tokio::test]
async fn tool_definitions_match_their_snapshots_in_both_generations() {
    for modern in [false, true] {
        let client = connect(modern).await;
        let tools = client.list_all_tools().await.unwrap();
        assert_eq!(tools.len(), 7);
        for tool in tools {
            let public = sorted(&serde_json::to_value(&tool).unwrap());
            assert_eq!(public["outputSchema"]["type"], "object", "{}", tool.name);
            assert_eq!(public["annotations"]["readOnlyHint"], true);
            assert_eq!(public["annotations"]["openWorldHint"], false);
            // Same definition for both generations: one snapshot per tool.
            insta::assert_json_snapshot!(format!("tool_docs_{}", tool.name), public);
        }
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn execution_modes_list_their_tools_with_snapshots() {
    for (mode, expected) in [("read", 9), ("write", 11)] {
        let client = connect_in(true, mode).await;
        let tools = client.list_all_tools().await.unwrap();
        assert_eq!(tools.len(), expected, "{mode}");
        for tool in tools {
            let public = sorted(&serde_json::to_value(&tool).unwrap());
            insta::assert_json_snapshot!(format!("tool_{mode}_{}", tool.name), public);
        }
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn docs_tools_answer_in_both_generations() {
    for modern in [false, true] {
        let client = connect(modern).await;
        let era = if modern { "modern" } else { "legacy" };

        let (error, all) = call(&client, "list_actions", json!({})).await;
        assert!(!error);
        let total = ACTIONS.len();
        assert_eq!(all["result"]["count"], total, "{era}");
        assert!(all["result"].get("total").is_none());

        let (_, page) = call(
            &client,
            "list_actions",
            json!({ "limit": 10, "offset": total - 8 }),
        )
        .await;
        assert_eq!(
            (
                page["result"]["count"].clone(),
                page["result"]["total"].clone()
            ),
            (json!(8), json!(total))
        );
        assert_eq!(page["result"]["next_offset"], Value::Null);
        let (_, first) = call(&client, "list_actions", json!({ "limit": 2 })).await;
        assert_eq!(first["result"]["next_offset"], 2);

        let (_, streams) = call(&client, "list_actions", json!({ "stream": true })).await;
        let names: Vec<&str> = streams["result"]["actions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["name"].as_str().unwrap())
            .collect();
        assert_eq!(names.len(), 5, "{names:?}");
        assert!(!names.contains(&"clean_stream_temp_file"));

        let (_, admin) = call(
            &client,
            "list_actions",
            json!({ "category": "群管理", "read_only": false }),
        )
        .await;
        assert!(
            admin["result"]["actions"]
                .as_array()
                .unwrap()
                .iter()
                .all(|a| a["category"] == "group_admin" && a["read_only"] == false)
        );

        let (_, found) = call(&client, "search_actions", json!({ "query": "_BAN" })).await;
        let names: Vec<&str> = found["result"]["actions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["name"].as_str().unwrap())
            .collect();
        assert!(
            names.contains(&"set_group_ban") && names.contains(&"set_group_whole_ban"),
            "{names:?}"
        );

        let (_, keyword) = call(
            &client,
            "search_actions",
            json!({ "query": "群 禁言", "match": "keywords", "limit": 3 }),
        )
        .await;
        let top: Vec<&str> = keyword["result"]["actions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["name"].as_str().unwrap())
            .collect();
        assert!(top.contains(&"set_group_ban"), "{top:?}");

        let (_, exact) = call(
            &client,
            "search_actions",
            json!({ "query": "send_msg", "match": "keywords" }),
        )
        .await;
        assert_eq!(exact["result"]["actions"][0]["name"], "send_msg");

        // A sentence: its stop words are dropped before the AND and reported.
        let (_, sentence) = call(
            &client,
            "search_actions",
            json!({ "query": "who am I logged in as", "match": "keywords" }),
        )
        .await;
        assert_eq!(
            sentence["result"]["actions"][0]["name"], "get_login_info",
            "{sentence}"
        );
        assert_eq!(
            sentence["diagnostics"]["ignored_terms"],
            json!(["who", "am", "i", "in", "as"])
        );
        assert_eq!(sentence["diagnostics"]["terms"], json!(["logged"]));

        // AND: a term nothing knows empties the result; partial matches are suggestions.
        let (error, partial) = call(
            &client,
            "search_actions",
            json!({ "query": "mute xyzzyplugh", "match": "keywords" }),
        )
        .await;
        assert!(!error);
        assert_eq!(partial["result"]["count"], 0, "{partial}");
        let diagnostics = &partial["diagnostics"];
        assert_eq!(diagnostics["unmatched_terms"], json!(["xyzzyplugh"]));
        let suggestions = diagnostics["suggestions"].as_array().unwrap();
        assert!(!suggestions.is_empty() && suggestions.len() <= 5);
        assert!(
            suggestions
                .iter()
                .all(|s| s["partial"] == true && s["matched_terms"] == json!(["mute"]))
        );
        assert!(suggestions.iter().any(|s| s["name"] == "set_group_ban"));
        assert!(diagnostics["message"].as_str().unwrap().contains("partial"));

        let (_, contract) = call(&client, "get_action", json!({ "name": "get_ptt_text" })).await;
        assert_eq!(contract["result"]["name"], "fetch_ptt_text");
        assert_eq!(contract["result"]["requested_alias"], "get_ptt_text");
        assert!(
            contract["result"]["examples"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["action"] == "get_ptt_text")
        );

        let (error, unknown) =
            call(&client, "get_action", json!({ "name": "send_grup_msg" })).await;
        assert!(error);
        assert_eq!(unknown["diagnostics"]["kind"], "unknown_action");
        assert!(
            unknown["diagnostics"]["next_step"]
                .as_str()
                .unwrap()
                .contains("send_group_msg")
        );

        let (_, info) = call(&client, "get_runtime_info", json!({})).await;
        insta::assert_json_snapshot!(format!("runtime_info_docs_{era}"), sorted(&info));

        let catalog = client
            .read_resource(ReadResourceRequestParams::new("snowluma://onebot/actions"))
            .await
            .unwrap();
        let text = match &catalog.contents[0] {
            rmcp::model::ResourceContents::TextResourceContents { text, .. } => text.clone(),
            other => panic!("unexpected contents {other:?}"),
        };
        let document: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(document["actions"].as_array().unwrap().len(), total);
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn catalog_resource_reads_match_their_snapshots_across_categories() {
    let client = connect(false).await;
    // One action per category, as the action template resource serves them.
    for name in [
        "get_status",
        "delete_msg",
        "get_stranger_info",
        "get_group_list",
        "set_group_whole_ban",
        "upload_group_file",
        "set_friend_add_request",
        "send_forward_msg",
        "get_group_album_list",
        "send_qzone_msg",
        "download_file_stream",
    ] {
        let read = client
            .read_resource(ReadResourceRequestParams::new(format!(
                "snowluma://onebot/actions/{name}"
            )))
            .await
            .unwrap();
        let rmcp::model::ResourceContents::TextResourceContents { text, .. } = &read.contents[0]
        else {
            panic!("{name}: not text");
        };
        let contract: Value = serde_json::from_str(text).unwrap();
        assert_eq!(contract["name"], name);
        insta::assert_json_snapshot!(format!("resource_action_{name}"), sorted(&contract));
    }
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn stable_outputs_match_their_snapshots() {
    let client = connect(true).await;
    let (_, categories) = call(&client, "list_categories", json!({})).await;
    insta::assert_json_snapshot!("list_categories", sorted(&categories));
    for name in [
        "send_group_msg",
        "get_msg",
        "set_group_ban",
        "upload_file_stream",
        "get_group_member_info",
    ] {
        let (_, contract) = call(&client, "get_action", json!({ "name": name })).await;
        insta::assert_json_snapshot!(format!("get_action_{name}"), sorted(&contract));
    }
    let (_, search) = call(
        &client,
        "search_actions",
        json!({ "query": "recall message", "match": "keywords", "limit": 5 }),
    )
    .await;
    insta::assert_json_snapshot!("search_recall_message", sorted(&search));
    let (_, page) = call(&client, "list_actions", json!({ "category": "info" })).await;
    insta::assert_json_snapshot!("list_actions_info", sorted(&page));
    client.cancel().await.unwrap();
}
