//! Reading spec/ from disk: YAML into the model, plus a location index per file.

use std::path::Path;

use serde::de::DeserializeOwned;

use crate::error::{SpecError, SpecErrors, nearest};
use crate::locate::Locations;
use crate::model::{ActionFile, CatalogFile};

pub struct CatalogSource {
    pub path: String,
    pub value: CatalogFile,
    pub locations: Locations,
}

pub struct ActionSource {
    pub path: String,
    /// File name without `.yaml`; must equal the action name.
    pub stem: String,
    /// The category directory the file sits in.
    pub directory: String,
    pub value: ActionFile,
    pub locations: Locations,
}

pub struct Spec {
    pub catalog: CatalogSource,
    pub actions: Vec<ActionSource>,
}

impl CatalogSource {
    pub fn error(
        &self,
        action: Option<&str>,
        field: &str,
        message: String,
        suggestion: Option<String>,
    ) -> SpecError {
        let (line, column) = self.locations.find(field);
        SpecError {
            file: self.path.clone(),
            line,
            column,
            action: action.map(str::to_string),
            field: Some(field.to_string()),
            message,
            suggestion,
        }
    }
}

impl ActionSource {
    pub fn error(&self, field: &str, message: String, suggestion: Option<String>) -> SpecError {
        let (line, column) = self.locations.find(field);
        SpecError {
            file: self.path.clone(),
            line,
            column,
            action: Some(self.value.name.clone()),
            field: Some(field.to_string()),
            message,
            suggestion,
        }
    }
}

/// Reads `<spec_dir>/catalog.yaml` and every `<spec_dir>/actions/<category>/<name>.yaml`.
/// Paths in errors are shown relative to the spec directory's parent (`spec/...`).
pub fn load(spec_dir: &Path) -> Result<Spec, SpecErrors> {
    let root = spec_dir.parent().unwrap_or(spec_dir);
    let shown = |path: &Path| {
        path.strip_prefix(root)
            .unwrap_or(path)
            .to_string_lossy()
            .replace('\\', "/")
    };
    let mut errors = Vec::new();

    let catalog_path = spec_dir.join("catalog.yaml");
    let catalog = match parse::<CatalogFile>(&catalog_path, &shown(&catalog_path), None) {
        Ok((value, locations)) => Some(CatalogSource {
            path: shown(&catalog_path),
            value,
            locations,
        }),
        Err(error) => {
            errors.push(*error);
            None
        }
    };

    let mut files: Vec<_> = std::fs::read_dir(spec_dir.join("actions"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| entry.path().is_dir())
        .flat_map(|dir| {
            std::fs::read_dir(dir.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .map(|entry| entry.path())
        .collect();
    files.sort();

    let mut actions = Vec::new();
    for path in files {
        let display = shown(&path);
        let file_name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let Some(stem) = file_name.strip_suffix(".yaml") else {
            errors.push(SpecError {
                file: display,
                line: 1,
                column: 1,
                action: None,
                field: None,
                message: "only `<action>.yaml` files belong under spec/actions/<category>/".into(),
                suggestion: None,
            });
            continue;
        };
        let directory = path
            .parent()
            .and_then(Path::file_name)
            .map(|d| d.to_string_lossy().to_string())
            .unwrap_or_default();
        match parse::<ActionFile>(&path, &display, Some(stem)) {
            Ok((value, locations)) => actions.push(ActionSource {
                path: display,
                stem: stem.to_string(),
                directory,
                value,
                locations,
            }),
            Err(error) => errors.push(*error),
        }
    }

    match catalog {
        Some(catalog) if errors.is_empty() => Ok(Spec { catalog, actions }),
        _ => {
            errors.sort();
            Err(SpecErrors(errors))
        }
    }
}

fn parse<T: DeserializeOwned>(
    path: &Path,
    display: &str,
    action: Option<&str>,
) -> Result<(T, Locations), Box<SpecError>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Box::new(SpecError {
            file: display.to_string(),
            line: 1,
            column: 1,
            action: action.map(str::to_string),
            field: None,
            message: format!("cannot read the file: {e}"),
            suggestion: None,
        })
    })?;
    parse_text(&text, display, action)
}

/// Reads one spec file's YAML `text` into the model plus its location index. `display` is the
/// path errors name and `action` the action the file is for (its stem), if any. [`load`] reads
/// every file through this; the fuzz target calls it directly.
pub fn parse_text<T: DeserializeOwned>(
    text: &str,
    display: &str,
    action: Option<&str>,
) -> Result<(T, Locations), Box<SpecError>> {
    match serde_yaml::from_str::<T>(text) {
        Ok(value) => Ok((value, Locations::index(text))),
        Err(error) => {
            let (line, column) = error
                .location()
                .map(|l| (l.line(), l.column()))
                .unwrap_or((1, 1));
            let (field, message, suggestion) = explain(&error.to_string());
            Err(Box::new(SpecError {
                file: display.to_string(),
                line,
                column,
                action: action.map(str::to_string),
                field,
                message,
                suggestion,
            }))
        }
    }
}

/// Splits a serde_yaml message such as
/// "params[0]: unknown field `typ`, expected one of `name`, `type` at line 8 column 5"
/// into the field path, a message without the position, and the nearest valid name.
fn explain(raw: &str) -> (Option<String>, String, Option<String>) {
    let without_position = match raw.rfind(" at line ") {
        Some(cut) => &raw[..cut],
        None => raw,
    };
    let (path, message) = match without_position.split_once(": ") {
        Some((path, rest)) if !path.contains(' ') => (Some(path.to_string()), rest.to_string()),
        _ => (None, without_position.to_string()),
    };
    let quoted: Vec<&str> = message.split('`').skip(1).step_by(2).collect();
    let named = quoted.first().map(|s| s.to_string());
    let join = |name: &str| match &path {
        Some(path) => format!("{path}.{name}"),
        None => name.to_string(),
    };
    if message.starts_with("unknown field") || message.starts_with("unknown variant") {
        let suggestion = named
            .as_deref()
            .and_then(|wrong| nearest(wrong, quoted.iter().skip(1).copied()));
        let field = if message.starts_with("unknown field") {
            named.map(|n| join(&n))
        } else {
            path
        };
        return (field, message, suggestion);
    }
    if message.starts_with("missing field") {
        return (named.map(|n| join(&n)), message, None);
    }
    (path, message, None)
}
