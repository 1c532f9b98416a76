//! A raw HTTP/1.1 keep-alive client sending what the server sends for
//! `query_action get_login_info` (same body and headers) over one blocking `TcpStream`: the
//! native floor of the query_action figures, shared by `bench_driver` (called directly) and
//! `stdio_relay` (called behind a stdio hop). Include it with
//! `#[path = "support/direct_http.rs"] mod direct_http;`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;

/// The trace context the server forwards, so the request is the same size as the server's.
pub const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

pub struct Direct {
    stream: BufReader<TcpStream>,
    request: Vec<u8>,
    /// The last reply's body.
    pub body: Vec<u8>,
}

impl Direct {
    pub fn connect(port: u16, token: &str) -> Direct {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to the fake");
        stream.set_nodelay(true).expect("nodelay");
        let body = br#"{"action":"get_login_info","params":{}}"#;
        let mut request = format!(
            "POST / HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n\
             traceparent: {TRACEPARENT}\r\nauthorization: Bearer {token}\r\naccept: */*\r\n\
             content-length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        request.extend_from_slice(body);
        Direct {
            stream: BufReader::new(stream),
            request,
            body: Vec::new(),
        }
    }

    /// One call; the body is left in `self.body`. Panics on anything a correct fake would not
    /// send, so a broken run cannot print a figure.
    pub fn call(&mut self) {
        self.stream
            .get_mut()
            .write_all(&self.request)
            .expect("send");
        let mut length = None;
        let mut line = String::new();
        loop {
            line.clear();
            let n = self.stream.read_line(&mut line).expect("read head");
            assert!(n > 0, "the fake closed the connection");
            let text = line.trim_end();
            if text.is_empty() {
                break;
            }
            if let Some((name, value)) = text.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse::<usize>().ok();
            }
        }
        let length = length.expect("the fake answers with a content-length");
        self.body.resize(length, 0);
        self.stream.read_exact(&mut self.body).expect("read body");
    }
}
