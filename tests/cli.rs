//! The terminal side of the binary, end to end: `snowluma-mcp catalog …`, `snowluma-mcp check`
//! against the fake SnowLuma (good, wrong token, unreachable, version mismatch, events URL),
//! the hint printed when stdin is a terminal (through a pty made by `script`), and a client
//! that closes stdin before `initialize`.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/fake_snowluma_ws.rs"]
mod fake_snowluma_ws;
#[path = "support/raw_client.rs"]
mod raw_client;

use std::process::{Command, Output, Stdio};

use fake_snowluma::FakeSnowLuma;
use fake_snowluma_ws::{FakeEventSocket, WsOptions};
use raw_client::RawServer;
use serde_json::Value;

const TOKEN: &str = "cli-check-secret-token";

fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(raw_client::binary());
    command
        .args(args)
        .env_remove("SNOWLUMA_MCP_MODE")
        .env_remove("SNOWLUMA_MCP_ENDPOINT")
        .env_remove("SNOWLUMA_MCP_TOKEN")
        .env_remove("SNOWLUMA_MCP_EVENTS_URL")
        .envs(env.iter().copied())
        .stdin(Stdio::null());
    command.output().expect("run snowluma-mcp")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn catalog_lists_searches_and_shows_like_the_tools() {
    let out = run(&["catalog", "list", "--category", "info"], &[]);
    assert!(out.status.success());
    let listing = text(&out.stdout);
    let info = snowluma_mcp::catalog::CATEGORIES
        .iter()
        .find(|c| c.id == "info")
        .unwrap()
        .count;
    assert!(
        listing.contains("get_status") && listing.ends_with(&format!("{info} actions\n")),
        "{listing}"
    );
    assert!(!listing.contains("send_group_msg"));

    let out = run(&["catalog", "list", "--json"], &[]);
    let entries: Vec<Value> = serde_json::from_slice(&out.stdout).expect("JSON listing");
    assert!(entries.len() > 150);
    assert!(
        entries
            .iter()
            .all(|e| e["name"].is_string() && e["read_only"].is_boolean())
    );

    // The same keyword search as search_actions match=keywords: synonyms, ranking.
    let out = run(&["catalog", "search", "mute", "member", "--json"], &[]);
    let found: Vec<Value> = serde_json::from_slice(&out.stdout).expect("JSON search");
    assert_eq!(found[0]["name"], "set_group_ban", "{found:?}");
    let out = run(&["catalog", "search", "禁言"], &[]);
    assert!(text(&out.stdout).contains("set_group_ban"));

    // A piece of an action name, written three ways, finds every action whose name holds
    // it as a run of parts.
    for query in [&["group_msg"][..], &["groupmsg"], &["group", "msg"]] {
        let mut args = vec!["catalog", "search"];
        args.extend(query);
        let out = run(&args, &[]);
        assert!(out.status.success(), "{query:?}: {}", text(&out.stderr));
        let listing = text(&out.stdout);
        for name in [
            "send_group_msg",
            "get_group_msg_history",
            "mark_group_msg_as_read",
        ] {
            assert!(
                listing.contains(name),
                "{query:?} misses {name}:\n{listing}"
            );
        }
    }

    let out = run(&["catalog", "show", "bot_exit"], &[]);
    let shown = text(&out.stdout);
    assert!(shown.starts_with("bot_exit  [extended]"), "{shown}");
    assert!(shown.contains("DANGER:"));
    let out = run(&["catalog", "show", "get_msg", "--json"], &[]);
    let contract: Value = serde_json::from_slice(&out.stdout).expect("JSON contract");
    assert_eq!(contract["name"], "get_msg");
    assert!(contract["inputSchema"].is_object());

    let out = run(&["catalog", "show", "get_mgs"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("did you mean get_msg"),
        "{}",
        text(&out.stderr)
    );
    let out = run(&["catalog", "frobnicate"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("usage:"));
}

fn check(env: &[(&str, &str)]) -> (Option<i32>, String) {
    let out = run(&["check"], env);
    let report = text(&out.stdout) + &text(&out.stderr);
    assert!(!report.contains(TOKEN), "the token leaked: {report}");
    (out.status.code(), report)
}

#[tokio::test(flavor = "multi_thread")]
async fn check_reports_a_good_setup_and_each_problem() {
    let fake = FakeSnowLuma::start(Some(TOKEN)).await;
    let url = fake.url.clone();
    let (code, report) = tokio::task::spawn_blocking(move || {
        check(&[
            ("SNOWLUMA_MCP_ENDPOINT", &url),
            ("SNOWLUMA_MCP_TOKEN", TOKEN),
        ])
    })
    .await
    .unwrap();
    assert_eq!(code, Some(0), "{report}");
    assert!(
        report.contains("ok    get_login_info") && report.contains("ok    version"),
        "{report}"
    );
    assert!(report.contains("token set"));

    let url = fake.url.clone();
    let (code, report) = tokio::task::spawn_blocking(move || {
        check(&[
            ("SNOWLUMA_MCP_ENDPOINT", &url),
            ("SNOWLUMA_MCP_TOKEN", "wrong-token"),
        ])
    })
    .await
    .unwrap();
    assert_eq!(code, Some(1), "{report}");
    assert!(report.contains("(unauthorized)"), "{report}");

    fake.set_version("1.10.0");
    let url = fake.url.clone();
    let (code, report) = tokio::task::spawn_blocking(move || {
        check(&[
            ("SNOWLUMA_MCP_ENDPOINT", &url),
            ("SNOWLUMA_MCP_TOKEN", TOKEN),
        ])
    })
    .await
    .unwrap();
    assert_eq!(code, Some(1), "{report}");
    assert!(
        report.contains("FAIL  version") && report.contains("1.10.0"),
        "{report}"
    );
    assert!(
        report.contains("--bin catalog-sync"),
        "the hint names the sync: {report}"
    );

    let (code, report) = tokio::task::spawn_blocking(|| {
        check(&[
            ("SNOWLUMA_MCP_ENDPOINT", "http://127.0.0.1:9/"),
            ("SNOWLUMA_MCP_TOKEN", TOKEN),
        ])
    })
    .await
    .unwrap();
    assert_eq!(code, Some(1), "{report}");
    assert!(report.contains("(connection_refused)"), "{report}");

    let (code, report) = tokio::task::spawn_blocking(|| check(&[("SNOWLUMA_MCP_MODE", "loud")]))
        .await
        .unwrap();
    assert_eq!(code, Some(1), "{report}");
    assert!(report.contains("FAIL  configuration"), "{report}");

    let (code, report) = tokio::task::spawn_blocking(|| check(&[])).await.unwrap();
    assert_eq!(code, Some(0), "{report}");
    assert!(report.contains("docs mode"), "{report}");
}

#[tokio::test(flavor = "multi_thread")]
async fn check_tries_the_events_url() {
    let fake = FakeSnowLuma::start(Some(TOKEN)).await;
    fake.set_version("1.11.1");
    let socket = FakeEventSocket::start(WsOptions {
        token: Some(TOKEN.into()),
        ..WsOptions::default()
    });
    let (url, events) = (fake.url.clone(), socket.url.clone());
    let (code, report) = tokio::task::spawn_blocking(move || {
        check(&[
            ("SNOWLUMA_MCP_ENDPOINT", &url),
            ("SNOWLUMA_MCP_TOKEN", TOKEN),
            ("SNOWLUMA_MCP_EVENTS_URL", &events),
        ])
    })
    .await
    .unwrap();
    assert_eq!(code, Some(0), "{report}");
    assert!(report.contains("ok    events: connected"), "{report}");
    // The state the event connection would have, and how it would come back.
    assert!(report.contains("heartbeat every 30 s"), "{report}");
    assert!(report.contains("backoff 500-30000 ms"), "{report}");
    assert!(
        report.contains("recovery of missed group messages off"),
        "{report}"
    );
    assert_eq!(socket.handshakes(), 1);

    // SnowLuma accepts the upgrade and then closes with 1008: a refused token, not a pass.
    let (url, events) = (fake.url.clone(), socket.url.clone());
    let (code, report) = tokio::task::spawn_blocking(move || {
        check(&[
            ("SNOWLUMA_MCP_ENDPOINT", &url),
            ("SNOWLUMA_MCP_TOKEN", TOKEN),
            ("SNOWLUMA_MCP_EVENTS_URL", &events),
            ("SNOWLUMA_MCP_EVENTS_RECOVER", "1"),
        ])
    })
    .await
    .unwrap();
    assert_eq!(code, Some(0), "{report}");
    assert!(
        report.contains("recovery of missed group messages on (at most 100 a group)"),
        "{report}"
    );
    socket.set_token(Some("another-token"));
    let (url, events) = (fake.url.clone(), socket.url.clone());
    let (code, report) = tokio::task::spawn_blocking(move || {
        check(&[
            ("SNOWLUMA_MCP_ENDPOINT", &url),
            ("SNOWLUMA_MCP_TOKEN", TOKEN),
            ("SNOWLUMA_MCP_EVENTS_URL", &events),
        ])
    })
    .await
    .unwrap();
    assert_eq!(code, Some(1), "{report}");
    assert!(report.contains("FAIL  events: stopped"), "{report}");
    assert!(report.contains("1008"), "{report}");
    assert!(!report.contains(TOKEN), "{report}");

    // A bad reconnect setting names the variable and its range.
    let (url, events) = (fake.url.clone(), socket.url.clone());
    let (code, report) = tokio::task::spawn_blocking(move || {
        check(&[
            ("SNOWLUMA_MCP_ENDPOINT", &url),
            ("SNOWLUMA_MCP_EVENTS_URL", &events),
            ("SNOWLUMA_MCP_EVENTS_RECOVER_MAX", "500"),
        ])
    })
    .await
    .unwrap();
    assert_eq!(code, Some(1), "{report}");
    assert!(
        report.contains("SNOWLUMA_MCP_EVENTS_RECOVER_MAX must be between 1 and 200"),
        "{report}"
    );

    let unreachable = "ws://127.0.0.1:9/".to_string();
    let url = fake.url.clone();
    let (code, report) = tokio::task::spawn_blocking(move || {
        check(&[
            ("SNOWLUMA_MCP_ENDPOINT", &url),
            ("SNOWLUMA_MCP_TOKEN", TOKEN),
            ("SNOWLUMA_MCP_EVENTS_URL", &unreachable),
        ])
    })
    .await
    .unwrap();
    assert_eq!(code, Some(1), "{report}");
    assert!(report.contains("FAIL  events"), "{report}");
}

#[tokio::test]
async fn closing_stdin_before_initialize_exits_cleanly() {
    let server = RawServer::spawn(&[("SNOWLUMA_MCP_LOG", "info")]);
    let (code, stderr) = server.finish().await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("ERROR"), "{stderr}");
    // A pipe is not a terminal: no hint.
    assert!(!stderr.contains("MCP client"), "{stderr}");
}

/// Runs the server with a pty as stdin (util-linux `script`) and sends Ctrl-D once the hint is
/// on the screen.
#[test]
fn a_terminal_gets_one_hint_and_the_server_still_serves() {
    assert!(
        Command::new("script").arg("--version").output().is_ok(),
        "this test needs `script` from util-linux: apt-get install bsdutils (Debian) or util-linux"
    );
    let command = format!("{} 2>&1", raw_client::binary());
    let mut child = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env("SNOWLUMA_MCP_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("script");
    // Read the screen on a thread; Ctrl-D goes only once the server has printed its hint.
    let mut screen = child.stdout.take().unwrap();
    let (seen_tx, seen_rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        use std::io::Read;
        let mut shown = Vec::new();
        let mut buffer = [0u8; 4096];
        let mut told = false;
        while let Ok(n @ 1..) = screen.read(&mut buffer) {
            shown.extend_from_slice(&buffer[..n]);
            if !told && text(&shown).contains("start it from an MCP client") {
                told = true;
                let _ = seen_tx.send(());
            }
        }
        shown
    });
    seen_rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the terminal hint within 60 s");
    use std::io::Write;
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"\x04").unwrap();
    drop(stdin);
    child.wait().expect("script ends");
    let shown = text(&reader.join().unwrap());
    assert_eq!(
        shown.matches("start it from an MCP client").count(),
        1,
        "{shown}"
    );
    assert!(shown.contains("snowluma-mcp catalog search"));
    assert!(!shown.contains("ERROR"), "{shown}");
}
