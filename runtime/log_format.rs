//! Kept over plain `Format<Full>`: with it (and log_writer.rs replaced) docs replies measured 14-26 % slower on one CPU (scripts/bench.sh, 2026-12-04).
//! The log's line format: tracing-subscriber's default ("full") format, with the per-call
//! line written without `core::fmt`.
//!
//! At the default level every tool call logs one line (target [`CALL_TARGET`]). Formatted by
//! `Format<Full>`, that line cost about 7k instructions of a 56k-instruction docs call under
//! callgrind, most of it in `core::fmt`: the timestamp's zero-padded fields, then the
//! `name=value` of each field through a `Formatter`. [`LineFormat`] writes the same bytes for
//! that line itself (a test compares the two formatters), and hands every other event to
//! `Format<Full>` unchanged, as it does a call line it cannot write byte for byte: one with a
//! span prefix, colours, an error field or a field the default visitor treats specially.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::{Format, Full, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use crate::trace::CALL_TARGET;

/// The event format of the server's log (see the module). `F` writes the lines this one does
/// not write itself: `Format<Full>` in the server, a marker in the tests.
pub struct LineFormat<F = Format<Full>> {
    full: F,
}

impl Default for LineFormat {
    fn default() -> Self {
        LineFormat {
            full: Format::default(),
        }
    }
}

impl<S, N, F> FormatEvent<S, N> for LineFormat<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        let direct = meta.target() == CALL_TARGET
            && !writer.has_ansi_escapes()
            && ctx.event_scope().is_none()
            && plain_fields(event);
        let stamp = direct.then(|| timestamp(SystemTime::now())).flatten();
        let Some(stamp) = stamp else {
            return self.full.format_event(ctx, writer, event);
        };
        // As `Format<Full>` lays a line out: time, level padded to five, target, fields.
        writer.write_str(as_text(&stamp))?;
        writer.write_str(match *meta.level() {
            Level::TRACE => "TRACE ",
            Level::DEBUG => "DEBUG ",
            Level::INFO => " INFO ",
            Level::WARN => " WARN ",
            Level::ERROR => "ERROR ",
        })?;
        writer.write_str(meta.target())?;
        writer.write_str(": ")?;
        let mut fields = FieldWriter {
            writer: &mut writer,
            first: true,
            result: Ok(()),
        };
        event.record(&mut fields);
        fields.result?;
        writer.write_char('\n')
    }
}

/// Whether the default visitor would write each of the event's fields as `name={:?}`: no
/// `message` (written bare), no `r#` name (written without the prefix), no `log.` field
/// (skipped), and no error value (written with its sources).
fn plain_fields(event: &Event<'_>) -> bool {
    struct Check(bool);
    impl Visit for Check {
        fn record_debug(&mut self, field: &Field, _: &dyn fmt::Debug) {
            let name = field.name();
            if name == "message" || name.starts_with("r#") || name.starts_with("log.") {
                self.0 = false;
            }
        }
        fn record_error(&mut self, _: &Field, _: &(dyn std::error::Error + 'static)) {
            self.0 = false;
        }
    }
    let mut check = Check(true);
    event.record(&mut check);
    check.0
}

/// Writes fields as the default visitor writes plain ones: `name=value`, space-separated,
/// strings in their `Debug` form.
struct FieldWriter<'w, 'a> {
    writer: &'w mut Writer<'a>,
    first: bool,
    result: fmt::Result,
}

impl FieldWriter<'_, '_> {
    fn name(&mut self, field: &Field) -> fmt::Result {
        if !std::mem::take(&mut self.first) {
            self.writer.write_char(' ')?;
        }
        self.writer.write_str(field.name())?;
        self.writer.write_char('=')
    }
}

impl Visit for FieldWriter<'_, '_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if self.result.is_err() {
            return;
        }
        self.result = self.name(field).and_then(|()| {
            // `{:?}` of a string that needs no escape is the string in quotes.
            if value
                .bytes()
                .all(|b| (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\')
            {
                self.writer.write_char('"')?;
                self.writer.write_str(value)?;
                self.writer.write_char('"')
            } else {
                write!(self.writer, "{value:?}")
            }
        });
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if self.result.is_err() {
            return;
        }
        self.result = self
            .name(field)
            .and_then(|()| write!(self.writer, "{value:?}"));
    }
}

/// `2026-12-02T05:39:27.822106Z ` (with the trailing space), as tracing-subscriber's
/// `SystemTime` timer writes a time from 1970 to 9999; `None` outside that range.
fn timestamp(now: SystemTime) -> Option<[u8; 28]> {
    let since = now.duration_since(UNIX_EPOCH).ok()?;
    let secs = since.as_secs();
    let (year, month, day) = civil_from_days(secs / 86_400);
    if year > 9999 {
        return None;
    }
    let of_day = secs % 86_400;
    let mut out = *b"0000-00-00T00:00:00.000000Z ";
    digits(&mut out[0..4], year);
    digits(&mut out[5..7], month);
    digits(&mut out[8..10], day);
    digits(&mut out[11..13], of_day / 3600);
    digits(&mut out[14..16], of_day % 3600 / 60);
    digits(&mut out[17..19], of_day % 60);
    digits(&mut out[20..26], u64::from(since.subsec_micros()));
    Some(out)
}

fn as_text(stamp: &[u8; 28]) -> &str {
    // Only ASCII digits and punctuation were written.
    std::str::from_utf8(stamp).unwrap_or("<unknown time> ")
}

/// `value`'s last `slot.len()` decimal digits, zero-padded, into `slot`.
fn digits(slot: &mut [u8], mut value: u64) {
    for byte in slot.iter_mut().rev() {
        *byte = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`,
/// for days on or after the epoch).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    // Count from 0000-03-01, so that the leap day ends each 400-year era's year.
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153; // March is 0
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests;
