//! Terminal subcommands of the binary: `snowluma-mcp catalog …` (the bundled catalog for a
//! person at a terminal) and `snowluma-mcp check` (configuration and connection doctor), plus
//! the hint printed when the server is started from a terminal instead of an MCP client.

pub mod audit;
pub mod catalog;
pub mod check;

use std::ffi::OsString;
use std::process::ExitCode;

/// Runs a subcommand when `args` (without the program name) start with one; `None` means
/// "serve MCP as usual".
pub fn dispatch(args: &[OsString]) -> Option<ExitCode> {
    let rest = args.get(1..).unwrap_or_default();
    match args.first().and_then(|a| a.to_str()) {
        Some("catalog") => Some(catalog::main(rest)),
        Some("check") => Some(check::main(rest)),
        Some("audit") => Some(audit::main(rest)),
        Some("help") => Some(help(rest)),
        _ => None,
    }
}

/// `snowluma-mcp help [catalog | check]`: the server's help, or a subcommand's.
fn help(rest: &[OsString]) -> ExitCode {
    match rest.first().and_then(|a| a.to_str()) {
        None => print!("{}", crate::config::server_help()),
        Some("catalog") => println!("{}", catalog::USAGE),
        Some("check") => println!("{}", check::USAGE),
        Some(other) => {
            eprintln!(
                "snowluma-mcp help: no command `{other}`; commands are catalog and check (or \
                 `snowluma-mcp --help` for the server)"
            );
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}

/// One short note for a person who started the server in a terminal: it speaks MCP on stdin
/// and stdout, so it is meant to be launched by an MCP client.
pub const TERMINAL_HINT: &str = "snowluma-mcp: this is an MCP server speaking JSON-RPC on stdin/stdout; \
start it from an MCP client (e.g. `claude mcp add snowluma -- snowluma-mcp`, or \
\"command\": \"snowluma-mcp\" in the client's server configuration). To browse the catalog \
here, try `snowluma-mcp catalog search 禁言`; `snowluma-mcp check` tests a configuration. \
Serving on stdin now (Ctrl-D to quit).";
