//! File transfers driven by rmcp's own client over real stdio, in both protocol generations
//! (legacy `initialize` and 2026-07-28 `server/discover`): a download saved privately with the
//! bytes SnowLuma sent, and an automatic upload whose bytes reach SnowLuma whole. Every
//! result is checked against the outputSchema the server advertised to that client.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/raw_client.rs"]
mod raw_client;
#[path = "support/rmcp_client.rs"]
mod rmcp_client;
#[path = "support/stream_helpers.rs"]
mod stream_helpers;

use std::os::unix::fs::PermissionsExt;

use fake_snowluma::FakeSnowLuma;
use rmcp::RoleClient;
use rmcp::service::RunningService;
use serde_json::json;
use stream_helpers::{Dirs, pseudo_random, sha256};
use tokio::process::Command;

async fn connect(fake: &FakeSnowLuma, dirs: &Dirs, modern: bool) -> RunningService<RoleClient, ()> {
    let mut command = Command::new(raw_client::binary());
    command
        .env("SNOWLUMA_MCP_MODE", "write")
        .env("SNOWLUMA_MCP_ENDPOINT", &fake.url)
        .env("SNOWLUMA_MCP_DOWNLOAD_DIR", &dirs.downloads)
        .env("SNOWLUMA_MCP_UPLOAD_ROOT", &dirs.uploads)
        .env_remove("SNOWLUMA_MCP_TOKEN")
        .env_remove("SNOWLUMA_MCP_TASK_DIR")
        .env("SNOWLUMA_MCP_LOG", "warn");
    rmcp_client::connect((), command, modern).await
}

async fn download_and_upload(modern: bool) {
    let generation = if modern { "modern" } else { "legacy" };
    let dirs = Dirs::new(&format!("rmcp-files-{generation}"));
    let fake = FakeSnowLuma::start(None).await;
    let remote = pseudo_random(300_000, 11);
    let file = fake.add_file("rmcp.bin", remote.clone());
    let local = pseudo_random(900_000, 12);
    std::fs::write(dirs.uploads.join("local.bin"), &local).unwrap();
    let client = connect(&fake, &dirs, modern).await;

    // Download: saved in the private directory, the bytes and checksum SnowLuma sent.
    let (result, body) = rmcp_client::call_listed(
        &client,
        "invoke_action",
        json!({ "action": "download_file_stream", "params": { "file": file, "chunk_size": 65536 } }),
    )
    .await;
    assert_eq!(result.is_error, Some(false), "{generation}: {body}");
    assert_eq!(body["diagnostics"]["outcome"], "success", "{body}");
    let saved = std::path::PathBuf::from(body["result"]["path"].as_str().unwrap());
    assert!(saved.starts_with(&dirs.downloads), "{body}");
    assert_eq!(std::fs::read(&saved).unwrap(), remote);
    assert_eq!(body["result"]["size"], remote.len());
    assert_eq!(body["result"]["sha256"], sha256(&remote));
    let mode = std::fs::metadata(&saved).unwrap().permissions().mode();
    assert_eq!(
        mode & 0o077,
        0,
        "{generation}: saved file is private: {mode:o}"
    );
    assert_eq!(
        dirs.downloaded(),
        vec![saved.clone()],
        "no .part file is left"
    );

    // Automatic upload: two chunks and a completion; SnowLuma assembled exactly the file.
    let (result, body) = rmcp_client::call_listed(
        &client,
        "invoke_action",
        json!({ "action": "upload_file_stream", "execution": { "input_file": "local.bin" } }),
    )
    .await;
    assert_eq!(result.is_error, Some(false), "{generation}: {body}");
    assert_eq!(body["diagnostics"]["outcome"], "success", "{body}");
    assert_eq!(body["result"]["status"], "file_complete");
    assert_eq!(body["result"]["sha256"], sha256(&local));
    let stream_id = body["diagnostics"]["stream_id"].as_str().unwrap();
    let state = fake.uploaded(stream_id).expect("the fake saw the upload");
    assert_eq!(state.bytes.as_deref(), Some(local.as_slice()));

    // A refused path is a tool error with the one refusal text, and nothing is sent.
    let before = fake.requests().len();
    let (result, body) = rmcp_client::call_listed(
        &client,
        "invoke_action",
        json!({ "action": "upload_file_stream", "execution": { "input_file": "../outside.bin" } }),
    )
    .await;
    assert_eq!(result.is_error, Some(true), "{body}");
    assert_eq!(body["diagnostics"]["kind"], "input_file", "{body}");
    assert_eq!(fake.requests().len(), before);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn rmcp_legacy_client_downloads_and_uploads() {
    download_and_upload(false).await;
}

#[tokio::test]
async fn rmcp_modern_client_downloads_and_uploads() {
    download_and_upload(true).await;
}
