//! One MCP client face over both transports and both protocol generations, for tests that run
//! the same scenario everywhere (the fault matrix): the built binary over stdio (raw JSON
//! lines, `raw_client.rs`) or over Streamable HTTP (raw POSTs, `http_server.rs`), speaking
//! either a legacy `initialize` session or stateless 2026-07-28 requests. Every tool result is
//! checked against the outputSchema the server advertised to the same client, and against its
//! text block. Include it after `raw_client.rs` and `http_server.rs`.

#![allow(dead_code)]

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::http_server::{self, HttpServer, TOKEN, open_session};
use crate::raw_client::{RawServer, modern_meta, structured};

pub const TASKS_EXT: &str = "io.modelcontextprotocol/tasks";
const LEGACY_VERSION: &str = "2025-11-25";
const MODERN_VERSION: &str = "2026-07-28";

/// A loopback port that refuses connections: bound but not listening, so it stays ours. The
/// test later calls `listen` on the socket and hands the listener to a fake, with no window
/// in which another socket could take the port. Needs a tokio runtime.
pub fn refusing_port() -> (tokio::net::TcpSocket, u16) {
    let socket = tokio::net::TcpSocket::new_v4().expect("a TCP socket");
    socket
        .bind("127.0.0.1:0".parse().unwrap())
        .expect("bind 127.0.0.1");
    let port = socket.local_addr().expect("local address").port();
    (socket, port)
}

/// Starts listening on a socket from `refusing_port`: connections are now accepted by the
/// kernel (and wait in its backlog until something accepts them).
pub fn listen(socket: tokio::net::TcpSocket) -> std::net::TcpListener {
    let listener = socket.listen(64).expect("listen");
    listener.into_std().expect("a std listener")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Stdio,
    Http,
}

/// A transport and a protocol generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerKind {
    pub transport: Transport,
    /// 2026-07-28 per-request metadata; otherwise a legacy `initialize` session.
    pub modern: bool,
}

impl PeerKind {
    pub const fn new(transport: Transport, modern: bool) -> Self {
        PeerKind { transport, modern }
    }
}

impl std::fmt::Display for PeerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let transport = match self.transport {
            Transport::Stdio => "stdio",
            Transport::Http => "http",
        };
        let era = if self.modern { "modern" } else { "legacy" };
        write!(f, "{transport}/{era}")
    }
}

/// Both transports in both generations.
pub const EVERY_KIND: [PeerKind; 4] = [
    PeerKind::new(Transport::Stdio, false),
    PeerKind::new(Transport::Stdio, true),
    PeerKind::new(Transport::Http, false),
    PeerKind::new(Transport::Http, true),
];

enum Link {
    Stdio(RawServer),
    /// `session` is the legacy session id; modern requests are stateless.
    Http {
        server: HttpServer,
        session: Option<String>,
    },
}

/// A completed tools/call.
#[derive(Debug)]
pub struct ToolCall {
    /// The whole JSON-RPC response.
    pub response: Value,
    pub is_error: bool,
    /// structuredContent (equal to the text block): `{result, diagnostics}`.
    pub body: Value,
}

impl ToolCall {
    pub fn kind(&self) -> &Value {
        &self.body["diagnostics"]["kind"]
    }

    pub fn outcome(&self) -> &Value {
        &self.body["diagnostics"]["outcome"]
    }
}

pub struct Peer {
    pub kind: PeerKind,
    link: Link,
    next_id: i64,
    /// Advertised outputSchemas by tool name (one client, one capability set).
    schemas: Option<HashMap<String, Value>>,
    /// Compiled validators of those schemas, built on first use: compiling one per result
    /// would cost more than the call itself in an unoptimized build.
    validators: HashMap<String, jsonschema::Validator>,
    /// Tool results checked against an advertised outputSchema so far.
    pub validated: usize,
}

impl Peer {
    /// Starts the binary with `env` on `kind`'s transport and opens the client side. Modern
    /// requests declare the tasks extension, so task tools are offered where configured.
    pub async fn start(kind: PeerKind, env: &[(&str, &str)]) -> Peer {
        let link = match kind.transport {
            Transport::Stdio => Link::Stdio(RawServer::spawn(env)),
            Transport::Http => {
                let mut env = env.to_vec();
                env.push(("SNOWLUMA_MCP_HTTP_TOKEN", TOKEN));
                let server = HttpServer::start(&env, &[]).await;
                Link::Http {
                    server,
                    session: None,
                }
            }
        };
        let mut peer = Peer {
            kind,
            link,
            next_id: 1,
            schemas: None,
            validators: HashMap::new(),
            validated: 0,
        };
        if !kind.modern {
            peer.initialize().await;
        }
        peer
    }

    async fn initialize(&mut self) {
        match &mut self.link {
            Link::Stdio(server) => {
                let init = server
                    .request(
                        0,
                        "initialize",
                        json!({ "protocolVersion": LEGACY_VERSION, "capabilities": {},
                                "clientInfo": { "name": "fault-matrix", "version": "1" } }),
                    )
                    .await;
                assert!(init["result"]["serverInfo"].is_object(), "{init}");
                server
                    .send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
                    .await;
            }
            Link::Http { server, session } => {
                *session = Some(open_session(&server.url, Some(TOKEN)).await);
            }
        }
    }

    /// The per-request metadata of a modern request.
    fn meta(&self) -> Option<Value> {
        self.kind
            .modern
            .then(|| modern_meta(json!({ "extensions": { TASKS_EXT: {} } })))
    }

    /// Sends one request (adding the modern metadata) and returns the JSON-RPC response.
    pub async fn request(&mut self, method: &str, mut params: Value) -> Value {
        if let Some(meta) = self.meta() {
            params["_meta"] = meta;
        }
        let id = self.next_id;
        self.next_id += 1;
        match &mut self.link {
            Link::Stdio(server) => {
                // Sent as a plain line: this peer validates tool results itself.
                let body =
                    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
                server.send_line(&body.to_string()).await;
                server.wait_for_id(&json!(id)).await
            }
            Link::Http { server, session } => {
                let body =
                    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
                let reply = match session {
                    Some(session) => http_server::in_session(&server.url, session, &body).await,
                    None => {
                        // The routing headers a 2026-07-28 POST carries (SEP-2243).
                        let name = ["name", "uri", "taskId"]
                            .iter()
                            .find_map(|key| params[*key].as_str())
                            .map(str::to_string);
                        let mut headers = vec![
                            ("mcp-protocol-version", MODERN_VERSION),
                            ("mcp-method", method),
                        ];
                        if let Some(name) = &name {
                            headers.push(("mcp-name", name.as_str()));
                        }
                        http_server::post(&server.url, Some(TOKEN), &headers, &body).await
                    }
                };
                assert_eq!(reply.status, 200, "{method}: {}", reply.body);
                reply.json()
            }
        }
    }

    /// tools/call; the result's structuredContent is checked against the tool's advertised
    /// outputSchema and its text block.
    pub async fn call(&mut self, tool: &str, args: Value) -> ToolCall {
        let response = self
            .request("tools/call", json!({ "name": tool, "arguments": args }))
            .await;
        assert!(
            response.get("result").is_some(),
            "{}: {tool} got no result: {response}",
            self.kind
        );
        let body = structured(&response);
        self.validate(tool, &body).await;
        ToolCall {
            is_error: response["result"]["isError"] == json!(true),
            response,
            body,
        }
    }

    /// Checks `structured` (a tool result's structuredContent, e.g. one saved in a task)
    /// against the outputSchema the server advertises for `tool`.
    pub async fn validate(&mut self, tool: &str, structured: &Value) {
        if self.schemas.is_none() {
            let listing = self.request("tools/list", json!({})).await;
            let schemas = listing["result"]["tools"]
                .as_array()
                .unwrap_or_else(|| panic!("tools/list: {listing}"))
                .iter()
                .filter_map(|t| {
                    Some((
                        t["name"].as_str()?.to_string(),
                        t.get("outputSchema")?.clone(),
                    ))
                })
                .collect();
            self.schemas = Some(schemas);
        }
        if !self.validators.contains_key(tool) {
            let schema = self.schemas.as_ref().and_then(|s| s.get(tool));
            let schema = schema.unwrap_or_else(|| panic!("{}: {tool} is not listed", self.kind));
            let validator = jsonschema::validator_for(schema).unwrap_or_else(|e| {
                panic!("{tool}: the advertised outputSchema is not a valid schema: {e}")
            });
            self.validators.insert(tool.to_string(), validator);
        }
        let errors: Vec<String> = self.validators[tool]
            .iter_errors(structured)
            .map(|e| format!("{e} at {}", e.instance_path))
            .collect();
        assert!(
            errors.is_empty(),
            "{}: {tool}: structuredContent does not match the advertised outputSchema:\n{}\n{structured}",
            self.kind,
            errors.join("\n")
        );
        self.validated += 1;
    }

    /// How long a stdio answer may take (the raw client's `WAIT` by default; HTTP requests
    /// have their client's own 15 s timeout).
    pub fn set_wait(&mut self, wait: std::time::Duration) {
        if let Link::Stdio(server) = &mut self.link {
            server.wait = wait;
        }
    }

    /// Whether the server process is still running.
    pub fn alive(&mut self) -> bool {
        match &mut self.link {
            Link::Stdio(server) => server.alive(),
            Link::Http { server, .. } => server.alive(),
        }
    }

    /// SIGKILL, as a crash would leave things; waits until the process is gone.
    pub async fn kill(self) {
        match self.link {
            Link::Stdio(server) => server.kill().await,
            Link::Http { server, .. } => server.stop().await,
        }
    }

    /// Ends the client side and the process.
    pub async fn stop(self) {
        match self.link {
            Link::Stdio(server) => {
                server.finish().await;
            }
            Link::Http { server, .. } => server.stop().await,
        }
    }
}
