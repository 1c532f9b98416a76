//! A fake SnowLuma 1.11.1 WebSocket adapter (role Universal) for event tests and benchmarks.
//!
//! Include it with `#[path = "support/fake_snowluma_ws.rs"] mod fake_snowluma_ws;`. Like the
//! HTTP fake it serves 127.0.0.1 from its own thread and runtime. Wire behaviour follows
//! `shared/reference/snowluma-onebot-protocol.md` section c: the upgrade path must match
//! exactly (else HTTP 400), the token is checked after the 101 handshake (a bad one gets close
//! 1008 "invalid access token"), and an accepted client first receives lifecycle `connect`,
//! lifecycle `enable` and a heartbeat, then a heartbeat every `heartbeat` interval. Tests push
//! events, raw frames, drops and closes to every open connection.
#![allow(dead_code)] // each includer uses a different part of the API

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

#[derive(Clone, Debug)]
pub struct WsOptions {
    pub token: Option<String>,
    /// The adapter's configured path; SnowLuma's default is "/".
    pub path: String,
    /// The account every generated frame carries.
    pub self_id: i64,
    /// SnowLuma sends one every 30 s.
    pub heartbeat: Duration,
    /// Serve `wss:` with this configuration (see `support/test_tls.rs`); the URL becomes
    /// `wss://localhost:PORT<path>` so the certificate's name matches.
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

impl Default for WsOptions {
    fn default() -> Self {
        WsOptions {
            token: None,
            path: "/".into(),
            self_id: 10001,
            heartbeat: Duration::from_secs(30),
            tls: None,
        }
    }
}

enum Command {
    Text(Arc<str>),
    Batch(Arc<Vec<String>>),
    /// Drop the TCP connection without a close frame.
    Drop,
    Close(u16),
    /// Stop sending heartbeats but keep the connection open (a hung SnowLuma).
    Mute,
}

pub struct FakeEventSocket {
    /// `ws://127.0.0.1:PORT<path>` (`wss://localhost:PORT<path>` with TLS)
    pub url: String,
    pub port: u16,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

struct Shared {
    opts: WsOptions,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    connections: Vec<mpsc::UnboundedSender<Command>>,
    handshakes: usize,
    open: usize,
    /// Connections the client ended with a close frame (a clean goodbye, not a drop).
    client_closes: usize,
    authorizations: Vec<Option<String>>,
    /// The access token handshakes are checked against (starts as `WsOptions::token`).
    token: Option<String>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl FakeEventSocket {
    /// Kills the server as a crash would: open connections drop without a close frame and
    /// the port refuses connections until [`FakeEventSocket::revive`].
    pub fn kill(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let mut state = self.shared.lock();
        state.connections.clear();
        state.open = 0;
    }

    /// Serves again on the same port after [`FakeEventSocket::kill`] (the counters carry on).
    pub fn revive(&mut self) {
        let listener = (0..200)
            .find_map(|_| {
                std::net::TcpListener::bind(("127.0.0.1", self.port))
                    .inspect_err(|_| std::thread::sleep(Duration::from_millis(50)))
                    .ok()
            })
            .expect("fake WS: rebind the same port");
        let (stop, thread) = spawn_server(listener, self.shared.clone());
        self.stop = Some(stop);
        self.thread = Some(thread);
    }

    /// Keeps every open connection but sends no more heartbeats on it.
    pub fn mute_heartbeats(&self) {
        self.broadcast(|| Command::Mute);
    }

    pub fn start(opts: WsOptions) -> FakeEventSocket {
        let listener =
            std::net::TcpListener::bind(("127.0.0.1", 0)).expect("fake WS: bind 127.0.0.1");
        Self::start_on(listener, opts)
    }

    /// Serves on a listener the test already holds, e.g. one whose address first refused or
    /// stalled connections, so no other socket could take the port meanwhile.
    pub fn start_on(listener: std::net::TcpListener, opts: WsOptions) -> FakeEventSocket {
        listener
            .set_nonblocking(true)
            .expect("fake WS: nonblocking");
        let port = listener.local_addr().expect("local addr").port();
        let url = match opts.tls {
            Some(_) => format!("wss://localhost:{port}{}", opts.path),
            None => format!("ws://127.0.0.1:{port}{}", opts.path),
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                token: opts.token.clone(),
                ..State::default()
            }),
            opts,
        });
        let (stop_tx, thread) = spawn_server(listener, shared.clone());
        FakeEventSocket {
            url,
            port,
            shared,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    /// Sends one event to every open connection.
    pub fn push(&self, event: &Value) {
        self.push_raw(&event.to_string());
    }

    /// Sends one text frame, as is, to every open connection.
    pub fn push_raw(&self, text: &str) {
        self.broadcast(|| Command::Text(Arc::from(text)));
    }

    /// Sends many frames in order with one command (benchmarks).
    pub fn push_batch(&self, frames: Arc<Vec<String>>) {
        self.broadcast(|| Command::Batch(frames.clone()));
    }

    /// Drops every connection without a close frame (a network failure).
    pub fn drop_connections(&self) {
        self.broadcast(|| Command::Drop);
    }

    /// Closes every connection with `code`.
    pub fn close_connections(&self, code: u16) {
        self.broadcast(|| Command::Close(code));
    }

    /// Changes the token later handshakes must carry, as an operator changing SnowLuma's
    /// configuration would; open connections are not affected.
    pub fn set_token(&self, token: Option<&str>) {
        self.shared.lock().token = token.map(str::to_string);
    }

    /// Completed WebSocket handshakes so far.
    pub fn handshakes(&self) -> usize {
        self.shared.lock().handshakes
    }

    /// Connections currently open.
    pub fn open_connections(&self) -> usize {
        self.shared.lock().open
    }

    /// Connections the client closed with a close frame, as a released subscription does.
    pub fn client_closes(&self) -> usize {
        self.shared.lock().client_closes
    }

    /// The `Authorization` header of each handshake, in order.
    pub fn authorizations(&self) -> Vec<Option<String>> {
        self.shared.lock().authorizations.clone()
    }

    fn broadcast(&self, command: impl Fn() -> Command) {
        let mut state = self.shared.lock();
        state.connections.retain(|tx| tx.send(command()).is_ok());
    }
}

impl Drop for FakeEventSocket {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn spawn_server(
    listener: std::net::TcpListener,
    shared: Arc<Shared>,
) -> (
    tokio::sync::oneshot::Sender<()>,
    std::thread::JoinHandle<()>,
) {
    listener
        .set_nonblocking(true)
        .expect("fake WS: nonblocking");
    let port = listener.local_addr().expect("local addr").port();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
    let thread = std::thread::Builder::new()
        .name(format!("fake-snowluma-ws-{port}"))
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("fake WS runtime");
            rt.block_on(serve(listener, shared, stop_rx));
            // Dropping the runtime drops every connection without a close frame.
            rt.shutdown_background();
        })
        .expect("spawn fake WS thread");
    (stop_tx, thread)
}

async fn serve(
    listener: std::net::TcpListener,
    shared: Arc<Shared>,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) {
    let listener = tokio::net::TcpListener::from_std(listener).expect("fake WS listener");
    let acceptor = shared.opts.tls.clone().map(tokio_rustls::TlsAcceptor::from);
    loop {
        tokio::select! {
            _ = &mut stop => return,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let shared = shared.clone();
                match acceptor.clone() {
                    None => { tokio::spawn(connection(stream, shared)); }
                    Some(acceptor) => {
                        tokio::spawn(async move {
                            // An untrusting client aborts here: no handshake is counted.
                            if let Ok(stream) = acceptor.accept(stream).await {
                                connection(stream, shared).await;
                            }
                        });
                    }
                }
            }
        }
    }
}

async fn connection<S>(stream: S, shared: Arc<Shared>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let path = shared.opts.path.clone();
    let mut authorization = None;
    let mut query = None;
    // The callback's signature is tungstenite's; its large error type is not ours to shrink.
    #[allow(clippy::result_large_err)]
    let callback = |request: &Request, response: Response| {
        if request.uri().path() != path {
            let mut refusal = ErrorResponse::new(Some("Bad path for WebSocket".into()));
            *refusal.status_mut() = StatusCode::BAD_REQUEST;
            return Err(refusal);
        }
        authorization = request
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        query = request.uri().query().map(str::to_string);
        // Counted before the 101 goes out: a client that closes right after its handshake
        // (`snowluma-mcp check`) may be gone before this task runs again.
        let mut state = shared.lock();
        state.handshakes += 1;
        state.authorizations.push(authorization.clone());
        Ok(response)
    };
    let Ok(mut socket) = tokio_tungstenite::accept_hdr_async(stream, callback).await else {
        return;
    };
    let opts = &shared.opts;
    let token = shared.lock().token.clone();
    let token_ok = match &token {
        None => true,
        Some(token) => {
            authorization.as_deref() == Some(&format!("Bearer {token}"))
                || query.as_deref() == Some(&format!("access_token={token}"))
        }
    };
    let (tx, mut rx) = mpsc::unbounded_channel();
    {
        let mut state = shared.lock();
        if token_ok {
            state.open += 1;
            state.connections.push(tx);
        }
    }
    if !token_ok {
        // SnowLuma accepts the upgrade first and then closes with a policy violation.
        let _ = socket
            .close(Some(close_frame(1008, "invalid access token")))
            .await;
        return;
    }
    let interval_ms = opts.heartbeat.as_millis() as u64;
    for frame in [
        lifecycle(opts.self_id, "connect"),
        lifecycle(opts.self_id, "enable"),
        heartbeat_every(opts.self_id, interval_ms),
    ] {
        let _ = socket.send(Message::text(frame.to_string())).await;
    }
    let mut beat = tokio::time::interval(opts.heartbeat);
    beat.tick().await;
    let mut muted = false;
    loop {
        tokio::select! {
            _ = beat.tick(), if !muted => {
                let beat = heartbeat_every(opts.self_id, interval_ms);
                if socket.send(Message::text(beat.to_string())).await.is_err() {
                    break;
                }
            }
            command = rx.recv() => match command {
                Some(Command::Text(text)) => {
                    if socket.send(Message::text(text.to_string())).await.is_err() {
                        break;
                    }
                }
                Some(Command::Batch(frames)) => {
                    for frame in frames.iter() {
                        if socket.feed(Message::text(frame.clone())).await.is_err() {
                            break;
                        }
                    }
                    if socket.flush().await.is_err() {
                        break;
                    }
                }
                Some(Command::Drop) | None => break,
                Some(Command::Mute) => muted = true,
                Some(Command::Close(code)) => {
                    let _ = socket.close(Some(close_frame(code, "closed by the test"))).await;
                    // Wait for the client's answer so the close handshake completes.
                    while let Some(Ok(_)) = socket.next().await {}
                    break;
                }
            },
            incoming = socket.next() => match incoming {
                Some(Ok(Message::Close(_))) => {
                    shared.lock().client_closes += 1;
                    break;
                }
                None | Some(Err(_)) => break,
                Some(Ok(_)) => {}
            },
        }
    }
    shared.lock().open -= 1;
}

fn close_frame(code: u16, reason: &str) -> CloseFrame {
    CloseFrame {
        code: CloseCode::from(code),
        reason: reason.to_string().into(),
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

pub fn lifecycle(self_id: i64, sub_type: &str) -> Value {
    json!({"time": now(), "self_id": self_id, "post_type": "meta_event",
           "meta_event_type": "lifecycle", "sub_type": sub_type,
           "status": {"online": true, "good": true}})
}

pub fn heartbeat(self_id: i64) -> Value {
    heartbeat_every(self_id, 30_000)
}

/// A heartbeat announcing its interval in milliseconds, as SnowLuma's does.
pub fn heartbeat_every(self_id: i64, interval_ms: u64) -> Value {
    json!({"time": now(), "self_id": self_id, "post_type": "meta_event",
           "meta_event_type": "heartbeat", "status": {"online": true, "good": true},
           "interval": interval_ms})
}

/// A group message event, shaped like SnowLuma's converter output (array format).
pub fn group_message(self_id: i64, group_id: i64, user_id: i64, text: &str) -> Value {
    json!({"time": now(), "self_id": self_id, "post_type": "message", "message_type": "group",
           "sub_type": "normal", "message_id": -123456, "message_seq": 7, "group_id": group_id,
           "user_id": user_id, "anonymous": null,
           "message": [{"type": "text", "data": {"text": text}}], "raw_message": text, "font": 0,
           "sender": {"user_id": user_id, "nickname": "tester", "card": "", "role": "member",
                      "sex": "unknown", "age": 0}})
}

/// A private message from a friend.
pub fn private_message(self_id: i64, user_id: i64, text: &str) -> Value {
    json!({"time": now(), "self_id": self_id, "post_type": "message", "message_type": "private",
           "sub_type": "friend", "message_id": 42, "message_seq": 8, "user_id": user_id,
           "message": [{"type": "text", "data": {"text": text}}], "raw_message": text, "font": 0,
           "sender": {"user_id": user_id, "nickname": "friend", "sex": "unknown", "age": 0}})
}

/// The bot's own private message: `user_id` is the bot and there is no peer id.
pub fn private_message_sent(self_id: i64, text: &str) -> Value {
    let mut event = private_message(self_id, self_id, text);
    event["post_type"] = json!("message_sent");
    event
}

pub fn group_poke(self_id: i64, group_id: i64, user_id: i64) -> Value {
    json!({"time": now(), "self_id": self_id, "post_type": "notice", "notice_type": "notify",
           "sub_type": "poke", "group_id": group_id, "user_id": user_id, "target_id": self_id,
           "action": "", "suffix": "", "action_img_url": ""})
}

pub fn friend_request(self_id: i64, user_id: i64) -> Value {
    json!({"time": now(), "self_id": self_id, "post_type": "request", "request_type": "friend",
           "user_id": user_id, "comment": "hello", "flag": "u_abc"})
}

/// A group message with its own `message_id` (recovery deduplicates by it).
pub fn group_message_numbered(
    self_id: i64,
    group_id: i64,
    user_id: i64,
    text: &str,
    message_id: i64,
) -> Value {
    let mut event = group_message(self_id, group_id, user_id, text);
    event["message_id"] = json!(message_id);
    event
}
