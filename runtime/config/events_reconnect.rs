//! How the event connection comes back after SnowLuma restarts: the reconnect backoff and the
//! optional recovery of missed group messages.

use std::time::Duration;

use clap::Args;

use super::ConfigError;

/// Most messages one group's recovery may ask for: SnowLuma's get_group_msg_history caps
/// `count` at 200.
pub const MAX_RECOVER_PER_GROUP: u32 = 200;

#[derive(Args, Debug)]
pub struct ReconnectFlags {
    /// First delay before reconnecting the event socket, in milliseconds; it doubles per failed
    /// attempt (with jitter) up to SNOWLUMA_MCP_EVENTS_BACKOFF_MAX_MS
    #[arg(long, env = "SNOWLUMA_MCP_EVENTS_BACKOFF_MS", default_value_t = 500)]
    events_backoff_ms: u64,

    /// Longest delay between two reconnect attempts of the event socket, in milliseconds
    #[arg(
        long,
        env = "SNOWLUMA_MCP_EVENTS_BACKOFF_MAX_MS",
        default_value_t = 30_000
    )]
    events_backoff_max_ms: u64,

    /// 1: after a reconnect, fetch the messages missed in the groups event resources filter on
    /// (get_group_msg_history) and insert them marked `recovered`; 0: do not
    #[arg(long, env = "SNOWLUMA_MCP_EVENTS_RECOVER", default_value = "0")]
    events_recover: String,

    /// Most messages recovered per group after one outage (1-200)
    #[arg(long, env = "SNOWLUMA_MCP_EVENTS_RECOVER_MAX", default_value_t = 100)]
    events_recover_max: u32,
}

/// The validated reconnect settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventsReconnect {
    /// The first delay; each failed attempt doubles it.
    pub backoff: Duration,
    /// The delay never grows beyond this.
    pub backoff_max: Duration,
    /// `Some(n)`: recover at most `n` messages per filtered group after a reconnect.
    pub recover: Option<u32>,
}

impl Default for EventsReconnect {
    fn default() -> Self {
        EventsReconnect {
            backoff: Duration::from_millis(500),
            backoff_max: Duration::from_secs(30),
            recover: None,
        }
    }
}

impl ReconnectFlags {
    pub fn into_settings(self) -> Result<EventsReconnect, ConfigError> {
        if !(10..=600_000).contains(&self.events_backoff_ms) {
            return Err(ConfigError(format!(
                "SNOWLUMA_MCP_EVENTS_BACKOFF_MS must be between 10 and 600000 milliseconds (got {})",
                self.events_backoff_ms
            )));
        }
        if !(self.events_backoff_ms..=3_600_000).contains(&self.events_backoff_max_ms) {
            return Err(ConfigError(format!(
                "SNOWLUMA_MCP_EVENTS_BACKOFF_MAX_MS must be between SNOWLUMA_MCP_EVENTS_BACKOFF_MS \
                 ({}) and 3600000 milliseconds (got {})",
                self.events_backoff_ms, self.events_backoff_max_ms
            )));
        }
        let recover = match self.events_recover.trim() {
            "1" | "true" => true,
            "0" | "false" | "" => false,
            _ => {
                return Err(ConfigError(
                    "SNOWLUMA_MCP_EVENTS_RECOVER must be 1 (recover missed group messages after a \
                     reconnect) or 0 (do not)"
                        .into(),
                ));
            }
        };
        if !(1..=MAX_RECOVER_PER_GROUP).contains(&self.events_recover_max) {
            return Err(ConfigError(format!(
                "SNOWLUMA_MCP_EVENTS_RECOVER_MAX must be between 1 and {MAX_RECOVER_PER_GROUP} \
                 messages per group (got {}); SnowLuma returns at most {MAX_RECOVER_PER_GROUP}",
                self.events_recover_max
            )));
        }
        Ok(EventsReconnect {
            backoff: Duration::from_millis(self.events_backoff_ms),
            backoff_max: Duration::from_millis(self.events_backoff_max_ms),
            recover: recover.then_some(self.events_recover_max),
        })
    }
}
