//! The `tools/list` answer, built once per capability set.
//!
//! Every tool definition depends only on this process's configuration (mode, events, task
//! directory: fixed in [`Shared`](super::Shared)) and on the capabilities the client declared.
//! Building one means generating JSON Schemas with schemars, so the list is built the first
//! time a capability set asks for it and kept; later requests only clone the definitions
//! (names and descriptions are borrowed, schemas are `Arc`s).
//!
//! Tools that depend on configuration (per-action tools, allow/deny lists) belong in
//! [`build`]: the cache key already includes everything a definition may depend on besides the
//! configuration itself.

use std::sync::{Arc, OnceLock};

use rmcp::model::Tool;

use super::registry::TOOLS;
use crate::config::Mode;
use crate::exec::{ClientCapabilities, Setup};

/// One slot per combination of the capabilities that change the list.
const SLOTS: usize = 8;

/// The cached definitions of one process (one configuration).
#[derive(Default)]
pub struct ToolLists {
    slots: [OnceLock<Arc<[Tool]>>; SLOTS],
}

impl ToolLists {
    /// The definitions a client with `caps` is offered; built on first use.
    pub fn get(&self, mode: Mode, setup: Setup, caps: &ClientCapabilities) -> Arc<[Tool]> {
        self.slots[slot(caps)]
            .get_or_init(|| build(mode, setup, caps).into())
            .clone()
    }
}

/// The slot of a capability set: every field of [`ClientCapabilities`] is one bit, so two
/// requests share a list only when they declared the same capabilities.
fn slot(caps: &ClientCapabilities) -> usize {
    let ClientCapabilities {
        form_elicitation,
        apps_ui,
        tasks,
    } = *caps;
    usize::from(form_elicitation) | usize::from(apps_ui) << 1 | usize::from(tasks) << 2
}

/// The definitions, in registry order, of the tools this setup and these capabilities offer.
fn build(mode: Mode, setup: Setup, caps: &ClientCapabilities) -> Vec<Tool> {
    TOOLS
        .iter()
        .filter(|t| t.available(setup, caps))
        .map(|t| t.definition(mode, caps))
        .collect()
}

#[cfg(test)]
mod tests {
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
            assert!(seen.insert(slot(&caps)));
            assert!(slot(&caps) < SLOTS);
        }
    }

    #[test]
    fn cached_list_equals_a_fresh_build() {
        let lists = ToolLists::default();
        let setup = Setup {
            mode: Mode::Write,
            events: true,
        };
        for apps_ui in [false, true] {
            let caps = ClientCapabilities {
                apps_ui,
                ..ClientCapabilities::default()
            };
            let first = lists.get(Mode::Write, setup, &caps);
            let again = lists.get(Mode::Write, setup, &caps);
            assert!(Arc::ptr_eq(&first, &again), "built once");
            let fresh = serde_json::to_value(build(Mode::Write, setup, &caps)).unwrap();
            assert_eq!(serde_json::to_value(&*first).unwrap(), fresh);
        }
    }
}
