//! The allow and deny lists and the typed toolsets, resolved against the catalog once at
//! start-up. What they mean for a call is decided by `gate::policy_gate`; this module only
//! turns names, aliases and `category:<id>` entries into per-action facts, and refuses
//! entries that name nothing with a "did you mean".

use crate::catalog::{self, ACTIONS, CATEGORIES};
use crate::config::ActionSelection;

pub const ALLOW_VAR: &str = "SNOWLUMA_MCP_ALLOW_ACTIONS";
pub const DENY_VAR: &str = "SNOWLUMA_MCP_DENY_ACTIONS";
pub const TOOLSETS_VAR: &str = "SNOWLUMA_MCP_TOOLSETS";

/// Why an action may not run on this server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denial {
    /// Named (by itself, an alias or its category) in the deny list.
    Denied,
    /// An allow list is set and does not name it.
    NotAllowed,
}

impl Denial {
    /// The setting responsible.
    pub fn setting(self) -> &'static str {
        match self {
            Denial::Denied => DENY_VAR,
            Denial::NotAllowed => ALLOW_VAR,
        }
    }
}

/// Per-action facts from the configuration, index-aligned with [`ACTIONS`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionPolicy {
    denials: Vec<Option<Denial>>,
    typed: Vec<bool>,
}

impl Default for ActionPolicy {
    /// Nothing denied, no typed tools: the behaviour without any of the settings.
    fn default() -> Self {
        ActionPolicy {
            denials: vec![None; ACTIONS.len()],
            typed: vec![false; ACTIONS.len()],
        }
    }
}

impl ActionPolicy {
    /// Resolves every entry; the first unknown one is an error naming the setting, the entry
    /// and the closest known names.
    pub fn resolve(selection: &ActionSelection) -> Result<ActionPolicy, String> {
        let mut policy = ActionPolicy::default();
        if let Some(allow) = &selection.allow {
            let mut allowed = vec![false; ACTIONS.len()];
            for entry in allow {
                for index in actions_of(ALLOW_VAR, entry)? {
                    allowed[index] = true;
                }
            }
            for (denial, allowed) in policy.denials.iter_mut().zip(allowed) {
                if !allowed {
                    *denial = Some(Denial::NotAllowed);
                }
            }
        }
        for entry in &selection.deny {
            for index in actions_of(DENY_VAR, entry)? {
                policy.denials[index] = Some(Denial::Denied);
            }
        }
        for entry in &selection.toolsets {
            let categories: Vec<usize> = if entry == "all" {
                (0..CATEGORIES.len()).collect()
            } else {
                let id = entry.strip_prefix("category:").unwrap_or(entry);
                vec![category(TOOLSETS_VAR, id)?]
            };
            for (typed, action) in policy.typed.iter_mut().zip(ACTIONS.iter()) {
                *typed |= categories.contains(&action.category);
            }
        }
        Ok(policy)
    }

    /// Why the action at `index` may not run, if it may not.
    pub fn denial(&self, index: usize) -> Option<Denial> {
        self.denials.get(index).copied().flatten()
    }

    /// Whether the action at `index` is listed as its own typed tool.
    pub fn typed_tool(&self, index: usize) -> bool {
        self.typed.get(index).copied().unwrap_or(false)
    }

    /// The indices of the actions listed as typed tools, in catalog order.
    pub fn typed_tools(&self) -> impl Iterator<Item = usize> + '_ {
        self.typed
            .iter()
            .enumerate()
            .filter_map(|(i, typed)| typed.then_some(i))
    }

    /// Whether any action is denied.
    pub fn denies_any(&self) -> bool {
        self.denials.iter().any(Option::is_some)
    }
}

/// The actions one list entry names: an action, an alias, or `category:<id>`.
fn actions_of(variable: &str, entry: &str) -> Result<Vec<usize>, String> {
    if let Some(id) = entry.strip_prefix("category:") {
        let category = category(variable, id.trim())?;
        return Ok(ACTIONS
            .iter()
            .enumerate()
            .filter(|(_, a)| a.category == category)
            .map(|(i, _)| i)
            .collect());
    }
    match catalog::lookup(entry) {
        Ok(resolved) => Ok(vec![resolved.index]),
        Err(unknown) => {
            let hint = if unknown.similar.is_empty() {
                "`snowluma-mcp catalog search <words>` finds actions".to_string()
            } else {
                let names: Vec<String> = unknown.similar.iter().map(|s| format!("`{s}`")).collect();
                format!("did you mean {}?", names.join(", "))
            };
            Err(format!(
                "{variable}: `{entry}` is not an action, alias or `category:<id>` of the bundled catalog; {hint}"
            ))
        }
    }
}

fn category(variable: &str, id: &str) -> Result<usize, String> {
    catalog::find_category(id).ok_or_else(|| {
        let ids: Vec<&str> = CATEGORIES.iter().map(|c| c.id).collect();
        let closest = ids
            .iter()
            .copied()
            .min_by_key(|c| strsim_distance(c, id))
            .unwrap_or_default();
        format!(
            "{variable}: `{id}` is not a category; did you mean `{closest}`? categories: {}",
            ids.join(", ")
        )
    })
}

/// A cheap closeness measure for category ids (few, short): shared prefix first.
fn strsim_distance(known: &str, wrong: &str) -> usize {
    let common = known
        .chars()
        .zip(wrong.chars())
        .take_while(|(a, b)| a == b)
        .count();
    known.len().max(wrong.len()) - common
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selection(
        allow: Option<&str>,
        deny: Option<&str>,
        toolsets: Option<&str>,
    ) -> ActionSelection {
        ActionSelection::parse(allow, deny, toolsets).unwrap()
    }

    #[test]
    fn deny_wins_over_allow_and_aliases_resolve() {
        let policy = ActionPolicy::resolve(&selection(
            Some("category:info,bot_exit"),
            Some("bot_exit,get_status"),
            None,
        ))
        .unwrap();
        let index = |name| catalog::resolve(name).unwrap().index;
        assert_eq!(policy.denial(index("get_login_info")), None);
        assert_eq!(policy.denial(index("get_status")), Some(Denial::Denied));
        assert_eq!(policy.denial(index("bot_exit")), Some(Denial::Denied));
        assert_eq!(
            policy.denial(index("send_group_msg")),
            Some(Denial::NotAllowed)
        );
    }

    #[test]
    fn unknown_entries_name_the_setting_and_a_suggestion() {
        let error = ActionPolicy::resolve(&selection(None, Some("bot_exti"), None)).unwrap_err();
        assert!(error.starts_with(DENY_VAR), "{error}");
        assert!(error.contains("`bot_exit`"), "{error}");
        let error = ActionPolicy::resolve(&selection(None, None, Some("mesage"))).unwrap_err();
        assert!(
            error.starts_with(TOOLSETS_VAR) && error.contains("`message`"),
            "{error}"
        );
    }

    #[test]
    fn toolsets_select_whole_categories() {
        let policy = ActionPolicy::resolve(&selection(None, None, Some("info"))).unwrap();
        let typed: Vec<&str> = policy.typed_tools().map(|i| ACTIONS[i].name).collect();
        assert_eq!(
            typed.len(),
            CATEGORIES[catalog::find_category("info").unwrap()].count
        );
        assert!(typed.contains(&"get_status"));
        let all = ActionPolicy::resolve(&selection(None, None, Some("all"))).unwrap();
        assert_eq!(all.typed_tools().count(), ACTIONS.len());
    }
}
