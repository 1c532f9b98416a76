//! Automatic upload (`execution.input_file`): a file inside SNOWLUMA_MCP_UPLOAD_ROOT is sent
//! to SnowLuma as `upload_file_stream` chunk calls, each well under SnowLuma's 2 MiB body cap,
//! then one completion call carrying the sha256. A failure or cancellation after the first
//! chunk sends a `reset` so SnowLuma drops the partial upload.

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::contain::{self, Refusal};
use super::{Progress, StreamError, StreamFailure, StreamOutcome, StreamResult};
use crate::config::StreamConfig;
use crate::ids::{hex, random_hex};
use crate::onebot::frames::{self, FrameKind};
use crate::onebot::{CallError, StreamLink, StreamStop};
use crate::outcome::ErrorKind;

/// Raw bytes per chunk: 768 KiB becomes 1 MiB of base64, well under the 2 MiB body cap.
pub const CHUNK_BYTES: usize = 768 * 1024;
/// How long the clean-up reset may take after a failure or cancellation.
const RESET_WAIT: Duration = Duration::from_secs(5);

pub async fn run(
    link: &StreamLink<'_>,
    config: &StreamConfig,
    action: &str,
    params: Map<String, Value>,
    input_file: &str,
    progress: &mut Progress,
) -> StreamOutcome {
    let Some(root) = &config.upload_root else {
        return Err(StreamFailure::refused(
            ErrorKind::UploadDisabled,
            "automatic upload is disabled: SNOWLUMA_MCP_UPLOAD_ROOT is not set",
            "set SNOWLUMA_MCP_UPLOAD_ROOT to the directory whose files may be uploaded, or send chunk calls yourself",
        ));
    };
    let (file, size) = contained(root, input_file).await?;
    if size > config.max_file_bytes {
        return Err(StreamFailure::refused(
            ErrorKind::FileTooLarge,
            format!(
                "the file has {size} bytes, more than SNOWLUMA_MCP_MAX_FILE_BYTES ({})",
                config.max_file_bytes
            ),
            "raise SNOWLUMA_MCP_MAX_FILE_BYTES or upload a smaller file; nothing was sent",
        ));
    }
    let stream_id = match random_hex::<12>() {
        Ok(random) => format!("snowluma-mcp-{random}"),
        Err(error) => {
            return Err(StreamFailure::refused(
                ErrorKind::RandomUnavailable,
                error.to_string(),
                crate::ids::RandomUnavailable::NEXT_STEP,
            ));
        }
    };
    let filename = params
        .get("filename")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| {
            Path::new(input_file)
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
        })
        .unwrap_or_else(|| "upload".into());
    let mut upload = Upload {
        link,
        action,
        stream_id: &stream_id,
        base: params,
        filename,
        sent_any: false,
    };
    let outcome = upload.send_file(file, size, progress).await;
    let failed_remotely = matches!(
        &outcome,
        Ok(StreamResult {
            end: super::StreamEnd::RemoteFailure(_),
            ..
        })
    );
    match outcome {
        Err(failure) if upload.sent_any => Err(failure.with_detail("reset", upload.reset().await)),
        Ok(result) if failed_remotely => Ok(result.with_detail("reset", upload.reset().await)),
        other => other,
    }
}

/// Opens `input_file` beneath `root`; every unusable path gets the same refusal.
async fn contained(root: &Path, input_file: &str) -> Result<(File, u64), StreamFailure> {
    let (root, input) = (root.to_path_buf(), input_file.to_string());
    let opened = tokio::task::spawn_blocking(move || contain::open_beneath(&root, &input))
        .await
        .unwrap_or(Err(Refusal::NotUsable));
    opened.map_err(|refusal| match refusal {
        Refusal::NotUsable => StreamFailure::refused(
            ErrorKind::InputFile,
            contain::REFUSAL,
            "pass a regular file inside SNOWLUMA_MCP_UPLOAD_ROOT (a path on the MCP host); nothing was sent",
        ),
        Refusal::Unsupported => StreamFailure::refused(
            ErrorKind::UploadDisabled,
            "automatic upload needs a POSIX host (it opens files beneath the root without following symlinks)",
            "send upload_file_stream chunk calls yourself; nothing was sent",
        ),
    })
}

struct Upload<'a, 'l> {
    link: &'a StreamLink<'l>,
    action: &'a str,
    stream_id: &'a str,
    /// The caller's params (e.g. file_retention), sent with every call.
    base: Map<String, Value>,
    filename: String,
    sent_any: bool,
}

impl Upload<'_, '_> {
    /// Sends exactly `size` bytes of the opened file (its size when it was opened): a file
    /// that grows meanwhile is cut at that size, one that shrinks fails the upload. Reading,
    /// hashing and base64 run on the blocking pool.
    async fn send_file(&mut self, file: File, size: u64, progress: &mut Progress) -> StreamOutcome {
        let total_chunks = size.div_ceil(CHUNK_BYTES as u64).max(1);
        let mut reader = Some((file, Sha256::new()));
        let mut acknowledged = 0u64;
        for index in 0..total_chunks {
            let want = (size - acknowledged).min(CHUNK_BYTES as u64) as usize;
            let (file, hasher) = reader.take().ok_or_else(unreadable)?;
            let (file, hasher, encoded) =
                tokio::task::spawn_blocking(move || read_chunk(file, hasher, want))
                    .await
                    .map_err(|_| unreadable())??;
            reader = Some((file, hasher));
            let mut params = self.base.clone();
            params.insert("stream_id".into(), json!(self.stream_id));
            params.insert("chunk_data".into(), json!(encoded));
            params.insert("chunk_index".into(), json!(index));
            params.insert("total_chunks".into(), json!(total_chunks));
            params.insert("file_size".into(), json!(size));
            params.insert("filename".into(), json!(self.filename));
            let frame = self.call(params).await?;
            match frames::kind(&frame) {
                FrameKind::Failed => return Ok(StreamResult::remote_failure(frame)),
                FrameKind::Unexpected => {
                    return Err(super::unexpected_frame(
                        &frame,
                        "the partial upload was reset",
                    ));
                }
                FrameKind::Intermediate | FrameKind::Complete => {}
            }
            acknowledged += want as u64;
            progress
                .update(acknowledged as f64, Some(size as f64))
                .await;
        }
        let (_, hasher) = reader.ok_or_else(unreadable)?;
        let sha256 = hex(&hasher.finalize());
        let mut params = self.base.clone();
        params.insert("stream_id".into(), json!(self.stream_id));
        params.insert("is_complete".into(), json!(true));
        params.insert("expected_sha256".into(), json!(sha256));
        params.insert("filename".into(), json!(self.filename));
        let frame = self.call(params).await?;
        match frames::kind(&frame) {
            FrameKind::Complete => {}
            FrameKind::Failed => return Ok(StreamResult::remote_failure(frame)),
            FrameKind::Intermediate => {
                return Err(StreamFailure::refused(
                    ErrorKind::BadFrame,
                    "SnowLuma answered the completion call with an intermediate frame, not file_complete",
                    "check SnowLuma's logs; the partial upload was reset",
                ));
            }
            FrameKind::Unexpected => {
                return Err(super::unexpected_frame(
                    &frame,
                    "the partial upload was reset",
                ));
            }
        }
        let data = frame.get("data").cloned().unwrap_or(Value::Null);
        if data
            .get("sha256")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.eq_ignore_ascii_case(&sha256))
        {
            return Err(StreamFailure::refused(
                ErrorKind::Sha256Mismatch,
                format!(
                    "SnowLuma assembled a file whose sha256 differs from the local file ({sha256})"
                ),
                "upload again; the partial upload was reset",
            ));
        }
        Ok(StreamResult::completed(data)
            .with_detail("stream_id", json!(self.stream_id))
            .with_detail("chunks", json!(total_chunks))
            .with_detail("local_sha256", json!(sha256)))
    }

    /// One upload call: one frame back.
    async fn call(&mut self, params: Map<String, Value>) -> Result<Value, StreamFailure> {
        let opened = super::open(self.link, self.action, &params).await;
        // A connection that could not be made sent nothing, so it alone leaves nothing to reset.
        let nothing_sent = matches!(
            &opened,
            Err(StreamFailure {
                error: StreamError::Stop(StreamStop::Call(
                    CallError::Connect(_) | CallError::Tls(_) | CallError::BodyTooLarge(_)
                )),
                ..
            })
        );
        self.sent_any |= !nothing_sent;
        let mut frames = opened?;
        super::next_frame(&mut frames).await
    }

    /// Asks SnowLuma to drop the partial upload; its error frame is the expected answer.
    async fn reset(&self) -> Value {
        let mut params = Map::new();
        params.insert("stream_id".into(), json!(self.stream_id));
        params.insert("reset".into(), json!(true));
        // The call's own cancellation must not stop the clean-up, so it gets a fresh token.
        let cancel = tokio_util::sync::CancellationToken::new();
        let link = StreamLink {
            idle: RESET_WAIT,
            cancel: &cancel,
            ..*self.link
        };
        let exchange = async {
            let mut frames = link.open(self.action, &params).await.ok()?;
            frames.next().await.ok().flatten()
        };
        match tokio::time::timeout(RESET_WAIT, exchange).await {
            Ok(Some(frame)) => json!({ "sent": true, "answer": frames::reason(&frame) }),
            _ => json!({ "sent": true, "answer": null }),
        }
    }
}

fn unreadable() -> StreamFailure {
    StreamFailure::refused(
        ErrorKind::InputFile,
        "cannot read execution.input_file",
        "check the file did not shrink or change during the upload",
    )
}

/// Reads exactly `want` bytes, hashes them and returns them in base64. Blocking.
fn read_chunk(
    mut file: File,
    mut hasher: Sha256,
    want: usize,
) -> Result<(File, Sha256, String), StreamFailure> {
    let mut buffer = vec![0u8; want];
    file.read_exact(&mut buffer).map_err(|e| {
        StreamFailure::refused(
            ErrorKind::InputFile,
            format!("cannot read execution.input_file: {e}"),
            "check the file did not shrink or change during the upload",
        )
    })?;
    hasher.update(&buffer);
    let encoded = base64_simd::STANDARD.encode_to_string(&buffer);
    Ok((file, hasher, encoded))
}
