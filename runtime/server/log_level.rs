//! The MCP log level one session's client asked for (`logging/setLevel`), kept in its
//! `Session`, and the level order a 2026-07-28 request's own `_meta` log level is compared
//! with; a leaf file so the session and the call log can both use it.

// rmcp marks MCP logging deprecated (SEP-2577); legacy sessions still have it.
#![allow(deprecated)]

use std::sync::atomic::{AtomicU8, Ordering};

use rmcp::model::LoggingLevel;

/// The least severe level a session's client asked for with `logging/setLevel`; unset until
/// it asks. One per session (see `Session::log_level`).
#[derive(Default)]
pub struct ClientLogLevel(AtomicU8);

impl ClientLogLevel {
    pub fn set(&self, level: LoggingLevel) {
        self.0.store(severity(level), Ordering::Relaxed);
    }

    /// True when the client asked for messages and `level` is at least as severe as its level.
    pub fn wants(&self, level: LoggingLevel) -> bool {
        let threshold = self.0.load(Ordering::Relaxed);
        threshold != 0 && severity(level) >= threshold
    }
}

/// True when `level` is at least as severe as `threshold` (a 2026-07-28 request's own
/// `_meta` log level).
pub fn reaches(level: LoggingLevel, threshold: LoggingLevel) -> bool {
    severity(level) >= severity(threshold)
}

/// RFC 5424 order, least severe first, from 1 (0 means "not set").
fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 1,
        LoggingLevel::Info => 2,
        LoggingLevel::Notice => 3,
        LoggingLevel::Warning => 4,
        LoggingLevel::Error => 5,
        LoggingLevel::Critical => 6,
        LoggingLevel::Alert => 7,
        LoggingLevel::Emergency => 8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_wants_nothing_until_its_client_sets_a_level() {
        let level = ClientLogLevel::default();
        assert!(!level.wants(LoggingLevel::Emergency));
        level.set(LoggingLevel::Warning);
        assert!(!level.wants(LoggingLevel::Info));
        assert!(level.wants(LoggingLevel::Warning));
        assert!(level.wants(LoggingLevel::Error));
        level.set(LoggingLevel::Debug);
        assert!(level.wants(LoggingLevel::Info));
    }
}
