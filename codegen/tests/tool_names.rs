//! Every typed tool name the real spec produces is one that LLM APIs accept
//! (`^[a-zA-Z0-9_-]{1,64}$`), distinct, and keeps the action's real name beside it.

use std::collections::BTreeSet;
use std::path::Path;

use snowluma_mcp_codegen::ir::{is_portable_tool_name, lower, tool_name};
use snowluma_mcp_codegen::load::load;

#[test]
fn every_typed_tool_name_is_portable_and_unique() {
    let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join("../spec");
    let catalog = lower(&load(&spec).expect("the repository's spec loads"));
    assert!(!catalog.actions.is_empty());
    let mut seen = BTreeSet::new();
    for action in &catalog.actions {
        assert!(
            is_portable_tool_name(&action.tool_name),
            "action `{}` has tool name `{}`, which LLM APIs refuse",
            action.name,
            action.tool_name
        );
        assert!(
            seen.insert(action.tool_name.as_str()),
            "two actions share the tool name `{}`",
            action.tool_name
        );
    }
    // The actions whose real names are not portable keep those names elsewhere.
    let renamed: Vec<_> = catalog
        .actions
        .iter()
        .filter(|a| a.tool_name != a.name)
        .map(|a| (a.name.as_str(), a.tool_name.as_str()))
        .collect();
    assert!(renamed.contains(&(".handle_quick_operation", "_handle_quick_operation")));
    assert!(renamed.contains(&(".get_word_slices", "_get_word_slices")));
}

#[test]
fn unsafe_characters_become_underscores_and_long_names_are_cut() {
    assert_eq!(tool_name(".ocr_image"), "_ocr_image");
    assert_eq!(tool_name("send_group_msg"), "send_group_msg");
    let long = "a".repeat(80);
    assert_eq!(tool_name(&long).len(), 64);
    assert!(is_portable_tool_name(&tool_name(&long)));
    assert!(!is_portable_tool_name(".get_word_slices"));
    assert!(!is_portable_tool_name(""));
}
