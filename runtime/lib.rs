//! snowluma-mcp: an MCP server (stdio, both protocol generations) for SnowLuma's OneBot 11
//! action catalog.
//!
//! Modules, one per concern: [`config`] (env vars and flags), [`catalog`] (the bundled
//! catalog over generated/), [`server`] (rmcp handler, tools, resources, stdio transport),
//! [`exec`] (the one execution pipeline and its gate), [`onebot`] (SnowLuma's HTTP API),
//! [`trace`] (W3C trace context and per-call diagnostics), and [`events`] (live OneBot events
//! from SnowLuma's WebSocket adapter as bounded, cursor-read resources; no rmcp types).

pub mod catalog;
pub mod config;
pub mod events;
pub mod exec;
pub mod ids;
pub mod onebot;
pub mod server;
pub mod streams;
pub mod trace;
