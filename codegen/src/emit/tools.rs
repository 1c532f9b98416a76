//! generated/tools.rs: one typed MCP tool per action (the opt-in toolsets). Each entry holds
//! the tool's description, its inputSchema (the action's params schema) and the typed OneBot
//! envelope whose `data` is the action's returnsSchema. The runtime only adds what every tool
//! shares: the `{result, diagnostics}` wrapper and, for stream actions, the stream summaries.

use proc_macro2::TokenStream;
use quote::quote;
use serde_json::{Value, json};

use crate::ir::{Action, Catalog};
use crate::model::StreamKind;

pub fn emit(catalog: &Catalog) -> TokenStream {
    let count = catalog.actions.len();
    let tools = catalog.actions.iter().map(|a| {
        let name = &a.tool_name;
        let action = &a.name;
        let description = description(catalog, a);
        let input = serde_json::to_string(&a.input_schema).expect("schemas serialize");
        let envelope = serde_json::to_string(&typed_envelope(a)).expect("schemas serialize");
        quote! {
            ActionTool {
                name: #name,
                action: #action,
                description: #description,
                input_schema: #input,
                envelope_schema: #envelope,
            }
        }
    });
    quote! {
        use crate::catalog::facade::*;

        /// One typed tool per action, index-aligned with `ACTIONS`.
        pub static ACTION_TOOLS: [ActionTool; #count] = [#(#tools),*];
    }
}

/// What the tool does, which gate it passes, and what it returns.
fn description(catalog: &Catalog, action: &Action) -> String {
    let category = &catalog.categories[action.category].id;
    let gate = if action.stream != StreamKind::None {
        "A stream action: write mode only, run as invoke_action runs it"
    } else if action.read_only {
        "Read-only: runs in read or write mode, through query_action's gate"
    } else {
        "Changes state: write mode only, through invoke_action's gate"
    };
    let mut text = format!(
        "{} [OneBot action `{}`, category {category}] {gate}. Arguments are the action's \
         OneBot params, checked before anything is sent; `result` is SnowLuma's envelope, whose \
         `data` on success is: {}",
        action.summary, action.name, action.returns_description
    );
    if let Some(danger) = &action.danger {
        text.push_str(&format!(" DANGER: {danger}"));
    }
    text
}

/// SnowLuma's envelope for this action: on success (`retcode` 0) `data` follows the action's
/// returnsSchema; a failure carries whatever SnowLuma sent (usually null).
fn typed_envelope(action: &Action) -> Value {
    json!({
        "title": "OneBot envelope",
        "type": "object",
        "description": format!("SnowLuma's OneBot envelope for `{}` exactly as received", action.name),
        "properties": {
            "status": { "type": "string", "description": "ok, failed or async" },
            "retcode": { "type": "integer", "description": "0 on success" },
            "data": {},
            "message": { "type": "string" },
            "wording": { "type": "string" }
        },
        "required": ["status", "retcode"],
        "if": { "properties": { "retcode": { "const": 0 } } },
        "then": { "properties": { "data": action.returns_schema } }
    })
}
