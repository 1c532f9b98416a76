//! The action-selection settings: allow and deny lists and the typed toolsets. Only their
//! syntax is checked here (configuration sits below the catalog); `exec::ActionPolicy`
//! resolves every entry against the catalog at start-up and refuses unknown ones.

use super::ConfigError;

/// Which actions may run and which get a typed tool, as written in the configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ActionSelection {
    /// `SNOWLUMA_MCP_ALLOW_ACTIONS`: when set, only these may run.
    pub allow: Option<Vec<String>>,
    /// `SNOWLUMA_MCP_DENY_ACTIONS`: never run these (wins over allow).
    pub deny: Vec<String>,
    /// `SNOWLUMA_MCP_TOOLSETS`: categories (or `all`) whose actions get one typed tool each.
    pub toolsets: Vec<String>,
}

impl ActionSelection {
    pub fn parse(
        allow: Option<&str>,
        deny: Option<&str>,
        toolsets: Option<&str>,
    ) -> Result<ActionSelection, ConfigError> {
        Ok(ActionSelection {
            allow: allow
                .filter(|a| !a.trim().is_empty())
                .map(|a| entries("SNOWLUMA_MCP_ALLOW_ACTIONS", a))
                .transpose()?,
            deny: entries("SNOWLUMA_MCP_DENY_ACTIONS", deny.unwrap_or_default())?,
            toolsets: entries("SNOWLUMA_MCP_TOOLSETS", toolsets.unwrap_or_default())?,
        })
    }

    /// Whether any of the three settings is in use.
    pub fn is_empty(&self) -> bool {
        self.allow.is_none() && self.deny.is_empty() && self.toolsets.is_empty()
    }
}

/// Most entries one list may hold; the catalog has fewer than 200 actions and aliases.
const MAX_ENTRIES: usize = 512;

/// A comma-separated list, entries trimmed, empty entries (`a,,b`, a trailing comma) dropped.
fn entries(variable: &str, list: &str) -> Result<Vec<String>, ConfigError> {
    let entries: Vec<String> = list
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(str::to_string)
        .collect();
    if entries.len() > MAX_ENTRIES {
        return Err(ConfigError(format!(
            "{variable} has {} entries; at most {MAX_ENTRIES} are read (use `category:<id>` for whole categories)",
            entries.len()
        )));
    }
    if let Some(long) = entries.iter().find(|e| e.chars().count() > 256) {
        return Err(ConfigError(format!(
            "{variable} has an entry of {} characters; names are at most 256",
            long.chars().count()
        )));
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_trimmed_and_empty_entries_dropped() {
        let selection =
            ActionSelection::parse(Some(" get_status , ,"), Some("bot_exit,"), None).unwrap();
        assert_eq!(selection.allow, Some(vec!["get_status".to_string()]));
        assert_eq!(selection.deny, vec!["bot_exit".to_string()]);
        assert!(selection.toolsets.is_empty());
        assert!(
            ActionSelection::parse(Some("  "), None, None)
                .unwrap()
                .is_empty()
        );
    }
}
