//! Stream actions: downloads saved to the MCP host, automatic uploads from it, and generic
//! frame collections. Streams have a connect timeout and a per-read idle timeout instead of
//! the total request timeout, at most `max_streams` run at once, and cancellation reaches
//! every read. Every request carries the call's trace headers.
//!
//! A stream ends in a [`StreamResult`]: completed, or ended by SnowLuma's error frame (a
//! business failure, which is data like any failed envelope). Anything else is a
//! [`StreamFailure`]. Turning either into a tool result is `exec`'s job.

mod chunk_queue;
mod collect;
mod contain;
mod dir;
mod download;
mod progress;
mod upload;

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value, json};
use tokio::sync::Semaphore;

pub use dir::{LOCK_FILE, PART_SUFFIX, prepare_download_dir};
pub use progress::{Progress, ProgressSink};

use crate::catalog::{ActionMeta, StreamKind};
use crate::config::StreamConfig;
use crate::config::principals::{Share, principal_of};
use crate::onebot::{FrameStream, OneBotClient, StreamLink, StreamStop};
use crate::outcome::ErrorKind;
use crate::trace::TraceContext;
use tokio_util::sync::CancellationToken;

/// How a stream that reached its end ended.
#[derive(Debug)]
pub enum StreamEnd {
    /// Saved-file metadata, the upload's completion data, or a frame collection.
    Completed(Value),
    /// SnowLuma's terminal error frame, whole.
    RemoteFailure(Value),
}

/// A finished stream and the details worth reporting beside it.
#[derive(Debug)]
pub struct StreamResult {
    pub end: StreamEnd,
    pub details: Map<String, Value>,
}

/// Why a stream produced no result.
#[derive(Debug)]
pub enum StreamError {
    /// The link stopped: connection, idle timeout or malformed frames.
    Stop(StreamStop),
    /// The body ended without a terminal frame.
    Incomplete,
    /// A local check or resource failed, or SnowLuma's frames broke the protocol.
    Refused {
        kind: ErrorKind,
        message: String,
        next_step: String,
    },
}

/// A [`StreamError`] with details (removed partial file, reset sent …).
#[derive(Debug)]
pub struct StreamFailure {
    pub error: StreamError,
    /// Boxed to keep `Result<_, StreamFailure>` small.
    pub details: Box<Map<String, Value>>,
}

impl StreamFailure {
    pub fn refused(kind: ErrorKind, message: impl Into<String>, next: impl Into<String>) -> Self {
        StreamError::Refused {
            kind,
            message: message.into(),
            next_step: next.into(),
        }
        .into()
    }

    pub fn with_detail(mut self, key: &str, value: Value) -> Self {
        self.details.insert(key.into(), value);
        self
    }
}

impl From<StreamError> for StreamFailure {
    fn from(error: StreamError) -> Self {
        StreamFailure {
            error,
            details: Box::default(),
        }
    }
}

impl From<StreamStop> for StreamFailure {
    fn from(stop: StreamStop) -> Self {
        StreamError::Stop(stop).into()
    }
}

pub type StreamOutcome = Result<StreamResult, StreamFailure>;

impl StreamResult {
    fn completed(value: Value) -> Self {
        StreamResult {
            end: StreamEnd::Completed(value),
            details: Map::new(),
        }
    }

    fn remote_failure(frame: Value) -> Self {
        StreamResult {
            end: StreamEnd::RemoteFailure(frame),
            details: Map::new(),
        }
    }

    fn with_detail(mut self, key: &str, value: Value) -> Self {
        self.details.insert(key.into(), value);
        self
    }
}

/// One of the `max_streams` transfer slots, held while a stream call runs (dropping it frees
/// the slot, and its principal's count).
pub struct StreamSlot {
    _permit: tokio::sync::OwnedSemaphorePermit,
    _holder: Holder,
}

/// How many slots each principal holds, for its share (`SNOWLUMA_MCP_PRINCIPAL_SHARE_PERCENT`),
/// and a signal for background work waiting until its principal is under its share again.
type Holders = Arc<HolderCounts>;

#[derive(Default)]
struct HolderCounts {
    counts: std::sync::Mutex<std::collections::HashMap<String, usize>>,
    released: tokio::sync::Notify,
}

/// One slot counted for its principal until dropped.
struct Holder {
    holders: Holders,
    principal: String,
}

impl Drop for Holder {
    fn drop(&mut self) {
        {
            let mut holders = self
                .holders
                .counts
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if let Some(count) = holders.get_mut(&self.principal) {
                *count -= 1;
                if *count == 0 {
                    holders.remove(&self.principal);
                }
            }
        }
        // The slot's permit is already back (it is dropped first): waiters look again.
        self.holders.released.notify_waiters();
    }
}

pub struct Streams {
    config: StreamConfig,
    slots: Arc<Semaphore>,
    holders: Holders,
    /// Each principal's share of the slots, with two or more principals.
    share: std::sync::OnceLock<Share>,
    /// Test-only slow-disk seam: each download write first sleeps this long (on the blocking
    /// pool). Read from SNOWLUMA_MCP_TEST_WRITE_DELAY_MS only in builds with the `test-knobs`
    /// feature (the test suite's); always `None` in the binary users get.
    write_delay: Option<Duration>,
}

/// The test-only variable behind [`Streams`]' slow-disk seam (feature `test-knobs`).
pub const TEST_WRITE_DELAY_VAR: &str = "SNOWLUMA_MCP_TEST_WRITE_DELAY_MS";

/// [`TEST_WRITE_DELAY_VAR`], in builds with the `test-knobs` feature.
fn test_write_delay() -> Option<Duration> {
    if !cfg!(feature = "test-knobs") {
        return None;
    }
    std::env::var(TEST_WRITE_DELAY_VAR)
        .ok()
        .and_then(|ms| ms.parse::<u64>().ok())
        .filter(|ms| *ms > 0)
        .map(|ms| Duration::from_millis(ms.min(60_000)))
}

impl Streams {
    pub fn new(config: StreamConfig) -> Self {
        let write_delay = test_write_delay();
        Streams {
            slots: Arc::new(Semaphore::new(config.max_streams)),
            holders: Holders::default(),
            share: std::sync::OnceLock::new(),
            write_delay,
            config,
        }
    }

    pub fn config(&self) -> &StreamConfig {
        &self.config
    }

    /// Limits each principal to its share of the slots when it would otherwise answer
    /// `busy`. Set once, at start-up, when two or more principals can use the server.
    pub fn set_principal_share(&self, share: Share) {
        let _ = self.share.set(share);
    }

    /// `permit` as `principal`'s slot.
    fn slot(&self, permit: tokio::sync::OwnedSemaphorePermit, principal: &str) -> StreamSlot {
        let principal = principal_of(principal).to_string();
        *self
            .holders
            .counts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(principal.clone())
            .or_default() += 1;
        StreamSlot {
            _permit: permit,
            _holder: Holder {
                holders: self.holders.clone(),
                principal,
            },
        }
    }

    /// The share `principal` already holds in full, if one is in force.
    fn share_used(&self, principal: &str) -> Option<Share> {
        let share = self.share.get().copied()?;
        let held = self
            .holders
            .counts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(principal_of(principal))
            .copied()
            .unwrap_or(0);
        (held >= share.of(self.config.max_streams)).then_some(share)
    }

    /// The link for one stream call, with this server's idle timeout.
    pub fn link<'a>(
        &self,
        client: &'a OneBotClient,
        trace: &'a TraceContext,
        cancel: &'a CancellationToken,
    ) -> StreamLink<'a> {
        StreamLink {
            client,
            idle: self.config.idle,
            trace,
            cancel,
        }
    }

    /// Waits for a transfer slot, as background work does instead of answering `busy`: a
    /// free slot within `principal`'s share, when one is in force. `on_wait` runs once if
    /// there is none at once. `None` when `cancel` fires first.
    pub async fn wait_slot(
        &self,
        principal: &str,
        cancel: &CancellationToken,
        on_wait: impl FnOnce(&str),
    ) -> Option<StreamSlot> {
        let mut on_wait = Some(on_wait);
        loop {
            // Created before looking, so a slot freed in between still wakes this waiter.
            let released = self.holders.released.notified();
            let share = self.share_used(principal);
            if share.is_none()
                && let Ok(permit) = self.slots.clone().try_acquire_owned()
            {
                return Some(self.slot(permit, principal));
            }
            if let Some(on_wait) = on_wait.take() {
                on_wait(&match share {
                    Some(share) => format!(
                        "waiting for a transfer slot: this client already runs {} of the {} \
                         stream actions that may run at once (SNOWLUMA_MCP_MAX_STREAMS); it \
                         starts when one of them finishes",
                        share.describe(self.config.max_streams),
                        self.config.max_streams
                    ),
                    None => format!(
                        "waiting for a transfer slot: {} stream actions are running \
                         (SNOWLUMA_MCP_MAX_STREAMS); it starts when one finishes",
                        self.config.max_streams
                    ),
                });
            }
            tokio::select! {
                () = released => {}
                () = cancel.cancelled() => return None,
            }
        }
    }

    /// Runs one stream action over `link` (see [`Streams::link`]). `input_file` is
    /// `execution.input_file`, for automatic upload. `slot` is one the caller already waited
    /// for (see [`Streams::wait_slot`]); without one, the call takes a free slot or answers
    /// `busy` at once (also when `principal` holds its share of the slots).
    #[allow(clippy::too_many_arguments)]
    pub async fn run(
        &self,
        link: StreamLink<'_>,
        action: &ActionMeta,
        name: &str,
        params: Map<String, Value>,
        input_file: Option<&str>,
        progress: &mut Progress,
        slot: Option<StreamSlot>,
        principal: &str,
    ) -> StreamOutcome {
        if slot.is_none()
            && let Some(share) = self.share_used(principal)
        {
            return Err(StreamFailure::refused(
                ErrorKind::Busy,
                format!(
                    "this client already runs {} of the {} stream actions that may run at once \
                     (SNOWLUMA_MCP_MAX_STREAMS)",
                    share.describe(self.config.max_streams),
                    self.config.max_streams
                ),
                "wait for one of your transfers to finish, then call again",
            ));
        }
        let slot = slot.or_else(|| {
            let permit = self.slots.clone().try_acquire_owned().ok()?;
            Some(self.slot(permit, principal))
        });
        let Some(_slot) = slot else {
            return Err(StreamFailure::refused(
                ErrorKind::Busy,
                format!(
                    "{} stream actions are already running (SNOWLUMA_MCP_MAX_STREAMS)",
                    self.config.max_streams
                ),
                "wait for a running transfer to finish, then call again",
            ));
        };
        // Process shutdown (SIGTERM/SIGINT) cancels this call like the client's own
        // cancellation does, and main waits for the clean-up (reset, partial file removal)
        // while this guard is held.
        let Some(_running) = self.config.shutdown.enter().await else {
            return Err(StreamFailure::refused(
                ErrorKind::Cancelled,
                "the server is shutting down; nothing was sent to SnowLuma",
                "call again once the server has restarted",
            ));
        };
        let cancel = self.config.shutdown.token.child_token();
        let call_cancel = link.cancel;
        let link = StreamLink {
            cancel: &cancel,
            ..link
        };
        let work = async {
            match (action.stream, input_file) {
                (StreamKind::Upload, Some(path)) => {
                    upload::run(&link, &self.config, name, params, path, progress).await
                }
                (StreamKind::Download, _) => {
                    download::run(&link, self, name, &params, progress).await
                }
                _ => {
                    let upload_chunk_call = action.stream == StreamKind::Upload;
                    collect::run(&link, name, &params, upload_chunk_call, progress).await
                }
            }
        };
        let forward = async {
            call_cancel.cancelled().await;
            cancel.cancel();
            std::future::pending::<StreamOutcome>().await
        };
        let mut outcome = tokio::select! {
            outcome = work => outcome,
            outcome = forward => outcome,
        };
        if link.cancel.is_cancelled() {
            return outcome;
        }
        if matches!(
            &outcome,
            Ok(StreamResult {
                end: StreamEnd::Completed(_),
                ..
            })
        ) {
            progress.flush().await;
        }
        if let Some(failure) = progress.delivery_failure.take() {
            let details = match &mut outcome {
                Ok(result) => &mut result.details,
                Err(failure) => &mut *failure.details,
            };
            details.insert("progress_delivery".into(), json!(failure));
        }
        outcome
    }

    /// The runtime overview's stream fields.
    pub fn overview(&self) -> StreamOverview {
        StreamOverview {
            download_dir: self.config.download_dir.to_string_lossy().into_owned(),
            upload_root: self
                .config
                .upload_root
                .as_ref()
                .map(|root| root.to_string_lossy().into_owned()),
            upload_enabled: self.config.upload_root.is_some(),
            max_file_bytes: self.config.max_file_bytes,
            dir_quota_bytes: self.config.dir_quota_bytes,
            max_streams: self.config.max_streams,
            stream_idle_ms: self.config.idle.as_millis() as u64,
        }
    }
}

/// Where stream actions put and take files (on the MCP host), and their limits.
#[derive(Debug, Serialize, JsonSchema)]
pub struct StreamOverview {
    /// Where downloads are saved.
    pub download_dir: String,
    /// The only directory execution.input_file may read from; null when upload is off.
    pub upload_root: Option<String>,
    pub upload_enabled: bool,
    pub max_file_bytes: u64,
    pub dir_quota_bytes: u64,
    pub max_streams: usize,
    pub stream_idle_ms: u64,
}

/// What stream actions return through invoke_action when they complete: saved-file metadata
/// for downloads, the completion frame's data for automatic uploads, and a frame collection
/// otherwise. Each branch has a required property the others lack, so a result matches
/// exactly one of them (and none of them matches a OneBot envelope, which needs `retcode`).
pub fn completed_schemas() -> [Value; 3] {
    [
        json!({
            "title": "saved download",
            "type": "object",
            "properties": {
                "path": { "type": "string", "description": "the saved file, on the MCP host (in SNOWLUMA_MCP_DOWNLOAD_DIR)" },
                "size": { "type": "integer", "minimum": 0, "description": "bytes written" },
                "sha256": { "type": "string", "pattern": "^[0-9a-f]{64}$", "description": "sha256 of the bytes written, computed while writing" },
                "original_name": { "type": ["string", "null"], "description": "the name SnowLuma reported; never used as a path" },
                "frames": { "type": "integer", "minimum": 0 },
                "chunks": { "type": "integer", "minimum": 0 },
                "terminal": { "description": "the file_complete frame's data" }
            },
            "required": ["path", "size", "sha256", "frames", "chunks"],
            "not": { "required": ["retcode"] }
        }),
        json!({
            "title": "automatic upload",
            "type": "object",
            "properties": {
                "status": { "const": "file_complete" },
                "file_path": { "type": "string", "description": "the assembled file, on the SnowLuma host; pass it as `file` to send actions" },
                "file_size": { "type": "integer" },
                "sha256": { "type": "string" },
                "stream_id": { "type": "string" }
            },
            "required": ["status", "file_path", "sha256"],
            "not": { "required": ["retcode"] }
        }),
        json!({
            "title": "frame collection",
            "type": "object",
            "properties": {
                "frames": { "type": "array", "description": "each frame's data, in order" },
                "frame_count": { "type": "integer", "minimum": 0 },
                "truncated": { "type": "boolean" },
                "limits": { "type": "object" },
                "terminal": { "type": "object", "description": "the terminal frame, whole (status, retcode, data, message)" }
            },
            "required": ["frames", "frame_count", "truncated", "terminal"],
            "not": { "required": ["retcode"] }
        }),
    ]
}

/// Opens a stream request, mapping a stop into a failure.
async fn open<'a>(
    link: &StreamLink<'a>,
    action: &str,
    params: &Map<String, Value>,
) -> Result<FrameStream<'a>, StreamFailure> {
    Ok(link.open(action, params).await?)
}

/// A frame whose `data.type` SnowLuma never sends (or none at all): the stream is broken, and
/// `cleanup` says what was undone.
fn unexpected_frame(frame: &Value, cleanup: &str) -> StreamFailure {
    StreamFailure::refused(
        ErrorKind::BadFrame,
        format!(
            "SnowLuma sent a frame with {}, where a stream frame says stream, response or error",
            crate::onebot::frames::describe_type(frame)
        ),
        format!("check that the endpoint is SnowLuma's OneBot HTTP server; {cleanup}"),
    )
}

/// The next frame of a stream that must not end yet.
async fn next_frame(frames: &mut FrameStream<'_>) -> Result<Value, StreamFailure> {
    frames
        .next()
        .await?
        .ok_or_else(|| StreamError::Incomplete.into())
}
