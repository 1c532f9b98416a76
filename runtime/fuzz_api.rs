//! Entry points for the fuzz targets under `fuzz/` that the public API does not reach on its
//! own: pure pieces of the stdio decoder and the event resources. Hidden from the docs and not
//! a stable API; nothing in the server calls through here.

/// The one-pass `tools/call` decoder; it must agree with rmcp's generic decoding.
pub use crate::server::decode::tool_call;

/// An event resource's bounded buffer and its cursors.
pub use crate::events::buffer::{EventBuffer, Slice, cursor, parse_cursor};

/// The check each WebSocket frame gets before it reaches any resource.
pub use crate::events::connection::{FrameVerdict, check_frame};

/// `?after=` handling and page assembly of `resources/read` on an event resource.
pub use crate::events::page::{read_page, split_after};
