//! What spec/ says that upstream's catalog does not (our result schemas, examples, body
//! checks, params SnowLuma reads unchecked, machine-checked invariants): kept, never drift.

use serde::Serialize;
use serde_json::Value;

use super::upstream::{UpstreamAction, UpstreamRule, parse_rule};
use crate::model::ActionFile;

/// What spec/ says that upstream does not: kept, never drift.
#[derive(Debug, Default, Serialize)]
pub struct Kept {
    pub returns_schema_where_upstream_has_none: Vec<String>,
    pub returns_schema_refining_upstream: Vec<String>,
    pub actions_with_examples: usize,
    pub undeclared_params: Vec<String>,
    pub body_checks: Vec<String>,
    pub machine_rules: Vec<String>,
}

fn strip_descriptions(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| k.as_str() != "description")
                .map(|(k, v)| (k.clone(), strip_descriptions(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(strip_descriptions).collect()),
        other => other.clone(),
    }
}

pub fn collect_kept(action: &ActionFile, up: Option<&UpstreamAction>, kept: &mut Kept) {
    let name = &action.name;
    match up.and_then(|u| u.returns_schema.as_ref()) {
        None => kept
            .returns_schema_where_upstream_has_none
            .push(name.clone()),
        Some(theirs)
            if strip_descriptions(theirs) != strip_descriptions(&action.returns.schema) =>
        {
            kept.returns_schema_refining_upstream.push(name.clone())
        }
        Some(_) => {}
    }
    if !action.examples.is_empty() {
        kept.actions_with_examples += 1;
    }
    for param in &action.params {
        if param.undeclared {
            kept.undeclared_params
                .push(format!("{name}.{}", param.name));
        }
        if let Some(check) = &param.check {
            kept.body_checks
                .push(format!("{name}.{}: {check}", param.name));
        }
    }
    let stated: Vec<UpstreamRule> = up
        .map(|u| u.invariants.iter().filter_map(|t| parse_rule(t)).collect())
        .unwrap_or_default();
    for invariant in &action.invariants {
        if let Some(fields) = &invariant.any_of {
            kept.machine_rules
                .push(format!("{name}: any_of [{}]", fields.join(", ")));
        }
        if let Some(fields) = &invariant.first_truthy_string {
            kept.machine_rules.push(format!(
                "{name}: first_truthy_string [{}]",
                fields.join(", ")
            ));
        }
        if let Some(rule) = &invariant.required_when {
            let upstream_says = stated.iter().any(|s| {
                matches!(s, UpstreamRule::RequiredWhen { field, param, .. } if *field == rule.field && *param == rule.param)
            });
            if !upstream_says || rule.check.is_some() {
                kept.machine_rules.push(format!(
                    "{name}: required_when {} ({})",
                    rule.field, rule.param
                ));
            }
        }
    }
}
