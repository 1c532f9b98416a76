//! TLS end to end: the built binary talks to a fake SnowLuma behind HTTPS and to a fake
//! WebSocket adapter behind `wss:`, both with a certificate from a CA generated for the test.
//! With `SNOWLUMA_MCP_CA_FILE` naming that CA, ordinary calls, streams and event
//! subscriptions work; without it the certificate is refused, the error has its own kind,
//! names SNOWLUMA_MCP_CA_FILE as the fix and says nothing was sent (and the fake saw nothing).
//! A missing or certificate-less CA file stops the server at start-up.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/fake_snowluma_ws.rs"]
mod fake_snowluma_ws;
#[path = "support/raw_client.rs"]
mod raw_client;
#[path = "support/stream_helpers.rs"]
mod stream_helpers;
#[path = "support/test_tls.rs"]
mod test_tls;

use fake_snowluma::{FakeOptions, FakeSnowLuma};
use fake_snowluma_ws::{FakeEventSocket, WsOptions, group_message};
use raw_client::{RawServer, modern_meta, structured};
use serde_json::{Value, json};
use snowluma_mcp::config::Tls;
use snowluma_mcp::events::{EventFilter, EventHub, EventsUrl, OwnerId, StopReason};
use test_tls::TestCa;

const TOKEN: &str = "tls-token-value";

fn https_fake(ca: &TestCa) -> FakeSnowLuma {
    FakeSnowLuma::start_blocking(FakeOptions {
        token: Some(TOKEN.into()),
        tls: Some(ca.server_config.clone()),
        ..FakeOptions::default()
    })
}

fn wss_fake(ca: &TestCa) -> FakeEventSocket {
    FakeEventSocket::start(WsOptions {
        token: Some(TOKEN.into()),
        tls: Some(ca.server_config.clone()),
        ..WsOptions::default()
    })
}

async fn query(server: &mut RawServer, id: i64, action: &str) -> (Value, Value) {
    let response = server
        .request(
            id,
            "tools/call",
            json!({ "name": "query_action", "arguments": { "action": action }, "_meta": modern_meta(json!({})) }),
        )
        .await;
    let body = structured(&response);
    (response, body)
}

#[tokio::test]
async fn query_action_over_https_works_with_the_ca_file() {
    let ca = TestCa::new();
    let fake = https_fake(&ca);
    assert!(fake.url.starts_with("https://localhost:"), "{}", fake.url);
    let mut server = RawServer::spawn(&[
        ("SNOWLUMA_MCP_ENDPOINT", fake.url.as_str()),
        ("SNOWLUMA_MCP_TOKEN", TOKEN),
        ("SNOWLUMA_MCP_CA_FILE", ca.ca_file_str()),
    ]);
    let (response, body) = query(&mut server, 1, "get_status").await;
    assert_eq!(response["result"]["isError"], false, "{body}");
    assert_eq!(body["diagnostics"]["outcome"], "success", "{body}");
    let recorded = fake.requests_for("get_status");
    assert_eq!(recorded.len(), 1);
    assert_eq!(
        recorded[0].header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    server.finish().await;
}

#[tokio::test]
async fn the_ca_flag_works_like_the_variable() {
    let ca = TestCa::new();
    let fake = https_fake(&ca);
    let mut server = RawServer::spawn_with_args(
        &[
            ("SNOWLUMA_MCP_ENDPOINT", fake.url.as_str()),
            ("SNOWLUMA_MCP_TOKEN", TOKEN),
        ],
        &["--ca-file", ca.ca_file_str()],
    );
    let (_, body) = query(&mut server, 1, "get_status").await;
    assert_eq!(body["diagnostics"]["outcome"], "success", "{body}");
    server.finish().await;
}

#[tokio::test]
async fn an_untrusted_certificate_is_a_tls_error_naming_the_ca_setting_and_nothing_is_sent() {
    let ca = TestCa::new();
    let fake = https_fake(&ca);
    // Read and write mode: the message must say nothing was sent either way.
    for mode in ["read", "write"] {
        let mut server = RawServer::spawn(&[
            ("SNOWLUMA_MCP_MODE", mode),
            ("SNOWLUMA_MCP_ENDPOINT", fake.url.as_str()),
            ("SNOWLUMA_MCP_TOKEN", TOKEN),
        ]);
        let (response, body) = query(&mut server, 1, "get_status").await;
        assert_eq!(response["result"]["isError"], true, "{body}");
        let diagnostics = &body["diagnostics"];
        assert_eq!(diagnostics["kind"], "tls", "{body}");
        assert_eq!(diagnostics["outcome"], "failed", "{body}");
        let message = diagnostics["message"].as_str().unwrap();
        assert!(message.contains("certificate"), "{message}");
        assert!(message.contains("nothing was sent"), "{message}");
        let next_step = diagnostics["next_step"].as_str().unwrap();
        assert!(next_step.contains("SNOWLUMA_MCP_CA_FILE"), "{next_step}");
        let (_, stderr) = server.finish().await;
        assert!(!stderr.contains(TOKEN), "token in stderr: {stderr}");
    }
    assert!(
        fake.requests().is_empty(),
        "the fake must not have received a request"
    );
}

#[tokio::test]
async fn an_https_stream_download_works() {
    let ca = TestCa::new();
    let fake = https_fake(&ca);
    let dirs = stream_helpers::Dirs::new("tls-download");
    let content = stream_helpers::pseudo_random(200_000, 3);
    let file = fake.add_file("report.bin", content.clone());
    let mut server = stream_helpers::spawn(
        &fake,
        &dirs,
        &[
            ("SNOWLUMA_MCP_TOKEN", TOKEN),
            ("SNOWLUMA_MCP_CA_FILE", ca.ca_file_str()),
        ],
    );
    let (response, body) = stream_helpers::invoke(
        &mut server,
        1,
        json!({ "action": "download_file_stream", "params": { "file": file, "chunk_size": 65536 } }),
        None,
    )
    .await;
    assert_eq!(response["result"]["isError"], false, "{body}");
    let path = body["result"]["path"].as_str().unwrap();
    assert_eq!(std::fs::read(path).unwrap(), content);
    assert_eq!(body["result"]["sha256"], stream_helpers::sha256(&content));
    server.finish().await;
}

#[tokio::test]
async fn a_bad_ca_file_stops_the_server_at_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "no certificates here\n").unwrap();
    let empty = empty.to_str().unwrap().to_string();
    for (ca_file, needle) in [
        ("/nonexistent/ca.pem", "cannot be read"),
        (empty.as_str(), "holds no PEM certificate"),
    ] {
        let server = RawServer::spawn(&[
            ("SNOWLUMA_MCP_ENDPOINT", "https://localhost:3000/"),
            ("SNOWLUMA_MCP_CA_FILE", ca_file),
        ]);
        let (code, stderr) = server.finish().await;
        assert_ne!(code, Some(0), "{ca_file} should stop the server");
        assert!(stderr.contains("SNOWLUMA_MCP_CA_FILE"), "{stderr}");
        assert!(stderr.contains(needle), "{stderr}");
    }
}

#[tokio::test]
async fn https_and_wss_urls_are_accepted_at_start_up() {
    let ca = TestCa::new();
    let mut server = RawServer::spawn(&[
        ("SNOWLUMA_MCP_ENDPOINT", "https://localhost:9/"),
        ("SNOWLUMA_MCP_EVENTS_URL", "wss://localhost:9/"),
        ("SNOWLUMA_MCP_CA_FILE", ca.ca_file_str()),
    ]);
    let listing = server
        .request(1, "tools/list", json!({ "_meta": modern_meta(json!({})) }))
        .await;
    assert!(listing["result"]["tools"].is_array(), "{listing}");
    server.finish().await;
}

fn hub(socket: &FakeEventSocket, ca_file: Option<&std::path::Path>) -> EventHub {
    EventHub::with_tls(
        EventsUrl::parse(&socket.url).unwrap(),
        Some(TOKEN.into()),
        Some(Tls::load(ca_file, true).unwrap().client_config()),
    )
}

fn quiet() -> std::sync::Arc<dyn snowluma_mcp::events::EventNotifier> {
    struct Quiet;
    impl snowluma_mcp::events::EventNotifier for Quiet {
        fn updated(&self, _uri: &str) -> futures::future::BoxFuture<'static, Result<(), String>> {
            Box::pin(async { Ok(()) })
        }
    }
    std::sync::Arc::new(Quiet)
}

#[tokio::test]
async fn wss_subscribe_and_wait_work_with_the_ca_file() {
    let ca = TestCa::new();
    let socket = wss_fake(&ca);
    assert!(socket.url.starts_with("wss://localhost:"), "{}", socket.url);
    let hub = hub(&socket, Some(&ca.ca_file));
    let owner = OwnerId::new("tls");
    let filter = EventFilter::from_json(&json!({ "self_id": 10001 })).unwrap();
    let uri = hub.subscribe(&owner, filter, quiet()).await.unwrap();
    assert_eq!(
        socket.authorizations(),
        vec![Some(format!("Bearer {TOKEN}"))]
    );
    socket.push(&group_message(10001, 20001, 30001, "over tls"));
    let page = hub
        .wait(
            &owner,
            &uri,
            None,
            5_000,
            16,
            tokio_util::sync::CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(page.entries.len(), 1);
    assert_eq!(page.entries[0].parsed()["raw_message"], "over tls");
    hub.release(&owner, &uri).unwrap();
}

#[tokio::test]
async fn wss_without_the_ca_file_fails_naming_the_setting() {
    let ca = TestCa::new();
    let socket = wss_fake(&ca);
    let hub = hub(&socket, None);
    let owner = OwnerId::new("tls");
    let filter = EventFilter::from_json(&json!({ "self_id": 10001 })).unwrap();
    let error = hub.subscribe(&owner, filter, quiet()).await.unwrap_err();
    let message = error.to_string();
    assert_eq!(error.kind().as_str(), "events_connection", "{message}");
    assert!(message.contains("certificate"), "{message}");
    assert!(message.contains("SNOWLUMA_MCP_CA_FILE"), "{message}");
    assert_eq!(socket.handshakes(), 0, "no WebSocket handshake happened");
    match hub.connection_status() {
        None => {}
        Some(status) => assert!(matches!(
            status,
            snowluma_mcp::events::ConnectionStatus::Stopped {
                reason: StopReason::ConnectFailed,
                ..
            }
        )),
    }
}

#[tokio::test]
async fn subscribe_events_over_wss_through_the_binary() {
    let ca = TestCa::new();
    let socket = wss_fake(&ca);
    let mut server = RawServer::spawn(&[
        ("SNOWLUMA_MCP_MODE", "read"),
        ("SNOWLUMA_MCP_ENDPOINT", "http://127.0.0.1:9/"),
        ("SNOWLUMA_MCP_TOKEN", TOKEN),
        ("SNOWLUMA_MCP_EVENTS_URL", socket.url.as_str()),
        ("SNOWLUMA_MCP_CA_FILE", ca.ca_file_str()),
    ]);
    let subscribed = server
        .request(
            1,
            "tools/call",
            json!({ "name": "subscribe_events", "arguments": { "self_id": 10001 }, "_meta": modern_meta(json!({})) }),
        )
        .await;
    let body = structured(&subscribed);
    assert_eq!(subscribed["result"]["isError"], false, "{body}");
    let uri = body["result"]["uri"].as_str().unwrap().to_string();
    socket.push(&group_message(10001, 20001, 30001, "hello wss"));
    let read = server
        .request(
            2,
            "tools/call",
            json!({ "name": "read_events", "arguments": { "uri": uri, "wait_ms": 5000 }, "_meta": modern_meta(json!({})) }),
        )
        .await;
    let body = structured(&read);
    assert_eq!(read["result"]["isError"], false, "{body}");
    let entries = body["result"]["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{body}");
    assert_eq!(entries[0]["event"]["raw_message"], "hello wss");
    server.finish().await;
}
