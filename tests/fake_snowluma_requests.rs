//! The fake SnowLuma's ordinary HTTP answers, driven with plain reqwest: health check and
//! auth, routing and request forms, envelopes, param validation and canned answers, data
//! valid against every catalog example's returnsSchema, the body cap and shutdown.

#[path = "support/fake_client.rs"]
mod fake_client;
#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;

use reqwest::StatusCode;
use serde_json::{Value, json};

use fake_client::*;
use fake_snowluma::{FakeOptions, FakeSnowLuma};

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
