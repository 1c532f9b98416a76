//! Several clients on one HTTP server (issue 37), end to end over real loopback HTTP with raw
//! requests: the tokens file (principals, refusals at start-up, private permissions), the
//! principal's name in the call log and never a token, and two principals that each see only
//! their own legacy sessions, event resources, background tasks and input prompts, where the
//! other's ids answer exactly like ids that never existed.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/fake_snowluma_ws.rs"]
mod fake_snowluma_ws;
#[path = "support/http_server.rs"]
mod http_server;
#[path = "support/raw_client.rs"]
mod raw_client;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use fake_snowluma::FakeSnowLuma;
use fake_snowluma_ws::{FakeEventSocket, WsOptions};
use http_server::{Exchange, HttpServer, initialize_body, post, refuses_to_start, send};
use serde_json::{Value, json};

const ALICE: &str = "alice-token-81c2e7";
const BOB: &str = "bob-token-4d90aa";

fn tokens_file(dir: &Path, text: &str, mode: u32) -> String {
    let path = dir.join("tokens");
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path.to_str().unwrap().to_string()
}

#[tokio::test]
async fn a_bad_tokens_file_is_refused_at_start_up_without_its_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("alice secret-one\nbob\n", 0o600, "line 2"),
        ("alice secret-one\nalice secret-two\n", 0o600, "given twice"),
        ("alice secret-one\n# c\nbob secret-one\n", 0o600, "line 3"),
        ("alice secret-one\n", 0o640, "chmod 600"),
        ("alice secret-one\n", 0o604, "chmod 600"),
    ];
    for (text, mode, expected) in cases {
        let file = tokens_file(dir.path(), text, mode);
        let stderr = refuses_to_start(
            &[("SNOWLUMA_MCP_HTTP_TOKENS_FILE", &file)],
            &["--transport", "http", "--listen", "127.0.0.1:0"],
        )
        .await;
        assert!(stderr.contains("SNOWLUMA_MCP_HTTP_TOKENS_FILE"), "{stderr}");
        assert!(stderr.contains(expected), "{expected}: {stderr}");
        assert!(!stderr.contains("secret-"), "a token was echoed: {stderr}");
    }
    // The single token file is held to the same rule.
    let single = dir.path().join("single");
    std::fs::write(&single, "single-secret\n").unwrap();
    std::fs::set_permissions(&single, std::fs::Permissions::from_mode(0o644)).unwrap();
    let stderr = refuses_to_start(
        &[],
        &[
            "--transport",
            "http",
            "--listen",
            "127.0.0.1:0",
            "--http-token-file",
            single.to_str().unwrap(),
        ],
    )
    .await;
    assert!(stderr.contains("chmod 600"), "{stderr}");
    // The single token is the principal `default`: a file naming `default` again is refused.
    let file = tokens_file(dir.path(), "default other-secret\n", 0o600);
    let stderr = refuses_to_start(
        &[
            ("SNOWLUMA_MCP_HTTP_TOKENS_FILE", &file),
            ("SNOWLUMA_MCP_HTTP_TOKEN", "single-secret"),
        ],
        &["--transport", "http", "--listen", "127.0.0.1:0"],
    )
    .await;
    assert!(stderr.contains("`default`"), "{stderr}");
    assert!(!stderr.contains("secret"), "{stderr}");
}

#[tokio::test]
async fn a_public_origin_with_a_password_is_refused_without_echoing_it() {
    let stderr = refuses_to_start(
        &[("SNOWLUMA_MCP_HTTP_TOKEN", "tok")],
        &[
            "--transport",
            "http",
            "--listen",
            "0.0.0.0:0",
            "--public-origin",
            "https://ops:pa55w0rd-x@mcp.example.com",
        ],
    )
    .await;
    assert!(stderr.contains("credentials"), "{stderr}");
    assert!(
        !stderr.contains("pa55w0rd-x"),
        "the password was echoed: {stderr}"
    );
}

/// A stateless 2026-07-28 request as `token`, with form elicitation and tasks declared.
async fn modern(url: &str, token: &str, id: i64, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = raw_client::modern_meta(json!({
        "elicitation": { "form": {} },
        "extensions": { "io.modelcontextprotocol/tasks": {} }
    }));
    let name = params["name"]
        .as_str()
        .or(params["taskId"].as_str())
        .or(params["uri"].as_str())
        .map(str::to_string);
    let mut headers = vec![
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
    ];
    if let Some(name) = &name {
        headers.push(("mcp-name", name));
    }
    let reply = post(
        url,
        Some(token),
        &headers,
        &json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }),
    )
    .await;
    assert_eq!(reply.status, 200, "{method}: {}", reply.body);
    reply.json()
}

async fn call(url: &str, token: &str, id: i64, tool: &str, args: Value) -> Value {
    modern(
        url,
        token,
        id,
        "tools/call",
        json!({ "name": tool, "arguments": args }),
    )
    .await
}

fn kind(reply: &Value) -> Value {
    reply["result"]["structuredContent"]["diagnostics"]["kind"].clone()
}

/// What a client can tell from a refusal: everything but the echoed id.
fn shape(reply: &Value) -> Value {
    let mut reply = reply.clone();
    if let Some(object) = reply.as_object_mut() {
        object.remove("id");
    }
    reply
}

/// Replaces `from` with `to` in a JSON value's text (to compare a refusal about a foreign id
/// with one about a made-up id).
fn swap(value: &Value, from: &str, to: &str) -> Value {
    serde_json::from_str(&value.to_string().replace(from, to)).unwrap()
}

async fn two_principal_server(extra: &[(&str, &str)]) -> (tempfile::TempDir, HttpServer) {
    let dir = tempfile::tempdir().unwrap();
    let file = tokens_file(
        dir.path(),
        &format!("# two clients\nalice {ALICE}\nbob {BOB}\n"),
        0o600,
    );
    let mut env = vec![("SNOWLUMA_MCP_HTTP_TOKENS_FILE", file.as_str())];
    env.extend_from_slice(extra);
    let server = HttpServer::start(&env, &[]).await;
    (dir, server)
}

#[tokio::test]
async fn legacy_sessions_belong_to_the_principal_that_opened_them() {
    let (_dir, server) = two_principal_server(&[]).await;
    let url = &server.url;
    let opened = post(url, Some(ALICE), &[], &initialize_body(1)).await;
    assert_eq!(opened.status, 200, "{}", opened.body);
    let session = opened.header("mcp-session-id").unwrap().to_string();
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" });
    let as_who = |token: &'static str, id: String| {
        let list = list.clone();
        async move {
            post(
                url,
                Some(token),
                &[
                    ("mcp-session-id", &id),
                    ("mcp-protocol-version", "2025-11-25"),
                ],
                &list,
            )
            .await
        }
    };
    let own = as_who(ALICE, session.clone()).await;
    assert_eq!(own.status, 200, "{}", own.body);
    let foreign = as_who(BOB, session.clone()).await;
    let unknown = as_who(BOB, "0f0f0f0f-0000-4000-8000-000000000000".into()).await;
    assert_eq!(foreign.status, 404, "{}", foreign.body);
    assert_eq!(
        (foreign.status, &foreign.body),
        (unknown.status, &unknown.body)
    );
    // Nor can Bob end it: DELETE answers as for an unknown session, and it stays open.
    let delete = |token: &'static str, id: String| async move {
        send(
            reqwest::Method::DELETE,
            url,
            Some(token),
            &[("mcp-session-id", &id)],
            None,
        )
        .await
    };
    let foreign: Exchange = delete(BOB, session.clone()).await;
    let unknown: Exchange = delete(BOB, "0f0f0f0f-0000-4000-8000-000000000000".into()).await;
    assert_eq!(foreign.status, 404);
    assert_eq!(foreign.body, unknown.body);
    assert_eq!(as_who(ALICE, session.clone()).await.status, 200);
    server.stop().await;
}

#[tokio::test]
async fn event_resources_are_private_to_their_principal() {
    let ws = FakeEventSocket::start(WsOptions::default());
    let (_dir, server) = two_principal_server(&[
        ("SNOWLUMA_MCP_MODE", "read"),
        ("SNOWLUMA_MCP_ENDPOINT", "http://127.0.0.1:9/"),
        ("SNOWLUMA_MCP_EVENTS_URL", &ws.url),
    ])
    .await;
    let url = &server.url;
    let sub = call(
        url,
        ALICE,
        1,
        "subscribe_events",
        json!({ "self_id": 10001, "group_ids": [20001] }),
    )
    .await;
    let uri = sub["result"]["structuredContent"]["result"]["uri"]
        .as_str()
        .unwrap_or_else(|| panic!("{sub}"))
        .to_string();
    let made_up = format!("{}zz", &uri[..uri.len() - 2]);
    // Alice reads and lists it; Bob neither lists nor reads it.
    let read = |token: &'static str, uri: String| async move {
        call(
            url,
            token,
            2,
            "read_events",
            json!({ "uri": uri, "wait_ms": 0 }),
        )
        .await
    };
    assert_eq!(
        read(ALICE, uri.clone()).await["result"]["structuredContent"]["diagnostics"]["outcome"],
        "success"
    );
    let foreign = read(BOB, uri.clone()).await;
    let unknown = read(BOB, made_up.clone()).await;
    assert_eq!(kind(&foreign), "unknown_resource", "{foreign}");
    assert_eq!(
        shape(&swap(&foreign, &uri, &made_up))["result"]["structuredContent"]["diagnostics"],
        shape(&unknown)["result"]["structuredContent"]["diagnostics"]
    );
    let listed = |token: &'static str| async move {
        modern(url, token, 3, "resources/list", json!({})).await["result"]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r["uri"].as_str().map(str::to_string))
            .collect::<Vec<_>>()
    };
    assert!(listed(ALICE).await.contains(&uri));
    assert!(!listed(BOB).await.contains(&uri));
    let read_resource = |token: &'static str, uri: String| async move {
        modern(url, token, 4, "resources/read", json!({ "uri": uri })).await
    };
    let foreign = read_resource(BOB, uri.clone()).await;
    let unknown = read_resource(BOB, made_up.clone()).await;
    assert!(foreign.get("error").is_some(), "{foreign}");
    assert_eq!(
        shape(&swap(&foreign, &uri, &made_up)),
        shape(&unknown),
        "a foreign resource must read like an unknown one"
    );
    // Bob cannot release it either; Alice still reads it afterwards.
    let release = |token: &'static str, uri: String| async move {
        call(url, token, 5, "unsubscribe_events", json!({ "uri": uri })).await
    };
    let foreign = release(BOB, uri.clone()).await;
    let unknown = release(BOB, made_up.clone()).await;
    assert_eq!(kind(&foreign), kind(&unknown), "{foreign}");
    assert_eq!(kind(&foreign), "unknown_resource");
    assert_eq!(
        read(ALICE, uri.clone()).await["result"]["structuredContent"]["diagnostics"]["outcome"],
        "success"
    );
    server.stop().await;
}

#[tokio::test]
async fn tasks_and_input_prompts_are_private_to_their_principal() {
    let fake = FakeSnowLuma::start(None).await;
    let file = fake.add_generated_file("principal-task.bin", 50_000, 7);
    let dir = tempfile::tempdir().unwrap();
    let downloads = dir.path().join("downloads");
    let tasks = dir.path().join("tasks");
    let (_tokens, server) = two_principal_server(&[
        ("SNOWLUMA_MCP_MODE", "write"),
        ("SNOWLUMA_MCP_ENDPOINT", &fake.url),
        ("SNOWLUMA_MCP_DOWNLOAD_DIR", downloads.to_str().unwrap()),
        ("SNOWLUMA_MCP_TASK_DIR", tasks.to_str().unwrap()),
    ])
    .await;
    let url = &server.url;
    let created = call(
        url,
        ALICE,
        1,
        "invoke_action_background",
        json!({ "action": "download_file_stream", "params": { "file": file } }),
    )
    .await;
    let task = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_string();
    let made_up = "0123456789abcdef0123456789abcdef";
    for method in ["tasks/get", "tasks/cancel", "tasks/update"] {
        let mut params = json!({ "taskId": task });
        if method == "tasks/update" {
            params["inputResponses"] = json!({});
        }
        let foreign = modern(url, BOB, 2, method, params.clone()).await;
        let unknown = modern(url, BOB, 2, method, swap(&params, &task, made_up)).await;
        assert!(foreign.get("error").is_some(), "{method}: {foreign}");
        assert_eq!(
            shape(&swap(&foreign, &task, made_up)),
            shape(&unknown),
            "{method}"
        );
    }
    let owned = modern(url, ALICE, 3, "tasks/get", json!({ "taskId": task })).await;
    assert!(owned["result"]["status"].is_string(), "{owned}");
    let listed =
        |token: &'static str| async move {
            call(url, token, 4, "list_tasks", json!({})).await["result"]["structuredContent"]
            ["result"]["tasks"]
            .as_array()
            .unwrap_or_else(|| panic!("list_tasks"))
            .iter()
            .filter_map(|t| t["taskId"].as_str().or(t["id"].as_str()).map(str::to_string))
            .collect::<Vec<_>>()
        };
    assert_eq!(listed(ALICE).await, vec![task.clone()]);
    assert!(listed(BOB).await.is_empty());

    // An input prompt Alice opened cannot be answered by Bob: it reads like a made-up state.
    let args = json!({ "action": "send_group_msg", "params": { "group_id": 20001 } });
    let asked = call(url, ALICE, 5, "invoke_action_with_input", args.clone()).await;
    let state = asked["result"]["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("{asked}"))
        .to_string();
    let retry = |token: &'static str, state: String| {
        let args = args.clone();
        async move {
            modern(
                url,
                token,
                6,
                "tools/call",
                json!({
                    "name": "invoke_action_with_input",
                    "arguments": args,
                    "requestState": state,
                    "inputResponses": { "missing_params": { "action": "accept",
                        "content": { "params_json": "{\"message\":\"hi\"}" } } }
                }),
            )
            .await
        }
    };
    let foreign = retry(BOB, state.clone()).await;
    let forged = retry(BOB, format!("{}x", &state[..state.len() - 1])).await;
    assert_eq!(kind(&foreign), "input_state", "{foreign}");
    assert_eq!(
        foreign["result"]["structuredContent"]["diagnostics"],
        forged["result"]["structuredContent"]["diagnostics"]
    );
    assert!(fake.requests_for("send_group_msg").is_empty());
    // Alice's own answer still works: Bob's attempt did not use the prompt up.
    let done = retry(ALICE, state).await;
    assert_eq!(
        done["result"]["structuredContent"]["diagnostics"]["outcome"], "success",
        "{done}"
    );
    // The log names each call's principal and holds no token.
    // Log lines arrive through the server's stderr: wait for them, bounded.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !(server.log().contains("principal=\"alice\"")
        && server.log().contains("principal=\"bob\""))
    {
        assert!(std::time::Instant::now() < deadline, "{}", server.log());
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let log = server.log();
    assert!(
        !log.contains(ALICE) && !log.contains(BOB),
        "a token was logged"
    );
    server.stop().await;
}
