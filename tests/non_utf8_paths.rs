//! Non-UTF-8 paths (issue 10): directories the server reports in results must be UTF-8, so a
//! non-UTF-8 download directory, upload root, task directory or default download directory
//! (from TMPDIR with no HOME or XDG_CACHE_HOME) stops the server at start-up with a message
//! naming the setting - never a panic, never a lossy path in a later result. Files that are only
//! opened (the token file, the CA file) may have any path.

#[path = "support/raw_client.rs"]
mod raw_client;

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStringExt;

use raw_client::{RawServer, modern_meta, structured};
use serde_json::json;
use snowluma_mcp::config::Config;

/// `/tmp/snowluma-<0xff>-<pid>-<name>`: 0xff never appears in UTF-8.
fn non_utf8(name: &str) -> OsString {
    let mut bytes = b"/tmp/snowluma-".to_vec();
    bytes.push(0xff);
    bytes.extend_from_slice(format!("-{}-{name}", std::process::id()).as_bytes());
    OsString::from_vec(bytes)
}

#[test]
fn non_utf8_directory_flags_are_refused_naming_the_setting() {
    for (flag, variable) in [
        ("--download-dir", "SNOWLUMA_MCP_DOWNLOAD_DIR"),
        ("--upload-root", "SNOWLUMA_MCP_UPLOAD_ROOT"),
        ("--task-dir", "SNOWLUMA_MCP_TASK_DIR"),
    ] {
        let args: Vec<OsString> = vec![
            "snowluma-mcp".into(),
            "--mode".into(),
            "write".into(),
            "--endpoint".into(),
            "http://127.0.0.1:3000/".into(),
            flag.into(),
            non_utf8("dir"),
        ];
        let message = match Config::try_from_args(args) {
            Ok(_) => panic!("{flag} with a non-UTF-8 path was accepted"),
            Err(error) => error.to_string(),
        };
        assert!(message.contains(variable), "{message}");
        assert!(message.contains("not valid UTF-8"), "{message}");
    }
}

#[test]
fn a_non_utf8_token_file_path_is_read() {
    let path = std::path::PathBuf::from(non_utf8("token"));
    std::fs::write(&path, "secret-from-file\n").unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let args: Vec<OsString> = vec![
        "snowluma-mcp".into(),
        "--endpoint".into(),
        "http://127.0.0.1:3000/".into(),
        "--token-file".into(),
        path.clone().into_os_string(),
    ];
    let config = Config::try_from_args(args);
    std::fs::remove_file(&path).unwrap();
    let config = config.map_err(|e| e.to_string()).unwrap();
    assert_eq!(config.token.as_deref(), Some("secret-from-file"));
}

#[tokio::test]
async fn the_binary_reports_a_non_utf8_download_dir_variable_without_panicking() {
    let dir = non_utf8("downloads");
    let server = RawServer::spawn_with_os_env(
        &[
            (
                "SNOWLUMA_MCP_ENDPOINT",
                OsStr::new("http://127.0.0.1:3000/"),
            ),
            ("SNOWLUMA_MCP_DOWNLOAD_DIR", &dir),
        ],
        &[],
    );
    let (code, stderr) = server.finish().await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("SNOWLUMA_MCP_DOWNLOAD_DIR"), "{stderr}");
    assert!(stderr.contains("not valid UTF-8"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[tokio::test]
async fn a_non_utf8_tmpdir_behind_the_default_download_dir_is_named() {
    let tmp = non_utf8("tmpdir");
    let server = RawServer::spawn_with_os_env(
        &[
            (
                "SNOWLUMA_MCP_ENDPOINT",
                OsStr::new("http://127.0.0.1:3000/"),
            ),
            ("TMPDIR", &tmp),
        ],
        &[
            "HOME",
            "XDG_CACHE_HOME",
            "LOCALAPPDATA",
            "SNOWLUMA_MCP_DOWNLOAD_DIR",
        ],
    );
    let (code, stderr) = server.finish().await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("TMPDIR"), "{stderr}");
    assert!(stderr.contains("SNOWLUMA_MCP_DOWNLOAD_DIR"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[tokio::test]
async fn a_non_utf8_tmpdir_does_not_disturb_calls_when_the_download_dir_is_set() {
    let tmp = non_utf8("tmpdir-calls");
    let downloads = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        downloads.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    let mut server = RawServer::spawn_with_os_env(
        &[
            ("SNOWLUMA_MCP_ENDPOINT", OsStr::new("http://127.0.0.1:9/")),
            ("SNOWLUMA_MCP_DOWNLOAD_DIR", downloads.path().as_os_str()),
            ("TMPDIR", &tmp),
        ],
        &[],
    );
    // A call that reports the configuration, and one that fails to connect: neither panics.
    server
        .send(&json!({ "jsonrpc": "2.0", "id": 0, "method": "tools/list", "params": { "_meta": modern_meta(json!({})) } }))
        .await;
    if server.next().await.is_none() {
        let (code, stderr) = server.finish().await;
        panic!("the server exited ({code:?}): {stderr}");
    }
    let info = server
        .request(
            1,
            "tools/call",
            json!({ "name": "get_runtime_info", "arguments": {}, "_meta": modern_meta(json!({})) }),
        )
        .await;
    assert!(info["result"].is_object(), "{info}");
    let query = server
        .request(
            2,
            "tools/call",
            json!({ "name": "query_action", "arguments": { "action": "get_status" }, "_meta": modern_meta(json!({})) }),
        )
        .await;
    assert_eq!(
        structured(&query)["diagnostics"]["kind"],
        "connection_refused"
    );
    let (_, stderr) = server.finish().await;
    assert!(!stderr.contains("panicked"), "{stderr}");
}
