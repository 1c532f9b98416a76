//! Stream actions end to end, beyond one file's transfer: the built binary over stdio against
//! the fake SnowLuma. Generic frame collections (and hand-written chunk calls passing
//! through), progress notifications (throttled, increasing, only with a token), and the
//! stream limit answering busy while runtime info reports the stream settings.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/raw_client.rs"]
mod raw_client;
#[path = "support/stream_helpers.rs"]
mod stream_helpers;

use std::path::Path;
use std::time::Instant;

use serde_json::{Value, json};

use fake_snowluma::{FakeSnowLuma, Fault};
use raw_client::{modern_meta, structured, wait_until};
use stream_helpers::{Dirs, invoke, pseudo_random, spawn};

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
    wait_until(raw_client::WAIT, || !fake.requests().is_empty()).await;
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
