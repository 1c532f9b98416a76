//! Tests of the fake SnowLuma itself, driven with plain reqwest.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;

use std::future::Future;
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use fake_snowluma::{FakeOptions, FakeSnowLuma, Fault};
use reqwest::StatusCode;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const DELIM: &[u8] = b"\r\n\r\n";

/// Every test stops by itself within this bound.
async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(90), f)
        .await
        .expect("test exceeded its time bound")
}

/// reqwest is built without a default rustls provider (the server passes its own TLS
/// configuration); a plain client needs the process default installed once.
fn builder() -> reqwest::ClientBuilder {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
}

fn client() -> reqwest::Client {
    builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
}

async fn post(fake: &FakeSnowLuma, body: Value) -> (StatusCode, Value) {
    let resp = client()
        .post(&fake.url)
        .json(&body)
        .send()
        .await
        .expect("send");
    let status = resp.status();
    (status, resp.json().await.expect("json body"))
}

async fn call(fake: &FakeSnowLuma, action: &str, params: Value) -> Value {
    let (status, body) = post(fake, json!({"action": action, "params": params})).await;
    assert_eq!(status, StatusCode::OK, "{action}: {body}");
    body
}

fn split_frames(body: &[u8]) -> Vec<Value> {
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

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

async fn stream(fake: &FakeSnowLuma, action: &str, params: Value) -> Vec<Value> {
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

/// The single frame of an upload call.
async fn upload(fake: &FakeSnowLuma, params: Value) -> Value {
    let mut frames = stream(fake, "upload_file_stream", params).await;
    assert_eq!(frames.len(), 1, "one frame per upload call");
    frames.remove(0)
}

fn assert_stream_marked(frame: &Value) {
    assert_eq!(frame["stream"], "stream-action", "{frame}");
    assert!(
        frame["message"].is_string() && frame["wording"].is_string(),
        "{frame}"
    );
}

fn assert_error_frame(frame: &Value, retcode: i64, wording_prefix: &str) {
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

fn assert_valid(action: &str, data: &Value) {
    let schema = fake_snowluma::returns_schema(action).expect("catalog action");
    if let Err(e) = fake_snowluma::validate_schema(&schema, data) {
        panic!("{action}: data does not match returnsSchema: {e}\n{data}");
    }
}

fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn sample_bytes(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

#[tokio::test]
async fn health_check_and_auth() {
    bounded(async {
        let fake = FakeSnowLuma::start(Some("s3cret")).await;
        assert!(fake.url.starts_with("http://127.0.0.1:") && fake.url.ends_with('/'));
        let c = client();

        let resp = c.get(&fake.url).send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            resp.headers()["content-type"],
            "application/json; charset=utf-8"
        );
        let body: Value = resp.json().await.unwrap();
        assert_eq!(
            body,
            json!({"status": "failed", "retcode": 1401, "data": null, "wording": "unauthorized"})
        );

        for bad in [
            "bearer s3cret",
            "Bearer wrong",
            "Token s3cret",
            "Bearer  s3cret",
            "s3cret",
        ] {
            let resp = c
                .get(&fake.url)
                .header("Authorization", bad)
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), StatusCode::UNAUTHORIZED, "{bad}");
        }
        let resp = c.get(&fake.url).bearer_auth("s3cret").send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        let body: Value = resp.json().await.unwrap();
        assert_eq!(
            body,
            json!({"status": "ok", "retcode": 0, "data": {"online": true}})
        );

        let resp = c
            .post(format!("{}?access_token=s3cret", fake.url))
            .json(&json!({"action": "get_status"}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        let resp = c
            .post(&fake.url)
            .bearer_auth("s3cret")
            .json(&json!({"action": "get_status"}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.json::<Value>().await.unwrap()["data"]["good"], true);

        // The failed attempts were recorded too, with lowercase header names.
        let reqs = fake.requests();
        assert_eq!(reqs.len(), 9);
        assert_eq!(reqs[1].header("authorization"), Some("bearer s3cret"));
        assert_eq!(reqs[1].header("Authorization"), Some("bearer s3cret"));
        assert!(
            reqs.iter()
                .all(|r| r.headers.iter().all(|(k, _)| *k == k.to_lowercase()))
        );
        assert_eq!(reqs[7].query.as_deref(), Some("access_token=s3cret"));

        let open = FakeSnowLuma::start(None).await;
        assert_eq!(
            c.get(&open.url).send().await.unwrap().status(),
            StatusCode::OK
        );
    })
    .await;
}

#[tokio::test]
async fn routing_and_request_forms() {
    bounded(async {
        let fake = FakeSnowLuma::start(None).await;
        let c = client();

        let (_, body) = post(&fake, json!({"action": "get_login_info", "params": {}, "echo": "e1"})).await;
        assert_eq!(body["echo"], "e1");
        assert_eq!(body["data"]["user_id"], 10001);
        assert!(body.get("wording").is_none(), "success envelopes carry no wording");

        // Flat form at the root: the whole body is params.
        let (_, body) = post(&fake, json!({"action": "send_private_msg", "user_id": 30001, "message": "hi"})).await;
        assert_eq!(body["data"], json!({"message_id": -123456}));

        // Path form; the path's action wins over the body's.
        let url = |p: &str| format!("{}{p}", fake.url);
        let resp = c
            .post(url("get_status"))
            .json(&json!({"action": "get_login_info"}))
            .send()
            .await
            .unwrap();
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["data"], json!({"online": true, "good": true}));
        let resp = c
            .post(url("send_private_msg"))
            .json(&json!({"user_id": 30001, "message": "x"}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.json::<Value>().await.unwrap()["status"], "ok");

        // GET with query params, JSON-parsed where possible.
        let resp = c.get(url("get_group_info?group_id=20001")).send().await.unwrap();
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["data"]["group_name"], "Test Group");
        assert_eq!(fake.requests().last().unwrap().params, Some(json!({"group_id": 20001})));

        // The raw rest of the path is the action: a trailing slash is unknown.
        let resp = c.post(url("send_msg/")).json(&json!({})).send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(resp.json::<Value>().await.unwrap()["retcode"], 1404);

        // Form bodies pull out action and echo; so does a body without a type.
        let resp = c
            .post(&fake.url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body("action=get_stranger_info&user_id=30001&echo=7")
            .send()
            .await
            .unwrap();
        let body: Value = resp.json().await.unwrap();
        assert_eq!((body["status"].as_str(), body["echo"].as_i64()), (Some("ok"), Some(7)));
        assert_eq!(fake.requests().last().unwrap().params, Some(json!({"user_id": 30001})));
        let resp = c.post(&fake.url).body("action=get_status").send().await.unwrap();
        assert_eq!(resp.json::<Value>().await.unwrap()["data"]["online"], true);

        // Adapter-level errors.
        let resp = c.put(&fake.url).json(&json!({"action": "get_status"})).send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(
            resp.json::<Value>().await.unwrap(),
            json!({"status": "failed", "retcode": 1400, "data": null, "wording": "method not allowed"})
        );
        let resp = c
            .post(&fake.url)
            .header("content-type", "application/json")
            .body("{not json")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
        assert_eq!(resp.json::<Value>().await.unwrap()["wording"], "bad request: invalid json");
        let resp = c
            .post(&fake.url)
            .header("content-type", "text/plain")
            .body("x")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
        assert_eq!(
            resp.json::<Value>().await.unwrap()["wording"],
            "bad request: unsupported content-type: text/plain"
        );
        for body in ["{}", ""] {
            let resp = c
                .post(&fake.url)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
            assert_eq!(resp.json::<Value>().await.unwrap()["wording"], "bad request: missing action");
        }

        // 404 needs a base path other than "/" (with "/" every path is an action).
        let based = FakeSnowLuma::start_with(FakeOptions {
            base_path: "/onebot".into(),
            ..FakeOptions::default()
        })
        .await;
        assert!(based.url.ends_with("/onebot/"));
        let root = based.url.trim_end_matches("onebot/").to_string();
        let resp = c.post(format!("{root}other")).json(&json!({"action": "get_status"})).send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::NOT_FOUND);
        assert_eq!(
            resp.json::<Value>().await.unwrap(),
            json!({"status": "failed", "retcode": 1404, "data": null, "wording": "not found"})
        );
        let resp = c.post(&based.url).json(&json!({"action": "get_status"})).send().await.unwrap();
        assert_eq!(resp.json::<Value>().await.unwrap()["status"], "ok");
        let resp = c.post(format!("{}get_status", based.url)).send().await.unwrap();
        assert_eq!(resp.json::<Value>().await.unwrap()["status"], "ok");
        let recorded = &based.requests()[0];
        assert_eq!((recorded.method.as_str(), recorded.path.as_str()), ("POST", "/other"));
        assert_eq!(recorded.action, None);
        assert_eq!(recorded.json(), Some(json!({"action": "get_status"})));

        fake.clear_requests();
        assert!(fake.requests().is_empty());
    })
    .await;
}

#[tokio::test]
async fn envelopes_validation_and_canned_answers() {
    bounded(async {
        let fake = FakeSnowLuma::start(None).await;
        let resp = client()
            .post(&fake.url)
            .json(&json!({"action": "get_version_info"}))
            .send()
            .await
            .unwrap();
        assert_eq!(
            resp.headers()["content-type"],
            "application/json; charset=utf-8"
        );
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["data"]["app_version"], "1.11.1-node");

        let unknown =
            json!({"status": "failed", "retcode": 1404, "data": null, "wording": "unknown action"});
        assert_eq!(call(&fake, "no_such_action", json!({})).await, unknown);
        assert_eq!(call(&fake, "send_msg_async", json!({})).await, unknown);

        let cases = [
            ("get_group_info", json!({}), 1400, "group_id: is required"),
            (
                "get_group_info",
                json!({"group_id": "abc"}),
                1400,
                "group_id: expected a positive integer",
            ),
            (
                "get_group_info",
                json!({"group_id": 0}),
                1400,
                "group_id: must be >= 1",
            ),
            (
                "get_group_info",
                json!({"group_id": null}),
                1400,
                "group_id: expected a positive integer",
            ),
            (
                "get_msg",
                json!({"message_id": 0}),
                1400,
                "message_id: must not be 0",
            ),
            (
                "get_msg",
                json!({"message_id": 999}),
                100,
                "message not found",
            ),
            ("delete_msg", json!({}), 1400, "message_id: is required"),
            (
                "send_msg",
                json!({"message": "x"}),
                1400,
                "user_id is required",
            ),
            (
                "send_msg",
                json!({"message_type": "group", "user_id": 1, "message": "x"}),
                1400,
                "group_id is required",
            ),
            (
                "send_msg",
                json!({"user_id": 30001}),
                1400,
                "message: is required",
            ),
            (
                "send_group_msg",
                json!({"group_id": 20001, "message": []}),
                100,
                "message is empty",
            ),
            (
                "set_group_ban",
                json!({"group_id": 20001, "user_id": 30001, "duration": -1}),
                1400,
                "duration: must be >= 0",
            ),
            (
                "set_group_kick",
                json!({"group_id": 20001}),
                1400,
                "user_id: is required",
            ),
        ];
        for (action, params, retcode, wording) in cases {
            let body = call(&fake, action, params.clone()).await;
            assert_eq!(
                body,
                json!({"status": "failed", "retcode": retcode, "data": null, "wording": wording}),
                "{action} {params}"
            );
        }

        let ok_cases = [
            ("get_login_info", json!({})),
            ("get_status", json!({})),
            ("get_version_info", json!({})),
            ("get_friend_list", json!({})),
            ("get_group_list", json!({})),
            ("get_group_info", json!({"group_id": "20001"})),
            ("get_group_info", json!({"group_id": 55555})),
            (
                "get_group_member_info",
                json!({"group_id": 20001, "user_id": 30001}),
            ),
            ("get_group_member_list", json!({"group_id": 20001})),
            ("get_msg", json!({"message_id": -123456})),
            ("delete_msg", json!({"message_id": -123456})),
            (
                "send_msg",
                json!({"group_id": 20001, "message": [{"type": "text", "data": {"text": "hi"}}]}),
            ),
            ("send_msg", json!({"user_id": 30001, "message": "hi"})),
            (
                "send_private_msg",
                json!({"user_id": 30001, "message": {"type": "text", "data": {"text": "x"}}}),
            ),
            (
                "send_group_msg",
                json!({"group_id": 20001, "message": "hi"}),
            ),
            (
                "set_group_ban",
                json!({"group_id": 20001, "user_id": 30001}),
            ),
            (
                "set_group_kick",
                json!({"group_id": 20001, "user_id": 30001}),
            ),
            (
                "set_group_card",
                json!({"group_id": 20001, "user_id": 30001, "card": "c"}),
            ),
            ("get_stranger_info", json!({"user_id": 30001})),
            ("get_stranger_info", json!({"user_id": 424242})),
            ("can_send_image", json!({})),
        ];
        for (action, params) in ok_cases {
            let body = call(&fake, action, params.clone()).await;
            assert_eq!(
                (body["status"].as_str(), body["retcode"].as_i64()),
                (Some("ok"), Some(0)),
                "{action} {params}: {body}"
            );
            assert_valid(action, &body["data"]);
        }
        let msg = call(&fake, "get_msg", json!({"message_id": "-5"})).await;
        assert_eq!(
            (
                msg["data"]["message_id"].as_i64(),
                msg["data"]["real_id"].as_i64()
            ),
            (Some(-5), Some(-5))
        );
        assert_eq!(
            call(&fake, "delete_msg", json!({"message_id": -1})).await["data"],
            Value::Null
        );
        assert_eq!(
            call(&fake, "get_stranger_info", json!({"user_id": 30001})).await["data"]["qq_level"],
            12
        );

        // Knobs: version, whole-envelope overrides (echo still added).
        fake.set_version("1.12.0-node");
        assert_eq!(
            call(&fake, "get_version_info", json!({})).await["data"]["app_version"],
            "1.12.0-node"
        );
        fake.set_answer("send_msg", json!({"status": "async", "retcode": 1}));
        let (_, body) = post(
            &fake,
            json!({"action": "send_msg", "params": {}, "echo": 5}),
        )
        .await;
        assert_eq!(body, json!({"status": "async", "retcode": 1, "echo": 5}));
        fake.set_answer(
            "test_download_stream",
            json!({"status": "failed", "retcode": 100, "data": null, "wording": "busy"}),
        );
        let frames = stream(&fake, "test_download_stream", json!({})).await;
        assert_eq!(frames.len(), 1);
        assert_error_frame(&frames[0], 100, "busy");
        fake.clear_answers();
        assert_eq!(
            call(&fake, "send_msg", json!({})).await["wording"],
            "message: is required"
        );
    })
    .await;
}

#[tokio::test]
async fn every_catalog_example_gets_schema_valid_data() {
    bounded(async {
        let fake = FakeSnowLuma::start(None).await;
        let mut failures = Vec::new();
        let mut checked = 0;
        for (action, params, is_stream) in fake_snowluma::catalog_examples() {
            if is_stream {
                continue;
            }
            let body = call(&fake, &action, params.clone()).await;
            let schema = fake_snowluma::returns_schema(&action).unwrap();
            if schema == json!({"not": {}}) {
                // Always fails in SnowLuma: the fake fails too.
                if body["status"] != "failed" {
                    failures.push(format!("{action}: expected a failure, got {body}"));
                }
                continue;
            }
            if body["status"] != "ok" {
                failures.push(format!("{action} {params}: {body}"));
            } else if let Err(e) = fake_snowluma::validate_schema(&schema, &body["data"]) {
                failures.push(format!("{action}: {e}"));
            }
            checked += 1;
        }
        assert!(checked > 150, "only {checked} examples checked");
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        // Aliases dispatch like their action.
        assert_eq!(call(&fake, "nc_get_rkey", json!({})).await["status"], "ok");
    })
    .await;
}

#[tokio::test]
async fn download_frames_round_trip() {
    bounded(async {
        let fake = FakeSnowLuma::start(None).await;
        let data = sample_bytes(200_000);
        let file = fake.add_file("hello.bin", data.clone());
        assert_eq!(file, "/tmp/snowluma-stream/download/hello.bin");

        let resp = client()
            .post(&fake.url)
            .json(&json!({"action": "download_file_stream", "params": {"file": file, "chunk_size": 65536}, "echo": "d1"}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        assert!(resp.headers().get("content-type").is_none());
        assert_eq!(resp.headers()["transfer-encoding"], "chunked");
        let frames = split_frames(&resp.bytes().await.unwrap());
        assert_eq!(frames.len(), 6, "file_info + 4 chunks + terminal");
        for f in &frames {
            assert_stream_marked(f);
            assert_eq!((f["status"].as_str(), f["retcode"].as_i64()), (Some("ok"), Some(0)));
            assert_eq!((f["message"].as_str(), f["wording"].as_str()), (Some(""), Some("")));
            assert_eq!(f["echo"], "d1");
            assert_valid("download_file_stream", &f["data"]);
        }
        assert_eq!(
            frames[0]["data"],
            json!({"type": "stream", "data_type": "file_info", "file_name": "hello.bin", "file_size": 200000, "chunk_size": 65536})
        );
        let mut joined = Vec::new();
        for (i, f) in frames[1..5].iter().enumerate() {
            let d = &f["data"];
            assert_eq!((d["type"].as_str(), d["data_type"].as_str(), d["index"].as_u64()), (Some("stream"), Some("file_chunk"), Some(i as u64)));
            let b64 = d["data"].as_str().unwrap();
            assert_eq!(d["base64_size"].as_u64(), Some(b64.len() as u64));
            let chunk = STANDARD.decode(b64).unwrap();
            assert_eq!(d["size"].as_u64(), Some(chunk.len() as u64));
            joined.extend_from_slice(&chunk);
        }
        let progress: Vec<u64> = frames[1..5].iter().map(|f| f["data"]["progress"].as_u64().unwrap()).collect();
        assert_eq!(progress, [33, 66, 98, 100]);
        assert_eq!(joined, data);
        assert_eq!(
            frames[5]["data"],
            json!({"type": "response", "data_type": "file_complete", "file_name": "hello.bin", "total_chunks": 4, "total_bytes": 200000, "message": "Download completed"})
        );

        // file_id (a bare name acts as a cached id), the image/record variants.
        for action in ["download_file_stream", "download_file_image_stream", "download_file_record_stream"] {
            let frames = stream(&fake, action, json!({"file": "", "file_id": "hello.bin", "chunk_size": 150000})).await;
            assert_eq!(frames.len(), 4, "{action}");
            assert_eq!(frames[3]["data"]["total_bytes"], 200000);
        }
        // Requested chunk sizes are capped at 16 MiB.
        let frames = stream(&fake, "download_file_stream", json!({"file": "hello.bin", "chunk_size": 1u64 << 30})).await;
        assert_eq!(frames[0]["data"]["chunk_size"], 16 * 1024 * 1024);
        assert_eq!(frames.len(), 3);
        // An empty file has no chunk frames.
        fake.add_file("empty.txt", Vec::new());
        let frames = stream(&fake, "download_file_stream", json!({"file": "empty.txt"})).await;
        assert_eq!(frames.len(), 2);
        assert_eq!(frames[1]["data"]["total_chunks"], 0);

        // Failures are one error frame, still HTTP 200.
        let frames = stream(&fake, "download_file_stream", json!({"file": "/tmp/nope.bin"})).await;
        assert_eq!(frames.len(), 1);
        assert_error_frame(&frames[0], 100, "file not found");
        let frames = stream(&fake, "download_file_stream", json!({})).await;
        assert_error_frame(&frames[0], 100, "file is required");
        let frames = stream(&fake, "download_file_stream", json!({"file": "http://127.0.0.1:1/x"})).await;
        assert_error_frame(&frames[0], 100, "refusing to fetch a private/loopback address");
        let frames = stream(&fake, "download_file_stream", json!({"file": "hello.bin", "chunk_size": 0})).await;
        assert_error_frame(&frames[0], 1400, "chunk_size: must be >= 1");
    })
    .await;
}

#[tokio::test]
async fn generated_download_streams_incrementally() {
    bounded(async {
        let fake = FakeSnowLuma::start(None).await;
        let size = 16 * 1024 * 1024u64;
        let file = fake.add_generated_file("big.bin", size, 7);
        let mut resp = client()
            .post(&fake.url)
            .json(&json!({"action": "download_file_stream", "params": {"file": file, "chunk_size": 1 << 20}}))
            .send()
            .await
            .unwrap();
        let (mut pending, mut frames, mut total) = (Vec::new(), 0, 0u64);
        let mut hasher = Sha256::new();
        let mut first = Vec::new();
        let mut terminal = Value::Null;
        while let Some(piece) = resp.chunk().await.unwrap() {
            pending.extend_from_slice(&piece);
            while let Some(pos) = find(&pending, DELIM) {
                let frame: Value = serde_json::from_slice(&pending[..pos]).unwrap();
                pending.drain(..pos + DELIM.len());
                frames += 1;
                if frame["data"]["data_type"] == "file_chunk" {
                    let chunk = STANDARD.decode(frame["data"]["data"].as_str().unwrap()).unwrap();
                    if first.is_empty() {
                        first = chunk[..16].to_vec();
                    }
                    total += chunk.len() as u64;
                    hasher.update(&chunk);
                } else {
                    terminal = frame;
                }
            }
        }
        assert!(pending.is_empty());
        assert_eq!(frames, 1 + 16 + 1);
        assert_eq!(total, size);
        assert_eq!(terminal["data"]["total_bytes"], size);
        let expected: Vec<u8> = (0..16).map(|i| fake_snowluma::generated_byte(7, i)).collect();
        assert_eq!(first, expected);
        let digest: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(digest, fake_snowluma::generated_sha256(size, 7));
        // The generator is seekable: any window matches byte-by-byte.
        let mut window = [0u8; 19];
        fake_snowluma::fill_generated(7, 1_000_003, &mut window);
        assert!(window.iter().enumerate().all(|(k, b)| *b == fake_snowluma::generated_byte(7, 1_000_003 + k as u64)));
    })
    .await;
}

#[tokio::test]
async fn upload_flow_with_sha256_and_reset() {
    bounded(async {
        let fake = FakeSnowLuma::start(None).await;
        let data = sample_bytes(250_000);
        let parts: Vec<String> = data.chunks(100_000).map(|c| STANDARD.encode(c)).collect();
        assert_eq!(parts.len(), 3);

        // Out of order, with a duplicate; total_chunks only on the first call.
        let f = upload(&fake, json!({"stream_id": "s1", "chunk_data": parts[2], "chunk_index": 2, "total_chunks": 3, "filename": "photo.jpg"})).await;
        assert_stream_marked(&f);
        assert_eq!(f["status"], "ok");
        assert_eq!(
            f["data"],
            json!({"type": "stream", "stream_id": "s1", "status": "chunk_received", "received_chunks": 1, "total_chunks": 3})
        );
        assert_valid("upload_file_stream", &f["data"]);
        upload(&fake, json!({"stream_id": "s1", "chunk_data": parts[0], "chunk_index": 0})).await;
        let f = upload(&fake, json!({"stream_id": "s1", "chunk_data": parts[0], "chunk_index": 0})).await;
        assert_eq!(f["data"]["received_chunks"], 2, "duplicates are idempotent");
        let f = upload(&fake, json!({"stream_id": "s1", "verify_only": true})).await;
        assert_eq!((f["data"]["status"].as_str(), f["data"]["received_chunks"].as_u64()), (Some("file_created"), Some(2)));
        let f = upload(&fake, json!({"stream_id": "s1", "chunk_data": parts[1], "chunk_index": 1, "is_complete": true})).await;
        assert_eq!(f["data"]["status"], "chunk_received", "a chunk call never completes");
        let state = fake.uploaded("s1").unwrap();
        assert_eq!((state.received_chunks, state.chunk_calls, state.complete), (3, 4, false));

        let sha = sha256_hex(&data);
        let f = upload(&fake, json!({"stream_id": "s1", "is_complete": true, "expected_sha256": sha})).await;
        assert_eq!(
            f["data"],
            json!({
                "type": "response", "stream_id": "s1", "status": "file_complete",
                "received_chunks": 3, "total_chunks": 3,
                "file_path": "/tmp/snowluma-stream/upload/10001/s1__photo.jpg",
                "file_size": 250000, "sha256": sha
            })
        );
        assert_valid("upload_file_stream", &f["data"]);
        let state = fake.uploaded("s1").unwrap();
        assert!(state.complete);
        assert_eq!(state.sha256.as_deref(), Some(sha.as_str()));
        assert_eq!(state.bytes.as_deref(), Some(&data[..]));
        // The completed file can be downloaded back by its file_path.
        let frames = stream(&fake, "download_file_stream", json!({"file": "/tmp/snowluma-stream/upload/10001/s1__photo.jpg"})).await;
        let back: Vec<u8> = frames[1..frames.len() - 1]
            .iter()
            .flat_map(|f| STANDARD.decode(f["data"]["data"].as_str().unwrap()).unwrap())
            .collect();
        assert_eq!(back, data);

        // Completion with chunks missing, then verify, then reset.
        upload(&fake, json!({"stream_id": "s2", "chunk_data": parts[0], "chunk_index": 0, "total_chunks": 3})).await;
        let f = upload(&fake, json!({"stream_id": "s2", "is_complete": true})).await;
        assert_error_frame(&f, 100, "incomplete stream: missing 2 chunk(s) [1,2]");
        assert_valid_error_only(&f);
        let f = upload(&fake, json!({"stream_id": "s2", "reset": true})).await;
        assert_error_frame(&f, 100, "Stream reset completed");
        assert!(fake.uploaded("s2").unwrap().reset_seen);
        let f = upload(&fake, json!({"stream_id": "s2", "verify_only": true})).await;
        assert_error_frame(&f, 100, "stream not found");

        // A wrong sha256 fails but leaves the stream open for a retry.
        let one = STANDARD.encode(b"hello");
        upload(&fake, json!({"stream_id": "s3", "chunk_data": one, "chunk_index": 0, "total_chunks": 1, "expected_sha256": "00"})).await;
        let f = upload(&fake, json!({"stream_id": "s3", "is_complete": true})).await;
        assert_error_frame(&f, 100, "sha256 mismatch (expected 00, got ");
        assert!(fake.uploaded("s3").unwrap().last_error.unwrap().starts_with("sha256 mismatch"));
        let f = upload(&fake, json!({"stream_id": "s3", "expected_sha256": sha256_hex(b"hello")})).await;
        assert_eq!(f["data"]["status"], "file_complete", "a call without chunk data completes a full stream");
        assert_eq!(f["data"]["file_path"], "/tmp/snowluma-stream/upload/10001/s3__upload_s3");

        // Parameter and id errors.
        let f = upload(&fake, json!({"stream_id": "bad/id", "total_chunks": 1})).await;
        assert_error_frame(&f, 100, "invalid stream_id");
        let f = upload(&fake, json!({"stream_id": "s4", "chunk_data": one, "chunk_index": 0})).await;
        assert_error_frame(&f, 100, "total_chunks required for new stream");
        let f = upload(&fake, json!({"chunk_data": one})).await;
        assert_error_frame(&f, 1400, "stream_id: is required");
        let f = upload(&fake, json!({"stream_id": "s5", "total_chunks": 2, "chunk_data": one, "chunk_index": 2})).await;
        assert_error_frame(&f, 100, "invalid chunk index: 2");
    })
    .await;
}

fn assert_valid_error_only(frame: &Value) {
    // Error frames are not success data: they must not pass the schema.
    let schema = fake_snowluma::returns_schema("upload_file_stream").unwrap();
    assert!(fake_snowluma::validate_schema(&schema, &frame["data"]).is_err());
}

#[tokio::test]
async fn test_download_stream_with_and_without_error() {
    bounded(async {
        let fake = FakeSnowLuma::start(None).await;
        let frames = stream(&fake, "test_download_stream", json!({})).await;
        assert_eq!(frames.len(), 11);
        for (i, f) in frames[..10].iter().enumerate() {
            assert_stream_marked(f);
            assert_eq!(f["data"], json!({"type": "stream", "data": format!("Index-> {}", i + 1), "data_type": "data_chunk"}));
            assert_valid("test_download_stream", &f["data"]);
        }
        assert_eq!(
            frames[10]["data"],
            json!({"type": "response", "data_type": "data_complete", "data": "Stream transmission complete"})
        );
        assert_eq!((frames[10]["message"].as_str(), frames[10]["wording"].as_str()), (Some(""), Some("")));

        let frames = stream(&fake, "test_download_stream", json!({"error": "true"})).await;
        assert_eq!(frames.len(), 11);
        assert_error_frame(&frames[10], 100, "This is a test error");
        assert_eq!(frames[10]["message"], "This is a test error");
    })
    .await;
}

#[tokio::test]
async fn fault_status_faults_and_precedence() {
    bounded(async {
        let fake = FakeSnowLuma::start(None).await;
        fake.set_fault(Some("get_status"), Fault::Unauthorized);
        let (status, body) = post(&fake, json!({"action": "get_status"})).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(body["retcode"], 1401);
        assert_eq!(
            call(&fake, "get_login_info", json!({})).await["status"],
            "ok"
        );

        fake.set_fault(None, Fault::ServerError);
        let (status, body) = post(&fake, json!({"action": "get_login_info"})).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            (body["status"].as_str(), body["retcode"].as_i64()),
            (Some("failed"), Some(1200))
        );
        // An action's own fault wins over the global one.
        assert_eq!(
            post(&fake, json!({"action": "get_status"})).await.0,
            StatusCode::UNAUTHORIZED
        );
        // Replacing a fault for the same key.
        fake.set_fault(Some("get_status"), Fault::BadJson);
        let resp = client()
            .post(&fake.url)
            .json(&json!({"action": "get_status"}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(
            resp.headers()["content-type"],
            "application/json; charset=utf-8"
        );
        let text = resp.text().await.unwrap();
        assert!(serde_json::from_str::<Value>(&text).is_err(), "{text}");

        fake.set_fault(Some("test_download_stream"), Fault::BadJson);
        let resp = client()
            .post(&fake.url)
            .json(&json!({"action": "test_download_stream"}))
            .send()
            .await
            .unwrap();
        let body = resp.bytes().await.unwrap();
        assert!(body.ends_with(DELIM));
        assert!(serde_json::from_slice::<Value>(&body[..body.len() - 4]).is_err());

        fake.clear_faults();
        assert_eq!(call(&fake, "get_status", json!({})).await["status"], "ok");
        assert_eq!(fake.requests().len(), 7, "faulted requests are recorded");
    })
    .await;
}

#[tokio::test]
async fn fault_slow_and_refuse() {
    bounded(async {
        let fake = FakeSnowLuma::start(None).await;
        fake.set_fault(Some("get_status"), Fault::Slow(Duration::from_millis(300)));
        let start = Instant::now();
        assert_eq!(call(&fake, "get_status", json!({})).await["status"], "ok");
        assert!(start.elapsed() >= Duration::from_millis(300));
        // A client timeout shorter than the delay fails.
        let quick = builder()
            .no_proxy()
            .timeout(Duration::from_millis(100))
            .build()
            .unwrap();
        assert!(
            quick
                .post(&fake.url)
                .json(&json!({"action": "get_status"}))
                .send()
                .await
                .is_err()
        );

        fake.set_fault(None, Fault::Refuse);
        let err = client()
            .post(&fake.url)
            .json(
                &json!({"action": "send_group_msg", "params": {"group_id": 20001, "message": "x"}}),
            )
            .send()
            .await
            .expect_err("connection closed without a response");
        assert!(!err.is_timeout(), "{err}");
        let last = fake.requests().pop().unwrap();
        assert_eq!(last.action.as_deref(), Some("send_group_msg"));
        assert_eq!(
            last.params,
            Some(json!({"group_id": 20001, "message": "x"}))
        );
    })
    .await;
}

#[tokio::test]
async fn fault_stall_body() {
    bounded(async {
        let fake = FakeSnowLuma::start(None).await;
        fake.set_fault(None, Fault::StallBody);
        let c = client();
        let mut resp = c
            .post(&fake.url)
            .json(&json!({"action": "get_login_info"}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        let len: usize = resp.headers()["content-length"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        let part = resp.chunk().await.unwrap().unwrap();
        assert!(!part.is_empty() && part.len() < len);
        assert!(
            tokio::time::timeout(Duration::from_millis(300), resp.chunk())
                .await
                .is_err(),
            "body must stall"
        );
        drop(resp);

        let mut resp = c
            .post(&fake.url)
            .json(&json!({"action": "test_download_stream"}))
            .send()
            .await
            .unwrap();
        let mut got = Vec::new();
        loop {
            match tokio::time::timeout(Duration::from_millis(300), resp.chunk()).await {
                Ok(Ok(Some(piece))) => got.extend_from_slice(&piece),
                Ok(other) => panic!("stream should stall, got {other:?}"),
                Err(_) => break,
            }
        }
        let first = find(&got, DELIM).expect("first frame arrives whole");
        let frame: Value = serde_json::from_slice(&got[..first]).unwrap();
        assert_eq!(frame["data"]["data"], "Index-> 1");
        assert!(
            got.len() > first + DELIM.len(),
            "part of the next frame arrives"
        );
        assert!(find(&got[first + DELIM.len()..], DELIM).is_none());
    })
    .await;
}

async fn read_until_error(resp: &mut reqwest::Response) -> (Vec<u8>, bool) {
    let mut got = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(piece)) => got.extend_from_slice(&piece),
            Ok(None) => return (got, false),
            Err(_) => return (got, true),
        }
    }
}

#[tokio::test]
async fn fault_disconnect_mid_stream() {
    bounded(async {
        let fake = FakeSnowLuma::start(None).await;
        let c = client();
        fake.set_fault(Some("test_download_stream"), Fault::DisconnectMidStream { after_frames: 3 });
        let mut resp = c.post(&fake.url).json(&json!({"action": "test_download_stream"})).send().await.unwrap();
        let (got, errored) = read_until_error(&mut resp).await;
        assert!(errored, "the body must end in an error");
        assert_eq!(split_frames(&got).len(), 3);

        // More frames asked than the stream has: still no clean end.
        fake.set_fault(Some("upload_file_stream"), Fault::DisconnectMidStream { after_frames: 50 });
        let mut resp = c
            .post(&fake.url)
            .json(&json!({"action": "upload_file_stream", "params": {"stream_id": "d", "verify_only": true}}))
            .send()
            .await
            .unwrap();
        let (got, errored) = read_until_error(&mut resp).await;
        assert!(errored);
        assert_eq!(split_frames(&got).len(), 1);

        fake.set_fault(Some("get_login_info"), Fault::DisconnectMidStream { after_frames: 0 });
        let resp = c.post(&fake.url).json(&json!({"action": "get_login_info"})).send().await;
        assert!(resp.is_err() || resp.unwrap().bytes().await.is_err());
    })
    .await;
}

#[tokio::test]
async fn fault_oversized_frame() {
    bounded(async {
        let fake = FakeSnowLuma::start(None).await;
        fake.set_fault(None, Fault::OversizedFrame);
        let c = client();
        let body = c
            .post(&fake.url)
            .json(&json!({"action": "test_download_stream"}))
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        assert!(body.len() > 16 * 1024 * 1024);
        assert!(find(&body, DELIM).is_none(), "no frame delimiter at all");

        let body = c
            .post(&fake.url)
            .json(&json!({"action": "get_status"}))
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        assert!(body.len() > 16 * 1024 * 1024);
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["status"], "ok");
    })
    .await;
}

#[tokio::test]
async fn fault_error_frame() {
    bounded(async {
        let fake = FakeSnowLuma::start(None).await;
        fake.set_fault(None, Fault::ErrorFrame);
        let frames = stream(&fake, "test_download_stream", json!({})).await;
        assert_eq!(frames.len(), 11);
        assert_error_frame(&frames[10], 100, "injected error frame");
        let frames = stream(&fake, "upload_file_stream", json!({"stream_id": "e", "total_chunks": 1})).await;
        assert_eq!(frames.len(), 1);
        assert_error_frame(&frames[0], 100, "");
        let (status, body) = post(&fake, json!({"action": "get_status", "echo": 1})).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, json!({"status": "failed", "retcode": 100, "data": null, "wording": "injected failure", "echo": 1}));
    })
    .await;
}

#[tokio::test]
async fn body_cap_and_shutdown() {
    bounded(async {
        let fake = FakeSnowLuma::start(None).await;
        let big = json!({"action": "send_private_msg", "params": {"user_id": 1, "message": "x".repeat(3 << 20)}});
        match client().post(&fake.url).json(&big).send().await {
            Ok(resp) => {
                assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
                let body: Value = resp.json().await.unwrap();
                assert_eq!(body, json!({"status": "failed", "retcode": 1200, "data": null, "wording": "request body too large"}));
            }
            Err(e) => assert!(!e.is_timeout(), "{e}"), // SnowLuma may also just reset
        }
        let rec = fake.requests().pop().unwrap();
        assert_eq!(rec.body.len(), 2 * 1024 * 1024);
        assert_eq!(rec.action, None);

        let url = fake.url.clone();
        fake.shutdown();
        assert!(client().get(&url).send().await.is_err(), "nothing listens after shutdown");
    })
    .await;
}
