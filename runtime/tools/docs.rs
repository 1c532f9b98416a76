//! The catalog tools: list_actions, search_actions, get_action, list_categories, and
//! get_runtime_info. Each answers with a typed result whose schema is the tool's
//! outputSchema; only get_runtime_info's connection check leaves the bundled catalog.

use std::sync::{Arc, OnceLock};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::catalog::{self, ACTIONS, CATALOG_VERSION, CATEGORIES, Filter, Page, search};
use crate::config::Mode;
use crate::exec::{ActionPolicy, ConnectionCheck, ExecutionOverview, unknown_action};
use crate::outcome::{ErrorKind, Outcome, ToolReply, parse_args};

type Args = Option<Map<String, Value>>;

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
) -> Result<(Filter, Page), ToolReply> {
    let category = match category {
        None => None,
        Some(key) => Some(catalog::find_category(key.trim()).ok_or_else(|| {
            let known: Vec<String> = CATEGORIES
                .iter()
                .map(|c| format!("{} ({})", c.id, c.name))
                .collect();
            ToolReply::error(
                ErrorKind::InvalidArguments,
                format!("unknown category `{key}`"),
                format!("use one of: {}; or call list_categories", known.join(", ")),
            )
        })?),
    };
    if let Some(limit) = limit.filter(|l| !(1..=MAX_LIMIT).contains(l)) {
        return Err(ToolReply::error(
            ErrorKind::InvalidArguments,
            format!("limit must be between 1 and {MAX_LIMIT} (got {limit})"),
            "pass a limit from 1 to 200, and page with offset/next_offset",
        ));
    }
    if let Some(offset) = offset.filter(|o| *o < 0) {
        return Err(ToolReply::error(
            ErrorKind::InvalidArguments,
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

/// A typed result as a reply, serialized straight to text.
fn reply<T: Serialize>(result: &T) -> ToolReply {
    ToolReply::ok_typed(result)
}

pub fn list_actions(args: Args) -> ToolReply {
    let run = || -> Result<ToolReply, ToolReply> {
        let args: ListArgs = parse_args("list_actions", args)?;
        let (filter, page) = filter_and_page(
            args.category.as_deref(),
            args.read_only,
            args.stream,
            args.limit,
            args.offset,
        )?;
        if filter.is_empty() && !page.is_requested() {
            return Ok(whole_listing().reply());
        }
        let entries = ACTIONS
            .iter()
            .filter(|a| filter.matches(a))
            .map(|a| a.compact())
            .collect();
        Ok(reply(&page.render(entries)))
    };
    run().unwrap_or_else(|e| e)
}

/// An answer that never changes, serialized once.
pub struct StaticAnswer {
    json: Arc<RawValue>,
}

impl StaticAnswer {
    fn new<T: Serialize>(result: &T) -> StaticAnswer {
        let json = serde_json::value::to_raw_value(result)
            .unwrap_or_else(|_| RawValue::NULL.to_owned())
            .into();
        StaticAnswer { json }
    }

    /// A reply carrying the answer's serialization (shared, not copied).
    pub fn reply(&self) -> ToolReply {
        ToolReply::serialized(self.json.clone())
    }
}

/// The unfiltered listing never changes: it is built once.
pub fn whole_listing() -> &'static StaticAnswer {
    static LISTING: OnceLock<StaticAnswer> = OnceLock::new();
    LISTING.get_or_init(|| {
        StaticAnswer::new(&Page::default().render(ACTIONS.iter().map(|a| a.compact()).collect()))
    })
}

pub fn search_actions(args: Args) -> ToolReply {
    let run = || -> Result<ToolReply, ToolReply> {
        let args: SearchArgs = parse_args("search_actions", args)?;
        let (filter, page) = filter_and_page(
            args.category.as_deref(),
            args.read_only,
            args.stream,
            args.limit,
            args.offset,
        )?;
        let length = args.query.chars().count();
        if length > catalog::MAX_NAME_CHARS {
            return Err(ToolReply::error(
                ErrorKind::InvalidArguments,
                format!(
                    "query has {length} characters; queries are at most {}",
                    catalog::MAX_NAME_CHARS
                ),
                "search with a few words, e.g. `群 禁言` or `mute member`",
            ));
        }
        if args.query.trim().is_empty() {
            return Err(ToolReply::error(
                ErrorKind::InvalidArguments,
                "query must not be empty",
                "pass a word to look for, e.g. `ban`, `禁言` or `group member`; list_actions lists everything",
            ));
        }
        let (listing, mut result) = match args.match_mode {
            MatchMode::Substring => {
                let entries = search::substring(&args.query)
                    .into_iter()
                    .map(|i| &ACTIONS[i])
                    .filter(|a| filter.matches(a))
                    .map(|a| a.compact())
                    .collect();
                let listing = page.render(entries);
                let result = reply(&listing);
                (listing, result)
            }
            MatchMode::Keywords => {
                let mut found = search::keywords(&args.query);
                let listing = page.render(found.result_entries(&filter));
                let mut result = reply(&listing);
                let extra = &mut result.diagnostics.extra;
                // The word lists move into the reply; nothing below reads them.
                let terms = std::mem::take(&mut found.terms);
                extra.insert("terms".into(), Value::from(terms));
                for (key, list) in [
                    ("unmatched_terms", &mut found.unmatched_terms),
                    ("ignored_terms", &mut found.ignored_terms),
                    ("corrected_terms", &mut found.corrected_terms),
                ] {
                    if !list.is_empty() {
                        extra.insert(key.into(), Value::from(std::mem::take(list)));
                    }
                }
                if found.substring_fallback {
                    extra.insert("fallback".into(), json!("substring"));
                }
                let suggestions = found.suggestion_entries(&filter);
                if !suggestions.is_empty() {
                    extra.insert("suggestions".into(), json!(suggestions));
                    result.diagnostics.message = Some(
                        "no action matches every term; diagnostics.suggestions lists partial matches (each misses a term)".into(),
                    );
                }
                (listing, result)
            }
        };
        if listing.count == 0 {
            result.diagnostics.next_step = Some(match args.match_mode {
                MatchMode::Substring => "try match=\"keywords\" with fewer or other words, or list_actions with a category".into(),
                MatchMode::Keywords => "try fewer words, a synonym, or list_actions with a category".into(),
            });
        }
        Ok(result)
    };
    run().unwrap_or_else(|e| e)
}

/// One action's full contract, as `get_action` returns it.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct ActionContract {
    pub name: String,
    pub aliases: Vec<String>,
    /// The alias the caller asked for, when it was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested_alias: Option<String>,
    pub category: String,
    pub category_name: String,
    pub summary: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    /// What the action can do to the SnowLuma host; worth a deny list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub danger: Option<String>,
    /// True when this server's allow or deny list keeps the action from running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub denied: Option<bool>,
    /// The setting that denies it (with `denied` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub denied_by: Option<String>,
    pub read_only: bool,
    pub stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_kind: Option<String>,
    pub keywords: Vec<String>,
    /// Each param: name, type, required, bounds, description.
    pub params: Vec<Map<String, Value>>,
    /// Cross-field rules.
    pub invariants: Vec<Map<String, Value>>,
    /// JSON Schema of the params.
    #[serde(rename = "inputSchema")]
    pub input_schema: Map<String, Value>,
    /// What a successful result's `data` holds.
    pub returns: String,
    /// JSON Schema of a successful result's `data` (not the envelope).
    #[serde(rename = "returnsSchema")]
    pub returns_schema: Map<String, Value>,
    pub examples: Vec<Example>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Example {
    pub summary: String,
    pub action: String,
    pub params: Map<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
}

pub fn get_action(args: Args, policy: &ActionPolicy) -> ToolReply {
    let run = || -> Result<ToolReply, ToolReply> {
        let args: GetActionArgs = parse_args("get_action", args)?;
        let resolved = catalog::lookup(&args.name).map_err(unknown_action)?;
        let denial = policy.denial(resolved.index);
        if resolved.alias.is_none() && denial.is_none() {
            // The common case says nothing beyond the bundled contract: served from its one
            // serialization (made at the first request for this action).
            static PLAIN: OnceLock<Box<[OnceLock<StaticAnswer>]>> = OnceLock::new();
            let answers = PLAIN.get_or_init(|| ACTIONS.iter().map(|_| OnceLock::new()).collect());
            if let Some(answer) = answers[resolved.index].get() {
                return Ok(answer.reply());
            }
            let contract = bundled_contract(&resolved)?;
            return Ok(answers[resolved.index]
                .get_or_init(|| StaticAnswer::new(&contract))
                .reply());
        }
        let mut contract = bundled_contract(&resolved)?;
        contract.requested_alias = resolved.alias.map(str::to_string);
        if let Some(denial) = denial {
            contract.denied = Some(true);
            contract.denied_by = Some(denial.setting().to_string());
        }
        Ok(reply(&contract))
    };
    run().unwrap_or_else(|e| e)
}

fn bundled_contract(resolved: &catalog::Resolved) -> Result<ActionContract, ToolReply> {
    serde_json::from_str(resolved.meta.contract_json()).map_err(|error| {
        ToolReply::error(
            ErrorKind::BadResponse,
            format!(
                "the bundled contract of `{}` does not parse: {error}",
                resolved.meta.name
            ),
            "report this as a bug; the catalog resource has the same contract",
        )
    })
}

#[derive(Serialize, JsonSchema)]
pub struct CategoryEntry {
    pub id: &'static str,
    /// Chinese name.
    pub name: &'static str,
    pub description: &'static str,
    /// Actions in the category.
    pub count: usize,
}

pub fn list_categories(args: Args) -> ToolReply {
    if let Err(reply) = parse_args::<NoArgs>("list_categories", args) {
        return reply;
    }
    static CATEGORY_LIST: OnceLock<StaticAnswer> = OnceLock::new();
    CATEGORY_LIST
        .get_or_init(|| {
            let categories: Vec<CategoryEntry> = CATEGORIES
                .iter()
                .map(|c| CategoryEntry {
                    id: c.id,
                    name: c.name,
                    description: c.description,
                    count: c.count,
                })
                .collect();
            StaticAnswer::new(&categories)
        })
        .reply()
}

/// Always `"unknown"`: the catalog is a bundled snapshot, not proof of server support.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ServerSupport {
    Unknown,
}

/// `get_runtime_info`'s answer.
#[derive(Serialize, JsonSchema)]
pub struct RuntimeInfo {
    pub mode: Mode,
    pub execution_enabled: bool,
    pub write_enabled: bool,
    /// The SnowLuma release the bundled catalog describes.
    pub catalog_version: &'static str,
    pub action_count: usize,
    pub alias_count: usize,
    pub server_support: ServerSupport,
    /// `http` when the server can execute, null in docs mode.
    pub transport: Option<&'static str>,
    /// True only when check_connection ran.
    pub connection_checked: bool,
    /// Limits and places of execution (read and write mode).
    #[serde(flatten)]
    pub execution: Option<ExecutionOverview>,
    /// The connection check's findings (check_connection only).
    #[serde(flatten)]
    pub check: Option<ConnectionCheck>,
}

/// The local overview, without the connection check.
pub fn runtime_info(mode: Mode, execution: Option<ExecutionOverview>) -> RuntimeInfo {
    RuntimeInfo {
        mode,
        execution_enabled: mode.executes(),
        write_enabled: mode.writes(),
        catalog_version: CATALOG_VERSION,
        action_count: ACTIONS.len(),
        alias_count: ACTIONS.iter().map(|a| a.aliases.len()).sum(),
        server_support: ServerSupport::Unknown,
        transport: mode.executes().then_some("http"),
        connection_checked: false,
        execution,
        check: None,
    }
}

/// The overview with a finished connection check; some failed checks fail the result.
pub fn with_connection_check(mut info: RuntimeInfo, check: ConnectionCheck) -> ToolReply {
    let failed = check.failed;
    let total = check.checks.len();
    info.connection_checked = true;
    info.check = Some(check);
    let mut result = reply(&info);
    if failed > 0 {
        result.diagnostics.set(
            Outcome::Failed,
            ErrorKind::ConnectionCheck,
            format!("{failed} of {total} connection checks did not succeed; see checks"),
            "read each check's diagnostics for the cause",
        );
    }
    result
}

/// The local overview's answer, to be kept for the process (see `Shared::runtime_info`).
pub fn overview_answer(mode: Mode, execution: Option<ExecutionOverview>) -> StaticAnswer {
    StaticAnswer::new(&runtime_info(mode, execution))
}

/// `check_connection` in docs mode.
pub fn check_connection_refused() -> ToolReply {
    ToolReply::error(
        ErrorKind::Mode,
        "check_connection needs read or write mode; this server runs in docs mode and never opens a connection",
        "set SNOWLUMA_MCP_ENDPOINT (and SNOWLUMA_MCP_MODE=read or write) in the MCP client's server configuration",
    )
}

/// Marks the entries of a listing or search result that this server's allow or deny list keeps
/// from running (`denied: true`); without such a list the result is left as it is.
pub fn mark_denied(mut reply: ToolReply, policy: &ActionPolicy) -> ToolReply {
    if !policy.denies_any() {
        return reply;
    }
    let entries = reply
        .result_mut()
        .get_mut("actions")
        .and_then(Value::as_array_mut);
    for entry in entries.into_iter().flatten() {
        let denied = entry
            .get("name")
            .and_then(Value::as_str)
            .and_then(catalog::resolve)
            .is_some_and(|r| policy.denial(r.index).is_some());
        if denied && let Some(entry) = entry.as_object_mut() {
            entry.insert("denied".into(), Value::Bool(true));
        }
    }
    reply
}
