//! The built binary in an executing mode over real stdio against the fake SnowLuma, and
//! tool calls on it: what the execution tests share.
#![allow(dead_code)] // each includer uses a different part

use serde_json::{Value, json};

use crate::fake_snowluma::FakeSnowLuma;
use crate::raw_client::{RawServer, modern_meta, structured};

pub const TOKEN: &str = "s3cret-token-value";

pub const CALLER: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

pub async fn start(mode: &str) -> (FakeSnowLuma, RawServer) {
    let fake = FakeSnowLuma::start(Some(TOKEN)).await;
    let server = spawn(mode, &fake.url, &[]);
    (fake, server)
}

pub fn spawn(mode: &str, url: &str, extra: &[(&str, &str)]) -> RawServer {
    let mut env = vec![
        ("SNOWLUMA_MCP_MODE", mode),
        ("SNOWLUMA_MCP_ENDPOINT", url),
        ("SNOWLUMA_MCP_TOKEN", TOKEN),
    ];
    env.extend_from_slice(extra);
    RawServer::spawn(&env)
}

pub async fn call(server: &mut RawServer, id: i64, tool: &str, args: Value) -> (Value, Value) {
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

pub fn is_error(response: &Value) -> bool {
    response["result"]["isError"] == json!(true)
}
