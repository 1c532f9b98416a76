//! The fault matrix's vocabulary: the faults SnowLuma's HTTP side can show (columns), the
//! executing tools that meet them (rows), the outcome the contract and README document for
//! each cell, and one cell's run with its checks. `tests/fault_matrix.rs` walks the table.
//! Include it after `fake_snowluma.rs`, `raw_client.rs`, `http_server.rs`, `mcp_peer.rs` and
//! `stream_helpers.rs`.

#![allow(dead_code)]

use std::time::Duration;

use serde_json::{Value, json};

use crate::fake_snowluma::{FakeSnowLuma, Fault, GROUP_ID, MESSAGE_ID, Recorded, USER_ID};
use crate::mcp_peer::{Peer, ToolCall};
use crate::raw_client::structured;
use crate::stream_helpers::Dirs;

/// The ordinary request timeout the matrix configures: short, so stalls end fast, yet far
/// above a loopback answer on a busy machine.
pub const TIMEOUT_MS: &str = "1000";
/// The stream idle timeout: an unoptimized build takes a few hundred milliseconds to encode,
/// send and (in the fake) decode one 768 KiB upload chunk, and with both cores busy (five
/// builds at once) 2.5 s was seen to pass without a byte; 8 s leaves room for that.
pub const STREAM_IDLE_MS: &str = "8000";
/// How long `Slow` holds the response head: well past both timeouts.
pub const SLOW: Duration = Duration::from_millis(10_000);
/// The downloaded file: 7 chunks of 16 KiB, so a mid-stream disconnect leaves bytes written.
pub const DOWNLOAD_SIZE: usize = 100_000;
pub const DOWNLOAD_NAME: &str = "matrix.bin";
pub const CHUNK_SIZE: u64 = 16_384;
/// The file invoke_action uploads: two chunk calls (768 KiB each at most), so a fault can
/// strike the second after the first was acknowledged.
pub const UPLOAD_SIZE: usize = 800_000;
pub const UPLOAD_NAME: &str = "matrix-upload.bin";
/// The file a background task uploads: one chunk call, which the fault strikes (cheaper: an
/// unoptimized build takes a while to encode and hash 768 KiB).
pub const SMALL_UPLOAD_SIZE: usize = 20_000;
pub const SMALL_UPLOAD_NAME: &str = "matrix-small-upload.bin";

/// One way SnowLuma's HTTP side can misbehave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    /// Nothing listens at the endpoint.
    NoListener,
    /// The request is read, then the connection closes unanswered.
    Refuse,
    /// Part of the answer, then silence.
    Stall,
    /// The answer's head comes after both timeouts.
    Slow,
    /// The connection breaks in the middle of the answer.
    Disconnect,
    /// HTTP 401.
    Unauthorized,
    /// HTTP 500.
    ServerError,
    /// An answer that is not JSON (not a frame, for streams).
    BadJson,
    /// An ordinary answer over the 16 MiB response cap; a stream frame over 24 MiB.
    Oversized,
    /// A business failure (retcode 100, or the stream's error frame): data, not a tool error.
    ErrorFrame,
}

/// Every column but `NoListener`, which needs the fake to be absent and runs first.
pub const FAULT_COLUMNS: [Column; 9] = [
    Column::Refuse,
    Column::Stall,
    Column::Slow,
    Column::Disconnect,
    Column::Unauthorized,
    Column::ServerError,
    Column::BadJson,
    Column::Oversized,
    Column::ErrorFrame,
];

/// The columns a legacy session runs besides `NoListener`. Both generations share everything
/// behind the protocol layer, so the legacy runs skip the columns that cost seconds of waiting
/// or tens of MiB each (stalls, slow heads, oversized frames); the modern runs cover them.
pub const LEGACY_COLUMNS: [Column; 6] = [
    Column::Refuse,
    Column::Disconnect,
    Column::Unauthorized,
    Column::ServerError,
    Column::BadJson,
    Column::ErrorFrame,
];

/// What a row's call does on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// One ordinary action call.
    Ordinary,
    /// get_runtime_info's connection check: three ordinary read-only calls.
    ConnectionCheck,
    /// A download saved to the download directory.
    Download,
    /// An automatic upload: chunk calls, a completion call, a reset on failure.
    Upload,
    /// A generic frame stream collected into the result.
    Frames,
}

/// One executing tool with arguments that succeed against the healthy fake.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    pub tool: &'static str,
    /// The OneBot action the call sends (the fake records it under this name).
    pub action: &'static str,
    pub read_only: bool,
    pub shape: Shape,
    /// Run as a durable task through invoke_action_background (2026-07-28 clients only).
    pub background: bool,
}

impl Row {
    const fn new(tool: &'static str, action: &'static str, read_only: bool, shape: Shape) -> Row {
        Row {
            tool,
            action,
            read_only,
            shape,
            background: false,
        }
    }

    const fn background(action: &'static str, read_only: bool, shape: Shape) -> Row {
        Row {
            tool: "invoke_action_background",
            action,
            read_only,
            shape,
            background: true,
        }
    }

    /// An upload's (size, chunk calls).
    pub fn upload(&self) -> (usize, usize) {
        if self.background {
            (SMALL_UPLOAD_SIZE, 1)
        } else {
            (UPLOAD_SIZE, 2)
        }
    }

    /// Which concurrent run of the matrix takes the row: ordinary calls, downloads and frame
    /// streams, uploads (each run has its own server and fake).
    pub fn group(&self) -> usize {
        match self.shape {
            Shape::Ordinary | Shape::ConnectionCheck => 0,
            Shape::Download | Shape::Frames => 1,
            Shape::Upload => 2,
        }
    }

    pub fn name(&self) -> String {
        format!("{}({})", self.tool, self.action)
    }

    /// The tool arguments of this row's call.
    pub fn args(&self, dirs: &Dirs) -> Value {
        let download = json!({ "file": download_param(), "chunk_size": CHUNK_SIZE });
        match (self.tool, self.action) {
            ("get_runtime_info", _) => json!({ "check_connection": true }),
            // Typed tools take the action's params as their arguments.
            ("get_msg", _) => json!({ "message_id": MESSAGE_ID }),
            ("send_group_msg", _) => json!({ "group_id": GROUP_ID, "message": "fault matrix" }),
            (_, "get_login_info") => json!({ "action": "get_login_info" }),
            (_, "delete_msg") => {
                json!({ "action": "delete_msg", "params": { "message_id": MESSAGE_ID } })
            }
            (_, "set_group_ban") => json!({ "action": "set_group_ban",
                "params": { "group_id": GROUP_ID, "user_id": USER_ID, "duration": 60 } }),
            (_, "download_file_stream") => {
                json!({ "action": "download_file_stream", "params": download })
            }
            (_, "test_download_stream") => json!({ "action": "test_download_stream" }),
            (_, "upload_file_stream") => {
                let name = if self.background {
                    SMALL_UPLOAD_NAME
                } else {
                    UPLOAD_NAME
                };
                json!({ "action": "upload_file_stream",
                        "execution": { "input_file": dirs.uploads.join(name).to_string_lossy() } })
            }
            other => panic!("no arguments for {other:?}"),
        }
    }
}

/// The rows: every executing tool (the typed ones by one read and one write), each stream
/// kind, and background tasks for a download and an upload.
pub const ROWS: [Row; 11] = [
    Row::new("query_action", "get_login_info", true, Shape::Ordinary),
    Row::new("invoke_action", "delete_msg", false, Shape::Ordinary),
    Row::new("get_msg", "get_msg", true, Shape::Ordinary),
    Row::new("send_group_msg", "send_group_msg", false, Shape::Ordinary),
    Row::new(
        "invoke_action_with_input",
        "set_group_ban",
        false,
        Shape::Ordinary,
    ),
    Row::new(
        "get_runtime_info",
        "get_login_info",
        true,
        Shape::ConnectionCheck,
    ),
    Row::new(
        "invoke_action",
        "download_file_stream",
        true,
        Shape::Download,
    ),
    Row::new("invoke_action", "upload_file_stream", false, Shape::Upload),
    Row::new("invoke_action", "test_download_stream", true, Shape::Frames),
    Row::background("download_file_stream", true, Shape::Download),
    Row::background("upload_file_stream", false, Shape::Upload),
];

/// The `file` param naming the fake's download (see `FakeSnowLuma::add_file`).
pub fn download_param() -> String {
    format!("{}/{DOWNLOAD_NAME}", crate::fake_snowluma::DOWNLOAD_DIR)
}

/// Injects the cell's fault. Every request meets it until cleared, except in an upload: there
/// it strikes once, at the last chunk call (the second of two, or the only one), so the
/// transfer fails part-way through and the clean-up reset still gets its answer.
pub fn inject(fake: &FakeSnowLuma, column: Column, row: &Row) {
    let fault = match column {
        Column::NoListener => unreachable!("no fake listens for this column"),
        Column::Refuse => Fault::Refuse,
        Column::Stall => Fault::StallBody,
        Column::Slow => Fault::Slow(SLOW),
        Column::Disconnect => Fault::DisconnectMidStream {
            after_frames: match row.shape {
                // file_info and the first chunk are written before the break.
                Shape::Download => 2,
                Shape::Frames => 3,
                _ => 0,
            },
        },
        Column::Unauthorized => Fault::Unauthorized,
        Column::ServerError => Fault::ServerError,
        Column::BadJson => Fault::BadJson,
        Column::Oversized => Fault::OversizedFrame,
        Column::ErrorFrame => Fault::ErrorFrame,
    };
    if row.shape == Shape::Upload {
        fake.set_fault_once_after(None, row.upload().1 - 1, fault);
    } else {
        fake.set_fault(None, fault);
    }
}

/// The documented answer of one cell.
#[derive(Debug, PartialEq, Eq)]
pub struct Expected {
    pub is_error: bool,
    pub kind: &'static str,
    pub outcome: &'static str,
}

/// The outcome the contract and README document for `column` on a call of `shape`: transport
/// problems are tool errors naming their kind; an exchange that broke off after the request may
/// have reached SnowLuma is `unknown` (except a read-only stream that stalled or sent a bad
/// frame: a read claims nothing); business failures are data.
pub fn expected(column: Column, shape: Shape, read_only: bool) -> Expected {
    let error = |kind, outcome| Expected {
        is_error: true,
        kind,
        outcome,
    };
    if shape == Shape::ConnectionCheck {
        // The overview is data; each check inside carries its call's own outcome.
        return Expected {
            is_error: false,
            kind: "connection_check",
            outcome: "failed",
        };
    }
    let stream = shape != Shape::Ordinary;
    let stopped = if read_only { "failed" } else { "unknown" };
    match column {
        Column::NoListener => error("connection_refused", "failed"),
        Column::Refuse | Column::Disconnect => error("connection_broken", "unknown"),
        Column::Stall | Column::Slow if stream => error("stream_idle_timeout", stopped),
        Column::Stall | Column::Slow => error("timeout", "unknown"),
        Column::Unauthorized => error("unauthorized", "failed"),
        Column::ServerError => error("server_error", "failed"),
        Column::BadJson | Column::Oversized if stream => error("bad_frame", stopped),
        Column::BadJson | Column::Oversized => error("bad_response", "unknown"),
        Column::ErrorFrame => Expected {
            is_error: false,
            kind: if stream {
                "stream_failed"
            } else {
                "onebot_failure"
            },
            outcome: "failed",
        },
    }
}

/// Runs the row's call once; a background row is started, polled until it leaves `working`,
/// and its saved result returned (checked against invoke_action_background's outputSchema).
pub async fn run(peer: &mut Peer, row: &Row, dirs: &Dirs) -> ToolCall {
    if !row.background {
        return peer.call(row.tool, row.args(dirs)).await;
    }
    let created = peer
        .request(
            "tools/call",
            json!({ "name": row.tool, "arguments": row.args(dirs) }),
        )
        .await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task_id = created["result"]["taskId"].as_str().unwrap().to_string();
    let done = poll_task(peer, &task_id).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    let saved = done["result"]["result"].clone();
    let body = structured(&json!({ "result": saved }));
    peer.validate(row.tool, &body).await;
    ToolCall {
        is_error: saved["isError"] == json!(true),
        response: done,
        body,
    }
}

/// tasks/get until the task is no longer `working` (at most 20 s).
pub async fn poll_task(peer: &mut Peer, task_id: &str) -> Value {
    for _ in 0..400 {
        let got = peer
            .request("tasks/get", json!({ "taskId": task_id }))
            .await;
        if got["result"]["status"] != "working" {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {task_id} still working after 20 s");
}

/// Checks a failed call against the documented outcome of its cell, and what it left on the
/// MCP host: no partial download, an upload reset.
pub fn check_outcome(call: &ToolCall, expect: &Expected, row: &Row, dirs: &Dirs, cell: &str) {
    let body = &call.body;
    assert_eq!(call.is_error, expect.is_error, "{cell}: {body}");
    assert_eq!(call.kind(), expect.kind, "{cell}: {body}");
    assert_eq!(call.outcome(), expect.outcome, "{cell}: {body}");
    let next_step = body["diagnostics"]["next_step"].as_str().unwrap_or("");
    assert!(!next_step.is_empty(), "{cell}: no next step: {body}");
    if expect.is_error {
        assert_eq!(body["result"], Value::Null, "{cell}: {body}");
    } else if row.shape == Shape::ConnectionCheck {
        assert_eq!(body["result"]["connection_checked"], true, "{cell}: {body}");
    } else {
        // A business failure's envelope (or the stream's error frame) is the result.
        assert_eq!(body["result"]["retcode"], 100, "{cell}: {body}");
    }
    match row.shape {
        Shape::Download => {
            assert_eq!(
                body["diagnostics"]["removed_partial_file"], true,
                "{cell}: {body}"
            );
            assert!(
                dirs.downloaded().is_empty(),
                "{cell}: left {:?}",
                dirs.downloaded()
            );
        }
        Shape::Upload if expect.kind == "connection_refused" => {
            // Nothing was sent, so there is nothing to reset.
            assert!(body["diagnostics"].get("reset").is_none(), "{cell}: {body}");
        }
        Shape::Upload => {
            // Something was sent, so the partial upload is reset (answered or not).
            assert_eq!(body["diagnostics"]["reset"]["sent"], true, "{cell}: {body}");
        }
        _ => {}
    }
}

/// Checks what reached the fake during one failed call: each write went out exactly once
/// (nothing retried after a fault that may have reached SnowLuma), and so did each read.
pub fn check_sent_once(recorded: &[Recorded], row: &Row, cell: &str) {
    let count = |action: &str| {
        recorded
            .iter()
            .filter(|r| r.action.as_deref() == Some(action))
            .count()
    };
    match row.shape {
        Shape::ConnectionCheck => {
            for action in ["get_login_info", "get_status", "get_version_info"] {
                assert_eq!(count(action), 1, "{cell}: {action} sent {recorded:?}");
            }
        }
        Shape::Upload => {
            let uploads: Vec<Value> = recorded
                .iter()
                .filter(|r| r.action.as_deref() == Some("upload_file_stream"))
                .filter_map(|r| r.params.clone())
                .collect();
            let chunk = |i: i64| {
                uploads
                    .iter()
                    .filter(|p| p.get("chunk_data").is_some() && p["chunk_index"] == i)
                    .count()
            };
            let flagged = |key: &str| uploads.iter().filter(|p| p[key] == true).count();
            // The fault struck the last chunk call, after any earlier one was answered: each
            // chunk was sent once.
            let chunks: Vec<usize> = (0..3).map(chunk).collect();
            let once: Vec<usize> = (0..3).map(|i| usize::from(i < row.upload().1)).collect();
            assert_eq!(chunks, once, "{cell}: chunk calls per index");
            assert!(flagged("is_complete") <= 1, "{cell}: completion repeated");
            assert_eq!(flagged("reset"), 1, "{cell}: one reset");
            let ids: std::collections::BTreeSet<&str> = uploads
                .iter()
                .filter_map(|p| p["stream_id"].as_str())
                .collect();
            assert_eq!(ids.len(), 1, "{cell}: one stream id: {ids:?}");
        }
        _ => assert_eq!(
            count(row.action),
            1,
            "{cell}: {} sent {} times",
            row.action,
            count(row.action)
        ),
    }
    let unexpected: Vec<&str> = recorded
        .iter()
        .filter_map(|r| r.action.as_deref())
        .filter(|a| {
            *a != row.action
                && !(row.shape == Shape::ConnectionCheck
                    && ["get_status", "get_version_info"].contains(a))
        })
        .collect();
    assert!(unexpected.is_empty(), "{cell}: also sent {unexpected:?}");
}

/// A failed automatic upload was reset: the reset call reached the fake, which dropped the
/// partial upload, and the result carries the fake's answer.
pub fn check_reset(fake: &FakeSnowLuma, recorded: &[Recorded], call: &ToolCall, cell: &str) {
    let stream_id = recorded
        .iter()
        .find_map(|r| {
            r.params
                .as_ref()?
                .get("stream_id")?
                .as_str()
                .map(str::to_string)
        })
        .unwrap_or_else(|| panic!("{cell}: no stream id sent"));
    let upload = fake
        .uploaded(&stream_id)
        .expect("the fake knows the stream");
    assert!(upload.reset_seen && !upload.complete, "{cell}: {upload:?}");
    let answer = &call.body["diagnostics"]["reset"]["answer"];
    assert!(
        answer.as_str().is_some_and(|a| a.contains("reset")),
        "{cell}: {}",
        call.body
    );
}

/// The follow-up call after the fault is cleared: it succeeds on the same session, sends its
/// action once, and a download's file (kept below the quota only if nothing was left over)
/// is then removed so the next cell starts from an empty directory.
pub async fn check_follow_up(
    peer: &mut Peer,
    fake: &FakeSnowLuma,
    row: &Row,
    dirs: &Dirs,
    cell: &str,
) {
    fake.clear_requests();
    let call = run(peer, row, dirs).await;
    assert!(!call.is_error, "{cell}: follow-up failed: {}", call.body);
    assert_eq!(
        call.outcome(),
        "success",
        "{cell}: follow-up: {}",
        call.body
    );
    let recorded = fake.requests();
    match row.shape {
        Shape::Download => {
            assert_eq!(call.body["result"]["size"], DOWNLOAD_SIZE, "{cell}");
            for file in dirs.downloaded() {
                std::fs::remove_file(file).unwrap();
            }
        }
        Shape::Upload => {
            let (size, chunks) = row.upload();
            assert_eq!(call.body["result"]["file_size"], size, "{cell}");
            let stream_id = call.body["diagnostics"]["stream_id"].as_str().unwrap();
            let uploaded = fake.uploaded(stream_id).expect("the fake saw the upload");
            assert!(
                uploaded.complete && uploaded.chunk_calls == chunks as u64,
                "{cell}: {uploaded:?}"
            );
        }
        Shape::ConnectionCheck => assert_eq!(recorded.len(), 3, "{cell}: {recorded:?}"),
        _ => assert_eq!(recorded.len(), 1, "{cell}: {recorded:?}"),
    }
    assert!(peer.alive(), "{cell}: the server exited");
}
