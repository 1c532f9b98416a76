//! Reading a paged tool result: its text size, its `diagnostics.page`, the array it holds,
//! and the following pages through `read_more` (tests/result_budget*.rs).

#![allow(dead_code)]

use serde_json::{Value, json};

use crate::mcp_peer::{Peer, ToolCall};

/// The characters of a result's text content (every text block).
pub fn text_chars(call: &ToolCall) -> usize {
    call.response["result"]["content"]
        .as_array()
        .expect("content")
        .iter()
        .map(|block| {
            block["text"]
                .as_str()
                .expect("a text block")
                .chars()
                .count()
        })
        .sum()
}

pub fn page(call: &ToolCall) -> &Value {
    &call.body["diagnostics"]["page"]
}

/// The array a page holds, at the page's `path` (`result.data`, `result.data.messages`).
pub fn elements(call: &ToolCall) -> Vec<Value> {
    let path = page(call)["path"].as_str().expect("page.path");
    let mut at = &call.body;
    for key in path.split('.') {
        at = &at[key];
    }
    at.as_array()
        .cloned()
        .unwrap_or_else(|| panic!("{path} is not an array"))
}

/// Calls `tool`, then read_more until the last page, checking each page; returns the pages.
pub async fn read_all(peer: &mut Peer, tool: &str, args: Value, budget: usize) -> Vec<ToolCall> {
    let first = peer.call(tool, args).await;
    assert!(!first.is_error, "{}: {}", peer.kind, first.body);
    read_rest(peer, first, budget).await
}

/// `first` and the pages after it, read with read_more at `budget`: each within the budget,
/// each text starting with the line that says what the page holds.
pub async fn read_rest(peer: &mut Peer, first: ToolCall, budget: usize) -> Vec<ToolCall> {
    let mut pages = vec![first];
    loop {
        let last = pages.last().unwrap();
        let chars = text_chars(last);
        assert!(
            chars <= budget,
            "{}: a page of {chars} characters over {budget}",
            peer.kind
        );
        let summary = last.response["result"]["content"][0]["text"]
            .as_str()
            .unwrap();
        assert!(summary.starts_with("Page: elements "), "{summary}");
        let Some(continuation) = page(last)["continuation"].as_str().map(str::to_string) else {
            assert!(summary.contains("last page"), "{summary}");
            break;
        };
        assert!(summary.contains("read_more"), "{summary}");
        let next = peer
            .call(
                "read_more",
                json!({ "continuation": continuation, "budget": budget }),
            )
            .await;
        assert!(!next.is_error, "{}: {}", peer.kind, next.body);
        pages.push(next);
    }
    pages
}

/// The pages' elements joined, checking that each page starts where the last one ended and
/// counts what it holds.
pub fn joined(pages: &[ToolCall], path: &str, total: usize) -> Vec<Value> {
    let mut joined = Vec::new();
    for (n, call) in pages.iter().enumerate() {
        assert_eq!(page(call)["path"], path, "page {n}");
        assert_eq!(page(call)["from"], joined.len(), "page {n}");
        let got = elements(call);
        assert_eq!(page(call)["returned"], got.len(), "page {n}");
        assert_eq!(page(call)["total"], total, "page {n}");
        joined.extend(got);
    }
    joined
}
