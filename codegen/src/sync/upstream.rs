//! SnowLuma's own machine-readable catalog (`packages/mcp/src/generated/catalog.json` in its
//! source), and the one shape both sides are compared in: a param's contract as a JSON Schema
//! fragment without its prose.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::model::ParamDef;
use crate::schema::param_schema;

#[derive(Debug, Clone, Deserialize)]
pub struct UpstreamCatalog {
    pub actions: Vec<UpstreamAction>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpstreamAction {
    pub name: String,
    #[serde(default)]
    pub aliases: Vec<String>,
    #[serde(default)]
    pub summary: Option<String>,
    #[serde(default)]
    pub returns: Option<String>,
    #[serde(default)]
    pub returns_schema: Option<Value>,
    pub read_only: bool,
    #[serde(default)]
    pub stream: bool,
    #[serde(default)]
    pub params: Vec<UpstreamParam>,
    #[serde(default)]
    pub invariants: Vec<String>,
    /// The Chinese category name (`空间`), as in catalog.yaml's `name`.
    pub category: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct UpstreamParam {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: String,
    #[serde(default)]
    pub required: bool,
    #[serde(default)]
    pub role: Option<String>,
    #[serde(default)]
    pub schema: Value,
    #[serde(default)]
    pub desc: Option<String>,
    #[serde(default)]
    pub default: Option<Value>,
}

impl UpstreamCatalog {
    pub fn parse(text: &str) -> Result<Self, String> {
        serde_json::from_str(text)
            .map_err(|e| format!("not a SnowLuma catalog.json (expected {{actions: [...]}}): {e}"))
    }

    pub fn action(&self, name: &str) -> Option<&UpstreamAction> {
        self.actions.iter().find(|a| a.name == name)
    }
}

/// The spec's spelling of an upstream param type.
pub fn spec_type(upstream: &str) -> String {
    match upstream {
        "messageId" => "message_id".into(),
        other => other.into(),
    }
}

/// An invariant SnowLuma states in words that this catalog can check by machine.
#[derive(Debug, Clone, PartialEq)]
pub enum UpstreamRule {
    /// `ugc_right must be one of 1, 4, 16, 64, 128`: the param's `values`.
    OneOf { param: String, values: Vec<Value> },
    /// `target_uins is required when ugc_right is 16 or 128`.
    RequiredWhen {
        field: String,
        param: String,
        values: Vec<Value>,
    },
}

fn literals(list: &str) -> Vec<Value> {
    list.split(", ")
        .flat_map(|part| part.split(" or "))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| match s.parse::<i64>() {
            Ok(n) => json!(n),
            Err(_) => json!(s.trim_matches(['"', '\''])),
        })
        .collect()
}

fn is_name(word: &str) -> bool {
    !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Reads the two sentence forms SnowLuma's catalog generator writes; anything else stays text.
pub fn parse_rule(text: &str) -> Option<UpstreamRule> {
    if let Some((param, list)) = text.split_once(" must be one of ") {
        return is_name(param).then(|| UpstreamRule::OneOf {
            param: param.into(),
            values: literals(list),
        });
    }
    let (field, rest) = text.split_once(" is required when ")?;
    let (param, list) = rest.split_once(" is ")?;
    (is_name(field) && is_name(param)).then(|| UpstreamRule::RequiredWhen {
        field: field.into(),
        param: param.into(),
        values: literals(list),
    })
}

fn strip_prose(value: &mut Value) {
    if let Value::Object(map) = value {
        map.remove("description");
        map.remove("x-role");
        map.remove("x-undeclared");
        map.remove("default");
        for child in map.values_mut() {
            strip_prose(child);
        }
    }
}

/// Upstream's param contract: its schema without prose, with a `must be one of` invariant
/// folded in as `enum`.
pub fn upstream_contract(param: &UpstreamParam, rules: &[UpstreamRule]) -> Map<String, Value> {
    let mut schema = param.schema.clone();
    strip_prose(&mut schema);
    let mut map = schema.as_object().cloned().unwrap_or_default();
    for rule in rules {
        if let UpstreamRule::OneOf { param: p, values } = rule
            && *p == param.name
        {
            map.insert("enum".into(), json!(values));
        }
    }
    map
}

/// Our param contract in the same shape. What our own body checks add (an even-hex pattern,
/// the strings `as_string_in` accepts) is ours and left out.
pub fn spec_contract(param: &ParamDef) -> Map<String, Value> {
    let mut schema = param_schema(param);
    strip_prose(&mut schema);
    let mut map = schema.as_object().cloned().unwrap_or_default();
    match param.check.as_deref() {
        Some("even_hex") => {
            map.remove("pattern");
        }
        Some("as_string_in") => {
            map.remove("enum");
        }
        _ => {}
    }
    if param.ty == "message" {
        map.clear();
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sentence_forms_parse() {
        assert_eq!(
            parse_rule("ugc_right must be one of 1, 4, 16, 64, 128"),
            Some(UpstreamRule::OneOf {
                param: "ugc_right".into(),
                values: vec![json!(1), json!(4), json!(16), json!(64), json!(128)],
            })
        );
        assert_eq!(
            parse_rule("target_uins is required when ugc_right is 16 or 128"),
            Some(UpstreamRule::RequiredWhen {
                field: "target_uins".into(),
                param: "ugc_right".into(),
                values: vec![json!(16), json!(128)],
            })
        );
        assert_eq!(parse_rule("either a or b, not both"), None);
    }
}
