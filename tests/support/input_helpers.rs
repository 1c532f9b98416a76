//! The built binary with the input completion tools over real stdio against the fake
//! SnowLuma, and the requests and checks the input tool tests share.
#![allow(dead_code)] // each includer uses a different part

use serde_json::{Value, json};

use crate::fake_snowluma::FakeSnowLuma;
use crate::raw_client::{RawServer, modern_meta, structured};

pub const TOKEN: &str = "input-token-value";

pub const KEY: &str = "missing_params";

pub fn forms() -> Value {
    json!({ "elicitation": { "form": {} } })
}

pub async fn start(extra: &[(&str, &str)]) -> (FakeSnowLuma, RawServer) {
    let fake = FakeSnowLuma::start(Some(TOKEN)).await;
    let mut env = vec![
        ("SNOWLUMA_MCP_MODE", "write"),
        ("SNOWLUMA_MCP_ENDPOINT", fake.url.as_str()),
        ("SNOWLUMA_MCP_TOKEN", TOKEN),
        ("SNOWLUMA_MCP_LOG", "warn"),
    ];
    env.extend_from_slice(extra);
    let server = RawServer::spawn(&env);
    (fake, server)
}

/// A modern tools/call with form elicitation declared, plus `extra` params (MRTR retry).
pub async fn modern(
    server: &mut RawServer,
    id: i64,
    tool: &str,
    args: Value,
    extra: Value,
) -> Value {
    let mut params = json!({ "name": tool, "arguments": args, "_meta": modern_meta(forms()) });
    if let Value::Object(extra) = extra {
        params.as_object_mut().unwrap().extend(extra);
    }
    server.request(id, "tools/call", params).await
}

pub fn accept(params_json: &str) -> Value {
    json!({ KEY: { "action": "accept", "content": { "params_json": params_json } } })
}

/// A failed tool result's kind and input error code.
pub fn refusal(response: &Value) -> (String, String) {
    assert_eq!(response["result"]["isError"], true, "{response}");
    let body = structured(response);
    assert_eq!(body["result"], Value::Null);
    let diagnostics = &body["diagnostics"];
    (
        diagnostics["kind"].as_str().unwrap_or("").to_string(),
        diagnostics["input_error"]
            .as_str()
            .unwrap_or("")
            .to_string(),
    )
}

pub fn send_group(group: i64) -> Value {
    json!({ "action": "send_group_msg", "params": { "group_id": group } })
}
