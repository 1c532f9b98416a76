//! Downloads as real SnowLuma 1.11.1 sends them (`stream-download.ts`), end to end over stdio
//! against the fake: a size of 0 in file_info means "unknown" (URL bodies without
//! Content-Length, cached media without a size) and file_complete's totals decide; URL bodies
//! arrive in chunks of any size; only `type: "response"` with `data_type: "file_complete"`
//! completes a download; and a chunk frame without `index`, or without string `data`, is
//! refused. Every refusal leaves no file behind.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/raw_client.rs"]
mod raw_client;
#[path = "support/stream_helpers.rs"]
mod stream_helpers;

use fake_snowluma::{FakeSnowLuma, Fault};
use serde_json::{Value, json};
use stream_helpers::{Dirs, invoke, pseudo_random, sha256, spawn};

/// Downloads `params` under `fault` and checks the call is refused with `kind`, a message
/// containing `needle`, and no file left in the download directory. Returns the body.
async fn assert_refused(
    server: &mut raw_client::RawServer,
    fake: &FakeSnowLuma,
    dirs: &Dirs,
    (id, params): (i64, Value),
    fault: Fault,
    (kind, needle): (&str, &str),
) -> Value {
    fake.set_fault(Some("download_file_stream"), fault.clone());
    let (response, body) = invoke(
        server,
        id,
        json!({ "action": "download_file_stream", "params": params }),
        None,
    )
    .await;
    assert_eq!(response["result"]["isError"], true, "{fault:?}: {body}");
    assert_eq!(body["diagnostics"]["kind"], kind, "{fault:?}: {body}");
    let message = body["diagnostics"]["message"].as_str().unwrap();
    assert!(message.contains(needle), "{fault:?}: {message}");
    assert!(dirs.downloaded().is_empty(), "{fault:?} left a file");
    body
}

/// A download's saved file, checked against the bytes the fake served.
fn assert_saved(body: &Value, bytes: &[u8], dirs: &Dirs) {
    assert_eq!(body["diagnostics"]["outcome"], "success", "{body}");
    let result = &body["result"];
    assert_eq!(result["size"], bytes.len(), "{body}");
    assert_eq!(result["sha256"], sha256(bytes), "{body}");
    let path = result["path"].as_str().unwrap();
    assert_eq!(std::fs::read(path).unwrap(), bytes);
    assert_eq!(dirs.downloaded().len(), 1, "{:?}", dirs.downloaded());
    std::fs::remove_file(path).unwrap();
}

#[tokio::test]
async fn downloads_of_unknown_size_succeed_with_exact_totals() {
    let dirs = Dirs::new("unknown-size");
    let fake = FakeSnowLuma::start(None).await;
    let mut server = spawn(&fake, &dirs, &[]);

    // A URL body without Content-Length: file_size 0, progress 0, chunks as the network gives.
    let url_bytes = pseudo_random(150_000, 7);
    let url = fake.add_url_file(
        "https://cdn.example.com/media/photo.jpg",
        url_bytes.clone(),
        false,
    );
    let (response, body) = invoke(
        &mut server,
        1,
        json!({ "action": "download_file_stream", "params": { "file": url } }),
        Some(json!({ "progressToken": "url" })),
    )
    .await;
    assert_eq!(response["result"]["isError"], false, "{body}");
    assert_saved(&body, &url_bytes, &dirs);
    assert_eq!(body["result"]["terminal"]["total_bytes"], 150_000);
    assert_eq!(body["result"]["original_name"], "photo.jpg");
    // The chunks were not chunk_size long: more of them than 150,000 / 65,536 would give.
    let chunks = body["result"]["chunks"].as_u64().unwrap();
    assert!(chunks > 3, "{body}");
    assert_eq!(body["result"]["terminal"]["total_chunks"], chunks);
    // With no size known, progress carries no total (the contract: unknown sizes omit it).
    let notes: Vec<Value> = server
        .backlog
        .drain(..)
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert!(!notes.is_empty());
    assert!(
        notes.iter().all(|n| n["params"].get("total").is_none()),
        "{notes:?}"
    );

    // A cached image whose cache entry has no size, through the image variant.
    let image_bytes = pseudo_random(70_001, 8);
    let image = fake.add_cached_image("ABCDEF0123.image", image_bytes.clone());
    let (_, body) = invoke(
        &mut server,
        2,
        json!({ "action": "download_file_image_stream", "params": { "file_id": image } }),
        None,
    )
    .await;
    assert_saved(&body, &image_bytes, &dirs);

    // A local file announced as 0 bytes, and an empty body of unknown size.
    fake.set_fault(Some("download_file_stream"), Fault::UnknownSize);
    let local_bytes = pseudo_random(100_000, 9);
    let local = fake.add_file("local.bin", local_bytes.clone());
    let (_, body) = invoke(
        &mut server,
        3,
        json!({ "action": "download_file_stream", "params": { "file": local, "chunk_size": 16384 } }),
        None,
    )
    .await;
    assert_saved(&body, &local_bytes, &dirs);
    let empty = fake.add_url_file("https://cdn.example.com/empty.txt", Vec::new(), false);
    let (_, body) = invoke(
        &mut server,
        4,
        json!({ "action": "download_file_stream", "params": { "file": empty } }),
        None,
    )
    .await;
    assert_saved(&body, &[], &dirs);
    server.finish().await;
}

#[tokio::test]
async fn totals_that_disagree_with_the_bytes_fail_whether_or_not_the_size_was_known() {
    let dirs = Dirs::new("totals");
    let fake = FakeSnowLuma::start(None).await;
    let mut server = spawn(&fake, &dirs, &[]);
    let sized = fake.add_url_file(
        "https://cdn.example.com/a.bin",
        pseudo_random(90_000, 1),
        true,
    );
    let sizeless = fake.add_url_file(
        "https://cdn.example.com/b.bin",
        pseudo_random(90_000, 2),
        false,
    );
    let cases = [
        (
            &sized,
            Fault::WrongTotalBytes,
            "announced 90001 bytes (file_complete)",
        ),
        (
            &sizeless,
            Fault::WrongTotalBytes,
            "announced 90001 bytes (file_complete)",
        ),
        (&sizeless, Fault::WrongTotalChunks, "chunks (file_complete)"),
        // A known size still has to match: the body ends early, file_complete is silent.
        (
            &sized,
            Fault::ShortFile,
            "announced 90000 bytes (file_info)",
        ),
        // No size anywhere: nothing to check the bytes against.
        (&sizeless, Fault::ShortFile, "no total_bytes"),
    ];
    for (i, (file, fault, needle)) in cases.into_iter().enumerate() {
        let kind = if needle == "no total_bytes" {
            "bad_frame"
        } else {
            "size_mismatch"
        };
        let call = (i as i64 + 1, json!({ "file": file }));
        assert_refused(&mut server, &fake, &dirs, call, fault, (kind, needle)).await;
    }
    server.finish().await;
}

#[tokio::test]
async fn only_the_file_complete_response_frame_completes_a_download() {
    let dirs = Dirs::new("terminal-type");
    let fake = FakeSnowLuma::start(None).await;
    let mut server = spawn(&fake, &dirs, &[]);
    let file = fake.add_file("t.bin", pseudo_random(40_000, 3));
    let cases = [
        (Fault::TerminalType(None), "no data.type"),
        (Fault::TerminalType(Some("done")), "data.type \"done\""),
        (Fault::TerminalType(Some("reset")), "data.type \"reset\""),
        (Fault::TerminalDataType(None), "data_type missing"),
        (
            Fault::TerminalDataType(Some("data_complete")),
            "data_type \"data_complete\"",
        ),
    ];
    for (i, (fault, needle)) in cases.into_iter().enumerate() {
        let call = (i as i64 + 1, json!({ "file": file, "chunk_size": 8192 }));
        assert_refused(
            &mut server,
            &fake,
            &dirs,
            call,
            fault,
            ("bad_frame", needle),
        )
        .await;
    }
    // A frame collection needs the terminal type too: test_download_stream's own end is
    // data_complete, but a terminal frame without a type is not an end.
    fake.set_fault(Some("test_download_stream"), Fault::TerminalType(None));
    let (response, body) = invoke(
        &mut server,
        10,
        json!({ "action": "test_download_stream", "params": {} }),
        None,
    )
    .await;
    assert_eq!(response["result"]["isError"], true, "{body}");
    assert_eq!(body["diagnostics"]["kind"], "bad_frame", "{body}");
    fake.clear_faults();
    let (_, body) = invoke(
        &mut server,
        11,
        json!({ "action": "test_download_stream", "params": {} }),
        None,
    )
    .await;
    assert_eq!(body["result"]["frame_count"], 11, "{body}");
    assert_eq!(
        body["result"]["terminal"]["data"]["data_type"],
        "data_complete"
    );
    server.finish().await;
}

#[tokio::test]
async fn chunk_frames_without_index_or_string_data_are_refused() {
    let dirs = Dirs::new("bad-chunks");
    let fake = FakeSnowLuma::start(None).await;
    let mut server = spawn(&fake, &dirs, &[]);
    let file = fake.add_file("c.bin", pseudo_random(40_000, 4));
    let cases = [
        (Fault::ChunkWithout("data"), "file chunk 1 has no data"),
        (Fault::ChunkWithout("index"), "file chunk 1 has no index"),
        (
            Fault::ChunkDataNotString,
            "data is a number, not a base64 string",
        ),
    ];
    for (i, (fault, needle)) in cases.into_iter().enumerate() {
        let call = (i as i64 + 1, json!({ "file": file, "chunk_size": 8192 }));
        let body = assert_refused(
            &mut server,
            &fake,
            &dirs,
            call,
            fault,
            ("bad_frame", needle),
        )
        .await;
        assert_eq!(body["diagnostics"]["removed_partial_file"], true, "{body}");
    }
    server.finish().await;
}
