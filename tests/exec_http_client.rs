//! What the OneBot HTTP client must never do, end to end over stdio: follow a redirect (it
//! would carry the bearer token to another server) or send a call through a proxy named in
//! the environment (loopback and LAN SnowLuma instances are reached directly).

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/raw_client.rs"]
mod raw_client;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use fake_snowluma::FakeSnowLuma;
use raw_client::{RawServer, modern_meta, structured};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const TOKEN: &str = "s3cret-token-value";

/// A loopback listener that counts the connections it accepts and answers each request on
/// them with `reply` (a whole HTTP/1.1 response).
async fn listener(reply: &'static str) -> (String, Arc<AtomicUsize>) {
    let socket = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = socket.local_addr().unwrap().to_string();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = socket.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut seen = Vec::new();
                let mut buffer = [0u8; 4096];
                // One request: its head, then as many body bytes as it announced.
                loop {
                    let Ok(n) = stream.read(&mut buffer).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    seen.extend_from_slice(&buffer[..n]);
                    let text = String::from_utf8_lossy(&seen).to_lowercase();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let length = text
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        if seen.len() >= end + 4 + length {
                            break;
                        }
                    }
                }
                let _ = stream.write_all(reply.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    (address, accepted)
}

async fn query(server: &mut RawServer) -> (Value, Value) {
    let response = server
        .request(
            1,
            "tools/call",
            json!({
                "name": "query_action",
                "arguments": { "action": "get_login_info", "params": {} },
                "_meta": modern_meta(json!({}))
            }),
        )
        .await;
    let body = structured(&response);
    (response, body)
}

#[tokio::test]
async fn a_redirect_is_an_http_error_and_the_token_never_leaves() {
    // Where a followed redirect would go: it must see no connection at all.
    let (elsewhere, visits) = listener("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}").await;
    let reply: &'static str = Box::leak(
        format!(
            "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://{elsewhere}/\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .into_boxed_str(),
    );
    let (endpoint, asked) = listener(reply).await;
    let url = format!("http://{endpoint}/");
    let mut server = RawServer::spawn(&[
        ("SNOWLUMA_MCP_MODE", "read"),
        ("SNOWLUMA_MCP_ENDPOINT", &url),
        ("SNOWLUMA_MCP_TOKEN", TOKEN),
    ]);
    let (response, body) = query(&mut server).await;
    assert_eq!(response["result"]["isError"], json!(true), "{response}");
    assert_eq!(body["diagnostics"]["kind"], "http_error", "{body}");
    let message = body["diagnostics"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("HTTP 307"), "{body}");
    assert_eq!(
        asked.load(Ordering::SeqCst),
        1,
        "the endpoint was asked once"
    );
    assert_eq!(
        visits.load(Ordering::SeqCst),
        0,
        "the redirect was followed"
    );
    let (_, stderr) = server.finish().await;
    assert!(!stderr.contains(TOKEN), "the token reached the log");
}

#[tokio::test]
async fn proxy_variables_in_the_environment_are_not_used() {
    let fake = FakeSnowLuma::start(Some(TOKEN)).await;
    // A proxy that would answer every call itself: a call through it would not reach the fake.
    let (proxy, proxied) = listener(
        "HTTP/1.1 200 OK\r\nContent-Length: 39\r\n\r\n{\"status\":\"ok\",\"retcode\":0,\"data\":\"px\"}",
    )
    .await;
    let proxy = format!("http://{proxy}");
    let mut server = RawServer::spawn(&[
        ("SNOWLUMA_MCP_MODE", "read"),
        ("SNOWLUMA_MCP_ENDPOINT", &fake.url),
        ("SNOWLUMA_MCP_TOKEN", TOKEN),
        ("HTTP_PROXY", &proxy),
        ("http_proxy", &proxy),
        ("HTTPS_PROXY", &proxy),
        ("ALL_PROXY", &proxy),
        ("NO_PROXY", ""),
    ]);
    let (response, body) = query(&mut server).await;
    assert_eq!(response["result"]["isError"], json!(false), "{response}");
    assert_eq!(body["diagnostics"]["outcome"], "success", "{body}");
    assert_eq!(fake.requests_for("get_login_info").len(), 1);
    assert_eq!(
        proxied.load(Ordering::SeqCst),
        0,
        "the call went through the proxy"
    );
    server.finish().await;
}
