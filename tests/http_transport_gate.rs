//! The opt-in Streamable HTTP transport's gate over real loopback HTTP, with raw requests:
//! the auth matrix (and no token in the log), the token file, Host/Origin rebinding, the
//! public origin, unsafe listen settings, the session limit, DELETE and unknown sessions,
//! idle expiry, and the body and request caps.

#[path = "support/http_server.rs"]
mod http_server;
#[path = "support/http_transport_helpers.rs"]
mod http_transport_helpers;
#[path = "support/raw_client.rs"]
mod raw_client;

use std::time::Duration;

use serde_json::json;

use http_server::{HttpServer, TOKEN, in_session, initialize_body, open_session, post, send};
use http_transport_helpers::*;

fn token_env() -> [(&'static str, &'static str); 1] {
    [("SNOWLUMA_MCP_HTTP_TOKEN", TOKEN)]
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
    // Token files must be private (issue 37).
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
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
    let second = open_session(url, Some(TOKEN)).await;
    // An idle session would be ended to make room (issue 37): an open GET stream keeps each
    // busy, so the cap holds.
    let mut streams = Vec::new();
    for session in [&first, &second] {
        let stream = http_server::client()
            .get(url)
            .bearer_auth(TOKEN)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", session.as_str())
            .header("mcp-protocol-version", "2025-11-25")
            .send()
            .await
            .unwrap();
        assert_eq!(stream.status(), 200);
        streams.push(stream);
    }
    let third = post(url, Some(TOKEN), &[], &initialize_body(7)).await;
    assert_eq!(third.status, 503, "{}", third.body);
    drop(streams);
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
    // Silence past the idle timeout ends the session. A request in it would keep it alive, and
    // at the session cap a new initialize would end the idle session itself (issue 37), so
    // each probe comes after more than the idle timeout of silence; a probe that comes before
    // the timer fired only starts another round.
    let mut expired = false;
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        if in_session(url, &session, &tools_list(4)).await.status == 404 {
            expired = true;
            break;
        }
    }
    assert!(expired, "the idle session did not expire within 30 s");
    // Its slot is free: a new session opens.
    open_session(url, Some(TOKEN)).await;
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
