//! `snowluma-mcp audit [--log PATH] [--since TIME] [--action NAME] [--json]`: the audit log
//! (SNOWLUMA_MCP_AUDIT_LOG, and its previous file) for a person at a terminal, oldest first.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use chrono::{DateTime, Duration, Utc};

use crate::guard::audit::{AuditEntry, read_entries};

const USAGE: &str = "usage: snowluma-mcp audit [--log PATH] [--since TIME] [--action NAME] [--json]\n  \
--log     the audit log [default: SNOWLUMA_MCP_AUDIT_LOG]\n  \
--since   entries at or after TIME: RFC 3339 (2026-07-28T12:00:00Z) or an age (30m, 12h, 7d)\n  \
--action  entries of this action only\n  \
--json    the entries as JSON lines, unchanged";

#[inline(never)]
pub fn main(args: &[OsString]) -> ExitCode {
    let mut log = std::env::var_os("SNOWLUMA_MCP_AUDIT_LOG")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let mut since = None;
    let mut action = None;
    let mut json = false;
    let mut args = args.iter().map(|a| a.to_string_lossy().into_owned());
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        let parsed = match arg.as_str() {
            "--log" => value("--log").map(|v| log = Some(PathBuf::from(v))),
            "--since" => {
                value("--since").and_then(|v| parse_since(&v, Utc::now()).map(|t| since = Some(t)))
            }
            "--action" => value("--action").map(|v| action = Some(v)),
            "--json" => {
                json = true;
                Ok(())
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => Err(format!("unknown argument `{other}`")),
        };
        if let Err(problem) = parsed {
            eprintln!("snowluma-mcp audit: {problem}\n{USAGE}");
            return ExitCode::from(2);
        }
    }
    let Some(log) = log else {
        eprintln!(
            "snowluma-mcp audit: no audit log: set SNOWLUMA_MCP_AUDIT_LOG as the server has it, or pass --log PATH"
        );
        return ExitCode::from(2);
    };
    let (entries, skipped) = match read_entries(&log) {
        Ok(read) => read,
        Err(error) => {
            eprintln!("snowluma-mcp audit: cannot read {}: {error}", log.display());
            return ExitCode::FAILURE;
        }
    };
    let shown = entries.iter().filter(|e| {
        action.as_deref().is_none_or(|a| e.action == a)
            && since.is_none_or(|since| {
                DateTime::parse_from_rfc3339(&e.time).is_ok_and(|t| t.with_timezone(&Utc) >= since)
            })
    });
    for entry in shown {
        if json {
            println!("{}", serde_json::to_string(entry).unwrap_or_default());
        } else {
            println!("{}", line(entry));
        }
    }
    if skipped > 0 {
        eprintln!("snowluma-mcp audit: {skipped} line(s) that are not audit entries were skipped");
    }
    ExitCode::SUCCESS
}

/// One entry for people: time, principal, tool/action, targets, outcome (kind, retcode), trace.
fn line(entry: &AuditEntry) -> String {
    let mut text = format!(
        "{}  {}  {} {}",
        entry.time, entry.principal, entry.tool, entry.action
    );
    if !entry.targets.is_empty() {
        text.push_str(&format!(" -> {}", entry.targets.join(",")));
    }
    text.push_str(&format!("  {}", entry.outcome));
    if let Some(kind) = &entry.kind {
        text.push_str(&format!(" ({kind})"));
    }
    if let Some(retcode) = entry.retcode {
        text.push_str(&format!(" retcode={retcode}"));
    }
    text.push_str(&format!("  trace {}", entry.traceparent));
    text
}

/// `--since`: an RFC 3339 time, or an age before `now` (`30s`, `15m`, `12h`, `7d`).
fn parse_since(text: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    if let Ok(time) = DateTime::parse_from_rfc3339(text) {
        return Ok(time.with_timezone(&Utc));
    }
    let bad = || {
        format!(
            "--since `{text}` is neither an RFC 3339 time (2026-07-28T12:00:00Z) nor an age like 30m, 12h or 7d"
        )
    };
    let (number, unit) = text.split_at(text.len().saturating_sub(1));
    let amount: i64 = number.parse().map_err(|_| bad())?;
    let age = match unit {
        "s" => Duration::try_seconds(amount),
        "m" => Duration::try_minutes(amount),
        "h" => Duration::try_hours(amount),
        "d" => Duration::try_days(amount),
        _ => None,
    }
    .ok_or_else(bad)?;
    now.checked_sub_signed(age).ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_a_time_or_an_age() {
        let now = DateTime::parse_from_rfc3339("2026-07-28T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(
            parse_since("90m", now).unwrap().to_rfc3339(),
            "2026-07-28T10:30:00+00:00"
        );
        assert_eq!(
            parse_since("2026-07-01T00:00:00+02:00", now)
                .unwrap()
                .to_rfc3339(),
            "2026-06-30T22:00:00+00:00"
        );
        assert!(
            parse_since("yesterday", now)
                .unwrap_err()
                .contains("--since")
        );
        assert!(parse_since("5w", now).is_err());
    }
}
