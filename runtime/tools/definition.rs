//! A tool's public definition in plain values: what `tools/list` shows a client. The server
//! turns it into the protocol's tool type.

use std::sync::Arc;

use serde_json::{Map, Value};

/// A tool's `inputSchema` and `outputSchema`.
pub struct Schemas {
    pub input: Arc<Map<String, Value>>,
    pub output: Map<String, Value>,
}

/// Name, texts, schemas and annotations of one listed tool.
pub struct Definition {
    pub name: &'static str,
    /// The title, also the annotations' title.
    pub title: &'static str,
    pub description: &'static str,
    pub schemas: Schemas,
    /// Read-only tools are also idempotent and never destructive; the others are neither.
    pub read_only: bool,
    /// Whether the tool can reach SnowLuma.
    pub open_world: bool,
    /// The tool's `_meta` (the MCP Apps panel pointer), when this client is shown one.
    pub meta: Option<Map<String, Value>>,
}
