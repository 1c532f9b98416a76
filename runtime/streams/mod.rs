//! Stream actions: downloads saved to the MCP host, automatic uploads from it, and generic
//! frame collections. Streams have a connect timeout and a per-read idle timeout instead of
//! the total request timeout, at most `max_streams` run at once, and cancellation reaches
//! every read. Every request carries the call's trace headers.

mod collect;
mod download;
mod frames;
mod progress;
mod upload;

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Map, Value, json};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

pub use progress::Progress;

use crate::catalog::{ActionMeta, StreamKind};
use crate::config::StreamConfig;
use crate::onebot::{CallError, OneBotClient, classify};
use crate::server::Reply;
use crate::trace::TraceContext;

/// What one stream call needs from the MCP request.
pub struct StreamCall<'a> {
    pub trace: &'a TraceContext,
    pub cancel: &'a CancellationToken,
    pub progress: &'a mut Progress,
}

pub struct Streams {
    config: StreamConfig,
    slots: Arc<Semaphore>,
    /// Bytes being written by downloads in flight, counted against the directory quota.
    in_flight: Arc<AtomicU64>,
}

impl Streams {
    pub fn new(config: StreamConfig) -> Self {
        Streams {
            slots: Arc::new(Semaphore::new(config.max_streams)),
            in_flight: Arc::default(),
            config,
        }
    }

    pub fn config(&self) -> &StreamConfig {
        &self.config
    }

    /// Runs one stream action. `input_file` is `execution.input_file`, for automatic upload.
    pub async fn run(
        &self,
        client: &OneBotClient,
        action: &ActionMeta,
        name: &str,
        params: Map<String, Value>,
        input_file: Option<&str>,
        call: StreamCall<'_>,
    ) -> Reply {
        let Ok(_slot) = self.slots.clone().try_acquire_owned() else {
            return Reply::error(
                "busy",
                format!(
                    "{} stream actions are already running (SNOWLUMA_MCP_MAX_STREAMS)",
                    self.config.max_streams
                ),
                "wait for a running transfer to finish, then call again",
            );
        };
        let link = Link {
            client,
            idle: self.config.idle,
            trace: call.trace,
            cancel: call.cancel,
        };
        let mut reply = match (action.stream, input_file) {
            (StreamKind::Upload, Some(path)) => {
                upload::run(&link, &self.config, name, params, path, call.progress).await
            }
            (StreamKind::Download, _) => {
                download::run(&link, self, name, &params, call.progress).await
            }
            _ => collect::run(&link, name, &params, call.progress).await,
        };
        if call.cancel.is_cancelled() {
            return reply;
        }
        if reply.diagnostics.outcome == crate::server::Outcome::Success {
            call.progress.flush().await;
        }
        if let Some(failure) = call.progress.delivery_failure.take() {
            reply
                .diagnostics
                .extra
                .insert("progress_delivery".into(), json!(failure));
        }
        reply
    }

    /// The runtime overview's stream fields.
    pub fn overview(&self) -> Value {
        json!({
            "download_dir": self.config.download_dir,
            "upload_root": self.config.upload_root,
            "upload_enabled": self.config.upload_root.is_some(),
            "max_file_bytes": self.config.max_file_bytes,
            "dir_quota_bytes": self.config.dir_quota_bytes,
            "max_streams": self.config.max_streams,
            "stream_idle_ms": self.config.idle.as_millis() as u64,
        })
    }
}

/// What stream actions return through invoke_action: saved-file metadata for downloads, the
/// completion frame's data for automatic uploads, and a frame collection otherwise.
pub fn result_schema() -> Value {
    json!({
        "oneOf": [
            {
                "title": "saved download",
                "type": "object",
                "properties": {
                    "path": { "type": "string", "description": "the saved file, on the MCP host (in SNOWLUMA_MCP_DOWNLOAD_DIR)" },
                    "size": { "type": "integer", "description": "bytes written" },
                    "sha256": { "type": "string", "description": "sha256 of the bytes written, computed while writing" },
                    "original_name": { "type": ["string", "null"], "description": "the name SnowLuma reported; never used as a path" },
                    "frames": { "type": "integer" },
                    "chunks": { "type": "integer" },
                    "terminal": { "description": "the file_complete frame's data" }
                },
                "required": ["path", "size", "sha256", "frames", "chunks"]
            },
            {
                "title": "automatic upload",
                "type": "object",
                "properties": {
                    "status": { "const": "file_complete" },
                    "file_path": { "type": "string", "description": "the assembled file, on the SnowLuma host; pass it as `file` to send actions" },
                    "file_size": { "type": "integer" },
                    "sha256": { "type": "string" },
                    "stream_id": { "type": "string" }
                },
                "required": ["file_path", "sha256"]
            },
            {
                "title": "frame collection",
                "type": "object",
                "properties": {
                    "frames": { "type": "array", "description": "each frame's data, in order" },
                    "frame_count": { "type": "integer" },
                    "truncated": { "type": "boolean" },
                    "limits": { "type": "object" },
                    "terminal": { "description": "the last frame, whole (status, retcode, data, message)" }
                },
                "required": ["frames", "frame_count", "truncated", "terminal"]
            },
            { "title": "failed stream", "type": "object", "description": "a failed terminal frame, whole" }
        ]
    })
}

/// The connection side of one stream call.
struct Link<'a> {
    client: &'a OneBotClient,
    idle: Duration,
    trace: &'a TraceContext,
    cancel: &'a CancellationToken,
}

/// Why a stream stopped without a terminal frame.
enum StreamStop {
    Call(CallError),
    Idle,
}

impl Link<'_> {
    /// Sends one stream request and waits (up to the idle timeout) for its response head.
    async fn open(
        &self,
        action: &str,
        params: &Map<String, Value>,
    ) -> Result<reqwest::Response, StreamStop> {
        let send = self.client.request(action, params, self.trace).send();
        let response = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => return Err(StreamStop::Call(CallError::Cancelled)),
            sent = tokio::time::timeout(self.idle, send) => match sent {
                Err(_) => return Err(StreamStop::Idle),
                Ok(result) => result.map_err(|e| StreamStop::Call(classify(e)))?,
            },
        };
        let status = response.status().as_u16();
        if status != 200 {
            return Err(StreamStop::Call(CallError::Status(status, None)));
        }
        Ok(response)
    }

    /// The next piece of the body, waiting at most the idle timeout.
    async fn read(&self, response: &mut reqwest::Response) -> Result<Option<Bytes>, StreamStop> {
        tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Err(StreamStop::Call(CallError::Cancelled)),
            chunk = tokio::time::timeout(self.idle, response.chunk()) => match chunk {
                Err(_) => Err(StreamStop::Idle),
                Ok(result) => result.map_err(|e| StreamStop::Call(classify(e))),
            },
        }
    }

    /// Sends a stream request and returns its frames, one by one.
    async fn frames(
        &self,
        action: &str,
        params: &Map<String, Value>,
    ) -> Result<Frames<'_, '_>, Reply> {
        let response = self
            .open(action, params)
            .await
            .map_err(|stop| self.stop_reply(stop))?;
        Ok(Frames {
            link: self,
            response,
            reader: frames::FrameReader::default(),
        })
    }

    fn stop_reply(&self, stop: StreamStop) -> Reply {
        match stop {
            StreamStop::Idle => Reply::error(
                "stream_idle_timeout",
                format!(
                    "SnowLuma sent nothing for {} ms (SNOWLUMA_MCP_STREAM_IDLE_MS)",
                    self.idle.as_millis()
                ),
                "check SnowLuma and the network, or raise SNOWLUMA_MCP_STREAM_IDLE_MS",
            ),
            StreamStop::Call(error) => crate::exec::classify(false, Err(error)),
        }
    }
}

/// The frames of one stream response, read as they arrive.
struct Frames<'a, 'l> {
    link: &'a Link<'l>,
    response: reqwest::Response,
    reader: frames::FrameReader,
}

impl Frames<'_, '_> {
    /// The next frame, or `None` when the body ended cleanly after the last frame (over HTTP
    /// the end of the body ends the request: an upload chunk call answers one `stream` frame).
    async fn next(&mut self) -> Result<Option<Value>, Reply> {
        loop {
            if let Some(frame) = self.reader.next_frame().map_err(frame_error)? {
                return Ok(Some(frame));
            }
            match self.link.read(&mut self.response).await {
                Ok(Some(bytes)) => self.reader.push(&bytes),
                Ok(None) => {
                    self.reader.finish().map_err(frame_error)?;
                    return Ok(None);
                }
                Err(stop) => return Err(self.link.stop_reply(stop)),
            }
        }
    }
}

fn incomplete() -> Reply {
    Reply::error(
        "stream_incomplete",
        "the stream ended without a terminal frame",
        "check SnowLuma's logs; nothing is retried automatically",
    )
}

fn frame_error(error: frames::FrameError) -> Reply {
    Reply::error(
        "bad_frame",
        error.to_string(),
        "check that the endpoint is SnowLuma's OneBot HTTP server",
    )
}
