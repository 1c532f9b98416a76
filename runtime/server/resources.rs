//! Catalog resources: `snowluma://onebot/actions` (the whole catalog) and the template
//! `snowluma://onebot/actions/{name}` (one action's contract; aliases accepted).

use rmcp::ErrorData;
use rmcp::model::{Resource, ResourceContents, ResourceTemplate};
use serde_json::json;

use crate::catalog::{self, ACTIONS, CATALOG_JSON, CATALOG_VERSION};

pub const CATALOG_URI: &str = "snowluma://onebot/actions";
pub const ACTION_URI_PREFIX: &str = "snowluma://onebot/actions/";
pub const ACTION_URI_TEMPLATE: &str = "snowluma://onebot/actions/{name}";
const JSON: &str = "application/json";

pub fn list() -> Vec<Resource> {
    vec![
        Resource::new(CATALOG_URI, "onebot-actions")
            .with_title("SnowLuma OneBot action catalog")
            .with_description(format!(
                "All {} actions of SnowLuma {CATALOG_VERSION} with params, inputSchema, returnsSchema and examples",
                ACTIONS.len()
            ))
            .with_mime_type(JSON)
            .with_size(CATALOG_JSON.len() as u64),
    ]
}

pub fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(ACTION_URI_TEMPLATE, "onebot-action")
            .with_title("One OneBot action's contract")
            .with_description("The contract of one action by name or alias, e.g. snowluma://onebot/actions/send_group_msg")
            .with_mime_type(JSON),
    ]
}

/// The contents behind `uri`, or resource-not-found (each generation's own code is applied by
/// rmcp: -32002 for legacy peers, -32602 for 2026-07-28).
pub fn read(uri: &str) -> Result<ResourceContents, ErrorData> {
    let text = if uri == CATALOG_URI {
        CATALOG_JSON.to_string()
    } else if let Some(resolved) = uri
        .strip_prefix(ACTION_URI_PREFIX)
        .and_then(catalog::resolve)
    {
        resolved.meta.contract_json().to_string()
    } else {
        let hint = match uri.strip_prefix(ACTION_URI_PREFIX) {
            Some(name) => format!(
                "`{name}` is not an action or alias in the bundled catalog; search_actions finds actions"
            ),
            None => format!("known resources: {CATALOG_URI} and {ACTION_URI_TEMPLATE}"),
        };
        return Err(ErrorData::resource_not_found(
            format!("resource not found: {uri}; {hint}"),
            Some(json!({ "uri": uri })),
        ));
    };
    Ok(ResourceContents::text(text, uri).with_mime_type(JSON))
}
