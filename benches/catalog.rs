//! Criterion benches of the catalog paths behind the docs tools: substring and keyword
//! search, get_action (lookup + contract slice + parse) and a full list_actions render.

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::Value;
use snowluma_mcp::catalog::{ACTIONS, Page, resolve, search};
use std::hint::black_box;

fn searches(c: &mut Criterion) {
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
    c.bench_function("get_action alias get_record_text", |b| {
        b.iter(|| {
            let action = resolve(black_box("get_record_text")).unwrap();
            serde_json::from_str::<Value>(action.meta.contract_json()).unwrap()
        })
    });
}

fn listing(c: &mut Criterion) {
    c.bench_function("list_actions full (178 compact entries, serialized)", |b| {
        b.iter(|| {
            let entries = ACTIONS.iter().map(|a| a.compact()).collect();
            serde_json::to_string(&Page::default().render(entries)).unwrap()
        })
    });
}

criterion_group!(benches, searches, contracts, listing);
criterion_main!(benches);
