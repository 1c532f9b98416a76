//! The opt-in Streamable HTTP transport end to end over real loopback HTTP: raw requests for
//! the gate (auth matrix, Host/Origin rebinding, session and request bounds, idle expiry,
//! DELETE), rmcp's own Streamable HTTP client in both generations (docs surface, execution
//! against the fake SnowLuma, every result checked against the advertised outputSchema), and
//! two legacy sessions whose event resources stay apart.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/fake_snowluma_ws.rs"]
mod fake_snowluma_ws;
#[path = "support/http_server.rs"]
mod http_server;
#[path = "support/raw_client.rs"]
mod raw_client;
#[path = "support/rmcp_client.rs"]
mod rmcp_client;

use std::time::Duration;

use fake_snowluma::FakeSnowLuma;
use fake_snowluma_ws::{FakeEventSocket, WsOptions};
use http_server::{
    Exchange, HttpServer, TOKEN, in_session, initialize_body, open_session, post, send,
};
use rmcp::model::ReadResourceRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

fn token_env() -> [(&'static str, &'static str); 1] {
    [("SNOWLUMA_MCP_HTTP_TOKEN", TOKEN)]
}

fn tools_list(id: i64) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/list" })
}

#[tokio::test]
async fn auth_matrix_and_no_token_in_the_log() {
    let server = HttpServer::start(&token_env(), &[]).await;
    let url = &server.url;
    let missing = post(url, None, &[], &initialize_body(1)).await;
    assert_eq!(missing.status, 401, "{}", missing.body);
    assert_eq!(missing.header("www-authenticate"), Some("Bearer"));
    assert_eq!(missing.json()["error"]["data"]["rule"], "bearer-token");
    let wrong = post(url, Some("not-the-token-7d1e"), &[], &initialize_body(1)).await;
    assert_eq!(wrong.status, 401);
    let basic = post(
        url,
        None,
        &[("authorization", &format!("Basic {TOKEN}"))],
        &initialize_body(1),
    )
    .await;
    assert_eq!(basic.status, 401, "only the Bearer scheme counts");
    // The right token opens a session; every later request needs it again.
    let session = open_session(url, Some(TOKEN)).await;
    let without = post(
        url,
        None,
        &[
            ("mcp-session-id", &session),
            ("mcp-protocol-version", "2025-11-25"),
        ],
        &tools_list(2),
    )
    .await;
    assert_eq!(without.status, 401, "a session id is no credential");
    let listed = in_session(url, &session, &tools_list(3)).await;
    assert_eq!(listed.status, 200);
    assert!(listed.json()["result"]["tools"].as_array().unwrap().len() >= 4);
    // A GET stream and DELETE need the token as well.
    let get = send(
        reqwest::Method::GET,
        url,
        None,
        &[("mcp-session-id", &session)],
        None,
    )
    .await;
    assert_eq!(get.status, 401);
    let delete = send(
        reqwest::Method::DELETE,
        url,
        None,
        &[("mcp-session-id", &session)],
        None,
    )
    .await;
    assert_eq!(delete.status, 401);
    let log = server.log();
    assert!(
        !log.contains(TOKEN),
        "the configured token was logged:\n{log}"
    );
    assert!(
        !log.contains("not-the-token-7d1e"),
        "a presented token was logged:\n{log}"
    );
    server.stop().await;
}

#[tokio::test]
async fn token_file_is_read_whole_with_the_newline_trimmed() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, format!("{TOKEN}\n")).unwrap();
    let server = HttpServer::start(&[], &["--http-token-file", file.to_str().unwrap()]).await;
    assert_eq!(
        post(&server.url, None, &[], &initialize_body(1))
            .await
            .status,
        401
    );
    open_session(&server.url, Some(TOKEN)).await;
    server.stop().await;
}

#[tokio::test]
async fn rebinding_hosts_and_foreign_origins_are_refused_before_auth() {
    let server = HttpServer::start(&token_env(), &[]).await;
    let url = &server.url;
    let own = format!("http://localhost:{}", server.port);
    // A rebinding page: its own host name in Host, no token. 403, not 401.
    for (headers, rule) in [
        (vec![("host", "evil.example")], "host"),
        (
            vec![(
                "host",
                format!("evil.example:{}", server.port).leak() as &str,
            )],
            "host",
        ),
        (vec![("origin", "http://evil.example")], "origin"),
        (vec![("origin", "null")], "origin"),
        (
            vec![(
                "origin",
                format!("http://localhost:{}", server.port + 1).leak() as &str,
            )],
            "origin",
        ),
    ] {
        let reply = post(url, None, &headers, &initialize_body(1)).await;
        assert_eq!(reply.status, 403, "{headers:?}: {}", reply.body);
        assert_eq!(reply.json()["error"]["data"]["rule"], rule);
    }
    // Forwarded headers are not trusted, either way.
    let forwarded = post(
        url,
        Some(TOKEN),
        &[
            ("host", "evil.example"),
            ("x-forwarded-host", "localhost"),
            ("forwarded", "host=localhost"),
        ],
        &initialize_body(1),
    )
    .await;
    assert_eq!(forwarded.status, 403);
    // Loopback names and the server's own origin pass.
    for headers in [
        vec![("host", format!("localhost:{}", server.port).leak() as &str)],
        vec![("origin", own.as_str())],
    ] {
        let reply = post(url, Some(TOKEN), &headers, &initialize_body(1)).await;
        assert_eq!(reply.status, 200, "{headers:?}: {}", reply.body);
    }
    server.stop().await;
}

#[tokio::test]
async fn public_origin_host_and_origin_are_accepted_and_nothing_else() {
    let server = HttpServer::start(
        &token_env(),
        &["--public-origin", "https://mcp.example.com"],
    )
    .await;
    let url = &server.url;
    let ok = post(
        url,
        Some(TOKEN),
        &[
            ("host", "mcp.example.com"),
            ("origin", "https://mcp.example.com"),
        ],
        &initialize_body(1),
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    for headers in [
        vec![("host", "mcp.example.com:8443")],
        vec![("host", "other.example.com")],
        vec![("origin", "http://mcp.example.com")],
        vec![("origin", "https://mcp.example.com.evil.example")],
    ] {
        let reply = post(url, Some(TOKEN), &headers, &initialize_body(1)).await;
        assert_eq!(reply.status, 403, "{headers:?}");
    }
    server.stop().await;
}

#[tokio::test]
async fn unsafe_listen_settings_refuse_to_start() {
    let http = |extra: &[&'static str]| {
        let mut args = vec!["--transport", "http", "--listen", "0.0.0.0:0"];
        args.extend_from_slice(extra);
        args
    };
    let err = http_server::refuses_to_start(&token_env(), &http(&[])).await;
    assert!(err.contains("SNOWLUMA_MCP_PUBLIC_ORIGIN"), "{err}");
    let err =
        http_server::refuses_to_start(&[], &http(&["--public-origin", "https://mcp.example.com"]))
            .await;
    assert!(err.contains("SNOWLUMA_MCP_HTTP_TOKEN"), "{err}");
    for bad in [
        "http://mcp.example.com",
        "https://u:p@mcp.example.com",
        "https://mcp.example.com/mcp",
        "https://mcp.example.com/?a=1",
        "https://*.example.com",
    ] {
        let err =
            http_server::refuses_to_start(&token_env(), &http(&["--public-origin", bad])).await;
        assert!(err.contains("SNOWLUMA_MCP_PUBLIC_ORIGIN"), "{bad}: {err}");
    }
    // Loopback without a token starts, with a warning.
    let server = HttpServer::start(&[], &[]).await;
    assert!(
        server.log().contains("no SNOWLUMA_MCP_HTTP_TOKEN"),
        "{}",
        server.log()
    );
    open_session(&server.url, None).await;
    server.stop().await;
}

#[tokio::test]
async fn session_limit_delete_and_unknown_sessions() {
    let server = HttpServer::start(&token_env(), &["--http-max-sessions", "2"]).await;
    let url = &server.url;
    let first = open_session(url, Some(TOKEN)).await;
    let _second = open_session(url, Some(TOKEN)).await;
    let third = post(url, Some(TOKEN), &[], &initialize_body(7)).await;
    assert_eq!(third.status, 503, "{}", third.body);
    assert!(third.header("retry-after").is_some());
    let error = third.json();
    assert_eq!(error["id"], 7);
    assert_eq!(
        error["error"]["data"]["limit"],
        "SNOWLUMA_MCP_HTTP_MAX_SESSIONS"
    );
    assert_eq!(error["error"]["data"]["max"], 2);
    // Stateless 2026-07-28 requests need no session and still work.
    let modern = post(
        url,
        Some(TOKEN),
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/list"),
        ],
        &json!({ "jsonrpc": "2.0", "id": 9, "method": "tools/list",
                 "params": { "_meta": raw_client::modern_meta(json!({})) } }),
    )
    .await;
    assert_eq!(modern.status, 200, "{}", modern.body);
    assert!(modern.json()["result"]["tools"].is_array());
    // DELETE ends a session and frees its slot; its id is then unknown.
    let deleted = send(
        reqwest::Method::DELETE,
        url,
        Some(TOKEN),
        &[("mcp-session-id", &first)],
        None,
    )
    .await;
    assert!(
        deleted.status == 200 || deleted.status == 202,
        "{}",
        deleted.status
    );
    assert_eq!(in_session(url, &first, &tools_list(2)).await.status, 404);
    let again = send(
        reqwest::Method::DELETE,
        url,
        Some(TOKEN),
        &[("mcp-session-id", &first)],
        None,
    )
    .await;
    assert_eq!(again.status, 404, "DELETE of an ended session");
    assert_eq!(
        in_session(url, "00000000-0000-4000-8000-000000000000", &tools_list(2))
            .await
            .status,
        404
    );
    open_session(url, Some(TOKEN)).await;
    server.stop().await;
}

#[tokio::test]
async fn idle_sessions_expire_and_release_their_slot() {
    let server = HttpServer::start(
        &token_env(),
        &["--http-idle-secs", "1", "--http-max-sessions", "1"],
    )
    .await;
    let url = &server.url;
    let session = open_session(url, Some(TOKEN)).await;
    assert_eq!(in_session(url, &session, &tools_list(2)).await.status, 200);
    assert_eq!(
        post(url, Some(TOKEN), &[], &initialize_body(3))
            .await
            .status,
        503
    );
    // Silence past the idle timeout ends the session (a request in it would keep it alive), which
    // frees the one slot: a new initialize, which does not touch the old session, then succeeds.
    let mut reopened = None;
    for attempt in 0..300 {
        let reply = post(url, Some(TOKEN), &[], &initialize_body(10 + attempt)).await;
        if reply.status == 200 {
            reopened = Some(reply);
            break;
        }
        assert_eq!(
            reply.status, 503,
            "only the slot may refuse: {}",
            reply.body
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        reopened.is_some(),
        "the idle session did not expire within 30 s"
    );
    let expired = in_session(url, &session, &tools_list(4)).await.status == 404;
    assert!(expired, "the expired session still answers");
    server.stop().await;
}

#[tokio::test]
async fn body_and_request_caps_answer_with_the_limit() {
    let server = HttpServer::start(
        &token_env(),
        &["--http-max-body-bytes", "2048", "--http-max-requests", "1"],
    )
    .await;
    let url = &server.url;
    let big = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": { "pad": "x".repeat(4096) } });
    let reply = post(url, Some(TOKEN), &[], &big).await;
    assert_eq!(reply.status, 413);
    assert_eq!(
        reply.json()["error"]["data"]["limit"],
        "SNOWLUMA_MCP_HTTP_MAX_BODY_BYTES"
    );
    let session = open_session(url, Some(TOKEN)).await;
    // An open GET stream holds the only request slot until it ends.
    let stream = http_server::client()
        .get(url)
        .bearer_auth(TOKEN)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let busy = in_session(url, &session, &tools_list(2)).await;
    assert_eq!(busy.status, 503, "{}", busy.body);
    assert_eq!(
        busy.json()["error"]["data"]["limit"],
        "SNOWLUMA_MCP_HTTP_MAX_REQUESTS"
    );
    drop(stream);
    let mut freed = false;
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if in_session(url, &session, &tools_list(3)).await.status == 200 {
            freed = true;
            break;
        }
    }
    assert!(freed, "closing the stream did not free the slot");
    server.stop().await;
}

fn rmcp_transport(url: &str, token: &str) -> StreamableHttpClientTransport<reqwest::Client> {
    http_server::install_tls_provider();
    StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_string())
            .auth_header(token.to_string()),
    )
}

#[tokio::test]
async fn rmcp_client_docs_and_execution_in_both_generations() {
    let fake = FakeSnowLuma::start(Some("snowluma-side-token")).await;
    let server = HttpServer::start(
        &[
            ("SNOWLUMA_MCP_HTTP_TOKEN", TOKEN),
            ("SNOWLUMA_MCP_MODE", "read"),
            ("SNOWLUMA_MCP_ENDPOINT", &fake.url),
            ("SNOWLUMA_MCP_TOKEN", "snowluma-side-token"),
        ],
        &[],
    )
    .await;
    for modern in [false, true] {
        let client = rmcp_client::connect_to((), rmcp_transport(&server.url, TOKEN), modern).await;
        let tools = client.list_all_tools().await.unwrap();
        assert!(tools.iter().any(|t| t.name == "query_action"), "{modern}");
        let (_, found) = rmcp_client::call_listed(
            &client,
            "search_actions",
            json!({ "query": "mute member", "match": "keywords" }),
        )
        .await;
        assert_eq!(found["diagnostics"]["outcome"], "success");
        let (_, action) =
            rmcp_client::call_listed(&client, "get_action", json!({ "name": "get_login_info" }))
                .await;
        assert_eq!(action["diagnostics"]["outcome"], "success");
        let (_, login) = rmcp_client::call_listed(
            &client,
            "query_action",
            json!({ "action": "get_login_info" }),
        )
        .await;
        assert_eq!(
            login["result"]["data"]["user_id"],
            fake_snowluma::SELF_ID,
            "{login}"
        );
        let catalog = client
            .read_resource(ReadResourceRequestParams::new("snowluma://onebot/actions"))
            .await
            .expect("resources/read of the catalog");
        assert!(!catalog.contents.is_empty());
        client.cancel().await.unwrap();
    }
    let log = server.log();
    assert!(
        !log.contains(TOKEN) && !log.contains("snowluma-side-token"),
        "{log}"
    );
    server.stop().await;
}

#[tokio::test]
async fn two_legacy_sessions_keep_their_event_resources_apart() {
    let ws = FakeEventSocket::start(WsOptions::default());
    let server = HttpServer::start(
        &[
            ("SNOWLUMA_MCP_HTTP_TOKEN", TOKEN),
            ("SNOWLUMA_MCP_MODE", "read"),
            ("SNOWLUMA_MCP_ENDPOINT", "http://127.0.0.1:9/"),
            ("SNOWLUMA_MCP_EVENTS_URL", &ws.url),
        ],
        &[],
    )
    .await;
    let a = rmcp_client::connect_to((), rmcp_transport(&server.url, TOKEN), false).await;
    let b = rmcp_client::connect_to((), rmcp_transport(&server.url, TOKEN), false).await;
    let (_, sub) = rmcp_client::call_listed(
        &a,
        "subscribe_events",
        json!({ "self_id": 10001, "group_ids": [20001] }),
    )
    .await;
    let uri = sub["result"]["uri"].as_str().expect("uri").to_string();
    let listed_a = a.list_all_resources().await.unwrap();
    assert!(listed_a.iter().any(|r| r.uri == uri));
    let listed_b = b.list_all_resources().await.unwrap();
    assert!(
        !listed_b.iter().any(|r| r.uri == uri),
        "B sees A's resource"
    );
    assert!(
        b.read_resource(ReadResourceRequestParams::new(uri.clone()))
            .await
            .is_err()
    );
    let (_, read_b) = rmcp_client::call_listed(&b, "read_events", json!({ "uri": uri })).await;
    assert_eq!(read_b["diagnostics"]["outcome"], "failed", "{read_b}");
    assert!(
        a.read_resource(ReadResourceRequestParams::new(uri.clone()))
            .await
            .is_ok()
    );
    // Ending A's session releases its resources on the hub.
    a.cancel().await.unwrap();
    b.cancel().await.unwrap();
    server.stop().await;
}

#[tokio::test]
async fn ending_a_session_releases_its_event_resources() {
    let ws = FakeEventSocket::start(WsOptions::default());
    let server = HttpServer::start(
        &[
            ("SNOWLUMA_MCP_HTTP_TOKEN", TOKEN),
            ("SNOWLUMA_MCP_MODE", "read"),
            ("SNOWLUMA_MCP_ENDPOINT", "http://127.0.0.1:9/"),
            ("SNOWLUMA_MCP_EVENTS_URL", &ws.url),
        ],
        &["--http-idle-secs", "1"],
    )
    .await;
    let url = &server.url;
    let subscribe = json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
        "name": "subscribe_events", "arguments": { "self_id": 10001, "group_ids": [20001] } } });
    // DELETE releases the session's resources, closing the shared socket with the last one.
    let session = open_session(url, Some(TOKEN)).await;
    let sub = in_session(url, &session, &subscribe).await;
    assert!(
        sub.json()["result"]["structuredContent"]["result"]["uri"].is_string(),
        "{}",
        sub.body
    );
    assert_eq!(ws.open_connections(), 1);
    send(
        reqwest::Method::DELETE,
        url,
        Some(TOKEN),
        &[("mcp-session-id", &session)],
        None,
    )
    .await;
    wait_for(
        || ws.open_connections() == 0,
        "DELETE did not release the event resource",
    )
    .await;
    // So does idle expiry.
    let session = open_session(url, Some(TOKEN)).await;
    in_session(url, &session, &subscribe).await;
    wait_for(
        || ws.open_connections() == 1,
        "the subscription did not connect",
    )
    .await;
    wait_for(
        || ws.open_connections() == 0,
        "idle expiry did not release the event resource",
    )
    .await;
    assert_eq!(in_session(url, &session, &tools_list(6)).await.status, 404);
    server.stop().await;
}

async fn wait_for(mut condition: impl FnMut() -> bool, what: &str) {
    for _ in 0..600 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what}");
}

/// A `read_events` call with the given wait, as a JSON-RPC request.
fn read_events(id: i64, uri: &str, wait_ms: u64, modern: bool) -> Value {
    let mut params =
        json!({ "name": "read_events", "arguments": { "uri": uri, "wait_ms": wait_ms } });
    if modern {
        params["_meta"] = raw_client::modern_meta(json!({}));
    }
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params })
}

/// Sends `body` in a legacy session, or as a stateless 2026-07-28 request.
async fn call_in(url: &str, session: Option<&str>, body: &Value) -> Exchange {
    match session {
        Some(session) => in_session(url, session, body).await,
        None => {
            let name = body["params"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            post(
                url,
                Some(TOKEN),
                &[
                    ("mcp-protocol-version", "2026-07-28"),
                    ("mcp-method", "tools/call"),
                    ("mcp-name", &name),
                ],
                body,
            )
            .await
        }
    }
}

fn kind_of(reply: &Exchange) -> Value {
    reply.json()["result"]["structuredContent"]["diagnostics"]["kind"].clone()
}

#[tokio::test]
async fn cancelling_a_waiting_call_ends_it_in_both_generations() {
    let ws = FakeEventSocket::start(WsOptions::default());
    let server = HttpServer::start(
        &[
            ("SNOWLUMA_MCP_HTTP_TOKEN", TOKEN),
            ("SNOWLUMA_MCP_MODE", "read"),
            ("SNOWLUMA_MCP_ENDPOINT", "http://127.0.0.1:9/"),
            ("SNOWLUMA_MCP_EVENTS_URL", &ws.url),
        ],
        &[],
    )
    .await;
    let url = server.url.clone();
    for modern in [false, true] {
        let session = if modern {
            None
        } else {
            Some(open_session(&url, Some(TOKEN)).await)
        };
        let mut subscribe = json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
            "name": "subscribe_events", "arguments": { "self_id": 10001, "group_ids": [20001] } } });
        if modern {
            subscribe["params"]["_meta"] = raw_client::modern_meta(json!({}));
        }
        let sub = call_in(&url, session.as_deref(), &subscribe).await;
        let uri = sub.json()["result"]["structuredContent"]["result"]["uri"]
            .as_str()
            .unwrap_or_else(|| panic!("{}", sub.body))
            .to_string();
        let waiting = {
            let (url, session, body) = (
                url.clone(),
                session.clone(),
                read_events(7, &uri, 30_000, modern),
            );
            tokio::spawn(async move { call_in(&url, session.as_deref(), &body).await })
        };
        // While the first read waits, a second one is refused.
        let mut busy = false;
        for _ in 0..50 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if kind_of(&call_in(&url, session.as_deref(), &read_events(8, &uri, 100, modern)).await)
                == "wait_in_progress"
            {
                busy = true;
                break;
            }
        }
        assert!(busy, "modern={modern}: the first read never waited");
        if let Some(session) = &session {
            // Legacy: notifications/cancelled, as over stdio.
            let cancel = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 7 } });
            assert_eq!(in_session(&url, session, &cancel).await.status, 202);
        } else {
            // 2026-07-28: closing the response cancels the request.
            waiting.abort();
        }
        let mut ended = false;
        for _ in 0..50 {
            let probe = call_in(&url, session.as_deref(), &read_events(9, &uri, 100, modern)).await;
            if probe.json()["result"]["structuredContent"]["diagnostics"]["outcome"] == "success" {
                ended = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(ended, "modern={modern}: the cancelled read kept waiting");
        let release = json!({ "jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {
            "name": "unsubscribe_events", "arguments": { "uri": uri },
            "_meta": if modern { raw_client::modern_meta(json!({})) } else { json!({}) } } });
        let released = call_in(&url, session.as_deref(), &release).await;
        assert_eq!(
            released.json()["result"]["structuredContent"]["result"]["released"],
            uri.as_str(),
            "{}",
            released.body
        );
    }
    server.stop().await;
}

/// A stateless 2026-07-28 POST declaring the tasks extension, with the routing headers.
async fn modern_post(
    url: &str,
    id: i64,
    method: &str,
    name: Option<&str>,
    mut params: Value,
) -> Value {
    params["_meta"] =
        raw_client::modern_meta(json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } }));
    let mut headers = vec![
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
    ];
    if let Some(name) = name {
        headers.push(("mcp-name", name));
    }
    let reply = post(
        url,
        Some(TOKEN),
        &headers,
        &json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }),
    )
    .await;
    assert_eq!(reply.status, 200, "{method}: {}", reply.body);
    reply.json()
}

#[tokio::test]
async fn background_tasks_run_and_are_polled_over_http() {
    let fake = FakeSnowLuma::start(None).await;
    let file = fake.add_generated_file("http-task.bin", 200_000, 3);
    let dir = tempfile::tempdir().unwrap();
    let downloads = dir.path().join("downloads");
    let tasks = dir.path().join("tasks");
    let server = HttpServer::start(
        &[
            ("SNOWLUMA_MCP_HTTP_TOKEN", TOKEN),
            ("SNOWLUMA_MCP_MODE", "write"),
            ("SNOWLUMA_MCP_ENDPOINT", &fake.url),
            ("SNOWLUMA_MCP_DOWNLOAD_DIR", downloads.to_str().unwrap()),
            ("SNOWLUMA_MCP_TASK_DIR", tasks.to_str().unwrap()),
        ],
        &[],
    )
    .await;
    let url = &server.url;
    let created = modern_post(url, 1, "tools/call", Some("invoke_action_background"), json!({
        "name": "invoke_action_background",
        "arguments": { "action": "download_file_stream", "params": { "file": file, "chunk_size": 65536 } } })).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task_id = created["result"]["taskId"].as_str().unwrap().to_string();
    let mut done = Value::Null;
    for id in 2..200 {
        let got = modern_post(
            url,
            id,
            "tasks/get",
            Some(&task_id),
            json!({ "taskId": task_id }),
        )
        .await;
        if got["result"]["status"] != "working" {
            done = got;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(done["result"]["status"], "completed", "{done}");
    let saved = &done["result"]["result"]["structuredContent"];
    assert_eq!(saved["result"]["size"], 200_000);
    let listing = modern_post(url, 300, "tools/list", None, json!({})).await;
    let schema = listing["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "invoke_action_background")
        .expect("listed")["outputSchema"]
        .clone();
    raw_client::assert_valid("invoke_action_background", &schema, saved);
    server.stop().await;
}
