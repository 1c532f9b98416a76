//! Clap reports a bad value under the flag's name (`--mode <MODE>`) even when it came from the
//! environment, where a user never typed that flag. These helpers name the variable instead
//! (`SNOWLUMA_MCP_MODE`), and hold the server's help text for `snowluma-mcp help`.

use std::ffi::OsString;

use clap::CommandFactory;
use clap::error::{ContextKind, ContextValue, ErrorKind};

use super::Flags;

/// The server's full `--help` text.
pub fn server_help() -> String {
    Flags::command().render_long_help().to_string()
}

/// For a bad value that came from an environment variable, a message naming the variable, the
/// value and what is wrong; `None` for every other error (a flag typed on the command line is
/// reported by clap under its own name, which is what the user typed).
pub fn from_environment(error: &clap::Error, argv: &[OsString]) -> Option<String> {
    if !matches!(
        error.kind(),
        ErrorKind::InvalidValue | ErrorKind::ValueValidation
    ) {
        return None;
    }
    let Some(ContextValue::String(arg)) = error.get(ContextKind::InvalidArg) else {
        return None;
    };
    let long = arg.strip_prefix("--")?.split([' ', '=']).next()?;
    let typed = argv.iter().skip(1).any(|a| {
        a.to_str().is_some_and(|a| {
            a.strip_prefix("--")
                .is_some_and(|rest| rest == long || rest.starts_with(&format!("{long}=")))
        })
    });
    if typed {
        return None;
    }
    let command = Flags::command();
    let variable = command
        .get_arguments()
        .find(|a| a.get_long() == Some(long))?
        .get_env()?
        .to_string_lossy()
        .into_owned();
    let value = match error.get(ContextKind::InvalidValue) {
        Some(ContextValue::String(value)) => value.clone(),
        _ => std::env::var(&variable).unwrap_or_default(),
    };
    let why = std::error::Error::source(error)
        .map(|source| source.to_string())
        .unwrap_or_else(|| "not a valid value".into());
    Some(format!(
        "{variable}=`{value}` is not valid: {why} (fix or unset {variable} in the environment or \
         the MCP client's server configuration)"
    ))
}
