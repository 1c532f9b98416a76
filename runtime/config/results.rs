//! How large a tool result may be: the character budget of its text, how long the rest of a
//! paged result can be fetched with `read_more`, and the most tools a `tools/list` may hold.

use std::time::Duration;

use clap::Args;

use super::ConfigError;

/// The budget over HTTP when SNOWLUMA_MCP_RESULT_BUDGET is unset: remote clients show the
/// model about this many characters of a result.
pub const HTTP_DEFAULT_BUDGET: usize = 8000;

/// The smallest budget a page can be made for: the summary line and the diagnostics of a
/// page need a few hundred characters on their own.
pub const MIN_BUDGET: usize = 1000;

/// Longest continuation lifetime: one day.
const MAX_TTL_SECS: u64 = 24 * 3600;

#[derive(Args, Debug)]
pub struct ResultFlags {
    /// Most characters of a tool result's text (0 = unlimited); larger results are paged and
    /// read_more returns the rest [default: 0 on stdio, 8000 over HTTP]
    #[arg(long, env = "SNOWLUMA_MCP_RESULT_BUDGET")]
    result_budget: Option<String>,

    /// How long the rest of a paged result can be read with read_more, in seconds
    #[arg(
        long,
        env = "SNOWLUMA_MCP_CONTINUATION_TTL_SECS",
        default_value_t = 600
    )]
    continuation_ttl_secs: u64,

    /// Refuse to start when tools/list would hold more tools than this (typed toolsets add one
    /// tool per action); unset means no limit
    #[arg(long, env = "SNOWLUMA_MCP_MAX_TOOLS")]
    max_tools: Option<String>,
}

/// A whole number, or `None` for an absent or empty value (MCP hosts fill every variable from
/// a form, leaving blank what the user did not set).
fn whole_number(name: &str, value: Option<&str>) -> Result<Option<usize>, ConfigError> {
    let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    value
        .parse::<usize>()
        .map(Some)
        .map_err(|_| ConfigError(format!("{name} must be a whole number (got `{value}`)")))
}

/// The validated result settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResultSettings {
    /// SNOWLUMA_MCP_RESULT_BUDGET as set: `Some(0)` is unlimited, `None` takes the transport's
    /// default ([`ResultSettings::budget`]).
    pub budget_setting: Option<usize>,
    pub continuation_ttl: Duration,
    pub max_tools: Option<usize>,
}

impl Default for ResultSettings {
    fn default() -> Self {
        ResultSettings {
            budget_setting: None,
            continuation_ttl: Duration::from_secs(600),
            max_tools: None,
        }
    }
}

impl ResultSettings {
    /// The budget for a transport: the setting, else 8000 over HTTP and unlimited on stdio.
    /// `None` means unlimited.
    pub fn budget(&self, http: bool) -> Option<usize> {
        let chars = self
            .budget_setting
            .unwrap_or(if http { HTTP_DEFAULT_BUDGET } else { 0 });
        (chars > 0).then_some(chars)
    }
}

impl ResultFlags {
    pub fn into_settings(self) -> Result<ResultSettings, ConfigError> {
        let budget_setting =
            whole_number("SNOWLUMA_MCP_RESULT_BUDGET", self.result_budget.as_deref())?;
        if let Some(chars) = budget_setting
            && chars != 0
            && chars < MIN_BUDGET
        {
            return Err(ConfigError(format!(
                "SNOWLUMA_MCP_RESULT_BUDGET must be 0 (unlimited) or at least {MIN_BUDGET} characters (got {chars}); a page needs room for its summary and diagnostics"
            )));
        }
        if !(1..=MAX_TTL_SECS).contains(&self.continuation_ttl_secs) {
            return Err(ConfigError(format!(
                "SNOWLUMA_MCP_CONTINUATION_TTL_SECS must be between 1 and {MAX_TTL_SECS} seconds (got {})",
                self.continuation_ttl_secs
            )));
        }
        let max_tools = whole_number("SNOWLUMA_MCP_MAX_TOOLS", self.max_tools.as_deref())?;
        if max_tools == Some(0) {
            return Err(ConfigError(
                "SNOWLUMA_MCP_MAX_TOOLS must be at least 1 (unset it for no limit); 64 suits clients that cap their tool list".into(),
            ));
        }
        Ok(ResultSettings {
            budget_setting,
            continuation_ttl: Duration::from_secs(self.continuation_ttl_secs),
            max_tools,
        })
    }
}
