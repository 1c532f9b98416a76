//! The catalog tools: list_actions, search_actions, get_action, list_categories and the
//! docs-mode part of get_runtime_info. They read only the bundled catalog.

use std::sync::{Arc, OnceLock};

use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::reply::Reply;
use super::tools::parse_args;
use crate::catalog::{self, ACTIONS, CATALOG_VERSION, CATEGORIES, Filter, Page, search};
use crate::config::Config;

pub const MAX_LIMIT: i64 = 200;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// Category id (e.g. `group_admin`) or Chinese name (e.g. `群管理`); see list_categories.
    pub category: Option<String>,
    /// Only read-only actions (true) or only actions that change state (false).
    pub read_only: Option<bool>,
    /// Only stream actions (true) or only ordinary ones (false).
    pub stream: Option<bool>,
    /// Page size, 1-200. With limit or offset the result adds total and next_offset.
    #[schemars(range(min = 1, max = 200))]
    pub limit: Option<i64>,
    /// Index of the first entry to return (0 or more).
    #[schemars(range(min = 0))]
    pub offset: Option<i64>,
}

#[derive(Deserialize, JsonSchema, Clone, Copy, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum MatchMode {
    /// Case-insensitive substring of name, alias or summary (SnowLuma's original behaviour).
    #[default]
    Substring,
    /// Space-separated terms combined with AND, with synonyms; exact names rank first.
    Keywords,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// What to look for, e.g. `ban` or, in keywords mode, `群 禁言`.
    pub query: String,
    /// `substring` (default) or `keywords`.
    #[serde(rename = "match", default)]
    pub match_mode: MatchMode,
    /// Category id or Chinese name.
    pub category: Option<String>,
    pub read_only: Option<bool>,
    pub stream: Option<bool>,
    /// Page size, 1-200.
    #[schemars(range(min = 1, max = 200))]
    pub limit: Option<i64>,
    /// Index of the first entry to return (0 or more).
    #[schemars(range(min = 0))]
    pub offset: Option<i64>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetActionArgs {
    /// Action name or alias, e.g. `send_group_msg` or `get_ptt_text`.
    pub name: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RuntimeInfoArgs {
    /// Also query get_login_info, get_status and get_version_info (read and write modes only).
    #[serde(default)]
    pub check_connection: bool,
}

/// Turns the shared filter and pagination arguments into catalog types, or a tool error that
/// names the field and its range.
fn filter_and_page(
    category: Option<&str>,
    read_only: Option<bool>,
    stream: Option<bool>,
    limit: Option<i64>,
    offset: Option<i64>,
) -> Result<(Filter, Page), Reply> {
    let category = match category {
        None => None,
        Some(key) => Some(catalog::find_category(key.trim()).ok_or_else(|| {
            let known: Vec<String> = CATEGORIES
                .iter()
                .map(|c| format!("{} ({})", c.id, c.name))
                .collect();
            Reply::error(
                "invalid_arguments",
                format!("unknown category `{key}`"),
                format!("use one of: {}; or call list_categories", known.join(", ")),
            )
        })?),
    };
    if let Some(limit) = limit.filter(|l| !(1..=MAX_LIMIT).contains(l)) {
        return Err(Reply::error(
            "invalid_arguments",
            format!("limit must be between 1 and {MAX_LIMIT} (got {limit})"),
            "pass a limit from 1 to 200, and page with offset/next_offset",
        ));
    }
    if let Some(offset) = offset.filter(|o| *o < 0) {
        return Err(Reply::error(
            "invalid_arguments",
            format!("offset must be a non-negative integer (got {offset})"),
            "pass offset 0 for the first page, then the next_offset of the previous page",
        ));
    }
    Ok((
        Filter {
            category,
            read_only,
            stream,
        },
        Page {
            limit: limit.map(|l| l as usize),
            offset: offset.map(|o| o as usize),
        },
    ))
}

pub fn list_actions(args: Option<JsonObject>) -> Reply {
    let run = || -> Result<Reply, Reply> {
        let args: ListArgs = parse_args("list_actions", args)?;
        let (filter, page) = filter_and_page(
            args.category.as_deref(),
            args.read_only,
            args.stream,
            args.limit,
            args.offset,
        )?;
        if filter.is_empty() && !page.is_requested() {
            let (listing, text) = whole_listing();
            return Ok(Reply::ok_serialized(listing.clone(), text.clone()));
        }
        let entries = ACTIONS
            .iter()
            .filter(|a| filter.matches(a))
            .map(|a| a.compact())
            .collect();
        Ok(Reply::ok(page.render(entries)))
    };
    run().unwrap_or_else(|e| e)
}

/// The unfiltered listing never changes: it is built once, with its serialized form.
fn whole_listing() -> &'static (Value, Arc<str>) {
    static LISTING: OnceLock<(Value, Arc<str>)> = OnceLock::new();
    LISTING.get_or_init(|| {
        let listing = Page::default().render(ACTIONS.iter().map(|a| a.compact()).collect());
        let text = serde_json::to_string(&listing).unwrap_or_default();
        (listing, text.into())
    })
}

pub fn search_actions(args: Option<JsonObject>) -> Reply {
    let run = || -> Result<Reply, Reply> {
        let args: SearchArgs = parse_args("search_actions", args)?;
        let (filter, page) = filter_and_page(
            args.category.as_deref(),
            args.read_only,
            args.stream,
            args.limit,
            args.offset,
        )?;
        if args.query.trim().is_empty() {
            return Err(Reply::error(
                "invalid_arguments",
                "query must not be empty",
                "pass a word to look for, e.g. `ban`, `禁言` or `group member`; list_actions lists everything",
            ));
        }
        let mut reply = match args.match_mode {
            MatchMode::Substring => {
                let entries = search::substring(&args.query)
                    .into_iter()
                    .map(|i| &ACTIONS[i])
                    .filter(|a| filter.matches(a))
                    .map(|a| a.compact())
                    .collect();
                Reply::ok(page.render(entries))
            }
            MatchMode::Keywords => {
                let found = search::keywords(&args.query);
                let mut reply = Reply::ok(page.render(found.result_entries(&filter)));
                let extra = &mut reply.diagnostics.extra;
                extra.insert("terms".into(), json!(found.terms));
                if !found.unmatched_terms.is_empty() {
                    extra.insert("unmatched_terms".into(), json!(found.unmatched_terms));
                }
                let suggestions = found.suggestion_entries(&filter);
                if !suggestions.is_empty() {
                    extra.insert("suggestions".into(), json!(suggestions));
                    reply.diagnostics.message = Some(
                        "no action matches every term; diagnostics.suggestions lists partial matches (each misses a term)".into(),
                    );
                }
                reply
            }
        };
        if reply.result["count"] == json!(0) {
            reply.diagnostics.next_step = Some(match args.match_mode {
                MatchMode::Substring => "try match=\"keywords\" with fewer or other words, or list_actions with a category".into(),
                MatchMode::Keywords => "try fewer words, a synonym, or list_actions with a category".into(),
            });
        }
        Ok(reply)
    };
    run().unwrap_or_else(|e| e)
}

pub fn get_action(args: Option<JsonObject>) -> Reply {
    let run = || -> Result<Reply, Reply> {
        let args: GetActionArgs = parse_args("get_action", args)?;
        let name = args.name.trim();
        let resolved = catalog::resolve(name).ok_or_else(|| unknown_action(name))?;
        let mut contract: Value =
            serde_json::from_str(resolved.meta.contract_json()).unwrap_or(Value::Null);
        if let Some(alias) = resolved.alias {
            contract["requested_alias"] = json!(alias);
        }
        Ok(Reply::ok(contract))
    };
    run().unwrap_or_else(|e| e)
}

/// The tool error for a name that is neither an action nor an alias.
pub fn unknown_action(name: &str) -> Reply {
    let similar = catalog::similar_names(name, 3);
    let next_step = if similar.is_empty() {
        "find the action with search_actions (e.g. match=\"keywords\") or list_actions".to_string()
    } else {
        format!(
            "did you mean {}? search_actions finds actions by keyword",
            similar
                .iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    Reply::error(
        "unknown_action",
        format!(
            "`{name}` is not an action or alias in the bundled catalog (SnowLuma {CATALOG_VERSION})"
        ),
        next_step,
    )
}

pub fn list_categories(args: Option<JsonObject>) -> Reply {
    if let Err(reply) = parse_args::<NoArgs>("list_categories", args) {
        return reply;
    }
    let categories: Vec<Value> = CATEGORIES
        .iter()
        .map(|c| json!({ "id": c.id, "name": c.name, "description": c.description, "count": c.count }))
        .collect();
    Reply::ok(Value::Array(categories))
}

/// The fields every mode reports.
pub fn runtime_info(config: &Config) -> Value {
    let alias_count: usize = ACTIONS.iter().map(|a| a.aliases.len()).sum();
    json!({
        "mode": config.mode.as_str(),
        "execution_enabled": config.mode.executes(),
        "write_enabled": config.mode.writes(),
        "catalog_version": CATALOG_VERSION,
        "action_count": ACTIONS.len(),
        "alias_count": alias_count,
        "server_support": "unknown",
        "transport": if config.mode.executes() { json!("http") } else { Value::Null },
        "connection_checked": false,
    })
}

/// `check_connection` in docs mode.
pub fn check_connection_refused() -> Reply {
    Reply::error(
        "mode",
        "check_connection needs read or write mode; this server runs in docs mode and never opens a connection",
        "set SNOWLUMA_MCP_ENDPOINT (and SNOWLUMA_MCP_MODE=read or write) in the MCP client's server configuration",
    )
}

fn compact_entry_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": { "type": "string" },
            "aliases": { "type": "array", "items": { "type": "string" } },
            "category": { "type": "string" },
            "category_name": { "type": "string" },
            "summary": { "type": "string" },
            "read_only": { "type": "boolean" },
            "stream": { "type": "boolean" },
            "stream_kind": { "enum": ["download", "upload", "frames"] },
            "score": { "type": "integer", "description": "keyword relevance (keywords mode only)" }
        },
        "required": ["name", "aliases", "category", "summary", "read_only", "stream"]
    })
}

pub fn listing_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "count": { "type": "integer", "description": "entries in this response" },
            "total": { "type": "integer", "description": "all matching entries (with pagination)" },
            "next_offset": { "type": ["integer", "null"], "description": "offset of the next page, null on the last" },
            "actions": { "type": "array", "items": compact_entry_schema() }
        },
        "required": ["count", "actions"]
    })
}

pub fn contract_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": { "type": "string" },
            "aliases": { "type": "array", "items": { "type": "string" } },
            "requested_alias": { "type": "string" },
            "category": { "type": "string" },
            "category_name": { "type": "string" },
            "summary": { "type": "string" },
            "notes": { "type": "string" },
            "read_only": { "type": "boolean" },
            "stream": { "type": "boolean" },
            "stream_kind": { "type": "string" },
            "keywords": { "type": "array", "items": { "type": "string" } },
            "params": { "type": "array", "items": { "type": "object" } },
            "invariants": { "type": "array", "items": { "type": "object" } },
            "inputSchema": { "type": "object" },
            "returns": { "type": "string" },
            "returnsSchema": { "type": "object" },
            "examples": { "type": "array", "items": {
                "type": "object",
                "properties": {
                    "summary": { "type": "string" },
                    "action": { "type": "string" },
                    "params": { "type": "object" },
                    "notes": { "type": "string" }
                },
                "required": ["summary", "action", "params"]
            } }
        },
        "required": ["name", "aliases", "category", "summary", "read_only", "stream", "params", "inputSchema", "returnsSchema", "examples"]
    })
}

pub fn categories_schema() -> Value {
    json!({
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "id": { "type": "string" },
                "name": { "type": "string" },
                "description": { "type": "string" },
                "count": { "type": "integer" }
            },
            "required": ["id", "name", "description", "count"]
        }
    })
}

pub fn runtime_info_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "mode": { "enum": ["docs", "read", "write"] },
            "execution_enabled": { "type": "boolean" },
            "write_enabled": { "type": "boolean" },
            "catalog_version": { "type": "string" },
            "action_count": { "type": "integer" },
            "alias_count": { "type": "integer" },
            "server_support": { "const": "unknown" },
            "transport": { "type": ["string", "null"] },
            "connection_checked": { "type": "boolean" }
        },
        "required": ["mode", "execution_enabled", "write_enabled", "catalog_version", "action_count", "server_support", "transport", "connection_checked"],
        "additionalProperties": true
    })
}
