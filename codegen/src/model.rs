//! Serde types for the YAML under `spec/`. Unknown fields are rejected here, so a typo in a
//! field name fails the build with its location instead of being silently ignored.

use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogFile {
    pub version: String,
    pub categories: Vec<CategoryDef>,
    #[serde(default)]
    pub synonyms: Vec<Vec<String>>,
    #[serde(default)]
    pub stopwords: Vec<String>,
    #[serde(default)]
    pub intents: IntentsDef,
}

/// Words that tell what a keyword query wants done; each stands for its synonym groups.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntentsDef {
    /// Words asking to read or list something (`列表`).
    #[serde(default)]
    pub read: Vec<String>,
    /// Words asking to change or send something (`设置`, `删除`, `踢`).
    #[serde(default)]
    pub write: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CategoryDef {
    pub id: String,
    pub name: String,
    pub description: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionFile {
    pub name: String,
    #[serde(default)]
    pub aliases: Vec<String>,
    pub category: String,
    pub summary: String,
    #[serde(default)]
    pub notes: Option<String>,
    /// Why calling this action can hurt the SnowLuma host (process exit, raw packets, host
    /// files, cache wipes); shown by get_action and recommended for a deny list.
    #[serde(default)]
    pub danger: Option<String>,
    pub read_only: bool,
    /// The action sends or forwards something to other people (messages, pokes, likes), so
    /// the send limits count it; only a write can send.
    #[serde(default)]
    pub sends: bool,
    #[serde(default)]
    pub stream: StreamKind,
    #[serde(default)]
    pub keywords: Vec<String>,
    #[serde(default)]
    pub params: Vec<ParamDef>,
    #[serde(default)]
    pub invariants: Vec<InvariantDef>,
    pub returns: ReturnsDef,
    pub examples: Vec<ExampleDef>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StreamKind {
    #[default]
    None,
    Download,
    Upload,
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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParamDef {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: String,
    #[serde(default)]
    pub required: bool,
    #[serde(default)]
    pub default: Option<Value>,
    #[serde(default)]
    pub minimum: Option<i64>,
    #[serde(default)]
    pub maximum: Option<i64>,
    #[serde(default)]
    pub min_length: Option<u64>,
    #[serde(default)]
    pub min_items: Option<u64>,
    #[serde(default)]
    pub item_min_length: Option<u64>,
    #[serde(default)]
    pub non_zero: bool,
    #[serde(default)]
    pub values: Option<Vec<Value>>,
    #[serde(default)]
    pub role: Option<String>,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub undeclared: bool,
    #[serde(default)]
    pub check: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InvariantDef {
    pub text: String,
    #[serde(default)]
    pub any_of: Option<Vec<String>>,
    #[serde(default)]
    pub required_when: Option<RequiredWhen>,
    /// SnowLuma reads `a || b || …` (JavaScript's or: the first truthy value, else the last
    /// one) and needs a JSON string.
    #[serde(default)]
    pub first_truthy_string: Option<Vec<String>>,
}

impl InvariantDef {
    /// How many machine rules the invariant declares (at most one is allowed).
    pub fn rule_count(&self) -> usize {
        usize::from(self.any_of.is_some())
            + usize::from(self.required_when.is_some())
            + usize::from(self.first_truthy_string.is_some())
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequiredWhen {
    pub field: String,
    pub param: String,
    #[serde(rename = "in")]
    pub values: Vec<Value>,
    /// A body check the field must pass when triggered, instead of mere presence.
    #[serde(default)]
    pub check: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReturnsDef {
    pub description: String,
    pub schema: Value,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExampleDef {
    pub summary: String,
    pub params: Value,
    #[serde(default)]
    pub notes: Option<String>,
    #[serde(default)]
    pub action: Option<String>,
    /// Written by the catalog sync from SnowLuma's catalog and not yet checked by a person:
    /// `cargo build` warns about each one and CI fails while any remains.
    #[serde(default)]
    pub review: bool,
}
