//! The one place mode rules are written. Tool listing asks [`tool_available`]; every call is
//! checked by [`tool_gate`] (tools gated as a whole) or [`action_gate`] (the executing tools,
//! which can name the right tool or mode for the action at hand), whether or not the tool
//! was listed.

use super::policy::{ActionPolicy, Denial};
use crate::catalog::{ActionMeta, Resolved};
use crate::config::Mode;
use crate::outcome::{ErrorKind, ToolReply};

/// Which executing tool a call came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    Query,
    Invoke,
}

impl Entry {
    pub fn tool(self) -> &'static str {
        match self {
            Entry::Query => "query_action",
            Entry::Invoke => "invoke_action",
        }
    }
}

/// The least mode a tool needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Every mode, docs included.
    Always,
    /// Read or write mode: the server can reach SnowLuma.
    Execution,
    /// Write mode.
    Writes,
    /// Read or write mode with live events configured (`SNOWLUMA_MCP_EVENTS_URL`).
    Events,
}

impl Access {
    fn allows(self, setup: Setup) -> bool {
        match self {
            Access::Always => true,
            Access::Execution => setup.mode.executes(),
            Access::Writes => setup.mode.writes(),
            Access::Events => setup.mode.executes() && setup.events,
        }
    }

    fn least_mode(self) -> Mode {
        match self {
            Access::Always => Mode::Docs,
            Access::Execution | Access::Events => Mode::Read,
            Access::Writes => Mode::Write,
        }
    }
}

/// What this server was configured to offer: its mode and its optional features.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setup {
    pub mode: Mode,
    /// `SNOWLUMA_MCP_EVENTS_URL` is set.
    pub events: bool,
}

/// A client capability a tool may need, as the client declared it for the request at hand
/// (2026-07-28 clients declare capabilities per request, legacy clients once at initialize).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capability {
    /// Form elicitation (input completion).
    FormElicitation,
    /// MCP Apps (`io.modelcontextprotocol/ui` with the mcp-app HTML type).
    AppsUi,
    /// The tasks extension (`io.modelcontextprotocol/tasks`).
    Tasks,
}

/// The capabilities the client declared for one request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientCapabilities {
    pub form_elicitation: bool,
    pub apps_ui: bool,
    pub tasks: bool,
}

impl ClientCapabilities {
    pub fn has(&self, capability: Capability) -> bool {
        match capability {
            Capability::FormElicitation => self.form_elicitation,
            Capability::AppsUi => self.apps_ui,
            Capability::Tasks => self.tasks,
        }
    }
}

/// What a tool needs to be offered: a mode and, for some, a client capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requirement {
    pub access: Access,
    pub capability: Option<Capability>,
}

/// Whether a tool with `requirement` is offered to this client by this server.
pub fn tool_available(requirement: Requirement, setup: Setup, caps: &ClientCapabilities) -> bool {
    requirement.access.allows(setup) && requirement.capability.is_none_or(|c| caps.has(c))
}

/// Refuses a call to a tool the mode (or a missing feature) does not offer.
pub fn tool_gate(tool: &str, access: Access, setup: Setup) -> Result<(), ToolReply> {
    if access.allows(setup) {
        return Ok(());
    }
    let mode = setup.mode;
    if access == Access::Events && mode.executes() {
        return Err(ToolReply::error(
            ErrorKind::Mode,
            format!("{tool} needs live events, which this server has not configured"),
            "set SNOWLUMA_MCP_EVENTS_URL to SnowLuma's WebSocket adapter (e.g. ws://127.0.0.1:3001/) in the MCP client's server configuration",
        ));
    }
    Err(ToolReply::error(
        ErrorKind::Mode,
        format!(
            "{tool} needs SNOWLUMA_MCP_MODE={} or higher; this server runs in {} mode",
            access.least_mode().as_str(),
            mode.as_str()
        ),
        "change SNOWLUMA_MCP_MODE (and SNOWLUMA_MCP_ENDPOINT) in the MCP client's server configuration",
    ))
}

/// The executing tool whose gate an action's typed tool (`SNOWLUMA_MCP_TOOLSETS`) passes:
/// query_action for read-only ordinary actions, invoke_action for writes and streams.
pub fn action_tool_entry(action: &ActionMeta) -> Entry {
    if action.read_only && !action.is_stream() {
        Entry::Query
    } else {
        Entry::Invoke
    }
}

/// Whether an action may run through a tool in a mode: read-only actions through
/// `query_action` in read or write mode, everything else through `invoke_action` in write
/// mode, stream actions in write mode only.
///
/// The allow and deny lists come first: a denied action is refused in every mode, by every
/// executing tool, with the setting that denies it.
pub fn action_gate(
    entry: Entry,
    mode: Mode,
    policy: &ActionPolicy,
    resolved: Resolved,
) -> Result<(), ToolReply> {
    let action = resolved.meta;
    if let Some(denial) = policy.denial(resolved.index) {
        let setting = denial.setting();
        return Err(ToolReply::error(
            ErrorKind::Denied,
            match denial {
                Denial::Denied => format!(
                    "`{}` is denied on this server by {setting}; nothing was sent",
                    action.name
                ),
                Denial::NotAllowed => format!(
                    "`{}` is not in {setting}, the list of actions this server may run; nothing was sent",
                    action.name
                ),
            },
            format!(
                "use another action, or change {setting} in the MCP client's server configuration (get_action still documents `{}`)",
                action.name
            ),
        ));
    }
    if !mode.executes() {
        return Err(ToolReply::error(
            ErrorKind::Mode,
            format!(
                "{} cannot run `{}`: this server runs in docs mode and never contacts SnowLuma",
                entry.tool(),
                action.name
            ),
            "set SNOWLUMA_MCP_ENDPOINT and SNOWLUMA_MCP_MODE=read (or write) in the MCP client's server configuration",
        ));
    }
    if action.is_stream() && (!mode.writes() || entry == Entry::Query) {
        return Err(ToolReply::error(
            ErrorKind::Mode,
            format!(
                "`{}` is a stream action; stream actions need invoke_action in write mode",
                action.name
            ),
            if mode.writes() {
                "call invoke_action instead"
            } else {
                "set SNOWLUMA_MCP_MODE=write to allow stream actions"
            },
        ));
    }
    match entry {
        Entry::Query if !action.read_only => Err(ToolReply::error(
            ErrorKind::Mode,
            format!(
                "query_action only runs read-only actions; `{}` changes state",
                action.name
            ),
            if mode.writes() {
                "call invoke_action with the same arguments".to_string()
            } else {
                "this server runs in read mode; writes need SNOWLUMA_MCP_MODE=write and invoke_action".to_string()
            },
        )),
        Entry::Invoke if !mode.writes() => Err(ToolReply::error(
            ErrorKind::Mode,
            format!(
                "invoke_action needs write mode; this server runs in {} mode",
                mode.as_str()
            ),
            if action.read_only {
                format!("`{}` is read-only: call query_action instead", action.name)
            } else {
                "set SNOWLUMA_MCP_MODE=write in the MCP client's server configuration".to_string()
            },
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::resolve;

    #[test]
    fn availability_follows_mode_and_capability() {
        let none = ClientCapabilities::default();
        let forms = ClientCapabilities {
            form_elicitation: true,
            ..none
        };
        let plain = Requirement {
            access: Access::Execution,
            capability: None,
        };
        let docs = Setup {
            mode: Mode::Docs,
            events: true,
        };
        let read = Setup {
            mode: Mode::Read,
            events: false,
        };
        let write = Setup {
            mode: Mode::Write,
            events: false,
        };
        assert!(!tool_available(plain, docs, &none));
        assert!(tool_available(plain, read, &none));
        let events = Requirement {
            access: Access::Events,
            capability: None,
        };
        assert!(
            !tool_available(events, docs, &none),
            "docs mode never connects"
        );
        assert!(!tool_available(events, read, &none), "no events URL");
        let with_events = Setup {
            events: true,
            ..read
        };
        assert!(tool_available(events, with_events, &none));
        let refusal = tool_gate("subscribe_events", Access::Events, read).unwrap_err();
        assert!(
            refusal
                .diagnostics
                .next_step
                .unwrap()
                .contains("SNOWLUMA_MCP_EVENTS_URL")
        );
        let needs_forms = Requirement {
            access: Access::Always,
            capability: Some(Capability::FormElicitation),
        };
        assert!(!tool_available(needs_forms, write, &none));
        assert!(tool_available(needs_forms, docs, &forms));
    }

    #[test]
    fn action_gate_rules() {
        let read = resolve("get_status").unwrap();
        let write = resolve("send_group_msg").unwrap();
        let stream = resolve("download_file_stream").unwrap();
        let open = ActionPolicy::default();
        assert!(action_gate(Entry::Query, Mode::Read, &open, read).is_ok());
        assert!(action_gate(Entry::Query, Mode::Docs, &open, read).is_err());
        assert!(action_gate(Entry::Query, Mode::Write, &open, write).is_err());
        assert!(action_gate(Entry::Invoke, Mode::Read, &open, write).is_err());
        assert!(action_gate(Entry::Invoke, Mode::Write, &open, write).is_ok());
        assert!(action_gate(Entry::Query, Mode::Write, &open, stream).is_err());
        assert!(action_gate(Entry::Invoke, Mode::Write, &open, stream).is_ok());
        let selection =
            crate::config::ActionSelection::parse(None, Some("get_status"), None).unwrap();
        let deny = ActionPolicy::resolve(&selection).unwrap();
        let refusal = action_gate(Entry::Query, Mode::Write, &deny, read).unwrap_err();
        assert_eq!(refusal.diagnostics.kind, Some(ErrorKind::Denied));
        assert!(
            refusal
                .diagnostics
                .message
                .unwrap()
                .contains("SNOWLUMA_MCP_DENY_ACTIONS")
        );
        let read = Setup {
            mode: Mode::Read,
            events: false,
        };
        assert!(tool_gate("x", Access::Writes, read).is_err());
    }
}
