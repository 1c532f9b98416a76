//! The native floor for download throughput: the request the server sends for
//! `download_file_stream`, over one blocking HTTP/1.1 connection to the same fake SnowLuma, with
//! the work the server does for each frame and nothing else: the chunked body decoded, frames
//! split on `\r\n\r\n` and parsed as JSON, each chunk's base64 decoded (in place, with the
//! server's decoder), hashed with SHA-256 and written to a file through a 1 MiB buffer; then
//! (`commit`) what the server does before it answers: the data fsynced, the file given its
//! final name by a hard link, the temporary name removed, the directory fsynced.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::net::TcpStream;
use std::path::Path;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const DELIMITER: &[u8] = b"\r\n\r\n";

/// What one download wrote.
pub struct Downloaded {
    /// The file written, flushed but not yet synced.
    pub file: File,
    pub bytes: u64,
    pub chunks: u64,
    pub frames: u64,
    pub sha256: String,
}

/// Downloads SnowLuma's `file` in chunks of `chunk_size` bytes into `path`. Panics on anything a
/// correct fake would not send, so a broken run cannot print a figure.
pub fn download(port: u16, token: &str, file: &str, chunk_size: usize, path: &Path) -> Downloaded {
    let body = json!({
        "action": "download_file_stream",
        "params": { "file": file, "chunk_size": chunk_size },
    })
    .to_string();
    let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to the fake");
    stream.set_nodelay(true).expect("nodelay");
    let mut request = format!(
        "POST / HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n\
         authorization: Bearer {token}\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body.as_bytes());
    let mut reader = BufReader::with_capacity(1 << 20, stream);
    reader.get_mut().write_all(&request).expect("send");

    let mut line = String::new();
    reader.read_line(&mut line).expect("status line");
    assert!(line.starts_with("HTTP/1.1 200"), "download: {line:?}");
    let mut chunked = false;
    loop {
        line.clear();
        reader.read_line(&mut line).expect("header");
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            chunked |= name.eq_ignore_ascii_case("transfer-encoding")
                && value.trim().eq_ignore_ascii_case("chunked");
        }
    }
    assert!(chunked, "the fake streams downloads with chunked encoding");

    let mut out = BufWriter::with_capacity(1 << 20, File::create(path).expect("create"));
    let mut hasher = Sha256::new();
    let (mut written, mut chunks, mut frame_count) = (0, 0, 0);
    let mut frames = Vec::new();
    let mut scanned = 0;
    let mut finished = false;
    while !finished {
        // One piece of the chunked body.
        line.clear();
        reader.read_line(&mut line).expect("chunk size");
        let size_text = line.trim_end().split(';').next().unwrap_or_default();
        let size = usize::from_str_radix(size_text, 16).expect("chunk size is hex");
        assert!(size > 0, "the body ended before the terminal frame");
        let start = frames.len();
        frames.resize(start + size, 0);
        reader.read_exact(&mut frames[start..]).expect("chunk");
        let mut crlf = [0; 2];
        reader.read_exact(&mut crlf).expect("chunk end");
        // Every whole frame in the buffer.
        let mut taken = 0;
        while let Some(end) = find(&frames[scanned..]).map(|at| scanned + at) {
            let mut frame: Value = serde_json::from_slice(&frames[taken..end]).expect("frame");
            taken = end + DELIMITER.len();
            scanned = taken;
            frame_count += 1;
            assert_eq!(frame["retcode"], 0, "a failed frame: {frame}");
            let data = &frame["data"];
            let stream = data["type"] == "stream";
            match (stream, data["data_type"] == "file_chunk") {
                (true, true) => {
                    let Value::String(text) = frame["data"]["data"].take() else {
                        panic!("a chunk frame without data: {frame}");
                    };
                    let mut bytes = text.into_bytes();
                    let decoded = base64_simd::STANDARD
                        .decode_inplace(&mut bytes)
                        .expect("base64");
                    hasher.update(&*decoded);
                    out.write_all(decoded).expect("write");
                    written += decoded.len() as u64;
                    chunks += 1;
                }
                (true, false) => {}
                (false, _) => {
                    assert_eq!(frame["data"]["data_type"], "file_complete", "{frame}");
                    finished = true;
                    break;
                }
            }
        }
        frames.drain(..taken);
        scanned = (scanned - taken).max(frames.len().saturating_sub(DELIMITER.len() - 1));
    }
    Downloaded {
        file: out.into_inner().expect("flush"),
        bytes: written,
        chunks,
        frames: frame_count,
        sha256: hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
    }
}

/// Makes the downloaded file durable under `target`, as the server does before it answers.
pub fn commit(done: &Downloaded, written: &Path, target: &Path) {
    done.file.sync_all().expect("fsync the data");
    std::fs::hard_link(written, target).expect("link the final name");
    std::fs::remove_file(written).expect("remove the temporary name");
    let dir = target.parent().expect("a directory");
    File::open(dir)
        .and_then(|d| d.sync_all())
        .expect("fsync the directory");
}

/// Where the next delimiter starts, found with memchr as the server's frame reader does.
fn find(haystack: &[u8]) -> Option<usize> {
    memchr::memmem::find(haystack, DELIMITER)
}
