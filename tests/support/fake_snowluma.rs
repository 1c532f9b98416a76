//! A fake SnowLuma 1.11.1 OneBot HTTP adapter for tests and benchmarks.
//!
//! Include it with `#[path = "support/fake_snowluma.rs"] mod fake_snowluma;`.
//! It serves on 127.0.0.1 from its own thread and runtime, so it keeps
//! answering while a test blocks or uses a current-thread runtime.
//! Wire behaviour follows `shared/reference/snowluma-onebot-protocol.md`
//! sections a and b; action metadata comes from `generated/catalog.json`.
//! Nothing touches the filesystem: uploads and downloads live in memory.
//!
//! It is as unkind as SnowLuma 1.11.1 (`packages/onebot/src/actions/stream-download.ts`,
//! `streaming.ts`), by default or as a named [`Fault`]:
//!
//! - a URL body without Content-Length (`add_url_file(.., false)`) or a cached image whose
//!   cache entry has no size (`add_cached_image`): `file_info.file_size` is 0, every chunk's
//!   `progress` is 0, and only file_complete's `total_bytes` gives the size;
//! - URL and cached-media bodies arrive in chunks as large as the network delivers them
//!   (cycling 16 KiB, 1 byte, 1460 bytes, 64 KiB …), whatever `chunk_size` asks for;
//! - `Fault::UnknownSize`: the same `file_size: 0` for a local file;
//! - `Fault::WrongTotalBytes` / `WrongTotalChunks` / `ShortFile`: file_complete totals that
//!   disagree with the bytes (a body cut short, a buggy adapter);
//! - `Fault::TerminalType` / `TerminalDataType`: a terminal frame with a missing or foreign
//!   `type` / `data_type`, as a non-SnowLuma endpoint or a future version might send;
//! - `Fault::ChunkWithout` / `ChunkDataNotString`: chunk frames without `data` or `index`;
//! - `Fault::ErrorFrame`: the error frame SnowLuma ends a failed stream with (envelope
//!   `status: failed`, `data: {type: "error"}`), after the chunks already sent;
//! - `Fault::StallBody`: a source that stops sending (SnowLuma's own idle watchdog is 60 s);
//! - `Fault::DisconnectMidStream`, `NoTerminal`, `OversizedFrame`, `DuplicateChunk`,
//!   `MissingChunk`, `CorruptChunk`: broken transports and frames.
#![allow(dead_code)] // each includer uses a different part of the API

#[path = "fake_snowluma/actions.rs"]
mod actions;
#[path = "fake_snowluma/schema.rs"]
mod schema;
#[path = "fake_snowluma/server.rs"]
mod server;
#[path = "fake_snowluma/streams.rs"]
mod streams;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;

// Helpers for includers; each test binary uses some of them.
#[allow(unused_imports)]
pub use actions::{catalog_actions, catalog_examples, returns_schema};
#[allow(unused_imports)]
pub use schema::validate as validate_schema;
#[allow(unused_imports)]
pub use streams::{fill_generated, generated_byte, generated_sha256};

/// Canned identities used by the answers.
pub const SELF_ID: i64 = 10001;
pub const GROUP_ID: i64 = 20001;
pub const USER_ID: i64 = 30001;
pub const MESSAGE_ID: i64 = -123456;
/// A large group: `get_group_member_list` answers [`LARGE_GROUP_MEMBERS`] members (about
/// 1.4 MB of JSON) and `get_group_msg_history` as many messages as asked, capped at 200 like
/// SnowLuma's.
pub const LARGE_GROUP_ID: i64 = 20002;
pub const LARGE_GROUP_MEMBERS: i64 = 3000;
/// `get_msg` / `delete_msg` answer "message not found" for this id.
pub const MISSING_MESSAGE_ID: i64 = 999;
/// Default `get_version_info.app_version`.
pub const APP_VERSION: &str = "1.11.1-node";
/// Where files registered with `add_file` appear to live on the SnowLuma host.
pub const DOWNLOAD_DIR: &str = "/tmp/snowluma-stream/download";
/// Where completed uploads appear to live (`<dir>/<stream_id>__<filename>`).
pub const UPLOAD_DIR: &str = "/tmp/snowluma-stream/upload/10001";

/// Startup options; `FakeSnowLuma::start` uses the defaults plus a token.
#[derive(Clone, Debug)]
pub struct FakeOptions {
    pub token: Option<String>,
    /// 0 picks a free port.
    pub port: u16,
    /// The adapter's configured path. With the default "/" every path routes
    /// to an action (as in SnowLuma), so a 404 needs another base.
    pub base_path: String,
    /// Keep every request for `requests()`. Off for long benchmarks.
    pub record_requests: bool,
    /// Keep assembled upload bytes (for `uploaded()` and re-download).
    /// When off, only size and sha256 are kept.
    pub keep_upload_bytes: bool,
    /// Serve HTTPS with this configuration (see `support/test_tls.rs`); the URL becomes
    /// `https://localhost:PORT/` so the certificate's name matches.
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

impl Default for FakeOptions {
    fn default() -> Self {
        FakeOptions {
            token: None,
            port: 0,
            base_path: "/".to_string(),
            record_requests: true,
            keep_upload_bytes: true,
            tls: None,
        }
    }
}

/// One request as received, recorded before any answer or fault.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Raw query string, without the `?`.
    pub query: Option<String>,
    /// Lowercase names, in arrival order.
    pub headers: Vec<(String, String)>,
    /// Raw body; only the first 2 MiB of an oversized body.
    pub body: Vec<u8>,
    /// The action the adapter resolved (path form wins over the body).
    pub action: Option<String>,
    /// Params as the adapter parsed them (object).
    pub params: Option<Value>,
}

impl Recorded {
    /// First value of a header, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON, when it is JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

/// Injected misbehaviour. Applies to ordinary and stream actions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// HTTP 401 retcode 1401, whatever the token.
    Unauthorized,
    /// HTTP 500 retcode 1200.
    ServerError,
    /// HTTP 200 with a body that is not JSON (not a frame either, for streams).
    BadJson,
    /// Wait this long before sending the response head.
    Slow(Duration),
    /// Send the head and part of the body, then hang until the client leaves.
    /// Streams send the first frame whole (unless it is the terminal one).
    StallBody,
    /// Streams: abort the connection after this many whole frames (also when
    /// the stream had fewer, so the body never ends cleanly). Ordinary
    /// actions: abort after half of the body.
    DisconnectMidStream { after_frames: usize },
    /// Streams: a frame of 25 MiB (over the server's 24 MiB frame cap) with no
    /// `\r\n\r\n`. Ordinary actions: a valid 17 MiB JSON envelope (over the
    /// 16 MiB response cap).
    OversizedFrame,
    /// Downloads: the second file chunk is sent twice (same `index`).
    DuplicateChunk,
    /// Downloads: the second file chunk is never sent; later indexes skip it.
    MissingChunk,
    /// Downloads: the second file chunk's `data` is not base64.
    CorruptChunk,
    /// Downloads: the last chunk is dropped and the ok terminal frame carries
    /// no `total_bytes`, so only file_info's `file_size` tells the file is short.
    ShortFile,
    /// Streams: every frame but the terminal one, then a clean end of body.
    NoTerminal,
    /// Streams: the terminal frame becomes an error frame, retcode 100.
    /// Ordinary actions: `{status:"failed",retcode:100}`.
    ErrorFrame,
    /// Read and record the request, then close the connection unanswered.
    Refuse,
    /// test_download_stream: each data frame carries 700,000 `"` characters
    /// (1.4 MB as JSON) instead of "Index-> N", as a SnowLuma streaming large
    /// frames would; a saved result of them outgrows a 16 MiB task record.
    BigFrames,
    /// test_download_stream: this many "Index-> N" data frames instead of SnowLuma's ten, as a
    /// stream action that sends a long series of small frames would (a frame collection larger
    /// than a result budget).
    ManyFrames(usize),
    /// Downloads: file_info says `file_size: 0`, as SnowLuma does for any
    /// source whose size it does not know (see [`FakeSnowLuma::add_url_file`]
    /// for the whole URL behaviour, with varying chunk sizes).
    UnknownSize,
    /// Downloads: file_complete's `total_bytes` is one more than the bytes
    /// sent (`total_chunks` stays true).
    WrongTotalBytes,
    /// Downloads: file_complete's `total_chunks` is one more than the chunks
    /// sent (`total_bytes` stays true).
    WrongTotalChunks,
    /// Streams: the ok terminal frame's `data.type` is this value, or absent
    /// with `None`. SnowLuma itself always says "response"; a frame without
    /// it comes from a foreign or broken endpoint.
    TerminalType(Option<&'static str>),
    /// Downloads: the ok terminal frame's `data_type` is this value, or absent
    /// with `None` (SnowLuma says "file_complete").
    TerminalDataType(Option<&'static str>),
    /// Downloads: the second file chunk lacks this key (`data` or `index`).
    ChunkWithout(&'static str),
    /// Downloads: the second file chunk's `data` is a number, not a string.
    ChunkDataNotString,
}

/// What the fake knows about one `upload_file_stream` stream id.
#[derive(Clone, Debug, Default)]
pub struct UploadState {
    pub stream_id: String,
    pub filename: String,
    pub total_chunks: u64,
    /// Distinct chunk indices stored.
    pub received_chunks: u64,
    /// Calls that carried a chunk, duplicates included.
    pub chunk_calls: u64,
    pub expected_sha256: Option<String>,
    pub complete: bool,
    pub file_path: Option<String>,
    pub file_size: Option<u64>,
    pub sha256: Option<String>,
    /// The assembled file (when `keep_upload_bytes`).
    pub bytes: Option<Bytes>,
    /// A `reset:true` call was seen for this id (sticky).
    pub reset_seen: bool,
    /// Wording of the last error frame answered for this id.
    pub last_error: Option<String>,
}

/// A running fake. Dropping it (or `shutdown`) stops the server and closes
/// every open connection.
pub struct FakeSnowLuma {
    /// `http://127.0.0.1:PORT/` (plus the base path when not "/").
    pub url: String,
    pub port: u16,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// State shared between the handle and the server thread.
struct Shared {
    token: Option<String>,
    base_path: String,
    record: bool,
    keep_upload_bytes: bool,
    state: Mutex<State>,
}

struct State {
    requests: Vec<Recorded>,
    faults: HashMap<Option<String>, Armed>,
    answers: HashMap<String, Value>,
    version: String,
    files: HashMap<String, streams::Source>,
    uploads: streams::Uploads,
}

/// An injected fault, how many matching requests still pass untouched before it fires, and
/// how many more times it fires (`None`: until cleared).
struct Armed {
    fault: Fault,
    skip: usize,
    times: Option<usize>,
}

impl State {
    /// The fault for one request: the action's own one wins over the global one. While the
    /// chosen entry still has requests to skip, or has fired as often as it may, this request
    /// is answered normally.
    fn take_fault(&mut self, action: Option<&str>) -> Option<Fault> {
        let own = action.map(str::to_string);
        let key = if own.is_some() && self.faults.contains_key(&own) {
            own
        } else {
            None
        };
        let armed = self.faults.get_mut(&key)?;
        if armed.skip > 0 {
            armed.skip -= 1;
            return None;
        }
        match &mut armed.times {
            Some(0) => return None,
            Some(times) => *times -= 1,
            None => {}
        }
        Some(armed.fault.clone())
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking test thread must not wedge the server for the others.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl FakeSnowLuma {
    /// Start on 127.0.0.1 with a free port; `token` enables auth.
    pub async fn start(token: Option<&str>) -> FakeSnowLuma {
        Self::start_with(FakeOptions {
            token: token.map(str::to_string),
            ..FakeOptions::default()
        })
        .await
    }

    pub async fn start_with(opts: FakeOptions) -> FakeSnowLuma {
        Self::start_blocking(opts)
    }

    /// Same as `start_with`, for callers without an async context.
    pub fn start_blocking(opts: FakeOptions) -> FakeSnowLuma {
        let listener = std::net::TcpListener::bind(("127.0.0.1", opts.port))
            .expect("fake SnowLuma: bind 127.0.0.1");
        Self::start_on(listener, opts)
    }

    /// Serves on a listener the test already holds (`opts.port` is ignored), e.g. a port it
    /// kept refusing connections until now, so no other socket could take it meanwhile.
    pub fn start_on(listener: std::net::TcpListener, opts: FakeOptions) -> FakeSnowLuma {
        let base_path = normalize_base(&opts.base_path);
        listener
            .set_nonblocking(true)
            .expect("fake SnowLuma: nonblocking listener");
        let port = listener.local_addr().expect("local addr").port();
        let origin = match opts.tls {
            Some(_) => format!("https://localhost:{port}"),
            None => format!("http://127.0.0.1:{port}"),
        };
        let url = if base_path == "/" {
            format!("{origin}/")
        } else {
            format!("{origin}{base_path}/")
        };
        let tls = opts.tls.clone();
        let shared = Arc::new(Shared {
            token: opts.token.filter(|t| !t.is_empty()),
            base_path,
            record: opts.record_requests,
            keep_upload_bytes: opts.keep_upload_bytes,
            state: Mutex::new(State {
                requests: Vec::new(),
                faults: HashMap::new(),
                answers: HashMap::new(),
                version: APP_VERSION.to_string(),
                files: HashMap::new(),
                uploads: streams::Uploads::default(),
            }),
        });
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
        let server_shared = shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("fake-snowluma-{port}"))
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("fake-snowluma-worker")
                    .enable_all()
                    .build()
                    .expect("fake SnowLuma runtime");
                rt.block_on(server::serve(listener, server_shared, stop_rx, tls));
                // Dropping the runtime's tasks closes every connection.
                rt.shutdown_background();
            })
            .expect("spawn fake SnowLuma thread");
        FakeSnowLuma {
            url,
            port,
            shared,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.lock().requests.clone()
    }

    /// Requests that resolved to `action`.
    pub fn requests_for(&self, action: &str) -> Vec<Recorded> {
        self.shared
            .lock()
            .requests
            .iter()
            .filter(|r| r.action.as_deref() == Some(action))
            .cloned()
            .collect()
    }

    pub fn clear_requests(&self) {
        self.shared.lock().requests.clear();
    }

    /// `None` = every request; an action's own fault wins over the global one.
    pub fn set_fault(&self, action: Option<&str>, fault: Fault) {
        self.arm(action, fault, 0, None);
    }

    /// A transient fault: the first `skip` matching requests are answered normally, the next
    /// one meets `fault`, and later ones are answered normally again, so a multi-request
    /// exchange (an upload's chunk calls) can fail part-way through and still be cleaned up.
    pub fn set_fault_once_after(&self, action: Option<&str>, skip: usize, fault: Fault) {
        self.arm(action, fault, skip, Some(1));
    }

    fn arm(&self, action: Option<&str>, fault: Fault, skip: usize, times: Option<usize>) {
        self.shared
            .lock()
            .faults
            .insert(action.map(str::to_string), Armed { fault, skip, times });
    }

    pub fn clear_faults(&self) {
        self.shared.lock().faults.clear();
    }

    /// Change `get_version_info.app_version`.
    pub fn set_version(&self, version: &str) {
        self.shared.lock().version = version.to_string();
    }

    /// Answer `action` with this whole envelope (echo is still added). For a
    /// stream action it becomes the single, terminal frame.
    pub fn set_answer(&self, action: &str, envelope: Value) {
        self.shared
            .lock()
            .answers
            .insert(action.to_string(), envelope);
    }

    pub fn clear_answers(&self) {
        self.shared.lock().answers.clear();
    }

    /// Register a downloadable file; returns the `file` param to use.
    pub fn add_file(&self, name: &str, bytes: Vec<u8>) -> String {
        let path = format!("{DOWNLOAD_DIR}/{name}");
        self.shared
            .lock()
            .files
            .insert(path.clone(), streams::Source::Bytes(Bytes::from(bytes)));
        path
    }

    /// Register a deterministic file produced while streaming (byte i is
    /// `generated_byte(seed, i)`); nothing proportional to `size` is held.
    pub fn add_generated_file(&self, name: &str, size: u64, seed: u8) -> String {
        let path = format!("{DOWNLOAD_DIR}/{name}");
        self.shared
            .lock()
            .files
            .insert(path.clone(), streams::Source::Generated { size, seed });
        path
    }

    /// Register a file behind an http(s) URL (a public-looking one: the fake,
    /// like SnowLuma, refuses private and loopback hosts), returned as the
    /// `file` param. SnowLuma re-streams a URL's body as the network delivers
    /// it: chunks of varying size whatever `chunk_size` says, and without a
    /// Content-Length (`content_length: false`) file_info's `file_size` is 0,
    /// every chunk's `progress` is 0 and only file_complete's `total_bytes`
    /// tells the size.
    pub fn add_url_file(&self, url: &str, bytes: Vec<u8>, content_length: bool) -> String {
        self.shared.lock().files.insert(
            url.to_string(),
            streams::Source::Remote {
                body: Bytes::from(bytes),
                content_length,
            },
        );
        url.to_string()
    }

    /// Register a cached image id (as received in a message) whose cache entry
    /// has no size: SnowLuma fetches it from the CDN and announces size 0.
    pub fn add_cached_image(&self, id: &str, bytes: Vec<u8>) -> String {
        self.shared.lock().files.insert(
            id.to_string(),
            streams::Source::Remote {
                body: Bytes::from(bytes),
                content_length: false,
            },
        );
        id.to_string()
    }

    /// What was uploaded under `stream_id` (kept after completion or reset).
    pub fn uploaded(&self, stream_id: &str) -> Option<UploadState> {
        self.shared.lock().uploads.record(stream_id)
    }

    /// Stop serving now; dropping does the same.
    pub fn shutdown(self) {}
}

impl Drop for FakeSnowLuma {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// SnowLuma's normalised adapter path: leading `/`, no trailing `/`.
fn normalize_base(path: &str) -> String {
    let trimmed = path.trim().trim_end_matches('/');
    if trimmed.is_empty() {
        "/".to_string()
    } else if trimmed.starts_with('/') {
        trimmed.to_string()
    } else {
        format!("/{trimmed}")
    }
}
