//! Execution end to end, what a call's answer says: the built binary over real stdio against
//! the fake SnowLuma. Outcomes follow the envelope; transport failures are tool errors with a
//! kind and a next step; timeouts leave writes unknown and nothing is retried; cancellation
//! aborts the request and the body read.

#[path = "support/exec_helpers.rs"]
mod exec_helpers;
#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/raw_client.rs"]
mod raw_client;

use std::time::Duration;

use serde_json::{Value, json};

use exec_helpers::*;
use fake_snowluma::{FakeOptions, FakeSnowLuma, Fault};
use raw_client::{modern_meta, wait_until};

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
        wait_until(raw_client::WAIT, || {
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
