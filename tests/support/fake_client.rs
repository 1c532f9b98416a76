//! A plain reqwest client for the fake SnowLuma's own tests: ordinary calls, stream
//! bodies split into frames, and checks of frame and envelope shapes.
#![allow(dead_code)] // each includer uses a different part

use std::future::Future;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::fake_snowluma::{self, FakeSnowLuma};

pub const DELIM: &[u8] = b"\r\n\r\n";

/// Every test stops by itself within this bound.
pub async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(240), f)
        .await
        .expect("test exceeded its time bound")
}

/// reqwest is built without a default rustls provider (the server passes its own TLS
/// configuration); a plain client needs the process default installed once.
pub fn builder() -> reqwest::ClientBuilder {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
}

pub fn client() -> reqwest::Client {
    builder()
        .no_proxy()
        // A hang bound only: a 16 MiB download from a debug-build fake on a runner with both
        // cores busy has taken over 30 s.
        .timeout(Duration::from_secs(120))
        .build()
        .expect("client")
}

pub async fn post(fake: &FakeSnowLuma, body: Value) -> (StatusCode, Value) {
    let resp = client()
        .post(&fake.url)
        .json(&body)
        .send()
        .await
        .expect("send");
    let status = resp.status();
    (status, resp.json().await.expect("json body"))
}

pub async fn call(fake: &FakeSnowLuma, action: &str, params: Value) -> Value {
    let (status, body) = post(fake, json!({"action": action, "params": params})).await;
    assert_eq!(status, StatusCode::OK, "{action}: {body}");
    body
}

pub fn split_frames(body: &[u8]) -> Vec<Value> {
    assert!(
        body.ends_with(DELIM),
        "stream body must end with a delimiter"
    );
    let mut frames = Vec::new();
    let mut rest = body;
    while let Some(pos) = find(rest, DELIM) {
        frames.push(serde_json::from_slice(&rest[..pos]).expect("frame is JSON"));
        rest = &rest[pos + DELIM.len()..];
    }
    assert!(rest.is_empty());
    frames
}

pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

pub async fn stream(fake: &FakeSnowLuma, action: &str, params: Value) -> Vec<Value> {
    let resp = client()
        .post(&fake.url)
        .json(&json!({"action": action, "params": params}))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(
        resp.headers().get("content-type").is_none(),
        "stream answers carry no Content-Type"
    );
    split_frames(&resp.bytes().await.expect("body"))
}

pub fn assert_stream_marked(frame: &Value) {
    assert_eq!(frame["stream"], "stream-action", "{frame}");
    assert!(
        frame["message"].is_string() && frame["wording"].is_string(),
        "{frame}"
    );
}

pub fn assert_error_frame(frame: &Value, retcode: i64, wording_prefix: &str) {
    assert_stream_marked(frame);
    assert_eq!(frame["status"], "failed", "{frame}");
    assert_eq!(frame["retcode"], retcode, "{frame}");
    assert_eq!(
        frame["data"],
        json!({"type": "error", "data_type": "error"})
    );
    let wording = frame["wording"].as_str().unwrap();
    assert!(
        wording.starts_with(wording_prefix),
        "{wording:?} should start with {wording_prefix:?}"
    );
    assert_eq!(frame["message"], frame["wording"]);
}

pub fn assert_valid(action: &str, data: &Value) {
    let schema = fake_snowluma::returns_schema(action).expect("catalog action");
    if let Err(e) = fake_snowluma::validate_schema(&schema, data) {
        panic!("{action}: data does not match returnsSchema: {e}\n{data}");
    }
}
