//! The stdio transport's line framing on the built binary, byte for byte: the 16 MiB limit
//! (newline included) at its exact edge, a line that is not UTF-8, and a line with a byte order
//! mark and a carriage return. The server must answer each and keep reading.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, Command};
use tokio::sync::mpsc;

/// The longest line the server accepts, its newline included (`stdio::MAX_LINE_BYTES`).
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Only a hang reaches this; a 16 MiB line takes a debug build a second or two.
const WAIT: Duration = Duration::from_secs(60);

struct Server {
    stdin: ChildStdin,
    lines: mpsc::UnboundedReceiver<String>,
    _child: tokio::process::Child,
}

impl Server {
    fn spawn() -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_snowluma-mcp"))
            .env_remove("SNOWLUMA_MCP_MODE")
            .env_remove("SNOWLUMA_MCP_ENDPOINT")
            .env_remove("SNOWLUMA_MCP_TOKEN")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn snowluma-mcp");
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Server {
            stdin: child.stdin.take().unwrap(),
            lines,
            _child: child,
        }
    }

    async fn write(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    async fn reply(&mut self) -> Value {
        let line = tokio::time::timeout(WAIT, self.lines.recv())
            .await
            .expect("a reply before the wait ran out")
            .expect("stdout open");
        serde_json::from_str(&line).expect("a JSON reply")
    }
}

/// A `ping` request with `id` whose line is exactly `length` bytes before its newline.
fn ping_of_length(id: i64, length: usize) -> Vec<u8> {
    let empty = json!({ "jsonrpc": "2.0", "id": id, "method": "ping", "params": { "pad": "" } });
    let overhead = empty.to_string().len();
    let padded = json!({
        "jsonrpc": "2.0", "id": id, "method": "ping",
        "params": { "pad": "x".repeat(length - overhead) }
    });
    let mut line = padded.to_string().into_bytes();
    assert_eq!(line.len(), length);
    line.push(b'\n');
    line
}

#[tokio::test]
async fn the_line_limit_holds_at_its_exact_edge_and_reading_goes_on() {
    let mut server = Server::spawn();

    // MAX_LINE_BYTES with its newline: read and answered as the request it is.
    server.write(&ping_of_length(1, MAX_LINE_BYTES - 1)).await;
    let answer = server.reply().await;
    assert_eq!(answer["id"], 1, "{answer}");

    // One byte more: dropped whole, answered with the limit, and the next line is read.
    server.write(&ping_of_length(2, MAX_LINE_BYTES)).await;
    assert_eq!(
        server.reply().await,
        json!({
            "jsonrpc": "2.0", "id": null,
            "error": { "code": -32600, "message": "Invalid Request: message exceeds 16 MiB" }
        })
    );
    server
        .write(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n")
        .await;
    assert_eq!(
        server.reply().await,
        json!({ "jsonrpc": "2.0", "id": 3, "result": {} })
    );
}

#[tokio::test]
async fn a_line_that_is_not_utf8_is_a_parse_error_and_marks_and_carriage_returns_are_read() {
    let mut server = Server::spawn();
    server
        .write(b"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\xfe\"}\n")
        .await;
    assert_eq!(
        server.reply().await,
        json!({ "jsonrpc": "2.0", "id": null, "error": { "code": -32700, "message": "Parse error" } })
    );
    server
        .write(b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}\r\n")
        .await;
    assert_eq!(
        server.reply().await,
        json!({ "jsonrpc": "2.0", "id": 4, "result": {} })
    );
}
