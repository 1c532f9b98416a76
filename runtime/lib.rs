//! snowluma-mcp: an MCP server (stdio, both protocol generations) for SnowLuma's OneBot 11
//! action catalog.
//!
//! Layers, top to bottom; data flows one way and no module imports one above it:
//! [`server`] (the only code that knows rmcp: handler, transports, sessions, rendering),
//! [`tools`] (the tool registry and every tool's handler, in plain types),
//! [`cli`] (the terminal subcommands `catalog` and `check`, and the terminal hint),
//! [`input`] (completing missing parameters), [`preview`] (the `preview_message` draft
//! builder and its bundled MCP Apps panel), [`exec`] (the one execution pipeline and its
//! gate), [`tasks`] (durable background tasks), [`events`] (SnowLuma's WebSocket events, buffers and cursors), [`streams`] (downloads, uploads, frame
//! collections), [`onebot`] (SnowLuma's HTTP API), [`catalog`] (the bundled catalog over
//! generated/), [`trace`] (W3C trace context), and the foundation: [`outcome`] (results,
//! diagnostics, error kinds), [`config`] and [`ids`]. `fuzz_api` (hidden) re-exports the few
//! private pieces the fuzz targets under `fuzz/` drive directly.

pub mod catalog;
pub mod cli;
pub mod config;
pub mod events;
pub mod exec;
#[doc(hidden)]
pub mod fuzz_api;
pub mod guard;
pub mod ids;
pub mod input;
pub mod onebot;
pub mod outcome;
pub mod paging;
pub mod preview;
pub mod server;
pub mod streams;
pub mod tasks;
pub mod tools;
pub mod trace;
