//! Send limits end to end: the built binary over stdio against the fake SnowLuma. The refill
//! rate is one send a minute, so the count that gets through is the burst whatever the
//! machine's speed (a test would need over a minute per send to see one more).

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/raw_client.rs"]
mod raw_client;

use fake_snowluma::FakeSnowLuma;
use raw_client::{RawServer, modern_meta, structured};
use serde_json::{Value, json};

const TOKEN: &str = "guard-limits-token";

async fn start(extra: &[(&str, &str)]) -> (FakeSnowLuma, RawServer) {
    let fake = FakeSnowLuma::start(Some(TOKEN)).await;
    let mut env = vec![
        ("SNOWLUMA_MCP_MODE", "write"),
        ("SNOWLUMA_MCP_ENDPOINT", fake.url.as_str()),
        ("SNOWLUMA_MCP_TOKEN", TOKEN),
        ("SNOWLUMA_MCP_LOG", "warn"),
        ("SNOWLUMA_MCP_SEND_PER_TARGET_PER_MIN", "1"),
    ];
    env.extend_from_slice(extra);
    let server = RawServer::spawn(&env);
    (fake, server)
}

async fn call(server: &mut RawServer, id: i64, tool: &str, args: Value) -> Value {
    server
        .request(
            id,
            "tools/call",
            json!({ "name": tool, "arguments": args, "_meta": modern_meta(json!({})) }),
        )
        .await
}

fn send_group(group: i64, text: &str) -> Value {
    json!({ "action": "send_group_msg", "params": { "group_id": group, "message": text } })
}

/// The refusal's retry_after_ms and bucket, after checking its shape.
fn rate_limited(response: &Value) -> (u64, String) {
    assert_eq!(response["result"]["isError"], true, "{response}");
    let body = structured(response);
    assert_eq!(body["result"], Value::Null, "{body}");
    let diagnostics = &body["diagnostics"];
    assert_eq!(diagnostics["kind"], "rate_limited", "{diagnostics}");
    assert!(
        diagnostics["next_step"]
            .as_str()
            .unwrap()
            .contains("retry_after_ms")
    );
    (
        diagnostics["retry_after_ms"]
            .as_u64()
            .expect("retry_after_ms"),
        diagnostics["bucket"].as_str().unwrap().to_string(),
    )
}

#[tokio::test]
async fn a_burst_of_thirty_lets_exactly_the_burst_through_per_group() {
    let (fake, mut server) = start(&[]).await;
    let mut passed = 0;
    for id in 1..=30 {
        let response = call(&mut server, id, "invoke_action", send_group(20001, "hi")).await;
        if response["result"]["isError"] == true {
            let (retry_after_ms, bucket) = rate_limited(&response);
            assert_eq!(bucket, "target");
            // One token a minute: the next one is due within the minute, not now.
            assert!(
                (1..=60_000).contains(&retry_after_ms),
                "retry_after_ms {retry_after_ms}"
            );
        } else {
            assert_eq!(structured(&response)["diagnostics"]["outcome"], "success");
            passed += 1;
        }
    }
    assert_eq!(passed, 5, "the default burst is 5");
    assert_eq!(fake.requests_for("send_group_msg").len(), 5);

    // Another group has its own bucket.
    for id in 31..=36 {
        let response = call(&mut server, id, "invoke_action", send_group(20002, "hi")).await;
        assert_eq!(
            response["result"]["isError"] == true,
            id == 36,
            "{response}"
        );
    }
    assert_eq!(fake.requests_for("send_group_msg").len(), 10);

    // Reads are never limited.
    for id in 40..50 {
        let response = call(
            &mut server,
            id,
            "query_action",
            json!({ "action": "get_group_info", "params": { "group_id": 20001 } }),
        )
        .await;
        assert_ne!(response["result"]["isError"], true, "{response}");
    }
    server.finish().await;
}

#[tokio::test]
async fn typed_tools_and_every_send_action_share_the_buckets() {
    let (fake, mut server) = start(&[
        ("SNOWLUMA_MCP_TOOLSETS", "message"),
        ("SNOWLUMA_MCP_SEND_TOTAL_PER_MIN", "7"),
    ])
    .await;
    for id in 1..=5 {
        let response = call(
            &mut server,
            id,
            "send_group_msg",
            json!({ "group_id": 20001, "message": "typed" }),
        )
        .await;
        assert_ne!(response["result"]["isError"], true, "{response}");
    }
    // The same group through invoke_action and another send action: its bucket is empty.
    let response = call(
        &mut server,
        6,
        "invoke_action",
        json!({ "action": "send_msg", "params": { "message_type": "group", "group_id": "20001", "message": "x" } }),
    )
    .await;
    assert_eq!(rate_limited(&response).1, "target");
    // Two more to other targets fill the overall bucket of 7.
    for (id, user) in [(7, 30001), (8, 30002)] {
        let response = call(
            &mut server,
            id,
            "invoke_action",
            json!({ "action": "send_private_msg", "params": { "user_id": user, "message": "x" } }),
        )
        .await;
        assert_ne!(response["result"]["isError"], true, "{response}");
    }
    let response = call(
        &mut server,
        9,
        "invoke_action",
        json!({ "action": "send_like", "params": { "user_id": 30003 } }),
    )
    .await;
    let (retry_after_ms, bucket) = rate_limited(&response);
    assert_eq!(bucket, "overall");
    assert!((1..=60_000).contains(&retry_after_ms));
    // Writes that do not send are not counted.
    let response = call(
        &mut server,
        10,
        "invoke_action",
        json!({ "action": "set_group_card", "params": { "group_id": 20001, "user_id": 30001 } }),
    )
    .await;
    assert_ne!(response["result"]["isError"], true, "{response}");
    assert_eq!(fake.requests_for("send_group_msg").len(), 5);
    assert!(fake.requests_for("send_msg").is_empty());
    assert!(fake.requests_for("send_like").is_empty());
    server.finish().await;
}

#[tokio::test]
async fn zero_turns_a_bucket_off() {
    let (fake, mut server) = start(&[
        ("SNOWLUMA_MCP_SEND_PER_TARGET_PER_MIN", "0"),
        ("SNOWLUMA_MCP_SEND_TOTAL_PER_MIN", "0"),
    ])
    .await;
    for id in 1..=12 {
        let response = call(&mut server, id, "invoke_action", send_group(20001, "hi")).await;
        assert_ne!(response["result"]["isError"], true, "{response}");
    }
    assert_eq!(fake.requests_for("send_group_msg").len(), 12);
    server.finish().await;
}
