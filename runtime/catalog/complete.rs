//! Name completion: action names and aliases that start with what the user typed, ranked the
//! way keyword search ranks names (an exact name or alias first, then names before aliases,
//! shorter before longer), at most [`MAX_COMPLETIONS`].

use super::ACTIONS;

/// The most values one completion answer carries (MCP's limit).
pub const MAX_COMPLETIONS: usize = 100;

/// The completions of `prefix` (case-insensitive, surrounding white space ignored) and how
/// many names and aliases matched in all.
pub fn complete(prefix: &str) -> (Vec<&'static str>, usize) {
    let prefix = prefix.trim().to_lowercase();
    let mut matched: Vec<(u8, usize, usize, &'static str)> = Vec::new();
    for (index, action) in ACTIONS.iter().enumerate() {
        let names = std::iter::once((action.name, false))
            .chain(action.aliases.iter().map(|alias| (*alias, true)));
        for (name, is_alias) in names {
            let lower = name.to_lowercase();
            if !lower.starts_with(&prefix) {
                continue;
            }
            let rank = match (lower == prefix, is_alias) {
                (true, _) => 0,
                (false, false) => 1,
                (false, true) => 2,
            };
            matched.push((rank, name.len(), index, name));
        }
    }
    matched.sort();
    let total = matched.len();
    let values = matched
        .into_iter()
        .take(MAX_COMPLETIONS)
        .map(|(_, _, _, name)| name)
        .collect();
    (values, total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_names_first_then_shorter_names_before_aliases() {
        let (values, total) = complete("get_msg");
        assert_eq!(values[0], "get_msg");
        assert!(total >= values.len());
        assert!(
            values
                .iter()
                .all(|v| v.to_lowercase().starts_with("get_msg"))
        );
        let (all, total) = complete("");
        assert_eq!(all.len(), MAX_COMPLETIONS);
        assert!(total > MAX_COMPLETIONS);
        assert!(complete("zzz_nothing").0.is_empty());
    }
}
