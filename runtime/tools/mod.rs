//! The tools room: the registry of tool definitions and every tool's handler (catalog docs,
//! the action-running tools, input completion, events, background tasks, the message
//! preview, the typed per-action tools). It knows no protocol types: a handler gets a
//! [`Call`] and answers an [`Answer`] in plain values, and `server/` translates both.
//!
//! The types the registry and the tool modules share live in leaf files (`call`,
//! `definition`, `schemas`, `services`), so the registry and the tools never import each
//! other.

pub(crate) mod action_tools;
mod call;
mod confirm;
mod definition;
pub(crate) mod docs;
mod event_tools;
mod input_tools;
mod message_preview;
pub(crate) mod read_more;
pub(crate) mod registry;
mod schemas;
mod services;
mod task_tools;

pub use call::{
    Answer, Call, ConnectionEvents, ElicitError, Elicitor, EventRoutes, Handler, InputRound,
};
pub use definition::{Definition, Schemas};
pub use services::Services;
