//! Execution end to end: the built binary over real stdio (both generations) against the fake
//! SnowLuma speaking SnowLuma's HTTP protocol, for every rule of the execution contract:
//! gates, param checks, forwarding, headers, outcomes, transport failures, cancellation,
//! trace context, the runtime overview and token hygiene.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/raw_client.rs"]
mod raw_client;

use std::time::Duration;

use fake_snowluma::{FakeOptions, FakeSnowLuma, Fault};
use raw_client::{RawServer, modern_meta, structured, wait_until};
use serde_json::{Value, json};

const TOKEN: &str = "s3cret-token-value";
const CALLER: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

async fn start(mode: &str) -> (FakeSnowLuma, RawServer) {
    let fake = FakeSnowLuma::start(Some(TOKEN)).await;
    let server = spawn(mode, &fake.url, &[]);
    (fake, server)
}

fn spawn(mode: &str, url: &str, extra: &[(&str, &str)]) -> RawServer {
    let mut env = vec![
        ("SNOWLUMA_MCP_MODE", mode),
        ("SNOWLUMA_MCP_ENDPOINT", url),
        ("SNOWLUMA_MCP_TOKEN", TOKEN),
    ];
    env.extend_from_slice(extra);
    RawServer::spawn(&env)
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
async fn outcomes_follow_the_envelope() {
    let (fake, mut server) = start("write").await;
    let (response, body) = call(
        &mut server,
        1,
        "query_action",
        json!({ "action": "get_msg", "params": { "message_id": 999 } }),
    )
    .await;
    assert!(
        !is_error(&response),
        "a business failure is data, not a tool error"
    );
    assert_eq!(body["diagnostics"]["outcome"], "failed");
    assert_eq!(body["result"]["retcode"], 100);
    assert_eq!(body["result"]["status"], "failed");

    fake.set_answer(
        "send_msg",
        json!({ "status": "async", "retcode": 1, "data": null }),
    );
    let (response, body) = call(
        &mut server,
        2,
        "invoke_action",
        json!({ "action": "send_msg", "params": { "user_id": 30001, "message": "hi" } }),
    )
    .await;
    assert!(!is_error(&response));
    assert_eq!(body["diagnostics"]["outcome"], "unknown");
    assert_eq!(
        body["result"],
        json!({ "status": "async", "retcode": 1, "data": null })
    );

    fake.set_answer("get_status", json!({ "data": { "online": true } }));
    let (_, body) = call(
        &mut server,
        3,
        "query_action",
        json!({ "action": "get_status" }),
    )
    .await;
    assert_eq!(
        body["diagnostics"]["outcome"], "unknown",
        "no status/retcode does not confirm success"
    );

    fake.clear_answers();
    let (_, body) = call(
        &mut server,
        4,
        "invoke_action",
        json!({ "action": "send_msg", "params": { "group_id": 20001, "message": "hi" } }),
    )
    .await;
    assert_eq!(body["diagnostics"]["outcome"], "success");
    assert_eq!(
        body["result"]["data"]["message_id"], -123456,
        "negative ids come back unchanged"
    );
    server.finish().await;
}

#[tokio::test]
async fn transport_failures_are_tool_errors_with_a_kind_and_next_step() {
    let (fake, mut server) = start("write").await;
    let cases = [
        (
            Fault::Unauthorized,
            "unauthorized",
            "SNOWLUMA_MCP_TOKEN",
            "failed",
        ),
        (Fault::ServerError, "server_error", "logs", "failed"),
        (
            Fault::BadJson,
            "bad_response",
            "SNOWLUMA_MCP_ENDPOINT",
            "unknown",
        ),
        (Fault::Refuse, "connection_broken", "logs", "unknown"),
    ];
    for (i, (fault, kind, next, outcome)) in cases.into_iter().enumerate() {
        fake.set_fault(None, fault.clone());
        let (response, body) = call(
            &mut server,
            i as i64 + 1,
            "invoke_action",
            json!({ "action": "delete_msg", "params": { "message_id": -5 } }),
        )
        .await;
        assert!(is_error(&response), "{fault:?}");
        assert_eq!(body["result"], Value::Null);
        assert_eq!(body["diagnostics"]["kind"], kind, "{fault:?}: {body}");
        assert_eq!(body["diagnostics"]["outcome"], outcome, "{fault:?}");
        assert!(
            body["diagnostics"]["next_step"]
                .as_str()
                .unwrap()
                .contains(next),
            "{fault:?}: {body}"
        );
    }
    assert_eq!(fake.requests().len(), 4, "nothing is retried");
    server.finish().await;

    // Nothing listening: refused, and nothing could have reached SnowLuma.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", closed.local_addr().unwrap());
    drop(closed);
    let mut server = spawn("read", &url, &[]);
    let (response, body) = call(
        &mut server,
        1,
        "query_action",
        json!({ "action": "get_status" }),
    )
    .await;
    assert!(is_error(&response));
    assert_eq!(body["diagnostics"]["kind"], "connection_refused");
    assert_eq!(body["diagnostics"]["outcome"], "failed");
    server.finish().await;

    // A path SnowLuma does not serve.
    let based = FakeSnowLuma::start_with(FakeOptions {
        base_path: "/onebot".into(),
        ..Default::default()
    })
    .await;
    let wrong = based
        .url
        .trim_end_matches('/')
        .replace("/onebot", "/other/");
    let mut server = spawn("read", &wrong, &[]);
    let (_, body) = call(
        &mut server,
        1,
        "query_action",
        json!({ "action": "get_status" }),
    )
    .await;
    assert_eq!(body["diagnostics"]["kind"], "not_found");
    server.finish().await;
}

#[tokio::test]
async fn timeouts_leave_writes_unknown_and_are_not_retried() {
    let fake = FakeSnowLuma::start(Some(TOKEN)).await;
    // The fake answers long after the raw client gives up waiting, so only the server's own
    // timeout can produce this answer.
    fake.set_fault(None, Fault::Slow(Duration::from_secs(600)));
    let mut server = spawn("write", &fake.url, &[("SNOWLUMA_MCP_TIMEOUT_MS", "300")]);
    let (response, body) = call(
        &mut server,
        1,
        "invoke_action",
        json!({ "action": "set_group_ban", "params": { "group_id": 20001, "user_id": 30001 } }),
    )
    .await;
    assert!(is_error(&response));
    assert_eq!(body["diagnostics"]["kind"], "timeout");
    assert_eq!(body["diagnostics"]["outcome"], "unknown");
    assert!(
        body["diagnostics"]["message"]
            .as_str()
            .unwrap()
            .contains("may already have performed")
    );
    assert_eq!(fake.requests().len(), 1);
    server.finish().await;
}

#[tokio::test]
async fn cancellation_aborts_the_request_and_body_read() {
    let fake = FakeSnowLuma::start(Some(TOKEN)).await;
    let mut server = spawn("write", &fake.url, &[]);
    for (id, fault) in [
        (1, Fault::Slow(Duration::from_secs(20))),
        (3, Fault::StallBody),
    ] {
        fake.set_fault(None, fault);
        server
            .send(&json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "invoke_action", "arguments": { "action": "delete_msg", "params": { "message_id": -9 } } ,
                "_meta": modern_meta(json!({})) } }))
            .await;
        // Wait until the request reached SnowLuma, then cancel it.
        wait_until(Duration::from_secs(5), || {
            fake.requests().len() >= (id as usize).div_ceil(2)
        })
        .await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        server.send(&json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": id } })).await;
        fake.clear_faults();
        // The server keeps serving; the cancelled id never gets an answer.
        let (response, _) = call(
            &mut server,
            id + 1,
            "query_action",
            json!({ "action": "get_status" }),
        )
        .await;
        assert!(!is_error(&response));
        assert!(
            server.backlog.iter().all(|m| m["id"] != json!(id)),
            "cancelled request {id} was answered"
        );
    }
    let (_, stderr) = server.finish().await;
    assert_eq!(
        stderr.matches("failure=\"cancelled\"").count(),
        2,
        "{stderr}"
    );
    assert_eq!(fake.requests().len(), 4);
}

#[tokio::test]
async fn trace_context_goes_to_snowluma_as_headers_only() {
    let (fake, mut server) = start("read").await;
    let mut meta = modern_meta(json!({}));
    meta["traceparent"] = json!(CALLER);
    meta["tracestate"] = json!("vendor1=value1");
    meta["baggage"] = json!("user=secret");
    let response = server
        .request(1, "tools/call", json!({ "name": "query_action", "arguments": { "action": "get_status" }, "_meta": meta }))
        .await;
    let returned = response["result"]["_meta"]["traceparent"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(returned.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-") && returned != CALLER);
    let recorded = fake.requests().pop().unwrap();
    assert_eq!(recorded.header("traceparent"), Some(returned.as_str()));
    assert_eq!(recorded.header("tracestate"), Some("vendor1=value1"));
    assert_eq!(recorded.header("baggage"), None);
    assert_eq!(
        recorded.json().unwrap()["params"],
        json!({}),
        "trace data never enters params"
    );

    // Concurrent calls keep their own headers.
    for id in 10..26 {
        server
            .send(&json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "query_action", "arguments": { "action": "get_login_info" }, "_meta": modern_meta(json!({})) } }))
            .await;
    }
    let mut returned = std::collections::BTreeSet::new();
    for id in 10..26 {
        let response = server.wait_for_id(&json!(id)).await;
        returned.insert(
            response["result"]["_meta"]["traceparent"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    let sent: std::collections::BTreeSet<String> = fake
        .requests_for("get_login_info")
        .iter()
        .map(|r| r.header("traceparent").unwrap().to_string())
        .collect();
    assert_eq!(returned.len(), 16);
    assert_eq!(sent, returned, "each call's header matches its own result");
    let (_, stderr) = server.finish().await;
    assert!(
        !stderr.contains("vendor1") && !stderr.contains("secret"),
        "{stderr}"
    );
}

#[tokio::test]
async fn runtime_info_reports_execution_and_checks_the_connection() {
    let (fake, mut server) = start("read").await;
    let (_, body) = call(&mut server, 1, "get_runtime_info", json!({})).await;
    let info = &body["result"];
    assert_eq!(info["mode"], "read");
    assert_eq!(
        (
            info["execution_enabled"].clone(),
            info["write_enabled"].clone()
        ),
        (json!(true), json!(false))
    );
    assert_eq!(info["server_support"], "unknown");
    assert_eq!(info["connection_checked"], false);
    assert_eq!(info["request_timeout_ms"], 30000);
    assert!(
        fake.requests().is_empty(),
        "the local overview contacts nothing"
    );

    let (_, body) = call(
        &mut server,
        2,
        "get_runtime_info",
        json!({ "check_connection": true }),
    )
    .await;
    assert_eq!(body["result"]["connection_checked"], true);
    assert_eq!(body["result"]["catalog_matches_server"], true);
    for action in ["get_login_info", "get_status", "get_version_info"] {
        assert_eq!(
            body["result"]["checks"][action]["diagnostics"]["outcome"], "success",
            "{action}"
        );
        assert_eq!(body["result"]["checks"][action]["result"]["status"], "ok");
    }

    fake.set_version("1.12.0-node");
    fake.set_fault(Some("get_status"), Fault::ServerError);
    let (response, body) = call(
        &mut server,
        3,
        "get_runtime_info",
        json!({ "check_connection": true }),
    )
    .await;
    assert!(!is_error(&response));
    assert_eq!(body["diagnostics"]["outcome"], "failed");
    assert_eq!(
        body["result"]["checks"]["get_status"]["diagnostics"]["kind"],
        "server_error"
    );
    assert_eq!(
        body["result"]["checks"]["get_login_info"]["diagnostics"]["outcome"],
        "success"
    );
    assert_eq!(body["result"]["catalog_matches_server"], false);
    assert!(
        body["result"]["hint"]
            .as_str()
            .unwrap()
            .contains("1.12.0-node")
    );
    let everything = serde_json::to_string(&body).unwrap();
    assert!(
        !everything.contains(TOKEN) && !everything.contains(&fake.url),
        "no endpoint or token in the overview"
    );
    server.finish().await;
}

#[tokio::test]
async fn the_token_never_leaves_the_authorization_header() {
    let (fake, mut server) = start("write").await;
    fake.set_fault(None, Fault::Unauthorized);
    let (response, _) = call(
        &mut server,
        1,
        "query_action",
        json!({ "action": "get_status" }),
    )
    .await;
    fake.clear_faults();
    let (ok, _) = call(
        &mut server,
        2,
        "invoke_action",
        json!({ "action": "send_msg", "params": { "user_id": 30001, "message": TOKEN } }),
    )
    .await;
    let (_, stderr) = server.finish().await;
    assert!(!response.to_string().contains(TOKEN));
    assert!(!stderr.contains(TOKEN), "{stderr}");
    assert!(ok.to_string().contains("success"));
    // One diagnostic line per call with exactly the documented fields.
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("snowluma_mcp::call"))
        .collect();
    assert_eq!(lines.len(), 2);
    for line in lines {
        for field in [
            "tool=",
            "traceparent=",
            "outcome=",
            "failure=",
            "duration_ms=",
        ] {
            assert!(line.contains(field), "{line}");
        }
        assert!(
            !line.contains("params") && !line.contains("message"),
            "{line}"
        );
    }
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
