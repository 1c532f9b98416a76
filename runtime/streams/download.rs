//! Downloads: frames are decoded as they arrive and written to `<name>.part` in the download
//! directory, under a name this server chooses; on SnowLuma's terminal frame the file is
//! fsynced and renamed to its final name, so a result only ever names a completed file.
//!
//! The stream must be exact: every chunk has an `index` (continuous from 0) and base64 `data`,
//! the terminal frame is `type: "response"` with `data_type: "file_complete"`, and the bytes
//! and chunks written equal what SnowLuma announced. file_info's `file_size` is 0 when SnowLuma
//! does not know the size (a URL without Content-Length, a cached image without one); then
//! file_complete's `total_bytes` and `total_chunks` are the only figures, and they decide. Size limits and the
//! directory quota ([`super::dir::DirQuota`]) are enforced before each chunk is written; any
//! failure, limit or cancellation removes the partial file.
//!
//! Decoding, hashing, writing, fsync and rename run on tokio's blocking pool, never on the
//! single runtime thread, so a slow disk cannot stall other calls, cancellation or progress.
//! Chunks go through a [`ChunkQueue`], so the next frame is read while one is written.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::chunk_queue::ChunkQueue;
use super::dir::{self, DirQuota, PART_SUFFIX, QuotaRefusal};
use super::{Progress, StreamFailure, StreamOutcome, StreamResult, Streams};
use crate::ids::{hex, random_hex};
use crate::onebot::StreamLink;
use crate::onebot::frames::{self, FrameKind};
use crate::outcome::ErrorKind;

pub async fn run(
    link: &StreamLink<'_>,
    streams: &Streams,
    action: &str,
    params: &Map<String, Value>,
    progress: &mut Progress,
) -> StreamOutcome {
    let config = &streams.config;
    let requested = params
        .get("file")
        .or_else(|| params.get("file_id"))
        .and_then(Value::as_str)
        .unwrap_or("download")
        .to_string();
    let download_dir = config.download_dir.clone();
    let created = blocking(move || {
        dir::ensure_private_dir(&download_dir).map_err(|problem| {
            StreamFailure::refused(
                ErrorKind::DownloadDir,
                format!("cannot use the download directory: {problem}"),
                "fix SNOWLUMA_MCP_DOWNLOAD_DIR as the message says, then call again",
            )
        })?;
        PartialFile::create(&download_dir, &requested).map_err(|error| {
            if error
                .get_ref()
                .is_some_and(|inner| inner.is::<crate::ids::RandomUnavailable>())
            {
                return StreamFailure::refused(
                    ErrorKind::RandomUnavailable,
                    crate::ids::RandomUnavailable::MESSAGE,
                    crate::ids::RandomUnavailable::NEXT_STEP,
                );
            }
            StreamFailure::refused(
                ErrorKind::DownloadDir,
                format!("cannot create a file in the download directory: {error}"),
                "check SNOWLUMA_MCP_DOWNLOAD_DIR is writable",
            )
        })
    })
    .await;
    let file = match created {
        Ok(file) => file,
        Err(failure) => return Err(failure),
    };
    let writer = Writer {
        file,
        hasher: Sha256::new(),
        quota: DirQuota::new(config.download_dir.clone(), config.dir_quota_bytes),
        quota_bytes: config.dir_quota_bytes,
        max_file: config.max_file_bytes,
        delay: streams.write_delay,
        written: 0,
    };
    let mut state = Download {
        queue: Some(ChunkQueue::start(writer, Writer::write_chunk)),
        writer: None,
        written: 0,
        frames: 0,
        chunks: 0,
        original_name: None,
        expected: None,
        terminal: None,
        failure: None,
        max_file: config.max_file_bytes,
    };
    let outcome = transfer(link, action, params, &mut state, progress).await;
    // A failed or cancelled download skips the chunks still queued.
    let abandon = outcome.is_err() || state.failure.is_some();
    let writes = state.finish_writes(abandon).await;
    let outcome = outcome.and(writes);
    let writer = state.writer.take();
    if let Err(failure) = outcome {
        discard(writer).await;
        return Err(failure.with_detail("removed_partial_file", json!(true)));
    }
    if let Some(frame) = state.failure.take() {
        discard(writer).await;
        return Ok(
            StreamResult::remote_failure(frame).with_detail("removed_partial_file", json!(true))
        );
    }
    let Some(writer) = writer else {
        return Err(lost_writer());
    };
    let sha256 = hex(&writer.hasher.clone().finalize());
    let committed = blocking(move || {
        writer.file.commit().map_err(|error| {
            StreamFailure::refused(
                ErrorKind::DownloadDir,
                format!("cannot finish the file: {error}"),
                "check the disk of SNOWLUMA_MCP_DOWNLOAD_DIR",
            )
        })
    })
    .await;
    let path = match committed {
        Ok(path) => path,
        Err(failure) => return Err(failure.with_detail("removed_partial_file", json!(true))),
    };
    let mut result = state.summary(sha256);
    result["path"] = json!(path);
    Ok(StreamResult::completed(result))
}

/// Runs blocking file work on tokio's blocking pool.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, StreamFailure> + Send + 'static,
) -> Result<T, StreamFailure> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|error| {
            Err(StreamFailure::refused(
                ErrorKind::DownloadDir,
                format!("a file operation failed: {error}"),
                "check the disk of SNOWLUMA_MCP_DOWNLOAD_DIR",
            ))
        })
}

/// Removes the partial file off the runtime thread.
async fn discard(writer: Option<Writer>) {
    if let Some(writer) = writer {
        let _ = tokio::task::spawn_blocking(move || drop(writer)).await;
    }
}

fn lost_writer() -> StreamFailure {
    StreamFailure::refused(
        ErrorKind::DownloadDir,
        "the download's file was lost after a failed write",
        "call again",
    )
}

/// The partial file and what is computed while writing it, owned by the download's
/// [`ChunkQueue`] worker until the last chunk is written.
struct Writer {
    file: PartialFile,
    hasher: Sha256,
    quota: DirQuota,
    quota_bytes: u64,
    max_file: u64,
    /// Test-only slow-disk seam (SNOWLUMA_MCP_TEST_WRITE_DELAY_MS).
    delay: Option<Duration>,
    written: u64,
}

impl Writer {
    /// Decodes one chunk, then reserves and writes it within the quota. Blocking.
    ///
    /// Decoded in place with base64-simd: the `base64` crate's decoder, into a new buffer, was
    /// a fifth of a download's time on the writing thread.
    fn write_chunk(&mut self, encoded: String) -> Result<u64, StreamFailure> {
        let mut bytes = encoded.into_bytes();
        let decoded: &[u8] = base64_simd::STANDARD
            .decode_inplace(&mut bytes)
            .map_err(|_| {
                StreamFailure::refused(
                    ErrorKind::BadFrame,
                    "a file chunk is not valid base64",
                    "check SnowLuma's logs",
                )
            })?;
        let next = self.written + decoded.len() as u64;
        if next > self.max_file {
            return Err(too_large(self.max_file));
        }
        if let Some(delay) = self.delay {
            std::thread::sleep(delay);
        }
        let file = self.file.file.as_mut().ok_or_else(lost_writer)?;
        self.quota
            .write_within(file, decoded)
            .map_err(|refusal| match refusal {
                QuotaRefusal::Exceeded { used } => StreamFailure::refused(
                    ErrorKind::QuotaExceeded,
                    format!(
                        "the download directory would exceed SNOWLUMA_MCP_DIR_QUOTA_BYTES ({} bytes; it holds {used} bytes, this chunk has {})",
                        self.quota_bytes,
                        decoded.len()
                    ),
                    "delete files from SNOWLUMA_MCP_DOWNLOAD_DIR or raise the quota; the partial file was removed",
                ),
                QuotaRefusal::Unreadable(error) => StreamFailure::refused(
                    ErrorKind::DownloadDir,
                    format!("cannot list the download directory to check SNOWLUMA_MCP_DIR_QUOTA_BYTES: {error}"),
                    "check that SNOWLUMA_MCP_DOWNLOAD_DIR is readable by this server; the partial file was removed",
                ),
                QuotaRefusal::Io(error) => StreamFailure::refused(
                    ErrorKind::DownloadDir,
                    format!("cannot write the file: {error}"),
                    "check the disk of SNOWLUMA_MCP_DOWNLOAD_DIR",
                ),
            })?;
        self.hasher.update(decoded);
        self.written = next;
        Ok(next)
    }
}

fn too_large(max_file: u64) -> StreamFailure {
    StreamFailure::refused(
        ErrorKind::FileTooLarge,
        format!("the file is larger than SNOWLUMA_MCP_MAX_FILE_BYTES ({max_file} bytes)"),
        "raise SNOWLUMA_MCP_MAX_FILE_BYTES to download it; the partial file was removed",
    )
}

struct Download {
    /// Chunks on their way to the writer; `None` once [`Download::finish_writes`] has run.
    queue: Option<ChunkQueue<Writer>>,
    /// The writer, back from the queue.
    writer: Option<Writer>,
    /// Bytes written, as of the queue's end.
    written: u64,
    frames: u64,
    chunks: u64,
    original_name: Option<String>,
    /// The size SnowLuma announced in file_info, when it did.
    expected: Option<u64>,
    terminal: Option<Value>,
    failure: Option<Value>,
    max_file: u64,
}

impl Download {
    /// Bytes written so far.
    fn written(&self) -> u64 {
        self.queue.as_ref().map_or(self.written, ChunkQueue::done)
    }

    /// Waits for the queued chunks (with `abandon`, only for the one being written) and takes
    /// the writer back. Its failure, if a chunk failed.
    async fn finish_writes(&mut self, abandon: bool) -> Result<(), StreamFailure> {
        let Some(queue) = self.queue.take() else {
            return Ok(());
        };
        let (writer, outcome) = queue.finish(abandon).await.ok_or_else(lost_writer)?;
        self.written = writer.written;
        self.writer = Some(writer);
        outcome
    }

    fn summary(&self, sha256: String) -> Value {
        json!({
            "size": self.written,
            "sha256": sha256,
            "original_name": self.original_name,
            "frames": self.frames,
            "chunks": self.chunks,
            "terminal": self.terminal.as_ref().and_then(|t| t.get("data")).cloned(),
        })
    }

    /// Handles one frame; `Ok(false)` ends the stream.
    async fn accept(&mut self, mut frame: Value) -> Result<bool, StreamFailure> {
        self.frames += 1;
        match frames::kind(&frame) {
            FrameKind::Failed => {
                self.failure = Some(frame);
                Ok(false)
            }
            FrameKind::Unexpected => Err(super::unexpected_frame(
                &frame,
                "the partial file was removed",
            )),
            FrameKind::Complete => {
                let data_type = frame.pointer("/data/data_type").and_then(Value::as_str);
                if data_type != Some("file_complete") {
                    return Err(bad_frame(format!(
                        "the download's terminal frame has data_type {}, not \"file_complete\"",
                        data_type.map_or_else(|| "missing".to_string(), |t| format!("{t:?}"))
                    )));
                }
                self.finish_writes(false).await?;
                self.check_totals(&frame)?;
                self.terminal = Some(frame);
                Ok(false)
            }
            FrameKind::Intermediate => {
                let data = &mut frame["data"];
                match data.get("data_type").and_then(Value::as_str) {
                    Some("file_info") => {
                        self.original_name = data
                            .get("file_name")
                            .and_then(Value::as_str)
                            .map(str::to_string);
                        // 0 is how SnowLuma says "unknown" (a URL without Content-Length, a
                        // cached image without a size): file_complete's totals decide then.
                        let size = data
                            .get("file_size")
                            .and_then(Value::as_u64)
                            .filter(|size| *size > 0);
                        if size.is_some_and(|size| size > self.max_file) {
                            return Err(too_large(self.max_file));
                        }
                        self.expected = size;
                    }
                    Some("file_chunk") => {
                        let index = data.get("index").and_then(Value::as_u64).ok_or_else(|| {
                            bad_frame(format!(
                                "file chunk {} has no index (a whole number)",
                                self.chunks
                            ))
                        })?;
                        if index != self.chunks {
                            return Err(bad_frame(format!(
                                "file chunk {index} arrived where chunk {} was due (a duplicate, missing or out-of-order chunk)",
                                self.chunks
                            )));
                        }
                        let encoded = match data.get_mut("data").map(Value::take) {
                            Some(Value::String(encoded)) => encoded,
                            None => {
                                return Err(bad_frame(format!("file chunk {index} has no data")));
                            }
                            Some(other) => {
                                return Err(bad_frame(format!(
                                    "file chunk {index}'s data is {}, not a base64 string",
                                    crate::outcome::json_kind(&other)
                                )));
                            }
                        };
                        let queue = self.queue.as_mut().ok_or_else(lost_writer)?;
                        if !queue.push(encoded).await {
                            // The writer stopped on an earlier chunk: its failure.
                            self.finish_writes(false).await?;
                            return Err(lost_writer());
                        }
                        self.chunks += 1;
                    }
                    _ => {}
                }
                Ok(true)
            }
        }
    }

    /// Checks the bytes and chunks written against what SnowLuma announced: file_info's size
    /// when it knew one, and file_complete's `total_bytes` and `total_chunks`. With no size in
    /// file_info, `total_bytes` is the only size there is, so it must be present.
    fn check_totals(&self, terminal: &Value) -> Result<(), StreamFailure> {
        let data = &terminal["data"];
        let total_bytes = data.get("total_bytes").and_then(Value::as_u64);
        if self.expected.is_none() && total_bytes.is_none() {
            return Err(bad_frame(
                "SnowLuma announced no size in file_info and no total_bytes in file_complete, so \
                 the download cannot be checked"
                    .to_string(),
            ));
        }
        for (source, size) in [("file_info", self.expected), ("file_complete", total_bytes)] {
            if let Some(size) = size.filter(|size| *size != self.written) {
                return Err(StreamFailure::refused(
                    ErrorKind::SizeMismatch,
                    format!(
                        "SnowLuma announced {size} bytes ({source}) but {} arrived",
                        self.written
                    ),
                    "download again; the partial file was removed",
                ));
            }
        }
        if let Some(chunks) = data
            .get("total_chunks")
            .and_then(Value::as_u64)
            .filter(|chunks| *chunks != self.chunks)
        {
            return Err(StreamFailure::refused(
                ErrorKind::SizeMismatch,
                format!(
                    "SnowLuma announced {chunks} chunks (file_complete) but {} arrived",
                    self.chunks
                ),
                "download again; the partial file was removed",
            ));
        }
        Ok(())
    }
}

fn bad_frame(message: String) -> StreamFailure {
    StreamFailure::refused(
        ErrorKind::BadFrame,
        message,
        "check SnowLuma's logs and download again; the partial file was removed",
    )
}

async fn transfer(
    link: &StreamLink<'_>,
    action: &str,
    params: &Map<String, Value>,
    state: &mut Download,
    progress: &mut Progress,
) -> Result<(), StreamFailure> {
    let mut frames = super::open(link, action, params).await?;
    loop {
        // Only SnowLuma's terminal frame ends a download; a clean end of body before it is
        // `Incomplete`.
        let frame = super::next_frame(&mut frames).await?;
        let more = state.accept(frame).await?;
        progress
            .update(
                state.written() as f64,
                state.expected.filter(|e| *e > 0).map(|e| e as f64),
            )
            .await;
        if !more {
            return Ok(());
        }
    }
}

/// A `.part` file this server created; removed on drop unless committed.
struct PartialFile {
    dir: PathBuf,
    /// The final name's stem and extension.
    stem: String,
    extension: String,
    part: PathBuf,
    file: Option<File>,
}

impl PartialFile {
    /// A new `.part` file named after the remote name's safe characters plus a random suffix,
    /// created exclusively (0600) so an existing file is never overwritten, and locked while
    /// it is written (see [`super::dir::create_part`]).
    fn create(dir: &Path, remote: &str) -> std::io::Result<PartialFile> {
        let (stem, extension) = safe_name(remote);
        for _ in 0..8 {
            let part = dir.join(format!(
                "{stem}-{}{extension}{PART_SUFFIX}",
                random_hex::<4>()?
            ));
            match super::dir::create_part(dir, &part) {
                Ok(file) => {
                    return Ok(PartialFile {
                        dir: dir.to_path_buf(),
                        stem,
                        extension,
                        part,
                        file: Some(file),
                    });
                }
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(error) => return Err(error),
            }
        }
        Err(std::io::Error::other("could not find a free file name"))
    }

    /// fsyncs the data, then gives it its final name without replacing any existing file
    /// (see [`dir::commit_part`]), and fsyncs the directory so the name survives a crash.
    fn commit(mut self) -> std::io::Result<PathBuf> {
        if let Some(file) = self.file.take() {
            file.sync_all()?;
        }
        let mut suffix = self
            .part
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(PART_SUFFIX))
            .and_then(|n| n.strip_prefix(&format!("{}-", self.stem)))
            .and_then(|n| n.strip_suffix(self.extension.as_str()))
            .unwrap_or_default()
            .to_string();
        for _ in 0..8 {
            let target = self
                .dir
                .join(format!("{}-{suffix}{}", self.stem, self.extension));
            match dir::commit_part(&self.dir, &self.part, &target) {
                Ok(()) => {
                    self.part = PathBuf::new();
                    sync_dir(&self.dir);
                    return Ok(target);
                }
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                    suffix = random_hex::<4>()?;
                }
                Err(error) => return Err(error),
            }
        }
        Err(std::io::Error::other("could not find a free file name"))
    }
}

#[cfg(unix)]
fn sync_dir(dir: &Path) {
    if let Ok(handle) = File::open(dir) {
        let _ = handle.sync_all();
    }
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) {}

impl Drop for PartialFile {
    fn drop(&mut self) {
        if !self.part.as_os_str().is_empty() {
            let len = self
                .file
                .take()
                .and_then(|file| file.metadata().ok())
                .map_or(0, |meta| meta.len());
            if dir::remove_part(&self.dir, &self.part, len).is_err() {
                let _ = std::fs::remove_file(&self.part);
            }
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
