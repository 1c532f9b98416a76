use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::fmt::format::{Format, Full};
use tracing_subscriber::layer::SubscriberExt;

use super::*;
use crate::outcome::ErrorKind;
use crate::trace::{TraceContext, log_call};

/// Everything written through it, shared with the test.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

/// The lines `emit` logs, formatted by `format` as the server's log layer is set up.
fn lines<E>(format: E, emit: impl Fn()) -> Vec<String>
where
    E: for<'w> FormatEvent<
            tracing_subscriber::Registry,
            tracing_subscriber::fmt::format::DefaultFields,
        > + Send
        + Sync
        + 'static,
{
    let out = Captured::default();
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(out.clone())
        .with_ansi(false)
        .event_format(format);
    let subscriber = tracing_subscriber::registry().with(layer);
    tracing::subscriber::with_default(subscriber, emit);
    let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
    text.lines().map(str::to_owned).collect()
}

/// A line split into its timestamp and the rest, after checking the timestamp's shape.
fn split_stamp(line: &str) -> (&str, &str) {
    let (stamp, rest) = line.split_at(27);
    let shape: String = stamp
        .chars()
        .map(|c| if c.is_ascii_digit() { '0' } else { c })
        .collect();
    assert_eq!(shape, "0000-00-00T00:00:00.000000Z", "{line}");
    (stamp, rest)
}

/// Both formatters on the same events: the same lines apart from the stamps, which read as
/// times in order (this format's line, then the default's).
fn assert_same_lines(emit: impl Fn() + Clone) {
    let before = timestamp(SystemTime::now()).unwrap();
    let fast = lines(LineFormat::default(), emit.clone());
    let full = lines(Format::<Full>::default(), emit);
    assert_eq!(fast.len(), full.len(), "{fast:?} / {full:?}");
    assert!(!fast.is_empty());
    for (fast, full) in fast.iter().zip(&full) {
        let (fast_stamp, fast_rest) = split_stamp(fast);
        let (full_stamp, full_rest) = split_stamp(full);
        assert_eq!(fast_rest, full_rest);
        // Same layout, so the text orders as the times do.
        assert!(
            &as_text(&before)[..27] <= fast_stamp && fast_stamp <= full_stamp,
            "{fast_stamp} / {full_stamp}"
        );
    }
}

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn trace() -> TraceContext {
    TraceContext {
        traceparent: TRACEPARENT.into(),
        tracestate: None,
        warning: None,
    }
}

/// Stands in for `Format<Full>` to show which lines [`LineFormat`] leaves to it.
struct Fallback;

impl<S, N> FormatEvent<S, N> for Fallback
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _: &FmtContext<'_, S, N>,
        mut w: Writer<'_>,
        _: &Event<'_>,
    ) -> fmt::Result {
        w.write_str("fallback\n")
    }
}

/// The lines of [`call_lines`] and [`other_lines`] through a `Fallback`-backed format: the
/// call lines are written directly, the rest are left to the fallback.
#[test]
fn only_plain_call_lines_are_written_directly() {
    let direct = lines(LineFormat { full: Fallback }, call_lines);
    assert_eq!(direct.len(), 4);
    assert!(direct.iter().all(|line| line != "fallback"), "{direct:?}");
    assert_eq!(
        split_stamp(&direct[0]).1,
        format!(
            "  INFO snowluma_mcp::call: tool=\"get_runtime_info\" traceparent={TRACEPARENT} \
             outcome=\"success\" failure=\"-\" duration_ms=0.115"
        )
    );
    let others = lines(LineFormat { full: Fallback }, other_lines);
    assert_eq!(others, vec!["fallback"; 5]);
}

#[test]
fn the_call_line_is_written_as_the_default_format_writes_it() {
    assert_same_lines(call_lines);
}

#[test]
fn other_lines_are_left_to_the_default_format() {
    assert_same_lines(other_lines);
}

fn call_lines() {
    let trace = trace();
    log_call(
        "get_runtime_info",
        &trace,
        "success",
        None,
        Duration::from_micros(115),
    );
    log_call(
        "query_action",
        &trace,
        "error",
        Some(ErrorKind::Timeout),
        Duration::from_millis(30_001),
    );
    // Strings that need escaping take the `Debug` path.
    log_call(
        "a \"quoted\" \\ name",
        &trace,
        "tab\there",
        None,
        Duration::ZERO,
    );
    log_call("群 禁言", &trace, "\u{1b}[31m", None, Duration::ZERO);
}

fn other_lines() {
    // Other targets, levels and a message.
    tracing::info!(removed = 3, "removed .part files left by an earlier run");
    tracing::warn!(target: "snowluma_mcp::other", limit = 16, "discarded an oversized message");
    // The call target with what the default visitor writes specially: a message, an
    // error with its source.
    tracing::info!(target: CALL_TARGET, tool = "x", "with a message");
    let error = io::Error::other(std::fmt::Error);
    tracing::info!(target: CALL_TARGET, error = &error as &(dyn std::error::Error + 'static));
    // Inside a span, the line starts with the span's name and fields.
    let span = tracing::info_span!("session", id = 7);
    let _entered = span.enter();
    log_call("list_actions", &trace(), "success", None, Duration::ZERO);
}

#[test]
fn timestamps_read_as_the_default_timer_writes_them() {
    let at = |secs: u64, micros: u64| {
        let when = UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_micros(micros);
        timestamp(when).map(|stamp| as_text(&stamp).to_owned())
    };
    let cases = [
        (0, 0, "1970-01-01T00:00:00.000000Z "),
        (951_782_400, 123_456, "2000-02-29T00:00:00.123456Z "),
        (1_709_251_199, 999_999, "2024-02-29T23:59:59.999999Z "),
        (1_796_177_029, 408_481, "2026-12-02T02:03:49.408481Z "),
        (4_107_542_399, 1, "2100-02-28T23:59:59.000001Z "),
        (4_107_542_400, 0, "2100-03-01T00:00:00.000000Z "),
        (253_402_300_799, 0, "9999-12-31T23:59:59.000000Z "),
    ];
    for (secs, micros, text) in cases {
        assert_eq!(at(secs, micros).as_deref(), Some(text), "{secs}");
    }
    // Sub-microsecond parts are cut, as the default timer cuts them.
    let when = UNIX_EPOCH + Duration::from_nanos(1_999);
    assert_eq!(
        as_text(&timestamp(when).unwrap()),
        "1970-01-01T00:00:00.000001Z "
    );
    // Outside 1970..=9999 the default format writes the line.
    assert_eq!(at(253_402_300_800, 0), None);
    assert_eq!(timestamp(UNIX_EPOCH - Duration::from_secs(1)), None);
}
