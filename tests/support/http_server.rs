//! The built binary serving Streamable HTTP on a free loopback port (`--listen 127.0.0.1:0`;
//! the port is read from its start-up log line), plus raw HTTP helpers for checks that client
//! SDKs hide (status codes, headers, error bodies). Stderr is kept so tests can check that no
//! token was logged. Every wait is bounded; the process is killed on drop.

#![allow(dead_code)]

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

pub const TOKEN: &str = "http-test-token-5f3a9c";
const START_WAIT: Duration = Duration::from_secs(20);

pub struct HttpServer {
    child: Child,
    pub port: u16,
    /// `http://127.0.0.1:<port>/mcp`
    pub url: String,
    log: Arc<Mutex<String>>,
}

impl HttpServer {
    /// Starts `snowluma-mcp --transport http --listen 127.0.0.1:0` with `args` and `env`
    /// (SNOWLUMA_MCP_* variables of the test's own environment are removed first).
    pub async fn start(env: &[(&str, &str)], args: &[&str]) -> HttpServer {
        let mut command = Command::new(env!("CARGO_BIN_EXE_snowluma-mcp"));
        for (name, _) in std::env::vars() {
            if name.starts_with("SNOWLUMA_MCP_") {
                command.env_remove(name);
            }
        }
        command
            .args(["--transport", "http", "--listen", "127.0.0.1:0"])
            .args(args)
            .env("SNOWLUMA_MCP_LOG", "info,rmcp=warn")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("spawn snowluma-mcp");
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let (port_tx, port_rx) = tokio::sync::oneshot::channel();
        let sink = log.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            let mut port_tx = Some(port_tx);
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(rest) = line
                    .split("serving MCP over HTTP at http://127.0.0.1:")
                    .nth(1)
                    && let Some(tx) = port_tx.take()
                {
                    let port: u16 = rest.split('/').next().unwrap().parse().unwrap();
                    let _ = tx.send(port);
                }
                let mut log = sink.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        let port = tokio::time::timeout(START_WAIT, port_rx)
            .await
            .expect("the server did not announce its port in time")
            .expect("the server exited before listening");
        HttpServer {
            child,
            port,
            url: format!("http://127.0.0.1:{port}/mcp"),
            log,
        }
    }

    /// The server's process id (to read its command line).
    pub fn pid(&self) -> u32 {
        self.child.id().expect("server still running")
    }

    /// Everything the server wrote to stderr so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Whether the process is still running (it has not exited or been killed).
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Kills the process (SIGKILL: no clean shutdown, as a crash would) and waits for it.
    pub async fn stop(mut self) {
        let _ = self.child.start_kill();
        let _ = tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await;
    }
}

/// Runs the binary with `args` expecting it to refuse to start; returns its stderr.
pub async fn refuses_to_start(env: &[(&str, &str)], args: &[&str]) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_snowluma-mcp"));
    for (name, _) in std::env::vars() {
        if name.starts_with("SNOWLUMA_MCP_") {
            command.env_remove(name);
        }
    }
    command
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(20), command.output())
        .await
        .expect("the server should exit at once")
        .expect("run snowluma-mcp");
    assert_eq!(
        output.status.code(),
        Some(2),
        "a configuration error exits 2"
    );
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// One raw HTTP exchange.
pub struct Exchange {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: String,
}

impl Exchange {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Whether the `content-type` header starts with `prefix` (`application/json`,
    /// `text/event-stream`).
    pub fn content_type_is(&self, prefix: &str) -> bool {
        self.header("content-type")
            .is_some_and(|t| t.starts_with(prefix))
    }

    /// The body as JSON (a refusal), or the last JSON-RPC message of an SSE body.
    pub fn json(&self) -> Value {
        if let Ok(value) = serde_json::from_str(&self.body) {
            return value;
        }
        self.sse_messages().pop().unwrap_or(Value::Null)
    }

    /// The JSON-RPC messages of an SSE body, in order.
    pub fn sse_messages(&self) -> Vec<Value> {
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .collect()
    }
}

/// reqwest is built with rustls but no default crypto provider (the server hands it its own
/// TLS configuration); any plain client in a test process needs the default installed once.
pub fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

pub fn client() -> reqwest::Client {
    install_tls_provider();
    reqwest::Client::builder()
        // A hang bound only (as raw_client::WAIT): a slow fault cell on a loaded runner takes
        // well over 10 s.
        .timeout(Duration::from_secs(60))
        // The server under test speaks plain HTTP on loopback: no trust roots are needed, and
        // loading the system's (parsing its PEM bundle, unoptimized) cost more CPU than the
        // requests themselves.
        .tls_certs_only([])
        .build()
        .unwrap()
}

/// Sends `method` to `url` with the MCP POST headers, `token` (if any) and `extra` headers.
pub async fn send(
    method: reqwest::Method,
    url: &str,
    token: Option<&str>,
    extra: &[(&str, &str)],
    body: Option<&Value>,
) -> Exchange {
    let mut request = client()
        .request(method, url)
        .header("accept", "application/json, text/event-stream");
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    let response = request.send().await.expect("HTTP request");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.text().await.unwrap_or_default();
    Exchange {
        status,
        headers,
        body,
    }
}

pub async fn post(
    url: &str,
    token: Option<&str>,
    extra: &[(&str, &str)],
    body: &Value,
) -> Exchange {
    send(reqwest::Method::POST, url, token, extra, Some(body)).await
}

pub fn initialize_body(id: i64) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": { "name": "raw-http-test", "version": "1.0" }
        }
    })
}

/// A legacy session opened with the raw handshake; returns its id.
pub async fn open_session(url: &str, token: Option<&str>) -> String {
    let reply = post(url, token, &[], &initialize_body(1)).await;
    assert_eq!(reply.status, 200, "initialize: {}", reply.body);
    assert_eq!(reply.json()["result"]["serverInfo"]["name"], "snowluma-mcp");
    let id = reply
        .header("mcp-session-id")
        .expect("Mcp-Session-Id on the initialize reply")
        .to_string();
    let done = post(
        url,
        token,
        &[
            ("mcp-session-id", &id),
            ("mcp-protocol-version", "2025-11-25"),
        ],
        &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
    )
    .await;
    assert_eq!(done.status, 202, "{}", done.body);
    id
}

/// A request inside a legacy session.
pub async fn in_session(url: &str, session: &str, body: &Value) -> Exchange {
    post(
        url,
        Some(TOKEN),
        &[
            ("mcp-session-id", session),
            ("mcp-protocol-version", "2025-11-25"),
        ],
        body,
    )
    .await
}
