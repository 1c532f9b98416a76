//! The leak audit's workload over stdio: a rig (fake SnowLuma and WebSocket adapter with this
//! run's token, private directories, a marked upload and a marked download), a peer that
//! traces every tool call, and one function per surface that puts markers where callers put
//! message content and checks the call really happened. The audit itself (what may appear
//! where) is in `leak_audit.rs`.
#![allow(dead_code)] // each includer uses a different part

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::fake_snowluma::{FakeSnowLuma, Fault, GROUP_ID, SELF_ID, USER_ID};
use crate::fake_snowluma_ws::{FakeEventSocket, WsOptions, group_message};
use crate::leak_audit::{Secrets, TraceIds};
use crate::raw_client::{RawServer, structured};
use crate::stream_helpers::Dirs;

pub const TASKS_EXT: &str = "io.modelcontextprotocol/tasks";

/// File contents with the marker on every line, large enough to take several chunks.
pub fn marked_file(marker: &str) -> String {
    (0..3000).map(|i| format!("line {i}: {marker}\n")).collect()
}

/// A secret file as an operator would keep it: private, one trailing newline.
pub fn secret_file(dir: &Path, name: &str, secret: &str) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, format!("{secret}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path.to_string_lossy().into_owned()
}

pub fn ws_fake(token: &str) -> FakeEventSocket {
    FakeEventSocket::start(WsOptions {
        token: Some(token.to_string()),
        ..WsOptions::default()
    })
}

/// A tool result's `diagnostics.outcome`.
pub fn outcome(response: &Value) -> String {
    structured(response)["diagnostics"]["outcome"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Everything one stdio server run talks to and writes into.
pub struct Rig {
    pub secrets: Secrets,
    pub fake: FakeSnowLuma,
    pub socket: FakeEventSocket,
    pub dirs: Dirs,
    pub tasks: PathBuf,
    /// A marked file inside the upload root.
    pub input: String,
    /// The `file` param of a marked file the fake serves for download.
    pub remote: String,
}

impl Rig {
    pub fn new(name: &str) -> Rig {
        let secrets = Secrets::new();
        let fake = FakeSnowLuma::start_blocking(crate::fake_snowluma::FakeOptions {
            token: Some(secrets.token.clone()),
            ..crate::fake_snowluma::FakeOptions::default()
        });
        let socket = ws_fake(&secrets.token);
        let dirs = Dirs::new(name);
        let input = dirs.uploads.join("notes.txt");
        std::fs::write(&input, marked_file(&secrets.marker("uploadfile"))).unwrap();
        let remote = fake.add_file(
            "report.txt",
            marked_file(&secrets.marker("downloadfile")).into_bytes(),
        );
        Rig {
            tasks: dirs.root.join("tasks"),
            input: input.to_string_lossy().into_owned(),
            secrets,
            fake,
            socket,
            dirs,
            remote,
        }
    }

    /// Starts the server in write mode with every service on and logging at `trace`; the
    /// token comes from `token` (its environment variable or its file setting).
    pub fn spawn(&self, token: (&str, &str)) -> RawServer {
        let downloads = self.dirs.downloads.to_string_lossy().into_owned();
        let uploads = self.dirs.uploads.to_string_lossy().into_owned();
        let tasks = self.tasks.to_string_lossy().into_owned();
        let server = RawServer::spawn(&[
            ("SNOWLUMA_MCP_MODE", "write"),
            ("SNOWLUMA_MCP_ENDPOINT", self.fake.url.as_str()),
            ("SNOWLUMA_MCP_EVENTS_URL", self.socket.url.as_str()),
            ("SNOWLUMA_MCP_DOWNLOAD_DIR", downloads.as_str()),
            ("SNOWLUMA_MCP_UPLOAD_ROOT", uploads.as_str()),
            ("SNOWLUMA_MCP_TASK_DIR", tasks.as_str()),
            ("SNOWLUMA_MCP_TOOLSETS", "message"),
            ("SNOWLUMA_MCP_TIMEOUT_MS", "1000"),
            ("SNOWLUMA_MCP_LOG", "trace"),
            // The workload sends to one user faster than the send limits allow.
            ("SNOWLUMA_MCP_SEND_PER_TARGET_PER_MIN", "0"),
            ("SNOWLUMA_MCP_SEND_TOTAL_PER_MIN", "0"),
            token,
        ]);
        self.secrets.assert_argv_clean(server.pid());
        server
    }

    /// The fakes saw the token and the markers (see [`assert_fake_saw`]), and the event
    /// adapter got the token on each of its `handshakes`.
    pub fn assert_fakes_saw(&self, markers: &[String], handshakes: usize) {
        assert_fake_saw(&self.fake, &self.secrets, markers);
        let bearer = format!("Bearer {}", self.secrets.token);
        assert_eq!(self.socket.authorizations(), vec![Some(bearer); handshakes]);
    }
}

/// The fake SnowLuma saw the token on every request (so the token was really in play) and
/// every marker in `markers` reached it (so the content really went through the server).
pub fn assert_fake_saw(fake: &FakeSnowLuma, secrets: &Secrets, markers: &[String]) {
    let requests = fake.requests();
    assert!(!requests.is_empty(), "the fake SnowLuma was called");
    let bearer = format!("Bearer {}", secrets.token);
    for request in &requests {
        assert_eq!(
            request.header("authorization"),
            Some(bearer.as_str()),
            "every request to SnowLuma carries the token ({:?})",
            request.action
        );
    }
    let bodies: String = requests
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect();
    for marker in markers {
        assert!(bodies.contains(marker), "{marker} reached SnowLuma");
    }
}

/// A stdio peer that traces every tool call and numbers its requests.
pub struct Peer {
    pub server: RawServer,
    pub traces: TraceIds,
    id: i64,
    /// The `_meta` every request carries besides its traceparent: the modern envelope, or
    /// `{}` for a legacy session.
    envelope: Value,
}

impl Peer {
    pub fn new(server: RawServer, envelope: Value) -> Peer {
        Peer {
            server,
            traces: TraceIds::new(),
            id: 0,
            envelope,
        }
    }

    pub async fn request(&mut self, method: &str, mut params: Value) -> Value {
        self.id += 1;
        if self.envelope != json!({}) {
            params["_meta"] = self.envelope.clone();
        }
        self.server.request(self.id, method, params).await
    }

    /// tools/call with a fresh traceparent; `extra` adds to `params` (an MRTR retry) and to
    /// `_meta` (a progress token) alike.
    pub async fn call_with(&mut self, tool: &str, args: Value, extra: Value) -> Value {
        self.id += 1;
        let mut meta = self.envelope.clone();
        meta["traceparent"] = json!(self.traces.next());
        let mut params = json!({ "name": tool, "arguments": args });
        for (key, value) in extra.as_object().cloned().unwrap_or_default() {
            if key == "progressToken" {
                meta[key] = value;
            } else {
                params[key] = value;
            }
        }
        params["_meta"] = meta;
        self.server.request(self.id, "tools/call", params).await
    }

    pub async fn call(&mut self, tool: &str, args: Value) -> Value {
        self.call_with(tool, args, json!({})).await
    }

    /// Starts a tools/call without waiting; returns its id.
    async fn start_call(&mut self, tool: &str, args: Value) -> i64 {
        self.id += 1;
        let mut meta = self.envelope.clone();
        meta["traceparent"] = json!(self.traces.next());
        let call = json!({ "jsonrpc": "2.0", "id": self.id, "method": "tools/call",
                           "params": { "name": tool, "arguments": args, "_meta": meta } });
        self.server.send(&call).await;
        self.id
    }
}

/// Waits for a server notification or request with `method`, keeping the rest in the backlog.
async fn incoming(server: &mut RawServer, method: &str) -> Value {
    if let Some(i) = server.backlog.iter().position(|m| m["method"] == method) {
        return server.backlog.remove(i);
    }
    while let Some(message) = server.next().await {
        if message["method"] == method {
            return message;
        }
        server.backlog.push(message);
    }
    panic!("no {method} arrived");
}

fn send_private(message: &str) -> Value {
    json!({ "action": "send_private_msg",
            "params": { "user_id": USER_ID, "message": message } })
}

/// A marked message through invoke_action, the typed send_private_msg tool and as message
/// segments; returns the markers sent.
pub async fn ordinary_calls(peer: &mut Peer, rig: &Rig) -> Vec<String> {
    let status = peer
        .call("query_action", json!({ "action": "get_status" }))
        .await;
    assert_eq!(outcome(&status), "success", "{status}");
    let sent: Vec<String> = ["invoke", "typed", "segments"]
        .iter()
        .map(|s| rig.secrets.marker(s))
        .collect();
    let segments = json!([{ "type": "text", "data": { "text": sent[2] } }]);
    for (tool, args) in [
        ("invoke_action", send_private(&sent[0])),
        (
            "send_private_msg",
            json!({ "user_id": USER_ID, "message": sent[1] }),
        ),
        (
            "invoke_action",
            json!({ "action": "send_group_msg",
                    "params": { "group_id": GROUP_ID, "message": segments } }),
        ),
    ] {
        let response = peer.call(tool, args).await;
        assert_eq!(outcome(&response), "success", "{tool}: {response}");
    }
    sent
}

/// A marked message while SnowLuma fails each way it can; every call fails visibly. Returns
/// the markers that reached SnowLuma.
pub async fn failing_calls(peer: &mut Peer, rig: &Rig) -> Vec<String> {
    let mut sent = Vec::new();
    for (fault, label) in [
        (Fault::Unauthorized, "status401"),
        (Fault::ServerError, "status500"),
        (Fault::BadJson, "badjson"),
        (Fault::Slow(Duration::from_secs(3)), "timeout"),
        (Fault::Refuse, "refused"),
        (Fault::ErrorFrame, "businessfailure"),
    ] {
        rig.fake.set_fault(Some("send_private_msg"), fault);
        let marker = rig.secrets.marker(label);
        let response = peer.call("invoke_action", send_private(&marker)).await;
        assert_ne!(outcome(&response), "success", "{label}: {response}");
        rig.fake.clear_faults();
        sent.push(marker);
    }
    sent
}

/// Arguments with a marker where something else belongs (an integer, an object, one of a
/// few names): each is refused, and the refusal must say where without repeating it.
pub async fn misplaced_arguments(peer: &mut Peer, secrets: &Secrets) {
    let cases = [
        (
            "invoke_action",
            json!({ "action": "send_private_msg",
                    "params": { "user_id": secrets.marker("badint"), "message": "x" } }),
        ),
        (
            "invoke_action",
            json!({ "action": "send_private_msg", "params": secrets.marker("badparams") }),
        ),
        (
            "preview_message",
            json!({ "message_type": "private", "target_id": secrets.marker("badtarget"),
                    "text": "x" }),
        ),
        (
            "preview_message",
            json!({ "message_type": secrets.marker("badenum"), "target_id": USER_ID,
                    "text": "x" }),
        ),
        (
            "subscribe_events",
            json!({ "self_id": SELF_ID, "types": [secrets.marker("badtype")] }),
        ),
        (
            "send_private_msg",
            json!({ "user_id": secrets.marker("typedbadint"), "message": "x" }),
        ),
    ];
    for (tool, args) in cases {
        let response = peer.call(tool, args).await;
        assert_eq!(response["result"]["isError"], true, "{tool}: {response}");
    }
}

/// get_runtime_info plain and with the connection check, once while SnowLuma answers 401:
/// never a token, a marker or the endpoint.
pub async fn runtime_info(peer: &mut Peer, rig: &Rig) {
    for (check, fault) in [
        (false, None),
        (true, None),
        (true, Some(Fault::Unauthorized)),
    ] {
        if let Some(fault) = fault {
            rig.fake.set_fault(None, fault);
        }
        let info = peer
            .call("get_runtime_info", json!({ "check_connection": check }))
            .await;
        rig.fake.clear_faults();
        let text = info.to_string();
        rig.secrets.assert_clean("get_runtime_info", &text);
        let endpoint = format!("127.0.0.1:{}", rig.fake.port);
        assert!(
            !text.contains(&endpoint),
            "the endpoint is not shown: {text}"
        );
    }
}

/// preview_message returns the draft it was asked for, text included.
pub async fn preview(peer: &mut Peer, secrets: &Secrets) {
    let args = json!({ "message_type": "private", "target_id": USER_ID,
                       "text": secrets.marker("preview") });
    let preview = peer.call("preview_message", args).await;
    assert!(secrets.has_marker(&preview.to_string()), "{preview}");
}

/// A marked file down and one up with progress, then both failing midway; returns the
/// path the download saved.
pub async fn streams(peer: &mut Peer, rig: &Rig) -> PathBuf {
    let progress = json!({ "progressToken": "transfer" });
    let download = json!({ "action": "download_file_stream", "params": { "file": rig.remote } });
    let upload = json!({ "action": "upload_file_stream",
                         "execution": { "input_file": rig.input } });
    let downloaded = peer
        .call_with("invoke_action", download.clone(), progress.clone())
        .await;
    assert_eq!(outcome(&downloaded), "success", "{downloaded}");
    let saved = structured(&downloaded)["result"]["path"]
        .as_str()
        .unwrap()
        .into();
    let uploaded = peer
        .call_with("invoke_action", upload.clone(), progress.clone())
        .await;
    assert_eq!(outcome(&uploaded), "success", "{uploaded}");
    let stream_id = structured(&uploaded)["diagnostics"]["stream_id"]
        .as_str()
        .unwrap()
        .to_string();
    let bytes = rig.fake.uploaded(&stream_id).and_then(|u| u.bytes);
    let text = String::from_utf8_lossy(bytes.as_deref().unwrap_or_default()).into_owned();
    assert!(rig.secrets.has_marker(&text), "the marked file went up");
    break_transfers(rig);
    for args in [upload, download] {
        let broken = peer
            .call_with("invoke_action", args, progress.clone())
            .await;
        assert_ne!(outcome(&broken), "success", "{broken}");
    }
    rig.fake.clear_faults();
    saved
}

fn break_transfers(rig: &Rig) {
    rig.fake
        .set_fault(Some("upload_file_stream"), Fault::ErrorFrame);
    rig.fake.set_fault(
        Some("download_file_stream"),
        Fault::DisconnectMidStream { after_frames: 2 },
    );
}

/// The same transfers as background tasks, failing and then succeeding, each polled to its
/// end; returns the paths the successful download saved.
pub async fn background_tasks(peer: &mut Peer, rig: &Rig) -> Vec<PathBuf> {
    let transfers = [
        json!({ "action": "upload_file_stream", "execution": { "input_file": rig.input } }),
        json!({ "action": "download_file_stream", "params": { "file": rig.remote } }),
    ];
    let mut saved = Vec::new();
    for failing in [true, false] {
        if failing {
            break_transfers(rig);
        }
        for args in &transfers {
            let started = peer.call("invoke_action_background", args.clone()).await;
            let task = started["result"]["taskId"]
                .as_str()
                .unwrap_or_else(|| panic!("a task handle: {started}"))
                .to_string();
            let done = poll_task(peer, &task).await;
            let result = &done["result"]["result"]["structuredContent"];
            let succeeded = result["diagnostics"]["outcome"] == "success";
            assert_eq!(succeeded, !failing, "{done}");
            if let Some(path) = result["result"]["path"].as_str() {
                saved.push(path.into());
            }
        }
        rig.fake.clear_faults();
    }
    peer.call("list_tasks", json!({})).await;
    saved
}

async fn poll_task(peer: &mut Peer, task: &str) -> Value {
    for _ in 0..400 {
        let state = peer.request("tasks/get", json!({ "taskId": task })).await;
        if state["result"]["status"] != "working" {
            return state;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("task {task} still working after 400 polls");
}

/// Modern input completion: two refused answers holding a marker, then an accepted one;
/// returns the marker the accepted answer sent.
pub async fn modern_input(peer: &mut Peer, secrets: &Secrets) -> String {
    let args = json!({ "action": "send_private_msg", "params": { "user_id": USER_ID } });
    let answered = secrets.marker("inputanswer");
    let refused = secrets.marker("inputrefused");
    for (answer, accepted) in [
        (
            format!(r#"{{"message":"{refused}","extra":"{refused}"}}"#),
            false,
        ),
        (format!(r#"{{"message":"{refused}"#), false),
        (format!(r#"{{"message":"{answered}"}}"#), true),
    ] {
        let asked = peer.call("invoke_action_with_input", args.clone()).await;
        let state = asked["result"]["requestState"]
            .as_str()
            .unwrap_or_else(|| panic!("input_required: {asked}"))
            .to_string();
        let retry = json!({
            "inputResponses": { "missing_params": { "action": "accept",
                                                    "content": { "params_json": answer } } },
            "requestState": state });
        let done = peer
            .call_with("invoke_action_with_input", args.clone(), retry)
            .await;
        assert_eq!(outcome(&done) == "success", accepted, "{done}");
    }
    answered
}

/// Legacy input completion through elicitation/create; returns the marker the answer sent.
pub async fn legacy_input(peer: &mut Peer, secrets: &Secrets) -> String {
    let answered = secrets.marker("elicited");
    let args = json!({ "action": "send_private_msg", "params": { "user_id": USER_ID } });
    let id = peer.start_call("invoke_action_with_input", args).await;
    let prompt = incoming(&mut peer.server, "elicitation/create").await;
    let answer = json!({ "action": "accept",
                         "content": { "params_json": format!(r#"{{"message":"{answered}"}}"#) } });
    peer.server
        .send(&json!({ "jsonrpc": "2.0", "id": prompt["id"], "result": answer }))
        .await;
    let done = peer.server.wait_for_id(&json!(id)).await;
    assert_eq!(outcome(&done), "success", "{done}");
    answered
}

async fn subscribe(peer: &mut Peer) -> String {
    let subscribed = peer
        .call("subscribe_events", json!({ "self_id": SELF_ID }))
        .await;
    structured(&subscribed)["result"]["uri"]
        .as_str()
        .unwrap_or_else(|| panic!("an event resource: {subscribed}"))
        .to_string()
}

/// A marked event comes back through read_events and resources/read; then a malformed frame
/// holding a marker stops the connection, whose stop detail the page shows.
pub async fn modern_events(peer: &mut Peer, rig: &Rig) {
    let uri = subscribe(peer).await;
    let event = group_message(SELF_ID, GROUP_ID, USER_ID, &rig.secrets.marker("event"));
    rig.socket.push(&event);
    let mut page = Value::Null;
    for _ in 0..50 {
        page = peer
            .call("read_events", json!({ "uri": uri, "wait_ms": 200 }))
            .await;
        if rig.secrets.has_marker(&page.to_string()) {
            break;
        }
    }
    assert!(rig.secrets.has_marker(&page.to_string()), "{page}");
    let read = peer.request("resources/read", json!({ "uri": uri })).await;
    assert!(rig.secrets.has_marker(&read.to_string()), "{read}");
    let frame = format!(r#"{{"post_type": "{}""#, rig.secrets.marker("badframe"));
    rig.socket.push_raw(&frame);
    let mut stopped = Value::Null;
    for _ in 0..100 {
        stopped = peer.request("resources/read", json!({ "uri": uri })).await;
        if stopped.to_string().contains("not a OneBot event") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        stopped.to_string().contains("not a OneBot event"),
        "{stopped}"
    );
    peer.call("unsubscribe_events", json!({ "uri": uri })).await;
}

/// resources/subscribe, a marked event, the update notification (which names only the
/// URI), resources/read and the listing.
pub async fn legacy_events(peer: &mut Peer, rig: &Rig) {
    let uri = subscribe(peer).await;
    let listened = peer
        .request("resources/subscribe", json!({ "uri": uri }))
        .await;
    assert!(listened.get("error").is_none(), "{listened}");
    let event = group_message(SELF_ID, GROUP_ID, USER_ID, &rig.secrets.marker("event"));
    rig.socket.push(&event);
    incoming(&mut peer.server, "notifications/resources/updated").await;
    let read = peer.request("resources/read", json!({ "uri": uri })).await;
    assert!(rig.secrets.has_marker(&read.to_string()), "{read}");
    peer.request("resources/list", json!({})).await;
    peer.call("unsubscribe_events", json!({ "uri": uri })).await;
}

/// A notification before the first request, holding a marker: dropped with a DEBUG line
/// that must not quote it.
pub async fn early_notification(server: &mut RawServer, secrets: &Secrets) {
    let early = json!({ "jsonrpc": "2.0", "method": "notifications/message",
                        "params": { "level": "info", "data": secrets.marker("early") } });
    server.send(&early).await;
}

/// Lines a client should not send in a running session, each holding a marker: a
/// notification rmcp cannot parse, and a line that is not JSON.
pub async fn stray_lines(server: &mut RawServer, secrets: &Secrets) {
    server
        .send_line(&format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":{{}},"progress":"{}"}}}}"#,
            secrets.marker("badnotification")
        ))
        .await;
    server
        .send_line(&format!(
            r#"{{"jsonrpc":"2.0","id":"x","method":"{}"#,
            secrets.marker("badline")
        ))
        .await;
}

/// The whole of one stdio run: every stdout message, every stderr line, a diagnostics line
/// per traced call and at least one DEBUG line (the filter really is that verbose).
pub async fn audit_stdio(peer: Peer, secrets: &Secrets) {
    let transcript = peer.server.transcript();
    let (_, stderr) = peer.server.finish().await;
    assert!(!transcript.is_empty());
    for (n, line) in transcript.iter().enumerate() {
        secrets.assert_message_clean(&format!("stdout message {n}"), line);
    }
    secrets.assert_clean("stderr", &stderr);
    peer.traces.assert_logged(&stderr);
    assert!(
        stderr.lines().any(|l| l.contains(" DEBUG ")),
        "the trace filter lets DEBUG lines through:\n{stderr}"
    );
}
