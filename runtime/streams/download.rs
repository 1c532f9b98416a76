//! Downloads: frames are decoded as they arrive and written straight to a new file in the
//! download directory, under a name this server chooses. Size limits and the directory quota
//! are enforced while writing; any failure, limit or cancellation removes the partial file.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::{Progress, StreamFailure, StreamOutcome, StreamResult, Streams};
use crate::ids::{hex, random_hex};
use crate::onebot::StreamLink;
use crate::onebot::frames::{self, FrameKind};
use crate::outcome::ErrorKind;

/// Writes go through a buffer this large, so the disk sees few, large writes.
const WRITE_BUFFER: usize = 1 << 20;

pub async fn run(
    link: &StreamLink<'_>,
    streams: &Streams,
    action: &str,
    params: &Map<String, Value>,
    progress: &mut Progress,
) -> StreamOutcome {
    let config = &streams.config;
    if let Err(error) = create_private_dir(&config.download_dir) {
        return Err(StreamFailure::refused(
            ErrorKind::DownloadDir,
            format!("cannot use the download directory: {error}"),
            "check SNOWLUMA_MCP_DOWNLOAD_DIR exists or can be created, and is writable",
        ));
    }
    let used = dir_usage(&config.download_dir);
    let requested = params
        .get("file")
        .or_else(|| params.get("file_id"))
        .and_then(Value::as_str)
        .unwrap_or("download");
    let mut file = match PartialFile::create(&config.download_dir, requested) {
        Ok(file) => file,
        Err(error) => {
            return Err(StreamFailure::refused(
                ErrorKind::DownloadDir,
                format!("cannot create a file in the download directory: {error}"),
                "check SNOWLUMA_MCP_DOWNLOAD_DIR is writable",
            ));
        }
    };
    let mut state = Download {
        file: &mut file,
        hasher: Sha256::new(),
        written: 0,
        frames: 0,
        chunks: 0,
        original_name: None,
        expected: None,
        terminal: None,
        failure: None,
        max_file: config.max_file_bytes,
        quota_left: config.dir_quota_bytes.saturating_sub(used),
        in_flight: streams.in_flight.clone(),
        decoded: Vec::new(),
    };
    let outcome = transfer(link, action, params, &mut state, progress).await;
    streams
        .in_flight
        .fetch_sub(state.written, Ordering::Relaxed);
    let summary = state.summary();
    if let Err(failure) = outcome {
        return Err(failure.with_detail("removed_partial_file", json!(true)));
    }
    if let Some(frame) = state.failure.take() {
        return Ok(
            StreamResult::remote_failure(frame).with_detail("removed_partial_file", json!(true))
        );
    }
    let path = match file.commit() {
        Ok(path) => path,
        Err(error) => {
            return Err(StreamFailure::refused(
                ErrorKind::DownloadDir,
                format!("cannot finish the file: {error}"),
                "check the disk of SNOWLUMA_MCP_DOWNLOAD_DIR",
            ));
        }
    };
    let mut result = summary;
    result["path"] = json!(path);
    Ok(StreamResult::completed(result))
}

struct Download<'f> {
    file: &'f mut PartialFile,
    hasher: Sha256,
    written: u64,
    frames: u64,
    chunks: u64,
    original_name: Option<String>,
    expected: Option<u64>,
    terminal: Option<Value>,
    failure: Option<Value>,
    max_file: u64,
    quota_left: u64,
    in_flight: Arc<AtomicU64>,
    decoded: Vec<u8>,
}

impl Download<'_> {
    fn summary(&self) -> Value {
        json!({
            "size": self.written,
            "sha256": hex(&self.hasher.clone().finalize()),
            "original_name": self.original_name,
            "frames": self.frames,
            "chunks": self.chunks,
            "terminal": self.terminal.as_ref().and_then(|t| t.get("data")).cloned(),
        })
    }

    /// Handles one frame; `Ok(false)` ends the stream.
    fn accept(&mut self, frame: Value) -> Result<bool, StreamFailure> {
        self.frames += 1;
        match frames::kind(&frame) {
            FrameKind::Failed => {
                self.failure = Some(frame);
                Ok(false)
            }
            FrameKind::Complete => {
                let reported = frame.pointer("/data/total_bytes").and_then(Value::as_u64);
                if reported.is_some_and(|total| total != self.written) {
                    return Err(StreamFailure::refused(
                        ErrorKind::SizeMismatch,
                        format!(
                            "SnowLuma reported {} bytes but {} arrived",
                            reported.unwrap_or(0),
                            self.written
                        ),
                        "download again; the partial file was removed",
                    ));
                }
                self.terminal = Some(frame);
                Ok(false)
            }
            FrameKind::Intermediate => {
                let data = &frame["data"];
                match data.get("data_type").and_then(Value::as_str) {
                    Some("file_info") => {
                        self.original_name = data
                            .get("file_name")
                            .and_then(Value::as_str)
                            .map(str::to_string);
                        let size = data
                            .get("file_size")
                            .and_then(Value::as_u64)
                            .filter(|s| *s > 0);
                        if let Some(size) = size {
                            self.check_limits(size)?;
                        }
                        self.expected = size;
                    }
                    Some("file_chunk") => {
                        let encoded = data.get("data").and_then(Value::as_str).unwrap_or_default();
                        self.decoded.clear();
                        base64::engine::general_purpose::STANDARD
                            .decode_vec(encoded, &mut self.decoded)
                            .map_err(|e| {
                                StreamFailure::refused(
                                    ErrorKind::BadFrame,
                                    format!("a file chunk is not valid base64 ({e})"),
                                    "check SnowLuma's logs",
                                )
                            })?;
                        let next = self.written + self.decoded.len() as u64;
                        self.check_limits(next)?;
                        self.file.write(&self.decoded).map_err(|e| {
                            StreamFailure::refused(
                                ErrorKind::DownloadDir,
                                format!("cannot write the file: {e}"),
                                "check the disk of SNOWLUMA_MCP_DOWNLOAD_DIR",
                            )
                        })?;
                        self.hasher.update(&self.decoded);
                        self.in_flight
                            .fetch_add(self.decoded.len() as u64, Ordering::Relaxed);
                        self.written = next;
                        self.chunks += 1;
                    }
                    _ => {}
                }
                Ok(true)
            }
        }
    }

    /// Stops before a file would pass either limit.
    fn check_limits(&self, size: u64) -> Result<(), StreamFailure> {
        if size > self.max_file {
            return Err(StreamFailure::refused(
                ErrorKind::FileTooLarge,
                format!(
                    "the file is larger than SNOWLUMA_MCP_MAX_FILE_BYTES ({} bytes)",
                    self.max_file
                ),
                "raise SNOWLUMA_MCP_MAX_FILE_BYTES to download it; the partial file was removed",
            ));
        }
        // Bytes other downloads have in flight count against the same quota.
        let others = self
            .in_flight
            .load(Ordering::Relaxed)
            .saturating_sub(self.written);
        if size > self.quota_left.saturating_sub(others) {
            return Err(StreamFailure::refused(
                ErrorKind::QuotaExceeded,
                format!(
                    "the download directory would exceed SNOWLUMA_MCP_DIR_QUOTA_BYTES ({} bytes)",
                    self.quota_left
                ),
                "delete files from SNOWLUMA_MCP_DOWNLOAD_DIR or raise the quota; the partial file was removed",
            ));
        }
        Ok(())
    }
}

async fn transfer(
    link: &StreamLink<'_>,
    action: &str,
    params: &Map<String, Value>,
    state: &mut Download<'_>,
    progress: &mut Progress,
) -> Result<(), StreamFailure> {
    let mut frames = super::open(link, action, params).await?;
    loop {
        let frame = super::next_frame(&mut frames).await?;
        let more = state.accept(frame)?;
        progress
            .update(state.written as f64, state.expected.map(|e| e as f64))
            .await;
        if !more {
            break;
        }
    }
    state.file.flush().map_err(|e| {
        StreamFailure::refused(
            ErrorKind::DownloadDir,
            format!("cannot write the file: {e}"),
            "check the disk",
        )
    })
}

/// A file this server created; removed on drop unless committed.
struct PartialFile {
    path: PathBuf,
    writer: Option<std::io::BufWriter<std::fs::File>>,
}

impl PartialFile {
    /// A new file named after the remote name's safe characters plus a random suffix, created
    /// exclusively so an existing file is never overwritten.
    fn create(dir: &Path, remote: &str) -> std::io::Result<PartialFile> {
        let (stem, extension) = safe_name(remote);
        for _ in 0..8 {
            let name = format!("{stem}-{}{extension}", random_hex::<4>());
            let path = dir.join(name);
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            match options.open(&path) {
                Ok(file) => {
                    return Ok(PartialFile {
                        path,
                        writer: Some(std::io::BufWriter::with_capacity(WRITE_BUFFER, file)),
                    });
                }
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(error) => return Err(error),
            }
        }
        Err(std::io::Error::other("could not find a free file name"))
    }

    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.writer
            .as_mut()
            .ok_or_else(|| std::io::Error::other("closed"))?
            .write_all(bytes)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self.writer.as_mut() {
            Some(writer) => writer.flush(),
            None => Ok(()),
        }
    }

    fn commit(mut self) -> std::io::Result<PathBuf> {
        if let Some(writer) = self.writer.take() {
            writer.into_inner().map_err(|e| e.into_error())?;
        }
        Ok(std::mem::take(&mut self.path))
    }
}

impl Drop for PartialFile {
    fn drop(&mut self) {
        if !self.path.as_os_str().is_empty() {
            drop(self.writer.take());
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The remote name reduced to letters, digits, `-` and `_` (any script), at most 64
/// characters, and a short alphanumeric extension. Separators and `..` cannot survive.
fn safe_name(remote: &str) -> (String, String) {
    let base = remote.rsplit(['/', '\\']).next().unwrap_or_default();
    let base = base.split(['?', '#']).next().unwrap_or_default();
    let (stem, extension) = match base.rsplit_once('.') {
        Some((stem, ext))
            if !stem.is_empty()
                && (1..=8).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphanumeric()) =>
        {
            (stem, format!(".{}", ext.to_ascii_lowercase()))
        }
        _ => (base, String::new()),
    };
    let stem: String = stem
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_')
        .take(64)
        .collect();
    (
        if stem.is_empty() {
            "download".to_string()
        } else {
            stem
        },
        extension,
    )
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Bytes held by regular files directly in the download directory.
fn dir_usage(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.metadata().ok())
        .filter(|meta| meta.is_file())
        .map(|meta| meta.len())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::safe_name;

    #[test]
    fn remote_names_cannot_escape() {
        assert_eq!(
            safe_name("../../etc/passwd"),
            ("passwd".into(), String::new())
        );
        assert_eq!(
            safe_name("C:\\\\x\\\\evil.EXE"),
            ("evil".into(), ".exe".into())
        );
        assert_eq!(
            safe_name("https://example.com/a/photo.jpg?x=1"),
            ("photo".into(), ".jpg".into())
        );
        assert_eq!(safe_name(".."), ("download".into(), String::new()));
        assert_eq!(
            safe_name("报告 2026.pdf"),
            ("报告2026".into(), ".pdf".into())
        );
        assert_eq!(safe_name("a.b/c"), ("c".into(), String::new()));
    }
}
