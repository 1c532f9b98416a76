//! Download files end to end: a private download directory (refused otherwise, with the fix
//! named), `.part` files renamed on completion and removed after a crash, one quota shared by
//! concurrent downloads and by server processes, and SIGTERM cleaning up running transfers.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/raw_client.rs"]
mod raw_client;
#[path = "support/stream_helpers.rs"]
mod stream_helpers;

use std::os::unix::fs::{MetadataExt, PermissionsExt};

use fake_snowluma::{FakeSnowLuma, Fault};
use raw_client::{RawServer, modern_meta, structured, wait_until};
use serde_json::{Value, json};
use stream_helpers::{Dirs, invoke, pseudo_random, spawn};

fn call(id: i64, args: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "invoke_action", "_meta": modern_meta(json!({})), "arguments": args
    } })
}

fn has_part(dir: &std::path::Path) -> bool {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().ends_with(".part"))
}

#[tokio::test]
async fn a_download_directory_others_can_enter_or_a_symlink_is_refused_at_start() {
    let dirs = Dirs::new("private-dir");
    let fake = FakeSnowLuma::start(None).await;
    std::fs::set_permissions(&dirs.downloads, std::fs::Permissions::from_mode(0o755)).unwrap();
    let server = spawn(&fake, &dirs, &[]);
    let (code, stderr) = server.exited().await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("chmod 700"), "{stderr}");

    let link = dirs.root.join("link");
    std::fs::set_permissions(&dirs.downloads, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::symlink(&dirs.downloads, &link).unwrap();
    let link = link.to_string_lossy().to_string();
    let server = spawn(
        &fake,
        &dirs,
        &[("SNOWLUMA_MCP_DOWNLOAD_DIR", link.as_str())],
    );
    let (code, stderr) = server.exited().await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("is a symlink"), "{stderr}");
}

/// Only write mode runs stream actions: docs and read mode never create, check or clean the
/// download directory, even one that write mode would refuse.
#[tokio::test]
async fn docs_and_read_mode_leave_the_download_directory_alone() {
    let dirs = Dirs::new("untouched-dir");
    let fake = FakeSnowLuma::start(None).await;
    let cache = dirs.root.join("cache");
    let cache_str = cache.to_string_lossy().to_string();
    std::fs::set_permissions(&dirs.downloads, std::fs::Permissions::from_mode(0o755)).unwrap();
    let open_dir = dirs.downloads.to_string_lossy().to_string();
    for (mode, dir) in [
        ("docs", None),
        ("read", None),
        ("read", Some(open_dir.as_str())),
    ] {
        let mut env = vec![
            ("SNOWLUMA_MCP_MODE", mode),
            ("XDG_CACHE_HOME", cache_str.as_str()),
        ];
        if mode == "read" {
            env.push(("SNOWLUMA_MCP_ENDPOINT", fake.url.as_str()));
        }
        if let Some(dir) = dir {
            env.push(("SNOWLUMA_MCP_DOWNLOAD_DIR", dir));
        }
        let mut server = RawServer::spawn(&env);
        let listed = server
            .request(1, "tools/list", json!({ "_meta": modern_meta(json!({})) }))
            .await;
        assert!(listed["result"]["tools"].is_array(), "{mode}: {listed}");
        let (code, stderr) = server.finish().await;
        assert_eq!(code, Some(0), "{mode}: {stderr}");
        assert!(!cache.exists(), "{mode} mode created {}", cache.display());
        assert!(
            std::fs::read_dir(&dirs.downloads).unwrap().next().is_none(),
            "{mode} mode wrote into the download directory"
        );
    }
    // The same open directory stops write mode at start-up.
    let server = RawServer::spawn(&[
        ("SNOWLUMA_MCP_MODE", "write"),
        ("SNOWLUMA_MCP_ENDPOINT", fake.url.as_str()),
        ("SNOWLUMA_MCP_DOWNLOAD_DIR", open_dir.as_str()),
    ]);
    let (code, stderr) = server.exited().await;
    assert_eq!(code, Some(2), "{stderr}");
}

#[tokio::test]
async fn the_default_download_directory_is_per_user_and_private() {
    let dirs = Dirs::new("default-dir");
    let fake = FakeSnowLuma::start(None).await;
    let cache = dirs.root.join("cache");
    let cache_str = cache.to_string_lossy().to_string();
    let mut server = RawServer::spawn(&[
        ("SNOWLUMA_MCP_MODE", "write"),
        ("SNOWLUMA_MCP_ENDPOINT", fake.url.as_str()),
        ("XDG_CACHE_HOME", cache_str.as_str()),
    ]);
    let file = fake.add_file("x.txt", b"hello".to_vec());
    let (_, body) = invoke(
        &mut server,
        1,
        json!({ "action": "download_file_stream", "params": { "file": file } }),
        None,
    )
    .await;
    let expected = cache.join("snowluma-mcp").join("downloads");
    let saved = std::path::PathBuf::from(body["result"]["path"].as_str().unwrap());
    assert_eq!(saved.parent().unwrap(), expected.as_path(), "{body}");
    let meta = std::fs::symlink_metadata(&expected).unwrap();
    assert_eq!(meta.mode() & 0o777, 0o700);
    assert_eq!(meta.uid(), std::fs::metadata(&dirs.root).unwrap().uid());
    server.finish().await;
}

#[tokio::test]
async fn downloads_are_written_as_part_files_and_crash_leftovers_are_removed() {
    let dirs = Dirs::new("part");
    let fake = FakeSnowLuma::start(None).await;
    let file = fake.add_file("p.bin", pseudo_random(64_000, 4));
    let env = [("SNOWLUMA_MCP_TEST_WRITE_DELAY_MS", "400")];
    let mut server = spawn(&fake, &dirs, &env);
    server
        .send(&call(1, json!({ "action": "download_file_stream", "params": { "file": file, "chunk_size": 16384 } })))
        .await;
    wait_until(raw_client::WAIT, || has_part(&dirs.downloads)).await;
    assert!(has_part(&dirs.downloads));
    // Only the .part name exists while writing.
    assert_eq!(dirs.downloaded().len(), 1, "{:?}", dirs.downloaded());
    // A crash (SIGKILL) leaves the .part file behind...
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let _ = server.exited().await;
    assert!(has_part(&dirs.downloads), "the crash left a .part file");
    // ...and the next start removes it, so it never counts against the quota.
    let mut server = spawn(&fake, &dirs, &[("SNOWLUMA_MCP_DIR_QUOTA_BYTES", "70000")]);
    let (_, body) = invoke(
        &mut server,
        1,
        json!({ "action": "download_file_stream", "params": { "file": file, "chunk_size": 16384 } }),
        None,
    )
    .await;
    assert_eq!(body["diagnostics"]["outcome"], "success", "{body}");
    let saved = body["result"]["path"].as_str().unwrap();
    assert!(!saved.ends_with(".part"), "{saved}");
    let files = dirs.downloaded();
    assert_eq!(files.len(), 1, "only the completed file: {files:?}");
    assert_eq!(files[0].to_string_lossy(), saved);
    server.finish().await;
}

#[tokio::test]
async fn two_server_processes_sharing_a_directory_stay_within_its_quota() {
    let dirs = Dirs::new("quota-shared");
    let fake = FakeSnowLuma::start(None).await;
    let a = fake.add_file("a.bin", pseudo_random(400_000, 5));
    let b = fake.add_file("b.bin", pseudo_random(400_000, 6));
    // Slow writes make both downloads overlap; each alone fits, together they do not.
    let env = [
        ("SNOWLUMA_MCP_DIR_QUOTA_BYTES", "600000"),
        ("SNOWLUMA_MCP_TEST_WRITE_DELAY_MS", "100"),
    ];
    let mut first = spawn(&fake, &dirs, &env);
    let mut second = spawn(&fake, &dirs, &env);
    let args = |file: &str| json!({ "action": "download_file_stream", "params": { "file": file, "chunk_size": 65536 } });
    first.send(&call(1, args(&a))).await;
    second.send(&call(1, args(&b))).await;
    let one = structured(&first.wait_for_id(&json!(1)).await);
    let two = structured(&second.wait_for_id(&json!(1)).await);
    let outcomes = [&one, &two].map(|b| b["diagnostics"]["outcome"].as_str().unwrap().to_string());
    assert_eq!(
        outcomes.iter().filter(|o| *o == "success").count(),
        1,
        "{one} {two}"
    );
    let refused = if outcomes[0] == "success" { &two } else { &one };
    assert_eq!(
        refused["diagnostics"]["kind"], "quota_exceeded",
        "{refused}"
    );
    let total: u64 = dirs
        .downloaded()
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    assert!(total <= 600_000, "{total}");
    first.finish().await;
    second.finish().await;
}

#[tokio::test]
async fn sigterm_cancels_transfers_cleans_up_and_exits() {
    let dirs = Dirs::new("sigterm");
    let fake = FakeSnowLuma::start(None).await;
    let file = fake.add_file("s.bin", pseudo_random(64_000, 7));
    let mut server = spawn(
        &fake,
        &dirs,
        &[("SNOWLUMA_MCP_TEST_WRITE_DELAY_MS", "1000")],
    );
    server
        .send(&call(1, json!({ "action": "download_file_stream", "params": { "file": file, "chunk_size": 16384 } })))
        .await;
    wait_until(raw_client::WAIT, || has_part(&dirs.downloads)).await;
    assert!(has_part(&dirs.downloads));
    let status = std::process::Command::new("kill")
        .args(["-TERM", &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let (_, stderr) = server.exited().await;
    assert!(stderr.contains("SIGTERM"), "{stderr}");
    assert!(
        dirs.downloaded().is_empty(),
        "partial file removed: {:?}",
        dirs.downloaded()
    );
}

#[tokio::test]
async fn sigint_resets_a_stuck_upload_and_reports_no_success() {
    let dirs = Dirs::new("sigint-upload");
    let fake = FakeSnowLuma::start(None).await;
    std::fs::write(dirs.uploads.join("u.bin"), pseudo_random(1000, 8)).unwrap();
    let mut server = spawn(&fake, &dirs, &[]);
    fake.set_fault(Some("upload_file_stream"), Fault::StallBody);
    server
        .send(&call(
            1,
            json!({ "action": "upload_file_stream", "execution": { "input_file": "u.bin" } }),
        ))
        .await;
    wait_until(raw_client::WAIT, || {
        !fake.requests_for("upload_file_stream").is_empty()
    })
    .await;
    let status = std::process::Command::new("kill")
        .args(["-INT", &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    // Whatever the server still writes before it exits, none of it reports the upload done.
    while let Some(message) = server.next().await {
        if message["id"] == json!(1) && message.get("result").is_some() {
            let body = structured(&message);
            assert_ne!(body["diagnostics"]["outcome"], "success", "{message}");
        }
    }
    let (_, stderr) = server.exited().await;
    assert!(stderr.contains("SIGINT"), "{stderr}");
    let requests = fake.requests_for("upload_file_stream");
    // The reset names the stream the chunk opened (OneBot params sit under `params`).
    let stream_id = requests[0].params.as_ref().unwrap()["stream_id"].clone();
    let reset_sent = requests.iter().any(|r| {
        r.params
            .as_ref()
            .is_some_and(|p| p["reset"] == true && p["stream_id"] == stream_id)
    });
    assert!(reset_sent, "the upload sent its reset: {requests:?}");
    // The stream never completed: no completion call was sent.
    assert!(
        !requests
            .iter()
            .any(|r| r.params.as_ref().is_some_and(|p| p["is_complete"] == true)),
        "{requests:?}"
    );
}

#[tokio::test]
async fn a_second_server_starting_on_the_directory_keeps_a_live_part_file() {
    let dirs = Dirs::new("part-live");
    let fake = FakeSnowLuma::start(None).await;
    let bytes = pseudo_random(64_000, 9);
    let file = fake.add_file("live.bin", bytes.clone());
    let mut writer = spawn(&fake, &dirs, &[("SNOWLUMA_MCP_TEST_WRITE_DELAY_MS", "300")]);
    writer
        .send(&call(1, json!({ "action": "download_file_stream", "params": { "file": file, "chunk_size": 16384 } })))
        .await;
    wait_until(raw_client::WAIT, || has_part(&dirs.downloads)).await;
    assert!(has_part(&dirs.downloads));
    // Another server starts on the same directory while the download is being written: its
    // crash clean-up must leave the live .part file alone.
    let mut other = spawn(&fake, &dirs, &[]);
    let ping = other.request(1, "ping", json!({})).await;
    assert!(ping.get("result").is_some(), "{ping}");
    assert!(has_part(&dirs.downloads), "the live .part file survived");
    let body = structured(&writer.wait_for_id(&json!(1)).await);
    assert_eq!(body["diagnostics"]["outcome"], "success", "{body}");
    let saved = body["result"]["path"].as_str().unwrap();
    assert_eq!(std::fs::read(saved).unwrap(), bytes);
    writer.finish().await;
    other.finish().await;
}
