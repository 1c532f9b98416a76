//! `SNOWLUMA_MCP_MAX_TOOLS`: a client that caps its tool list must never be handed a longer
//! one, so a toolset choice that would exceed the cap stops the server at start-up, naming how
//! many tools each toolset adds.

use std::collections::BTreeMap;

use crate::exec::ClientCapabilities;
use crate::tools::registry::TOOLS;
use crate::tools::{Services, action_tools};

/// The most tools `tools/list` can hold for any client (every optional capability declared),
/// checked against the cap.
pub fn check(shared: &Services) -> Result<(), String> {
    let Some(max) = shared.config.results.max_tools else {
        return Ok(());
    };
    let every = ClientCapabilities {
        form_elicitation: true,
        apps_ui: true,
        tasks: shared.tasks.is_some(),
    };
    let general = TOOLS
        .iter()
        .filter(|tool| tool.available(shared.setup(), &every))
        .count();
    let typed = action_tools::definitions(shared);
    let total = general + typed.len();
    if total <= max {
        return Ok(());
    }
    let mut per_toolset: BTreeMap<&str, usize> = BTreeMap::new();
    for tool in &typed {
        // A typed tool's name may be a safe spelling of its action's: look it up as one.
        if let Some(resolved) = action_tools::find(shared, tool.name) {
            *per_toolset.entry(resolved.meta.category().id).or_default() += 1;
        }
    }
    let counts = per_toolset
        .iter()
        .map(|(toolset, count)| format!("{toolset} {count}"))
        .collect::<Vec<_>>()
        .join(", ");
    Err(format!(
        "SNOWLUMA_MCP_MAX_TOOLS is {max}, but tools/list would hold {total} tools: {general} general tools plus typed tools per toolset ({counts}); choose fewer SNOWLUMA_MCP_TOOLSETS or raise SNOWLUMA_MCP_MAX_TOOLS"
    ))
}
