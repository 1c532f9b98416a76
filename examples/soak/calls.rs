//! Phase 1: mixed `tools/call` requests, a fixed number in flight on the one stdio connection.
//!
//! The mix cycles through a fixed list: docs tools, read and write actions through the generic
//! tools and their typed tools, and a sprinkle of calls that must fail in a known way (unknown
//! action, bad params, a write through query_action, a OneBot failure, an action the fake
//! answers with HTTP 500). Every reply must carry an id that is in flight and the expected
//! outcome; anything else is counted as a problem.

use std::collections::HashMap;
use std::time::Instant;

use serde_json::{Value, json};

use crate::fake_snowluma::{GROUP_ID, MISSING_MESSAGE_ID, SELF_ID, USER_ID};
use crate::{Client, PhaseReport};

/// The action the fake answers with HTTP 500 (`Fault::ServerError`) for the whole run.
pub const FAULTY_ACTION: &str = "get_friend_list";

/// What a reply must say.
#[derive(Clone, Copy)]
enum Expect {
    /// `isError: false`, `diagnostics.outcome` absent or "success".
    Success,
    /// `isError: false` with this `diagnostics.kind` (a OneBot failure is data).
    Data(&'static str),
    /// `isError: true` with this `diagnostics.kind`.
    ToolError(&'static str),
}

struct Call {
    label: &'static str,
    tool: &'static str,
    arguments: Value,
    expect: Expect,
}

fn call(label: &'static str, tool: &'static str, arguments: Value, expect: Expect) -> Call {
    Call {
        label,
        tool,
        arguments,
        expect,
    }
}

/// One cycle of the mix: 20 calls, 4 of them failing on purpose.
fn mix() -> Vec<Call> {
    use Expect::*;
    let query = |action: &str, params: Value| json!({ "action": action, "params": params });
    let segments = json!([{ "type": "text", "data": { "text": "soak" } }]);
    vec![
        call(
            "query_action get_login_info",
            "query_action",
            query("get_login_info", json!({})),
            Success,
        ),
        call(
            "query_action get_group_list",
            "query_action",
            query("get_group_list", json!({})),
            Success,
        ),
        call(
            "invoke_action send_private_msg",
            "invoke_action",
            query(
                "send_private_msg",
                json!({ "user_id": USER_ID, "message": "soak" }),
            ),
            Success,
        ),
        call(
            "typed get_group_info",
            "get_group_info",
            json!({ "group_id": GROUP_ID }),
            Success,
        ),
        call(
            "get_action send_group_msg",
            "get_action",
            json!({ "name": "send_group_msg" }),
            Success,
        ),
        call(
            "search_actions group",
            "search_actions",
            json!({ "query": "group" }),
            Success,
        ),
        call(
            "list_actions page",
            "list_actions",
            json!({ "limit": 20, "offset": 40 }),
            Success,
        ),
        call("get_runtime_info", "get_runtime_info", json!({}), Success),
        call(
            "unknown action",
            "query_action",
            query("no_such_action_soak", json!({})),
            ToolError("unknown_action"),
        ),
        call("typed get_login_info", "get_login_info", json!({}), Success),
        call(
            "query_action get_group_member_info",
            "query_action",
            query(
                "get_group_member_info",
                json!({ "group_id": GROUP_ID, "user_id": USER_ID }),
            ),
            Success,
        ),
        call(
            "typed send_private_msg",
            "send_private_msg",
            json!({ "user_id": USER_ID, "message": segments }),
            Success,
        ),
        call(
            "bad params (no user_id)",
            "invoke_action",
            query("send_private_msg", json!({ "message": "soak" })),
            ToolError("invalid_arguments"),
        ),
        call(
            "search_actions keywords",
            "search_actions",
            json!({ "query": "mute someone in a group", "match": "keywords" }),
            Success,
        ),
        call(
            "get_action get_login_info",
            "get_action",
            json!({ "name": "get_login_info" }),
            Success,
        ),
        call(
            "fault: HTTP 500",
            "query_action",
            query(FAULTY_ACTION, json!({})),
            ToolError("server_error"),
        ),
        call(
            "typed get_stranger_info",
            "get_stranger_info",
            json!({ "user_id": SELF_ID }),
            Success,
        ),
        call(
            "OneBot failure (get_msg 999)",
            "query_action",
            query("get_msg", json!({ "message_id": MISSING_MESSAGE_ID })),
            Data("onebot_failure"),
        ),
        call("list_categories", "list_categories", json!({}), Success),
        call(
            "write via query_action",
            "query_action",
            query(
                "send_private_msg",
                json!({ "user_id": USER_ID, "message": "soak" }),
            ),
            ToolError("mode"),
        ),
    ]
}

/// Checks one `tools/call` reply against its expectation; the error says what was wrong.
fn check(reply: &Value, expect: Expect) -> Result<(), String> {
    if let Some(error) = reply.get("error") {
        return Err(format!("protocol error {error}"));
    }
    let result = &reply["result"];
    let is_error = result["isError"].as_bool().unwrap_or(false);
    let diagnostics = &result["structuredContent"]["diagnostics"];
    let kind = diagnostics["kind"].as_str();
    let outcome = diagnostics["outcome"].as_str();
    let ok = match expect {
        Expect::Success => !is_error && kind.is_none() && matches!(outcome, None | Some("success")),
        Expect::Data(want) => !is_error && kind == Some(want),
        Expect::ToolError(want) => is_error && kind == Some(want),
    };
    if !ok {
        let text = reply.to_string();
        return Err(format!("unexpected reply {}", &text[..text.len().min(400)]));
    }
    if !result["structuredContent"].is_object() {
        return Err("no structuredContent".into());
    }
    Ok(())
}

/// Runs `total` calls with `in_flight` outstanding at a time.
pub fn run(client: &mut Client, total: usize, in_flight: usize, report: &mut PhaseReport) {
    let mix = mix();
    let pid = client.peer.pid();
    report.curve.mark("start", pid);
    let began = Instant::now();
    // id -> index in the mix
    let mut pending: HashMap<u64, usize> = HashMap::new();
    let (mut sent, mut done) = (0usize, 0usize);
    let send = |client: &mut Client, pending: &mut HashMap<u64, usize>, sent: &mut usize| {
        let which = *sent % mix.len();
        let c = &mix[which];
        let id = client.peer.send(
            "tools/call",
            &json!({ "name": c.tool, "arguments": c.arguments }),
        );
        pending.insert(id, which);
        *sent += 1;
    };
    while sent < in_flight.min(total) {
        send(client, &mut pending, &mut sent);
    }
    client.peer.flush();
    while done < total {
        let (id, reply) = client.reply();
        let Some(which) = pending.remove(&id) else {
            report.problem(format!("a reply with id {id}, which is not in flight"));
            continue;
        };
        done += 1;
        let c = &mix[which];
        match check(&reply, c.expect) {
            Ok(()) => report.count(c.label),
            Err(problem) => report.problem(format!("{}: {problem}", c.label)),
        }
        if sent < total {
            send(client, &mut pending, &mut sent);
            client.peer.flush();
        }
        report.curve.progress(done, total, pid);
    }
    report.done = done;
    report.elapsed = began.elapsed();
    report.curve.mark("end", pid);
    if !pending.is_empty() {
        report.problem(format!("{} replies never arrived", pending.len()));
    }
}
