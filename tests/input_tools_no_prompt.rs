//! When the input completion tools never prompt, over real stdio against the fake SnowLuma:
//! complete arguments and clients without form elicitation run exactly as the original
//! tools, and each mode lists the input tools like the originals.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/input_helpers.rs"]
mod input_helpers;
#[path = "support/raw_client.rs"]
mod raw_client;

use serde_json::json;

use input_helpers::*;
use raw_client::{RawServer, modern_meta, structured};

#[tokio::test]
async fn complete_arguments_and_formless_clients_never_see_a_prompt() {
    let (fake, mut server) = start(&[]).await;
    let complete = json!({ "action": "get_group_info", "params": { "group_id": 20001 } });
    let r = modern(
        &mut server,
        1,
        "query_action_with_input",
        complete,
        json!({}),
    )
    .await;
    assert!(r["result"].get("inputRequests").is_none(), "{r}");
    assert_eq!(structured(&r)["diagnostics"]["outcome"], "success");

    // Modern, no elicitation in this request's capabilities.
    let r = server
        .request(
            2,
            "tools/call",
            json!({ "name": "invoke_action_with_input", "arguments": send_group(20001), "_meta": modern_meta(json!({})) }),
        )
        .await;
    assert_eq!(refusal(&r).0, "input_unsupported");
    let next = structured(&r)["diagnostics"]["next_step"].clone();
    assert!(next.as_str().unwrap().contains("invoke_action"), "{next}");
    assert_eq!(fake.requests().len(), 1);

    // The original tool still refuses incomplete params as before.
    let r = server
        .request(
            3,
            "tools/call",
            json!({ "name": "invoke_action", "arguments": send_group(20001), "_meta": modern_meta(forms()) }),
        )
        .await;
    assert_eq!(refusal(&r).0, "invalid_arguments");
    server.finish().await;
}

#[tokio::test]
async fn modes_list_the_input_tools_like_the_originals() {
    for (mode, query, invoke) in [
        ("docs", false, false),
        ("read", true, false),
        ("write", true, true),
    ] {
        let mut env = vec![("SNOWLUMA_MCP_MODE", mode), ("SNOWLUMA_MCP_LOG", "warn")];
        if mode != "docs" {
            env.push(("SNOWLUMA_MCP_ENDPOINT", "http://127.0.0.1:9/"));
        }
        let mut server = RawServer::spawn(&env);
        let tools = server
            .request(1, "tools/list", json!({ "_meta": modern_meta(json!({})) }))
            .await;
        let names: Vec<&str> = tools["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names.contains(&"query_action_with_input"), query, "{mode}");
        assert_eq!(
            names.contains(&"invoke_action_with_input"),
            invoke,
            "{mode}"
        );
        server.finish().await;
    }
}
