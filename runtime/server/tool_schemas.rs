//! The input and output schemas of the registry's tools, as committed JSON.
//!
//! Each schema is derived from Rust types with schemars (`ToolSpec::input_schema` and
//! `ToolSpec::result_schema` name the derivation). Deriving them at start-up runs schemars'
//! generator, which builds and drops several value trees per schema, and pulls its code in
//! page by page: measured on a cold start, parsing the same schemas instead takes 0.3M fewer
//! instructions and 23 fewer faults on code pages (the total fault count moves less, and
//! with the page cache's state). So the derived schemas are committed, one tool per line in
//! registry order. The file is read once into borrowed `RawValue`s (checked JSON text, no
//! trees); a definition parses only its own schemas, and the stdio list writes their text.
//!
//! The file is an insta snapshot (`snapshots/tool_schemas.snap.jsonl`, with its metadata in
//! `tool_schemas.snap`): the test below derives every schema again and compares, and a changed
//! type is reviewed and accepted like any other snapshot (`cargo insta review`).

use std::sync::{Arc, LazyLock};

use rmcp::model::JsonObject;
use serde::Deserialize;
use serde_json::value::RawValue;

/// The committed schemas: `{"name":…,"inputSchema":…,"outputSchema":…}` per line.
static COMMITTED: &str = include_str!("snapshots/tool_schemas.snap.jsonl");

/// One line of [`COMMITTED`], its schemas borrowed as JSON text (checked, not parsed into
/// trees).
#[derive(Deserialize)]
struct Line<'a> {
    name: &'a str,
    #[serde(borrow, rename = "inputSchema")]
    input: &'a RawValue,
    #[serde(borrow, rename = "outputSchema")]
    output: &'a RawValue,
}

/// The readable lines of the file, read once, on first use.
static LINES: LazyLock<Vec<Line<'static>>> = LazyLock::new(|| {
    COMMITTED
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
});

fn line_of(tool: &str) -> Option<&'static Line<'static>> {
    LINES.iter().find(|line| line.name == tool)
}

/// The one empty object a definition listed over stdio holds as its input schema; see
/// [`Schemas::placeholder`].
static PLACEHOLDER_INPUT: LazyLock<Arc<JsonObject>> = LazyLock::new(|| Arc::new(JsonObject::new()));

pub use crate::tools::Schemas;

impl Schemas {
    /// What a definition listed over stdio holds in place of its schemas: the stdio encoder
    /// writes the committed text there instead (`encode`), so that no value tree is built
    /// for the list (measured on a cold start: the trees of the six docs-mode tools took
    /// about 55 page faults of fresh heap, against ~330 for the whole start-up).
    ///
    /// The output placeholder keeps the schema's `"type": "object"` (every committed output
    /// schema has it; a test checks): rmcp drops an output schema of any other type for a
    /// legacy client, and it must treat the placeholder as it would the real schema.
    pub fn placeholder() -> Schemas {
        let mut output = JsonObject::new();
        output.insert("type".into(), "object".into());
        Schemas {
            input: PLACEHOLDER_INPUT.clone(),
            output,
        }
    }
}

/// Whether `tool` holds [`Schemas::placeholder`]: its input schema is that very object.
pub fn holds_placeholder(tool: &rmcp::model::Tool) -> bool {
    Arc::ptr_eq(&tool.input_schema, &PLACEHOLDER_INPUT)
}

/// A tool's committed schemas as JSON text.
#[derive(Clone, Copy)]
pub struct SchemaText {
    pub input: &'static str,
    pub output: &'static str,
}

/// The committed schemas of `tool`, or `None` when the file has no (readable) line for it;
/// the caller then derives them.
pub fn committed(tool: &str) -> Option<Schemas> {
    let line = line_of(tool)?;
    Some(Schemas {
        input: Arc::new(serde_json::from_str(line.input.get()).ok()?),
        output: serde_json::from_str(line.output.get()).ok()?,
    })
}

/// The committed schemas of `tool` as text, exactly as serializing [`committed`]'s trees
/// writes them (the file is written compactly; a test below compares), or `None` when the
/// file has no line for it. A tools/list over stdio writes this text for every tool it lists.
pub fn committed_text(tool: &str) -> Option<SchemaText> {
    let line = line_of(tool)?;
    Some(SchemaText {
        input: line.input.get(),
        output: line.output.get(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::registry::TOOLS;

    /// The file as the derivations produce it today.
    fn derived_file() -> String {
        let mut text = String::new();
        for tool in TOOLS {
            let schemas = tool.derived_schemas();
            let line = json!({
                "name": tool.name,
                "inputSchema": *schemas.input,
                "outputSchema": schemas.output,
            });
            text.push_str(&line.to_string());
            text.push('\n');
        }
        text
    }

    #[test]
    fn committed_schemas_are_what_the_types_derive() {
        let derived = derived_file();
        // Line i is TOOLS[i]: name the tools whose schemas changed before insta shows the diff.
        let committed: Vec<&str> = COMMITTED.lines().collect();
        let stale: Vec<&str> = TOOLS
            .iter()
            .zip(derived.lines())
            .enumerate()
            .filter(|(i, (_, line))| committed.get(*i) != Some(line))
            .map(|(_, (tool, _))| tool.name)
            .collect();
        if !stale.is_empty() || committed.len() != TOOLS.len() {
            eprintln!(
                "tool schemas changed for {stale:?} ({} lines committed for {} tools): review \
                 with `cargo insta review` and commit the snapshot",
                committed.len(),
                TOOLS.len()
            );
        }
        insta::with_settings!({ prepend_module_to_snapshot => false, omit_expression => true }, {
            insta::assert_binary_snapshot!("tool_schemas.jsonl", derived.into_bytes());
        });
    }

    #[test]
    fn every_tool_is_built_from_its_committed_entry() {
        for tool in TOOLS {
            let committed = committed(tool.name)
                .unwrap_or_else(|| panic!("{} has no committed schemas", tool.name));
            let derived = tool.derived_schemas();
            assert_eq!(committed.input, derived.input, "{} input", tool.name);
            assert_eq!(committed.output, derived.output, "{} output", tool.name);
        }
        assert!(committed("no_such_tool").is_none());
    }

    /// The stdio encoder writes tools/list schemas from this text instead of the trees.
    #[test]
    fn committed_text_is_the_serialization_of_the_committed_trees() {
        for tool in TOOLS {
            let text = committed_text(tool.name).expect("committed");
            let trees = committed(tool.name).expect("committed");
            assert_eq!(text.input, serde_json::to_string(&*trees.input).unwrap());
            assert_eq!(text.output, serde_json::to_string(&trees.output).unwrap());
            assert_eq!(trees.output["type"], "object", "{}", tool.name);
            assert!(!trees.input.is_empty(), "{}", tool.name);
        }
        assert!(committed_text("no_such_tool").is_none());
    }
}
