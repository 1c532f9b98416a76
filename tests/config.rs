//! Start-up configuration rules over the real binary: the token comes from the environment or
//! a token file (never a flag), a token that cannot be a header value stops the server, the
//! endpoint is validated with a URL parser, and the HTTP/MCP libraries never log below warn.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/raw_client.rs"]
mod raw_client;

use fake_snowluma::FakeSnowLuma;
use raw_client::{RawServer, modern_meta, structured};
use serde_json::json;

const TOKEN: &str = "file-token-value";

fn temp_file(name: &str, contents: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("snowluma-config-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("token");
    std::fs::write(&path, contents).unwrap();
    // Secret files must not be readable by group or others (issue 37).
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    path
}

async fn get_status(server: &mut RawServer) -> serde_json::Value {
    let response = server
        .request(
            1,
            "tools/call",
            json!({ "name": "query_action", "arguments": { "action": "get_status" }, "_meta": modern_meta(json!({})) }),
        )
        .await;
    structured(&response)
}

#[tokio::test]
async fn the_token_file_is_read_whole_with_its_trailing_newline_trimmed() {
    let fake = FakeSnowLuma::start(Some(TOKEN)).await;
    let file = temp_file("ok", &format!("{TOKEN}\n"));
    let file = file.to_string_lossy().to_string();
    let mut server = RawServer::spawn(&[
        ("SNOWLUMA_MCP_ENDPOINT", fake.url.as_str()),
        ("SNOWLUMA_MCP_TOKEN_FILE", file.as_str()),
    ]);
    let body = get_status(&mut server).await;
    assert_eq!(body["diagnostics"]["outcome"], "success", "{body}");
    let recorded = fake.requests_for("get_status").pop().unwrap();
    assert_eq!(
        recorded.header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    let (_, stderr) = server.finish().await;
    assert!(!stderr.contains(TOKEN), "token in stderr: {stderr}");
}

#[tokio::test]
async fn bad_secrets_and_endpoints_stop_the_server_with_a_clear_message() {
    let newline = temp_file("newline", "a\nb\n");
    let newline = newline.to_string_lossy().to_string();
    let good = temp_file("good", "tok");
    let good = good.to_string_lossy().to_string();
    // A token file the group may read is refused (issue 37), naming the fix.
    let shared = temp_file("shared", "tok");
    std::fs::set_permissions(&shared, std::os::unix::fs::PermissionsExt::from_mode(0o640)).unwrap();
    let shared = shared.to_string_lossy().to_string();
    let endpoint = ("SNOWLUMA_MCP_ENDPOINT", "http://127.0.0.1:3000/");
    let cases: Vec<(Vec<(&str, &str)>, &str)> = vec![
        (
            vec![endpoint, ("SNOWLUMA_MCP_TOKEN_FILE", "/nonexistent/token")],
            "cannot be read",
        ),
        (
            vec![endpoint, ("SNOWLUMA_MCP_TOKEN_FILE", newline.as_str())],
            "control character",
        ),
        (
            vec![endpoint, ("SNOWLUMA_MCP_TOKEN_FILE", shared.as_str())],
            "chmod 600",
        ),
        (
            vec![endpoint, ("SNOWLUMA_MCP_TOKEN", "a\tb")],
            "control character",
        ),
        (
            vec![
                endpoint,
                ("SNOWLUMA_MCP_TOKEN", "x"),
                ("SNOWLUMA_MCP_TOKEN_FILE", good.as_str()),
            ],
            "keep one of them",
        ),
        (
            vec![("SNOWLUMA_MCP_ENDPOINT", "http://127.0.0.1:99999/")],
            "not a valid URL",
        ),
        (
            vec![("SNOWLUMA_MCP_ENDPOINT", "http://127.0.0.1:3000/?a=1")],
            "query",
        ),
        (
            vec![("SNOWLUMA_MCP_ENDPOINT", "http://127.0.0.1:3000/#x")],
            "fragment",
        ),
        (
            vec![("SNOWLUMA_MCP_ENDPOINT", "http:///")],
            "SNOWLUMA_MCP_ENDPOINT",
        ),
        (
            vec![endpoint, ("SNOWLUMA_MCP_MAX_CALLS", "0")],
            "SNOWLUMA_MCP_MAX_CALLS",
        ),
    ];
    for (env, needle) in cases {
        let server = RawServer::spawn(&env);
        let (code, stderr) = server.finish().await;
        assert_ne!(code, Some(0), "{env:?} should fail");
        assert!(stderr.contains(needle), "{env:?}: {stderr}");
    }
    // There is no --token flag: command lines are visible to every local user.
    let flag = RawServer::spawn_with_args(&[], &["--token", "secret-on-argv"]);
    let (code, stderr) = flag.finish().await;
    assert_ne!(code, Some(0));
    assert!(stderr.contains("--token"), "{stderr}");
    let help = std::process::Command::new(raw_client::binary())
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("--token-file") && !help.contains("--token <"),
        "{help}"
    );
}

#[tokio::test]
async fn http_and_mcp_libraries_stay_at_warn_whatever_the_filter() {
    let fake = FakeSnowLuma::start(None).await;
    let mut server = RawServer::spawn(&[
        ("SNOWLUMA_MCP_ENDPOINT", fake.url.as_str()),
        ("SNOWLUMA_MCP_LOG", "trace"),
    ]);
    // A notification before any request leaves one debug line of the server's own.
    server
        .send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
        .await;
    let body = get_status(&mut server).await;
    assert_eq!(body["diagnostics"]["outcome"], "success");
    let (_, stderr) = server.finish().await;
    // The filter is really at trace: the server's own debug-level lines are there.
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("DEBUG") || l.contains("TRACE")),
        "{stderr}"
    );
    for line in stderr.lines() {
        let chatty = ["rmcp", "hyper", "hyper_util", "h2"]
            .iter()
            .any(|c| line.contains(&format!(" {c}::")) || line.contains(&format!(" {c}:")));
        let low = line.contains("DEBUG") || line.contains("TRACE") || line.contains(" INFO ");
        assert!(!(chatty && low), "library line below warn: {line}");
    }
}

/// MCP hosts that fill every variable from a settings form (an MCP Bundle's `user_config`)
/// pass an empty string for a field the user left blank: that is unset, not an error, so the
/// server starts with the defaults (docs mode without an endpoint, read mode with one).
#[tokio::test]
async fn empty_settings_from_a_host_form_mean_unset() {
    let blank = [
        ("SNOWLUMA_MCP_MODE", ""),
        ("SNOWLUMA_MCP_TOKEN", ""),
        ("SNOWLUMA_MCP_DOWNLOAD_DIR", ""),
        ("SNOWLUMA_MCP_UPLOAD_ROOT", ""),
        ("SNOWLUMA_MCP_TASK_DIR", ""),
        ("SNOWLUMA_MCP_EVENTS_URL", ""),
    ];
    let fake = FakeSnowLuma::start(None).await;
    for (endpoint, mode) in [("", "docs"), (fake.url.as_str(), "read")] {
        let mut env = blank.to_vec();
        env.push(("SNOWLUMA_MCP_ENDPOINT", endpoint));
        let mut server = RawServer::spawn(&env);
        let response = server
            .request(
                1,
                "tools/call",
                json!({ "name": "get_runtime_info", "arguments": {}, "_meta": modern_meta(json!({})) }),
            )
            .await;
        let body = structured(&response);
        assert_eq!(body["result"]["mode"], mode, "{body}");
        if mode == "read" {
            assert_eq!(body["result"]["upload_enabled"], false, "{body}");
        }
        server.finish().await;
    }
}
