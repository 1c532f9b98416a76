//! The codegen's spec loader: one action file (or the catalog file) as YAML text, read into
//! the model with its location index, then the whole-catalog validation and, when that
//! passes, lowering and emitting the generated files.
//!
//! Input: an action file's YAML, checked against the real `spec/catalog.yaml`. An input whose
//! first line is `# catalog` is the catalog file instead, checked with one real action. An
//! action file is placed where its own `name` and `category` say (so the checks after the
//! path are reached), unless its first line is `# <category>/<name>`.
//!
//! Checked: nothing panics; every error names one of the two files, a line and column inside
//! it (1-based) and a message, and prints as `file:line:column: ...`; a spec that validates
//! is emitted without a panic.

#![no_main]

use libfuzzer_sys::fuzz_target;
use snowluma_mcp_codegen::load::{ActionSource, CatalogSource, Spec, parse_text};
use snowluma_mcp_codegen::model::{ActionFile, CatalogFile};
use snowluma_mcp_codegen::{SpecError, emit, ir, validate};

const CATALOG: &str = include_str!("../../spec/catalog.yaml");
const CATALOG_PATH: &str = "spec/catalog.yaml";
const ACTION: &str = include_str!("../../spec/actions/extended/clean_cache.yaml");

/// Lines as YAML counts them: CR LF, a lone CR, LF, NEL, LS and PS each end one.
fn yaml_lines(text: &str) -> usize {
    let mut breaks = 0;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                chars.next_if_eq(&'\n');
                breaks += 1;
            }
            '\n' | '\u{85}' | '\u{2028}' | '\u{2029}' => breaks += 1,
            _ => {}
        }
    }
    breaks + 1
}

fn check_error(error: &SpecError, files: &[(&str, &str)]) {
    let (_, text) = files
        .iter()
        .find(|(path, _)| *path == error.file)
        .unwrap_or_else(|| panic!("an error names an unknown file: {error}"));
    assert!(error.line >= 1 && error.column >= 1, "{error}");
    // serde_yaml reports an error at the end of the input (a missing field) on the line after
    // the last one, as if the file ended with a line break.
    assert!(
        error.line <= yaml_lines(text) + 1,
        "{error} is past the end of the file"
    );
    assert!(!error.message.is_empty(), "{error}");
    let shown = error.to_string();
    assert!(
        shown.starts_with(&format!("{}:{}:{}: ", error.file, error.line, error.column)),
        "{shown}"
    );
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let first = input.lines().next().unwrap_or_default();
    let (catalog_text, action_text) = if first.trim() == "# catalog" {
        (input, ACTION)
    } else {
        (CATALOG, input)
    };
    let place = first
        .strip_prefix("# ")
        .and_then(|p| p.trim().split_once('/'))
        .filter(|_| first.trim() != "# catalog");

    let catalog = parse_text::<CatalogFile>(catalog_text, CATALOG_PATH, None);
    // Where the action file sits: from the header, else from what the file says.
    let parsed_for_place = parse_text::<ActionFile>(action_text, "spec/actions/x/x.yaml", None);
    let (directory, stem) = match (place, &parsed_for_place) {
        (Some((dir, stem)), _) => (dir.to_string(), stem.to_string()),
        (None, Ok((action, _))) => (action.category.clone(), action.name.clone()),
        (None, Err(_)) => ("message".to_string(), "fuzz".to_string()),
    };
    let action_path = format!("spec/actions/{directory}/{stem}.yaml");
    let files = [
        (CATALOG_PATH, catalog_text),
        (action_path.as_str(), action_text),
    ];
    let action = parse_text::<ActionFile>(action_text, &action_path, Some(&stem));

    let (catalog, action) = match (catalog, action) {
        (Ok((cvalue, clocations)), Ok((avalue, alocations))) => (
            CatalogSource {
                path: CATALOG_PATH.to_string(),
                value: cvalue,
                locations: clocations,
            },
            ActionSource {
                path: action_path.clone(),
                stem: stem.clone(),
                directory: directory.clone(),
                value: avalue,
                locations: alocations,
            },
        ),
        (catalog, action) => {
            for error in [catalog.err(), action.err()].into_iter().flatten() {
                check_error(&error, &files);
            }
            return;
        }
    };
    let spec = Spec {
        catalog,
        actions: vec![action],
    };
    let errors = validate::validate(&spec);
    for error in &errors {
        check_error(error, &files);
    }
    if errors.is_empty() {
        let generated = emit::emit_all(&ir::lower(&spec));
        assert!(!generated.is_empty());
    }
});
