//! Protocol behaviour of the built binary over real stdio, checked on the exact wire: both
//! generations, the gaps rmcp leaves (notification first, -32700, cache hints for modern
//! clients only), resources, trace context and start-up.

#[path = "support/raw_client.rs"]
mod raw_client;

use raw_client::{RawServer, modern_meta, structured};
use serde_json::{Value, json};
use snowluma_mcp::catalog::ACTIONS;

const CALLER_TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

async fn initialize(server: &mut RawServer, version: &str) -> Value {
    let response = server
        .request(
            0,
            "initialize",
            json!({
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": { "name": "raw-test", "version": "1.0" }
            }),
        )
        .await;
    server
        .send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
        .await;
    response
}

fn is_traceparent(value: &Value) -> bool {
    let Some(text) = value.as_str() else {
        return false;
    };
    let parts: Vec<&str> = text.split('-').collect();
    parts.len() == 4
        && parts[0] == "00"
        && parts[1].len() == 32
        && parts[2].len() == 16
        && parts[3].len() == 2
}

#[tokio::test]
async fn legacy_session_negotiates_and_lists_tools_without_cache_hints() {
    let mut server = RawServer::spawn(&[]);
    let init = initialize(&mut server, "2025-06-18").await;
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["serverInfo"]["name"], "snowluma-mcp");
    assert!(init["result"].get("resultType").is_none());

    let tools = server.request(1, "tools/list", json!({})).await;
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "list_actions",
            "search_actions",
            "get_action",
            "list_categories",
            "get_runtime_info",
            "preview_message",
            "read_more"
        ]
    );
    for key in ["ttlMs", "cacheScope", "resultType"] {
        assert!(
            tools["result"].get(key).is_none(),
            "legacy tools/list carries {key}"
        );
    }
    for (id, method, params) in [
        (2, "resources/list", json!({})),
        (3, "resources/templates/list", json!({})),
        (
            4,
            "resources/read",
            json!({ "uri": "snowluma://onebot/actions" }),
        ),
    ] {
        let response = server.request(id, method, params).await;
        assert!(
            response["result"].get("ttlMs").is_none(),
            "legacy {method} carries ttlMs"
        );
        assert!(
            response["result"].get("cacheScope").is_none(),
            "legacy {method} carries cacheScope"
        );
    }
    let (code, stderr) = server.finish().await;
    assert_eq!(code, Some(0));
    let ready = format!("ready: {} actions", ACTIONS.len());
    assert!(stderr.contains(&ready), "ready line missing: {stderr}");
    assert!(stderr.contains("mode docs"));
}

/// The log goes through a writer thread (tracing-appender): the log must still reach
/// stderr while the server runs, not only when it exits.
#[tokio::test]
async fn the_log_reaches_stderr_while_the_server_runs() {
    let mut server = RawServer::spawn(&[("SNOWLUMA_MCP_LOG", "info")]);
    initialize(&mut server, "2025-11-25").await;
    let ready = format!("ready: {} actions", ACTIONS.len());
    let line = server.stderr_line(&ready, raw_client::WAIT).await;
    assert!(line.is_some(), "no ready line on stderr while running");
    assert!(server.alive(), "the line came from a running server");
    let (code, stderr) = server.finish().await;
    assert_eq!(code, Some(0));
    assert!(stderr.contains(&ready), "{stderr}");
}

#[tokio::test]
async fn modern_requests_get_the_cache_hints_of_the_feature_table() {
    let mut server = RawServer::spawn(&[]);
    let meta = modern_meta(json!({}));
    let discover = server
        .request(1, "server/discover", json!({ "_meta": meta }))
        .await;
    let versions = discover["result"]["supportedVersions"].as_array().unwrap();
    assert!(versions.contains(&json!("2026-07-28")) && versions.contains(&json!("2025-11-25")));
    assert_eq!(
        discover["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "snowluma-mcp"
    );

    let expected = [
        ("tools/list", json!({}), "private"),
        ("resources/list", json!({}), "private"),
        ("resources/templates/list", json!({}), "public"),
        (
            "resources/read",
            json!({ "uri": "snowluma://onebot/actions" }),
            "public",
        ),
        (
            "resources/read",
            json!({ "uri": "snowluma://onebot/actions/send_msg" }),
            "public",
        ),
    ];
    for (i, (method, mut params, scope)) in expected.into_iter().enumerate() {
        params["_meta"] = meta.clone();
        let response = server.request(10 + i as i64, method, params).await;
        assert_eq!(response["result"]["resultType"], "complete", "{method}");
        assert_eq!(response["result"]["ttlMs"], 300_000, "{method}");
        assert_eq!(response["result"]["cacheScope"], scope, "{method}");
    }
    // Tool calls never carry cache hints.
    let call = server
        .request(
            20,
            "tools/call",
            json!({ "name": "get_runtime_info", "arguments": {}, "_meta": meta }),
        )
        .await;
    assert!(call["result"].get("ttlMs").is_none() && call["result"].get("cacheScope").is_none());
    server.finish().await;
}

#[tokio::test]
async fn unsupported_versions_and_missing_envelopes_are_rejected_without_ending_the_process() {
    let mut server = RawServer::spawn(&[]);
    let mut meta = modern_meta(json!({}));
    meta["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let response = server
        .request(1, "tools/list", json!({ "_meta": meta }))
        .await;
    assert_eq!(response["error"]["code"], -32022);
    assert_eq!(response["error"]["data"]["requested"], "2099-01-01");
    assert!(
        response["error"]["data"]["supported"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28"))
    );

    let response = server
        .request(
            2,
            "tools/list",
            json!({ "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28" } }),
        )
        .await;
    assert_eq!(response["error"]["code"], -32602);
    assert!(
        response["error"]["message"]
            .as_str()
            .unwrap()
            .contains("clientCapabilities")
    );

    // A version-less call is rejected too, and the process still answers afterwards.
    let response = server
        .request(
            3,
            "tools/call",
            json!({ "name": "get_runtime_info", "arguments": {} }),
        )
        .await;
    assert_eq!(response["error"]["code"], -32602);
    let response = server
        .request(
            4,
            "tools/call",
            json!({ "name": "get_runtime_info", "arguments": {}, "_meta": modern_meta(json!({})) }),
        )
        .await;
    assert_eq!(structured(&response)["result"]["mode"], "docs");
    server.finish().await;
}

#[tokio::test]
async fn a_notification_first_and_garbage_lines_do_not_end_the_process() {
    let mut server = RawServer::spawn(&[]);
    server
        .send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
        .await;
    server
        .send(&json!({ "jsonrpc": "2.0", "id": 99, "result": {} }))
        .await;
    server.send_line("{not json").await;
    let parse_error = server.next().await.expect("a reply to the unparsable line");
    assert_eq!(
        parse_error,
        json!({ "jsonrpc": "2.0", "id": null, "error": { "code": -32700, "message": "Parse error" } })
    );

    server
        .send_line(r#"[{"jsonrpc":"2.0","id":2,"method":"tools/list"}]"#)
        .await;
    let invalid = server.next().await.unwrap();
    assert_eq!(invalid["error"]["code"], -32600);
    assert_eq!(invalid["id"], Value::Null);

    server
        .send_line(r#"{"jsonrpc":"2.0","id":7,"foo":1}"#)
        .await;
    let invalid = server.next().await.unwrap();
    assert_eq!(invalid["error"]["code"], -32600);
    assert_eq!(
        invalid["id"], 7,
        "the id of a well-formed but invalid message is echoed"
    );

    let init = initialize(&mut server, "2025-11-25").await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    let response = server
        .request(
            8,
            "tools/call",
            json!({ "name": "list_categories", "arguments": {} }),
        )
        .await;
    assert_eq!(
        structured(&response)["result"].as_array().unwrap().len(),
        11
    );
    let (code, _) = server.finish().await;
    assert_eq!(code, Some(0));
}

/// rmcp's bootstrap loop answers `server/discover`, `ping` and requests it cannot place
/// (incomplete `_meta`) itself and reads on; a notification or response read there used to end
/// the process. A modern client may cancel or stray at any point, so each is dropped until a
/// lifecycle has begun, and passed through after.
#[tokio::test]
async fn stray_messages_between_bootstrap_requests_do_not_end_the_process() {
    let mut server = RawServer::spawn(&[]);
    let meta = modern_meta(json!({}));
    let discover = server
        .request(1, "server/discover", json!({ "_meta": meta }))
        .await;
    assert!(discover.get("result").is_some(), "{discover}");
    let strays = [
        json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": { "requestId": 1, "reason": "changed my mind" } }),
        json!({ "jsonrpc": "2.0", "id": 99, "result": {} }),
        json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
    ];
    for stray in &strays {
        server.send(stray).await;
    }
    let ping = server.request(2, "ping", json!({})).await;
    assert_eq!(ping["result"], json!({}), "{ping}");
    for stray in &strays {
        server.send(stray).await;
    }
    // A request without the modern `_meta` is refused and the loop reads on.
    let refused = server.request(3, "tools/list", json!({})).await;
    assert!(refused.get("error").is_some(), "{refused}");
    for stray in &strays {
        server.send(stray).await;
    }
    let response = server
        .request(
            4,
            "tools/call",
            json!({ "name": "list_categories", "arguments": {}, "_meta": meta }),
        )
        .await;
    assert_eq!(
        structured(&response)["result"].as_array().map(Vec::len),
        Some(11),
        "{response}"
    );
    // Inside the lifecycle a cancellation of a finished request is harmless too.
    server.send(&strays[0]).await;
    let listed = server
        .request(5, "tools/list", json!({ "_meta": meta }))
        .await;
    assert!(listed["result"]["tools"].is_array(), "{listed}");
    let (code, stderr) = server.finish().await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("ended before it started"), "{stderr}");
}

#[tokio::test]
async fn unknown_resources_use_each_generations_code() {
    let mut server = RawServer::spawn(&[]);
    initialize(&mut server, "2025-11-25").await;
    let legacy = server
        .request(
            1,
            "resources/read",
            json!({ "uri": "snowluma://onebot/actions/no_such_action" }),
        )
        .await;
    assert_eq!(legacy["error"]["code"], -32002);
    assert!(
        legacy["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no_such_action")
    );
    let modern = server
        .request(2, "resources/read", json!({ "uri": "snowluma://onebot/actions/no_such_action", "_meta": modern_meta(json!({})) }))
        .await;
    assert_eq!(modern["error"]["code"], -32602);
    let alias = server
        .request(
            3,
            "resources/read",
            json!({ "uri": "snowluma://onebot/actions/get_record_text" }),
        )
        .await;
    let contract: Value =
        serde_json::from_str(alias["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(contract["name"], "fetch_ptt_text");
    assert_eq!(
        alias["result"]["contents"][0]["mimeType"],
        "application/json"
    );
    server.finish().await;
}

#[tokio::test]
async fn every_call_gets_a_trace_context_in_both_generations() {
    let mut server = RawServer::spawn(&[]);
    initialize(&mut server, "2025-11-25").await;
    // Legacy, caller trace: same trace id, new span id, tracestate kept.
    let response = server
        .request(1, "tools/call", json!({
            "name": "get_action", "arguments": { "name": "get_msg" },
            "_meta": { "traceparent": CALLER_TRACEPARENT, "tracestate": "vendor1=value1", "baggage": "secret=1" }
        }))
        .await;
    let traceparent = &response["result"]["_meta"]["traceparent"];
    assert!(is_traceparent(traceparent));
    assert!(
        traceparent
            .as_str()
            .unwrap()
            .starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-")
    );
    assert_ne!(traceparent, CALLER_TRACEPARENT);
    assert_eq!(response["result"]["_meta"]["tracestate"], "vendor1=value1");
    assert!(structured(&response)["diagnostics"].get("trace").is_none());

    // Modern, tool error, no caller trace: a fresh trace still names the call.
    let response = server
        .request(2, "tools/call", json!({ "name": "get_action", "arguments": { "name": "nope" }, "_meta": modern_meta(json!({})) }))
        .await;
    assert_eq!(response["result"]["isError"], true);
    let fresh = response["result"]["_meta"]["traceparent"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(is_traceparent(&json!(fresh)));
    assert!(!fresh.contains("4bf92f3577b34da6a3ce929d0e0e4736"));

    // Invalid trace metadata: the call still succeeds, with one fixed diagnostic.
    let mut meta = modern_meta(json!({}));
    meta["traceparent"] = json!("00-zzzz-nothex-01");
    let response = server
        .request(
            3,
            "tools/call",
            json!({ "name": "list_categories", "arguments": {}, "_meta": meta }),
        )
        .await;
    let body = structured(&response);
    assert_eq!(body["diagnostics"]["outcome"], "success");
    assert_eq!(body["diagnostics"]["trace"], snowluma_trace_warning());
    let (_, stderr) = server.finish().await;
    // One call line per call, without tracestate or baggage.
    assert_eq!(stderr.matches("snowluma_mcp::call").count(), 3, "{stderr}");
    assert!(
        !stderr.contains("vendor1") && !stderr.contains("secret=1"),
        "{stderr}"
    );
    assert!(stderr.contains(traceparent.as_str().unwrap()));
}

fn snowluma_trace_warning() -> &'static str {
    snowluma_mcp::trace::INVALID_TRACE_CONTEXT
}

#[tokio::test]
async fn tools_reject_bad_arguments_with_the_field_and_range() {
    let mut server = RawServer::spawn(&[]);
    initialize(&mut server, "2025-11-25").await;
    let cases = [
        (
            json!({ "name": "list_actions", "arguments": { "limit": 201 } }),
            "limit must be between 1 and 200 (got 201)",
        ),
        (
            json!({ "name": "list_actions", "arguments": { "offset": -1 } }),
            "offset must be a non-negative integer (got -1)",
        ),
        (
            json!({ "name": "list_actions", "arguments": { "limit": "ten" } }),
            "invalid argument `limit`",
        ),
        (
            json!({ "name": "list_actions", "arguments": { "categroy": "x" } }),
            "unknown field `categroy`",
        ),
        (
            json!({ "name": "list_actions", "arguments": { "category": "nope" } }),
            "unknown category `nope`",
        ),
        (
            json!({ "name": "search_actions", "arguments": { "query": "  " } }),
            "query must not be empty",
        ),
        (
            json!({ "name": "search_actions", "arguments": { "query": "x", "match": "fuzzy" } }),
            "invalid argument `match`",
        ),
        (
            json!({ "name": "get_action", "arguments": {} }),
            "missing field `name`",
        ),
        (
            json!({ "name": "get_runtime_info", "arguments": { "check_connection": true } }),
            "check_connection needs read or write mode",
        ),
    ];
    for (i, (params, needle)) in cases.into_iter().enumerate() {
        let response = server
            .request(i as i64 + 1, "tools/call", params.clone())
            .await;
        assert_eq!(response["result"]["isError"], true, "{params}");
        let body = structured(&response);
        assert_eq!(body["result"], Value::Null);
        assert_eq!(body["diagnostics"]["outcome"], "failed");
        let message = body["diagnostics"]["message"].as_str().unwrap();
        assert!(message.contains(needle), "{params}: {message}");
        assert!(
            body["diagnostics"]["next_step"]
                .as_str()
                .is_some_and(|s| !s.is_empty())
        );
    }
    let unknown_tool = server
        .request(
            50,
            "tools/call",
            json!({ "name": "query_actions", "arguments": {} }),
        )
        .await;
    assert_eq!(unknown_tool["error"]["code"], -32602);
    // Execution tools are refused in docs mode even though they were never listed.
    server.finish().await;
}

#[tokio::test]
async fn bad_configuration_exits_non_zero_with_a_clear_message() {
    for (env, needle) in [
        (
            vec![("SNOWLUMA_MCP_MODE", "write")],
            "needs SNOWLUMA_MCP_ENDPOINT",
        ),
        (vec![("SNOWLUMA_MCP_MODE", "loud")], "loud"),
        (
            vec![("SNOWLUMA_MCP_ENDPOINT", "ftp://127.0.0.1:3000/")],
            "must use http or https",
        ),
        (
            vec![("SNOWLUMA_MCP_ENDPOINT", "http://user:pw@127.0.0.1:3000/")],
            "must not embed credentials",
        ),
        (
            vec![
                ("SNOWLUMA_MCP_ENDPOINT", "http://127.0.0.1:3000/"),
                ("SNOWLUMA_MCP_TIMEOUT_MS", "0"),
            ],
            "SNOWLUMA_MCP_TIMEOUT_MS",
        ),
    ] {
        let server = RawServer::spawn(&env);
        let (code, stderr) = server.finish().await;
        assert_ne!(code, Some(0), "{env:?} should fail");
        assert!(stderr.contains(needle), "{env:?}: {stderr}");
        assert!(!stderr.contains("pw@"), "credentials echoed: {stderr}");
    }
    let help = RawServer::spawn_with_args(&[], &["--help"]);
    let (code, _) = help.finish().await;
    assert_eq!(code, Some(0));
    for (flag, needle) in [
        ("--help", "SNOWLUMA_MCP_ENDPOINT"),
        ("--version", env!("CARGO_PKG_VERSION")),
    ] {
        let output = std::process::Command::new(raw_client::binary())
            .arg(flag)
            .output()
            .unwrap();
        assert!(output.status.success());
        assert!(
            String::from_utf8_lossy(&output.stdout).contains(needle),
            "{flag}"
        );
    }
}
