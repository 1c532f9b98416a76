//! SnowLuma's OneBot HTTP API: ordinary calls ([`OneBotClient::call`]), the stream link that
//! reads a stream action's frames ([`StreamLink`]), and [`CallError`], why an exchange produced
//! no answer. Nothing here knows tools, gates or MCP.

mod client;
pub mod frames;
mod stream;

pub use client::{CallError, MAX_REQUEST_BYTES, OneBotClient};
pub use stream::{FrameStream, StreamLink, StreamStop};
