//! The bundled catalog: lookups by name or alias, filters, pagination and search, all over
//! the static tables in generated/. Nothing here parses YAML or builds an index at start-up.

mod checks;
mod coerce;
pub mod complete;
pub mod facade;
mod generated;
mod js_number;
mod packed;
pub mod search;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

pub use coerce::{FromParams, ParamError};
pub use generated::actions::{ACTIONS, CATALOG_JSON, CATALOG_VERSION, CATEGORIES};
pub use generated::params;
pub use generated::tools::ACTION_TOOLS;

/// One action's typed MCP tool (generated/tools.rs), index-aligned with [`ACTIONS`].
pub struct ActionTool {
    /// The tool's name: the action's name, or a safe spelling of it when the action's name has
    /// characters LLM APIs refuse in tool names (`.get_word_slices` -> `_get_word_slices`).
    pub name: &'static str,
    /// The action's real name, as SnowLuma knows it.
    pub action: &'static str,
    pub description: &'static str,
    /// The action's params schema, as JSON text.
    pub input_schema: &'static str,
    /// SnowLuma's envelope with the action's returnsSchema as `data`, as JSON text.
    pub envelope_schema: &'static str,
}

/// How SnowLuma answers an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    /// One JSON envelope.
    None,
    /// Frames carrying a file from SnowLuma to the caller.
    Download,
    /// One frame per chunk call, carrying a file to SnowLuma.
    Upload,
    /// A sequence of data frames.
    Frames,
}

impl StreamKind {
    pub fn as_str(self) -> &'static str {
        match self {
            StreamKind::None => "none",
            StreamKind::Download => "download",
            StreamKind::Upload => "upload",
            StreamKind::Frames => "frames",
        }
    }
}

pub struct CategoryMeta {
    pub id: &'static str,
    pub name: &'static str,
    pub description: &'static str,
    pub count: usize,
}

/// Static metadata of one action; the full contract is a slice of [`CATALOG_JSON`].
pub struct ActionMeta {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub category: usize,
    pub summary: &'static str,
    pub read_only: bool,
    /// What the action can do to the SnowLuma host, for actions a deny list should name.
    pub danger: Option<&'static str>,
    /// Sends or forwards something to other people; counted by the send limits (`guard`).
    pub sends: bool,
    pub stream: StreamKind,
    pub required: &'static [&'static str],
    pub contract: (u32, u32),
    pub check: fn(&Map<String, Value>) -> Result<(), ParamError>,
}

impl ActionMeta {
    pub fn category(&self) -> &'static CategoryMeta {
        &CATEGORIES[self.category]
    }

    pub fn is_stream(&self) -> bool {
        self.stream != StreamKind::None
    }

    /// The full contract (params, inputSchema, returnsSchema, examples) as JSON text.
    pub fn contract_json(&self) -> &'static str {
        &CATALOG_JSON[self.contract.0 as usize..self.contract.1 as usize]
    }

    /// The compact entry used by list and search results.
    pub fn compact(&self) -> CompactEntry {
        CompactEntry {
            name: self.name,
            aliases: self.aliases,
            category: self.category().id,
            category_name: self.category().name,
            summary: self.summary,
            read_only: self.read_only,
            stream: self.is_stream(),
            stream_kind: self.is_stream().then(|| self.stream.as_str()),
            score: None,
            denied: None,
        }
    }

    /// Checks params with SnowLuma's coercion rules and the catalog's bounds and invariants.
    pub fn check_params(&self, params: &Map<String, Value>) -> Result<(), ParamError> {
        (self.check)(params)
    }
}

/// An action found by name, remembering the alias it was asked for.
#[derive(Clone, Copy)]
pub struct Resolved {
    pub index: usize,
    pub meta: &'static ActionMeta,
    pub alias: Option<&'static str>,
}

pub fn resolve(name: &str) -> Option<Resolved> {
    let (index, is_alias) = generated::actions::lookup(name)?;
    let meta = &ACTIONS[index];
    let alias = is_alias
        .then(|| meta.aliases.iter().copied().find(|a| *a == name))
        .flatten();
    Some(Resolved { index, meta, alias })
}

/// Longest action name or search query looked at: longer input is refused before any lookup,
/// so an oversized name never reaches the edit-distance suggestions.
pub const MAX_NAME_CHARS: usize = 256;

/// A name that is neither an action nor an alias, with the closest known names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownAction {
    pub name: String,
    pub similar: Vec<&'static str>,
    /// The name's length in characters, when it was refused for being over [`MAX_NAME_CHARS`].
    pub too_long: Option<usize>,
}

impl std::fmt::Display for UnknownAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(length) = self.too_long {
            return write!(
                f,
                "the action name has {length} characters; names are at most {MAX_NAME_CHARS}"
            );
        }
        write!(
            f,
            "`{}` is not an action or alias in the bundled catalog (SnowLuma {CATALOG_VERSION})",
            self.name
        )
    }
}

impl UnknownAction {
    /// What to do instead: the nearest names, or how to search.
    pub fn next_step(&self) -> String {
        if self.similar.is_empty() {
            return "find the action with search_actions (e.g. match=\"keywords\") or list_actions"
                .to_string();
        }
        let names: Vec<String> = self.similar.iter().map(|s| format!("`{s}`")).collect();
        format!(
            "did you mean {}? search_actions finds actions by keyword",
            names.join(", ")
        )
    }
}

/// Looks up an action by name or alias (surrounding white space ignored).
pub fn lookup(name: &str) -> Result<Resolved, UnknownAction> {
    let name = name.trim();
    let length = name.chars().count();
    if length > MAX_NAME_CHARS {
        return Err(UnknownAction {
            name: name.chars().take(32).collect(),
            similar: Vec::new(),
            too_long: Some(length),
        });
    }
    resolve(name).ok_or_else(|| UnknownAction {
        name: name.to_string(),
        similar: similar_names(name, 3),
        too_long: None,
    })
}

/// Up to `limit` names closest to `wrong`, for "did you mean" hints.
pub fn similar_names(wrong: &str, limit: usize) -> Vec<&'static str> {
    let wrong = wrong.to_lowercase();
    let mut scored: Vec<(usize, &'static str)> = ACTIONS
        .iter()
        .flat_map(|a| std::iter::once(a.name).chain(a.aliases.iter().copied()))
        .map(|name| (strsim::levenshtein(&wrong, name), name))
        .filter(|(d, name)| *d <= name.len().max(3) / 2)
        .collect();
    scored.sort();
    scored.into_iter().take(limit).map(|(_, n)| n).collect()
}

pub fn find_category(key: &str) -> Option<usize> {
    CATEGORIES.iter().position(|c| c.id == key || c.name == key)
}

/// The filters shared by `list_actions` and `search_actions`.
#[derive(Debug, Default, Clone, Copy)]
pub struct Filter {
    pub category: Option<usize>,
    pub read_only: Option<bool>,
    pub stream: Option<bool>,
}

impl Filter {
    pub fn is_empty(&self) -> bool {
        self.category.is_none() && self.read_only.is_none() && self.stream.is_none()
    }

    pub fn matches(&self, action: &ActionMeta) -> bool {
        self.category.is_none_or(|c| action.category == c)
            && self.read_only.is_none_or(|r| action.read_only == r)
            && self.stream.is_none_or(|s| action.is_stream() == s)
    }
}

/// Optional pagination. Without it, listings keep their original `{count, actions}` shape.
#[derive(Debug, Default, Clone, Copy)]
pub struct Page {
    pub limit: Option<usize>,
    pub offset: Option<usize>,
}

impl Page {
    pub fn is_requested(&self) -> bool {
        self.limit.is_some() || self.offset.is_some()
    }

    /// `{count, actions}` or, with pagination, `{count, total, next_offset, actions}`, where
    /// count is the page size.
    pub fn render(&self, entries: Vec<CompactEntry>) -> Listing {
        if !self.is_requested() {
            return Listing {
                count: entries.len(),
                total: None,
                next_offset: None,
                actions: entries,
            };
        }
        let total = entries.len();
        let offset = self.offset.unwrap_or(0).min(total);
        let limit = self.limit.unwrap_or(total);
        let page: Vec<CompactEntry> = entries.into_iter().skip(offset).take(limit).collect();
        let end = offset + page.len();
        Listing {
            count: page.len(),
            total: Some(total),
            next_offset: Some((end < total).then_some(end)),
            actions: page,
        }
    }
}

/// One action in a listing or search result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CompactEntry {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    /// Category id.
    pub category: &'static str,
    /// Category name in Chinese.
    pub category_name: &'static str,
    pub summary: &'static str,
    pub read_only: bool,
    pub stream: bool,
    /// `download`, `upload` or `frames`; stream actions only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_kind: Option<&'static str>,
    /// Keyword relevance (keywords mode only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<u32>,
    /// True when this server's allow or deny list keeps the action from running.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub denied: Option<bool>,
}

/// A listing or search result page.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Listing {
    /// Entries in this response.
    pub count: usize,
    /// All matching entries (with pagination only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<usize>,
    /// Offset of the next page, null on the last (with pagination only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<Option<usize>>,
    pub actions: Vec<CompactEntry>,
}
