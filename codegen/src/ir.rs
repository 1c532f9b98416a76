//! The checked catalog, ready to emit. Emit modules read only this, never the YAML model:
//! each action keeps its spec name beside the Rust identifiers derived from it.

use serde_json::Value;

use crate::load::Spec;
use crate::model::StreamKind;
use crate::schema::input_schema;

pub struct Catalog {
    pub version: String,
    pub categories: Vec<Category>,
    /// In category order, then by name: the order every listing uses.
    pub actions: Vec<Action>,
    pub synonyms: Vec<Vec<String>>,
    pub stopwords: Vec<String>,
    pub intents: crate::model::IntentsDef,
}

pub struct Category {
    pub id: String,
    pub name: String,
    pub description: String,
    pub count: usize,
}

pub struct Action {
    pub name: String,
    /// `SendGroupMsgParams`
    pub struct_ident: String,
    /// `send_group_msg` (leading dots and underscores spelled out)
    pub fn_ident: String,
    /// The typed tool's name: the action's name where it is a valid MCP tool name for every
    /// client (`^[a-zA-Z0-9_-]{1,64}$`), else a safe spelling of it (`.get_word_slices` ->
    /// `_get_word_slices`); the real name stays in the description and `_meta`.
    pub tool_name: String,
    pub aliases: Vec<String>,
    pub category: usize,
    pub summary: String,
    pub notes: Option<String>,
    /// What the action can do to the SnowLuma host, for actions worth denying.
    pub danger: Option<String>,
    pub read_only: bool,
    /// Counted by the send limits.
    pub sends: bool,
    pub stream: StreamKind,
    pub keywords: Vec<String>,
    pub params: Vec<Param>,
    pub invariants: Vec<Invariant>,
    pub input_schema: Value,
    pub returns_description: String,
    pub returns_schema: Value,
    pub examples: Vec<Example>,
}

pub struct Param {
    pub name: String,
    pub field_ident: String,
    pub ty: String,
    pub required: bool,
    pub default: Option<Value>,
    pub minimum: Option<i64>,
    pub maximum: Option<i64>,
    pub min_length: Option<u64>,
    pub min_items: Option<u64>,
    pub item_min_length: Option<u64>,
    pub non_zero: bool,
    pub values: Vec<Value>,
    pub role: Option<String>,
    pub description: String,
    pub undeclared: bool,
    /// A check SnowLuma makes in the action's body (`truthy`, `even_hex` …).
    pub check: Option<String>,
}

pub enum Rule {
    AnyOf(Vec<String>),
    RequiredWhen {
        field: String,
        param: String,
        values: Vec<Value>,
        /// A body check the field must pass when triggered, instead of mere presence.
        check: Option<String>,
    },
    FirstTruthyString(Vec<String>),
    Documented,
}

pub struct Invariant {
    pub text: String,
    pub rule: Rule,
}

pub struct Example {
    pub summary: String,
    pub action: Option<String>,
    pub params: Value,
    pub notes: Option<String>,
}

pub fn lower(spec: &Spec) -> Catalog {
    let catalog = &spec.catalog.value;
    let category_index = |id: &str| {
        catalog
            .categories
            .iter()
            .position(|c| c.id == id)
            .unwrap_or(0)
    };
    let mut actions: Vec<Action> = spec
        .actions
        .iter()
        .map(|source| {
            let a = &source.value;
            Action {
                name: a.name.clone(),
                struct_ident: format!("{}Params", pascal_case(&a.name)),
                fn_ident: snake_ident(&a.name),
                tool_name: tool_name(&a.name),
                aliases: a.aliases.clone(),
                category: category_index(&a.category),
                summary: a.summary.trim().to_string(),
                notes: a.notes.as_ref().map(|n| n.trim().to_string()),
                danger: a.danger.as_ref().map(|d| d.trim().to_string()),
                read_only: a.read_only,
                sends: a.sends,
                stream: a.stream,
                keywords: a.keywords.clone(),
                params: lower_params(&a.params),
                invariants: a
                    .invariants
                    .iter()
                    .map(|i| Invariant {
                        text: i.text.trim().to_string(),
                        rule: match (&i.any_of, &i.required_when, &i.first_truthy_string) {
                            (Some(fields), ..) => Rule::AnyOf(fields.clone()),
                            (None, Some(r), _) => Rule::RequiredWhen {
                                field: r.field.clone(),
                                param: r.param.clone(),
                                values: r.values.clone(),
                                check: r.check.clone(),
                            },
                            (None, None, Some(fields)) => Rule::FirstTruthyString(fields.clone()),
                            (None, None, None) => Rule::Documented,
                        },
                    })
                    .collect(),
                input_schema: input_schema(&a.params),
                returns_description: a.returns.description.trim().to_string(),
                returns_schema: a.returns.schema.clone(),
                examples: a
                    .examples
                    .iter()
                    .map(|e| Example {
                        summary: e.summary.trim().to_string(),
                        action: e.action.clone(),
                        params: e.params.clone(),
                        notes: e.notes.as_ref().map(|n| n.trim().to_string()),
                    })
                    .collect(),
            }
        })
        .collect();
    actions.sort_by(|a, b| (a.category, &a.name).cmp(&(b.category, &b.name)));
    let categories = catalog
        .categories
        .iter()
        .enumerate()
        .map(|(i, c)| Category {
            id: c.id.clone(),
            name: c.name.clone(),
            description: c.description.clone(),
            count: actions.iter().filter(|a| a.category == i).count(),
        })
        .collect();
    Catalog {
        version: catalog.version.clone(),
        categories,
        actions,
        synonyms: catalog.synonyms.clone(),
        stopwords: catalog.stopwords.clone(),
        intents: catalog.intents.clone(),
    }
}

fn lower_params(params: &[crate::model::ParamDef]) -> Vec<Param> {
    let mut used = std::collections::BTreeSet::new();
    params
        .iter()
        .map(|p| {
            let mut ident = snake_ident(&p.name);
            while !used.insert(ident.clone()) {
                ident.push_str("_alt");
            }
            Param {
                name: p.name.clone(),
                field_ident: ident,
                ty: p.ty.clone(),
                required: p.required,
                default: p.default.clone(),
                minimum: p.minimum,
                maximum: p.maximum,
                min_length: p.min_length,
                min_items: p.min_items,
                item_min_length: p.item_min_length,
                non_zero: p.non_zero,
                values: p.values.clone().unwrap_or_default(),
                role: p.role.clone(),
                description: p.description.trim().to_string(),
                undeclared: p.undeclared,
                check: p.check.clone(),
            }
        })
        .collect()
}

/// `get_group_info` -> `GetGroupInfo`; `.ocr_image` -> `DotOcrImage`; `_get_model_show` ->
/// `UnderGetModelShow`.
pub fn pascal_case(name: &str) -> String {
    let mut out = String::new();
    if name.starts_with('.') {
        out.push_str("Dot");
    } else if name.starts_with('_') {
        out.push_str("Under");
    }
    for word in snake_words(name) {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            out.extend(first.to_uppercase());
            out.push_str(chars.as_str());
        }
    }
    out
}

/// Whether `name` is a tool name that LLM APIs accept (OpenAI, Anthropic and Gemini all limit
/// function names to `^[a-zA-Z0-9_-]{1,64}$`).
pub fn is_portable_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The typed tool name of an action: each character outside `[a-zA-Z0-9_-]` becomes `_`,
/// cut to 64 characters. validate.rs checks that no two actions end up with the same one.
pub fn tool_name(action: &str) -> String {
    action
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

/// A valid Rust snake_case identifier for any spec name (`picUrl` -> `pic_url`).
pub fn snake_ident(name: &str) -> String {
    let mut words = snake_words(name);
    if name.starts_with('.') {
        words.insert(0, "dot".into());
    } else if name.starts_with('_') {
        words.insert(0, "under".into());
    }
    let mut ident = words.join("_");
    if ident.is_empty() || ident.starts_with(|c: char| c.is_ascii_digit()) {
        ident.insert_str(0, "p_");
    }
    if syn::parse_str::<syn::Ident>(&ident).is_err() {
        ident.push('_');
    }
    ident
}

fn snake_words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if !c.is_ascii_alphanumeric() {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            previous_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && previous_lower && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        current.push(c.to_ascii_lowercase());
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}
