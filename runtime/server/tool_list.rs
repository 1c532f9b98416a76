//! The `tools/list` answer, built once per capability set.
//!
//! Every tool definition depends only on this process's configuration (mode, events, task
//! directory: fixed in the tools' [`Services`]) and on the capabilities the client declared.
//! For rmcp's HTTP transport, building one means parsing each listed tool's committed schemas
//! (`tool_schemas`) into value trees; over stdio the definitions hold placeholders instead and
//! the encoder writes the committed text ([`SchemaCopy`]). Either way the list is built the
//! first time a capability set asks for it and kept; later requests only clone the
//! definitions (names and descriptions are borrowed, schemas are `Arc`s).
//!
//! Tools that depend on configuration (the typed per-action tools of `SNOWLUMA_MCP_TOOLSETS`,
//! filtered by the allow/deny lists) are added in [`build`]: the cache key already includes
//! everything a definition may depend on besides the configuration itself.

use std::sync::{Arc, OnceLock};

use rmcp::model::{Tool, ToolAnnotations};

use super::tool_schemas::{self, Schemas};
use crate::config::Mode;
use crate::exec::ClientCapabilities;
use crate::tools::registry::{TOOLS, ToolSpec};
use crate::tools::{Definition, Services, action_tools};

/// One slot per combination of the capabilities that change the list, and per
/// [`SchemaCopy`].
const SLOTS: usize = 16;

/// How listed definitions carry their input and output schemas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchemaCopy {
    /// Value trees, for a transport that serializes the list itself (rmcp's HTTP transport).
    Tree,
    /// Placeholders where the committed text exists, which this crate's stdio encoder
    /// replaces with that text (`encode`; `tool_schemas::Schemas::placeholder`).
    Committed,
}

/// The cached definitions of one process (one configuration).
#[derive(Default)]
pub struct ToolLists {
    slots: [OnceLock<Arc<[Tool]>>; SLOTS],
}

impl ToolLists {
    /// The definitions a client with `caps` is offered, with schemas as `copy` says; built on
    /// first use.
    pub fn get(
        &self,
        shared: &Services,
        caps: &ClientCapabilities,
        copy: SchemaCopy,
    ) -> Arc<[Tool]> {
        self.slots[slot(caps, copy)]
            .get_or_init(|| build(shared, caps, copy).into())
            .clone()
    }
}

/// The slot of a capability set and schema copy: every field of [`ClientCapabilities`] is
/// one bit, so two requests share a list only when they declared the same capabilities.
fn slot(caps: &ClientCapabilities, copy: SchemaCopy) -> usize {
    let ClientCapabilities {
        form_elicitation,
        apps_ui,
        tasks,
    } = *caps;
    usize::from(form_elicitation)
        | usize::from(apps_ui) << 1
        | usize::from(tasks) << 2
        | usize::from(copy == SchemaCopy::Committed) << 3
}

/// The definitions, in registry order, of the tools this process and these capabilities
/// offer, followed by the typed per-action tools the configuration selects.
fn build(shared: &Services, caps: &ClientCapabilities, copy: SchemaCopy) -> Vec<Tool> {
    let (mode, setup) = (shared.config.mode, shared.setup());
    let mut tools: Vec<Tool> = TOOLS
        .iter()
        .filter(|t| t.available(setup, caps))
        .map(|t| registry_tool(t, mode, caps, copy))
        .collect();
    tools.extend(action_tools::definitions(shared).into_iter().map(tool));
    tools
}

/// The MCP tool of a registry entry, as this mode and these capabilities see it.
pub fn registry_tool(
    spec: &ToolSpec,
    mode: Mode,
    caps: &ClientCapabilities,
    copy: SchemaCopy,
) -> Tool {
    tool(spec.definition(mode, caps, schemas(spec, copy)))
}

/// A registry tool's schemas as `copy` says: placeholders where the encoder writes the
/// committed text, else the committed trees, else (no committed entry) derived ones.
fn schemas(spec: &ToolSpec, copy: SchemaCopy) -> Schemas {
    match copy {
        SchemaCopy::Committed if tool_schemas::committed_text(spec.name).is_some() => {
            Schemas::placeholder()
        }
        _ => tool_schemas::committed(spec.name).unwrap_or_else(|| spec.derived_schemas()),
    }
}

/// A definition as MCP's tool: read-only tools are idempotent and not destructive, the
/// others neither.
fn tool(definition: Definition) -> Tool {
    let Definition {
        name,
        title,
        description,
        schemas,
        read_only,
        open_world,
        meta,
    } = definition;
    let mut tool = Tool::new(name, description, schemas.input);
    tool.title = Some(title.to_string());
    tool.output_schema = Some(Arc::new(schemas.output));
    let mut annotations = ToolAnnotations::new();
    annotations.title = Some(title.to_string());
    annotations.read_only_hint = Some(read_only);
    annotations.destructive_hint = Some(!read_only);
    annotations.idempotent_hint = Some(read_only);
    annotations.open_world_hint = Some(open_world);
    tool.annotations = Some(annotations);
    tool.meta = meta.map(rmcp::model::MetaObject);
    tool
}

#[cfg(test)]
mod tests {
    use super::super::tool_schemas::holds_placeholder;
    use super::*;

    #[test]
    fn every_capability_set_has_its_own_slot() {
        let mut seen = std::collections::HashSet::new();
        for bits in 0..SLOTS {
            let caps = ClientCapabilities {
                form_elicitation: bits & 1 != 0,
                apps_ui: bits & 2 != 0,
                tasks: bits & 4 != 0,
            };
            let copy = if bits & 8 != 0 {
                SchemaCopy::Committed
            } else {
                SchemaCopy::Tree
            };
            assert!(seen.insert(slot(&caps, copy)));
            assert!(slot(&caps, copy) < SLOTS);
        }
    }

    #[test]
    fn cached_list_equals_a_fresh_build_and_carries_the_typed_tools() {
        let config = crate::config::Config::try_from_args([
            "snowluma-mcp",
            "--mode",
            "read",
            "--endpoint",
            "http://127.0.0.1:9/",
            "--events-url",
            "ws://127.0.0.1:9/",
            "--toolsets",
            "message",
        ])
        .unwrap();
        let shared = Services::new(config).unwrap();
        let lists = ToolLists::default();
        for apps_ui in [false, true] {
            let caps = ClientCapabilities {
                apps_ui,
                ..ClientCapabilities::default()
            };
            let first = lists.get(&shared, &caps, SchemaCopy::Tree);
            let again = lists.get(&shared, &caps, SchemaCopy::Tree);
            assert!(Arc::ptr_eq(&first, &again), "built once");
            let fresh = serde_json::to_value(build(&shared, &caps, SchemaCopy::Tree)).unwrap();
            assert_eq!(serde_json::to_value(&*first).unwrap(), fresh);
            // The stdio list: placeholders for the registry tools, trees for the typed ones
            // (they have no committed text), otherwise the same definitions.
            let stdio = lists.get(&shared, &caps, SchemaCopy::Committed);
            assert!(!Arc::ptr_eq(&first, &stdio), "a slot of its own");
            assert_eq!(stdio.len(), first.len());
            for (tree, copy) in first.iter().zip(stdio.iter()) {
                assert_eq!(tree.name, copy.name);
                let typed = crate::catalog::ACTIONS.iter().any(|a| a.name == tree.name);
                assert_eq!(holds_placeholder(copy), !typed, "{}", tree.name);
                let mut same = copy.clone();
                same.input_schema = tree.input_schema.clone();
                same.output_schema = tree.output_schema.clone();
                assert_eq!(&same, tree, "{}", tree.name);
            }
            let names: Vec<&str> = first.iter().map(|t| t.name.as_ref()).collect();
            assert!(names.contains(&"subscribe_events"), "{names:?}");
            assert!(
                names.contains(&"get_msg"),
                "typed read-only tool listed: {names:?}"
            );
            assert!(
                !names.contains(&"send_msg"),
                "write action hidden in read mode"
            );
        }
    }
}
