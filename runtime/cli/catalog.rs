//! `snowluma-mcp catalog list [--category ID] | search QUERY… | show NAME [--json]`: the
//! bundled catalog from a terminal, with the same lookups and keyword search the tools use.

use std::ffi::OsString;
use std::process::ExitCode;

use serde_json::Value;

use crate::catalog::{self, ACTIONS, CATALOG_VERSION, CompactEntry, Filter, search};

pub const USAGE: &str = "usage: snowluma-mcp catalog list [--category ID] [--json]\n       \
snowluma-mcp catalog search QUERY… [--json]   (keyword search, as search_actions match=keywords)\n       \
snowluma-mcp catalog show NAME [--json]";

/// Not inlined into [`super::dispatch`], for the same reason as `check::main`: a start-up
/// that serves MCP should not pay for a subcommand's stack frame.
#[inline(never)]
pub fn main(args: &[OsString]) -> ExitCode {
    let mut words = Vec::new();
    let mut json = false;
    let mut category = None;
    let mut args = args.iter().map(|a| a.to_string_lossy().into_owned());
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--json" => json = true,
            "--category" => category = args.next(),
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            _ => words.push(arg),
        }
    }
    let (command, rest) = match words.split_first() {
        Some((command, rest)) => (command.as_str(), rest),
        None => return usage_error("a command is missing"),
    };
    let result = match (command, rest) {
        ("list", []) => list(category.as_deref(), json),
        ("search", words) if !words.is_empty() => search(&words.join(" "), json),
        ("show", [name]) => show(name, json),
        ("list" | "search" | "show", _) => return usage_error("wrong arguments"),
        (other, _) => return usage_error(&format!("unknown command `{other}`")),
    };
    match result {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("snowluma-mcp catalog: {message}");
            ExitCode::FAILURE
        }
    }
}

fn usage_error(problem: &str) -> ExitCode {
    eprintln!("snowluma-mcp catalog: {problem}\n{USAGE}");
    ExitCode::from(2)
}

fn list(category: Option<&str>, json: bool) -> Result<String, String> {
    let filter = Filter {
        category: match category {
            None => None,
            Some(key) => Some(catalog::find_category(key).ok_or_else(|| {
                let ids: Vec<&str> = catalog::CATEGORIES.iter().map(|c| c.id).collect();
                format!("unknown category `{key}`; categories: {}", ids.join(", "))
            })?),
        },
        ..Filter::default()
    };
    let entries: Vec<CompactEntry> = ACTIONS
        .iter()
        .filter(|a| filter.matches(a))
        .map(|a| a.compact())
        .collect();
    Ok(render(&entries, json))
}

fn search(query: &str, json: bool) -> Result<String, String> {
    if query.chars().count() > catalog::MAX_NAME_CHARS {
        return Err(format!(
            "the query is longer than {} characters",
            catalog::MAX_NAME_CHARS
        ));
    }
    let found = search::keywords(query);
    let entries = found.result_entries(&Filter::default());
    if entries.is_empty() && !json {
        let partial = found.suggestion_entries(&Filter::default());
        if partial.is_empty() {
            return Err(format!(
                "nothing matches `{query}`; try fewer or other words"
            ));
        }
        let partial: Vec<CompactEntry> = partial.into_iter().map(|s| s.entry).collect();
        return Ok(format!(
            "no action matches every word; partial matches:\n{}",
            render(&partial, false)
        ));
    }
    Ok(render(&entries, json))
}

fn show(name: &str, json: bool) -> Result<String, String> {
    let resolved = catalog::lookup(name).map_err(|unknown| {
        let hint = if unknown.similar.is_empty() {
            "`snowluma-mcp catalog search <words>` finds actions".to_string()
        } else {
            format!("did you mean {}?", unknown.similar.join(", "))
        };
        format!("{unknown}; {hint}")
    })?;
    let contract = resolved.meta.contract_json();
    if json {
        return Ok(contract.to_string());
    }
    let contract: Value = serde_json::from_str(contract).map_err(|e| e.to_string())?;
    let meta = resolved.meta;
    let mut out = format!(
        "{}  [{}]\n{}\n",
        meta.name,
        meta.category().id,
        meta.summary
    );
    if !meta.aliases.is_empty() {
        out.push_str(&format!("aliases: {}\n", meta.aliases.join(", ")));
    }
    let kind = match (meta.read_only, meta.is_stream()) {
        (_, true) => "stream action (write mode, invoke_action)",
        (true, false) => "read-only (query_action, read or write mode)",
        (false, false) => "changes state (invoke_action, write mode)",
    };
    out.push_str(&format!("{kind}\n"));
    if let Some(danger) = meta.danger {
        out.push_str(&format!("DANGER: {danger}\n"));
    }
    if let Some(notes) = contract["notes"].as_str() {
        out.push_str(&format!("\n{notes}\n"));
    }
    let params = contract["params"].as_array().cloned().unwrap_or_default();
    out.push_str(if params.is_empty() {
        "\nparams: none\n"
    } else {
        "\nparams:\n"
    });
    for param in &params {
        out.push_str(&format!(
            "  {}: {}{} - {}\n",
            param["name"].as_str().unwrap_or_default(),
            param["type"].as_str().unwrap_or_default(),
            if param["required"] == Value::Bool(true) {
                " (required)"
            } else {
                ""
            },
            param["description"].as_str().unwrap_or_default()
        ));
    }
    out.push_str(&format!(
        "\nreturns: {}\n(SnowLuma {CATALOG_VERSION} catalog; --json prints the whole contract)",
        contract["returns"].as_str().unwrap_or_default()
    ));
    Ok(out)
}

fn render(entries: &[CompactEntry], json: bool) -> String {
    if json {
        return serde_json::to_string_pretty(entries).unwrap_or_default();
    }
    let width = entries.iter().map(|e| e.name.len()).max().unwrap_or(0);
    let mut out: Vec<String> = entries
        .iter()
        .map(|e| {
            let access = match (e.read_only, e.stream) {
                (_, true) => "stream",
                (true, false) => "read",
                (false, false) => "write",
            };
            format!(
                "{:width$}  {:11}  {:6}  {}",
                e.name, e.category, access, e.summary
            )
        })
        .collect();
    out.push(format!("{} actions", entries.len()));
    out.join("\n")
}
