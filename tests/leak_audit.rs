//! The leak audit (issue 18): the built binary, logging at `trace`, runs a broad workload
//! with per-run random tokens and message markers, and nothing secret may come out where it
//! should not. Tokens (SnowLuma's, the HTTP client token and a wrong bearer a client tries)
//! must not appear, in any encoding the support module looks for, in any stderr line, MCP
//! message, HTTP reply, file the server writes (task records, download directory), `check`
//! report or the server's argv. Message markers (inside message text, upload file contents,
//! download file contents, events, answers to input prompts, misplaced arguments) must not
//! appear in stderr, diagnostics, errors, prompts, continuation state, progress, runtime info
//! or task records; they may appear only in the content a result returns on purpose (the
//! payload SnowLuma answered, a preview draft, the events of a subscribed resource, a
//! downloaded file). Every audit is checked for being non-vacuous: the fakes saw the token
//! and the markers, and stderr holds a diagnostics line for every traced call.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/fake_snowluma_ws.rs"]
mod fake_snowluma_ws;
#[path = "support/http_server.rs"]
mod http_server;
#[path = "support/leak_audit.rs"]
mod leak_audit;
#[path = "support/leak_workload.rs"]
mod leak_workload;
#[path = "support/raw_client.rs"]
mod raw_client;
#[path = "support/stream_helpers.rs"]
mod stream_helpers;

use std::path::PathBuf;

use fake_snowluma::{FakeSnowLuma, Fault, USER_ID};
use leak_audit::{Secrets, TraceIds};
use leak_workload::*;
use raw_client::{RawServer, modern_meta, wait_until};
use serde_json::{Value, json};
use stream_helpers::Dirs;

#[tokio::test]
async fn stdio_modern_generation_leaks_nothing() {
    let rig = Rig::new("leak-modern");
    let mut server = rig.spawn(("SNOWLUMA_MCP_TOKEN", &rig.secrets.token));
    early_notification(&mut server, &rig.secrets).await;
    let envelope = modern_meta(json!({ "extensions": { TASKS_EXT: {} },
                                       "elicitation": { "form": {} } }));
    let mut peer = Peer::new(server, envelope);
    let discover = peer.request("server/discover", json!({})).await;
    assert!(discover.get("result").is_some(), "{discover}");
    peer.request("tools/list", json!({})).await;

    let mut sent = ordinary_calls(&mut peer, &rig).await;
    sent.extend(failing_calls(&mut peer, &rig).await);
    misplaced_arguments(&mut peer, &rig.secrets).await;
    stray_lines(&mut peer.server, &rig.secrets).await;
    runtime_info(&mut peer, &rig).await;
    preview(&mut peer, &rig.secrets).await;
    let mut saved = vec![streams(&mut peer, &rig).await];
    saved.extend(background_tasks(&mut peer, &rig).await);
    sent.push(modern_input(&mut peer, &rig.secrets).await);
    modern_events(&mut peer, &rig).await;
    audit_stdio(peer, &rig.secrets).await;
    rig.assert_fakes_saw(&sent, 1);

    // Files: task records hold neither; the download directory holds a marker only in the
    // files the downloads saved; the upload root holds only the file put there.
    let records = rig.secrets.assert_dir_clean(&rig.tasks, &[]);
    let json_files = records
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"));
    assert!(
        json_files.count() >= 4,
        "the task records were read: {records:?}"
    );
    assert_eq!(saved.len(), 2, "two downloads saved a file");
    for path in &saved {
        let text = std::fs::read_to_string(path).unwrap();
        assert!(rig.secrets.has_marker(&text), "{path:?}");
    }
    rig.secrets.assert_dir_clean(&rig.dirs.downloads, &saved);
    rig.secrets
        .assert_dir_clean(&rig.dirs.uploads, &[PathBuf::from(&rig.input)]);
}

#[tokio::test]
async fn stdio_legacy_session_with_a_token_file_leaks_nothing() {
    let rig = Rig::new("leak-legacy");
    let token_file = secret_file(&rig.dirs.root.join("secrets"), "token", &rig.secrets.token);
    let mut server = rig.spawn(("SNOWLUMA_MCP_TOKEN_FILE", &token_file));
    early_notification(&mut server, &rig.secrets).await;
    let init = server
        .request(
            0,
            "initialize",
            json!({ "protocolVersion": "2025-11-25",
                    "capabilities": { "elicitation": { "form": {} } },
                    "clientInfo": { "name": "leak-audit", "version": "1" } }),
        )
        .await;
    assert!(init.get("result").is_some(), "{init}");
    server
        .send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
        .await;
    let mut peer = Peer::new(server, json!({}));

    let mut sent = ordinary_calls(&mut peer, &rig).await;
    sent.extend(failing_calls(&mut peer, &rig).await);
    misplaced_arguments(&mut peer, &rig.secrets).await;
    runtime_info(&mut peer, &rig).await;
    let saved = streams(&mut peer, &rig).await;
    sent.push(legacy_input(&mut peer, &rig.secrets).await);
    legacy_events(&mut peer, &rig).await;
    audit_stdio(peer, &rig.secrets).await;
    rig.assert_fakes_saw(&sent, 1);
    rig.secrets.assert_dir_clean(&rig.dirs.downloads, &[saved]);
}

/// Every JSON-RPC message in an HTTP reply body (JSON or SSE `data:` lines).
fn reply_messages(body: &str) -> Vec<String> {
    if serde_json::from_str::<Value>(body).is_ok() {
        return vec![body.to_string()];
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| d.trim().to_string())
        .filter(|d| !d.is_empty())
        .collect()
}

/// Checks one HTTP exchange: headers and body hold no token; messages hold no marker outside
/// returned content.
fn audit_reply(secrets: &Secrets, what: &str, reply: &http_server::Exchange) {
    let headers = format!("{:?}", reply.headers);
    secrets.assert_clean(&format!("{what}: reply headers"), &headers);
    secrets.assert_no_token(&format!("{what}: reply body"), &reply.body);
    for message in reply_messages(&reply.body) {
        secrets.assert_message_clean(&format!("{what}: reply"), &message);
    }
}

#[tokio::test]
async fn streamable_http_with_token_files_leaks_nothing() {
    use http_server::{HttpServer, open_session, post};

    let secrets = Secrets::new();
    let fake = FakeSnowLuma::start(Some(&secrets.token)).await;
    let dirs = Dirs::new("leak-http");
    let secret_dir = dirs.root.join("secrets");
    let token_file = secret_file(&secret_dir, "token", &secrets.token);
    let http_token_file = secret_file(&secret_dir, "http-token", &secrets.http_token);
    let downloads = dirs.downloads.to_string_lossy().into_owned();
    let server = HttpServer::start(
        &[
            ("SNOWLUMA_MCP_MODE", "write"),
            ("SNOWLUMA_MCP_ENDPOINT", fake.url.as_str()),
            ("SNOWLUMA_MCP_TOKEN_FILE", token_file.as_str()),
            ("SNOWLUMA_MCP_HTTP_TOKEN_FILE", http_token_file.as_str()),
            ("SNOWLUMA_MCP_DOWNLOAD_DIR", downloads.as_str()),
            ("SNOWLUMA_MCP_LOG", "trace"),
        ],
        &[],
    )
    .await;
    secrets.assert_argv_clean(server.pid());
    let url = server.url.clone();
    let token = Some(secrets.http_token.as_str());
    let mut traces = TraceIds::new();
    let call = |id: usize, tool: &str, args: Value, meta: Value| {
        json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": { "name": tool, "arguments": args, "_meta": meta } })
    };
    let send = |message: &str| {
        json!({ "action": "send_private_msg",
                "params": { "user_id": USER_ID, "message": message } })
    };

    // Refusals: no token, a wrong one, the right one under another scheme; each carries a
    // marked call that must not run and must not be echoed.
    let refused = call(
        1,
        "invoke_action",
        send(&secrets.marker("refused")),
        json!({}),
    );
    let basic = format!("Basic {}", secrets.http_token);
    for (what, token, extra) in [
        ("no token", None, vec![]),
        ("wrong token", Some(secrets.wrong_token.as_str()), vec![]),
        (
            "basic scheme",
            None,
            vec![("authorization", basic.as_str())],
        ),
    ] {
        let reply = post(&url, token, &extra, &refused).await;
        assert_eq!(reply.status, 401, "{what}: {}", reply.body);
        audit_reply(&secrets, what, &reply);
    }
    assert!(fake.requests().is_empty(), "a refused request runs nothing");

    // A legacy session: marked sends (one refused by SnowLuma), runtime info, previews.
    let session = open_session(&url, token).await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let sent = ["http", "http401", "modern"].map(|s| secrets.marker(s));
    let preview = json!({ "message_type": "private", "target_id": USER_ID,
                          "text": secrets.marker("preview") });
    let misplaced = json!({ "message_type": "private", "target_id": secrets.marker("badtarget"),
                            "text": "x" });
    let calls = [
        ("invoke_action", send(&sent[0]), None),
        ("invoke_action", send(&sent[1]), Some(Fault::Unauthorized)),
        (
            "get_runtime_info",
            json!({ "check_connection": true }),
            None,
        ),
        ("preview_message", preview, None),
        ("preview_message", misplaced, None),
    ];
    let mut replies = Vec::new();
    for (n, (tool, args, fault)) in calls.into_iter().enumerate() {
        if let Some(fault) = fault {
            fake.set_fault(None, fault);
        }
        let body = call(n + 2, tool, args, json!({ "traceparent": traces.next() }));
        replies.push(post(&url, token, &headers, &body).await);
        fake.clear_faults();
    }
    assert_eq!(
        outcome(&replies[0].json()),
        "success",
        "{}",
        replies[0].body
    );
    // A stateless 2026-07-28 call, and a body that is not a request at all.
    let mut meta = modern_meta(json!({}));
    meta["traceparent"] = json!(traces.next());
    let modern = call(10, "invoke_action", send(&sent[2]), meta);
    let routing = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "invoke_action"),
    ];
    replies.push(post(&url, token, &routing, &modern).await);
    let garbage = json!({ "jsonrpc": "2.0", "id": 11, "method": "tools/call",
                          "params": secrets.marker("garbage") });
    replies.push(post(&url, token, &headers, &garbage).await);
    for (n, reply) in replies.iter().enumerate() {
        assert!(
            reply.status < 500,
            "reply {n}: {} {}",
            reply.status,
            reply.body
        );
        audit_reply(&secrets, &format!("HTTP reply {n}"), reply);
    }

    // Let the writer thread flush the last lines before reading the log.
    let last = traces.sent.last().unwrap().clone();
    wait_until(raw_client::WAIT, || server.log().contains(&last)).await;
    let stderr = server.log();
    server.stop().await;
    secrets.assert_clean("HTTP server stderr", &stderr);
    traces.assert_logged(&stderr);
    assert!(
        stderr.contains("refused a request without the right bearer token"),
        "the refusals were logged:\n{stderr}"
    );
    assert_fake_saw(&fake, &secrets, &sent);
    secrets.assert_dir_clean(&dirs.downloads, &[]);
}

/// `snowluma-mcp check` with `env` (SNOWLUMA_MCP_* of the test's own environment removed);
/// returns its exit code and everything it printed.
fn run_check(env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut command = std::process::Command::new(raw_client::binary());
    for (name, _) in std::env::vars() {
        if name.starts_with("SNOWLUMA_MCP_") {
            command.env_remove(name);
        }
    }
    let output = command
        .arg("check")
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run snowluma-mcp check");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code(), text)
}

#[test]
fn the_check_subcommand_leaks_nothing() {
    let secrets = Secrets::new();
    let fake = FakeSnowLuma::start_blocking(fake_snowluma::FakeOptions {
        token: Some(secrets.token.clone()),
        ..fake_snowluma::FakeOptions::default()
    });
    let socket = ws_fake(&secrets.token);
    let other_socket = ws_fake(&secrets.wrong_token);
    let dirs = Dirs::new("leak-check");
    let token_file = secret_file(&dirs.root.join("secrets"), "token", &secrets.token);
    let base = |token: (&'static str, String), events: &str| {
        vec![
            ("SNOWLUMA_MCP_ENDPOINT", fake.url.clone()),
            ("SNOWLUMA_MCP_EVENTS_URL", events.to_string()),
            ("SNOWLUMA_MCP_LOG", "trace".to_string()),
            token,
        ]
    };
    // The expected verdict, where it is part of the point (`check` cannot see a token the
    // event adapter refuses only after the handshake: that case is here for the audit).
    let env_token = || ("SNOWLUMA_MCP_TOKEN", secrets.token.clone());
    let file_token = || ("SNOWLUMA_MCP_TOKEN_FILE", token_file.clone());
    let cases = [
        (
            "token in env",
            base(env_token(), &socket.url),
            None,
            Some(true),
        ),
        (
            "token file",
            base(file_token(), &socket.url),
            None,
            Some(true),
        ),
        (
            "SnowLuma answers 401",
            base(env_token(), &socket.url),
            Some(Fault::Unauthorized),
            Some(false),
        ),
        (
            "events refuse the token",
            base(env_token(), &other_socket.url),
            None,
            None,
        ),
        (
            "both sources",
            [base(env_token(), &socket.url), vec![file_token()]].concat(),
            None,
            Some(false),
        ),
    ];
    for (what, env, fault, passes) in cases {
        if let Some(fault) = fault {
            fake.set_fault(None, fault);
        }
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (code, report) = run_check(&env);
        fake.clear_faults();
        if let Some(passes) = passes {
            assert_eq!(code == Some(0), passes, "{what}: {report}");
        }
        assert!(
            report.contains("configuration"),
            "{what}: a report was printed: {report}"
        );
        secrets.assert_clean(&format!("check report ({what})"), &report);
    }
    assert_fake_saw(&fake, &secrets, &[]);
    assert_eq!(
        socket.authorizations(),
        vec![Some(format!("Bearer {}", secrets.token)); 3],
        "the events probe sent the token"
    );
    assert_eq!(other_socket.handshakes(), 1);
}

/// A client that strays from the lifecycle (a notification or a response right after
/// `server/discover`, before any session exists) is not answered and does not end the
/// session; nothing it sent shows up in the log, even at trace level.
#[tokio::test]
async fn stray_messages_before_a_session_are_not_logged() {
    let secrets = Secrets::new();
    let marker = secrets.marker("prelifecycle");
    for stray in [
        json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": { "requestId": 1, "reason": marker } }),
        json!({ "jsonrpc": "2.0", "id": 99, "result": { "action": "accept",
                "content": { "params_json": marker } } }),
    ] {
        let mut server = RawServer::spawn(&[
            ("SNOWLUMA_MCP_TOKEN", secrets.token.as_str()),
            ("SNOWLUMA_MCP_LOG", "trace"),
        ]);
        let discover = server
            .request(
                1,
                "server/discover",
                json!({ "_meta": modern_meta(json!({})) }),
            )
            .await;
        assert!(discover.get("result").is_some(), "{discover}");
        server.send(&stray).await;
        let listed = server
            .request(2, "tools/list", json!({ "_meta": modern_meta(json!({})) }))
            .await;
        assert!(listed["result"]["tools"].is_array(), "{listed}");
        let (code, stderr) = server.finish().await;
        assert_eq!(code, Some(0), "the session served on: {stderr}");
        secrets.assert_clean("stderr of a session with a stray message", &stderr);
    }
}

/// The audit itself can fail: each form it claims to look for is found when planted the way
/// a careless log line or file would hold it, and the content exemptions are no wider than
/// the returned content.
#[test]
fn the_audit_finds_what_it_looks_for() {
    use base64::Engine;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    use sha2::Digest;

    let secrets = Secrets::new();
    let token = &secrets.token;
    let url_encoded: String = url::form_urlencoded::byte_serialize(token.as_bytes()).collect();
    let hex: String = token.bytes().map(|b| format!("{b:02X}")).collect();
    let digest: String = sha2::Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let mut planted = vec![
        format!("authorization=Bearer {token}"),
        format!("GET /?access_token={}", url_encoded.to_ascii_lowercase()),
        format!("bytes {hex}"),
        format!("scope {digest}"),
        format!("{{\"http\":\"{}\"}}", secrets.http_token),
        format!("presented {}", secrets.wrong_token),
    ];
    for prefix in ["", "u", "us", "user:"] {
        let inner = format!("{prefix}{token}!");
        planted.push(format!("Basic {}", STANDARD.encode(&inner)));
        planted.push(format!("chunk {}", URL_SAFE_NO_PAD.encode(&inner)));
    }
    for text in &planted {
        assert!(secrets.token_form_in(text).is_some(), "not found in {text}");
    }
    assert!(secrets.token_form_in(&token[..token.len() - 1]).is_none());

    let marker = secrets.marker("probe");
    let result = |structured: Value| {
        json!({ "jsonrpc": "2.0", "id": 1, "result": {
            "content": [{ "type": "text", "text": structured.to_string() }],
            "structuredContent": structured } })
        .to_string()
    };
    let returned =
        result(json!({ "result": { "text": marker }, "diagnostics": { "outcome": "success" } }));
    assert_eq!(
        secrets.marker_outside_content(&returned),
        None,
        "returned content is exempt"
    );
    let events = result(
        json!({ "result": { "entries": [{ "event": { "raw_message": marker } }],
                                            "status": { "state": "connected" } },
                                "diagnostics": { "outcome": "success" } }),
    );
    assert_eq!(
        secrets.marker_outside_content(&events),
        None,
        "events are exempt"
    );
    for leaking in [
        result(
            json!({ "result": null, "diagnostics": { "outcome": "failed", "message": marker } }),
        ),
        result(
            json!({ "result": { "entries": [], "status": { "detail": marker } },
                       "diagnostics": { "outcome": "success" } }),
        ),
        json!({ "jsonrpc": "2.0", "id": 1, "error": { "code": -32602, "message": marker } })
            .to_string(),
        json!({ "jsonrpc": "2.0", "id": 1, "result": { "resultType": "input_required",
                "requestState": URL_SAFE_NO_PAD.encode(format!("state {marker}")) } })
        .to_string(),
        json!({ "jsonrpc": "2.0", "method": "notifications/progress",
                "params": { "progressToken": 1, "progress": 1, "message": marker } })
        .to_string(),
    ] {
        assert!(
            secrets.marker_outside_content(&leaking).is_some(),
            "not found in {leaking}"
        );
    }
    // A text block that is not the mirror of structuredContent is not exempt.
    let smuggled = json!({ "jsonrpc": "2.0", "id": 1, "result": {
        "content": [{ "type": "text", "text": marker }],
        "structuredContent": { "result": null, "diagnostics": { "outcome": "success" } } } });
    assert!(
        secrets
            .marker_outside_content(&smuggled.to_string())
            .is_some()
    );
}
