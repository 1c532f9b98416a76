//! Automatic uploads end to end: the built binary over stdio against the fake SnowLuma's
//! stream protocol. Chunks, sha256 and completion; containment inside the upload root; a
//! refused upload reported like any failed stream; a cancelled upload is reset.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/raw_client.rs"]
mod raw_client;
#[path = "support/stream_helpers.rs"]
mod stream_helpers;

use std::time::Duration;

use serde_json::json;

use fake_snowluma::{FakeSnowLuma, Fault};
use raw_client::{RawServer, modern_meta, wait_until};
use stream_helpers::{Dirs, invoke, pseudo_random, sha256, spawn};

#[tokio::test]
async fn an_upload_refused_by_snowluma_is_reported_like_any_failed_stream() {
    let dirs = Dirs::new("upload-refused");
    let fake = FakeSnowLuma::start(None).await;
    std::fs::write(dirs.uploads.join("a.bin"), pseudo_random(10_000, 9)).unwrap();
    fake.set_fault(Some("upload_file_stream"), Fault::ErrorFrame);
    let mut server = spawn(&fake, &dirs, &[]);
    let input = dirs.uploads.join("a.bin").to_string_lossy().to_string();
    let (response, body) = invoke(
        &mut server,
        1,
        json!({ "action": "upload_file_stream", "execution": { "input_file": input } }),
        None,
    )
    .await;
    assert_eq!(response["result"]["isError"], false, "{body}");
    assert_eq!(body["diagnostics"]["outcome"], "failed");
    assert_eq!(body["diagnostics"]["kind"], "stream_failed");
    assert_eq!(
        body["result"]["status"], "failed",
        "the error frame is the result"
    );
    assert_eq!(body["result"]["retcode"], 100);
    assert_eq!(
        body["diagnostics"]["reset"]["sent"], true,
        "the partial upload is reset"
    );
    let calls = fake.requests_for("upload_file_stream");
    assert_eq!(
        calls.last().unwrap().json().unwrap()["params"]["reset"],
        true,
        "the last call is the reset"
    );
    server.finish().await;
}

#[tokio::test]
async fn automatic_upload_sends_chunks_sha256_and_completion() {
    let dirs = Dirs::new("upload");
    let fake = FakeSnowLuma::start(None).await;
    let content = pseudo_random(2 * 1024 * 1024 + 12345, 5);
    std::fs::write(dirs.uploads.join("hello.bin"), &content).unwrap();
    let mut server = spawn(&fake, &dirs, &[]);
    let input = dirs.uploads.join("hello.bin").to_string_lossy().to_string();
    let (response, body) = invoke(
        &mut server,
        1,
        json!({ "action": "upload_file_stream", "params": { "file_retention": 0 }, "execution": { "input_file": input } }),
        None,
    )
    .await;
    assert_eq!(body["diagnostics"]["outcome"], "success", "{body}");
    let data = &body["result"];
    assert_eq!(data["status"], "file_complete");
    assert_eq!(data["sha256"], sha256(&content));
    assert_eq!(data["file_size"], content.len());
    assert!(data["file_path"].as_str().unwrap().ends_with("__hello.bin"));
    let stream_id = body["diagnostics"]["stream_id"].as_str().unwrap();
    let state = fake.uploaded(stream_id).expect("the fake saw the upload");
    assert_eq!(state.bytes.as_deref(), Some(content.as_slice()));
    assert_eq!(
        state.expected_sha256.as_deref(),
        Some(sha256(&content).as_str())
    );
    let calls = fake.requests_for("upload_file_stream");
    assert_eq!(calls.len(), 4, "3 chunks and the completion call");
    let traceparent = response["result"]["_meta"]["traceparent"].as_str().unwrap();
    for call in &calls {
        assert!(
            call.body.len() < 1_500_000,
            "a chunk call of {} bytes is too close to 2 MiB",
            call.body.len()
        );
        assert_eq!(call.header("traceparent"), Some(traceparent));
        let params = &call.json().unwrap()["params"];
        assert!(
            params.get("execution").is_none() && call.json().unwrap().get("execution").is_none()
        );
        assert_eq!(
            params["file_retention"], 0,
            "the caller's params ride along"
        );
    }
    server.finish().await;
}

#[tokio::test]
async fn upload_paths_must_stay_inside_the_upload_root() {
    let dirs = Dirs::new("containment");
    let fake = FakeSnowLuma::start(None).await;
    std::fs::write(dirs.root.join("outside.txt"), b"secret").unwrap();
    std::os::unix::fs::symlink(dirs.root.join("outside.txt"), dirs.uploads.join("link.txt"))
        .unwrap();
    std::fs::create_dir(dirs.uploads.join("folder")).unwrap();
    let mut server = spawn(&fake, &dirs, &[]);
    let uploads = dirs.uploads.to_string_lossy().to_string();
    std::fs::create_dir(dirs.root.join("secret-dir")).unwrap();
    std::fs::write(dirs.root.join("secret-dir/secret.txt"), b"secret").unwrap();
    std::os::unix::fs::symlink(dirs.root.join("secret-dir"), dirs.uploads.join("sub")).unwrap();
    std::fs::write(dirs.uploads.join("inside.txt"), b"inside").unwrap();
    std::os::unix::fs::symlink(
        dirs.uploads.join("inside.txt"),
        dirs.uploads.join("inner-link.txt"),
    )
    .unwrap();
    let fifo = dirs.uploads.join("pipe");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    // Outside (lexically or through a symlink), missing, a directory, a FIFO, a symlink that
    // stays inside: all get the same refusal, so the answer is no existence oracle.
    let cases = [
        format!("{uploads}/../outside.txt"),
        format!("{uploads}/link.txt"),
        "sub/secret.txt".to_string(),
        "inner-link.txt".to_string(),
        dirs.root.join("outside.txt").to_string_lossy().to_string(),
        format!("{uploads}/folder"),
        format!("{uploads}/missing.txt"),
        "pipe".to_string(),
    ];
    let mut messages = Vec::new();
    for (i, path) in cases.iter().enumerate() {
        let (response, body) = invoke(
            &mut server,
            i as i64 + 1,
            json!({ "action": "upload_file_stream", "execution": { "input_file": path } }),
            None,
        )
        .await;
        assert_eq!(response["result"]["isError"], true, "{path}");
        assert_eq!(body["diagnostics"]["kind"], "input_file", "{path}: {body}");
        let message = body["diagnostics"]["message"].as_str().unwrap().to_string();
        assert!(
            message.contains("not a readable regular file inside SNOWLUMA_MCP_UPLOAD_ROOT"),
            "{path}: {body}"
        );
        messages.push(message);
    }
    messages.dedup();
    assert_eq!(
        messages.len(),
        1,
        "one refusal text for every case: {messages:?}"
    );
    let (_, body) = invoke(
        &mut server,
        9,
        json!({ "action": "upload_file_stream", "params": { "stream_id": "x" }, "execution": { "input_file": "a.txt" } }),
        None,
    )
    .await;
    assert!(
        body["diagnostics"]["message"]
            .as_str()
            .unwrap()
            .contains("stream_id")
    );
    let (_, body) = invoke(
        &mut server,
        10,
        json!({ "action": "send_msg", "execution": { "input_file": "a.txt" } }),
        None,
    )
    .await;
    assert!(
        body["diagnostics"]["message"]
            .as_str()
            .unwrap()
            .contains("upload_file_stream")
    );
    assert!(
        fake.requests().is_empty(),
        "nothing is sent for a refused path"
    );
    server.finish().await;

    let downloads = dirs.downloads.to_string_lossy().to_string();
    let mut no_root = RawServer::spawn(&[
        ("SNOWLUMA_MCP_MODE", "write"),
        ("SNOWLUMA_MCP_ENDPOINT", fake.url.as_str()),
        ("SNOWLUMA_MCP_DOWNLOAD_DIR", downloads.as_str()),
    ]);
    let (_, body) = invoke(
        &mut no_root,
        1,
        json!({ "action": "upload_file_stream", "execution": { "input_file": "/tmp/x" } }),
        None,
    )
    .await;
    assert_eq!(body["diagnostics"]["kind"], "upload_disabled");
    no_root.finish().await;
}

#[tokio::test]
async fn a_cancelled_upload_is_reset() {
    let dirs = Dirs::new("reset");
    let fake = FakeSnowLuma::start(None).await;
    std::fs::write(
        dirs.uploads.join("big.bin"),
        pseudo_random(3 * 1024 * 1024, 1),
    )
    .unwrap();
    fake.set_fault(
        Some("upload_file_stream"),
        Fault::Slow(Duration::from_millis(300)),
    );
    let mut server = spawn(&fake, &dirs, &[]);
    server
        .send(&json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "invoke_action", "arguments": { "action": "upload_file_stream", "execution": { "input_file": "big.bin" } },
            "_meta": modern_meta(json!({})) } }))
        .await;
    wait_until(raw_client::WAIT, || {
        fake.requests_for("upload_file_stream").len() >= 2
    })
    .await;
    server.send(&json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 3 } })).await;
    let resets = || {
        fake.requests_for("upload_file_stream")
            .into_iter()
            .filter(|r| r.json().unwrap()["params"]["reset"] == true)
            .collect::<Vec<_>>()
    };
    wait_until(raw_client::WAIT, || !resets().is_empty()).await;
    let reset = resets()
        .pop()
        .expect("a reset was sent after the cancellation");
    let first = &fake.requests_for("upload_file_stream")[0];
    assert_eq!(
        reset.json().unwrap()["params"]["stream_id"],
        first.json().unwrap()["params"]["stream_id"]
    );
    assert_eq!(
        reset.header("traceparent"),
        first.header("traceparent"),
        "the reset carries the call's trace"
    );
    server.finish().await;
}
