//! Exact completion of streams, end to end against the fake SnowLuma: only the terminal frame
//! completes a download or frame stream, chunk indexes are continuous, the bytes written equal
//! the announced size, the frame-size cap holds, idle timeouts are classified by whether the
//! action writes, and file work runs off the single runtime thread.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/raw_client.rs"]
mod raw_client;
#[path = "support/stream_helpers.rs"]
mod stream_helpers;

use fake_snowluma::{FakeSnowLuma, Fault};
use raw_client::{modern_meta, structured, wait_until};
use serde_json::json;
use stream_helpers::{Dirs, invoke, pseudo_random, spawn};

#[tokio::test]
async fn a_download_fails_on_duplicate_missing_corrupt_or_short_chunks_and_keeps_nothing() {
    let dirs = Dirs::new("exact");
    let fake = FakeSnowLuma::start(None).await;
    let mut server = spawn(&fake, &dirs, &[]);
    let cases = [
        (
            Fault::DuplicateChunk,
            "bad_frame",
            "chunk 1 arrived where chunk 2 was due",
        ),
        (
            Fault::MissingChunk,
            "bad_frame",
            "chunk 2 arrived where chunk 1 was due",
        ),
        // The terminal frame is ok and carries no total: only file_info's size tells.
        (
            Fault::ShortFile,
            "size_mismatch",
            "announced 100000 bytes (file_info)",
        ),
        (
            Fault::NoTerminal,
            "stream_incomplete",
            "without a terminal frame",
        ),
        (Fault::OversizedFrame, "bad_frame", "exceeded 24 MiB"),
        // Found by the writing thread while later frames are read.
        (Fault::CorruptChunk, "bad_frame", "not valid base64"),
    ];
    for (i, (fault, kind, needle)) in cases.into_iter().enumerate() {
        fake.set_fault(Some("download_file_stream"), fault.clone());
        let file = fake.add_file(&format!("f{i}.bin"), pseudo_random(100_000, i as u8));
        let (response, body) = invoke(
            &mut server,
            i as i64 + 1,
            json!({ "action": "download_file_stream", "params": { "file": file, "chunk_size": 16384 } }),
            None,
        )
        .await;
        assert_eq!(response["result"]["isError"], true, "{fault:?}: {body}");
        assert_eq!(body["diagnostics"]["kind"], kind, "{fault:?}: {body}");
        let message = body["diagnostics"]["message"].as_str().unwrap();
        assert!(message.contains(needle), "{fault:?}: {message}");
        assert!(
            dirs.downloaded().is_empty(),
            "{fault:?} left a file: {:?}",
            dirs.downloaded()
        );
    }
    server.finish().await;
}

#[tokio::test]
async fn a_frame_stream_needs_its_terminal_frame_but_an_upload_chunk_call_does_not() {
    let dirs = Dirs::new("terminal");
    let fake = FakeSnowLuma::start(None).await;
    let mut server = spawn(&fake, &dirs, &[]);
    fake.set_fault(Some("test_download_stream"), Fault::NoTerminal);
    let (response, body) = invoke(
        &mut server,
        1,
        json!({ "action": "test_download_stream", "params": {} }),
        None,
    )
    .await;
    assert_eq!(response["result"]["isError"], true, "{body}");
    assert_eq!(body["diagnostics"]["kind"], "stream_incomplete", "{body}");
    // The protocol answers a hand-written chunk call with one frame and a clean end.
    let (response, body) = invoke(
        &mut server,
        2,
        json!({ "action": "upload_file_stream", "params": {
            "stream_id": "hand1", "chunk_data": "aGVsbG8=", "chunk_index": 0, "total_chunks": 2
        } }),
        None,
    )
    .await;
    assert_eq!(response["result"]["isError"], false, "{body}");
    assert_eq!(
        body["result"]["terminal"]["data"]["status"], "chunk_received",
        "{body}"
    );
    server.finish().await;
}

#[tokio::test]
async fn an_idle_upload_is_unknown_but_an_idle_download_claims_nothing() {
    let dirs = Dirs::new("idle");
    let fake = FakeSnowLuma::start(None).await;
    std::fs::write(dirs.uploads.join("a.bin"), pseudo_random(1000, 1)).unwrap();
    let file = fake.add_file("d.bin", pseudo_random(100_000, 2));
    let mut server = spawn(&fake, &dirs, &[("SNOWLUMA_MCP_STREAM_IDLE_MS", "300")]);
    fake.set_fault(None, Fault::StallBody);
    let (_, upload) = invoke(
        &mut server,
        1,
        json!({ "action": "upload_file_stream", "execution": { "input_file": "a.bin" } }),
        None,
    )
    .await;
    assert_eq!(
        upload["diagnostics"]["kind"], "stream_idle_timeout",
        "{upload}"
    );
    assert_eq!(upload["diagnostics"]["outcome"], "unknown", "{upload}");
    let (_, download) = invoke(
        &mut server,
        2,
        json!({ "action": "download_file_stream", "params": { "file": file } }),
        None,
    )
    .await;
    assert_eq!(
        download["diagnostics"]["kind"], "stream_idle_timeout",
        "{download}"
    );
    assert_ne!(download["diagnostics"]["outcome"], "unknown", "{download}");
    let text = download["diagnostics"].to_string();
    assert!(!text.contains("may already"), "{text}");
    server.finish().await;
}

#[tokio::test]
async fn a_call_is_answered_while_a_slow_disk_write_is_in_progress() {
    let dirs = Dirs::new("slow-disk");
    let fake = FakeSnowLuma::start(None).await;
    let file = fake.add_file("slow.bin", pseudo_random(48_000, 3));
    // Test-only seam: each download write sleeps 1.5 s on the blocking pool.
    let mut server = spawn(
        &fake,
        &dirs,
        &[("SNOWLUMA_MCP_TEST_WRITE_DELAY_MS", "1500")],
    );
    server
        .send(&json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "invoke_action", "_meta": modern_meta(json!({})),
            "arguments": { "action": "download_file_stream", "params": { "file": file, "chunk_size": 16384 } }
        } }))
        .await;
    let downloads = dirs.downloads.clone();
    let part_exists = move || {
        std::fs::read_dir(&downloads)
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().ends_with(".part"))
    };
    wait_until(raw_client::WAIT, part_exists.clone()).await;
    assert!(part_exists(), "the download started writing");
    let ping = server
        .request(2, "tools/list", json!({ "_meta": modern_meta(json!({})) }))
        .await;
    assert!(ping.get("result").is_some(), "{ping}");
    assert!(
        part_exists()
            && dirs
                .downloaded()
                .iter()
                .all(|p| p.to_string_lossy().ends_with(".part")),
        "ping was answered while the slow write was still in progress"
    );
    assert!(
        !server.backlog.iter().any(|m| m["id"] == 1),
        "the download had not finished yet"
    );
    let done = server.wait_for_id(&json!(1)).await;
    assert_eq!(
        structured(&done)["diagnostics"]["outcome"],
        "success",
        "{done}"
    );
    server.finish().await;
}
