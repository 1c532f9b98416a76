//! Stream actions end to end: the built binary over stdio against the fake SnowLuma's stream
//! protocol. Downloads to the MCP host (names, limits, quota, cleanup), automatic uploads
//! (containment, chunking, sha256, reset), generic frame collections, progress, cancellation,
//! idle timeouts, the stream limit and trace headers.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/raw_client.rs"]
mod raw_client;

#[path = "support/stream_helpers.rs"]
mod stream_helpers;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fake_snowluma::{FakeSnowLuma, Fault};
use raw_client::{RawServer, modern_meta, structured, wait_until};
use serde_json::{Value, json};
use stream_helpers::{Dirs, invoke, pseudo_random, sha256, spawn};

#[tokio::test]
async fn a_download_is_saved_under_a_safe_name_with_its_checksum() {
    let dirs = Dirs::new("download");
    let fake = FakeSnowLuma::start(None).await;
    let content = pseudo_random(300_000, 7);
    let file = fake.add_file("../../etc/evil name.txt", content.clone());
    let mut server = spawn(&fake, &dirs, &[]);
    let (response, body) =
        invoke(&mut server, 1, json!({ "action": "download_file_stream", "params": { "file": file, "chunk_size": 65536 } }), None).await;
    assert_eq!(response["result"]["isError"], false, "{body}");
    assert_eq!(body["diagnostics"]["outcome"], "success");
    let saved = &body["result"];
    let path = PathBuf::from(saved["path"].as_str().unwrap());
    assert_eq!(
        path.parent().unwrap(),
        dirs.downloads.as_path(),
        "saved inside the download dir"
    );
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    assert!(
        name.starts_with("evilname-") && name.ends_with(".txt"),
        "{name}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), content);
    assert_eq!(saved["size"], 300_000);
    assert_eq!(saved["sha256"], sha256(&content));
    assert_eq!(saved["original_name"].as_str().unwrap(), "evil name.txt");
    assert_eq!(saved["chunks"], 5);
    assert_eq!(saved["frames"], 7, "file_info + 5 chunks + file_complete");
    // A second download of the same file never overwrites the first.
    let (_, again) = invoke(
        &mut server,
        2,
        json!({ "action": "download_file_stream", "params": { "file": file } }),
        None,
    )
    .await;
    assert_ne!(again["result"]["path"], saved["path"]);
    assert_eq!(dirs.downloaded().len(), 2);
    let recorded = fake.requests_for("download_file_stream");
    assert!(recorded.iter().all(|r| r.header("traceparent").is_some()));
    server.finish().await;
}

#[tokio::test]
async fn limits_and_failures_leave_no_partial_file() {
    let dirs = Dirs::new("limits");
    let fake = FakeSnowLuma::start(None).await;
    let file = fake.add_file("big.bin", pseudo_random(500_000, 3));
    let mut server = spawn(&fake, &dirs, &[("SNOWLUMA_MCP_MAX_FILE_BYTES", "100000")]);
    let (response, body) = invoke(
        &mut server,
        1,
        json!({ "action": "download_file_stream", "params": { "file": file } }),
        None,
    )
    .await;
    assert_eq!(response["result"]["isError"], true);
    assert_eq!(body["diagnostics"]["kind"], "file_too_large");
    assert!(
        body["diagnostics"]["message"]
            .as_str()
            .unwrap()
            .contains("SNOWLUMA_MCP_MAX_FILE_BYTES")
    );
    assert!(dirs.downloaded().is_empty());
    server.finish().await;

    std::fs::write(dirs.downloads.join("existing.bin"), vec![0u8; 400_000]).unwrap();
    let mut server = spawn(&fake, &dirs, &[("SNOWLUMA_MCP_DIR_QUOTA_BYTES", "600000")]);
    let (_, body) = invoke(
        &mut server,
        1,
        json!({ "action": "download_file_stream", "params": { "file": file } }),
        None,
    )
    .await;
    assert_eq!(body["diagnostics"]["kind"], "quota_exceeded");
    assert_eq!(
        dirs.downloaded().len(),
        1,
        "only the file that was already there"
    );

    for (i, (fault, kind)) in [
        (Fault::ErrorFrame, "stream_failed"),
        (
            Fault::DisconnectMidStream { after_frames: 3 },
            "connection_broken",
        ),
        (Fault::OversizedFrame, "bad_frame"),
    ]
    .into_iter()
    .enumerate()
    {
        fake.set_fault(Some("download_file_stream"), fault.clone());
        let small = fake.add_file(&format!("small{i}.bin"), pseudo_random(150_000, i as u8));
        let (response, body) =
            invoke(&mut server, 10 + i as i64, json!({ "action": "download_file_stream", "params": { "file": small, "chunk_size": 16384 } }), None).await;
        assert_eq!(body["diagnostics"]["kind"], kind, "{fault:?}: {body}");
        assert_ne!(body["diagnostics"]["outcome"], "success");
        assert_eq!(dirs.downloaded().len(), 1, "{fault:?} left a partial file");
        assert_eq!(body["diagnostics"]["removed_partial_file"], true, "{body}");
        if kind == "stream_failed" {
            // SnowLuma's error frame is data: the frame is the result, not a tool error.
            assert_eq!(response["result"]["isError"], false, "{body}");
            assert_eq!(body["result"]["retcode"], 100, "{body}");
        } else {
            assert_eq!(response["result"]["isError"], true, "{body}");
            assert_eq!(body["result"], Value::Null);
        }
    }
    server.finish().await;
}

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
async fn cancellation_and_idle_timeouts_stop_the_transfer_and_clean_up() {
    let dirs = Dirs::new("cancel");
    let fake = FakeSnowLuma::start(None).await;
    let file = fake.add_file("slow.bin", pseudo_random(400_000, 9));
    fake.set_fault(Some("download_file_stream"), Fault::StallBody);
    let mut server = spawn(&fake, &dirs, &[("SNOWLUMA_MCP_STREAM_IDLE_MS", "400")]);
    // The stalled body never ends: only the idle timeout can answer this call.
    let (_, body) = invoke(
        &mut server,
        1,
        json!({ "action": "download_file_stream", "params": { "file": file } }),
        None,
    )
    .await;
    assert_eq!(body["diagnostics"]["kind"], "stream_idle_timeout", "{body}");
    assert!(dirs.downloaded().is_empty());
    server.finish().await;

    let mut server = spawn(&fake, &dirs, &[]);
    server
        .send(&json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
            "name": "invoke_action", "arguments": { "action": "download_file_stream", "params": { "file": file } },
            "_meta": modern_meta(json!({})) } }))
        .await;
    wait_until(Duration::from_secs(5), || !dirs.downloaded().is_empty()).await;
    assert_eq!(dirs.downloaded().len(), 1, "the transfer started writing");
    server.send(&json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 5 } })).await;
    wait_until(Duration::from_secs(5), || dirs.downloaded().is_empty()).await;
    assert!(
        dirs.downloaded().is_empty(),
        "cancellation removed the partial file"
    );
    let (_, stderr) = server.finish().await;
    assert!(stderr.contains("failure=\"cancelled\""), "{stderr}");
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
    wait_until(Duration::from_secs(5), || {
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
    wait_until(Duration::from_secs(8), || !resets().is_empty()).await;
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

#[tokio::test]
async fn frame_streams_are_collected_and_hand_written_chunks_pass_through() {
    let dirs = Dirs::new("frames");
    let fake = FakeSnowLuma::start(None).await;
    let mut server = spawn(&fake, &dirs, &[]);
    let (_, body) = invoke(
        &mut server,
        1,
        json!({ "action": "test_download_stream" }),
        None,
    )
    .await;
    assert_eq!(body["diagnostics"]["outcome"], "success");
    assert_eq!(body["result"]["frame_count"], 11);
    assert_eq!(body["result"]["frames"][0]["data"], "Index-> 1");
    assert_eq!(
        body["result"]["terminal"]["data"]["data_type"],
        "data_complete"
    );
    assert_eq!(body["result"]["truncated"], false);

    let (response, body) = invoke(
        &mut server,
        2,
        json!({ "action": "test_download_stream", "params": { "error": true } }),
        None,
    )
    .await;
    assert_eq!(
        response["result"]["isError"], false,
        "an error frame is a business failure"
    );
    // One rule for every stream: SnowLuma's error frame is the result, like a failed envelope.
    assert_eq!(body["diagnostics"]["outcome"], "failed");
    assert_eq!(body["diagnostics"]["kind"], "stream_failed");
    assert_eq!(body["result"]["status"], "failed");
    assert_eq!(body["result"]["retcode"], 100);
    assert_eq!(body["result"]["data"]["type"], "error");
    assert_eq!(body["diagnostics"]["frames_received"], 10);

    let chunk = json!({ "stream_id": "manual-1", "chunk_data": "aGVsbG8=", "chunk_index": 0, "total_chunks": 1 });
    let (_, body) = invoke(
        &mut server,
        3,
        json!({ "action": "upload_file_stream", "params": chunk }),
        None,
    )
    .await;
    assert_eq!(body["result"]["frame_count"], 1, "{body}");
    assert_eq!(
        body["result"]["terminal"]["data"]["status"],
        "chunk_received"
    );
    assert_eq!(
        fake.requests().last().unwrap().json().unwrap()["params"],
        chunk,
        "forwarded as given"
    );
    server.finish().await;
}

#[tokio::test]
async fn progress_is_throttled_increasing_and_only_with_a_token() {
    let dirs = Dirs::new("progress");
    let fake = FakeSnowLuma::start(None).await;
    let size: u64 = 16 * 1024 * 1024;
    let file = fake.add_generated_file("large.bin", size, 4);
    let mut server = spawn(&fake, &dirs, &[]);
    let began = Instant::now();
    let (response, body) = invoke(
        &mut server,
        1,
        json!({ "action": "download_file_stream", "params": { "file": file, "chunk_size": 16384 } }),
        Some(json!({ "progressToken": "dl-1" })),
    )
    .await;
    let elapsed = began.elapsed();
    assert_eq!(body["result"]["size"], size, "{body}");
    assert_eq!(
        body["result"]["sha256"],
        fake_snowluma::generated_sha256(size, 4)
    );
    let notes: Vec<Value> = server
        .backlog
        .drain(..)
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert!(!notes.is_empty());
    let values: Vec<f64> = notes
        .iter()
        .map(|n| n["params"]["progress"].as_f64().unwrap())
        .collect();
    assert!(
        values.windows(2).all(|w| w[0] < w[1]),
        "strictly increasing: {values:?}"
    );
    assert_eq!(
        *values.last().unwrap(),
        size as f64,
        "the final value is flushed before the response"
    );
    assert!(notes.iter().all(|n| n["params"]["progressToken"] == "dl-1"
        && n["params"]["total"].as_f64() == Some(size as f64)));
    let allowed = (elapsed.as_millis() / 250) as usize + 2;
    assert!(
        notes.len() <= allowed,
        "{} notifications in {elapsed:?}",
        notes.len()
    );
    assert!(
        response["result"]["structuredContent"]["diagnostics"]
            .get("progress_delivery")
            .is_none()
    );
    std::fs::remove_file(body["result"]["path"].as_str().unwrap()).unwrap();

    let (_, _) = invoke(
        &mut server,
        2,
        json!({ "action": "test_download_stream" }),
        None,
    )
    .await;
    assert!(
        server
            .backlog
            .iter()
            .all(|m| m["method"] != "notifications/progress"),
        "no token, no progress"
    );
    server.finish().await;
}

#[tokio::test]
async fn the_stream_limit_answers_busy_and_runtime_info_reports_stream_settings() {
    let dirs = Dirs::new("busy");
    let fake = FakeSnowLuma::start(None).await;
    let file = fake.add_file("stall.bin", pseudo_random(200_000, 2));
    fake.set_fault(Some("download_file_stream"), Fault::StallBody);
    let mut server = spawn(&fake, &dirs, &[("SNOWLUMA_MCP_MAX_STREAMS", "1")]);
    server
        .send(&json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "invoke_action", "arguments": { "action": "download_file_stream", "params": { "file": file } },
            "_meta": modern_meta(json!({})) } }))
        .await;
    wait_until(Duration::from_secs(5), || !fake.requests().is_empty()).await;
    let (response, body) = invoke(
        &mut server,
        2,
        json!({ "action": "test_download_stream" }),
        None,
    )
    .await;
    assert_eq!(response["result"]["isError"], true);
    assert_eq!(body["diagnostics"]["kind"], "busy");
    server.send(&json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 1 } })).await;

    let response = server
        .request(
            3,
            "tools/call",
            json!({ "name": "get_runtime_info", "arguments": {}, "_meta": modern_meta(json!({})) }),
        )
        .await;
    let info = structured(&response)["result"].clone();
    assert_eq!(
        info["download_dir"],
        dirs.downloads.to_string_lossy().as_ref()
    );
    assert_eq!(info["upload_root"], dirs.uploads.to_string_lossy().as_ref());
    assert_eq!(info["upload_enabled"], true);
    assert_eq!(info["max_streams"], 1);
    assert!(
        info["max_file_bytes"].as_u64().unwrap() > 0
            && info["dir_quota_bytes"].as_u64().unwrap() > 0
    );
    server.finish().await;
    assert!(Path::new(&dirs.downloads).exists());
}
