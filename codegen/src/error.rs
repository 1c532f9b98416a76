//! Spec errors. Each one names the file, line:column, action and field, and where the
//! mistake is a name, the nearest valid name.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SpecError {
    /// Path relative to the spec root's parent, e.g. `spec/actions/message/send_msg.yaml`.
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub action: Option<String>,
    pub field: Option<String>,
    pub message: String,
    pub suggestion: Option<String>,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: ", self.file, self.line, self.column)?;
        if let Some(action) = &self.action {
            write!(f, "action `{action}`: ")?;
        }
        if let Some(field) = &self.field {
            write!(f, "field `{field}`: ")?;
        }
        f.write_str(&self.message)?;
        if let Some(suggestion) = &self.suggestion {
            write!(f, " (did you mean `{suggestion}`?)")?;
        }
        Ok(())
    }
}

/// The candidate closest to `wrong`, when it is close enough to be a plausible typo.
pub fn nearest<'a>(wrong: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    candidates
        .into_iter()
        .map(|candidate| (strsim::damerau_levenshtein(wrong, candidate), candidate))
        .filter(|(distance, candidate)| {
            *distance <= (candidate.chars().count().max(wrong.chars().count()) / 3).max(2)
        })
        .min()
        .map(|(_, candidate)| candidate.to_string())
}

/// Every error found in the spec, sorted by file and position.
#[derive(Debug, Default)]
pub struct SpecErrors(pub Vec<SpecError>);

impl fmt::Display for SpecErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for error in &self.0 {
            writeln!(f, "error: {error}")?;
        }
        write!(
            f,
            "{} error(s) in spec/; fix them and run `cargo build` again",
            self.0.len()
        )
    }
}

impl std::error::Error for SpecErrors {}
