//! Catalog resources: `snowluma://onebot/actions` (the whole catalog) and the template
//! `snowluma://onebot/actions/{name}` (one action's contract; aliases accepted), plus the
//! `preview_message` panel (`ui://`), which exists only for clients that render MCP Apps.

use rmcp::ErrorData;
use rmcp::model::{MetaObject, Resource, ResourceContents, ResourceTemplate};
use serde_json::{Value, json};

use crate::catalog::{self, ACTIONS, CATALOG_JSON, CATALOG_VERSION};
use crate::exec::ClientCapabilities;
use crate::preview::panel::{PANEL_MIME_TYPE, PANEL_URI, panel_html, panel_resource_meta};

pub const CATALOG_URI: &str = "snowluma://onebot/actions";
pub const ACTION_URI_PREFIX: &str = "snowluma://onebot/actions/";
pub const ACTION_URI_TEMPLATE: &str = "snowluma://onebot/actions/{name}";
const JSON: &str = "application/json";

pub fn list(caps: &ClientCapabilities) -> Vec<Resource> {
    let mut resources = vec![
        Resource::new(CATALOG_URI, "onebot-actions")
            .with_title("SnowLuma OneBot action catalog")
            .with_description(format!(
                "All {} actions of SnowLuma {CATALOG_VERSION} with params, inputSchema, returnsSchema and examples",
                ACTIONS.len()
            ))
            .with_mime_type(JSON)
            .with_size(CATALOG_JSON.len() as u64),
    ];
    if caps.apps_ui {
        resources.push(panel_resource());
    }
    resources
}

/// The panel's list entry. Its `_meta.ui` (the CSP that allows no origin) is repeated on
/// the read contents, which hosts consult first.
fn panel_resource() -> Resource {
    let mut resource = Resource::new(PANEL_URI, "preview-message-panel")
        .with_title("Message preview panel")
        .with_description(
            "MCP Apps panel for preview_message: shows the draft and sends it through \
             invoke_action only when the user clicks Send",
        )
        .with_mime_type(PANEL_MIME_TYPE)
        .with_meta(panel_meta());
    // A broken asset is reported when the panel is read, with the fix.
    if let Ok(html) = panel_html() {
        resource = resource.with_size(html.len() as u64);
    }
    resource
}

fn panel_meta() -> MetaObject {
    match panel_resource_meta() {
        Value::Object(meta) => MetaObject(meta),
        _ => MetaObject::new(),
    }
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
/// rmcp: -32002 for legacy peers, -32602 for 2026-07-28). The panel is found only by clients
/// that render MCP Apps, the same ones it is listed to.
pub fn read(uri: &str, caps: &ClientCapabilities) -> Result<ResourceContents, ErrorData> {
    if uri == PANEL_URI && caps.apps_ui {
        let html = panel_html().map_err(|error| {
            ErrorData::internal_error(error.to_string(), Some(json!({ "uri": uri })))
        })?;
        return Ok(ResourceContents::text(html, uri)
            .with_mime_type(PANEL_MIME_TYPE)
            .with_meta(panel_meta()));
    }
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
            None if uri == PANEL_URI => format!(
                "the panel is served only to clients that declare the io.modelcontextprotocol/ui \
                 extension with {PANEL_MIME_TYPE}; call preview_message for the draft"
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
