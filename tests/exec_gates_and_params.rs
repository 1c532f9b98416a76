//! Execution end to end, what runs and what is sent: the built binary over real stdio
//! (both generations) against the fake SnowLuma. Read mode runs read-only actions and keeps
//! the envelope; params are checked first and then forwarded exactly; gates refuse on every
//! call and name the tool or mode; legacy clients execute too.

#[path = "support/exec_helpers.rs"]
mod exec_helpers;
#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/raw_client.rs"]
mod raw_client;

use serde_json::json;

use exec_helpers::*;
use raw_client::{RawServer, modern_meta, structured};

#[tokio::test]
async fn read_mode_runs_read_only_actions_and_preserves_the_envelope() {
    let (fake, mut server) = start("read").await;
    let tools = server
        .request(1, "tools/list", json!({ "_meta": modern_meta(json!({})) }))
        .await;
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"query_action") && !names.contains(&"invoke_action"),
        "{names:?}"
    );

    let (response, body) = call(
        &mut server,
        2,
        "query_action",
        json!({ "action": "get_login_info" }),
    )
    .await;
    assert!(!is_error(&response));
    assert_eq!(body["diagnostics"]["outcome"], "success");
    assert_eq!(
        body["result"],
        json!({ "status": "ok", "retcode": 0, "data": { "user_id": 10001, "nickname": body["result"]["data"]["nickname"] } })
    );
    let recorded = fake
        .requests_for("get_login_info")
        .pop()
        .expect("request reached the fake");
    assert_eq!(recorded.method, "POST");
    assert_eq!(
        recorded.header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    assert!(
        recorded
            .header("content-type")
            .unwrap()
            .starts_with("application/json")
    );
    assert_eq!(
        recorded.header("traceparent"),
        response["result"]["_meta"]["traceparent"].as_str()
    );
    assert_eq!(
        recorded.json().unwrap(),
        json!({ "action": "get_login_info", "params": {} })
    );

    // Aliases are accepted and sent as asked.
    let (_, body) = call(
        &mut server,
        3,
        "query_action",
        json!({ "action": "nc_get_rkey" }),
    )
    .await;
    assert_eq!(body["diagnostics"]["outcome"], "success", "{body}");
    assert_eq!(
        fake.requests().last().unwrap().action.as_deref(),
        Some("nc_get_rkey")
    );
    server.finish().await;
}

#[tokio::test]
async fn params_are_checked_first_and_then_forwarded_exactly() {
    let (fake, mut server) = start("write").await;
    let (response, body) = call(
        &mut server,
        1,
        "invoke_action",
        json!({ "action": "send_group_msg", "params": { "message": "hi" } }),
    )
    .await;
    assert!(is_error(&response));
    assert_eq!(body["diagnostics"]["kind"], "invalid_arguments");
    assert!(
        body["diagnostics"]["message"]
            .as_str()
            .unwrap()
            .contains("group_id: is required")
    );
    assert!(
        fake.requests().is_empty(),
        "nothing is sent for invalid params"
    );

    let (_, body) = call(
        &mut server,
        2,
        "query_action",
        json!({ "action": "get_msg", "params": { "message_id": 0 } }),
    )
    .await;
    assert!(
        body["diagnostics"]["message"]
            .as_str()
            .unwrap()
            .contains("message_id: must not be 0")
    );
    let (_, body) = call(
        &mut server,
        3,
        "query_action",
        json!({ "action": "get_msg", "params": [1] }),
    )
    .await;
    assert!(
        body["diagnostics"]["message"]
            .as_str()
            .unwrap()
            .contains("params must be an object")
    );

    let params = json!({ "message_id": "-123456", "x_unknown": { "keep": [1, 2] } });
    let (response, body) = call(
        &mut server,
        4,
        "query_action",
        json!({ "action": "get_msg", "params": params }),
    )
    .await;
    assert!(!is_error(&response), "{body}");
    assert_eq!(
        fake.requests().last().unwrap().json().unwrap()["params"],
        params,
        "forwarded exactly as given"
    );

    let params = json!({ "message_id": -123456 });
    call(
        &mut server,
        5,
        "invoke_action",
        json!({ "action": "delete_msg", "params": params }),
    )
    .await;
    assert_eq!(
        fake.requests().last().unwrap().json().unwrap(),
        json!({ "action": "delete_msg", "params": params })
    );
    server.finish().await;
}

#[tokio::test]
async fn gates_refuse_on_every_call_and_name_the_tool_or_mode() {
    let (fake, mut server) = start("read").await;
    let cases = [
        (
            json!({ "action": "send_group_msg", "params": { "group_id": 20001, "message": "x" } }),
            "query_action",
            "invoke_action",
        ),
        (
            json!({ "action": "get_login_info" }),
            "invoke_action",
            "query_action",
        ),
        (
            json!({ "action": "delete_msg", "params": { "message_id": -1 } }),
            "invoke_action",
            "SNOWLUMA_MCP_MODE=write",
        ),
        (
            json!({ "action": "download_file_stream", "params": { "file": "a" } }),
            "query_action",
            "write mode",
        ),
        (json!({ "action": "sned_msg" }), "query_action", "send_msg"),
    ];
    for (i, (args, tool, needle)) in cases.into_iter().enumerate() {
        let (response, body) = call(&mut server, i as i64 + 1, tool, args.clone()).await;
        assert!(is_error(&response), "{tool} {args}");
        let text = format!(
            "{} {}",
            body["diagnostics"]["message"], body["diagnostics"]["next_step"]
        );
        assert!(text.contains(needle), "{tool} {args}: {text}");
    }
    assert!(fake.requests().is_empty(), "refused calls send nothing");
    server.finish().await;

    let mut docs = RawServer::spawn(&[]);
    let (response, body) = call(
        &mut docs,
        1,
        "query_action",
        json!({ "action": "get_login_info" }),
    )
    .await;
    assert!(is_error(&response));
    assert!(
        body["diagnostics"]["message"]
            .as_str()
            .unwrap()
            .contains("docs mode")
    );
    docs.finish().await;

    let mut writer = spawn("write", &fake.url, &[]);
    let (response, body) = call(
        &mut writer,
        1,
        "query_action",
        json!({ "action": "test_download_stream" }),
    )
    .await;
    assert!(is_error(&response));
    assert!(
        body["diagnostics"]["next_step"]
            .as_str()
            .unwrap()
            .contains("invoke_action")
    );
    assert!(
        fake.requests().is_empty(),
        "refused stream calls send nothing"
    );
    let (response, body) = call(
        &mut writer,
        2,
        "invoke_action",
        json!({ "action": "test_download_stream" }),
    )
    .await;
    assert!(!is_error(&response), "{body}");
    assert_eq!(body["result"]["frame_count"], 11);
    writer.finish().await;
}

#[tokio::test]
async fn legacy_clients_execute_too() {
    let (fake, mut server) = start("write").await;
    server
        .request(0, "initialize", json!({ "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }))
        .await;
    let response = server
        .request(1, "tools/call", json!({ "name": "invoke_action", "arguments": { "action": "set_group_card", "params": { "group_id": 20001, "user_id": 30001, "card": "名片" } }, "_meta": { "traceparent": CALLER } }))
        .await;
    let body = structured(&response);
    assert_eq!(body["diagnostics"]["outcome"], "success", "{body}");
    assert!(response["result"].get("resultType").is_none());
    assert!(
        response["result"]["_meta"]["traceparent"]
            .as_str()
            .unwrap()
            .contains("4bf92f3577b34da6a3ce929d0e0e4736")
    );
    assert_eq!(fake.requests().len(), 1);
    server.finish().await;
}
