//! query_action_with_input / invoke_action_with_input for 2026-07-28 requests (MRTR) over
//! real stdio with the raw JSON-lines peer, against the fake SnowLuma: the exact wire of
//! `input_required`, every way an answer or a state can be refused (and that nothing then
//! reaches SnowLuma), single use under replay and races, expiry, retries and the pending
//! limit.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/input_helpers.rs"]
mod input_helpers;
#[path = "support/raw_client.rs"]
mod raw_client;

use serde_json::{Value, json};

use input_helpers::*;
use raw_client::{RawServer, modern_meta, structured};

/// The `requestState` of an `input_required` result, after checking its shape.
fn state_of(response: &Value) -> String {
    let result = &response["result"];
    assert_eq!(result["resultType"], "input_required", "{response}");
    assert!(
        result.get("content").is_none() && result.get("ttlMs").is_none(),
        "{result}"
    );
    let request = &result["inputRequests"][KEY];
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(request["params"]["mode"], "form");
    assert_eq!(
        request["params"]["requestedSchema"]["required"],
        json!(["params_json"])
    );
    result["requestState"]
        .as_str()
        .expect("requestState")
        .to_string()
}

#[tokio::test]
async fn modern_accept_runs_once_and_a_replay_is_refused() {
    let (fake, mut server) = start(&[]).await;
    let asked = modern(
        &mut server,
        1,
        "invoke_action_with_input",
        send_group(20001),
        json!({}),
    )
    .await;
    let state = state_of(&asked);
    let message = asked["result"]["inputRequests"][KEY]["params"]["message"]
        .as_str()
        .unwrap();
    assert!(message.contains("message"), "{message}");
    assert!(!message.contains("group_id"), "{message}");
    assert!(!state.contains(TOKEN));
    assert!(fake.requests().is_empty(), "nothing runs before the answer");

    let retry =
        json!({ "inputResponses": accept(r#"{"message":"Hello"}"#), "requestState": state });
    let done = modern(
        &mut server,
        2,
        "invoke_action_with_input",
        send_group(20001),
        retry.clone(),
    )
    .await;
    let body = structured(&done);
    assert_eq!(body["diagnostics"]["outcome"], "success", "{body}");
    assert_eq!(body["result"]["retcode"], 0);
    let sent = fake.requests_for("send_group_msg");
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0].json().unwrap()["params"],
        json!({ "group_id": 20001, "message": "Hello" })
    );

    let replay = modern(
        &mut server,
        3,
        "invoke_action_with_input",
        send_group(20001),
        retry,
    )
    .await;
    assert_eq!(refusal(&replay), ("input_state".into(), "replayed".into()));
    assert_eq!(fake.requests_for("send_group_msg").len(), 1);
    assert!(server.validated >= 2);
    server.finish().await;
}

#[tokio::test]
async fn modern_refused_answers_run_nothing_and_name_the_field() {
    let (fake, mut server) = start(&[]).await;
    let decline = json!({ KEY: { "action": "decline" } });
    let cancel = json!({ KEY: { "action": "cancel" } });
    let cases = [
        (
            send_group(20001),
            decline,
            "input_declined",
            "declined",
            None,
        ),
        (
            send_group(20001),
            cancel,
            "input_cancelled",
            "cancelled",
            None,
        ),
        (
            send_group(20001),
            accept("{message: Hello"),
            "input_invalid",
            "invalid_json",
            None,
        ),
        (
            send_group(20001),
            accept(r#"["Hello"]"#),
            "input_invalid",
            "not_an_object",
            None,
        ),
        (
            json!({ "action": "get_group_info" }),
            accept(r#"{"group_id":"twenty"}"#),
            "input_invalid",
            "invalid_answer_field",
            Some("group_id"),
        ),
        (
            send_group(20001),
            accept(r#"{"message":"Hi","auto_escape":true,"extra":1}"#),
            "input_invalid",
            "extra_field",
            None,
        ),
        (
            send_group(20001),
            accept(r#"{"message":"Hi","group_id":1}"#),
            "input_invalid",
            "overwrite",
            Some("group_id"),
        ),
        (
            send_group(20001),
            accept(r#"{"message":"Hi","execution":{}}"#),
            "input_invalid",
            "reserved_field",
            Some("execution"),
        ),
    ];
    let mut id = 10;
    for (args, responses, kind, code, field) in cases {
        let tool = if args["action"] == "get_group_info" {
            "query_action_with_input"
        } else {
            "invoke_action_with_input"
        };
        let state = state_of(&modern(&mut server, id, tool, args.clone(), json!({})).await);
        let retry = json!({ "inputResponses": responses, "requestState": state });
        let answered = modern(&mut server, id + 1, tool, args, retry).await;
        let (got_kind, got_code) = refusal(&answered);
        assert_eq!((got_kind.as_str(), got_code.as_str()), (kind, code));
        let body = structured(&answered);
        if let Some(field) = field {
            assert_eq!(body["diagnostics"]["field"], field);
            assert!(
                body["diagnostics"]["message"]
                    .as_str()
                    .unwrap()
                    .contains(field)
            );
        }
        assert!(body["diagnostics"]["next_step"].is_string());
        id += 2;
    }
    assert!(
        fake.requests().is_empty(),
        "no refused answer reached SnowLuma"
    );
    server.finish().await;
}

/// Opens a get_group_info prompt and returns its state.
async fn open_prompt(server: &mut RawServer, id: i64) -> String {
    let args = json!({ "action": "get_group_info" });
    state_of(&modern(server, id, "query_action_with_input", args, json!({})).await)
}

#[tokio::test]
async fn states_are_bound_to_tool_arguments_process_and_signature() {
    let (fake, mut server) = start(&[]).await;
    let args = json!({ "action": "get_group_info" });
    let answer = accept(r#"{"group_id":20001}"#);

    // Altered: one character of the signed body changed.
    let state = open_prompt(&mut server, 1).await;
    let mut tampered: Vec<char> = state.chars().collect();
    let i = tampered.len() / 2;
    tampered[i] = if tampered[i] == 'A' { 'B' } else { 'A' };
    let tampered: String = tampered.into_iter().collect();
    let retry = json!({ "inputResponses": answer, "requestState": tampered });
    let r = modern(
        &mut server,
        2,
        "query_action_with_input",
        args.clone(),
        retry,
    )
    .await;
    assert_eq!(refusal(&r), ("input_state".into(), "unknown_state".into()));

    // Issued for another tool (same arguments).
    let retry = json!({ "inputResponses": answer, "requestState": state });
    let r = modern(
        &mut server,
        3,
        "invoke_action_with_input",
        args.clone(),
        retry,
    )
    .await;
    assert_eq!(refusal(&r), ("input_state".into(), "wrong_tool".into()));

    // Other arguments.
    let state = open_prompt(&mut server, 4).await;
    let other = json!({ "action": "get_group_info", "params": { "no_cache": true } });
    let retry = json!({ "inputResponses": answer, "requestState": state });
    let r = modern(&mut server, 5, "query_action_with_input", other, retry).await;
    assert_eq!(
        refusal(&r),
        ("input_state".into(), "wrong_arguments".into())
    );

    // From before a restart: another process never accepts it.
    let state = open_prompt(&mut server, 6).await;
    server.finish().await;
    let env = [
        ("SNOWLUMA_MCP_MODE", "write"),
        ("SNOWLUMA_MCP_ENDPOINT", fake.url.as_str()),
        ("SNOWLUMA_MCP_TOKEN", TOKEN),
    ];
    let mut restarted = RawServer::spawn(&env);
    let retry = json!({ "inputResponses": answer, "requestState": state });
    let r = modern(&mut restarted, 7, "query_action_with_input", args, retry).await;
    assert_eq!(refusal(&r), ("input_state".into(), "unknown_state".into()));
    assert!(fake.requests().is_empty());
    restarted.finish().await;
}

#[tokio::test]
async fn an_expired_state_is_refused() {
    let (fake, mut server) = start(&[("SNOWLUMA_MCP_INPUT_STATE_TTL_MS", "200")]).await;
    let args = json!({ "action": "get_group_info" });
    let state = state_of(
        &modern(
            &mut server,
            1,
            "query_action_with_input",
            args.clone(),
            json!({}),
        )
        .await,
    );
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    let retry = json!({ "inputResponses": accept(r#"{"group_id":20001}"#), "requestState": state });
    let r = modern(&mut server, 2, "query_action_with_input", args, retry).await;
    assert_eq!(refusal(&r), ("input_state".into(), "expired".into()));
    assert!(fake.requests().is_empty());
    server.finish().await;
}

#[tokio::test]
async fn two_concurrent_answers_to_one_state_run_once() {
    let (fake, mut server) = start(&[]).await;
    let state = state_of(
        &modern(
            &mut server,
            1,
            "invoke_action_with_input",
            send_group(20001),
            json!({}),
        )
        .await,
    );
    let params = json!({
        "name": "invoke_action_with_input",
        "arguments": send_group(20001),
        "_meta": modern_meta(forms()),
        "inputResponses": accept(r#"{"message":"once"}"#),
        "requestState": state,
    });
    // Both answers are on the wire before either is read back.
    for id in [2, 3] {
        server
            .send(&json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params }))
            .await;
    }
    let a = server.wait_for_id(&json!(2)).await;
    let b = server.wait_for_id(&json!(3)).await;
    let successes = [&a, &b]
        .iter()
        .filter(|r| r["result"]["isError"] != true)
        .count();
    assert_eq!(successes, 1, "{a}\n{b}");
    let loser = if a["result"]["isError"] == true {
        &a
    } else {
        &b
    };
    assert_eq!(refusal(loser), ("input_state".into(), "replayed".into()));
    assert_eq!(fake.requests_for("send_group_msg").len(), 1);
    server.finish().await;
}

#[tokio::test]
async fn the_257th_open_prompt_is_refused_and_none_is_evicted() {
    let (fake, mut server) = start(&[]).await;
    let args = json!({ "action": "get_group_info" });
    let mut first = None;
    for id in 1..=256 {
        let state = state_of(
            &modern(
                &mut server,
                id,
                "query_action_with_input",
                args.clone(),
                json!({}),
            )
            .await,
        );
        first.get_or_insert(state);
    }
    let over = modern(
        &mut server,
        300,
        "query_action_with_input",
        args.clone(),
        json!({}),
    )
    .await;
    let (kind, code) = refusal(&over);
    assert_eq!(
        (kind.as_str(), code.as_str()),
        ("input_limit", "too_many_pending")
    );
    assert!(
        structured(&over)["diagnostics"]["message"]
            .as_str()
            .unwrap()
            .contains("256")
    );
    // The oldest prompt still works, and answering it frees a slot.
    let retry = json!({ "inputResponses": accept(r#"{"group_id":20001}"#), "requestState": first.unwrap() });
    let done = modern(
        &mut server,
        301,
        "query_action_with_input",
        args.clone(),
        retry,
    )
    .await;
    assert_eq!(structured(&done)["diagnostics"]["outcome"], "success");
    state_of(&modern(&mut server, 302, "query_action_with_input", args, json!({})).await);
    assert_eq!(fake.requests_for("get_group_info").len(), 1);
    server.finish().await;
}

#[tokio::test]
async fn a_retry_without_an_answer_gets_a_fresh_prompt() {
    let (_fake, mut server) = start(&[]).await;
    let args = json!({ "action": "get_group_info" });
    let old = state_of(
        &modern(
            &mut server,
            1,
            "query_action_with_input",
            args.clone(),
            json!({}),
        )
        .await,
    );
    let again = modern(
        &mut server,
        2,
        "query_action_with_input",
        args.clone(),
        json!({ "requestState": old }),
    )
    .await;
    let fresh = state_of(&again);
    assert_ne!(fresh, old);
    let retry = json!({ "inputResponses": accept(r#"{"group_id":20001}"#), "requestState": old });
    let r = modern(&mut server, 3, "query_action_with_input", args, retry).await;
    assert_eq!(refusal(&r), ("input_state".into(), "replayed".into()));
    server.finish().await;
}
