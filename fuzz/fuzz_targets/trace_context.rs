//! W3C trace context from a call's `_meta`: `TraceContext::start` on any traceparent and
//! tracestate, strings or not.
//!
//! Input: either a JSON array `[traceparent, tracestate]` (any JSON values; a missing element
//! is an absent key), or text: the traceparent up to the first newline, the tracestate after
//! it (no newline: no tracestate).
//!
//! Checked against an independent reading of the W3C rules: the new traceparent is always a
//! valid version-00 header; a valid caller traceparent keeps its trace id and flags; a kept
//! tracestate is the caller's (trimmed), within the documented limits, never follows an
//! invalid parent, and can be sent as an HTTP header as it is; a tracestate the W3C grammar
//! allows is kept when its parent is valid; the fixed warning is set exactly when something
//! was ignored.

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use snowluma_mcp::trace::{INVALID_TRACE_CONTEXT, TraceContext};

fn lower_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// `(trace id, flags)` of a traceparent the W3C rules accept (version 00 exactly; a future
/// version may carry more after a `-`).
fn w3c_parent(value: &str) -> Option<(&str, &str)> {
    let head = value.get(..55)?;
    let tail = &value[55..];
    let bytes = head.as_bytes();
    if bytes[2] != b'-' || bytes[35] != b'-' || bytes[52] != b'-' {
        return None;
    }
    let (version, trace_id, parent_id, flags) =
        (&head[..2], &head[3..35], &head[36..52], &head[53..55]);
    let ok = lower_hex(version, 2)
        && version != "ff"
        && (if version == "00" {
            tail.is_empty()
        } else {
            tail.is_empty() || tail.starts_with('-')
        })
        && lower_hex(trace_id, 32)
        && trace_id != "0".repeat(32)
        && lower_hex(parent_id, 16)
        && parent_id != "0".repeat(16)
        && lower_hex(flags, 2);
    ok.then_some((trace_id, flags))
}

/// Optional white space as HTTP and the W3C list syntax define it.
fn ows(b: char) -> bool {
    b == ' ' || b == '\t'
}

/// A tracestate the W3C grammar allows, within the documented 512 characters.
fn w3c_state(value: &str) -> bool {
    if value.len() > 512 || !value.is_ascii() {
        return false;
    }
    let members: Vec<&str> = value
        .split(',')
        .map(|m| m.trim_matches(ows))
        .filter(|m| !m.is_empty())
        .collect();
    if members.is_empty() || members.len() > 32 {
        return false;
    }
    let mut keys = std::collections::HashSet::new();
    members.iter().all(|member| {
        let Some((key, val)) = member.split_once('=') else {
            return false;
        };
        let key_char = |b: u8| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'*' | b'/');
        let key_ok = match key.split_once('@') {
            None => {
                key.len() <= 256
                    && key.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
                    && key.bytes().all(key_char)
            }
            Some((tenant, system)) => {
                (1..=241).contains(&tenant.len())
                    && tenant
                        .bytes()
                        .next()
                        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
                    && tenant.bytes().all(key_char)
                    && (1..=14).contains(&system.len())
                    && system
                        .bytes()
                        .next()
                        .is_some_and(|b| b.is_ascii_lowercase())
                    && system.bytes().all(key_char)
            }
        };
        let val_ok = (1..=256).contains(&val.len())
            && val
                .bytes()
                .all(|b| (0x20..=0x7e).contains(&b) && b != b',' && b != b'=')
            && !val.ends_with(' ');
        key_ok && val_ok && keys.insert(key)
    })
}

/// What the caller sent for one key: absent, a string, or some other JSON value.
enum Sent {
    Absent,
    Text(String),
    Other(Value),
}

impl Sent {
    fn value(&self) -> Option<Value> {
        match self {
            Sent::Absent => None,
            Sent::Text(s) => Some(Value::String(s.clone())),
            Sent::Other(v) => Some(v.clone()),
        }
    }
}

fn inputs(data: &[u8]) -> Option<(Sent, Sent)> {
    if data.first() == Some(&b'[') {
        let Ok(Value::Array(items)) = serde_json::from_slice::<Value>(data) else {
            return None;
        };
        let sent = |i: usize| match items.get(i) {
            None => Sent::Absent,
            Some(Value::String(s)) => Sent::Text(s.clone()),
            Some(other) => Sent::Other(other.clone()),
        };
        return Some((sent(0), sent(1)));
    }
    let text = std::str::from_utf8(data).ok()?;
    Some(match text.split_once('\n') {
        Some((parent, state)) => (Sent::Text(parent.into()), Sent::Text(state.into())),
        None => (Sent::Text(text.into()), Sent::Absent),
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((parent, state)) = inputs(data) else {
        return;
    };
    let (parent_value, state_value) = (parent.value(), state.value());
    let context = TraceContext::start(parent_value.as_ref(), state_value.as_ref())
        .expect("the OS random source works");

    // Always a valid version-00 traceparent of its own.
    let (trace_id, flags) = w3c_parent(&context.traceparent).expect("a valid new traceparent");
    assert!(context.traceparent.starts_with("00-"));

    let valid_parent = match &parent {
        Sent::Text(text) => w3c_parent(text.trim()),
        _ => None,
    };
    match valid_parent {
        Some((caller_trace, caller_flags)) => {
            assert_eq!(trace_id, caller_trace, "the caller's trace id was not kept");
            assert_eq!(flags, caller_flags, "the caller's flags were not kept");
        }
        None => assert_eq!(flags, "01"),
    }

    if let Some(kept) = &context.tracestate {
        assert!(
            valid_parent.is_some(),
            "tracestate kept after an invalid parent"
        );
        let Sent::Text(sent) = &state else {
            panic!("a tracestate that was not a string was kept");
        };
        assert_eq!(kept, sent.trim());
        assert!(kept.len() <= 512);
        let members = kept
            .split(',')
            .filter(|m| !m.trim_matches(ows).is_empty())
            .count();
        assert!((1..=32).contains(&members));
        // It is forwarded to SnowLuma as an HTTP header, exactly as kept.
        assert!(
            http::HeaderValue::from_str(kept).is_ok(),
            "a kept tracestate is not a valid header value: {kept:?}"
        );
        assert!(
            kept.bytes()
                .all(|b| b == b'\t' || (0x20..=0x7e).contains(&b)),
            "a kept tracestate holds control characters: {kept:?}"
        );
    }
    if let (Some(_), Sent::Text(sent)) = (valid_parent, &state) {
        if w3c_state(sent.trim()) {
            assert!(
                context.tracestate.is_some(),
                "a valid tracestate was dropped: {sent:?}"
            );
        }
    }

    let parent_ignored = !matches!(parent, Sent::Absent) && valid_parent.is_none();
    let state_ignored = !matches!(state, Sent::Absent) && context.tracestate.is_none();
    let expected = (parent_ignored || state_ignored).then_some(INVALID_TRACE_CONTEXT);
    assert_eq!(context.warning, expected);
});
