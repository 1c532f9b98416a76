//! The comparison: SnowLuma's catalog.json against spec/. Structure (actions, aliases, flags,
//! params and their constraints, machine-readable invariants) is compared with spec/ itself;
//! prose and result schemas, which spec/ rewrites, are compared with the upstream catalog the
//! spec was last synced from (`spec/upstream-catalog.json`), so only upstream's own changes
//! show. What spec/ adds is kept; what `spec/upstream-differences.yaml` lists is deliberate.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::{Value, json};

use super::differences::{Difference, Differences};
use super::kept::{Kept, collect_kept};
use super::upstream::{
    UpstreamAction, UpstreamCatalog, UpstreamRule, parse_rule, spec_contract, spec_type,
    upstream_contract,
};
use crate::load::Spec;
use crate::model::{ActionFile, StreamKind};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Upstream has it, spec/ does not.
    Added,
    /// spec/ has it, upstream does not.
    Removed,
    /// The same thing under a new name (`from` -> `to`).
    Renamed,
    /// spec/ says `from`, upstream says `to`.
    Changed,
    /// Upstream's own text or result schema moved from `from` (last sync) to `to`.
    ChangedUpstream,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    pub action: String,
    /// `action`, `aliases.<alias>`, `read_only`, `params.<name>.<facet>`, `summary` …
    pub field: String,
    pub kind: Kind,
    #[serde(skip_serializing_if = "Value::is_null")]
    pub from: Value,
    #[serde(skip_serializing_if = "Value::is_null")]
    pub to: Value,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub catalog_version: String,
    pub upstream_actions: usize,
    pub spec_actions: usize,
    /// Whether `spec/upstream-catalog.json` was there to compare upstream's prose with.
    pub baseline: bool,
    pub drift: Vec<Change>,
    pub deliberate: Vec<Change>,
    pub stale_differences: Vec<Difference>,
    pub kept: Kept,
}

impl Report {
    pub fn is_clean(&self) -> bool {
        self.drift.is_empty() && self.stale_differences.is_empty()
    }
}

fn change(action: &str, field: impl Into<String>, kind: Kind, from: Value, to: Value) -> Change {
    Change {
        action: action.to_string(),
        field: field.into(),
        kind,
        from,
        to,
    }
}

/// The params that make an action's shape: names, types and required flags.
fn upstream_signature(action: &UpstreamAction) -> Vec<(String, String, bool)> {
    action
        .params
        .iter()
        .map(|p| (p.name.clone(), spec_type(&p.ty), p.required))
        .collect()
}

fn spec_signature(action: &ActionFile) -> Vec<(String, String, bool)> {
    action
        .params
        .iter()
        .filter(|p| !p.undeclared)
        .map(|p| (p.name.clone(), p.ty.clone(), p.required))
        .collect()
}

pub fn compare(
    spec: &Spec,
    upstream: &UpstreamCatalog,
    baseline: Option<&UpstreamCatalog>,
    differences: &Differences,
) -> Report {
    let ours = |name: &str| spec.actions.iter().find(|a| a.value.name == name);
    let mut found = Vec::new();
    let mut added: Vec<&UpstreamAction> = upstream
        .actions
        .iter()
        .filter(|a| ours(&a.name).is_none())
        .collect();
    // Removed upstream: in spec/, not in this catalog, but in the one spec/ was last synced
    // from. An action that catalog never had either was added to spec/ by hand (README "Adding
    // an action"): it is ours, like a returnsSchema upstream lacks, not drift.
    let mut removed: Vec<&ActionFile> = spec
        .actions
        .iter()
        .map(|s| &s.value)
        .filter(|a| upstream.action(&a.name).is_none())
        .filter(|a| baseline.is_none_or(|b| b.action(&a.name).is_some()))
        .collect();
    // A rename: one new and one vanished action with the same non-empty param shape.
    let pairs: Vec<(String, String)> = removed
        .iter()
        .filter_map(|old| {
            let shape = spec_signature(old);
            let matches: Vec<_> = added
                .iter()
                .filter(|new| !shape.is_empty() && upstream_signature(new) == shape)
                .collect();
            (matches.len() == 1).then(|| (old.name.clone(), matches[0].name.clone()))
        })
        .collect();
    for (old, new) in &pairs {
        found.push(change(old, "action", Kind::Renamed, json!(old), json!(new)));
        added.retain(|a| &a.name != new);
        removed.retain(|a| &a.name != old);
    }
    for action in added {
        let summary = action.summary.clone().unwrap_or_default();
        found.push(change(
            &action.name,
            "action",
            Kind::Added,
            Value::Null,
            json!(summary),
        ));
    }
    for action in removed {
        found.push(change(
            &action.name,
            "action",
            Kind::Removed,
            json!(action.summary.trim()),
            Value::Null,
        ));
    }
    let mut kept = Kept::default();
    for source in &spec.actions {
        let action = &source.value;
        collect_kept(action, upstream.action(&action.name), &mut kept);
        let Some(up) = upstream.action(&action.name) else {
            continue;
        };
        let category = spec
            .catalog
            .value
            .categories
            .iter()
            .find(|c| c.id == action.category)
            .map(|c| c.name.as_str())
            .unwrap_or_default();
        compare_action(action, category, up, &mut found);
        if let Some(before) = baseline.and_then(|b| b.action(&action.name)) {
            compare_upstream_text(before, up, &mut found);
        }
    }
    let mut drift = Vec::new();
    let mut deliberate = Vec::new();
    let mut used = BTreeSet::new();
    for item in found {
        match differences
            .differences
            .iter()
            .position(|d| d.covers(&item.action, &item.field))
        {
            Some(index) => {
                used.insert(index);
                deliberate.push(item);
            }
            None => drift.push(item),
        }
    }
    let stale_differences = differences
        .differences
        .iter()
        .enumerate()
        .filter(|(i, _)| !used.contains(i))
        .map(|(_, d)| d.clone())
        .collect();
    Report {
        catalog_version: spec.catalog.value.version.clone(),
        upstream_actions: upstream.actions.len(),
        spec_actions: spec.actions.len(),
        baseline: baseline.is_some(),
        drift,
        deliberate,
        stale_differences,
        kept,
    }
}

fn compare_action(
    action: &ActionFile,
    category: &str,
    up: &UpstreamAction,
    found: &mut Vec<Change>,
) {
    let name = action.name.as_str();
    let ours: BTreeSet<&String> = action.aliases.iter().collect();
    let theirs: BTreeSet<&String> = up.aliases.iter().collect();
    for alias in theirs.difference(&ours) {
        found.push(change(
            name,
            format!("aliases.{alias}"),
            Kind::Added,
            Value::Null,
            json!(alias),
        ));
    }
    for alias in ours.difference(&theirs) {
        found.push(change(
            name,
            format!("aliases.{alias}"),
            Kind::Removed,
            json!(alias),
            Value::Null,
        ));
    }
    if action.read_only != up.read_only {
        found.push(change(
            name,
            "read_only",
            Kind::Changed,
            json!(action.read_only),
            json!(up.read_only),
        ));
    }
    let stream = action.stream != StreamKind::None;
    if stream != up.stream {
        found.push(change(
            name,
            "stream",
            Kind::Changed,
            json!(action.stream.as_str()),
            json!(up.stream),
        ));
    }
    if category != up.category {
        found.push(change(
            name,
            "category",
            Kind::Changed,
            json!(category),
            json!(up.category),
        ));
    }
    let rules: Vec<UpstreamRule> = up.invariants.iter().filter_map(|t| parse_rule(t)).collect();
    compare_params(action, up, &rules, found);
    for rule in &rules {
        let UpstreamRule::RequiredWhen {
            field,
            param,
            values,
        } = rule
        else {
            continue;
        };
        let present = action.invariants.iter().any(|i| {
            i.required_when
                .as_ref()
                .is_some_and(|r| &r.field == field && &r.param == param && &r.values == values)
        });
        if !present {
            let rule = json!({ "field": field, "param": param, "in": values });
            found.push(change(
                name,
                format!("invariants.required_when.{field}"),
                Kind::Added,
                Value::Null,
                rule,
            ));
        }
    }
}

fn compare_params(
    action: &ActionFile,
    up: &UpstreamAction,
    rules: &[UpstreamRule],
    found: &mut Vec<Change>,
) {
    let name = action.name.as_str();
    let declared: Vec<_> = action.params.iter().filter(|p| !p.undeclared).collect();
    let mut new: Vec<_> = up
        .params
        .iter()
        .filter(|p| !declared.iter().any(|d| d.name == p.name))
        .collect();
    let mut gone: Vec<_> = declared
        .iter()
        .filter(|d| !up.params.iter().any(|p| p.name == d.name))
        .collect();
    if let ([old], [renamed]) = (gone.as_slice(), new.as_slice())
        && old.ty == spec_type(&renamed.ty)
        && old.required == renamed.required
        && spec_contract(old) == upstream_contract(renamed, rules)
    {
        found.push(change(
            name,
            format!("params.{}", old.name),
            Kind::Renamed,
            json!(old.name),
            json!(renamed.name),
        ));
        new.clear();
        gone.clear();
    }
    for param in new {
        let shape = json!({ "type": spec_type(&param.ty), "required": param.required });
        found.push(change(
            name,
            format!("params.{}", param.name),
            Kind::Added,
            Value::Null,
            shape,
        ));
    }
    for param in gone {
        found.push(change(
            name,
            format!("params.{}", param.name),
            Kind::Removed,
            json!(param.ty),
            Value::Null,
        ));
    }
    for ours in &declared {
        let Some(theirs) = up.params.iter().find(|p| p.name == ours.name) else {
            continue;
        };
        let at = |facet: &str| format!("params.{}.{facet}", ours.name);
        let ty = spec_type(&theirs.ty);
        if ours.ty != ty {
            found.push(change(
                name,
                at("type"),
                Kind::Changed,
                json!(ours.ty),
                json!(ty),
            ));
            continue;
        }
        if ours.required != theirs.required {
            found.push(change(
                name,
                at("required"),
                Kind::Changed,
                json!(ours.required),
                json!(theirs.required),
            ));
        }
        if ours.default != theirs.default {
            let value = |v: &Option<Value>| v.clone().unwrap_or(Value::Null);
            found.push(change(
                name,
                at("default"),
                Kind::Changed,
                value(&ours.default),
                value(&theirs.default),
            ));
        }
        let mine = spec_contract(ours);
        let upstream = upstream_contract(theirs, rules);
        let keys: BTreeSet<&String> = mine.keys().chain(upstream.keys()).collect();
        for key in keys {
            let (a, b) = (mine.get(key), upstream.get(key));
            if a != b {
                let value = |v: Option<&Value>| v.cloned().unwrap_or(Value::Null);
                found.push(change(name, at(key), Kind::Changed, value(a), value(b)));
            }
        }
    }
}

/// Upstream's prose and result schema against the catalog spec/ was last synced from.
fn compare_upstream_text(before: &UpstreamAction, after: &UpstreamAction, found: &mut Vec<Change>) {
    let name = after.name.as_str();
    let mut text = |field: String, a: Value, b: Value| {
        if a != b {
            found.push(change(name, field, Kind::ChangedUpstream, a, b));
        }
    };
    text(
        "summary".into(),
        json!(before.summary),
        json!(after.summary),
    );
    text(
        "returns".into(),
        json!(before.returns),
        json!(after.returns),
    );
    text(
        "returnsSchema".into(),
        json!(before.returns_schema),
        json!(after.returns_schema),
    );
    for param in &after.params {
        if let Some(old) = before.params.iter().find(|p| p.name == param.name) {
            text(
                format!("params.{}.description", param.name),
                json!(old.desc),
                json!(param.desc),
            );
        }
    }
    let unparsed = |a: &UpstreamAction| -> BTreeSet<String> {
        a.invariants
            .iter()
            .filter(|t| parse_rule(t).is_none())
            .cloned()
            .collect()
    };
    let (old, new) = (unparsed(before), unparsed(after));
    for added in new.difference(&old) {
        found.push(change(
            name,
            "invariants.text",
            Kind::Added,
            Value::Null,
            json!(added),
        ));
    }
    for removed in old.difference(&new) {
        found.push(change(
            name,
            "invariants.text",
            Kind::Removed,
            json!(removed),
            Value::Null,
        ));
    }
    let rules = |a: &UpstreamAction| -> Vec<UpstreamRule> {
        a.invariants.iter().filter_map(|t| parse_rule(t)).collect()
    };
    let now = rules(after);
    for rule in rules(before) {
        if let UpstreamRule::RequiredWhen { field, .. } = &rule
            && !now.contains(&rule)
        {
            found.push(change(
                name,
                format!("invariants.required_when.{field}"),
                Kind::Removed,
                json!(field),
                Value::Null,
            ));
        }
    }
}
