//! One MCP session on stdin/stdout from start to end, for `main`: the handler, this crate's
//! stdio transport around rmcp's pipes, and rmcp's service loop. `main` keeps the process
//! concerns (signals, draining running calls, the exit code) and names no rmcp type.

use std::future::Future;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::service::ServerInitializeError;

use super::SnowlumaServer;
use super::stdio::{self, StdioTransport};
use crate::config::Config;

/// How a stdio session ended.
#[derive(Debug, PartialEq, Eq)]
pub enum StdioEnd {
    /// The client closed the connection, before or after `initialize`: not an error.
    Closed,
    /// A termination signal arrived (its name); running calls still need draining.
    Signal(&'static str),
    /// The session could not start or its task failed; the reason is logged.
    Failed,
}

/// Serves MCP on stdin/stdout until the client leaves, `termination` resolves or the session
/// fails. With events enabled, waits (at most two seconds) for the event socket to close
/// after a clean end.
pub async fn serve_stdio(
    config: Config,
    termination: impl Future<Output = &'static str>,
) -> StdioEnd {
    let mut termination = std::pin::pin!(termination);
    let (stdin, stdout) = rmcp::transport::stdio_pipes();
    let transport = StdioTransport::new(stdin, stdout);
    let server = match SnowlumaServer::new(config) {
        Ok(server) => server,
        Err(error) => {
            tracing::error!("cannot start: {error}");
            return StdioEnd::Failed;
        }
    };
    let events = server.event_hub();
    let running = tokio::select! {
        served = server.boxed_requests().serve(transport) => served,
        signal = &mut termination => return StdioEnd::Signal(signal),
    };
    match running {
        Ok(running) => {
            let waiting = running.waiting();
            tokio::select! {
                stopped = waiting => match stopped {
                    Ok(reason) => {
                        // The session's event resources were released with it: let the
                        // event socket close cleanly before the runtime goes.
                        if let Some(hub) = &events {
                            hub.closed(Duration::from_secs(2)).await;
                        }
                        tracing::info!(?reason, "stopped");
                        StdioEnd::Closed
                    }
                    Err(error) => {
                        tracing::error!(%error, "server task failed");
                        StdioEnd::Failed
                    }
                },
                signal = &mut termination => StdioEnd::Signal(signal),
            }
        }
        // A client (or a person pressing Ctrl-D) that closes stdin before `initialize` has
        // simply gone away: not an error.
        Err(ServerInitializeError::ConnectionClosed(_)) => StdioEnd::Closed,
        Err(error) => {
            let error = stdio::start_failure(&error);
            tracing::error!(%error, "the MCP session ended before it started");
            StdioEnd::Failed
        }
    }
}
