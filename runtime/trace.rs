//! W3C trace context for every tool call, and the one stderr line each call leaves.
//!
//! A valid caller `traceparent` keeps its trace id and gets a new span id; anything else
//! starts a new trace. `tracestate` is kept only when it is valid and its parent is. Invalid
//! trace metadata never rejects a call: it yields one fixed diagnostic. `baggage` is ignored.

use std::time::Duration;

use serde_json::Value;

use crate::ids::{RandomUnavailable, random_hex};

/// The fixed diagnostic for trace metadata that had to be ignored.
pub const INVALID_TRACE_CONTEXT: &str =
    "invalid trace context in _meta was ignored; a new trace was started";

const TRACESTATE_MAX_CHARS: usize = 512;
const TRACESTATE_MAX_MEMBERS: usize = 32;

#[derive(Debug, Clone)]
pub struct TraceContext {
    /// `00-<trace id>-<this call's span id>-<flags>`
    pub traceparent: String,
    pub tracestate: Option<String>,
    /// Set when the caller sent trace metadata that was not valid.
    pub warning: Option<&'static str>,
}

impl TraceContext {
    /// The context of one call from the request's `_meta.traceparent` and `_meta.tracestate`
    /// (absent is `None`; a value that is not a string is invalid, not absent). Fails only
    /// when the OS random source does: the call then fails rather than carry a guessable id.
    pub fn start(
        parent: Option<&Value>,
        state: Option<&Value>,
    ) -> Result<TraceContext, RandomUnavailable> {
        let mut warning = None;
        let mut text = |value: Option<&Value>| match value {
            None => None,
            Some(Value::String(s)) => Some(s.trim().to_string()),
            Some(_) => {
                warning = Some(INVALID_TRACE_CONTEXT);
                None
            }
        };
        let parent = text(parent);
        let state = text(state);
        let parsed = parent.as_deref().and_then(parse_traceparent);
        if parent.is_some() && parsed.is_none() {
            warning = Some(INVALID_TRACE_CONTEXT);
        }
        let (trace_id, flags) = match parsed {
            Some((trace_id, flags)) => (trace_id.to_string(), flags.to_string()),
            None => (random_hex::<16>()?, "01".to_string()),
        };
        let tracestate = match (parsed, state) {
            (Some(_), Some(state)) if valid_tracestate(&state) => Some(state),
            (_, Some(_)) => {
                warning = Some(INVALID_TRACE_CONTEXT);
                None
            }
            _ => None,
        };
        // Pushed rather than `format!`ed: this runs on every call, and the formatter cost
        // about 1.5k instructions of it.
        let span_id = random_hex::<8>()?;
        let parts = ["00-", &trace_id, "-", &span_id, "-", &flags];
        let mut traceparent = String::with_capacity(parts.iter().map(|p| p.len()).sum());
        for part in parts {
            traceparent.push_str(part);
        }
        Ok(TraceContext {
            traceparent,
            tracestate,
            warning,
        })
    }
}

/// `(trace id, flags)` of a valid version-00 (or compatible future-version) traceparent.
fn parse_traceparent(value: &str) -> Option<(&str, &str)> {
    let mut parts = value.split('-');
    let (version, trace_id, parent_id, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let lower_hex = |s: &str, len: usize| {
        s.len() == len
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let extra = parts.next();
    let version_ok =
        lower_hex(version, 2) && version != "ff" && (version != "00" || extra.is_none());
    let ok = version_ok
        && lower_hex(trace_id, 32)
        && trace_id.bytes().any(|b| b != b'0')
        && lower_hex(parent_id, 16)
        && parent_id.bytes().any(|b| b != b'0')
        && lower_hex(flags, 2);
    ok.then_some((trace_id, flags))
}

/// W3C tracestate: at most 32 `key=value` members and 512 characters.
///
/// The value is forwarded to SnowLuma as an HTTP header exactly as kept, so it may hold only
/// visible ASCII, spaces and tabs; the white space around members is the list syntax's
/// optional white space (space and tab), not any Unicode white space: a newline between two
/// members would make the header unsendable.
fn valid_tracestate(value: &str) -> bool {
    if value.len() > TRACESTATE_MAX_CHARS
        || !value
            .bytes()
            .all(|b| b == b'\t' || (0x20..=0x7e).contains(&b))
    {
        return false;
    }
    let members: Vec<&str> = value
        .split(',')
        .map(|m| m.trim_matches([' ', '\t']))
        .filter(|m| !m.is_empty())
        .collect();
    if members.is_empty() || members.len() > TRACESTATE_MAX_MEMBERS {
        return false;
    }
    // W3C: a key appears at most once.
    let mut keys = std::collections::HashSet::new();
    if !members
        .iter()
        .all(|m| keys.insert(m.split_once('=').map_or(*m, |(k, _)| k)))
    {
        return false;
    }
    members.iter().all(|member| {
        let Some((key, val)) = member.split_once('=') else {
            return false;
        };
        let key_ok = !key.is_empty()
            && key.len() <= 256
            && key
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-*/@".contains(&b))
            && key
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        let val_ok = !val.is_empty()
            && val.len() <= 256
            && val
                .bytes()
                .all(|b| (0x20..=0x7e).contains(&b) && b != b',' && b != b'=')
            && !val.ends_with(' ');
        key_ok && val_ok
    })
}

/// The target of the per-call log line (the log format writes that line on a fast path).
pub const CALL_TARGET: &str = "snowluma_mcp::call";

/// The one stderr line a call leaves: tool, traceparent, outcome, failure category and
/// duration; never params, message text, tokens, paths or tracestate.
pub fn log_call(
    tool: &str,
    principal: &str,
    trace: &TraceContext,
    outcome: &str,
    failure: Option<crate::outcome::ErrorKind>,
    elapsed: Duration,
) {
    tracing::info!(
        target: CALL_TARGET,
        tool,
        principal,
        traceparent = %trace.traceparent,
        outcome,
        failure = failure.map_or("-", |k| k.as_str()),
        duration_ms = %Millis::of(elapsed),
    );
}

/// A duration as milliseconds with three decimals, from whole microseconds (rounded): the
/// text of `{:.3}` on the float, without the float formatter's slow exact-precision path,
/// which ran on every call.
struct Millis(u128);

impl Millis {
    fn of(elapsed: Duration) -> Millis {
        Millis(elapsed.as_nanos().saturating_add(500) / 1000)
    }
}

impl std::fmt::Display for Millis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{:03}", self.0 / 1000, self.0 % 1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_durations_read_as_milliseconds_with_three_decimals() {
        for nanos in [
            0,
            499,
            1_000,
            398_412,
            22_936_000,
            1_234_567_891,
            86_400_000_000_123,
        ] {
            let elapsed = Duration::from_nanos(nanos);
            let float = format!("{:.3}", elapsed.as_secs_f64() * 1000.0);
            assert_eq!(Millis::of(elapsed).to_string(), float, "{nanos} ns");
        }
    }

    #[test]
    fn traceparent_rules() {
        assert!(
            parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").is_some()
        );
        assert!(
            parse_traceparent("00-00000000000000000000000000000000-00f067aa0ba902b7-01").is_none()
        );
        assert!(
            parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01").is_none()
        );
        assert!(
            parse_traceparent("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01").is_none()
        );
        assert!(
            parse_traceparent("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").is_none()
        );
        assert!(
            parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x")
                .is_none()
        );
        assert!(
            parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x")
                .is_some()
        );
    }

    #[test]
    fn tracestate_limits() {
        assert!(valid_tracestate("vendor1=value1,rojo=00f067aa0ba902b7"));
        let members: Vec<String> = (0..33).map(|i| format!("k{i}=v")).collect();
        assert!(!valid_tracestate(&members.join(",")));
        assert!(valid_tracestate(&members[..32].join(",")));
        assert!(!valid_tracestate(&format!("k={}", "v".repeat(600))));
        assert!(!valid_tracestate("Upper=1"));
        assert!(!valid_tracestate("novalue"));
        assert!(!valid_tracestate("a=1,b=2,a=3"));
        // Spaces and tabs around members are the list's optional white space.
        assert!(valid_tracestate("a=1 ,\tb=2"));
    }

    /// Found by the `trace_context` fuzz target: a control character between members was
    /// trimmed away member by member, so the tracestate was kept and then forwarded as an
    /// HTTP header that cannot be sent, failing an otherwise valid call.
    #[test]
    fn control_characters_make_a_tracestate_invalid() {
        let parent = serde_json::json!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        for state in [
            "a=1\n,b=2",
            "a=1,\r\nb=2",
            "a=1\u{b},b=2",
            "a=1,\u{c}b=2",
            "a=1\u{7f}",
        ] {
            assert!(!valid_tracestate(state), "{state:?}");
            let context =
                TraceContext::start(Some(&parent), Some(&serde_json::json!(state))).unwrap();
            assert_eq!(context.tracestate, None, "{state:?}");
            assert_eq!(context.warning, Some(INVALID_TRACE_CONTEXT));
        }
    }

    #[test]
    fn non_string_metadata_is_invalid_not_absent() {
        let parent = serde_json::json!(42);
        let context = TraceContext::start(Some(&parent), None).unwrap();
        assert_eq!(context.warning, Some(INVALID_TRACE_CONTEXT));
        let state = serde_json::json!(["a=1"]);
        let valid = serde_json::json!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        let context = TraceContext::start(Some(&valid), Some(&state)).unwrap();
        assert_eq!(context.warning, Some(INVALID_TRACE_CONTEXT));
        assert!(
            context
                .traceparent
                .contains("4bf92f3577b34da6a3ce929d0e0e4736")
        );
        assert!(TraceContext::start(None, None).unwrap().warning.is_none());
    }
}
