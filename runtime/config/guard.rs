//! Settings of the write guards (`crate::guard`): send limits, confirmation and the audit log.

use std::path::PathBuf;

use clap::Args;

use super::ConfigError;

/// Default audit log size before rotation: 64 MiB.
pub const DEFAULT_AUDIT_MAX_BYTES: u64 = 64 << 20;

#[derive(Args, Debug)]
pub struct GuardFlags {
    /// Sends (messages, forwards, pokes, likes) one group or user may get per minute; 0
    /// disables the per-target limit
    #[arg(
        long,
        env = "SNOWLUMA_MCP_SEND_PER_TARGET_PER_MIN",
        default_value_t = 20
    )]
    send_per_target_per_min: u32,

    /// Sends one group or user may get at once before the per-minute rate applies
    #[arg(long, env = "SNOWLUMA_MCP_SEND_BURST", default_value_t = 5)]
    send_burst: u32,

    /// Sends per minute over all targets together; 0 disables the overall limit
    #[arg(long, env = "SNOWLUMA_MCP_SEND_TOTAL_PER_MIN", default_value_t = 60)]
    send_total_per_min: u32,

    /// off | danger | writes: which actions need the user's confirmation (form elicitation)
    /// before they run
    #[arg(long, env = "SNOWLUMA_MCP_CONFIRM", default_value = "off")]
    confirm: String,

    /// File on the MCP host that records every executed write and every refusal, one JSON
    /// line each (created 0600); unset keeps no audit log
    #[arg(long, env = "SNOWLUMA_MCP_AUDIT_LOG", value_parser = super::empty_is_unset_path())]
    audit_log: Option<PathBuf>,

    /// 1: the audit log also records each call's params (always: their sha256); 0: do not
    #[arg(long, env = "SNOWLUMA_MCP_AUDIT_PARAMS", default_value = "0")]
    audit_params: String,

    /// Size in bytes at which the audit log is rotated (one previous file, `<path>.1`, is kept)
    #[arg(long, env = "SNOWLUMA_MCP_AUDIT_MAX_BYTES", default_value_t = DEFAULT_AUDIT_MAX_BYTES)]
    audit_max_bytes: u64,
}

/// Which actions wait for the user's confirmation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConfirmSetting {
    #[default]
    Off,
    /// Actions the spec marks `danger`.
    Danger,
    /// Every action that is not read-only.
    Writes,
}

impl ConfirmSetting {
    pub fn as_str(self) -> &'static str {
        match self {
            ConfirmSetting::Off => "off",
            ConfirmSetting::Danger => "danger",
            ConfirmSetting::Writes => "writes",
        }
    }
}

/// The validated guard settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardConfig {
    /// Per target (group or user) per minute; 0: no per-target bucket.
    pub per_target_per_min: u32,
    pub burst: u32,
    /// Over all targets per minute; 0: no overall bucket.
    pub total_per_min: u32,
    pub confirm: ConfirmSetting,
    pub audit_log: Option<PathBuf>,
    pub audit_params: bool,
    pub audit_max_bytes: u64,
}

impl Default for GuardConfig {
    /// The shipped defaults (README, "Send limits").
    fn default() -> Self {
        GuardConfig {
            per_target_per_min: 20,
            burst: 5,
            total_per_min: 60,
            confirm: ConfirmSetting::Off,
            audit_log: None,
            audit_params: false,
            audit_max_bytes: DEFAULT_AUDIT_MAX_BYTES,
        }
    }
}

impl GuardFlags {
    pub fn into_config(self) -> Result<GuardConfig, ConfigError> {
        let confirm = match self.confirm.trim() {
            "" | "off" => ConfirmSetting::Off,
            "danger" => ConfirmSetting::Danger,
            "writes" => ConfirmSetting::Writes,
            other => {
                return Err(ConfigError(format!(
                    "SNOWLUMA_MCP_CONFIRM must be off, danger or writes (got `{other}`)"
                )));
            }
        };
        let audit_params = match self.audit_params.trim() {
            "" | "0" => false,
            "1" => true,
            other => {
                return Err(ConfigError(format!(
                    "SNOWLUMA_MCP_AUDIT_PARAMS must be 0 or 1 (got `{other}`)"
                )));
            }
        };
        if self.send_burst == 0 && self.send_per_target_per_min > 0 {
            return Err(ConfigError(
                "SNOWLUMA_MCP_SEND_BURST must be at least 1 while the per-target limit is on; \
                 set SNOWLUMA_MCP_SEND_PER_TARGET_PER_MIN=0 to turn that limit off instead"
                    .into(),
            ));
        }
        if self.audit_max_bytes < 4096 {
            return Err(ConfigError(format!(
                "SNOWLUMA_MCP_AUDIT_MAX_BYTES must be at least 4096 bytes (got {}); the default is {DEFAULT_AUDIT_MAX_BYTES}",
                self.audit_max_bytes
            )));
        }
        let audit_log = super::absolute("SNOWLUMA_MCP_AUDIT_LOG", self.audit_log)?;
        Ok(GuardConfig {
            per_target_per_min: self.send_per_target_per_min,
            burst: self.send_burst,
            total_per_min: self.send_total_per_min,
            confirm,
            audit_log,
            audit_params,
            audit_max_bytes: self.audit_max_bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn parse(args: &[&str]) -> Result<GuardConfig, String> {
        let mut argv = vec!["snowluma-mcp"];
        argv.extend_from_slice(args);
        Config::try_from_args(argv)
            .map(|c| c.guard)
            .map_err(|e| e.0)
    }

    #[test]
    fn defaults_are_the_documented_ones() {
        assert_eq!(parse(&[]).unwrap(), GuardConfig::default());
        let defaults = GuardConfig::default();
        assert_eq!(
            (
                defaults.per_target_per_min,
                defaults.burst,
                defaults.total_per_min
            ),
            (20, 5, 60)
        );
        assert_eq!(defaults.audit_max_bytes, 64 << 20);
    }

    #[test]
    fn bad_values_name_the_setting_and_the_way_out() {
        let confirm = parse(&["--confirm", "always"]).unwrap_err();
        assert!(
            confirm.contains("SNOWLUMA_MCP_CONFIRM") && confirm.contains("off, danger or writes")
        );
        let params = parse(&["--audit-params", "yes"]).unwrap_err();
        assert!(params.contains("SNOWLUMA_MCP_AUDIT_PARAMS"), "{params}");
        let burst = parse(&["--send-burst", "0"]).unwrap_err();
        assert!(
            burst.contains("SNOWLUMA_MCP_SEND_PER_TARGET_PER_MIN=0"),
            "{burst}"
        );
        let size = parse(&["--audit-max-bytes", "10"]).unwrap_err();
        assert!(size.contains("SNOWLUMA_MCP_AUDIT_MAX_BYTES"), "{size}");
        let relative = parse(&["--audit-log", "audit.jsonl"]).unwrap_err();
        assert!(relative.contains("SNOWLUMA_MCP_AUDIT_LOG") && relative.contains("absolute"));
        let set = parse(&[
            "--confirm",
            "danger",
            "--audit-log",
            "/tmp/a.jsonl",
            "--audit-params",
            "1",
            "--send-per-target-per-min",
            "0",
            "--send-burst",
            "0",
        ])
        .unwrap();
        assert_eq!(set.confirm, ConfirmSetting::Danger);
        assert!(set.audit_params);
        assert_eq!(set.per_target_per_min, 0);
    }
}
