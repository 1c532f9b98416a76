//! A child process speaking JSON lines on stdin/stdout, shared by the example drivers
//! (`bench_driver`, `soak`). Include it with `#[path = "support/peer.rs"] mod peer;`.
//!
//! Reads are plain blocking reads on the child's stdout, so the bench's timings include no
//! thread hop. A peer that is dropped while its child still runs kills the child, so a driver
//! that fails half-way leaves nothing behind.
#![allow(dead_code)] // each driver uses a different part

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// target/release, from the running example's own path (target/release/examples/<name>).
pub fn release_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("own path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/release")
        .to_path_buf()
}

pub struct Peer {
    child: Child,
    /// `None` once closed: the child sees end of input.
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    /// The last line read, newline included.
    pub line: Vec<u8>,
}

impl Peer {
    /// Spawns `binary` with stderr discarded.
    pub fn spawn(binary: &Path, env: &[(&str, &str)]) -> Peer {
        Peer::spawn_with(binary, env, Stdio::null())
    }

    /// Spawns `binary` with command-line arguments and stderr discarded.
    pub fn spawn_args(binary: &Path, args: &[&str]) -> Peer {
        let mut command = Command::new(binary);
        command.args(args).stderr(Stdio::null());
        Peer::start(command, &[])
    }

    /// Spawns `binary` with only `env` among the `SNOWLUMA_MCP_*` variables (plus a quiet log
    /// filter unless `env` sets one) and stderr going to `stderr`.
    pub fn spawn_with(binary: &Path, env: &[(&str, &str)], stderr: Stdio) -> Peer {
        let mut command = Command::new(binary);
        command.stderr(stderr);
        Peer::start(command, env)
    }

    fn start(mut command: Command, env: &[(&str, &str)]) -> Peer {
        command.stdin(Stdio::piped()).stdout(Stdio::piped());
        for (key, _) in std::env::vars() {
            if key.starts_with("SNOWLUMA_MCP_") {
                command.env_remove(key);
            }
        }
        command.env("SNOWLUMA_MCP_LOG", "error");
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("{:?}: {e}", command.get_program()));
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::with_capacity(1 << 20, child.stdout.take().expect("stdout"));
        Peer {
            child,
            stdin: Some(stdin),
            stdout,
            next_id: 0,
            line: Vec::with_capacity(1 << 16),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes one request (not flushed); returns its id.
    pub fn send(&mut self, method: &str, params: &Value) -> u64 {
        self.next_id += 1;
        let mut line = serde_json::to_vec(
            &json!({ "jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params }),
        )
        .expect("request");
        line.push(b'\n');
        self.write_raw(&line);
        self.next_id
    }

    /// Writes bytes as they are (not flushed).
    pub fn write_raw(&mut self, bytes: &[u8]) {
        self.stdin
            .as_mut()
            .expect("stdin is open")
            .write_all(bytes)
            .expect("write to the peer");
    }

    pub fn flush(&mut self) {
        self.stdin
            .as_mut()
            .expect("stdin is open")
            .flush()
            .expect("flush to the peer");
    }

    /// The next line, whatever it is, into `self.line`; panics when the peer closed stdout.
    pub fn read_line(&mut self) -> &[u8] {
        self.line.clear();
        let n = self.stdout.read_until(b'\n', &mut self.line).expect("read");
        assert!(n > 0, "the peer closed stdout");
        &self.line
    }

    /// The next reply line (notifications skipped); returns its id.
    pub fn read_reply(&mut self) -> u64 {
        loop {
            self.read_line();
            if let Some(id) = reply_id(&self.line) {
                return id;
            }
        }
    }

    /// One request and its reply line.
    pub fn request(&mut self, method: &str, params: &Value) -> &[u8] {
        let id = self.send(method, params);
        self.flush();
        let got = self.read_reply();
        assert_eq!(got, id, "{method}: reply out of order");
        &self.line
    }

    pub fn full(&mut self, method: &str, params: &Value) -> Value {
        let line = self.request(method, params).to_vec();
        serde_json::from_slice(&line).expect("reply is JSON")
    }

    pub fn peak_rss_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
            .map_or(0.0, |kib| kib / 1024.0)
    }

    /// The child's exit status if it has ended.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Closes stdin and waits up to 10 s for the child to exit, then kills it. Returns the
    /// status of an exit the child made by itself.
    pub fn close(mut self) -> Option<ExitStatus> {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        None // Drop kills it.
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        // A reaped child is not signalled again, so this is a no-op after a clean close.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The numeric id of a reply, read from the head of its line without parsing the rest.
pub fn reply_id(line: &[u8]) -> Option<u64> {
    let head = &line[..line.len().min(64)];
    let at = find(head, br#""id":"#)?;
    let digits: Vec<u8> = head[at + 5..]
        .iter()
        .copied()
        .take_while(u8::is_ascii_digit)
        .collect();
    std::str::from_utf8(&digits).ok()?.parse().ok()
}

pub fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

pub fn init_params(client: &str) -> Value {
    json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": { "name": client, "version": "0" }
    })
}

/// The legacy handshake: `initialize`, then `notifications/initialized`; returns the result.
pub fn initialize(peer: &mut Peer, client: &str) -> Value {
    let reply = peer.full("initialize", &init_params(client));
    assert!(reply["result"]["protocolVersion"].is_string(), "{reply}");
    peer.write_raw(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    reply["result"].clone()
}
