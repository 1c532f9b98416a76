//! Budgets and `read_more`: the per-call `budget` argument, fitting every reply into the
//! call's budget (the first page of a larger result, held for `read_more`), and the
//! `read_more` tool that serves the following pages.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::call::Call;
use crate::config::{MIN_BUDGET, ResultSettings};
use crate::outcome::{ErrorKind, ToolReply, parse_args};
use crate::paging::{ContinuationStore, Held, OpenError, fits};

/// The argument every tool accepts to ask for a smaller (or, up to the setting, larger)
/// result.
pub const BUDGET_ARG: &str = "budget";

/// Takes `budget` out of a tool's arguments and returns the call's budget in characters
/// (`None`: unlimited): the argument, capped by the transport's setting where one is set.
pub fn take_budget(
    args: &mut Option<Map<String, Value>>,
    settings: &ResultSettings,
    http: bool,
) -> Result<Option<usize>, ToolReply> {
    let setting = settings.budget(http);
    let Some(given) = args.as_mut().and_then(|args| args.remove(BUDGET_ARG)) else {
        return Ok(setting);
    };
    let chars = given
        .as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .filter(|n| *n >= MIN_BUDGET)
        .ok_or_else(|| {
            ToolReply::error(
                ErrorKind::InvalidArguments,
                format!(
                    "invalid argument `budget`: must be a whole number of characters, at least {MIN_BUDGET}"
                ),
                "pass a budget of 1000 or more characters, or leave it out for the server's setting",
            )
        })?;
    Ok(Some(setting.map_or(chars, |cap| chars.min(cap))))
}

/// The reply, or when its text exceeds `budget` its first page, the whole result held for
/// `read_more` under `principal`.
pub fn fit(
    reply: ToolReply,
    budget: Option<usize>,
    store: &ContinuationStore,
    principal: &str,
) -> ToolReply {
    let Some(budget) = budget else {
        return reply;
    };
    if reply.diagnostics.summary.is_some() || fits(&reply, budget) {
        return reply;
    }
    let held = Arc::new(Held::split(reply));
    let mut id = None;
    held.page(0, budget, &mut |next| {
        let id = *id.get_or_insert_with(|| store.hold(principal, held.clone()));
        id.map(|id| store.handle(principal, id, next))
    })
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadMoreArgs {
    /// `diagnostics.page.continuation` of the previous page.
    pub continuation: String,
}

/// `read_more`: the page a continuation points at.
pub fn read_more(call: Call<'_>) -> ToolReply {
    let args: ReadMoreArgs = match parse_args("read_more", call.args) {
        Ok(args) => args,
        Err(reply) => return reply,
    };
    let principal = call.owner.as_str();
    let store = &call.shared.pages;
    match store.open(principal, &args.continuation) {
        Ok((id, held, from)) => held.page(from, call.budget.unwrap_or(usize::MAX), &mut |next| {
            Some(store.handle(principal, id, next))
        }),
        Err(OpenError::Expired) => ToolReply::error(
            ErrorKind::ContinuationExpired,
            "the continuation expired or its result was evicted (results are kept SNOWLUMA_MCP_CONTINUATION_TTL_SECS, at most 64 per client and 64 MiB in all)",
            "call the tool again",
        ),
        // Altered, made up, from before a restart or another client's: all the same answer,
        // so a handle's existence elsewhere is never revealed.
        Err(OpenError::Unknown) => ToolReply::error(
            ErrorKind::InvalidArguments,
            "invalid argument `continuation`: not a continuation this server issued to this client",
            "pass diagnostics.page.continuation of a page you received, or call the tool again",
        ),
    }
}

/// A tool's input schema with the `budget` argument every tool accepts.
pub fn with_budget(schema: Arc<Map<String, Value>>) -> Arc<Map<String, Value>> {
    let mut schema = Arc::unwrap_or_clone(schema);
    let properties = schema
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(properties) = properties {
        properties.insert(
            BUDGET_ARG.into(),
            json!({
                "description": "Most characters of this result's text (at least 1000; capped by SNOWLUMA_MCP_RESULT_BUDGET). A larger result is paged: read_more returns the rest.",
                "type": ["integer", "null"],
                "minimum": MIN_BUDGET,
            }),
        );
    }
    Arc::new(schema)
}

/// `diagnostics.page`'s schema.
pub fn page_schema() -> Value {
    json!({
        "type": "object",
        "description": "present when the result is one page of a larger one",
        "properties": {
            "returned": { "type": "integer", "description": "elements in this page" },
            "total": { "type": "integer", "description": "elements in the whole array" },
            "from": { "type": "integer", "description": "index of this page's first element" },
            "path": { "type": "string", "description": "where the paged array is, e.g. result.data" },
            "truncated": { "type": "boolean", "description": "the one element in this page was cut short (marked truncated: true)" },
            "continuation": { "type": ["string", "null"], "description": "pass to read_more for the next page; null on the last" }
        },
        "required": ["returned", "total", "continuation"]
    })
}
