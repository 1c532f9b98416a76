//! The bundled MCP Apps panel for `preview_message`: one self-contained HTML file built from
//! `ui/` by `scripts/build-ui.sh` and committed, so building the crate never needs npm.
//!
//! The server lists [`PANEL_URI`] only to clients that advertise the
//! `io.modelcontextprotocol/ui` extension with [`PANEL_MIME_TYPE`]; this module only provides
//! the data.

use std::fmt;

use serde_json::{Value, json};

/// Where the asset lives in the repository, for error messages.
pub const PANEL_SOURCE_PATH: &str = "ui/dist/preview-message.html";

/// The command that rebuilds the asset.
pub const PANEL_BUILD_COMMAND: &str = "bash scripts/build-ui.sh";

/// The resource URI of the panel (tool `_meta.ui.resourceUri`, `resources/list`, `read`).
pub const PANEL_URI: &str = "ui://snowluma/preview-message.html";

/// The MIME type MCP Apps hosts render.
pub const PANEL_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// Cache hint for listing and reading the panel: five minutes.
pub const PANEL_CACHE_TTL_MS: u64 = 5 * 60 * 1000;

/// Cache scope of the panel: it holds no user data, so it is shareable.
pub const PANEL_CACHE_SCOPE: &str = "public";

/// Marker the panel's HTML template carries; its absence means the file is not the built
/// panel (for example an empty or placeholder file).
const PANEL_MARKER: &str = "data-snowluma-panel=\"preview-message\"";

/// The committed asset as compiled into the binary.
const PANEL_HTML: &str = include_str!("../../ui/dist/preview-message.html");

/// The packaged panel is missing or is not the built panel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PanelAssetError {
    /// The file compiled into the binary was empty.
    Empty,
    /// The file has content but not the panel's marker.
    NotThePanel,
}

impl fmt::Display for PanelAssetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let problem = match self {
            PanelAssetError::Empty => "is empty",
            PanelAssetError::NotThePanel => "is not the built preview panel",
        };
        write!(
            f,
            "packaging error: the preview panel asset {PANEL_SOURCE_PATH} {problem}; rebuild \
             it with `{PANEL_BUILD_COMMAND}`, commit it and rebuild the server"
        )
    }
}

impl std::error::Error for PanelAssetError {}

/// The panel HTML, or a packaging error if the binary was built with a broken asset.
pub fn panel_html() -> Result<&'static str, PanelAssetError> {
    check_panel_asset(PANEL_HTML)
}

/// Checks that `html` looks like the built panel.
pub fn check_panel_asset(html: &str) -> Result<&str, PanelAssetError> {
    if html.trim().is_empty() {
        Err(PanelAssetError::Empty)
    } else if !html.contains(PANEL_MARKER) {
        Err(PanelAssetError::NotThePanel)
    } else {
        Ok(html)
    }
}

/// The resource `_meta` for the panel (on the list entry and on the read content): a strict
/// CSP with no allowed origin of any kind, so the sandboxed panel can load nothing external
/// and open no connection of its own.
pub fn panel_resource_meta() -> Value {
    json!({
        "ui": {
            "csp": {
                "connectDomains": [],
                "resourceDomains": [],
                "frameDomains": [],
                "baseUriDomains": []
            },
            "prefersBorder": true
        }
    })
}

/// The tool `_meta` that points an Apps host at the panel (both the current key path and
/// the deprecated flat key that older hosts still read).
pub fn preview_tool_meta() -> Value {
    json!({
        "ui": { "resourceUri": PANEL_URI },
        "ui/resourceUri": PANEL_URI
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_asset_is_a_packaging_error_naming_file_and_script() {
        let error = check_panel_asset("  \n").unwrap_err();
        assert_eq!(error, PanelAssetError::Empty);
        let message = error.to_string();
        assert!(message.contains(PANEL_SOURCE_PATH), "{message}");
        assert!(message.contains(PANEL_BUILD_COMMAND), "{message}");
    }

    #[test]
    fn html_without_the_marker_is_rejected() {
        assert_eq!(
            check_panel_asset("<!doctype html><html></html>"),
            Err(PanelAssetError::NotThePanel)
        );
    }

    #[test]
    fn committed_asset_is_the_self_contained_panel() {
        let html = panel_html().expect("the committed panel asset is valid");
        assert!(html.len() > 1000, "the built panel inlines its script");
        // Self-contained: no script or stylesheet is loaded from elsewhere.
        assert!(
            !html.contains("<script src"),
            "external script in the panel"
        );
        assert!(!html.contains("<link"), "external stylesheet in the panel");
    }

    #[test]
    fn resource_meta_allows_no_origin() {
        let meta = panel_resource_meta();
        let csp = meta["ui"]["csp"].as_object().expect("csp object");
        assert_eq!(csp.len(), 4);
        assert!(
            csp.values()
                .all(|v| v.as_array().is_some_and(Vec::is_empty))
        );
    }

    #[test]
    fn tool_meta_points_at_the_panel() {
        let meta = preview_tool_meta();
        assert_eq!(meta["ui"]["resourceUri"], PANEL_URI);
        assert_eq!(meta["ui/resourceUri"], PANEL_URI);
        assert!(PANEL_URI.starts_with("ui://"));
    }
}
