//! Typed per-action tools (SNOWLUMA_MCP_TOOLSETS), allow and deny lists and name completion,
//! end to end: the built binary over real stdio (raw JSON-lines client and rmcp's client, both
//! generations) against the fake SnowLuma. Every tool result is checked against the
//! outputSchema the server advertised (the raw client and `call_listed` do it).

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/raw_client.rs"]
mod raw_client;
#[path = "support/rmcp_client.rs"]
mod rmcp_client;

use fake_snowluma::FakeSnowLuma;
use raw_client::{RawServer, modern_meta, structured};
use serde_json::{Value, json};
use tokio::process::Command;

const TOKEN: &str = "action-tools-token";

fn spawn(mode: &str, url: &str, extra: &[(&str, &str)]) -> RawServer {
    let mut env = vec![
        ("SNOWLUMA_MCP_MODE", mode),
        ("SNOWLUMA_MCP_ENDPOINT", url),
        ("SNOWLUMA_MCP_TOKEN", TOKEN),
        ("SNOWLUMA_MCP_LOG", "warn"),
    ];
    env.extend_from_slice(extra);
    RawServer::spawn(&env)
}

async fn tools(server: &mut RawServer, id: i64) -> Vec<Value> {
    let listed = server
        .request(id, "tools/list", json!({ "_meta": modern_meta(json!({})) }))
        .await;
    listed["result"]["tools"].as_array().unwrap().clone()
}

fn names(tools: &[Value]) -> Vec<String> {
    tools
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

async fn call(server: &mut RawServer, id: i64, tool: &str, args: Value) -> (Value, Value) {
    let response = server
        .request(
            id,
            "tools/call",
            json!({ "name": tool, "arguments": args, "_meta": modern_meta(json!({})) }),
        )
        .await;
    let body = structured(&response);
    (response, body)
}

fn is_error(response: &Value) -> bool {
    response["result"]["isError"] == json!(true)
}

#[tokio::test]
async fn without_the_settings_no_typed_tool_is_listed_or_callable() {
    let fake = FakeSnowLuma::start(Some(TOKEN)).await;
    let mut server = spawn("write", &fake.url, &[]);
    let listed = names(&tools(&mut server, 1).await);
    assert!(!listed.iter().any(|n| n == "get_status"));
    let response = server
        .request(
            2,
            "tools/call",
            json!({ "name": "get_status", "arguments": {}, "_meta": modern_meta(json!({})) }),
        )
        .await;
    assert!(
        response["error"]["message"]
            .as_str()
            .unwrap()
            .contains("tool not found"),
        "{response}"
    );
    assert!(fake.requests_for("get_status").is_empty());
    server.finish().await;
}

#[tokio::test]
async fn toolsets_list_typed_tools_by_mode_and_run_them_through_the_pipeline() {
    let fake = FakeSnowLuma::start(Some(TOKEN)).await;
    let mut server = spawn(
        "read",
        &fake.url,
        &[("SNOWLUMA_MCP_TOOLSETS", "info,message")],
    );
    let listed = tools(&mut server, 1).await;
    let listed_names = names(&listed);
    // Read mode: read-only actions of the chosen categories only.
    assert!(listed_names.contains(&"get_status".to_string()));
    assert!(listed_names.contains(&"get_msg".to_string()));
    assert!(!listed_names.contains(&"send_group_msg".to_string()));
    assert!(
        !listed_names.contains(&"get_group_list".to_string()),
        "group_info not chosen"
    );
    let status = listed.iter().find(|t| t["name"] == "get_status").unwrap();
    assert_eq!(status["annotations"]["readOnlyHint"], json!(true));
    // The inputSchema is the action's params schema, as get_action documents it, plus the
    // `budget` argument every tool takes.
    let (_, contract) = call(&mut server, 2, "get_action", json!({ "name": "get_msg" })).await;
    let get_msg = listed.iter().find(|t| t["name"] == "get_msg").unwrap();
    let mut input = get_msg["inputSchema"].clone();
    let budget = input["properties"]
        .as_object_mut()
        .unwrap()
        .remove("budget");
    assert_eq!(budget.unwrap()["minimum"], 1000);
    assert_eq!(input, contract["result"]["inputSchema"]);
    // outputSchema: data is typed by the returnsSchema.
    let data_schema = &status["outputSchema"]["properties"]["result"]["anyOf"][0]["oneOf"][0]["then"]
        ["properties"]["data"];
    assert_eq!(data_schema["required"], json!(["online", "good"]));

    let (response, body) = call(&mut server, 3, "get_status", json!({})).await;
    assert!(!is_error(&response), "{response}");
    assert_eq!(body["result"]["data"]["online"], json!(true));
    assert_eq!(body["diagnostics"]["outcome"], json!("success"));
    assert_eq!(fake.requests_for("get_status").len(), 1);

    // Params are checked before anything is sent, exactly as query_action checks them.
    let (response, body) = call(&mut server, 4, "get_msg", json!({})).await;
    assert!(is_error(&response));
    assert_eq!(body["diagnostics"]["kind"], json!("invalid_arguments"));
    assert!(fake.requests_for("get_msg").is_empty());

    // A write action's tool is not listed in read mode, and a call is refused by the gate.
    let (response, body) = call(
        &mut server,
        5,
        "send_group_msg",
        json!({ "group_id": 20001, "message": "hi" }),
    )
    .await;
    assert!(is_error(&response));
    assert_eq!(body["diagnostics"]["kind"], json!("mode"));
    assert!(fake.requests_for("send_group_msg").is_empty());
    server.finish().await;

    let mut server = spawn("write", &fake.url, &[("SNOWLUMA_MCP_TOOLSETS", "message")]);
    let listed = tools(&mut server, 1).await;
    let send = listed
        .iter()
        .find(|t| t["name"] == "send_group_msg")
        .unwrap();
    assert_eq!(send["annotations"]["readOnlyHint"], json!(false));
    assert_eq!(send["annotations"]["destructiveHint"], json!(true));
    let (response, body) = call(
        &mut server,
        2,
        "send_group_msg",
        json!({ "group_id": 20001, "message": "hi" }),
    )
    .await;
    assert!(!is_error(&response), "{response}");
    assert_eq!(body["result"]["data"]["message_id"], json!(-123456));
    let sent = fake.requests_for("send_group_msg");
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].params.as_ref().unwrap()["message"], json!("hi"));
    server.finish().await;
}

#[tokio::test]
async fn a_denied_action_is_refused_everywhere_and_still_documented() {
    let fake = FakeSnowLuma::start(Some(TOKEN)).await;
    let mut server = spawn(
        "write",
        &fake.url,
        &[
            ("SNOWLUMA_MCP_DENY_ACTIONS", "get_status,bot_exit"),
            ("SNOWLUMA_MCP_TOOLSETS", "info"),
        ],
    );
    let listed = names(&tools(&mut server, 1).await);
    assert!(
        !listed.contains(&"get_status".to_string()),
        "denied typed tool listed"
    );
    assert!(listed.contains(&"get_login_info".to_string()));
    let mut id = 10;
    for (tool, args) in [
        ("query_action", json!({ "action": "get_status" })),
        ("invoke_action", json!({ "action": "get_status" })),
        ("get_status", json!({})),
        ("invoke_action", json!({ "action": "bot_exit" })),
    ] {
        id += 1;
        let (response, body) = call(&mut server, id, tool, args).await;
        assert!(is_error(&response), "{tool}: {response}");
        assert_eq!(body["diagnostics"]["kind"], json!("denied"), "{tool}");
        let message = body["diagnostics"]["message"].as_str().unwrap();
        assert!(message.contains("SNOWLUMA_MCP_DENY_ACTIONS"), "{message}");
    }
    assert!(fake.requests_for("get_status").is_empty());
    assert!(fake.requests_for("bot_exit").is_empty());
    // The docs tools still document it, marked.
    let (_, contract) = call(&mut server, 30, "get_action", json!({ "name": "bot_exit" })).await;
    assert_eq!(contract["result"]["denied"], json!(true));
    assert_eq!(
        contract["result"]["denied_by"],
        json!("SNOWLUMA_MCP_DENY_ACTIONS")
    );
    assert!(
        contract["result"]["danger"]
            .as_str()
            .unwrap()
            .contains("process")
    );
    let (_, listing) = call(
        &mut server,
        31,
        "list_actions",
        json!({ "category": "info" }),
    )
    .await;
    let entries = listing["result"]["actions"].as_array().unwrap();
    let status = entries.iter().find(|e| e["name"] == "get_status").unwrap();
    assert_eq!(status["denied"], json!(true));
    let login = entries
        .iter()
        .find(|e| e["name"] == "get_login_info")
        .unwrap();
    assert!(login.get("denied").is_none());
    // The unfiltered listing is served from bytes built once; it is marked all the same.
    let (_, listing) = call(&mut server, 33, "list_actions", json!({})).await;
    let entries = listing["result"]["actions"].as_array().unwrap();
    let status = entries.iter().find(|e| e["name"] == "get_status").unwrap();
    assert_eq!(status["denied"], json!(true), "{status}");
    // Allowed actions still run.
    let (response, _) = call(&mut server, 32, "get_login_info", json!({})).await;
    assert!(!is_error(&response), "{response}");
    server.finish().await;
}

#[tokio::test]
async fn an_allow_list_admits_only_what_it_names() {
    let fake = FakeSnowLuma::start(Some(TOKEN)).await;
    let mut server = spawn(
        "write",
        &fake.url,
        &[("SNOWLUMA_MCP_ALLOW_ACTIONS", "category:info,send_msg")],
    );
    let (response, _) = call(
        &mut server,
        1,
        "query_action",
        json!({ "action": "get_status" }),
    )
    .await;
    assert!(!is_error(&response), "{response}");
    let (response, body) = call(
        &mut server,
        2,
        "invoke_action",
        json!({ "action": "send_group_msg", "params": { "group_id": 20001, "message": "x" } }),
    )
    .await;
    assert!(is_error(&response));
    assert_eq!(body["diagnostics"]["kind"], json!("denied"));
    assert!(
        body["diagnostics"]["message"]
            .as_str()
            .unwrap()
            .contains("SNOWLUMA_MCP_ALLOW_ACTIONS")
    );
    assert!(fake.requests_for("send_group_msg").is_empty());
    server.finish().await;
}

#[tokio::test]
async fn unknown_list_entries_stop_start_up_with_a_suggestion() {
    for (variable, value, expected) in [
        ("SNOWLUMA_MCP_DENY_ACTIONS", "bot_exti", "`bot_exit`"),
        ("SNOWLUMA_MCP_ALLOW_ACTIONS", "category:mesage", "`message`"),
        ("SNOWLUMA_MCP_TOOLSETS", "group_infos", "`group_info`"),
    ] {
        let server = RawServer::spawn(&[(variable, value)]);
        let (code, stderr) = server.finish().await;
        assert_eq!(code, Some(2), "{variable}: {stderr}");
        assert!(
            stderr.contains(variable) && stderr.contains(expected),
            "{stderr}"
        );
    }
}

#[tokio::test]
async fn completion_offers_names_and_aliases_by_prefix() {
    let mut server = RawServer::spawn(&[("SNOWLUMA_MCP_LOG", "warn")]);
    let init = server
        .request(
            1,
            "initialize",
            json!({ "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }),
        )
        .await;
    assert!(
        init["result"]["capabilities"]["completions"].is_object(),
        "{init}"
    );
    server
        .send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
        .await;
    let complete = |value: &str| {
        json!({
            "ref": { "type": "ref/resource", "uri": "snowluma://onebot/actions/{name}" },
            "argument": { "name": "name", "value": value }
        })
    };
    let answer = server
        .request(2, "completion/complete", complete("get_group_m"))
        .await;
    let values = answer["result"]["completion"]["values"].as_array().unwrap();
    assert!(!values.is_empty());
    assert!(
        values
            .iter()
            .all(|v| v.as_str().unwrap().starts_with("get_group_m"))
    );
    assert!(values.contains(&json!("get_group_member_info")));
    let answer = server
        .request(3, "completion/complete", complete("get_msg"))
        .await;
    assert_eq!(
        answer["result"]["completion"]["values"][0],
        json!("get_msg")
    );
    let answer = server.request(4, "completion/complete", complete("")).await;
    let completion = &answer["result"]["completion"];
    assert_eq!(completion["values"].as_array().unwrap().len(), 100);
    assert_eq!(completion["hasMore"], json!(true));
    assert!(completion["total"].as_u64().unwrap() > 100);
    let wrong = json!({
        "ref": { "type": "ref/prompt", "name": "x" },
        "argument": { "name": "name", "value": "g" }
    });
    let answer = server.request(5, "completion/complete", wrong).await;
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("snowluma://onebot/actions/{name}")
    );
    server.finish().await;
}

fn rmcp_command(url: &str, toolsets: &str) -> Command {
    let mut command = Command::new(raw_client::binary());
    command
        .env("SNOWLUMA_MCP_MODE", "read")
        .env("SNOWLUMA_MCP_ENDPOINT", url)
        .env("SNOWLUMA_MCP_TOKEN", TOKEN)
        .env("SNOWLUMA_MCP_TOOLSETS", toolsets)
        .env("SNOWLUMA_MCP_LOG", "warn");
    command
}

#[tokio::test]
async fn rmcp_client_calls_typed_tools_and_completes_names_in_both_generations() {
    let fake = FakeSnowLuma::start(Some(TOKEN)).await;
    for modern in [false, true] {
        let client = rmcp_client::connect((), rmcp_command(&fake.url, "group_info"), modern).await;
        let (result, body) =
            rmcp_client::call_listed(&client, "get_group_info", json!({ "group_id": 20001 })).await;
        assert_ne!(result.is_error, Some(true), "{body}");
        assert_eq!(body["result"]["data"]["group_name"], json!("Test Group"));
        let (result, body) = rmcp_client::call_listed(&client, "get_group_list", json!({})).await;
        assert_ne!(result.is_error, Some(true), "{body}");
        let completion = client
            .complete_resource_argument(
                "snowluma://onebot/actions/{name}",
                "name",
                "set_group_b",
                None,
            )
            .await
            .expect("completion/complete");
        assert!(completion.values.contains(&"set_group_ban".to_string()));
        client.cancel().await.expect("close");
    }
    assert_eq!(fake.requests_for("get_group_info").len(), 2);
}

#[tokio::test]
async fn every_typed_tool_has_a_unique_name_and_valid_schemas() {
    let mut server = spawn(
        "write",
        "http://127.0.0.1:9/",
        &[("SNOWLUMA_MCP_TOOLSETS", "all")],
    );
    let listed = tools(&mut server, 1).await;
    let all = names(&listed);
    let unique: std::collections::BTreeSet<&String> = all.iter().collect();
    assert_eq!(unique.len(), all.len(), "a typed tool shadows another tool");
    // Every action is listed in write mode (generated/tools.rs has one tool per action).
    let (_, categories) = call(&mut server, 2, "list_categories", json!({})).await;
    let actions: u64 = categories["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["count"].as_u64().unwrap())
        .sum();
    let typed = listed
        .iter()
        .filter(|t| {
            t["description"]
                .as_str()
                .unwrap()
                .contains("[OneBot action `")
        })
        .count();
    assert_eq!(typed as u64, actions);
    for tool in &listed {
        assert_eq!(
            tool["inputSchema"]["type"],
            json!("object"),
            "{}",
            tool["name"]
        );
        jsonschema::validator_for(&tool["outputSchema"])
            .unwrap_or_else(|e| panic!("{}: {e}", tool["name"]));
    }
    server.finish().await;
}
