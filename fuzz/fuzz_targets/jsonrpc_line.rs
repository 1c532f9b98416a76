//! The stdio transport's line handling: newline-delimited JSON-RPC read from stdin in
//! arbitrary pieces (partial lines, CRLF, a BOM, non-UTF-8, oversized lines), and the
//! one-pass `tools/call` decoder.
//!
//! Input: see `common::Chunked`; the setting nibble picks the line limit (0: the real 16 MiB,
//! n: 32 * n bytes) so the oversized-line path is reachable.
//!
//! Checked: every reply the transport writes is a JSON-RPC error with code -32700 or -32600;
//! what comes out (messages and replies, in order) does not depend on how stdin was split;
//! each line over the limit gets exactly one "exceeds" reply; nothing comes out of a line
//! that is blank; and whenever the fast `tools/call` decoder accepts a line, rmcp's generic
//! decoding gives exactly the same message.

#![no_main]

#[path = "common.rs"]
mod common;

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use libfuzzer_sys::fuzz_target;
use rmcp::RoleServer;
use rmcp::service::RxJsonRpcMessage;
use rmcp::transport::Transport;
use serde_json::Value;
use snowluma_mcp::fuzz_api::tool_call;
use snowluma_mcp::server::stdio::{MAX_LINE_BYTES, StdioTransport};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// stdin: hands out the body in the given pieces, then end of file.
struct Pieces {
    pieces: Vec<Vec<u8>>,
    next: usize,
    offset: usize,
}

impl AsyncRead for Pieces {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        while let Some(piece) = this.pieces.get(this.next) {
            let rest = &piece[this.offset..];
            if rest.is_empty() {
                this.next += 1;
                this.offset = 0;
                continue;
            }
            let n = rest.len().min(buf.remaining());
            buf.put_slice(&rest[..n]);
            this.offset += n;
            break;
        }
        Poll::Ready(Ok(()))
    }
}

/// stdout: everything written, shared with the target.
#[derive(Clone, Default)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl AsyncWrite for Sink {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[derive(Debug, PartialEq)]
enum Out {
    Message(Value),
    Reply(Value),
}

/// Everything the transport hands to the server or writes back, in order.
fn session(pieces: Vec<&[u8]>, limit: usize) -> Vec<Out> {
    let sink = Sink::default();
    let stdin = Pieces {
        pieces: pieces.into_iter().map(<[u8]>::to_vec).collect(),
        next: 0,
        offset: 0,
    };
    let mut transport = StdioTransport::with_line_limit(stdin, sink.clone(), limit);
    let mut out = Vec::new();
    loop {
        let message = common::block_on(transport.receive());
        let written = std::mem::take(&mut *sink.0.lock().unwrap());
        for line in written.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let reply: Value = serde_json::from_slice(line).expect("a reply is JSON");
            check_reply(&reply);
            out.push(Out::Reply(reply));
        }
        match message {
            Some(message) => {
                out.push(Out::Message(
                    serde_json::to_value(&message).expect("a message serializes"),
                ));
            }
            None => return out,
        }
    }
}

fn check_reply(reply: &Value) {
    assert_eq!(reply["jsonrpc"], "2.0", "{reply}");
    let code = reply["error"]["code"].as_i64();
    assert!(matches!(code, Some(-32700 | -32600)), "{reply}");
    assert!(reply["error"]["message"].is_string(), "{reply}");
    let id = &reply["id"];
    assert!(id.is_null() || id.is_string() || id.is_number(), "{reply}");
}

fn oversized(reply: &Out) -> bool {
    matches!(reply, Out::Reply(r) if r["error"]["message"].as_str().is_some_and(|m| m.contains("exceeds")))
}

/// A line as the transport looks at it: without its line ending and a leading BOM.
fn stripped(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line)
}

fuzz_target!(|data: &[u8]| {
    let Some(input) = common::Chunked::parse(data) else {
        return;
    };
    let limit = match input.setting {
        0 => MAX_LINE_BYTES,
        n => 32 * usize::from(n),
    };
    let whole = session(vec![input.body], limit);
    let pieces = input.pieces();
    if pieces.len() > 1 {
        assert_eq!(
            session(pieces, limit),
            whole,
            "the outcome depends on how stdin was split"
        );
    }

    // One output at most per line; exactly one "exceeds" reply per oversized line.
    let mut lines: Vec<&[u8]> = input.body.split(|b| *b == b'\n').collect();
    let last = lines.pop().unwrap_or_default();
    // A last line without its newline is refused once it holds `limit` bytes: with the
    // newline it could never fit (the line codec knows that before stdin ends).
    let expected_oversized =
        lines.iter().filter(|l| l.len() + 1 > limit).count() + usize::from(last.len() >= limit);
    assert_eq!(
        whole.iter().filter(|o| oversized(o)).count(),
        expected_oversized
    );
    assert!(whole.len() <= lines.len() + 1);
    let blank = |l: &&[u8]| l.len() < limit && stripped(l).iter().all(u8::is_ascii_whitespace);
    if lines.iter().all(blank) && last.len() < limit {
        assert!(whole.is_empty(), "blank lines produced output");
    }

    // The fast path agrees with rmcp's generic decoding whenever it answers.
    for line in lines.iter().map(|l| stripped(l)) {
        if let Some(fast) = tool_call(line) {
            let generic = serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line)
                .expect("a line the fast path accepts is a message");
            assert_eq!(
                serde_json::to_value(&fast).unwrap(),
                serde_json::to_value(&generic).unwrap(),
                "fast and generic decoding differ"
            );
        }
    }
});
