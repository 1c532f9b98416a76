//! The layout of a continuation handle, in a leaf file: the pager sizes a page before its
//! handle exists (every handle has the same length) and the store writes and reads handles.

/// Format tag of a handle; bumping it retires every older handle.
pub const PREFIX: &str = "slp1.";

/// Held-result id, next element, expiry (ms on the store's clock), tag.
pub const PAYLOAD: usize = 8 + 8 + 8;
pub const TAG: usize = 32;

/// Characters of every handle: they all have the same length, so a page can be sized before
/// its handle exists.
pub const TOKEN_CHARS: usize = PREFIX.len() + ((PAYLOAD + TAG) * 4).div_ceil(3);
