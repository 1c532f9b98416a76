//! A raw JSON-lines MCP peer for protocol-level tests: it spawns the built binary, writes
//! exact lines to its stdin and reads its stdout line by line, so tests can check fields that
//! client SDKs hide (ids, error codes, cache hints). Every wait is bounded.

#![allow(dead_code)]

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;

/// How long a test waits for an answer before calling it a hang. Only a hang reaches it: a debug
/// build on a 2-core runner with both cores busy answers a slow fault cell (an 8 s stream idle
/// timeout) in well over 10 s, so a tighter bound fails healthy runs.
pub const WAIT: Duration = Duration::from_secs(60);

pub struct RawServer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::UnboundedReceiver<String>,
    stderr: mpsc::UnboundedReceiver<String>,
    /// stderr lines already read by `stderr_line`, given back by `finish`.
    stderr_read: String,
    /// Messages read while waiting for something else (notifications, other ids).
    pub backlog: Vec<Value>,
    /// tools/call requests sent and not yet answered: id -> (tool, request `_meta`).
    calls: HashMap<String, (String, Option<Value>)>,
    /// Advertised outputSchemas per request envelope (era and capabilities) and tool.
    schemas: HashMap<String, HashMap<String, Value>>,
    next_internal_id: i64,
    /// How many tool results were validated against an advertised outputSchema.
    pub validated: usize,
    /// Every stdout line so far, as received (for audits of the whole exchange).
    transcript: Arc<Mutex<Vec<String>>>,
    /// How long `next` waits for a message (`WAIT` unless a test expects a slower answer).
    pub wait: Duration,
}

pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_snowluma-mcp")
}

/// The modern (2026-07-28) request envelope, with optional client capabilities.
pub fn modern_meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": { "name": "raw-test", "version": "1.0" }
    })
}

impl RawServer {
    pub fn spawn(env: &[(&str, &str)]) -> RawServer {
        Self::spawn_with_args(env, &[])
    }

    pub fn spawn_with_args(env: &[(&str, &str)], args: &[&str]) -> RawServer {
        let mut command = Command::new(binary());
        command
            .args(args)
            .env_remove("SNOWLUMA_MCP_MODE")
            .env_remove("SNOWLUMA_MCP_ENDPOINT")
            .env_remove("SNOWLUMA_MCP_TOKEN")
            .envs(env.iter().copied());
        Self::start(command)
    }

    /// Like `spawn`, with environment values that need not be UTF-8 and variables to remove.
    pub fn spawn_with_os_env(env: &[(&str, &std::ffi::OsStr)], remove: &[&str]) -> RawServer {
        let mut command = Command::new(binary());
        command
            .env_remove("SNOWLUMA_MCP_MODE")
            .env_remove("SNOWLUMA_MCP_ENDPOINT")
            .env_remove("SNOWLUMA_MCP_TOKEN");
        for name in remove {
            command.env_remove(name);
        }
        command.envs(env.iter().copied());
        Self::start(command)
    }

    fn start(mut command: Command) -> RawServer {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("spawn snowluma-mcp");
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::unbounded_channel();
        let transcript = Arc::new(Mutex::new(Vec::new()));
        let record = transcript.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                record.lock().unwrap().push(line.clone());
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let (etx, stderr_rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                if etx.send(line).is_err() {
                    break;
                }
            }
        });
        RawServer {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr: stderr_rx,
            stderr_read: String::new(),
            backlog: Vec::new(),
            calls: HashMap::new(),
            schemas: HashMap::new(),
            next_internal_id: 900_000_000,
            validated: 0,
            transcript,
            wait: WAIT,
        }
    }

    pub async fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
        stdin.flush().await.unwrap();
    }

    pub async fn send(&mut self, message: &Value) {
        if message["method"] == "tools/call"
            && let (Some(id), Some(name)) = (message.get("id"), message["params"]["name"].as_str())
        {
            let meta = message["params"].get("_meta").cloned();
            self.calls.insert(id.to_string(), (name.to_string(), meta));
        }
        self.send_line(&message.to_string()).await;
    }

    /// Opens a legacy (2025-11-25) session declaring `capabilities`: `initialize`, then
    /// `notifications/initialized`.
    pub async fn initialize_legacy(&mut self, capabilities: Value) {
        let init = self
            .request(
                0,
                "initialize",
                json!({ "protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": { "name": "raw-legacy", "version": "1" } }),
            )
            .await;
        assert!(init["result"]["protocolVersion"].is_string(), "{init}");
        self.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await;
    }

    /// Sends a request and waits for the message with its id.
    pub async fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await;
        self.wait_for_id(&json!(id)).await
    }

    /// The next message on stdout, or None after `wait` or at end of stream.
    pub async fn next(&mut self) -> Option<Value> {
        match tokio::time::timeout(self.wait, self.lines.recv()).await {
            Ok(Some(line)) => Some(
                serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}")),
            ),
            _ => None,
        }
    }

    /// Every line the server wrote to stdout so far.
    pub fn transcript(&self) -> Vec<String> {
        self.transcript.lock().unwrap().clone()
    }

    /// Waits for the response with `id`. A tool result is checked against the outputSchema
    /// the server advertised for that tool to the same request envelope.
    pub async fn wait_for_id(&mut self, id: &Value) -> Value {
        let message = self.receive(id).await;
        if let Some((tool, meta)) = self.calls.remove(&id.to_string()) {
            self.validate(&tool, meta, &message).await;
        }
        message
    }

    async fn receive(&mut self, id: &Value) -> Value {
        if let Some(i) = self
            .backlog
            .iter()
            .position(|m| m.get("id") == Some(id) && m.get("method").is_none())
        {
            return self.backlog.remove(i);
        }
        loop {
            let message = self
                .next()
                .await
                .unwrap_or_else(|| panic!("no response with id {id} within {:?}", self.wait));
            if message.get("id") == Some(id) && message.get("method").is_none() {
                return message;
            }
            self.backlog.push(message);
        }
    }

    /// Validates a tool result's structuredContent against the advertised outputSchema (a
    /// tool the server did not list for this client has none to check against).
    async fn validate(&mut self, tool: &str, meta: Option<Value>, response: &Value) {
        let Some(structured) = response["result"].get("structuredContent") else {
            return;
        };
        let key = meta.as_ref().map_or("legacy".to_string(), Value::to_string);
        if !self.schemas.contains_key(&key) {
            self.next_internal_id += 1;
            let id = json!(self.next_internal_id);
            let params = match &meta {
                Some(meta) => json!({ "_meta": meta }),
                None => json!({}),
            };
            self.send_line(
                &json!({ "jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params })
                    .to_string(),
            )
            .await;
            let listing = self.receive(&id).await;
            let schemas = listing["result"]["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| {
                    Some((
                        t["name"].as_str()?.to_string(),
                        t.get("outputSchema")?.clone(),
                    ))
                })
                .collect();
            self.schemas.insert(key.clone(), schemas);
        }
        if let Some(schema) = self.schemas[&key].get(tool) {
            assert_valid(tool, schema, structured);
            self.validated += 1;
        }
    }

    /// Kills the process (SIGKILL, no clean shutdown) and waits until it is gone, as a crash
    /// or a power cut would leave things.
    pub async fn kill(mut self) {
        self.child.kill().await.expect("kill snowluma-mcp");
    }

    /// Whether the process is still running (it has not exited or been killed).
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The server's process id (for signals).
    #[allow(dead_code)]
    pub fn pid(&self) -> u32 {
        self.child.id().expect("server still running")
    }

    /// Waits (with stdin still open) for the process to exit, e.g. after a signal; returns
    /// its exit code and stderr.
    #[allow(dead_code)]
    pub async fn exited(self) -> (Option<i32>, String) {
        self.finish_inner(false).await
    }

    /// Waits, at most `limit`, for a stderr line containing `needle` while the process runs;
    /// the lines read on the way stay part of what `finish` returns.
    pub async fn stderr_line(&mut self, needle: &str, limit: Duration) -> Option<String> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let line = tokio::time::timeout_at(deadline, self.stderr.recv())
                .await
                .ok()??;
            self.stderr_read.push_str(&line);
            self.stderr_read.push('\n');
            if line.contains(needle) {
                return Some(line);
            }
        }
    }

    /// Closes stdin and waits for the process to exit; returns its stderr.
    pub async fn finish(self) -> (Option<i32>, String) {
        self.finish_inner(true).await
    }

    async fn finish_inner(mut self, close_stdin: bool) -> (Option<i32>, String) {
        let stdin = self.stdin.take();
        if close_stdin {
            drop(stdin);
        } else {
            std::mem::forget(stdin);
        }
        let status = tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("server exits after stdin closes")
            .unwrap();
        let mut stderr = std::mem::take(&mut self.stderr_read);
        while let Ok(Some(line)) = tokio::time::timeout(WAIT, self.stderr.recv()).await {
            stderr.push_str(&line);
            stderr.push('\n');
        }
        (status.code(), stderr)
    }
}

/// Polls `condition` every 20 ms until it holds or `limit` has passed; the caller asserts on
/// what it then observes.
pub async fn wait_until(limit: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + limit;
    while !condition() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Panics unless `instance` is valid against `schema` (draft 2020-12), naming each error.
pub fn assert_valid(tool: &str, schema: &Value, instance: &Value) {
    let validator = jsonschema::validator_for(schema).unwrap_or_else(|e| {
        panic!("{tool}: the advertised outputSchema is not a valid schema: {e}")
    });
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(
        errors.is_empty(),
        "{tool}: structuredContent does not match the advertised outputSchema:\n{}\n{instance}",
        errors.join("\n")
    );
}

/// Parses a tool result's text block and checks it equals structuredContent.
pub fn structured(response: &Value) -> Value {
    let result = &response["result"];
    let structured = result["structuredContent"].clone();
    // The JSON is the last block; a page of a larger result starts with a summary line.
    let text = result["content"]
        .as_array()
        .and_then(|blocks| blocks.last())
        .and_then(|block| block["text"].as_str())
        .expect("text block");
    let from_text: Value = serde_json::from_str(text).expect("text block is JSON");
    assert_eq!(
        from_text, structured,
        "text block and structuredContent differ"
    );
    structured
}

/// Keys sorted at every level, for stable snapshots.
pub fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&map[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}
