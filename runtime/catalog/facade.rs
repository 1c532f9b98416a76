//! The one path generated code imports from, so generated files and the runtime cannot
//! drift apart on names or versions.

pub use super::checks::{Check, check, first_truthy_string, required_when_check};
pub use super::coerce::{
    Bounds, Choice, Coerce, Flag, FromParams, Int, Literal, Message, MessageId, Number, ParamError,
    Raw, Text, Uint, any_of, defaulted, optional, required, required_when, unknown_keys,
};
pub use super::packed::{Lists, StrLists, Strs};
pub use super::{ActionMeta, ActionTool, CategoryMeta, StreamKind};
pub use serde::Serialize;
pub use serde_json::{Map, Value};
