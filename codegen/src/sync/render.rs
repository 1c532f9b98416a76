//! The report people read in a pull request. `--json` prints the [`Report`] itself.

use std::fmt::Write;

use serde_json::Value;

use super::diff::{Change, Kind, Report};

fn show(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn line(change: &Change) -> String {
    let field = &change.field;
    match (change.kind, field.as_str()) {
        (Kind::Added, "action") => format!("+ new action upstream: {}", show(&change.to)),
        (Kind::Removed, "action") => "- in spec/ only: not in upstream's catalog".to_string(),
        (Kind::Renamed, "action") => format!("> renamed upstream to `{}`", show(&change.to)),
        (Kind::Added, _) => format!("+ {field}: added upstream: {}", show(&change.to)),
        (Kind::Removed, _) => format!("- {field}: removed upstream (was {})", show(&change.from)),
        (Kind::Renamed, _) => format!("> {field}: renamed upstream to `{}`", show(&change.to)),
        (Kind::Changed, _) => format!(
            "~ {field}: spec/ says {}, upstream says {}",
            show(&change.from),
            show(&change.to)
        ),
        (Kind::ChangedUpstream, _) => format!(
            "~ {field}: upstream changed it since the last sync\n      was: {}\n      now: {}",
            show(&change.from),
            show(&change.to)
        ),
    }
}

fn grouped(out: &mut String, changes: &[Change]) {
    let mut current: Option<&str> = None;
    for change in changes {
        if current != Some(change.action.as_str()) {
            let _ = writeln!(out, "  {}", change.action);
            current = Some(&change.action);
        }
        let _ = writeln!(out, "    {}", line(change));
    }
}

pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "catalog-sync: SnowLuma's catalog ({} actions) against spec/ ({} actions, catalog version {})",
        report.upstream_actions, report.spec_actions, report.catalog_version
    );
    if !report.baseline {
        out.push_str("note: spec/upstream-catalog.json is missing, so upstream's own text and result schemas were not compared\n");
    }
    out.push('\n');
    if report.is_clean() {
        out.push_str("Drift: none\n");
    } else {
        let _ = writeln!(out, "Drift: {} item(s)", report.drift.len());
        grouped(&mut out, &report.drift);
    }
    if !report.stale_differences.is_empty() {
        let _ = writeln!(
            out,
            "\nStale entries in spec/upstream-differences.yaml (they match no difference any more; remove them): {}",
            report.stale_differences.len()
        );
        for entry in &report.stale_differences {
            let _ = writeln!(out, "  {} {}", entry.action, entry.field);
        }
    }
    let _ = writeln!(
        out,
        "\nDeliberate (listed in spec/upstream-differences.yaml, never overwritten): {}",
        report.deliberate.len()
    );
    grouped(&mut out, &report.deliberate);
    let kept = &report.kept;
    out.push_str("\nKept (spec/ says more than upstream; not drift):\n");
    let _ = writeln!(
        out,
        "  returnsSchema written here where upstream has none: {} actions",
        kept.returns_schema_where_upstream_has_none.len()
    );
    let _ = writeln!(
        out,
        "  returnsSchema refining upstream's: {} actions",
        kept.returns_schema_refining_upstream.len()
    );
    let _ = writeln!(out, "  examples: {} actions", kept.actions_with_examples);
    let _ = writeln!(
        out,
        "  params SnowLuma reads unchecked (undeclared): {}",
        kept.undeclared_params.len()
    );
    let _ = writeln!(out, "  body checks: {}", kept.body_checks.len());
    let _ = writeln!(
        out,
        "  machine-checked invariants upstream does not state: {}",
        kept.machine_rules.len()
    );
    out.push_str("  (--json lists each one)\n");
    out
}
