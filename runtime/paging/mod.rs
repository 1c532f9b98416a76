//! Results that fit the client. A result whose text is longer than the call's budget (in
//! characters) is cut into pages that are each a valid, smaller value of the same shape: the
//! largest array in it is cut at an element boundary and every object keeps all its keys.
//! The full result is held once in a [`ContinuationStore`]; `read_more` serves the next page
//! from a signed continuation handle.

mod cut;
mod handle;
mod store;

pub use cut::{Held, PAGE_KEY, fits, text_chars};
pub use handle::TOKEN_CHARS;
pub use store::{ContinuationStore, OpenError, StoreLimits};
