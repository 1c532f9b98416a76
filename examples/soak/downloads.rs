//! Phase 3: stream downloads, several at once, each verified and then deleted.
//!
//! Twenty generated files of 256 KiB to 1 MiB (the fake produces them while streaming) are
//! downloaded in turn, `in_flight` at a time (the server's stream limit), alternately through
//! `invoke_action download_file_stream` and the typed `download_file_stream` tool. Each reply
//! must report the generated file's size and sha256; the saved file must be in the download
//! directory with that size and that sha256 (hashed again here); then it is deleted, which
//! keeps the directory under its quota. At the end the directory must hold no download and no
//! `.part` file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::fake_snowluma::{FakeSnowLuma, generated_sha256};
use crate::{Client, PhaseReport};

const FILES: usize = 20;
const CHUNK: u64 = 64 * 1024;

pub struct Source {
    file: String,
    size: u64,
    sha256: String,
}

/// Registers the files with the fake; sizes step from 256 KiB to 1 MiB, not chunk-aligned.
pub fn register(fake: &FakeSnowLuma) -> Vec<Source> {
    (0..FILES)
        .map(|i| {
            let size = 256 * 1024 + (i as u64 * 40_009) % (768 * 1024 + 1);
            let seed = i as u8;
            Source {
                file: fake.add_generated_file(&format!("soak-{i}.bin"), size, seed),
                size,
                sha256: generated_sha256(size, seed),
            }
        })
        .collect()
}

fn sha256_of(path: &Path) -> std::io::Result<String> {
    let bytes = std::fs::read(path)?;
    Ok(Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// Checks one reply and the saved file, then deletes the file.
fn verify(reply: &Value, source: &Source, dir: &Path) -> Result<(), String> {
    if let Some(error) = reply.get("error") {
        return Err(format!("protocol error {error}"));
    }
    let structured = &reply["result"]["structuredContent"];
    if reply["result"]["isError"] != json!(false)
        || structured["diagnostics"]["outcome"] != json!("success")
    {
        let text = reply.to_string();
        return Err(format!("download failed: {}", &text[..text.len().min(400)]));
    }
    let result = &structured["result"];
    let path = PathBuf::from(result["path"].as_str().ok_or("no path in the result")?);
    if path.parent() != Some(dir) {
        return Err(format!("{path:?} is not in the download directory"));
    }
    if result["size"].as_u64() != Some(source.size) {
        return Err(format!(
            "{}: size {} reported, {} generated",
            source.file, result["size"], source.size
        ));
    }
    if result["sha256"].as_str() != Some(source.sha256.as_str()) {
        return Err(format!("{}: sha256 reported differs", source.file));
    }
    let on_disk = std::fs::metadata(&path).map_err(|e| format!("{path:?}: {e}"))?;
    if on_disk.len() != source.size {
        return Err(format!("{path:?} holds {} bytes", on_disk.len()));
    }
    if sha256_of(&path).map_err(|e| format!("{path:?}: {e}"))? != source.sha256 {
        return Err(format!("{path:?}: sha256 of the saved file differs"));
    }
    std::fs::remove_file(&path).map_err(|e| format!("removing {path:?}: {e}"))
}

fn arguments(n: usize, source: &Source) -> Value {
    let params = json!({ "file": source.file, "chunk_size": CHUNK });
    if n.is_multiple_of(2) {
        json!({ "name": "invoke_action",
                "arguments": { "action": "download_file_stream", "params": params } })
    } else {
        json!({ "name": "download_file_stream", "arguments": params })
    }
}

pub fn run(
    client: &mut Client,
    sources: &[Source],
    dir: &Path,
    total: usize,
    in_flight: usize,
    report: &mut PhaseReport,
) {
    let pid = client.peer.pid();
    report.curve.mark("start", pid);
    let began = Instant::now();
    let mut pending: HashMap<u64, usize> = HashMap::new();
    let (mut sent, mut done, mut bytes) = (0usize, 0usize, 0u64);
    while sent < in_flight.min(total) {
        let id = client.peer.send(
            "tools/call",
            &arguments(sent, &sources[sent % sources.len()]),
        );
        pending.insert(id, sent);
        sent += 1;
    }
    client.peer.flush();
    while done < total {
        let (id, reply) = client.reply();
        let Some(n) = pending.remove(&id) else {
            report.problem(format!("a reply with id {id}, which is not in flight"));
            continue;
        };
        done += 1;
        let source = &sources[n % sources.len()];
        let label = if n.is_multiple_of(2) {
            "invoke_action download_file_stream"
        } else {
            "typed download_file_stream"
        };
        match verify(&reply, source, dir) {
            Ok(()) => {
                report.count(label);
                bytes += source.size;
            }
            Err(problem) => report.problem(format!("{label}: {problem}")),
        }
        if sent < total {
            let id = client.peer.send(
                "tools/call",
                &arguments(sent, &sources[sent % sources.len()]),
            );
            client.peer.flush();
            pending.insert(id, sent);
            sent += 1;
        }
        report.curve.progress(done, total, pid);
    }
    report.done = done;
    report.elapsed = began.elapsed();
    report.curve.mark("end", pid);
    if !pending.is_empty() {
        report.problem(format!("{} replies never arrived", pending.len()));
    }
    let left: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| name != ".snowluma-mcp.lock")
                .collect()
        })
        .unwrap_or_default();
    if !left.is_empty() {
        report.problem(format!("left in the download directory: {left:?}"));
    }
    report.note(format!(
        "{:.1} MiB verified ({:.1} MiB/s), {} distinct files, {in_flight} at once",
        bytes as f64 / (1 << 20) as f64,
        bytes as f64 / (1 << 20) as f64 / report.elapsed.as_secs_f64(),
        sources.len()
    ));
}
