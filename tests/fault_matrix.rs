//! The fault matrix (issue 18): every executing tool (rows, `support/fault_cells.rs`) against
//! every fault SnowLuma's HTTP side can show (columns), over both transports (stdio and the
//! opt-in Streamable HTTP, each the real binary) in both protocol generations. Each cell checks
//! the documented outcome (kind, outcome, isError, next step), that no partial download is left
//! (the directory quota equals one file, so a leftover byte would fail the follow-up), that
//! nothing was sent twice, and that the same session then serves a successful call whose
//! result matches the advertised outputSchema. A killed server restarted mid-task reports the
//! task failed and never replays it. WebSocket faults are in `fault_matrix_events.rs`.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/fault_cells.rs"]
mod fault_cells;
#[path = "support/http_server.rs"]
mod http_server;
#[path = "support/mcp_peer.rs"]
mod mcp_peer;
#[path = "support/raw_client.rs"]
mod raw_client;
#[path = "support/stream_helpers.rs"]
mod stream_helpers;

use fake_snowluma::{FakeOptions, FakeSnowLuma, Fault};
use fault_cells::*;
use mcp_peer::{EVERY_KIND, Peer, PeerKind, Transport, listen, refusing_port};
use raw_client::wait_until;
use serde_json::json;
use stream_helpers::{Dirs, pseudo_random};

const TOKEN: &str = "fault-matrix-snowluma-token";

fn dirs_for(kind: PeerKind, test: &str) -> Dirs {
    let dirs = Dirs::new(&format!("{test}-{}", kind.to_string().replace('/', "-")));
    std::fs::write(
        dirs.uploads.join(UPLOAD_NAME),
        pseudo_random(UPLOAD_SIZE, 8),
    )
    .unwrap();
    let small = pseudo_random(SMALL_UPLOAD_SIZE, 9);
    std::fs::write(dirs.uploads.join(SMALL_UPLOAD_NAME), small).unwrap();
    dirs
}

/// Write mode with every executing service on, typed tools for the `message` category, and
/// one slot each for ordinary calls and streams, so a slot a fault failed to release shows
/// up as `busy` in the follow-up; `short_timeouts` for the matrix, else the defaults.
fn server_env(dirs: &Dirs, endpoint: &str, short_timeouts: bool) -> Vec<(String, String)> {
    let path = |p: &std::path::Path| p.to_string_lossy().into_owned();
    let mut env = vec![
        ("SNOWLUMA_MCP_MODE", "write".to_string()),
        ("SNOWLUMA_MCP_ENDPOINT", endpoint.to_string()),
        ("SNOWLUMA_MCP_TOKEN", TOKEN.to_string()),
        ("SNOWLUMA_MCP_DOWNLOAD_DIR", path(&dirs.downloads)),
        ("SNOWLUMA_MCP_UPLOAD_ROOT", path(&dirs.uploads)),
        ("SNOWLUMA_MCP_TASK_DIR", path(&dirs.root.join("tasks"))),
        ("SNOWLUMA_MCP_TOOLSETS", "message".to_string()),
        ("SNOWLUMA_MCP_MAX_CALLS", "1".to_string()),
        ("SNOWLUMA_MCP_MAX_STREAMS", "1".to_string()),
        ("SNOWLUMA_MCP_DIR_QUOTA_BYTES", DOWNLOAD_SIZE.to_string()),
        // The matrix sends to one group far faster than the send limits allow; they are
        // tested in guard_limits.rs.
        ("SNOWLUMA_MCP_SEND_PER_TARGET_PER_MIN", "0".to_string()),
        ("SNOWLUMA_MCP_SEND_TOTAL_PER_MIN", "0".to_string()),
    ];
    if short_timeouts {
        env.push(("SNOWLUMA_MCP_TIMEOUT_MS", TIMEOUT_MS.to_string()));
        env.push(("SNOWLUMA_MCP_STREAM_IDLE_MS", STREAM_IDLE_MS.to_string()));
    }
    env.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

async fn start_peer(kind: PeerKind, env: &[(String, String)]) -> Peer {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    Peer::start(kind, &env).await
}

fn start_fake(listener: std::net::TcpListener) -> FakeSnowLuma {
    let options = FakeOptions {
        token: Some(TOKEN.into()),
        ..FakeOptions::default()
    };
    let fake = FakeSnowLuma::start_on(listener, options);
    fake.add_file(DOWNLOAD_NAME, pseudo_random(DOWNLOAD_SIZE, 1));
    fake
}

/// The matrix for one group of rows on one transport and generation, with one server process
/// and one session throughout: first every row with nothing listening, then the fake takes the
/// port and every other column runs against every row. Returns the number of cells checked.
async fn matrix(kind: PeerKind, group: usize) -> usize {
    let dirs = dirs_for(kind, &format!("fault-matrix-{group}"));
    let (socket, port) = refusing_port();
    let env = server_env(&dirs, &format!("http://127.0.0.1:{port}/"), true);
    let mut peer = start_peer(kind, &env).await;
    let rows = rows_of(kind, group);
    let mut cells = 0;

    for row in &rows {
        let cell = format!("{kind} {} x NoListener", row.name());
        let call = run(&mut peer, row, &dirs).await;
        let expect = expected(Column::NoListener, row.shape, row.read_only);
        check_outcome(&call, &expect, row, &dirs, &cell);
        if row.shape == Shape::ConnectionCheck {
            check_each_connection_check(&call, Column::NoListener, &cell);
        }
        assert!(peer.alive(), "{cell}: the server exited");
    }
    let fake = start_fake(listen(socket));
    for row in &rows {
        let cell = format!("{kind} {} x NoListener", row.name());
        check_follow_up(&mut peer, &fake, row, &dirs, &cell).await;
        cells += 1;
    }

    let columns: &[Column] = if kind.modern {
        &FAULT_COLUMNS
    } else {
        &LEGACY_COLUMNS
    };
    for &column in columns {
        for row in &rows {
            let cell = format!("{kind} {} x {column:?}", row.name());
            fake.clear_requests();
            inject(&fake, column, row);
            let call = run(&mut peer, row, &dirs).await;
            let recorded = fake.requests();
            fake.clear_faults();
            check_outcome(
                &call,
                &expected(column, row.shape, row.read_only),
                row,
                &dirs,
                &cell,
            );
            match row.shape {
                Shape::ConnectionCheck => check_each_connection_check(&call, column, &cell),
                Shape::Upload => check_reset(&fake, &recorded, &call, &cell),
                _ => {}
            }
            check_sent_once(&recorded, row, &cell);
            check_follow_up(&mut peer, &fake, row, &dirs, &cell).await;
            cells += 1;
        }
    }
    assert!(peer.validated >= 2 * cells, "{kind}: results validated");
    peer.stop().await;
    cells
}

/// get_runtime_info's answer is data (`connection_check`); each of its three calls carries the
/// ordinary outcome of the fault.
fn check_each_connection_check(call: &mcp_peer::ToolCall, column: Column, cell: &str) {
    let expect = expected(column, Shape::Ordinary, true);
    for action in ["get_login_info", "get_status", "get_version_info"] {
        let check = &call.body["result"]["checks"][action];
        assert_eq!(check["diagnostics"]["kind"], expect.kind, "{cell}: {check}");
        assert_eq!(
            check["diagnostics"]["outcome"], expect.outcome,
            "{cell}: {check}"
        );
    }
}

/// The rows of `group` a client of `kind` can call: task tools are for 2026-07-28 clients.
fn rows_of(kind: PeerKind, group: usize) -> Vec<&'static Row> {
    ROWS.iter()
        .filter(|r| r.group() == group && (kind.modern || !r.background))
        .collect()
}

/// Every transport, generation and row group runs concurrently: most of a cell's time is spent
/// waiting on timeouts, and the cells of one run follow each other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_executing_tool_meets_every_http_fault_on_both_transports() {
    let mut runs = Vec::new();
    for kind in EVERY_KIND {
        for group in 0..3 {
            runs.push((kind, group, tokio::spawn(matrix(kind, group))));
        }
    }
    let mut total = 0;
    for (kind, group, run) in runs {
        let cells = run
            .await
            .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
        let columns = if kind.modern {
            FAULT_COLUMNS.len()
        } else {
            LEGACY_COLUMNS.len()
        };
        assert_eq!(cells, rows_of(kind, group).len() * (columns + 1), "{kind}");
        total += cells;
    }
    // 11 rows x 10 columns for each modern run, 9 rows x 7 columns for each legacy one.
    assert_eq!(total, 2 * 11 * 10 + 2 * 9 * 7);
}

/// Process kill mid-task and restart, for a download and an upload, on both transports: the
/// restarted server reports each task failed with an unknown remote outcome, removes the
/// partial download, never sends the transfer again, and serves a new task. (tests/tasks_stdio.rs
/// has the stdio-only original with the JSON-RPC error code; this is the same scenario through
/// the transport-neutral peer.)
async fn killed_mid_task(kind: PeerKind, row: &'static Row) {
    let dirs = dirs_for(kind, &format!("fault-kill-{}", row.action));
    let fake = start_fake(std::net::TcpListener::bind("127.0.0.1:0").unwrap());
    // Default timeouts: only the kill ends the stalled transfer.
    let env = server_env(&dirs, &fake.url, false);
    let mut peer = start_peer(kind, &env).await;
    let cell = format!("{kind} {} x kill", row.name());
    fake.set_fault(None, Fault::StallBody);
    let created = peer
        .request(
            "tools/call",
            json!({ "name": row.tool, "arguments": row.args(&dirs) }),
        )
        .await;
    let task_id = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{cell}: {created}"))
        .to_string();
    // Mid-transfer: the stall holds the download's first chunk (its partial file exists) or
    // the upload's first chunk call.
    let sent = |fake: &FakeSnowLuma| fake.requests_for(row.action).len();
    let target = 1;
    wait_until(raw_client::WAIT, || {
        sent(&fake) >= target && (row.shape != Shape::Download || dirs_has_part(&dirs))
    })
    .await;
    assert_eq!(sent(&fake), target, "{cell}");
    if row.shape == Shape::Download {
        assert!(
            dirs_has_part(&dirs),
            "{cell}: no partial file before the kill"
        );
    }
    let working = peer
        .request("tasks/get", json!({ "taskId": task_id }))
        .await;
    assert_eq!(working["result"]["status"], "working", "{cell}: {working}");
    peer.kill().await;

    fake.clear_faults();
    let mut peer = start_peer(kind, &env).await;
    let after = peer
        .request("tasks/get", json!({ "taskId": task_id }))
        .await;
    let task = &after["result"];
    assert_eq!(task["status"], "failed", "{cell}: {after}");
    assert_eq!(task["error"]["code"], -32603, "{cell}: {after}");
    let message = task["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("remote outcome unknown"),
        "{cell}: {after}"
    );
    assert!(
        dirs.downloaded().is_empty(),
        "{cell}: {:?}",
        dirs.downloaded()
    );
    // A replay would start while the task store opens, before the server reads a request; a
    // marker call answered after that bounds the fake's log: it holds no second transfer.
    let marker = peer
        .call("query_action", json!({ "action": "get_status" }))
        .await;
    assert!(!marker.is_error, "{cell}: marker call: {}", marker.body);
    assert!(!fake.requests_for("get_status").is_empty(), "{cell}");
    assert_eq!(sent(&fake), target, "{cell}: the transfer was replayed");
    check_follow_up(&mut peer, &fake, row, &dirs, &cell).await;
    peer.stop().await;
}

fn dirs_has_part(dirs: &Dirs) -> bool {
    dirs.downloaded()
        .iter()
        .any(|p| p.to_string_lossy().ends_with(".part"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_task_reports_it_failed_after_restart_and_never_replays_it() {
    let background: Vec<&'static Row> = ROWS.iter().filter(|r| r.background).collect();
    let mut runs = Vec::new();
    for transport in [Transport::Stdio, Transport::Http] {
        for row in &background {
            runs.push(tokio::spawn(killed_mid_task(
                PeerKind::new(transport, true),
                row,
            )));
        }
    }
    for run in runs {
        run.await
            .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
    }
}
