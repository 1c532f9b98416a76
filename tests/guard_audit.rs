//! The audit log end to end: the built binary over stdio against the fake SnowLuma, the log
//! file it writes, and `snowluma-mcp audit` reading it back.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/raw_client.rs"]
mod raw_client;

use std::path::Path;

use fake_snowluma::FakeSnowLuma;
use raw_client::{RawServer, binary, modern_meta, structured};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

const TOKEN: &str = "guard-audit-token";
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

async fn start(log: &Path, extra: &[(&str, &str)]) -> (FakeSnowLuma, RawServer) {
    let fake = FakeSnowLuma::start(Some(TOKEN)).await;
    let log = log.to_str().unwrap().to_string();
    let mut env = vec![
        ("SNOWLUMA_MCP_MODE", "write"),
        ("SNOWLUMA_MCP_ENDPOINT", fake.url.as_str()),
        ("SNOWLUMA_MCP_TOKEN", TOKEN),
        ("SNOWLUMA_MCP_LOG", "warn"),
        ("SNOWLUMA_MCP_AUDIT_LOG", log.as_str()),
    ];
    env.extend_from_slice(extra);
    let server = RawServer::spawn(&env);
    (fake, server)
}

async fn call(server: &mut RawServer, id: i64, tool: &str, args: Value) -> Value {
    let mut meta = modern_meta(json!({}));
    meta["traceparent"] = json!(format!("00-{TRACE_ID}-00f067aa0ba902b7-01"));
    server
        .request(
            id,
            "tools/call",
            json!({ "name": tool, "arguments": args, "_meta": meta }),
        )
        .await
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

fn sha256_hex(params: &Value) -> String {
    let text = serde_json::to_vec(params.as_object().unwrap_or(&Map::new())).unwrap();
    Sha256::digest(&text)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[tokio::test]
async fn every_write_and_refusal_is_one_line_and_reads_are_not_logged() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let (fake, mut server) = start(
        &log,
        &[
            ("SNOWLUMA_MCP_DENY_ACTIONS", "set_group_kick"),
            ("SNOWLUMA_MCP_SEND_BURST", "1"),
        ],
    )
    .await;
    let send = json!({ "group_id": 20001, "message": "hello" });
    let response = call(
        &mut server,
        1,
        "invoke_action",
        json!({ "action": "send_group_msg", "params": send }),
    )
    .await;
    assert_eq!(structured(&response)["diagnostics"]["outcome"], "success");
    let read = call(
        &mut server,
        2,
        "query_action",
        json!({ "action": "get_status" }),
    )
    .await;
    assert_eq!(structured(&read)["diagnostics"]["outcome"], "success");
    // Refused by the send limit (burst 1) and by the deny list.
    let limited = call(
        &mut server,
        3,
        "invoke_action",
        json!({ "action": "send_group_msg", "params": send }),
    )
    .await;
    assert_eq!(structured(&limited)["diagnostics"]["kind"], "rate_limited");
    let denied = call(
        &mut server,
        4,
        "invoke_action",
        json!({ "action": "set_group_kick", "params": { "group_id": 20001, "user_id": 30001 } }),
    )
    .await;
    assert_eq!(structured(&denied)["diagnostics"]["kind"], "denied");

    let entries = lines(&log);
    assert_eq!(entries.len(), 3, "{entries:#?}");
    let sent = &entries[0];
    assert!(
        sent["principal"].as_str().unwrap().starts_with("session-"),
        "stdio records the session: {sent}"
    );
    assert_eq!(sent["tool"], "invoke_action");
    assert_eq!(sent["action"], "send_group_msg");
    assert_eq!(sent["targets"], json!(["group:20001"]));
    assert_eq!(sent["outcome"], "success");
    assert_eq!(sent["retcode"], 0);
    assert!(sent.get("kind").is_none());
    assert!(
        sent["traceparent"].as_str().unwrap().contains(TRACE_ID),
        "{sent}"
    );
    assert_eq!(sent["params_sha256"], sha256_hex(&send));
    assert!(
        sent.get("params").is_none(),
        "params only with _AUDIT_PARAMS=1"
    );
    assert!(
        chrono::DateTime::parse_from_rfc3339(sent["time"].as_str().unwrap()).is_ok(),
        "{sent}"
    );
    assert_eq!(entries[1]["outcome"], "refused");
    assert_eq!(entries[1]["kind"], "rate_limited");
    assert_eq!(entries[2]["action"], "set_group_kick");
    assert_eq!(entries[2]["kind"], "denied");
    assert!(!std::fs::read_to_string(&log).unwrap().contains(TOKEN));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&log).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the log is private");
    }
    assert_eq!(fake.requests_for("send_group_msg").len(), 1);
    server.finish().await;

    // `snowluma-mcp audit` prints it for people, filtered by action.
    let output = std::process::Command::new(binary())
        .args([
            "audit",
            "--log",
            log.to_str().unwrap(),
            "--action",
            "send_group_msg",
        ])
        .env_remove("SNOWLUMA_MCP_AUDIT_LOG")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    let printed: Vec<&str> = text.lines().collect();
    assert_eq!(printed.len(), 2, "{text}");
    assert!(
        printed[0].contains("invoke_action send_group_msg -> group:20001  success retcode=0"),
        "{text}"
    );
    assert!(printed[1].contains("refused (rate_limited)"), "{text}");
    let future = std::process::Command::new(binary())
        .args([
            "audit",
            "--log",
            log.to_str().unwrap(),
            "--since",
            "2999-01-01T00:00:00Z",
        ])
        .output()
        .unwrap();
    assert!(future.status.success());
    assert!(future.stdout.is_empty(), "nothing is that recent");
}

#[tokio::test]
async fn audit_params_records_the_params_themselves() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let (_fake, mut server) = start(&log, &[("SNOWLUMA_MCP_AUDIT_PARAMS", "1")]).await;
    let params = json!({ "group_id": 20001, "user_id": 30001, "duration": 60 });
    let response = call(
        &mut server,
        1,
        "invoke_action",
        json!({ "action": "set_group_ban", "params": params }),
    )
    .await;
    assert_eq!(structured(&response)["diagnostics"]["outcome"], "success");
    server.finish().await;
    let entries = lines(&log);
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["params"], params);
    assert_eq!(entries[0]["params_sha256"], sha256_hex(&params));
}

#[tokio::test]
async fn an_unwritable_log_refuses_writes_and_nothing_reaches_snowluma() {
    let dir = tempfile::tempdir().unwrap();
    // A directory where the log file should be: it cannot be opened for appending.
    let (fake, mut server) = start(dir.path(), &[]).await;
    let response = call(
        &mut server,
        1,
        "invoke_action",
        json!({ "action": "send_group_msg", "params": { "group_id": 20001, "message": "x" } }),
    )
    .await;
    assert_eq!(response["result"]["isError"], true, "{response}");
    let body = structured(&response);
    assert_eq!(body["result"], Value::Null);
    assert_eq!(body["diagnostics"]["kind"], "audit_log", "{body}");
    assert!(
        body["diagnostics"]["next_step"]
            .as_str()
            .unwrap()
            .contains("SNOWLUMA_MCP_AUDIT_LOG")
    );
    assert!(fake.requests_for("send_group_msg").is_empty());
    // Reads are not audited, so they still run.
    let read = call(
        &mut server,
        2,
        "query_action",
        json!({ "action": "get_status" }),
    )
    .await;
    assert_eq!(structured(&read)["diagnostics"]["outcome"], "success");
    server.finish().await;
}
