//! `--write`: the mechanical part of a sync. New actions get a YAML file in their category's
//! directory; changed, added, removed and renamed params and added or removed aliases are
//! edited in place in existing files; the upstream catalog becomes the new
//! `spec/upstream-catalog.json`; `--version` moves catalog.yaml's version. Everything else
//! (flags, categories, result schemas, prose) is left for a person and stays in the report.

mod edit;
mod new_action;
pub mod yaml;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::BASELINE_FILE;
use super::diff::{Change, Kind, Report};
use super::upstream::{UpstreamCatalog, UpstreamRule, parse_rule, spec_type};
use crate::load::Spec;
use edit::Doc;
use yaml::flow;

/// What `--write` did.
#[derive(Debug, Default)]
pub struct Written {
    /// Files created or changed, relative to the spec directory.
    pub files: Vec<String>,
    /// Drift items left for a person, with the reason.
    pub left: Vec<(Change, String)>,
}

/// The order of a param's keys in spec files, for inserting a missing one.
const PARAM_KEYS: &[&str] = &[
    "name",
    "type",
    "required",
    "default",
    "minimum",
    "maximum",
    "min_length",
    "min_items",
    "item_min_length",
    "non_zero",
    "values",
];

pub fn apply(
    spec_dir: &Path,
    spec: &Spec,
    upstream_text: &str,
    report: &Report,
    version: Option<&str>,
) -> Result<Written, String> {
    let upstream = UpstreamCatalog::parse(upstream_text)?;
    let mut written = Written::default();
    let save = |path: PathBuf, text: String, written: &mut Written| -> Result<(), String> {
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        let shown = path.strip_prefix(spec_dir).unwrap_or(&path);
        written
            .files
            .push(shown.to_string_lossy().replace('\\', "/"));
        Ok(())
    };
    let mut by_file: Vec<(usize, Vec<&Change>)> = Vec::new();
    for change in &report.drift {
        if change.field == "action" && change.kind == Kind::Added {
            let action = upstream
                .action(&change.action)
                .ok_or("upstream action vanished")?;
            let Some(category) = spec
                .catalog
                .value
                .categories
                .iter()
                .find(|c| c.name == action.category)
            else {
                let why = format!(
                    "its category `{}` is not in catalog.yaml; add it there first",
                    action.category
                );
                written.left.push((change.clone(), why));
                continue;
            };
            let dir = spec_dir.join("actions").join(&category.id);
            std::fs::create_dir_all(&dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            let text = new_action::yaml(action, &category.id, "frames");
            save(
                dir.join(format!("{}.yaml", action.name)),
                text,
                &mut written,
            )?;
            if action.stream {
                let why = "SnowLuma marks it a stream without saying which kind; `stream: frames` was written, set download, upload or frames";
                written.left.push((change.clone(), why.into()));
            }
            continue;
        }
        match spec
            .actions
            .iter()
            .position(|a| a.value.name == change.action)
        {
            Some(index) => match by_file.iter_mut().find(|(i, _)| *i == index) {
                Some((_, changes)) => changes.push(change),
                None => by_file.push((index, vec![change])),
            },
            None => written
                .left
                .push((change.clone(), "not an action in spec/".into())),
        }
    }
    for (index, changes) in by_file {
        let source = &spec.actions[index];
        let path = spec_dir.join("..").join(&source.path);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let mut doc = Doc::new(&text);
        let up = upstream.action(&source.value.name);
        for change in changes {
            if let Err(why) = edit_one(&mut doc, source, up, change) {
                written.left.push((change.clone(), why));
            } else if let Some(name) = vanished_param(change)
                && source
                    .value
                    .examples
                    .iter()
                    .any(|e| e.params.get(name).is_some())
            {
                let why =
                    format!("examples still pass `{name}`; update them (the build names each)");
                written.left.push((change.clone(), why));
            }
        }
        if doc.text() != text {
            save(path, doc.text(), &mut written)?;
        }
    }
    save(
        spec_dir.join(BASELINE_FILE),
        upstream_text.to_string(),
        &mut written,
    )?;
    if let Some(version) = version {
        let path = spec_dir.join("catalog.yaml");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let mut doc = Doc::new(&text);
        if !doc.set("version", &json!(version).to_string(), &[]) {
            return Err("spec/catalog.yaml has no block `version:` line to update".into());
        }
        save(path, doc.text(), &mut written)?;
    }
    Ok(written)
}

/// The param a removal or rename takes away from the file.
fn vanished_param(change: &Change) -> Option<&str> {
    let name = change.field.strip_prefix("params.")?;
    (matches!(change.kind, Kind::Removed | Kind::Renamed) && !name.contains('.')).then_some(name)
}

fn param_index(source: &crate::load::ActionSource, name: &str) -> Result<usize, String> {
    source
        .value
        .params
        .iter()
        .position(|p| p.name == name)
        .ok_or_else(|| format!("no param `{name}` in the file"))
}

fn edit_one(
    doc: &mut Doc,
    source: &crate::load::ActionSource,
    up: Option<&super::upstream::UpstreamAction>,
    change: &Change,
) -> Result<(), String> {
    let manual = |what: &str| {
        Err(format!(
            "{what} is decided by a person; edit the file by hand or list it in spec/upstream-differences.yaml"
        ))
    };
    let not_block = || "the spot is not plain block YAML; edit it by hand".to_string();
    let up = up.ok_or("upstream does not have this action")?;
    let rules: Vec<UpstreamRule> = up.invariants.iter().filter_map(|t| parse_rule(t)).collect();
    let parts: Vec<&str> = change.field.splitn(3, '.').collect();
    match (parts.as_slice(), change.kind) {
        (["params", name], Kind::Added) => {
            let param = up
                .params
                .iter()
                .find(|p| p.name == *name)
                .ok_or("upstream param vanished")?;
            if source.value.params.iter().any(|p| p.name == *name) {
                return Err(format!(
                    "`{name}` is here as an undeclared param; make it declared by hand"
                ));
            }
            let block = new_action::param_block(param, &rules, "  ");
            doc.append_item("params", &block, &["invariants", "returns"])
                .then_some(())
                .ok_or_else(not_block)
        }
        (["params", name], Kind::Removed) => {
            let index = param_index(source, name)?;
            doc.remove_item(&format!("params[{index}]"))
                .then_some(())
                .ok_or_else(not_block)
        }
        (["params", name], Kind::Renamed) => {
            let index = param_index(source, name)?;
            let to = change.to.as_str().unwrap_or_default();
            doc.set(&format!("params[{index}].name"), &flow(&json!(to)), &[])
                .then_some(())
                .ok_or_else(not_block)
        }
        (["params", name, facet], Kind::Changed) => {
            let index = param_index(source, name)?;
            let param = up
                .params
                .iter()
                .find(|p| p.name == *name)
                .ok_or("upstream param vanished")?;
            let wanted: Vec<(&str, Value)> = new_action::param_fields(param, &rules);
            let key = match *facet {
                "type" | "required" | "default" | "minimum" | "maximum" => *facet,
                "minLength" => "min_length",
                "minItems" => "min_items",
                "items" => "item_min_length",
                "not" => "non_zero",
                "enum" => "values",
                other => {
                    return Err(format!(
                        "the `{other}` constraint has no spec field the sync can write"
                    ));
                }
            };
            let path = format!("params[{index}].{key}");
            let ok = match wanted.iter().find(|(k, _)| *k == key) {
                Some((_, value)) => doc.set(&path, &flow(value), PARAM_KEYS),
                None if key == "minimum" && spec_type(&param.ty) == "uint" => doc.remove(&path),
                None => doc.remove(&path),
            };
            ok.then_some(()).ok_or_else(not_block)
        }
        (["aliases", _], Kind::Added | Kind::Removed) => {
            let mut aliases = source.value.aliases.clone();
            aliases.retain(|a| up.aliases.contains(a));
            aliases.extend(
                up.aliases
                    .iter()
                    .filter(|a| !source.value.aliases.contains(a))
                    .cloned(),
            );
            let ok = if aliases.is_empty() {
                doc.remove("aliases")
            } else {
                doc.set("aliases", &flow(&json!(aliases)), &["name"])
            };
            if !ok {
                return Err(not_block());
            }
            if change.kind == Kind::Removed {
                let alias = change.from.as_str().unwrap_or_default();
                let examples = &source.value.examples;
                if let Some(i) = examples
                    .iter()
                    .position(|e| e.action.as_deref() == Some(alias))
                    && !doc.remove_item(&format!("examples[{i}]"))
                {
                    return Err(not_block());
                }
            }
            if change.kind == Kind::Added {
                let alias = change.to.as_str().unwrap_or_default();
                let params = source
                    .value
                    .examples
                    .first()
                    .map_or(json!({}), |e| e.params.clone());
                let block = format!(
                    "  - summary: {}\n    action: {}\n    params: {}\n    review: true\n",
                    flow(&json!(format!(
                        "通过别名 {alias} 调用（由 catalog-sync 生成，待核对）"
                    ))),
                    flow(&json!(alias)),
                    flow(&params)
                );
                if !doc.append_item("examples", &block, &[]) {
                    return Err(not_block());
                }
            }
            Ok(())
        }
        _ => manual(&change.field),
    }
}
