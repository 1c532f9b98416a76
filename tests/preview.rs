//! `preview_message` and its MCP Apps panel end to end: the built binary over real stdio,
//! driven by rmcp's client in both generations (every mode, with and without the Apps
//! extension) and by raw JSON lines for exact wire checks (per-request capabilities, cache
//! hints, the resource's CSP). Write mode sends the draft's own `invoke_action` arguments to
//! the fake SnowLuma to prove they are what SnowLuma accepts.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/raw_client.rs"]
mod raw_client;
#[path = "support/rmcp_client.rs"]
mod rmcp_client;

use fake_snowluma::FakeSnowLuma;
use raw_client::{RawServer, modern_meta, structured};
use rmcp::RoleClient;
use rmcp::model::{ClientCapabilities, ClientConfig, ReadResourceRequestParams, ResourceContents};
use rmcp::service::RunningService;
use serde_json::{Value, json};
use tokio::process::Command;

const PANEL_URI: &str = "ui://snowluma/preview-message.html";
const PANEL_MIME: &str = "text/html;profile=mcp-app";
const TOKEN: &str = "preview-test-token";

/// What an MCP Apps host declares: the ui extension with the mcp-app HTML type.
fn apps_capabilities() -> Value {
    json!({ "extensions": { "io.modelcontextprotocol/ui": { "mimeTypes": [PANEL_MIME] } } })
}

fn client_config(apps: bool) -> ClientConfig {
    let mut capabilities = ClientCapabilities::default();
    if apps {
        capabilities = serde_json::from_value(apps_capabilities()).unwrap();
    }
    let mut config = ClientConfig::default();
    config.capabilities = capabilities;
    config
}

/// An rmcp client connected to the binary in `mode` (read and write point at `endpoint`).
async fn connect(
    modern: bool,
    mode: &str,
    endpoint: Option<&str>,
    apps: bool,
) -> RunningService<RoleClient, ClientConfig> {
    let mut command = Command::new(raw_client::binary());
    command
        .env_remove("SNOWLUMA_MCP_ENDPOINT")
        .env_remove("SNOWLUMA_MCP_TOKEN")
        .env("SNOWLUMA_MCP_MODE", mode)
        .env("SNOWLUMA_MCP_LOG", "warn");
    if let Some(url) = endpoint {
        command
            .env("SNOWLUMA_MCP_ENDPOINT", url)
            .env("SNOWLUMA_MCP_TOKEN", TOKEN);
    }
    let handler = client_config(apps);
    rmcp_client::connect(handler, command, modern).await
}

/// tools/call, with the result checked against the advertised outputSchema and the text
/// block; returns (isError, structuredContent).
async fn call(
    client: &RunningService<RoleClient, ClientConfig>,
    name: &str,
    args: Value,
) -> (bool, Value) {
    let (result, structured) = rmcp_client::call_listed(client, name, args).await;
    (result.is_error == Some(true), structured)
}

fn group_args() -> Value {
    json!({ "message_type": "group", "target_id": 20001, "text": "[CQ:at,qq=all] hi", "reply_to": -123456 })
}

fn expected_invoke_args() -> Value {
    json!({
        "action": "send_group_msg",
        "params": {
            "group_id": 20001,
            "message": [
                { "type": "reply", "data": { "id": -123456 } },
                { "type": "text", "data": { "text": "[CQ:at,qq=all] hi" } }
            ]
        }
    })
}

#[tokio::test]
async fn preview_message_answers_in_every_mode_and_both_generations() {
    let fake = FakeSnowLuma::start(Some(TOKEN)).await;
    for (mode, endpoint, can_send) in [
        ("docs", None, false),
        ("read", Some(fake.url.as_str()), false),
        ("write", Some(fake.url.as_str()), true),
    ] {
        for modern in [false, true] {
            let what = format!("{mode} modern={modern}");
            let client = connect(modern, mode, endpoint, false).await;
            let (error, body) = call(&client, "preview_message", group_args()).await;
            assert!(!error, "{what}: {body}");
            let result = &body["result"];
            assert_eq!(result["can_send"], json!(can_send), "{what}");
            assert_eq!(result["invoke_action"], expected_invoke_args(), "{what}");
            assert_eq!(result["reply_to"], -123456, "{what}");
            let draft = result["draft"].as_str().unwrap();
            assert!(draft.contains("group 20001") && draft.contains("[CQ:at,qq=all] hi"));
            assert_eq!(draft.contains("cannot send"), !can_send, "{what}: {draft}");

            let (error, private) = call(
                &client,
                "preview_message",
                json!({ "message_type": "private", "target_id": 9007199254740991_i64, "text": "x" }),
            )
            .await;
            assert!(!error, "{what}");
            assert_eq!(
                private["result"]["invoke_action"],
                json!({ "action": "send_private_msg", "params": {
                    "user_id": 9007199254740991_i64,
                    "message": [{ "type": "text", "data": { "text": "x" } }] } }),
                "{what}"
            );
            client.cancel().await.unwrap();
        }
    }
    // Previewing never contacts SnowLuma.
    assert!(fake.requests().is_empty(), "{:?}", fake.requests().len());
}

#[tokio::test]
async fn write_mode_sends_exactly_the_drafted_arguments() {
    let fake = FakeSnowLuma::start(Some(TOKEN)).await;
    for modern in [false, true] {
        fake.clear_requests();
        let client = connect(modern, "write", Some(&fake.url), true).await;
        let (_, preview) = call(&client, "preview_message", group_args()).await;
        let invoke = preview["result"]["invoke_action"].clone();
        let (error, sent) = call(&client, "invoke_action", invoke).await;
        assert!(!error, "{sent}");
        assert_eq!(sent["result"]["retcode"], 0, "{sent}");
        let requests = fake.requests_for("send_group_msg");
        assert_eq!(requests.len(), 1, "modern={modern}");
        let body = requests[0].params.clone().expect("params recorded");
        // The CQ-looking text reached SnowLuma as one literal text segment.
        assert_eq!(body["message"], expected_invoke_args()["params"]["message"]);
        assert_eq!(body["group_id"], 20001);
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn bad_arguments_are_invalid_arguments_naming_field_and_limit() {
    for modern in [false, true] {
        let client = connect(modern, "docs", None, false).await;
        for (args, field, limit) in [
            (
                json!({ "message_type": "group", "target_id": 0, "text": "x" }),
                "target_id",
                "9007199254740991",
            ),
            (
                json!({ "message_type": "group", "target_id": 9007199254740992_i64, "text": "x" }),
                "target_id",
                "9007199254740991",
            ),
            (
                json!({ "message_type": "group", "target_id": 1, "text": "x", "reply_to": 0 }),
                "reply_to",
                "2147483647",
            ),
            (
                json!({ "message_type": "group", "target_id": 1, "text": "x", "reply_to": 2147483648_i64 }),
                "reply_to",
                "2147483647",
            ),
            (
                json!({ "message_type": "group", "target_id": 1, "text": " \n" }),
                "text",
                "non-whitespace",
            ),
            (
                json!({ "message_type": "channel", "target_id": 1, "text": "x" }),
                "message_type",
                "group",
            ),
        ] {
            let (error, body) = call(&client, "preview_message", args.clone()).await;
            assert!(error, "{args}: {body}");
            assert_eq!(body["result"], Value::Null);
            let diagnostics = &body["diagnostics"];
            assert_eq!(diagnostics["kind"], "invalid_arguments", "{args}");
            let message = diagnostics["message"].as_str().unwrap();
            assert!(
                message.contains(field) && message.contains(limit),
                "{args}: {message}"
            );
            assert!(
                diagnostics["next_step"]
                    .as_str()
                    .is_some_and(|s| !s.is_empty())
            );
        }
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn apps_clients_get_the_panel_and_others_see_neither() {
    for modern in [false, true] {
        for apps in [false, true] {
            let what = format!("modern={modern} apps={apps}");
            let client = connect(modern, "docs", None, apps).await;
            let tools = client.list_all_tools().await.unwrap();
            let preview = tools.iter().find(|t| t.name == "preview_message").unwrap();
            let others_have_meta = tools
                .iter()
                .any(|t| t.name != "preview_message" && t.meta.is_some());
            assert!(!others_have_meta, "{what}");
            let resources = client.list_all_resources().await.unwrap();
            let panel = resources.iter().find(|r| r.uri == PANEL_URI);
            let read = client
                .read_resource(ReadResourceRequestParams::new(PANEL_URI))
                .await;
            if apps {
                let meta = serde_json::to_value(preview.meta.as_ref().unwrap()).unwrap();
                assert_eq!(meta["ui"]["resourceUri"], PANEL_URI, "{what}");
                assert_eq!(meta["ui/resourceUri"], PANEL_URI, "{what}");
                let panel = panel.unwrap_or_else(|| panic!("{what}: panel not listed"));
                assert_eq!(panel.mime_type.as_deref(), Some(PANEL_MIME));
                let listed_meta = serde_json::to_value(panel.meta.as_ref().unwrap()).unwrap();
                assert_no_origin_allowed(&listed_meta, &what);
                let contents = read.unwrap_or_else(|e| panic!("{what}: {e}")).contents;
                assert_eq!(contents.len(), 1);
                let ResourceContents::TextResourceContents {
                    uri,
                    mime_type,
                    text,
                    meta,
                } = &contents[0]
                else {
                    panic!("{what}: panel is not text");
                };
                assert_eq!(
                    (uri.as_str(), mime_type.as_deref()),
                    (PANEL_URI, Some(PANEL_MIME))
                );
                assert!(text.contains("data-snowluma-panel=\"preview-message\""));
                assert_eq!(panel.size, Some(text.len() as u64));
                let read_meta = serde_json::to_value(meta.as_ref().unwrap()).unwrap();
                assert_no_origin_allowed(&read_meta, &what);
            } else {
                assert!(preview.meta.is_none(), "{what}: {:?}", preview.meta);
                assert!(panel.is_none(), "{what}");
                let error = read.expect_err("a client without Apps cannot read the panel");
                let message = error.to_string();
                assert!(message.contains(PANEL_URI), "{what}: {message}");
                assert!(message.contains("io.modelcontextprotocol/ui"), "{message}");
            }
            // The draft is the same either way.
            let (_, body) = call(&client, "preview_message", group_args()).await;
            assert_eq!(body["result"]["invoke_action"], expected_invoke_args());
            client.cancel().await.unwrap();
        }
    }
}

/// The panel's CSP: every origin list present and empty.
fn assert_no_origin_allowed(meta: &Value, what: &str) {
    let csp = meta["ui"]["csp"]
        .as_object()
        .unwrap_or_else(|| panic!("{what}: {meta}"));
    for key in [
        "connectDomains",
        "resourceDomains",
        "frameDomains",
        "baseUriDomains",
    ] {
        assert_eq!(csp.get(key), Some(&json!([])), "{what}: {key}");
    }
}

fn tool_meta(listing: &Value) -> Option<Value> {
    listing["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "preview_message")
        .expect("preview_message listed")
        .get("_meta")
        .cloned()
}

fn lists_panel(listing: &Value) -> bool {
    listing["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["uri"] == PANEL_URI)
}

/// 2026-07-28 capabilities are per request: one connection sees the panel on the requests
/// that declare Apps and not on the others.
#[tokio::test]
async fn modern_capabilities_are_read_per_request_on_the_wire() {
    let mut server = RawServer::spawn(&[]);
    let apps = json!({ "_meta": modern_meta(apps_capabilities()) });
    let plain = json!({ "_meta": modern_meta(json!({})) });
    let html_only = json!({ "_meta": modern_meta(json!({ "extensions": {
        "io.modelcontextprotocol/ui": { "mimeTypes": ["text/html"] } } })) });

    let listing = server.request(1, "tools/list", apps.clone()).await;
    assert_eq!(
        tool_meta(&listing),
        Some(json!({ "ui": { "resourceUri": PANEL_URI }, "ui/resourceUri": PANEL_URI }))
    );
    assert_eq!(
        tool_meta(&server.request(2, "tools/list", plain.clone()).await),
        None
    );
    assert_eq!(
        tool_meta(&server.request(3, "tools/list", html_only.clone()).await),
        None
    );

    let resources = server.request(4, "resources/list", apps.clone()).await;
    assert!(lists_panel(&resources));
    assert_eq!(
        (
            &resources["result"]["ttlMs"],
            &resources["result"]["cacheScope"]
        ),
        (&json!(300_000), &json!("private"))
    );
    assert!(!lists_panel(
        &server.request(5, "resources/list", plain.clone()).await
    ));
    assert!(!lists_panel(
        &server.request(6, "resources/list", html_only).await
    ));

    let mut read_params = apps.clone();
    read_params["uri"] = json!(PANEL_URI);
    let read = server.request(7, "resources/read", read_params).await;
    let result = &read["result"];
    assert_eq!(
        (&result["ttlMs"], &result["cacheScope"]),
        (&json!(300_000), &json!("public"))
    );
    assert_eq!(result["resultType"], "complete");
    let content = &result["contents"][0];
    assert_eq!(content["mimeType"], PANEL_MIME);
    assert_eq!(content["_meta"]["ui"]["prefersBorder"], true);
    assert_no_origin_allowed(&content["_meta"], "modern read");

    let mut plain_read = plain.clone();
    plain_read["uri"] = json!(PANEL_URI);
    let refused = server.request(8, "resources/read", plain_read).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");

    // The tool answers the same without the extension.
    let mut call = plain;
    call["name"] = json!("preview_message");
    call["arguments"] = group_args();
    let answer = server.request(9, "tools/call", call).await;
    assert_eq!(
        structured(&answer)["result"]["invoke_action"],
        expected_invoke_args()
    );
    assert!(
        answer["result"].get("ttlMs").is_none(),
        "tool calls carry no cache hints"
    );
    server.finish().await;
}

/// Legacy sessions take the capabilities from initialize; the server advertises the
/// extension in both generations.
#[tokio::test]
async fn legacy_capabilities_come_from_initialize_on_the_wire() {
    for apps in [false, true] {
        let mut server = RawServer::spawn(&[]);
        let mut capabilities = if apps { apps_capabilities() } else { json!({}) };
        capabilities["elicitation"] = json!({});
        let init = server
            .request(
                1,
                "initialize",
                json!({ "protocolVersion": "2025-11-25", "capabilities": capabilities,
                        "clientInfo": { "name": "raw", "version": "1" } }),
            )
            .await;
        assert_eq!(
            init["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/ui"],
            json!({})
        );
        server
            .send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await;
        let listing = server.request(2, "tools/list", json!({})).await;
        assert_eq!(tool_meta(&listing).is_some(), apps);
        let resources = server.request(3, "resources/list", json!({})).await;
        assert_eq!(lists_panel(&resources), apps);
        let read = server
            .request(4, "resources/read", json!({ "uri": PANEL_URI }))
            .await;
        if apps {
            assert_eq!(read["result"]["contents"][0]["mimeType"], PANEL_MIME);
            assert!(
                read["result"].get("ttlMs").is_none(),
                "no cache hints for legacy"
            );
        } else {
            assert_eq!(read["error"]["code"], -32002, "{read}");
        }
        server.finish().await;
    }

    let mut server = RawServer::spawn(&[]);
    let discover = server
        .request(
            1,
            "server/discover",
            json!({ "_meta": modern_meta(json!({})) }),
        )
        .await;
    assert_eq!(
        discover["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/ui"],
        json!({})
    );
    server.finish().await;
}

/// The browser tests drive the panel with ui/test/fixtures; the server's real answers to the
/// fixtures' arguments must be exactly those results.
#[tokio::test]
async fn browser_fixtures_are_the_servers_real_output() {
    let fake = FakeSnowLuma::start(Some(TOKEN)).await;
    let fixtures = [
        include_str!("../ui/test/fixtures/group-reply.json"),
        include_str!("../ui/test/fixtures/hostile.json"),
        include_str!("../ui/test/fixtures/read-mode.json"),
    ];
    let writer = connect(true, "write", Some(&fake.url), true).await;
    let reader = connect(true, "read", Some(&fake.url), true).await;
    for text in fixtures {
        let fixture: Value = serde_json::from_str(text).unwrap();
        let client = if fixture["can_send"] == json!(true) {
            &writer
        } else {
            &reader
        };
        let (error, body) = call(client, "preview_message", fixture["arguments"].clone()).await;
        assert!(!error);
        assert_eq!(body["result"], fixture["result"]);
        // ui/test/host.js wraps the fixture exactly like this.
        assert_eq!(body["diagnostics"], json!({ "outcome": "success" }));
    }
    writer.cancel().await.unwrap();
    reader.cancel().await.unwrap();
}
