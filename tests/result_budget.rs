//! Results that fit the client, end to end over both transports and both protocol
//! generations: a 3,000-member `get_group_member_list` and a `get_group_msg_history` asking
//! for 500 messages (SnowLuma answers at most 200) through the fake, paged at budgets 8,000 and 2,000
//! and read back with `read_more`; the docs tools within the HTTP default; continuations that
//! are tampered with, another client's or expired; the `budget` argument; plain JSON answers
//! over HTTP; and SNOWLUMA_MCP_MAX_TOOLS at start-up.

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/http_server.rs"]
mod http_server;
#[path = "support/mcp_peer.rs"]
mod mcp_peer;
#[path = "support/pages.rs"]
mod pages;
#[path = "support/raw_client.rs"]
mod raw_client;

use fake_snowluma::{FakeSnowLuma, LARGE_GROUP_ID, LARGE_GROUP_MEMBERS};
use http_server::{HttpServer, TOKEN, in_session, open_session};
use mcp_peer::{EVERY_KIND, Peer, PeerKind, Transport};
use pages::{elements, joined, page, read_all, text_chars};
use serde_json::{Value, json};

/// The whole result over stdio, where the default budget is unlimited.
async fn unpaged(fake: &FakeSnowLuma, tool: &str, args: Value) -> Value {
    let mut peer = Peer::start(
        PeerKind::new(Transport::Stdio, false),
        &[
            ("SNOWLUMA_MCP_ENDPOINT", &fake.url),
            ("SNOWLUMA_MCP_MODE", "read"),
        ],
    )
    .await;
    let call = peer.call(tool, args).await;
    assert!(page(&call).is_null(), "stdio pages nothing by default");
    assert_eq!(
        call.response["result"]["content"].as_array().unwrap().len(),
        1
    );
    call.body["result"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_results_page_and_concatenate_in_every_generation_and_transport() {
    let fake = FakeSnowLuma::start(None).await;
    let members =
        json!({ "action": "get_group_member_list", "params": { "group_id": LARGE_GROUP_ID } });
    let history = json!({ "action": "get_group_msg_history", "params": { "group_id": LARGE_GROUP_ID, "count": 500 } });
    let full_members = unpaged(&fake, "query_action", members.clone()).await;
    let full_history = unpaged(&fake, "query_action", history.clone()).await;
    assert_eq!(
        full_members["data"].as_array().unwrap().len(),
        LARGE_GROUP_MEMBERS as usize
    );
    // 500 asked, 200 answered: SnowLuma caps one history request at 200 messages
    // (HISTORY_MAX_COUNT in packages/core), and so does the fake.
    assert_eq!(
        full_history["data"]["messages"].as_array().unwrap().len(),
        200
    );
    for kind in EVERY_KIND {
        let mut peer = Peer::start(
            kind,
            &[
                ("SNOWLUMA_MCP_ENDPOINT", &fake.url),
                ("SNOWLUMA_MCP_MODE", "read"),
                ("SNOWLUMA_MCP_RESULT_BUDGET", "8000"),
            ],
        )
        .await;
        for (args, full, path, budget) in [
            (&members, &full_members, "result.data", 8000),
            (&history, &full_history, "result.data.messages", 8000),
            (&history, &full_history, "result.data.messages", 2000),
        ] {
            let mut args = args.clone();
            args["budget"] = json!(budget);
            let pages = read_all(&mut peer, "query_action", args, budget).await;
            let joined = joined(&pages, path, full_len(full, path));
            for call in &pages {
                // Each page is the envelope with every key, the array cut.
                assert_eq!(call.body["result"]["status"], "ok");
                assert_eq!(call.body["result"]["retcode"], 0);
            }
            assert!(
                pages.len() > 2,
                "{kind}: {path} at {budget} is several pages"
            );
            let original = if path == "result.data" {
                &full["data"]
            } else {
                &full["data"]["messages"]
            };
            assert_eq!(
                &Value::Array(joined),
                original,
                "{kind}: the pages are the original array"
            );
        }
        // The member list at 2,000 characters: the first pages only (the whole list is ~700
        // pages; its concatenation is proven at 8,000 above).
        let mut args = members.clone();
        args["budget"] = json!(2000);
        let first = peer.call("query_action", args).await;
        assert!(text_chars(&first) <= 2000);
        let continuation = page(&first)["continuation"].as_str().unwrap().to_string();
        let second = peer
            .call(
                "read_more",
                json!({ "continuation": continuation, "budget": 2000 }),
            )
            .await;
        assert!(text_chars(&second) <= 2000);
        assert_eq!(page(&second)["from"], page(&first)["returned"]);
        assert_eq!(
            elements(&second)[0],
            full_members["data"][elements(&first).len()]
        );
    }
}

fn full_len(full: &Value, path: &str) -> usize {
    let array = if path == "result.data" {
        &full["data"]
    } else {
        &full["data"]["messages"]
    };
    array.as_array().unwrap().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docs_tools_fit_the_http_default_budget() {
    let full = unpaged_docs().await;
    for modern in [false, true] {
        let mut peer = Peer::start(PeerKind::new(Transport::Http, modern), &[]).await;
        for (tool, args) in [
            ("search_actions", json!({ "query": "group" })),
            ("get_action", json!({ "name": "send_msg" })),
            ("list_actions", json!({ "limit": 200 })),
        ] {
            let call = peer.call(tool, args).await;
            assert!(
                text_chars(&call) <= 8000,
                "{tool}: {} characters",
                text_chars(&call)
            );
        }
        let pages = read_all(&mut peer, "list_actions", json!({}), 8000).await;
        assert!(pages.len() > 1, "list_actions is over 8,000 characters");
        let joined: Vec<Value> = pages.iter().flat_map(elements).collect();
        assert_eq!(Value::Array(joined), full, "modern={modern}");
    }
}

async fn unpaged_docs() -> Value {
    let mut peer = Peer::start(PeerKind::new(Transport::Stdio, true), &[]).await;
    let call = peer.call("list_actions", json!({})).await;
    assert!(
        text_chars(&call) > 8000,
        "the whole list is larger than the HTTP budget"
    );
    call.body["result"]["actions"].clone()
}

/// A continuation from one legacy session, used in another, altered, made up, or taken from
/// the 2026-07-28 ("default") principal: all refused with one and the same answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_and_tampered_continuations_are_refused_like_unknown_ones() {
    let server = HttpServer::start(&[("SNOWLUMA_MCP_HTTP_TOKEN", TOKEN)], &[]).await;
    let a = open_session(&server.url, Some(TOKEN)).await;
    let b = open_session(&server.url, Some(TOKEN)).await;
    let call = |id: i64, tool: &str, args: Value| json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": tool, "arguments": args } });
    let first = in_session(&server.url, &a, &call(2, "list_actions", json!({})))
        .await
        .json();
    let continuation = first["result"]["structuredContent"]["diagnostics"]["page"]["continuation"]
        .as_str()
        .expect("list_actions is paged over HTTP")
        .to_string();
    let own = in_session(
        &server.url,
        &a,
        &call(3, "read_more", json!({ "continuation": continuation })),
    )
    .await
    .json();
    assert_eq!(own["result"]["isError"], false, "{own}");

    let refusal = |reply: Value| {
        assert_eq!(reply["result"]["isError"], true, "{reply}");
        let diagnostics = reply["result"]["structuredContent"]["diagnostics"].clone();
        assert_eq!(diagnostics["kind"], "invalid_arguments");
        diagnostics
    };
    let foreign = refusal(
        in_session(
            &server.url,
            &b,
            &call(4, "read_more", json!({ "continuation": continuation })),
        )
        .await
        .json(),
    );
    let mut altered = continuation.clone().into_bytes();
    let at = altered.len() / 2;
    altered[at] = if altered[at] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).unwrap();
    let tampered = refusal(
        in_session(
            &server.url,
            &a,
            &call(5, "read_more", json!({ "continuation": altered })),
        )
        .await
        .json(),
    );
    let made_up = refusal(
        in_session(
            &server.url,
            &a,
            &call(6, "read_more", json!({ "continuation": "slp1.made-up" })),
        )
        .await
        .json(),
    );
    assert_eq!(foreign, made_up);
    assert_eq!(tampered, made_up);

    let mut modern = Peer::start(PeerKind::new(Transport::Http, true), &[]).await;
    let listing = modern.call("list_actions", json!({})).await;
    let default_continuation = page(&listing)["continuation"].as_str().unwrap().to_string();
    let next = modern
        .call("read_more", json!({ "continuation": default_continuation }))
        .await;
    assert!(
        !next.is_error,
        "the default principal reads its own continuation"
    );
    drop(modern);
    // The modern peer is another process: its continuation is unknown here too.
    let other = refusal(
        in_session(
            &server.url,
            &a,
            &call(
                7,
                "read_more",
                json!({ "continuation": default_continuation }),
            ),
        )
        .await
        .json(),
    );
    assert_eq!(other, made_up);
}

/// A stateless 2026-07-28 request's continuation belongs to "default", not to a legacy session
/// of the same process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_default_principal_continuation_is_foreign_to_a_session() {
    let server = HttpServer::start(&[("SNOWLUMA_MCP_HTTP_TOKEN", TOKEN)], &[]).await;
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "list_actions", "arguments": {}, "_meta": raw_client::modern_meta(json!({})) } });
    let reply = http_server::post(
        &server.url,
        Some(TOKEN),
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "list_actions"),
        ],
        &body,
    )
    .await
    .json();
    let continuation = reply["result"]["structuredContent"]["diagnostics"]["page"]["continuation"]
        .as_str()
        .unwrap_or_else(|| panic!("{reply}"))
        .to_string();
    let session = open_session(&server.url, Some(TOKEN)).await;
    let refused = in_session(
        &server.url,
        &session,
        &json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": "read_more", "arguments": { "continuation": continuation } } }),
    )
    .await
    .json();
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert_eq!(
        refused["result"]["structuredContent"]["diagnostics"]["kind"],
        "invalid_arguments"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_continuation_says_so() {
    for kind in [
        PeerKind::new(Transport::Stdio, false),
        PeerKind::new(Transport::Http, true),
    ] {
        // The test knob issues continuations that are already expired.
        let mut peer = Peer::start(
            kind,
            &[
                ("SNOWLUMA_MCP_TEST_CONTINUATION_TTL_MS", "0"),
                ("SNOWLUMA_MCP_RESULT_BUDGET", "8000"),
            ],
        )
        .await;
        let first = peer.call("list_actions", json!({})).await;
        let continuation = page(&first)["continuation"].as_str().unwrap().to_string();
        let expired = peer
            .call("read_more", json!({ "continuation": continuation }))
            .await;
        assert!(expired.is_error);
        assert_eq!(expired.kind(), "continuation_expired", "{kind}");
        assert_eq!(
            expired.body["diagnostics"]["next_step"],
            "call the tool again"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_budget_argument_is_checked_and_capped_by_the_setting() {
    let mut peer = Peer::start(PeerKind::new(Transport::Http, false), &[]).await;
    let small = peer.call("list_actions", json!({ "budget": 10 })).await;
    assert!(small.is_error);
    assert_eq!(small.kind(), "invalid_arguments");
    let message = small.body["diagnostics"]["message"].as_str().unwrap();
    assert!(
        message.contains("`budget`") && message.contains("1000"),
        "{message}"
    );
    let capped = peer
        .call("list_actions", json!({ "budget": 1_000_000 }))
        .await;
    assert!(text_chars(&capped) <= 8000, "capped by the HTTP default");
    let smaller = peer.call("list_actions", json!({ "budget": 3000 })).await;
    assert!(text_chars(&smaller) <= 3000);
    assert!(page(&smaller)["returned"].as_u64() < page(&capped)["returned"].as_u64());
}

/// A request that needs no stream is answered with one JSON body in both generations.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_requests_are_answered_with_json_over_http() {
    let server = HttpServer::start(&[("SNOWLUMA_MCP_HTTP_TOKEN", TOKEN)], &[]).await;
    let session = open_session(&server.url, Some(TOKEN)).await;
    let legacy = in_session(
        &server.url,
        &session,
        &json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }),
    )
    .await;
    assert_eq!(
        legacy.header("content-type"),
        Some("application/json"),
        "{}",
        legacy.body
    );
    assert!(serde_json::from_str::<Value>(&legacy.body).unwrap()["result"]["tools"].is_array());
    let body = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {
        "_meta": raw_client::modern_meta(json!({})) } });
    let modern = http_server::post(
        &server.url,
        Some(TOKEN),
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/list"),
        ],
        &body,
    )
    .await;
    assert_eq!(
        modern.header("content-type"),
        Some("application/json"),
        "{}",
        modern.body
    );
    assert!(serde_json::from_str::<Value>(&modern.body).unwrap()["result"]["tools"].is_array());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_tools_refuses_a_toolset_choice_that_exceeds_it() {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_snowluma-mcp"));
    for (name, _) in std::env::vars() {
        if name.starts_with("SNOWLUMA_MCP_") {
            command.env_remove(name);
        }
    }
    command
        .envs([
            ("SNOWLUMA_MCP_ENDPOINT", "http://127.0.0.1:9/"),
            ("SNOWLUMA_MCP_MODE", "write"),
            ("SNOWLUMA_MCP_TOOLSETS", "all"),
            ("SNOWLUMA_MCP_MAX_TOOLS", "64"),
        ])
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(std::time::Duration::from_secs(30), command.output())
        .await
        .expect("the server should stop at once")
        .expect("run snowluma-mcp");
    assert!(!output.status.success());
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(
        message.contains("SNOWLUMA_MCP_MAX_TOOLS is 64"),
        "{message}"
    );
    assert!(
        message.contains("message ") && message.contains("group_admin "),
        "per toolset: {message}"
    );
    // A choice within the cap starts.
    let server = HttpServer::start(
        &[
            ("SNOWLUMA_MCP_ENDPOINT", "http://127.0.0.1:9/"),
            ("SNOWLUMA_MCP_MODE", "read"),
            ("SNOWLUMA_MCP_TOOLSETS", "group_info"),
            ("SNOWLUMA_MCP_MAX_TOOLS", "64"),
        ],
        &[],
    )
    .await;
    assert!(server.port > 0);
}
