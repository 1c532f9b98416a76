//! Which `SNOWLUMA_MCP_TOOLSETS` entries yield no typed tool in this configuration (docs mode
//! lists none; read mode lists only read-only ordinary actions; allow and deny lists remove
//! more), so start-up and `check` can say so instead of leaving a user to wonder why the
//! tools never appear. The listing asks the same gate (server/action_tools.rs).

use super::gate::{action_gate, action_tool_entry};
use super::policy::ActionPolicy;
use crate::catalog::{ACTIONS, CATEGORIES, find_category, resolve};
use crate::config::Mode;

/// One sentence per toolset entry that lists no tool, naming the entry and why.
pub fn empty_toolsets(mode: Mode, policy: &ActionPolicy, toolsets: &[String]) -> Vec<String> {
    let listed = |index: usize| {
        let Some(resolved) = resolve(ACTIONS[index].name) else {
            return false;
        };
        action_gate(action_tool_entry(resolved.meta), mode, policy, resolved).is_ok()
    };
    if !toolsets.is_empty() && !mode.executes() {
        return vec![format!(
            "SNOWLUMA_MCP_TOOLSETS={} lists no typed tool in docs mode, which runs no action; \
             set SNOWLUMA_MCP_ENDPOINT (and SNOWLUMA_MCP_MODE=read or write) to get them",
            toolsets.join(",")
        )];
    }
    let mut problems = Vec::new();
    for entry in toolsets {
        let categories: Vec<usize> = if entry == "all" {
            (0..CATEGORIES.len()).collect()
        } else {
            let id = entry.strip_prefix("category:").unwrap_or(entry);
            find_category(id).into_iter().collect()
        };
        let in_entry = |index: &usize| categories.contains(&ACTIONS[*index].category);
        let total = (0..ACTIONS.len()).filter(in_entry).count();
        if total == 0 || (0..ACTIONS.len()).filter(in_entry).any(listed) {
            continue;
        }
        let why = if mode.writes() {
            "the allow or deny list (SNOWLUMA_MCP_ALLOW_ACTIONS / SNOWLUMA_MCP_DENY_ACTIONS) \
             removes all of them"
                .to_string()
        } else {
            format!(
                "{} mode lists only read-only actions and this category has none that may run; \
                 use SNOWLUMA_MCP_MODE=write for them",
                mode.as_str()
            )
        };
        problems.push(format!(
            "SNOWLUMA_MCP_TOOLSETS entry `{entry}` ({total} actions) lists no typed tool: {why}"
        ));
    }
    problems
}
