//! The YAML file of an action SnowLuma added: params, invariants, summary and returnsSchema as
//! its catalog states them, and one example built from the required params, marked
//! `review: true` so the build warns until a person has checked it.

use std::fmt::Write;

use serde_json::{Map, Value, json};

use super::yaml::flow;
use crate::schema::ROLES;
use crate::sync::upstream::{UpstreamAction, UpstreamParam, UpstreamRule, parse_rule, spec_type};

/// The spec fields of one upstream param, in the spec's order.
pub fn param_fields(param: &UpstreamParam, rules: &[UpstreamRule]) -> Vec<(&'static str, Value)> {
    let ty = spec_type(&param.ty);
    let schema = &param.schema;
    let mut fields = vec![("name", json!(param.name)), ("type", json!(ty))];
    if param.required {
        fields.push(("required", json!(true)));
    }
    if let Some(default) = &param.default {
        fields.push(("default", default.clone()));
    }
    if let Some(min) = schema
        .get("minimum")
        .filter(|m| !(ty == "uint" && **m == json!(1)))
    {
        fields.push(("minimum", min.clone()));
    }
    if let Some(max) = schema.get("maximum") {
        fields.push(("maximum", max.clone()));
    }
    if let Some(n) = schema.get("minLength") {
        fields.push(("min_length", n.clone()));
    }
    if let Some(n) = schema.get("minItems") {
        fields.push(("min_items", n.clone()));
    }
    if let Some(n) = schema.pointer("/items/minLength") {
        fields.push(("item_min_length", n.clone()));
    }
    if ty == "int" && schema.get("not") == Some(&json!({ "const": 0 })) {
        fields.push(("non_zero", json!(true)));
    }
    let one_of = rules.iter().find_map(|r| match r {
        UpstreamRule::OneOf { param: p, values } if *p == param.name => Some(json!(values)),
        _ => None,
    });
    if let Some(values) = one_of.or_else(|| schema.get("enum").cloned()) {
        fields.push(("values", values));
    }
    if let Some(role) = param.role.as_deref().filter(|r| ROLES.contains(r)) {
        fields.push(("role", json!(role)));
    }
    let description = param.desc.clone().unwrap_or_else(|| param.name.clone());
    fields.push(("description", json!(description)));
    fields
}

/// One param as a block list item, indented under `params:`.
pub fn param_block(param: &UpstreamParam, rules: &[UpstreamRule], indent: &str) -> String {
    let mut out = String::new();
    for (i, (key, value)) in param_fields(param, rules).into_iter().enumerate() {
        let lead = if i == 0 { "- " } else { "  " };
        let _ = writeln!(out, "{indent}{lead}{key}: {}", flow(&value));
    }
    out
}

/// A value for a required param that passes its declared checks.
fn placeholder(param: &UpstreamParam, rules: &[UpstreamRule]) -> Value {
    let fields: Map<String, Value> = param_fields(param, rules)
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    if let Some(first) = fields.get("values").and_then(|v| v.get(0)) {
        return first.clone();
    }
    let id = match param.role.as_deref() {
        Some("group_id") => json!(20001),
        Some("user_id" | "member_id") => json!(30001),
        Some("message_id") => json!(-123456),
        _ => json!(1),
    };
    match spec_type(&param.ty).as_str() {
        "uint" | "int" | "number" => match fields.get("minimum").and_then(Value::as_i64) {
            Some(min) if min > id.as_i64().unwrap_or(1) => json!(min),
            _ => id,
        },
        "message_id" => json!(-123456),
        "bool" => json!(true),
        "string[]" => json!(["示例"]),
        "uint[]" => json!([30001]),
        _ => json!("示例"),
    }
}

pub fn yaml(action: &UpstreamAction, category: &str, stream_kind: &str) -> String {
    let rules: Vec<UpstreamRule> = action
        .invariants
        .iter()
        .filter_map(|t| parse_rule(t))
        .collect();
    let mut out = String::new();
    out.push_str(
        "# Written by catalog-sync from SnowLuma's catalog.json. Check every field against\n",
    );
    out.push_str(
        "# SnowLuma's handler, write the summary and descriptions in our style, then delete the\n",
    );
    out.push_str("# examples' `review: true` (README, \"Adding an action\").\n");
    let _ = writeln!(out, "name: {}", flow(&json!(action.name)));
    if !action.aliases.is_empty() {
        let _ = writeln!(out, "aliases: {}", flow(&json!(action.aliases)));
    }
    let _ = writeln!(out, "category: {category}");
    let summary = action
        .summary
        .clone()
        .unwrap_or_else(|| action.name.clone());
    let _ = writeln!(out, "summary: {}", flow(&json!(summary)));
    let _ = writeln!(out, "read_only: {}", action.read_only);
    if action.stream {
        let _ = writeln!(out, "stream: {stream_kind}");
    }
    if !action.params.is_empty() {
        out.push_str("params:\n");
        for param in &action.params {
            out.push_str(&param_block(param, &rules, "  "));
        }
    }
    if !action.invariants.is_empty() {
        out.push_str("invariants:\n");
        for text in &action.invariants {
            let _ = writeln!(out, "  - text: {}", flow(&json!(text)));
            if let Some(UpstreamRule::RequiredWhen {
                field,
                param,
                values,
            }) = parse_rule(text)
            {
                let rule = json!({ "field": field, "param": param, "in": values });
                let _ = writeln!(out, "    required_when: {}", flow(&rule));
            }
        }
    }
    out.push_str("returns:\n");
    let description = action
        .returns
        .clone()
        .unwrap_or_else(|| "SnowLuma 的 catalog 没有说明返回值；请按 handler 补充。".into());
    let _ = writeln!(out, "  description: {}", flow(&json!(description)));
    let schema = action.returns_schema.clone().unwrap_or(json!({}));
    let _ = writeln!(out, "  schema: {}", flow(&schema));
    out.push_str("examples:\n");
    let names = std::iter::once(None).chain(action.aliases.iter().map(Some));
    for called in names {
        let params: Map<String, Value> = action
            .params
            .iter()
            .filter(|p| p.required)
            .map(|p| (p.name.clone(), placeholder(p, &rules)))
            .collect();
        let _ = writeln!(
            out,
            "  - summary: {}",
            flow(&json!(format!(
                "调用 {}（由 catalog-sync 生成，待核对）",
                called.unwrap_or(&action.name)
            )))
        );
        if let Some(alias) = called {
            let _ = writeln!(out, "    action: {}", flow(&json!(alias)));
        }
        let _ = writeln!(out, "    params: {}", flow(&Value::Object(params)));
        out.push_str("    review: true\n");
    }
    out
}
