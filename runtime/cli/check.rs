//! `snowluma-mcp check`: validates the configuration (the same environment and flags the
//! server reads), runs the connection check behind `get_runtime_info`, compares SnowLuma's
//! version with the catalog's and tries the events URL. A short report goes to stdout; the
//! exit status is 0 when everything passed, 1 otherwise. The token is never printed: only
//! whether one is set.

use std::ffi::OsString;
use std::process::ExitCode;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::catalog::CATALOG_VERSION;
use crate::config::Config;
use crate::exec::toolsets::empty_toolsets;
use crate::exec::{ActionPolicy, Executor};
use crate::trace::TraceContext;

pub const USAGE: &str = "usage: snowluma-mcp check [SERVER FLAGS]\n\n\
Validates the configuration the server would start with (the same SNOWLUMA_MCP_… variables and \
flags; `snowluma-mcp --help` lists them), then, in read or write mode, calls get_login_info, \
get_status and get_version_info on SnowLuma, compares its version with the catalog's and, with \
SNOWLUMA_MCP_EVENTS_URL, makes one WebSocket handshake. Prints one ok/FAIL/note line per finding \
and exits 0 when everything passed, 1 otherwise. Tokens are never printed.\n\n\
example: SNOWLUMA_MCP_ENDPOINT=http://127.0.0.1:3000/ SNOWLUMA_MCP_TOKEN_FILE=token.txt snowluma-mcp check";

/// How long the events handshake may take.
const EVENTS_LIMIT: Duration = Duration::from_secs(5);

/// Not inlined into [`super::dispatch`]: this frame holds a runtime and its futures (about
/// 48 KB), and inlined there it made every start-up, subcommand or not, probe and fault in a
/// dozen stack pages.
#[inline(never)]
pub fn main(args: &[OsString]) -> ExitCode {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let argv = std::iter::once(OsString::from("snowluma-mcp")).chain(args.iter().cloned());
    let mut report = Report::default();
    let config = match Config::try_from_args(argv) {
        Ok(config) => config,
        Err(error) => {
            report.fail("configuration", &error.to_string());
            return report.finish();
        }
    };
    let policy = match ActionPolicy::resolve(&config.actions) {
        Ok(policy) => policy,
        Err(error) => {
            report.fail("configuration", &error);
            return report.finish();
        }
    };
    report.pass(
        "configuration",
        &format!(
            "mode {}, endpoint {}, token {}, events {}",
            config.mode.as_str(),
            if config.endpoint.is_some() {
                "set"
            } else {
                "not set"
            },
            if config.token.is_some() {
                "set"
            } else {
                "not set"
            },
            if config.events_url.is_some() {
                "set"
            } else {
                "not set"
            },
        ),
    );
    for problem in empty_toolsets(config.mode, &policy, &config.actions.toolsets) {
        report.note(&format!("toolsets: {problem}"));
    }
    if !config.mode.executes() {
        report.note("docs mode: the server never contacts SnowLuma, so nothing more to check");
        return report.finish();
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            report.fail(
                "runtime",
                &format!("cannot start the async runtime: {error}"),
            );
            return report.finish();
        }
    };
    runtime.block_on(connect(&config, &mut report));
    report.finish()
}

async fn connect(config: &Config, report: &mut Report) {
    let executor = match Executor::new(config) {
        Ok(executor) => executor,
        Err(error) => {
            report.fail("configuration", &error);
            return;
        }
    };
    let trace = match TraceContext::start(None, None) {
        Ok(trace) => trace,
        Err(error) => {
            report.fail("connection", &error.to_string());
            return;
        }
    };
    let check = executor
        .check_connection(&trace, &CancellationToken::new())
        .await;
    for (action, answer) in &check.checks {
        let diagnostics = &answer["diagnostics"];
        if diagnostics["outcome"] == "success" {
            report.pass(action, "ok");
        } else {
            let text = |key: &str| diagnostics[key].as_str().unwrap_or_default().to_string();
            report.fail(
                action,
                &format!(
                    "{} ({}); {}",
                    text("message"),
                    text("kind"),
                    text("next_step")
                ),
            );
        }
    }
    match check.catalog_matches_server {
        Some(true) => report.pass(
            "version",
            &format!("SnowLuma {CATALOG_VERSION}, as the catalog"),
        ),
        Some(false) => report.fail(
            "version",
            check
                .hint
                .as_deref()
                .unwrap_or("SnowLuma's version differs from the catalog's"),
        ),
        None => {
            report.note("version: SnowLuma's version is unknown (get_version_info did not answer)")
        }
    }
    if let Some(url) = &config.events_url {
        let reconnect = &config.events_reconnect;
        let policy = format!(
            "reconnects after a restart with backoff {}-{} ms; recovery of missed group messages {}",
            reconnect.backoff.as_millis(),
            reconnect.backoff_max.as_millis(),
            match reconnect.recover {
                Some(max) => format!("on (at most {max} a group)"),
                None => "off".into(),
            }
        );
        match crate::events::probe(url, config.token.as_deref(), EVENTS_LIMIT).await {
            Ok(seen) => report.pass(
                "events",
                &format!(
                    "connected: the token was accepted{}{}; {policy}",
                    seen.self_id
                        .map_or(String::new(), |id| format!(", events for self_id {id}")),
                    seen.heartbeat_interval_ms
                        .map_or(String::new(), |ms| format!(
                            ", heartbeat every {} s (two missed ones mean a dead connection)",
                            ms / 1000
                        )),
                ),
            ),
            Err(problem) => report.fail("events", &format!("stopped: {problem}; {policy}")),
        }
    }
}

/// The lines of the report and whether anything failed.
#[derive(Default)]
struct Report {
    failed: usize,
}

impl Report {
    fn pass(&mut self, what: &str, detail: &str) {
        line(format_args!("ok    {what}: {detail}"));
    }

    fn fail(&mut self, what: &str, detail: &str) {
        self.failed += 1;
        line(format_args!("FAIL  {what}: {detail}"));
    }

    fn note(&mut self, detail: &str) {
        line(format_args!("note  {detail}"));
    }

    fn finish(self) -> ExitCode {
        if self.failed == 0 {
            line(format_args!("all checks passed"));
            ExitCode::SUCCESS
        } else {
            line(format_args!("{} check(s) failed", self.failed));
            ExitCode::FAILURE
        }
    }
}

/// One report line on stdout; a reader that went away (`check | head -1`) ends the output,
/// not the process with a panic.
fn line(text: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _ = writeln!(std::io::stdout(), "{text}");
}
