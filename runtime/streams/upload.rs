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

use super::frames::{self, FrameKind};
use super::{Link, Progress};
use crate::config::StreamConfig;
use crate::ids::{hex, random_hex};
use crate::server::{Outcome, Reply};

/// Raw bytes per chunk: 768 KiB becomes 1 MiB of base64, well under the 2 MiB body cap.
pub const CHUNK_BYTES: usize = 768 * 1024;
/// How long the clean-up reset may take after a failure or cancellation.
const RESET_WAIT: Duration = Duration::from_secs(5);

pub async fn run(
    link: &Link<'_>,
    config: &StreamConfig,
    action: &str,
    params: Map<String, Value>,
    input_file: &str,
    progress: &mut Progress,
) -> Reply {
    let Some(root) = &config.upload_root else {
        return Reply::error(
            "upload_disabled",
            "automatic upload is disabled: SNOWLUMA_MCP_UPLOAD_ROOT is not set",
            "set SNOWLUMA_MCP_UPLOAD_ROOT to the directory whose files may be uploaded, or send chunk calls yourself",
        );
    };
    let (path, size) = match contained(root, input_file) {
        Ok(found) => found,
        Err(reply) => return reply,
    };
    if size > config.max_file_bytes {
        return Reply::error(
            "file_too_large",
            format!(
                "the file has {size} bytes, more than SNOWLUMA_MCP_MAX_FILE_BYTES ({})",
                config.max_file_bytes
            ),
            "raise SNOWLUMA_MCP_MAX_FILE_BYTES or upload a smaller file; nothing was sent",
        );
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
    let result = upload.send_file(&path, size, progress).await;
    match result {
        Ok(reply) => reply,
        Err(mut reply) => {
            if upload.sent_any {
                let reset = upload.reset().await;
                reply.diagnostics.extra.insert("reset".into(), reset);
            }
            reply
        }
    }
}

/// Resolves `input_file` inside `root`: no `..`, symlinks resolved before the containment
/// check, regular files only.
fn contained(root: &Path, input_file: &str) -> Result<(PathBuf, u64), Reply> {
    let refuse = |message: String| {
        Reply::error(
            "input_file",
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
    link: &'a Link<'l>,
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
    ) -> Result<Reply, Reply> {
        let mut file = tokio::fs::File::open(path).await.map_err(|e| {
            Reply::error(
                "input_file",
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
                Reply::error(
                    "input_file",
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
                return Err(failed_frame(frame));
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
        if frames::kind(&frame) != FrameKind::Complete {
            return Err(failed_frame(frame));
        }
        let data = frame.get("data").cloned().unwrap_or(Value::Null);
        if data
            .get("sha256")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.eq_ignore_ascii_case(&sha256))
        {
            return Err(Reply::error(
                "sha256_mismatch",
                format!(
                    "SnowLuma assembled a file whose sha256 differs from the local file ({sha256})"
                ),
                "upload again; the partial upload was reset",
            ));
        }
        let mut reply = Reply::ok(data);
        reply
            .diagnostics
            .extra
            .insert("stream_id".into(), json!(self.stream_id));
        reply
            .diagnostics
            .extra
            .insert("chunks".into(), json!(total_chunks));
        reply
            .diagnostics
            .extra
            .insert("local_sha256".into(), json!(sha256));
        Ok(reply)
    }

    /// One upload call: one frame back.
    async fn call(&mut self, params: Map<String, Value>) -> Result<Value, Reply> {
        self.sent_any = true;
        self.link
            .frames(self.action, &params)
            .await?
            .next()
            .await?
            .ok_or_else(super::incomplete)
    }

    /// Asks SnowLuma to drop the partial upload; its error frame is the expected answer.
    async fn reset(&self) -> Value {
        let mut params = Map::new();
        params.insert("stream_id".into(), json!(self.stream_id));
        params.insert("reset".into(), json!(true));
        // The call's own cancellation must not stop the clean-up, so it gets a fresh token.
        let cancel = tokio_util::sync::CancellationToken::new();
        let link = Link {
            client: self.link.client,
            idle: RESET_WAIT,
            trace: self.link.trace,
            cancel: &cancel,
        };
        let exchange = async {
            link.frames(self.action, &params)
                .await
                .ok()?
                .next()
                .await
                .ok()
                .flatten()
        };
        match tokio::time::timeout(RESET_WAIT, exchange).await {
            Ok(Some(frame)) => json!({ "sent": true, "answer": frames::reason(&frame) }),
            _ => json!({ "sent": true, "answer": null }),
        }
    }
}

fn failed_frame(frame: Value) -> Reply {
    let reason = frames::reason(&frame);
    let mut reply = Reply::error(
        "stream_failed",
        format!("SnowLuma refused the upload: {reason}"),
        "read the reason; the partial upload was reset",
    );
    reply.diagnostics.outcome = Outcome::Failed;
    reply.diagnostics.extra.insert("frame".into(), frame);
    reply
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
