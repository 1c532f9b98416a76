//! The opt-in Streamable HTTP transport (`--transport http`): rmcp's tower service on bare
//! hyper, behind [`gate::Gate`] (Host/Origin, bearer token, limits).
//!
//! State: a legacy client (2025-06-18, 2025-11-25) gets a session (`Mcp-Session-Id`) whose
//! handler owns its own [`Session`]: client capabilities from its `initialize`, its
//! `elicitation/create` prompts, its event resources and subscriptions. The handler is
//! dropped on DELETE, on idle expiry or at shutdown, and the session's state with it. A
//! 2026-07-28 request has no session: rmcp builds a handler per POST, and what such requests
//! keep between calls (event resources made by `subscribe_events`) lives in the requesting
//! principal's stateless session (see `principals`).

mod auth;
mod gate;
mod origin;
mod peers;
mod plain_json;
mod principals;
mod reply;
mod sessions;

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::{Shared, SnowlumaServer};
use crate::config::Config;
use gate::Gate;
use origin::OriginPolicy;
use sessions::SessionLimits;

/// Open TCP connections beyond the request cap that may sit idle (keep-alive) before new
/// ones are turned away.
const SPARE_CONNECTIONS: usize = 64;
/// How long a client may take to send a request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(30);

/// Serves MCP over HTTP until `stop` resolves (its value is returned) or the listener
/// fails. Errors are start-up problems, worded for the operator.
pub async fn serve<F>(config: Config, stop: F) -> Result<&'static str, String>
where
    F: Future<Output = &'static str>,
{
    let Some(http) = config.http.clone() else {
        return Err("the HTTP transport was started without HTTP settings".into());
    };
    let listener = TcpListener::bind(http.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", http.listen))?;
    let local = listener
        .local_addr()
        .map_err(|e| format!("cannot read the listening address: {e}"))?;
    if http.idle_timeout < config.timeout {
        // rmcp's idle timer only sees messages, so a silent call outliving it ends with its session.
        tracing::warn!(
            "SNOWLUMA_MCP_HTTP_IDLE_SECS ({} s) is shorter than SNOWLUMA_MCP_TIMEOUT_MS: a legacy session can expire while a call waits for SnowLuma",
            http.idle_timeout.as_secs()
        );
    }
    let shared = Shared::new(config)?;
    if http.credentials.is_none() {
        tracing::warn!(
            "no SNOWLUMA_MCP_HTTP_TOKEN: any local process can use this server; set one unless this machine has a single user"
        );
    }
    let shutdown = CancellationToken::new();
    let stateless = Arc::new(principals::StatelessSessions::new(
        shared.clone(),
        http.event_lease,
    ));
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(http.idle_timeout);
    let manager = Arc::new(manager);
    // Host and Origin are checked by the gate, before authentication; rmcp's own lists
    // (loopback only by default) would refuse the public host.
    let rmcp_config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_max_request_body_bytes(http.max_body_bytes)
        .with_cancellation_token(shutdown.child_token());
    let factory_shared = shared;
    let service = StreamableHttpService::new(
        move || {
            // Called inside the gate's request future: the principal is the requester's.
            let principal = principals::current();
            Ok(SnowlumaServer::for_http(
                factory_shared.clone(),
                &principal,
                stateless.of(&principal),
            ))
        },
        manager.clone(),
        rmcp_config,
    );
    let gate = Arc::new(Gate {
        path: http.path.clone(),
        origins: OriginPolicy::new(http.public_origin.clone(), local.port()),
        credentials: http.credentials.clone(),
        max_body_bytes: http.max_body_bytes,
        limits: SessionLimits::new(manager, http.max_sessions, http.max_requests),
        owners: principals::SessionOwners::default(),
        service,
    });
    let connections = Arc::new(Semaphore::new(http.max_requests + SPARE_CONNECTIONS));
    let peer_limits = peers::PeerLimits::new(http.max_conns_per_peer);
    tracing::info!(
        "serving MCP over HTTP at http://{local}{} (at most {} sessions, idle timeout {} s)",
        http.path,
        http.max_sessions,
        http.idle_timeout.as_secs()
    );
    tokio::pin!(stop);
    let signal = loop {
        let accepted = tokio::select! {
            signal = &mut stop => break signal,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of file descriptors and the like: wait instead of spinning.
                tracing::warn!(%error, "accepting a connection failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Some(peer_slot) = peer_limits.admit(peer.ip()) else {
            tracing::warn!(
                peer = %peer.ip(),
                max = http.max_conns_per_peer,
                "refused a connection: this peer has SNOWLUMA_MCP_HTTP_MAX_CONNS_PER_PEER busy connections open"
            );
            continue;
        };
        let Ok(slot) = connections.clone().try_acquire_owned() else {
            tracing::warn!("refused a connection: too many open connections");
            continue;
        };
        let _ = stream.set_nodelay(true);
        let gate = gate.clone();
        let stopping = shutdown.clone();
        tokio::spawn(async move {
            let busy = peer_slot.busy.clone();
            let listening = peer_slot.listening.clone();
            let streams_open = peer_slot.listening.clone();
            let close = peer_slot.close.clone();
            let _slots = (slot, peer_slot);
            let service = service_fn(move |request| {
                let gate = gate.clone();
                // Counted until the response body (a stream, maybe) ends. A GET is the
                // standalone event stream, which the peer limits may close (see `peers`).
                let counter = if request.method() == http::Method::GET {
                    &listening
                } else {
                    &busy
                };
                let busy = peers::Busy::new(counter);
                async move { Ok::<_, Infallible>(reply::holding(gate.handle(request).await, busy)) }
            });
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(error) = result {
                        tracing::debug!(%error, "HTTP connection ended with an error");
                    }
                }
                () = close.cancelled() => {
                    // Idle or only carrying event streams, and its peer is at
                    // SNOWLUMA_MCP_HTTP_MAX_CONNS_PER_PEER. A graceful shutdown would wait for
                    // an open stream forever, so such a connection is dropped (closing it).
                    if streams_open.load(std::sync::atomic::Ordering::SeqCst) == 0 {
                        connection.as_mut().graceful_shutdown();
                        let _ = connection.await;
                    }
                }
                () = stopping.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
        });
    };
    // Ends every session (dropping its state) and every open stream.
    shutdown.cancel();
    Ok(signal)
}
