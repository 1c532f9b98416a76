//! Automatic upload (`execution.input_file`): a file inside SNOWLUMA_MCP_UPLOAD_ROOT is sent
//! to SnowLuma as `upload_file_stream` chunk calls, each well under SnowLuma's 2 MiB body cap,
//! then one completion call carrying the sha256. A failure or cancellation after the first
//! chunk sends a `reset` so SnowLuma drops the partial upload.

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use tokio::io::AsyncReadExt;

use super::{Progress, StreamFailure, StreamOutcome, StreamResult};
use crate::config::StreamConfig;
use crate::ids::{hex, random_hex};
use crate::onebot::StreamLink;
use crate::onebot::frames::{self, FrameKind};
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
    let (path, size) = contained(root, input_file)?;
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
    let stream_id = format!("snowluma-mcp-{}", random_hex::<12>());
    let filename = params
        .get("filename")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| path.file_name().map(|n| n.to_string_lossy().to_string()))
        .unwrap_or_else(|| "upload".into());
    let mut upload = Upload {
        link,
        action,
        stream_id: &stream_id,
        base: params,
        filename,
        sent_any: false,
    };
    let outcome = upload.send_file(&path, size, progress).await;
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

/// Resolves `input_file` inside `root`: no `..`, symlinks resolved before the containment
/// check, regular files only.
fn contained(root: &Path, input_file: &str) -> Result<(PathBuf, u64), StreamFailure> {
    let refuse = |message: String| {
        StreamFailure::refused(
            ErrorKind::InputFile,
            message,
            "pass a regular file inside SNOWLUMA_MCP_UPLOAD_ROOT (a path on the MCP host); nothing was sent",
        )
    };
    let requested = Path::new(input_file);
    if requested
        .components()
        .any(|c| matches!(c, Component::ParentDir))
    {
        return Err(refuse("execution.input_file must not contain `..`".into()));
    }
    let root = root
        .canonicalize()
        .map_err(|e| refuse(format!("SNOWLUMA_MCP_UPLOAD_ROOT cannot be resolved: {e}")))?;
    let joined = if requested.is_absolute() {
        requested.to_path_buf()
    } else {
        root.join(requested)
    };
    let resolved = joined
        .canonicalize()
        .map_err(|e| refuse(format!("execution.input_file cannot be resolved: {e}")))?;
    if !resolved.starts_with(&root) {
        return Err(refuse(
            "execution.input_file resolves outside SNOWLUMA_MCP_UPLOAD_ROOT".into(),
        ));
    }
    let meta = std::fs::metadata(&resolved)
        .map_err(|e| refuse(format!("execution.input_file cannot be read: {e}")))?;
    if !meta.is_file() {
        return Err(refuse("execution.input_file is not a regular file".into()));
    }
    Ok((resolved, meta.len()))
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
    async fn send_file(
        &mut self,
        path: &Path,
        size: u64,
        progress: &mut Progress,
    ) -> StreamOutcome {
        let mut file = tokio::fs::File::open(path).await.map_err(|e| {
            StreamFailure::refused(
                ErrorKind::InputFile,
                format!("cannot open execution.input_file: {e}"),
                "check the file's permissions",
            )
        })?;
        let total_chunks = size.div_ceil(CHUNK_BYTES as u64).max(1);
        let mut hasher = Sha256::new();
        let mut buffer = vec![0u8; CHUNK_BYTES];
        let mut acknowledged = 0u64;
        for index in 0..total_chunks {
            let length = read_full(&mut file, &mut buffer).await.map_err(|e| {
                StreamFailure::refused(
                    ErrorKind::InputFile,
                    format!("cannot read execution.input_file: {e}"),
                    "check the file did not change during the upload",
                )
            })?;
            hasher.update(&buffer[..length]);
            let mut params = self.base.clone();
            params.insert("stream_id".into(), json!(self.stream_id));
            params.insert(
                "chunk_data".into(),
                json!(base64::engine::general_purpose::STANDARD.encode(&buffer[..length])),
            );
            params.insert("chunk_index".into(), json!(index));
            params.insert("total_chunks".into(), json!(total_chunks));
            params.insert("file_size".into(), json!(size));
            params.insert("filename".into(), json!(self.filename));
            let frame = self.call(params).await?;
            if frames::kind(&frame) == FrameKind::Failed {
                return Ok(StreamResult::remote_failure(frame));
            }
            acknowledged += length as u64;
            progress
                .update(acknowledged as f64, Some(size as f64))
                .await;
        }
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
        self.sent_any = true;
        let mut frames = super::open(self.link, self.action, &params).await?;
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

async fn read_full(file: &mut tokio::fs::File, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match file.read(&mut buffer[filled..]).await? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}
