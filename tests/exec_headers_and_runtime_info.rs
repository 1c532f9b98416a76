//! Execution end to end, what travels beside the params and what the server reports: the
//! built binary over real stdio against the fake SnowLuma. Trace context goes to SnowLuma as
//! headers only, the token never leaves the Authorization header, and the runtime overview
//! reports execution and checks the connection.

#[path = "support/exec_helpers.rs"]
mod exec_helpers;
#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/raw_client.rs"]
mod raw_client;

use serde_json::json;

use exec_helpers::*;
use fake_snowluma::Fault;
use raw_client::modern_meta;

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
    let hint = body["result"]["hint"].as_str().unwrap();
    assert!(
        hint.contains("--bin catalog-sync"),
        "the hint names the sync: {hint}"
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
