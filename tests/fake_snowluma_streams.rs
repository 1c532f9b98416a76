//! The fake SnowLuma's stream protocol, driven with plain reqwest: download frames, the
//! generated incremental download, the upload flow with sha256 and reset, and downloads
//! ended with and without an error frame.

#[path = "support/fake_client.rs"]
mod fake_client;
#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use reqwest::StatusCode;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use fake_client::*;
use fake_snowluma::FakeSnowLuma;

/// The single frame of an upload call.
async fn upload(fake: &FakeSnowLuma, params: Value) -> Value {
    let mut frames = stream(fake, "upload_file_stream", params).await;
    assert_eq!(frames.len(), 1, "one frame per upload call");
    frames.remove(0)
}

fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn sample_bytes(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

#[tokio::test]
async fn download_frames_round_trip() {
    bounded(async {
        let fake = FakeSnowLuma::start(None).await;
        let data = sample_bytes(200_000);
        let file = fake.add_file("hello.bin", data.clone());
        assert_eq!(file, "/tmp/snowluma-stream/download/hello.bin");

        let resp = client()
            .post(&fake.url)
            .json(&json!({"action": "download_file_stream", "params": {"file": file, "chunk_size": 65536}, "echo": "d1"}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        assert!(resp.headers().get("content-type").is_none());
        assert_eq!(resp.headers()["transfer-encoding"], "chunked");
        let frames = split_frames(&resp.bytes().await.unwrap());
        assert_eq!(frames.len(), 6, "file_info + 4 chunks + terminal");
        for f in &frames {
            assert_stream_marked(f);
            assert_eq!((f["status"].as_str(), f["retcode"].as_i64()), (Some("ok"), Some(0)));
            assert_eq!((f["message"].as_str(), f["wording"].as_str()), (Some(""), Some("")));
            assert_eq!(f["echo"], "d1");
            assert_valid("download_file_stream", &f["data"]);
        }
        assert_eq!(
            frames[0]["data"],
            json!({"type": "stream", "data_type": "file_info", "file_name": "hello.bin", "file_size": 200000, "chunk_size": 65536})
        );
        let mut joined = Vec::new();
        for (i, f) in frames[1..5].iter().enumerate() {
            let d = &f["data"];
            assert_eq!((d["type"].as_str(), d["data_type"].as_str(), d["index"].as_u64()), (Some("stream"), Some("file_chunk"), Some(i as u64)));
            let b64 = d["data"].as_str().unwrap();
            assert_eq!(d["base64_size"].as_u64(), Some(b64.len() as u64));
            let chunk = STANDARD.decode(b64).unwrap();
            assert_eq!(d["size"].as_u64(), Some(chunk.len() as u64));
            joined.extend_from_slice(&chunk);
        }
        let progress: Vec<u64> = frames[1..5].iter().map(|f| f["data"]["progress"].as_u64().unwrap()).collect();
        assert_eq!(progress, [33, 66, 98, 100]);
        assert_eq!(joined, data);
        assert_eq!(
            frames[5]["data"],
            json!({"type": "response", "data_type": "file_complete", "file_name": "hello.bin", "total_chunks": 4, "total_bytes": 200000, "message": "Download completed"})
        );

        // file_id (a bare name acts as a cached id), the image/record variants.
        for action in ["download_file_stream", "download_file_image_stream", "download_file_record_stream"] {
            let frames = stream(&fake, action, json!({"file": "", "file_id": "hello.bin", "chunk_size": 150000})).await;
            assert_eq!(frames.len(), 4, "{action}");
            assert_eq!(frames[3]["data"]["total_bytes"], 200000);
        }
        // Requested chunk sizes are capped at 16 MiB.
        let frames = stream(&fake, "download_file_stream", json!({"file": "hello.bin", "chunk_size": 1u64 << 30})).await;
        assert_eq!(frames[0]["data"]["chunk_size"], 16 * 1024 * 1024);
        assert_eq!(frames.len(), 3);
        // An empty file has no chunk frames.
        fake.add_file("empty.txt", Vec::new());
        let frames = stream(&fake, "download_file_stream", json!({"file": "empty.txt"})).await;
        assert_eq!(frames.len(), 2);
        assert_eq!(frames[1]["data"]["total_chunks"], 0);

        // Failures are one error frame, still HTTP 200.
        let frames = stream(&fake, "download_file_stream", json!({"file": "/tmp/nope.bin"})).await;
        assert_eq!(frames.len(), 1);
        assert_error_frame(&frames[0], 100, "file not found");
        let frames = stream(&fake, "download_file_stream", json!({})).await;
        assert_error_frame(&frames[0], 100, "file is required");
        let frames = stream(&fake, "download_file_stream", json!({"file": "http://127.0.0.1:1/x"})).await;
        assert_error_frame(&frames[0], 100, "refusing to fetch a private/loopback address");
        let frames = stream(&fake, "download_file_stream", json!({"file": "hello.bin", "chunk_size": 0})).await;
        assert_error_frame(&frames[0], 1400, "chunk_size: must be >= 1");
    })
    .await;
}

#[tokio::test]
async fn generated_download_streams_incrementally() {
    bounded(async {
        let fake = FakeSnowLuma::start(None).await;
        let size = 16 * 1024 * 1024u64;
        let file = fake.add_generated_file("big.bin", size, 7);
        let mut resp = client()
            .post(&fake.url)
            .json(&json!({"action": "download_file_stream", "params": {"file": file, "chunk_size": 1 << 20}}))
            .send()
            .await
            .unwrap();
        let (mut pending, mut frames, mut total) = (Vec::new(), 0, 0u64);
        let mut hasher = Sha256::new();
        let mut first = Vec::new();
        let mut terminal = Value::Null;
        while let Some(piece) = resp.chunk().await.unwrap() {
            pending.extend_from_slice(&piece);
            while let Some(pos) = find(&pending, DELIM) {
                let frame: Value = serde_json::from_slice(&pending[..pos]).unwrap();
                pending.drain(..pos + DELIM.len());
                frames += 1;
                if frame["data"]["data_type"] == "file_chunk" {
                    let chunk = STANDARD.decode(frame["data"]["data"].as_str().unwrap()).unwrap();
                    if first.is_empty() {
                        first = chunk[..16].to_vec();
                    }
                    total += chunk.len() as u64;
                    hasher.update(&chunk);
                } else {
                    terminal = frame;
                }
            }
        }
        assert!(pending.is_empty());
        assert_eq!(frames, 1 + 16 + 1);
        assert_eq!(total, size);
        assert_eq!(terminal["data"]["total_bytes"], size);
        let expected: Vec<u8> = (0..16).map(|i| fake_snowluma::generated_byte(7, i)).collect();
        assert_eq!(first, expected);
        let digest: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(digest, fake_snowluma::generated_sha256(size, 7));
        // The generator is seekable: any window matches byte-by-byte.
        let mut window = [0u8; 19];
        fake_snowluma::fill_generated(7, 1_000_003, &mut window);
        assert!(window.iter().enumerate().all(|(k, b)| *b == fake_snowluma::generated_byte(7, 1_000_003 + k as u64)));
    })
    .await;
}

#[tokio::test]
async fn upload_flow_with_sha256_and_reset() {
    bounded(async {
        let fake = FakeSnowLuma::start(None).await;
        let data = sample_bytes(250_000);
        let parts: Vec<String> = data.chunks(100_000).map(|c| STANDARD.encode(c)).collect();
        assert_eq!(parts.len(), 3);

        // Out of order, with a duplicate; total_chunks only on the first call.
        let f = upload(&fake, json!({"stream_id": "s1", "chunk_data": parts[2], "chunk_index": 2, "total_chunks": 3, "filename": "photo.jpg"})).await;
        assert_stream_marked(&f);
        assert_eq!(f["status"], "ok");
        assert_eq!(
            f["data"],
            json!({"type": "stream", "stream_id": "s1", "status": "chunk_received", "received_chunks": 1, "total_chunks": 3})
        );
        assert_valid("upload_file_stream", &f["data"]);
        upload(&fake, json!({"stream_id": "s1", "chunk_data": parts[0], "chunk_index": 0})).await;
        let f = upload(&fake, json!({"stream_id": "s1", "chunk_data": parts[0], "chunk_index": 0})).await;
        assert_eq!(f["data"]["received_chunks"], 2, "duplicates are idempotent");
        let f = upload(&fake, json!({"stream_id": "s1", "verify_only": true})).await;
        assert_eq!((f["data"]["status"].as_str(), f["data"]["received_chunks"].as_u64()), (Some("file_created"), Some(2)));
        let f = upload(&fake, json!({"stream_id": "s1", "chunk_data": parts[1], "chunk_index": 1, "is_complete": true})).await;
        assert_eq!(f["data"]["status"], "chunk_received", "a chunk call never completes");
        let state = fake.uploaded("s1").unwrap();
        assert_eq!((state.received_chunks, state.chunk_calls, state.complete), (3, 4, false));

        let sha = sha256_hex(&data);
        let f = upload(&fake, json!({"stream_id": "s1", "is_complete": true, "expected_sha256": sha})).await;
        assert_eq!(
            f["data"],
            json!({
                "type": "response", "stream_id": "s1", "status": "file_complete",
                "received_chunks": 3, "total_chunks": 3,
                "file_path": "/tmp/snowluma-stream/upload/10001/s1__photo.jpg",
                "file_size": 250000, "sha256": sha
            })
        );
        assert_valid("upload_file_stream", &f["data"]);
        let state = fake.uploaded("s1").unwrap();
        assert!(state.complete);
        assert_eq!(state.sha256.as_deref(), Some(sha.as_str()));
        assert_eq!(state.bytes.as_deref(), Some(&data[..]));
        // The completed file can be downloaded back by its file_path.
        let frames = stream(&fake, "download_file_stream", json!({"file": "/tmp/snowluma-stream/upload/10001/s1__photo.jpg"})).await;
        let back: Vec<u8> = frames[1..frames.len() - 1]
            .iter()
            .flat_map(|f| STANDARD.decode(f["data"]["data"].as_str().unwrap()).unwrap())
            .collect();
        assert_eq!(back, data);

        // Completion with chunks missing, then verify, then reset.
        upload(&fake, json!({"stream_id": "s2", "chunk_data": parts[0], "chunk_index": 0, "total_chunks": 3})).await;
        let f = upload(&fake, json!({"stream_id": "s2", "is_complete": true})).await;
        assert_error_frame(&f, 100, "incomplete stream: missing 2 chunk(s) [1,2]");
        assert_valid_error_only(&f);
        let f = upload(&fake, json!({"stream_id": "s2", "reset": true})).await;
        assert_error_frame(&f, 100, "Stream reset completed");
        assert!(fake.uploaded("s2").unwrap().reset_seen);
        let f = upload(&fake, json!({"stream_id": "s2", "verify_only": true})).await;
        assert_error_frame(&f, 100, "stream not found");

        // A wrong sha256 fails but leaves the stream open for a retry.
        let one = STANDARD.encode(b"hello");
        upload(&fake, json!({"stream_id": "s3", "chunk_data": one, "chunk_index": 0, "total_chunks": 1, "expected_sha256": "00"})).await;
        let f = upload(&fake, json!({"stream_id": "s3", "is_complete": true})).await;
        assert_error_frame(&f, 100, "sha256 mismatch (expected 00, got ");
        assert!(fake.uploaded("s3").unwrap().last_error.unwrap().starts_with("sha256 mismatch"));
        let f = upload(&fake, json!({"stream_id": "s3", "expected_sha256": sha256_hex(b"hello")})).await;
        assert_eq!(f["data"]["status"], "file_complete", "a call without chunk data completes a full stream");
        assert_eq!(f["data"]["file_path"], "/tmp/snowluma-stream/upload/10001/s3__upload_s3");

        // Parameter and id errors.
        let f = upload(&fake, json!({"stream_id": "bad/id", "total_chunks": 1})).await;
        assert_error_frame(&f, 100, "invalid stream_id");
        let f = upload(&fake, json!({"stream_id": "s4", "chunk_data": one, "chunk_index": 0})).await;
        assert_error_frame(&f, 100, "total_chunks required for new stream");
        let f = upload(&fake, json!({"chunk_data": one})).await;
        assert_error_frame(&f, 1400, "stream_id: is required");
        let f = upload(&fake, json!({"stream_id": "s5", "total_chunks": 2, "chunk_data": one, "chunk_index": 2})).await;
        assert_error_frame(&f, 100, "invalid chunk index: 2");
    })
    .await;
}

fn assert_valid_error_only(frame: &Value) {
    // Error frames are not success data: they must not pass the schema.
    let schema = fake_snowluma::returns_schema("upload_file_stream").unwrap();
    assert!(fake_snowluma::validate_schema(&schema, &frame["data"]).is_err());
}

#[tokio::test]
async fn test_download_stream_with_and_without_error() {
    bounded(async {
        let fake = FakeSnowLuma::start(None).await;
        let frames = stream(&fake, "test_download_stream", json!({})).await;
        assert_eq!(frames.len(), 11);
        for (i, f) in frames[..10].iter().enumerate() {
            assert_stream_marked(f);
            assert_eq!(f["data"], json!({"type": "stream", "data": format!("Index-> {}", i + 1), "data_type": "data_chunk"}));
            assert_valid("test_download_stream", &f["data"]);
        }
        assert_eq!(
            frames[10]["data"],
            json!({"type": "response", "data_type": "data_complete", "data": "Stream transmission complete"})
        );
        assert_eq!((frames[10]["message"].as_str(), frames[10]["wording"].as_str()), (Some(""), Some("")));

        let frames = stream(&fake, "test_download_stream", json!({"error": "true"})).await;
        assert_eq!(frames.len(), 11);
        assert_error_frame(&frames[10], 100, "This is a test error");
        assert_eq!(frames[10]["message"], "This is a test error");
    })
    .await;
}
