//! Whole-catalog checks, run before anything is emitted. Every problem is collected so one
//! build shows all of them.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::error::{SpecError, nearest};
use crate::load::{ActionSource, Spec};
use crate::model::ParamDef;
use crate::schema::{
    CHECKS, PARAM_TYPES, RESERVED_PARAMS, ROLES, input_schema, param_schema, type_synonym,
};

pub fn validate(spec: &Spec) -> Vec<SpecError> {
    let mut errors = Vec::new();
    check_catalog(spec, &mut errors);
    let mut owners: BTreeMap<&str, &str> = BTreeMap::new();
    let mut tool_owners: BTreeMap<String, &str> = BTreeMap::new();
    for source in &spec.actions {
        let mut check = ActionCheck {
            spec,
            source,
            errors: &mut errors,
        };
        check.run();
        let action = &source.value;
        check_action_names(&mut errors, source);
        let tool = crate::ir::tool_name(&action.name);
        if let Some(owner) = tool_owners.insert(tool.clone(), &action.name) {
            check_error(
                &mut errors,
                source,
                "name",
                format!(
                    "its typed tool name `{tool}` is already the tool name of action `{owner}`; \
                     rename one of them"
                ),
            );
        }
        for name in std::iter::once(&action.name).chain(&action.aliases) {
            if let Some(owner) = owners.insert(name, &action.name) {
                let field = if name == &action.name {
                    "name"
                } else {
                    "aliases"
                };
                check_error(
                    &mut errors,
                    source,
                    field,
                    format!(
                        "`{name}` is already used by action `{owner}`; names and aliases must be unique"
                    ),
                );
            }
        }
    }
    errors
}

/// Whether `name` has the shape of a OneBot action name: an optional leading `.` or `_` (as in
/// `.ocr_image` and `_get_model_show`), a lowercase ASCII letter, then lowercase letters, digits
/// and `_`. Names become Rust identifiers and tool names, so a name that starts with a digit or
/// holds any other character would otherwise stop the emitter instead of the check.
fn is_action_name(name: &str) -> bool {
    let rest = name.strip_prefix(['.', '_']).unwrap_or(name);
    let mut chars = rest.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

fn check_action_names(errors: &mut Vec<SpecError>, source: &ActionSource) {
    let action = &source.value;
    let fields = std::iter::once(("name".to_string(), &action.name)).chain(
        action
            .aliases
            .iter()
            .enumerate()
            .map(|(i, alias)| (format!("aliases[{i}]"), alias)),
    );
    for (field, name) in fields {
        if !is_action_name(name) {
            let message = format!(
                "`{name}` is not an action name: start with a lowercase letter (after an optional \
                 `.` or `_`) and use only lowercase letters, digits and `_`"
            );
            check_error(errors, source, &field, message);
        }
    }
}

fn check_error(errors: &mut Vec<SpecError>, source: &ActionSource, field: &str, message: String) {
    errors.push(source.error(field, message, None));
}

fn check_catalog(spec: &Spec, errors: &mut Vec<SpecError>) {
    let catalog = &spec.catalog;
    if catalog.value.version.trim().is_empty() {
        errors.push(catalog.error(None, "version", "must not be empty".into(), None));
    }
    let mut seen = BTreeSet::new();
    for (i, category) in catalog.value.categories.iter().enumerate() {
        if !seen.insert(category.id.as_str()) {
            let field = format!("categories[{i}].id");
            errors.push(catalog.error(
                None,
                &field,
                format!("duplicate category `{}`", category.id),
                None,
            ));
        }
    }
    let intents = &catalog.value.intents;
    for (kind, words) in [("read", &intents.read), ("write", &intents.write)] {
        for (i, word) in words.iter().enumerate() {
            if word.trim().is_empty() {
                let field = format!("intents.{kind}[{i}]");
                errors.push(catalog.error(None, &field, "must not be empty".into(), None));
            }
        }
    }
    for (i, group) in catalog.value.synonyms.iter().enumerate() {
        if group.len() < 2 {
            let field = format!("synonyms[{i}]");
            errors.push(catalog.error(
                None,
                &field,
                "a synonym group needs at least two words".into(),
                None,
            ));
        }
    }
}

struct ActionCheck<'a> {
    spec: &'a Spec,
    source: &'a ActionSource,
    errors: &'a mut Vec<SpecError>,
}

impl ActionCheck<'_> {
    fn fail(&mut self, field: &str, message: impl Into<String>, suggestion: Option<String>) {
        self.errors
            .push(self.source.error(field, message.into(), suggestion));
    }

    fn run(&mut self) {
        let action = &self.source.value;
        if action.name != self.source.stem {
            let message = format!("must equal the file name `{}`", self.source.stem);
            self.fail("name", message, None);
        }
        let ids: Vec<&str> = self
            .spec
            .catalog
            .value
            .categories
            .iter()
            .map(|c| c.id.as_str())
            .collect();
        if !ids.contains(&action.category.as_str()) {
            let suggestion = nearest(&action.category, ids.iter().copied());
            self.fail(
                "category",
                format!("unknown category `{}`", action.category),
                suggestion,
            );
        } else if action.category != self.source.directory {
            let message = format!("must equal the directory name `{}`", self.source.directory);
            self.fail("category", message, None);
        }
        if action.summary.trim().is_empty() {
            self.fail("summary", "must not be empty", None);
        }
        if action.danger.as_ref().is_some_and(|d| d.trim().is_empty()) {
            self.fail(
                "danger",
                "must not be empty; say what the action can do to the host, or drop the field",
                None,
            );
        }
        if action.sends && action.read_only {
            self.fail(
                "sends",
                "a read-only action cannot send; drop `sends`, or set `read_only: false` if the action does send",
                None,
            );
        }
        for (i, keyword) in action.keywords.iter().enumerate() {
            if keyword.trim().is_empty() {
                self.fail(&format!("keywords[{i}]"), "must not be empty", None);
            }
        }
        self.check_params();
        self.check_invariants();
        self.check_returns();
        self.check_examples();
    }

    fn check_params(&mut self) {
        let params = &self.source.value.params;
        let mut seen = BTreeSet::new();
        for (i, param) in params.iter().enumerate() {
            let at = |field: &str| format!("params[{i}].{field}");
            if !seen.insert(param.name.as_str()) {
                self.fail(
                    &at("name"),
                    format!("duplicate param `{}`", param.name),
                    None,
                );
            }
            if RESERVED_PARAMS.contains(&param.name.as_str()) {
                self.fail(
                    &at("name"),
                    format!(
                        "param `{}` is reserved: every typed action tool takes it for its own use (the result budget)",
                        param.name
                    ),
                    None,
                );
            }
            if !PARAM_TYPES.contains(&param.ty.as_str()) {
                let suggestion = type_synonym(&param.ty)
                    .map(str::to_string)
                    .or_else(|| nearest(&param.ty, PARAM_TYPES.iter().copied()));
                self.fail(
                    &at("type"),
                    format!("unknown type `{}`", param.ty),
                    suggestion,
                );
                continue;
            }
            if let Some(role) = &param.role
                && !ROLES.contains(&role.as_str())
            {
                let suggestion = nearest(role, ROLES.iter().copied());
                self.fail(&at("role"), format!("unknown role `{role}`"), suggestion);
            }
            if param.description.trim().is_empty() {
                self.fail(&at("description"), "every param needs a description", None);
            }
            let numeric = matches!(param.ty.as_str(), "uint" | "int" | "number");
            if (param.minimum.is_some() || param.maximum.is_some()) && !numeric {
                self.fail(
                    &at("minimum"),
                    format!("bounds apply to numbers, not `{}`", param.ty),
                    None,
                );
            }
            if param.min_length.is_some() && param.ty != "string" {
                self.fail(
                    &at("min_length"),
                    "min_length applies to `string` params",
                    None,
                );
            }
            if param.item_min_length.is_some() && param.ty != "string[]" {
                self.fail(
                    &at("item_min_length"),
                    "item_min_length applies to `string[]` params",
                    None,
                );
            }
            if param.min_items.is_some() && !param.ty.ends_with("[]") {
                self.fail(&at("min_items"), "min_items applies to array params", None);
            }
            if param.non_zero && param.ty != "int" {
                self.fail(
                    &at("non_zero"),
                    "non_zero applies to `int` params (message_id is always non-zero)",
                    None,
                );
            }
            match (&param.values, param.ty.as_str()) {
                (None, "enum") => self.fail(&at("values"), "an `enum` param needs `values`", None),
                (Some(values), "int" | "uint") if !values.iter().all(Value::is_i64) => self.fail(
                    &at("values"),
                    "the values of an `int`/`uint` param must be integers",
                    None,
                ),
                (Some(values), _)
                    if param.check.as_deref() == Some("as_string_in")
                        && !values.iter().all(Value::is_string) =>
                {
                    self.fail(
                        &at("values"),
                        "the values of an `as_string_in` check must be strings",
                        None,
                    )
                }
                (Some(_), _) if param.check.as_deref() == Some("as_string_in") => {}
                (Some(_), ty) if !matches!(ty, "enum" | "int" | "uint") => self.fail(
                    &at("values"),
                    "only `enum`, `int` and `uint` params, and params with `check: as_string_in`, take `values`",
                    None,
                ),
                (Some(values), _) if values.is_empty() => {
                    self.fail(&at("values"), "must not be empty", None)
                }
                _ => {}
            }
            if let Some(check) = &param.check {
                if !CHECKS.contains(&check.as_str()) {
                    let suggestion = nearest(check, CHECKS.iter().copied());
                    self.fail(&at("check"), format!("unknown check `{check}`"), suggestion);
                } else if check == "even_hex" && param.ty != "string" {
                    self.fail(&at("check"), "even_hex applies to `string` params", None);
                } else if check == "as_string_in" && (param.ty != "raw" || param.values.is_none()) {
                    self.fail(
                        &at("check"),
                        "as_string_in applies to `raw` params with `values` (the accepted strings)",
                        None,
                    );
                }
            }
            if param.required && param.default.is_some() {
                self.fail(
                    &at("default"),
                    "a param with a default is never required; drop one of them",
                    None,
                );
            }
            if let Some(default) = &param.default {
                self.check_value_against(&at("default"), param, default);
            }
        }
    }

    fn check_value_against(&mut self, field: &str, param: &ParamDef, value: &Value) {
        let schema = param_schema(param);
        if let Ok(validator) = jsonschema::validator_for(&schema)
            && let Err(error) = validator.validate(value)
        {
            self.fail(
                field,
                format!("{value} does not fit the param: {error}"),
                None,
            );
        }
    }

    fn param_names(&self) -> Vec<&str> {
        self.source
            .value
            .params
            .iter()
            .map(|p| p.name.as_str())
            .collect()
    }

    fn check_invariants(&mut self) {
        let names = self.param_names();
        let mut unknown = Vec::new();
        for (i, invariant) in self.source.value.invariants.iter().enumerate() {
            if invariant.text.trim().is_empty() {
                unknown.push((
                    format!("invariants[{i}].text"),
                    "must not be empty".to_string(),
                    None,
                ));
            }
            if invariant.rule_count() > 1 {
                unknown.push((
                    format!("invariants[{i}]"),
                    "one rule per invariant".to_string(),
                    None,
                ));
            }
            let mut referenced = Vec::new();
            if let Some(fields) = &invariant.any_of {
                if fields.len() < 2 {
                    unknown.push((
                        format!("invariants[{i}].any_of"),
                        "needs at least two params".into(),
                        None,
                    ));
                }
                referenced.extend(
                    fields
                        .iter()
                        .map(|f| (format!("invariants[{i}].any_of"), f)),
                );
            }
            if let Some(rule) = &invariant.required_when {
                referenced.push((format!("invariants[{i}].required_when.field"), &rule.field));
                referenced.push((format!("invariants[{i}].required_when.param"), &rule.param));
                if let Some(check) = rule.check.as_deref().filter(|c| !CHECKS.contains(c)) {
                    unknown.push((
                        format!("invariants[{i}].required_when.check"),
                        format!("unknown check `{check}`"),
                        nearest(check, CHECKS.iter().copied()),
                    ));
                }
            }
            if let Some(fields) = &invariant.first_truthy_string {
                if fields.len() < 2 {
                    unknown.push((
                        format!("invariants[{i}].first_truthy_string"),
                        "needs at least two params".into(),
                        None,
                    ));
                }
                referenced.extend(
                    fields
                        .iter()
                        .map(|f| (format!("invariants[{i}].first_truthy_string"), f)),
                );
            }
            for (field, name) in referenced {
                if !names.contains(&name.as_str()) {
                    let suggestion = nearest(name, names.iter().copied());
                    unknown.push((field, format!("no param named `{name}`"), suggestion));
                }
            }
        }
        for (field, message, suggestion) in unknown {
            self.fail(&field, message, suggestion);
        }
    }

    fn check_returns(&mut self) {
        let returns = &self.source.value.returns;
        if returns.description.trim().is_empty() {
            self.fail("returns.description", "must not be empty", None);
        }
        if !returns.schema.is_object() {
            self.fail("returns.schema", "must be a JSON Schema object (`{type: \"null\"}` for null data, `{not: {}}` for an action that always fails)", None);
        } else if let Err(error) = jsonschema::meta::validate(&returns.schema) {
            self.fail(
                "returns.schema",
                format!(
                    "not a valid JSON Schema: {error} at `{}`",
                    error.instance_path
                ),
                None,
            );
        } else if let Err(error) = jsonschema::validator_for(&returns.schema) {
            self.fail(
                "returns.schema",
                format!("cannot be compiled: {error}"),
                None,
            );
        }
    }

    fn check_examples(&mut self) {
        let action = &self.source.value;
        if action.examples.is_empty() {
            self.fail("examples", "at least one example is required", None);
        }
        let schema = input_schema(&action.params);
        let validator = jsonschema::validator_for(&schema).ok();
        let names: Vec<&str> = std::iter::once(action.name.as_str())
            .chain(action.aliases.iter().map(String::as_str))
            .collect();
        let mut problems = Vec::new();
        for (i, example) in action.examples.iter().enumerate() {
            if example.summary.trim().is_empty() {
                problems.push((
                    format!("examples[{i}].summary"),
                    "must not be empty".to_string(),
                    None,
                ));
            }
            if let Some(called) = &example.action
                && !names.contains(&called.as_str())
            {
                let suggestion = nearest(called, names.iter().copied());
                problems.push((
                    format!("examples[{i}].action"),
                    format!("`{called}` is neither this action nor one of its aliases"),
                    suggestion,
                ));
            }
            let Some(params) = example.params.as_object() else {
                problems.push((
                    format!("examples[{i}].params"),
                    "must be a mapping".to_string(),
                    None,
                ));
                continue;
            };
            if let Some(validator) = &validator {
                for error in validator.iter_errors(&example.params) {
                    let path = error.instance_path.to_string();
                    let field = match path.trim_start_matches('/') {
                        "" => format!("examples[{i}].params"),
                        key => format!("examples[{i}].params.{}", key.replace('/', ".")),
                    };
                    problems.push((
                        field,
                        format!("does not validate against the inputSchema: {error}"),
                        None,
                    ));
                }
            }
            for invariant in &action.invariants {
                if !invariant_holds(invariant, params) {
                    problems.push((
                        format!("examples[{i}].params"),
                        format!("breaks the invariant: {}", invariant.text),
                        None,
                    ));
                }
            }
            let known = self.param_names();
            for key in params.keys() {
                if !known.contains(&key.as_str()) {
                    let suggestion = nearest(key, known.iter().copied());
                    problems.push((
                        format!("examples[{i}].params.{key}"),
                        format!("`{key}` is not a declared param"),
                        suggestion,
                    ));
                }
            }
        }
        for alias in &action.aliases {
            if !action
                .examples
                .iter()
                .any(|e| e.action.as_deref() == Some(alias))
            {
                problems.push((
                    "aliases".into(),
                    format!("alias `{alias}` needs an example with `action: {alias}`"),
                    None,
                ));
            }
        }
        for (field, message, suggestion) in problems {
            self.fail(&field, message, suggestion);
        }
    }
}

fn invariant_holds(
    invariant: &crate::model::InvariantDef,
    params: &serde_json::Map<String, Value>,
) -> bool {
    let present = |name: &str| params.get(name).is_some_and(|v| v.as_str() != Some(""));
    if let Some(fields) = &invariant.any_of {
        return fields.iter().any(|f| present(f));
    }
    if let Some(rule) = &invariant.required_when {
        let triggered = params
            .get(&rule.param)
            .is_some_and(|v| rule.values.contains(v));
        return !triggered || present(&rule.field);
    }
    if let Some(fields) = &invariant.first_truthy_string {
        // An example names its value plainly: the first field given must be a string.
        return fields
            .iter()
            .find_map(|f| params.get(f))
            .is_some_and(Value::is_string);
    }
    true
}
