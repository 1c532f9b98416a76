//! Automatic upload against a file system that changes under it, end to end over stdio: a
//! directory component swapped for a symlink while uploads run (nothing outside
//! SNOWLUMA_MCP_UPLOAD_ROOT is ever sent), a file that grows during the upload (exactly the
//! size it had when it was opened is sent), and special files (FIFO, device) refused with the
//! same text as every other refusal.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/raw_client.rs"]
mod raw_client;
#[path = "support/stream_helpers.rs"]
mod stream_helpers;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use base64::Engine;
use fake_snowluma::{FakeSnowLuma, Fault};
use raw_client::{RawServer, wait_until};
use serde_json::json;
use stream_helpers::{Dirs, invoke, pseudo_random, sha256, spawn};

/// The refusal every unusable input_file gets (runtime/streams/contain.rs).
const REFUSAL: &str =
    "execution.input_file is not a readable regular file inside SNOWLUMA_MCP_UPLOAD_ROOT";

/// Every chunk the fake received, decoded.
fn chunks_sent(fake: &FakeSnowLuma) -> Vec<Vec<u8>> {
    fake.requests_for("upload_file_stream")
        .iter()
        .filter_map(|r| r.params.as_ref()?["chunk_data"].as_str().map(str::to_owned))
        .map(|data| {
            base64::engine::general_purpose::STANDARD
                .decode(data)
                .unwrap()
        })
        .collect()
}

#[tokio::test]
async fn a_directory_swapped_for_a_symlink_mid_flight_never_leads_outside_the_root() {
    let dirs = Dirs::new("race-swap");
    let fake = FakeSnowLuma::start(None).await;
    let inside = pseudo_random(4096, 3);
    let secret = b"SECRET outside the upload root".repeat(100);
    std::fs::create_dir(dirs.uploads.join("sub")).unwrap();
    std::fs::write(dirs.uploads.join("sub/data.bin"), &inside).unwrap();
    std::fs::create_dir(dirs.root.join("secret-dir")).unwrap();
    std::fs::write(dirs.root.join("secret-dir/data.bin"), &secret).unwrap();
    let mut server = spawn(&fake, &dirs, &[]);

    // A thread flips `sub` between the real directory and a symlink to the secret directory
    // as fast as it can while the uploads below run.
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, uploads, secret_dir) = (
            stop.clone(),
            dirs.uploads.clone(),
            dirs.root.join("secret-dir"),
        );
        std::thread::spawn(move || {
            let (sub, parked) = (uploads.join("sub"), uploads.join("sub.real"));
            let mut flips = 0u64;
            while !stop.load(Ordering::Relaxed) {
                std::fs::rename(&sub, &parked).unwrap();
                std::os::unix::fs::symlink(&secret_dir, &sub).unwrap();
                std::thread::sleep(Duration::from_micros(200));
                std::fs::remove_file(&sub).unwrap();
                std::fs::rename(&parked, &sub).unwrap();
                std::thread::sleep(Duration::from_micros(200));
                flips += 1;
            }
            flips
        })
    };

    let (mut sent, mut refused) = (0, 0);
    for id in 1..=40 {
        let (_, body) = invoke(
            &mut server,
            id,
            json!({ "action": "upload_file_stream", "execution": { "input_file": "sub/data.bin" } }),
            None,
        )
        .await;
        match body["diagnostics"]["outcome"].as_str() {
            Some("success") => {
                assert_eq!(body["result"]["sha256"], sha256(&inside), "{body}");
                sent += 1;
            }
            _ => {
                assert_eq!(body["diagnostics"]["kind"], "input_file", "{body}");
                let message = body["diagnostics"]["message"].as_str().unwrap();
                assert!(message.starts_with(REFUSAL), "{body}");
                refused += 1;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let flips = swapper.join().unwrap();
    assert!(flips > 0, "the swapper ran");
    eprintln!("{sent} uploads sent, {refused} refused, {flips} swaps");
    assert_eq!(sent + refused, 40);
    for chunk in chunks_sent(&fake) {
        assert_eq!(chunk, inside, "only the file inside the root was ever sent");
    }
    server.finish().await;
}

#[tokio::test]
async fn a_file_growing_during_the_upload_is_sent_at_its_opened_size() {
    let dirs = Dirs::new("race-grow");
    let fake = FakeSnowLuma::start(None).await;
    // Two chunks (768 KiB each at most); the file grows while the first is in flight.
    let content = pseudo_random(1024 * 1024, 4);
    let path = dirs.uploads.join("growing.bin");
    std::fs::write(&path, &content).unwrap();
    let mut server = spawn(&fake, &dirs, &[]);
    fake.set_fault(
        Some("upload_file_stream"),
        Fault::Slow(Duration::from_millis(400)),
    );
    let call =
        json!({ "action": "upload_file_stream", "execution": { "input_file": "growing.bin" } });
    let answer = {
        let request = invoke(&mut server, 1, call, None);
        let grow = async {
            wait_until(raw_client::WAIT, || {
                !fake.requests_for("upload_file_stream").is_empty()
            })
            .await;
            use std::io::Write;
            let mut file = std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap();
            file.write_all(&pseudo_random(300_000, 9)).unwrap();
            file.sync_all().unwrap();
        };
        let ((_, body), ()) = tokio::join!(request, grow);
        body
    };
    assert!(std::fs::metadata(&path).unwrap().len() > content.len() as u64);
    assert_eq!(answer["diagnostics"]["outcome"], "success", "{answer}");
    assert_eq!(answer["result"]["file_size"], content.len(), "{answer}");
    assert_eq!(answer["result"]["sha256"], sha256(&content), "{answer}");
    let stream_id = answer["diagnostics"]["stream_id"].as_str().unwrap();
    let state = fake.uploaded(stream_id).expect("the fake saw the upload");
    assert_eq!(state.bytes.as_deref(), Some(content.as_slice()));
    assert_eq!(chunks_sent(&fake).concat(), content);
    server.finish().await;
}

#[tokio::test]
async fn fifos_and_devices_get_the_same_refusal_as_a_missing_file() {
    let dirs = Dirs::new("race-special");
    let fake = FakeSnowLuma::start(None).await;
    let mut cases = vec!["missing.bin"];
    assert!(
        std::process::Command::new("mkfifo")
            .arg(dirs.uploads.join("pipe"))
            .status()
            .unwrap()
            .success()
    );
    cases.push("pipe");
    let mut server = spawn(&fake, &dirs, &[]);
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
        messages.push(body["diagnostics"]["message"].as_str().unwrap().to_string());
    }
    server.finish().await;
    // A character device: making one needs CAP_MKNOD, so the upload root is /dev itself, whose
    // `null` every Linux host has.
    let mut server = RawServer::spawn(&[
        ("SNOWLUMA_MCP_MODE", "write"),
        ("SNOWLUMA_MCP_ENDPOINT", fake.url.as_str()),
        (
            "SNOWLUMA_MCP_DOWNLOAD_DIR",
            &dirs.downloads.to_string_lossy(),
        ),
        ("SNOWLUMA_MCP_UPLOAD_ROOT", "/dev"),
    ]);
    let (response, body) = invoke(
        &mut server,
        10,
        json!({ "action": "upload_file_stream", "execution": { "input_file": "null" } }),
        None,
    )
    .await;
    assert_eq!(response["result"]["isError"], true, "{body}");
    assert_eq!(
        body["diagnostics"]["kind"], "input_file",
        "/dev/null: {body}"
    );
    messages.push(body["diagnostics"]["message"].as_str().unwrap().to_string());
    assert_eq!(messages.len(), 3);
    assert!(messages[0].starts_with(REFUSAL), "{messages:?}");
    assert!(
        messages.iter().all(|m| *m == messages[0]),
        "one text for every refusal: {messages:?}"
    );
    assert!(fake.requests().is_empty(), "nothing was sent");
    server.finish().await;
}
