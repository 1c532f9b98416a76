//! `snowluma-mcp`: reads configuration, logs to stderr, serves MCP on stdin/stdout (or, with
//! `--transport http`, over Streamable HTTP).

use std::process::ExitCode;
use std::time::Duration;

use snowluma_mcp::catalog::{ACTIONS, CATALOG_VERSION};
use snowluma_mcp::config::{Config, Shutdown};
use snowluma_mcp::exec::toolsets::empty_toolsets;
use snowluma_mcp::server::{StdioEnd, serve_stdio};
use snowluma_mcp::streams::prepare_download_dir;
use tracing_appender::non_blocking::NonBlockingBuilder;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::{Layer, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

/// Log lines that may wait for the stderr writer thread before new lines are dropped.
const LOG_BUFFER_LINES: usize = 4096;

/// The HTTP, WebSocket and MCP libraries log whole request and result bodies below warn, which
/// would put message contents and tokens in the log: whatever SNOWLUMA_MCP_LOG says, they are
/// kept at warn or above.
fn is_chatty(meta: &tracing::Metadata<'_>) -> bool {
    const QUIET: &[&str] = &[
        "rmcp",
        "hyper",
        "hyper_util",
        "h2",
        "tungstenite",
        "tokio_tungstenite",
    ];
    let crate_name = meta.target().split("::").next().unwrap_or_default();
    QUIET.contains(&crate_name) && *meta.level() > tracing::Level::WARN
}

fn main() -> ExitCode {
    // `catalog` and `check` are terminal subcommands; anything else serves MCP.
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if let Some(status) = snowluma_mcp::cli::dispatch(&args) {
        return status;
    }
    let config = match Config::from_args() {
        Ok(config) => config,
        Err(error) => {
            eprintln!("snowluma-mcp: configuration error: {error}");
            return ExitCode::from(2);
        }
    };
    // Allow/deny lists and toolsets name catalog entries; an unknown one stops start-up here.
    match snowluma_mcp::exec::ActionPolicy::resolve(&config.actions) {
        Ok(policy) => {
            let toolsets = &config.actions.toolsets;
            for problem in empty_toolsets(config.mode, &policy, toolsets) {
                eprintln!("snowluma-mcp: warning: {problem}");
            }
        }
        Err(error) => {
            eprintln!("snowluma-mcp: configuration error: {error}");
            return ExitCode::from(2);
        }
    }
    let filter = match EnvFilter::try_new(&config.log) {
        Ok(filter) => filter,
        Err(error) => {
            eprintln!(
                "snowluma-mcp: configuration error: SNOWLUMA_MCP_LOG `{}` is not a valid filter: {error}",
                config.log
            );
            return ExitCode::from(2);
        }
    };
    // Logging never blocks the runtime thread: tracing-appender's writer thread takes the
    // lines from a bounded queue, and lines that do not fit (stderr not read fast enough) are
    // dropped and counted.
    let (stderr, flush_on_exit) = NonBlockingBuilder::default()
        .lossy(true)
        .buffered_lines_limit(LOG_BUFFER_LINES)
        .thread_name("log-writer")
        .finish(std::io::stderr());
    let dropped = stderr.error_counter();
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(stderr)
                .with_ansi(false)
                .with_filter(filter)
                .with_filter(filter_fn(|meta| !is_chatty(meta))),
        )
        .init();
    // One thread: each call is small and IO-bound, and with the reactor-driven pipes below no
    // message needs a cross-thread hand-off (measured: about 2.6x a bare stdio echo per call,
    // against about 7x with two workers on an idle machine).
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("snowluma-mcp: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let status = runtime.block_on(serve(config));
    // Do not wait for a blocking stdin read that will never finish.
    runtime.shutdown_timeout(Duration::from_millis(200));
    drop(flush_on_exit);
    let lost = dropped.dropped_lines();
    if lost > 0 {
        eprintln!(
            "snowluma-mcp: {lost} log lines were dropped because stderr was not read fast enough"
        );
    }
    status
}

/// How long, after SIGTERM/SIGINT, running calls get to clean up (an upload's reset waits at
/// most 5 s) before the process exits anyway.
const DRAIN: Duration = Duration::from_secs(8);

async fn serve(config: Config) -> ExitCode {
    // One listener for the whole life of the process, made before anything slow: a signal
    // that arrives while start-up runs, or between start-up and serving, waits in it.
    let mut termination = Termination::listen();
    let shutdown = config.streams.shutdown.clone();
    let aliases: usize = ACTIONS.iter().map(|a| a.aliases.len()).sum();
    tracing::info!(
        "snowluma-mcp {} ready: {} actions ({} with aliases), SnowLuma {CATALOG_VERSION} catalog, mode {}",
        env!("CARGO_PKG_VERSION"),
        ACTIONS.len(),
        ACTIONS.len() + aliases,
        config.mode.as_str()
    );
    // FIFOs (how MCP clients launch servers) are driven by the IO reactor; anything else falls
    // back to tokio's blocking stdio handles.
    // Refuse a download directory another user could own or read; clear crash leftovers.
    // Only write mode runs stream actions, so the other modes never touch the directory (docs
    // mode stays free of file-system side effects, and start-up spares a blocking thread).
    let dir = config.streams.download_dir.clone();
    let prepared = if config.mode.writes() {
        tokio::select! {
            prepared = tokio::task::spawn_blocking(move || prepare_download_dir(&dir)) => prepared,
            signal = termination.recv() => return drain(&shutdown, signal).await,
        }
    } else {
        Ok(Ok(0))
    };
    match prepared {
        Ok(Ok(0)) => {}
        Ok(Ok(removed)) => tracing::info!(removed, "removed .part files left by an earlier run"),
        Ok(Err(problem)) => {
            eprintln!(
                "snowluma-mcp: configuration error: the download directory cannot be used: {problem}"
            );
            return ExitCode::from(2);
        }
        Err(error) => {
            eprintln!("snowluma-mcp: cannot check the download directory: {error}");
            return ExitCode::FAILURE;
        }
    }
    if config.http.is_some() {
        return match snowluma_mcp::server::http::serve(config, termination.recv()).await {
            Ok(signal) => drain(&shutdown, signal).await,
            Err(error) => {
                tracing::error!("cannot start: {error}");
                ExitCode::FAILURE
            }
        };
    }
    if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        eprintln!("{}", snowluma_mcp::cli::TERMINAL_HINT);
    }
    match serve_stdio(config, termination.recv()).await {
        StdioEnd::Closed => ExitCode::SUCCESS,
        StdioEnd::Signal(signal) => drain(&shutdown, signal).await,
        StdioEnd::Failed => ExitCode::FAILURE,
    }
}

/// Cancels running calls and waits (at most [`DRAIN`]) until they cleaned up: uploads sent
/// their reset, downloads removed their partial file. The calls run as their own tasks, so
/// they keep going while this waits.
async fn drain(shutdown: &Shutdown, signal: &'static str) -> ExitCode {
    tracing::info!("{signal}: cancelling running calls and exiting");
    shutdown.token.cancel();
    if tokio::time::timeout(DRAIN, shutdown.drained())
        .await
        .is_err()
    {
        tracing::warn!("running calls did not finish cleaning up in time");
    }
    ExitCode::SUCCESS
}

/// SIGTERM and SIGINT (Ctrl-C elsewhere), listened for from [`Termination::listen`] on: a
/// signal that arrives while nobody awaits [`Termination::recv`] is kept for the next call.
struct Termination {
    #[cfg(unix)]
    signals: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl Termination {
    fn listen() -> Termination {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let signals = match (
                signal(SignalKind::terminate()),
                signal(SignalKind::interrupt()),
            ) {
                (Ok(term), Ok(int)) => Some((term, int)),
                _ => {
                    tracing::warn!("cannot listen for SIGTERM/SIGINT");
                    None
                }
            };
            Termination { signals }
        }
        #[cfg(not(unix))]
        Termination {}
    }

    /// The next signal's name.
    #[cfg(unix)]
    async fn recv(&mut self) -> &'static str {
        let Some((term, int)) = &mut self.signals else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        }
    }

    #[cfg(not(unix))]
    async fn recv(&mut self) -> &'static str {
        match tokio::signal::ctrl_c().await {
            Ok(()) => "Ctrl-C",
            Err(_) => std::future::pending().await,
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::Termination;

    /// A SIGTERM delivered while no phase awaits the listener (between start-up and
    /// serving) is still seen by the next phase that does.
    #[tokio::test]
    async fn a_signal_between_phases_is_kept_for_the_next_one() {
        let mut termination = Termination::listen();
        // The process signals itself while nothing awaits `recv`; the listener's handler
        // keeps the process alive and remembers the signal.
        rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::TERM)
            .expect("signal this test process");
        let seen = tokio::time::timeout(std::time::Duration::from_secs(30), termination.recv())
            .await
            .expect("the SIGTERM sent before recv was awaited is delivered");
        assert_eq!(seen, "SIGTERM");
    }
}
