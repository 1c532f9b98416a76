//! The fake SnowLuma's injected faults, driven with plain reqwest: status faults and their
//! precedence, slow and refused connections, stalled bodies, a disconnect mid-stream, an
//! oversized frame and an error frame.

#[path = "support/fake_client.rs"]
mod fake_client;
#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

use fake_client::*;
use fake_snowluma::{FakeSnowLuma, Fault};

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
        // Read until the first frame and part of the next have arrived (however slowly a
        // loaded machine sends them), then check that nothing more comes.
        let mut got = Vec::new();
        let has_part_of_next =
            |got: &[u8]| find(got, DELIM).is_some_and(|first| got.len() > first + DELIM.len());
        while !has_part_of_next(&got) {
            match resp.chunk().await {
                Ok(Some(piece)) => got.extend_from_slice(&piece),
                other => panic!("stream ended before stalling: {other:?}"),
            }
        }
        assert!(
            tokio::time::timeout(Duration::from_millis(300), resp.chunk())
                .await
                .is_err(),
            "the stream must stall after part of the second frame"
        );
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
