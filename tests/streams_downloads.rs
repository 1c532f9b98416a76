//! Downloads end to end: the built binary over stdio against the fake SnowLuma's stream
//! protocol. A download is saved under a safe name with its checksum, limits and failures
//! leave no partial file, and cancellation and idle timeouts stop the transfer and clean up.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/raw_client.rs"]
mod raw_client;
#[path = "support/stream_helpers.rs"]
mod stream_helpers;

use std::path::PathBuf;

use serde_json::{Value, json};

use fake_snowluma::{FakeSnowLuma, Fault};
use raw_client::{modern_meta, wait_until};
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
    wait_until(raw_client::WAIT, || !dirs.downloaded().is_empty()).await;
    assert_eq!(dirs.downloaded().len(), 1, "the transfer started writing");
    server.send(&json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 5 } })).await;
    wait_until(raw_client::WAIT, || dirs.downloaded().is_empty()).await;
    assert!(
        dirs.downloaded().is_empty(),
        "cancellation removed the partial file"
    );
    let (_, stderr) = server.finish().await;
    assert!(stderr.contains("failure=\"cancelled\""), "{stderr}");
}
