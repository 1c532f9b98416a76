//! `spec/upstream-differences.yaml`: where this catalog deliberately differs from SnowLuma's
//! own catalog.json (behaviour measured against real SnowLuma that its catalog does not say).
//! The sync reports a listed difference as deliberate, never as drift, and never overwrites
//! it; an entry that no longer matches any difference is reported as stale.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::load::parse_text;

pub const FILE_NAME: &str = "upstream-differences.yaml";

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Differences {
    #[serde(default)]
    pub differences: Vec<Difference>,
    /// Differences that are rules of the whole catalog rather than of one field.
    #[serde(default)]
    pub notes: Vec<Note>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Difference {
    pub action: String,
    /// A report field (`read_only`, `params.type`, `action` …); it covers the fields below it.
    pub field: String,
    pub why: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Note {
    pub topic: String,
    pub why: String,
}

impl Difference {
    pub fn covers(&self, action: &str, field: &str) -> bool {
        self.action == action
            && (field == self.field
                || field
                    .strip_prefix(self.field.as_str())
                    .is_some_and(|rest| rest.starts_with('.')))
    }
}

/// Reads the file from `spec_dir`; a missing file lists no differences.
pub fn load(spec_dir: &Path) -> Result<Differences, String> {
    let path = spec_dir.join(FILE_NAME);
    match std::fs::read_to_string(&path) {
        Ok(text) => parse_text::<Differences>(&text, &format!("spec/{FILE_NAME}"), None)
            .map(|(value, _)| value)
            .map_err(|e| e.to_string()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Differences::default()),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}
