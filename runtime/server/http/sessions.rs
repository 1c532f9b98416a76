//! Bounds on legacy sessions and in-flight requests. rmcp's session manager has no count
//! limit, so creating a session (a POST `initialize` without `Mcp-Session-Id`) is
//! serialised here: count, then let rmcp create it, under one lock. Idle sessions are ended
//! by rmcp's keep-alive, which drops the handler and with it the session's state.

use std::borrow::Cow;
use std::sync::Arc;

use http::HeaderMap;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde::Deserialize;
use tokio::sync::{Mutex, MutexGuard, OwnedSemaphorePermit, Semaphore};

pub const SESSION_HEADER: &str = "mcp-session-id";

pub struct SessionLimits {
    pub manager: Arc<LocalSessionManager>,
    max_sessions: usize,
    creating: Mutex<()>,
    requests: Arc<Semaphore>,
    pub max_requests: usize,
}

/// Held while a new session is being created; the count cannot change meanwhile.
pub struct CreatingSession<'a> {
    _lock: MutexGuard<'a, ()>,
}

impl SessionLimits {
    pub fn new(
        manager: Arc<LocalSessionManager>,
        max_sessions: usize,
        max_requests: usize,
    ) -> SessionLimits {
        SessionLimits {
            manager,
            max_sessions,
            creating: Mutex::new(()),
            requests: Arc::new(Semaphore::new(max_requests)),
            max_requests,
        }
    }

    pub fn max_sessions(&self) -> usize {
        self.max_sessions
    }

    pub async fn open_sessions(&self) -> usize {
        self.manager.sessions.read().await.len()
    }

    /// A slot for a new session, or `None` when [`Self::max_sessions`] are open.
    pub async fn reserve_session(&self) -> Option<CreatingSession<'_>> {
        let lock = self.creating.lock().await;
        if self.open_sessions().await >= self.max_sessions {
            return None;
        }
        Some(CreatingSession { _lock: lock })
    }

    /// Whether `id` names a live session.
    pub async fn has_session(&self, id: &str) -> bool {
        self.manager.sessions.read().await.contains_key(id)
    }

    /// A permit for one request, held until its response body (an SSE stream, maybe) ends.
    pub fn admit(&self) -> Option<OwnedSemaphorePermit> {
        self.requests.clone().try_acquire_owned().ok()
    }
}

/// The session id a request names, if it names one.
pub fn session_id(headers: &HeaderMap) -> Option<&str> {
    headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok())
}

/// What the transport needs from a JSON-RPC body before rmcp sees it.
#[derive(Deserialize)]
pub struct Peek<'a> {
    #[serde(borrow)]
    pub method: Option<Cow<'a, str>>,
    pub id: Option<serde_json::Value>,
}

pub fn peek(body: &[u8]) -> Option<Peek<'_>> {
    serde_json::from_slice(body).ok()
}
