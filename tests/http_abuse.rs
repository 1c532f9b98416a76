//! Abuse limits of the HTTP transport (issue 37), over real loopback TCP: a request that fails
//! the token or Host/Origin check ends its connection (`Connection: close`), and one peer
//! address cannot hold more than SNOWLUMA_MCP_HTTP_MAX_CONNS_PER_PEER connections (its idle
//! ones are closed to make room), so a hundred idle or badly authenticated connections from
//! one peer leave another client served.
//! The abusive peer is 127.0.0.2 (all of 127/8 is loopback on Linux); the client 127.0.0.1.

#[path = "support/http_server.rs"]
mod http_server;

use std::net::SocketAddr;
use std::time::Duration;

use http_server::{HttpServer, TOKEN, open_session};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// Generous: only a hang reaches it.
const HANG: Duration = Duration::from_secs(60);

async fn connect_from(source: &str, port: u16) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(format!("{source}:0").parse::<SocketAddr>().unwrap())?;
    socket
        .connect(format!("127.0.0.1:{port}").parse().unwrap())
        .await
}

/// Sends a raw request and reads until the server closes the connection.
async fn request_until_closed(stream: &mut TcpStream, request: &str) -> String {
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut reply = Vec::new();
    tokio::time::timeout(HANG, stream.read_to_end(&mut reply))
        .await
        .expect("the server kept the connection open after refusing the request")
        .unwrap();
    String::from_utf8_lossy(&reply).into_owned()
}

fn post_with(port: u16, extra: &str) -> String {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test]
async fn refused_requests_close_their_connection() {
    let server = HttpServer::start(&[("SNOWLUMA_MCP_HTTP_TOKEN", TOKEN)], &[]).await;
    let port = server.port;
    for (extra, status) in [
        ("Authorization: Bearer wrong-token\r\n", "401"),
        ("", "401"),
        (
            "Origin: http://evil.example\r\nAuthorization: Bearer wrong\r\n",
            "403",
        ),
    ] {
        let mut stream = connect_from("127.0.0.1", port).await.unwrap();
        let reply = request_until_closed(&mut stream, &post_with(port, extra)).await;
        assert!(reply.starts_with(&format!("HTTP/1.1 {status}")), "{reply}");
        assert!(
            reply.to_ascii_lowercase().contains("connection: close"),
            "{reply}"
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn one_peer_cannot_hold_every_connection() {
    // A small request cap makes the process-wide connection pool 8 + 64 slots, fewer than
    // the hundred connections the abusive peer opens.
    let server = HttpServer::start(
        &[
            ("SNOWLUMA_MCP_HTTP_TOKEN", TOKEN),
            ("SNOWLUMA_MCP_HTTP_MAX_REQUESTS", "8"),
        ],
        &[],
    )
    .await;
    let port = server.port;
    let mut held = Vec::new();
    for i in 0..100 {
        let Ok(mut stream) = connect_from("127.0.0.2", port).await else {
            continue;
        };
        // Half send a bad token and are closed; half sit idle, holding what they got.
        if i % 2 == 0 {
            let _ = stream
                .write_all(post_with(port, "Authorization: Bearer bad\r\n").as_bytes())
                .await;
        }
        held.push(stream);
    }
    // The well-behaved client is served while all of those are open.
    let served = tokio::time::timeout(HANG, open_session(&server.url, Some(TOKEN))).await;
    assert!(served.is_ok(), "the other client was not served");
    // The abusive peer's idle connections were closed to make room for its newer ones: the
    // first idle one reads end-of-stream (within a bound only a hang reaches).
    let mut first_idle = held.remove(1);
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(HANG, first_idle.read_to_end(&mut rest)).await;
    assert!(
        matches!(closed, Ok(Ok(0)) | Ok(Err(_))),
        "an idle connection of a peer over its bound stayed open"
    );
    drop(held);
    server.stop().await;
}
