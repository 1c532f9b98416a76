//! Stored task records: `TaskRecord::parse` on any file content, as the task store reads
//! `tasks/<id>.json` after a restart (a record may be truncated, edited or foreign).
//!
//! Input: the file's bytes. The expected id is the fixed seed id, and also (a second parse)
//! the id the record itself names, so the checks past the id are reached as well.
//!
//! Checked: a record that parses obeys the rules parse promises (version, id, non-empty
//! action, RFC 3339 stamps, state consistent with result and error); written back it parses
//! to the same record; its failed form (what recovery writes) parses too; a refusal says why.

#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use snowluma_mcp::tasks::{INTERNAL_ERROR_CODE, TaskRecord, TaskState, UNKNOWN_OUTCOME_MESSAGE};

const SEED_ID: &str = "0123456789abcdef0123456789abcdef";

fn check(bytes: &[u8], expected_id: &str) {
    let record = match TaskRecord::parse(bytes, expected_id) {
        Ok(record) => record,
        Err(reason) => {
            assert!(!reason.is_empty());
            return;
        }
    };
    let s = &record.summary;
    assert_eq!(record.version, 1);
    assert_eq!(s.id, expected_id);
    assert!(!s.action.is_empty());
    let (has_result, has_error) = (record.result.is_some(), record.error.is_some());
    match s.state {
        TaskState::Working => assert!(!has_result && !has_error),
        TaskState::Completed => assert!(has_result && !has_error),
        TaskState::Failed => assert!(!has_result && has_error),
        TaskState::Cancelled => assert!(!has_error),
    }

    // Written back, it reads back the same.
    let written = serde_json::to_vec(&record).expect("a record serializes");
    let again = TaskRecord::parse(&written, expected_id).expect("a written record parses");
    let (a, b) = (
        serde_json::to_value(&record).unwrap(),
        serde_json::to_value(&again).unwrap(),
    );
    assert!(common::same_json(&a, &b), "{a} != {b}");

    // Recovery marks a working task failed; that record must be readable too.
    let failed = record.into_failed(UNKNOWN_OUTCOME_MESSAGE, "2026-01-01T00:00:00.000Z".into());
    let failed = TaskRecord::parse(&serde_json::to_vec(&failed).unwrap(), expected_id)
        .expect("a failed record parses");
    assert_eq!(failed.summary.state, TaskState::Failed);
    assert_eq!(failed.error.unwrap()["code"], INTERNAL_ERROR_CODE);
}

fuzz_target!(|data: &[u8]| {
    check(data, SEED_ID);
    let named = serde_json::from_slice::<Value>(data)
        .ok()
        .and_then(|v| v.pointer("/summary/id")?.as_str().map(str::to_string));
    if let Some(id) = named.filter(|id| id != SEED_ID) {
        check(data, &id);
    }
});
