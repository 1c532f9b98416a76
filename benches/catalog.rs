//! Criterion benches of the catalog paths behind the docs tools: substring and keyword
//! search, get_action (lookup + contract slice + parse), and whole docs tool calls as the
//! server serves them (handler, rendering and the JSON line stdio writes).

#[path = "../tests/support/search_sets.rs"]
mod search_sets;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Map, Value, json};
use snowluma_mcp::catalog::{resolve, search};
use snowluma_mcp::server::catalog_call_line;
use std::hint::black_box;

fn searches(c: &mut Criterion) {
    // The first Chinese query builds the query segmenter (jieba over the catalog's
    // vocabulary) once; every later one reuses it. Timed here because criterion's loops
    // only ever see the warm path.
    let first = std::time::Instant::now();
    black_box(search::keywords(black_box("群 禁言")));
    println!(
        "first Chinese keyword search (builds the segmenter): {:?}",
        first.elapsed()
    );
    c.bench_function("substring search `group`", |b| {
        b.iter(|| search::substring(black_box("group")))
    });
    c.bench_function("keyword search `群 禁言`", |b| {
        b.iter(|| search::keywords(black_box("群 禁言")))
    });
    c.bench_function("keyword search `mute someone in a group`", |b| {
        b.iter(|| search::keywords(black_box("mute someone in a group")))
    });
    c.bench_function("keyword search run-together `把人踢出群`", |b| {
        b.iter(|| search::keywords(black_box("把人踢出群")))
    });
    c.bench_function("keyword search sentence `who am I logged in as`", |b| {
        b.iter(|| search::keywords(black_box("who am I logged in as")))
    });
    c.bench_function("keyword search fragment `group_msg`", |b| {
        b.iter(|| search::keywords(black_box("group_msg")))
    });
    c.bench_function("keyword search misspelled `sned private msg`", |b| {
        b.iter(|| search::keywords(black_box("sned private msg")))
    });
}

/// Not a timing: the keyword search's quality on the two query sets, printed with the
/// benches so each run records it next to the latencies.
fn quality(_: &mut Criterion) {
    for line in search_sets::report() {
        println!("{line}");
    }
}

fn contracts(c: &mut Criterion) {
    c.bench_function(
        "get_action send_group_msg (resolve + parse contract)",
        |b| {
            b.iter(|| {
                let action = resolve(black_box("send_group_msg")).unwrap();
                serde_json::from_str::<Value>(action.meta.contract_json()).unwrap()
            })
        },
    );
}

fn args(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// Whole tool calls, from arguments to the line written on stdout.
fn served(c: &mut Criterion) {
    let calls = [
        ("list_actions {} (served line)", "list_actions", json!({})),
        (
            "list_actions category group_admin (served line)",
            "list_actions",
            json!({ "category": "group_admin" }),
        ),
        (
            "search_actions `group` (served line)",
            "search_actions",
            json!({ "query": "group" }),
        ),
        (
            "search_actions keywords (served line)",
            "search_actions",
            json!({ "query": "mute someone in a group", "match": "keywords" }),
        ),
        (
            "get_action send_group_msg (served line)",
            "get_action",
            json!({ "name": "send_group_msg" }),
        ),
        (
            "list_categories (served line)",
            "list_categories",
            json!({}),
        ),
    ];
    for (label, tool, arguments) in calls {
        let arguments = args(arguments);
        assert!(catalog_call_line(tool, arguments.clone()).is_some());
        c.bench_function(label, |b| {
            b.iter(|| catalog_call_line(black_box(tool), arguments.clone()).unwrap())
        });
    }
}

// The quality pass runs last: its few hundred searches would leave the heap in another
// state for the timed rows than a plain run of main's benches.
criterion_group!(benches, searches, contracts, served, quality);
criterion_main!(benches);
