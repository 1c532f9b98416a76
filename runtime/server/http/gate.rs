//! Everything a request passes before rmcp's Streamable HTTP service sees it, in this order:
//! the endpoint path, `Host` and `Origin` (403, before authentication so a rebinding page
//! learns nothing), the bearer token (401), the in-flight request cap (503), the body cap
//! (413), an unknown session on DELETE (404; rmcp would answer 202), and the session cap on
//! `initialize` (the least recently used idle session is ended to make room; 503 only when
//! none is idle). A session another principal opened is answered as an unknown one.
//!
//! Kept by hand rather than tower-http's RequestBodyLimitLayer/TimeoutLayer and tower's
//! ConcurrencyLimitLayer (issue 35): those answer 413/408 with their own bodies instead of a
//! JSON-RPC error naming the setting, time the whole request instead of the body read, and
//! queue instead of refusing with 503 (and free the slot when the head is sent, while an open
//! SSE stream must keep it). The body cap itself is http-body-util's `Limited`.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::json;

use super::auth;
use super::origin::{OriginPolicy, OriginRefusal};
use super::plain_json;
use super::principals::{SessionOwners, as_principal};
use super::reply::{self, HttpBody};
use super::sessions::{SESSION_HEADER, SessionLimits, peek, session_id};
use crate::server::SnowlumaServer;

/// What a request naming another principal's session names instead: no session has this id
/// (rmcp's are UUIDs).
const FOREIGN_SESSION: &str = "not-a-session";

/// How long a client may take to send a request body.
const BODY_TIMEOUT: Duration = Duration::from_secs(30);

pub struct Gate {
    pub path: String,
    pub origins: OriginPolicy,
    pub credentials: Option<crate::config::principals::Credentials>,
    pub max_body_bytes: usize,
    pub limits: SessionLimits,
    pub owners: SessionOwners,
    pub service: StreamableHttpService<SnowlumaServer, LocalSessionManager>,
}

impl Gate {
    pub async fn handle(self: Arc<Self>, request: Request<Incoming>) -> Response<HttpBody> {
        let (mut parts, body) = request.into_parts();
        let authority = parts.uri.authority().map(|a| a.as_str().to_string());
        if let Err(refusal) = self
            .origins
            .check_host(&parts.headers, authority.as_deref())
            .and_then(|()| self.origins.check_origin(&parts.headers))
        {
            tracing::warn!(?refusal, method = %parts.method, "refused a request by Host/Origin");
            return reply::closing(origin_refusal(refusal));
        }
        let Some(principal) = auth::principal(self.credentials.as_ref(), &parts.headers) else {
            tracing::info!(method = %parts.method, "refused a request without the right bearer token");
            return reply::closing(reply::unauthorized());
        };
        auth::strip_credentials(&mut parts.headers);
        if parts.uri.path() != self.path {
            return reply::refusal(
                StatusCode::NOT_FOUND,
                None,
                &format!("Not Found: the MCP endpoint is {}", self.path),
                json!({ "path": self.path }),
            );
        }
        let Some(permit) = self.limits.admit() else {
            return reply::busy(
                None,
                &format!(
                    "Too many requests in progress (SNOWLUMA_MCP_HTTP_MAX_REQUESTS = {}); retry shortly",
                    self.limits.max_requests
                ),
                json!({ "limit": "SNOWLUMA_MCP_HTTP_MAX_REQUESTS", "max": self.limits.max_requests }),
                1,
            );
        };
        let bytes = match read_body(body, self.max_body_bytes).await {
            Ok(bytes) => bytes,
            Err(response) => return response,
        };
        // Another principal's session is answered exactly as an unknown one: the request goes
        // on naming an id no session has.
        if session_id(&parts.headers).is_some_and(|id| !self.owners.allows(id, &principal)) {
            parts.headers.insert(
                SESSION_HEADER,
                http::HeaderValue::from_static(FOREIGN_SESSION),
            );
        }
        if parts.method == Method::DELETE
            && let Some(id) = session_id(&parts.headers)
            && !self.limits.has_session(id).await
        {
            return reply::refusal(
                StatusCode::NOT_FOUND,
                None,
                "Not Found: no such session (it ended, expired or never existed); initialize a new one",
                json!({ "rule": "session" }),
            );
        }
        let opens_session = parts.method == Method::POST
            && session_id(&parts.headers).is_none()
            && peek(&bytes).is_some_and(|p| p.method.as_deref() == Some("initialize"));
        let plain_json = plain_json::may_answer_json(&parts.method, &parts.headers);
        // Marks the session busy until the response (an SSE stream, maybe) ends.
        let in_use = session_id(&parts.headers).and_then(|id| self.owners.begin_use(id));
        let request = Request::from_parts(parts, Full::new(bytes.clone()));
        let response = if opens_session {
            let mut slot = self.limits.reserve_session().await;
            if slot.is_none() && self.end_idle_session().await {
                slot = self.limits.reserve_session().await;
            }
            let Some(_slot) = slot else {
                let max = self.limits.max_sessions();
                tracing::warn!(max, "refused a new session: the session limit is reached");
                return reply::busy(
                    peek(&bytes).and_then(|p| p.id),
                    &format!(
                        "Too many sessions: {max} are open (SNOWLUMA_MCP_HTTP_MAX_SESSIONS) and every one has a request or stream in progress; end one with DELETE or retry later"
                    ),
                    json!({ "limit": "SNOWLUMA_MCP_HTTP_MAX_SESSIONS", "max": max }),
                    30,
                );
            };
            let response = as_principal(principal.clone(), self.service.handle(request)).await;
            if let Some(id) = session_id(response.headers()) {
                let live = self.limits.manager.sessions.read().await;
                self.owners.retain(|id| live.contains_key(id));
                self.owners.record(id, principal);
            }
            response
        } else {
            as_principal(principal, self.service.handle(request)).await
        };
        let response = if plain_json {
            plain_json::unstream(response).await
        } else {
            response
        };
        // The permit lives as long as the body: an SSE stream counts until it ends.
        let (parts, body) = response.into_parts();
        let body = body
            .map_frame(move |frame| {
                let _held = (&permit, &in_use);
                frame
            })
            .boxed();
        Response::from_parts(parts, body)
    }
}

impl Gate {
    /// At the session cap: ends the least recently used idle session of the principal with
    /// the most sessions (most clients never send DELETE). It then answers 404 and its state
    /// is released with its handler. False when every session is busy.
    async fn end_idle_session(&self) -> bool {
        {
            let live = self.limits.manager.sessions.read().await;
            self.owners.retain(|id| live.contains_key(id));
        }
        let Some((id, owner)) = self.owners.idle_victim() else {
            return false;
        };
        use rmcp::transport::streamable_http_server::session::SessionManager as _;
        let ended = self.limits.manager.close_session(&id.as_str().into()).await;
        self.owners.retain(|live| live != id);
        tracing::info!(
            principal = %owner,
            ended = ended.is_ok(),
            "ended the least recently used idle session to make room (SNOWLUMA_MCP_HTTP_MAX_SESSIONS)"
        );
        true
    }
}

/// The whole body, up to `limit` bytes.
async fn read_body(body: Incoming, limit: usize) -> Result<Bytes, Response<HttpBody>> {
    let collected = tokio::time::timeout(BODY_TIMEOUT, Limited::new(body, limit).collect()).await;
    match collected {
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(error)) if error.downcast_ref::<LengthLimitError>().is_some() => {
            Err(reply::refusal(
                StatusCode::PAYLOAD_TOO_LARGE,
                None,
                &format!(
                    "Payload Too Large: the request body exceeds {limit} bytes (SNOWLUMA_MCP_HTTP_MAX_BODY_BYTES)"
                ),
                json!({ "limit": "SNOWLUMA_MCP_HTTP_MAX_BODY_BYTES", "max": limit }),
            ))
        }
        Ok(Err(_)) => Err(reply::refusal(
            StatusCode::BAD_REQUEST,
            None,
            "Bad Request: the request body could not be read",
            json!({ "rule": "body" }),
        )),
        Err(_) => Err(reply::refusal(
            StatusCode::REQUEST_TIMEOUT,
            None,
            &format!(
                "Request Timeout: the body did not arrive within {} seconds",
                BODY_TIMEOUT.as_secs()
            ),
            json!({ "rule": "body-timeout", "seconds": BODY_TIMEOUT.as_secs() }),
        )),
    }
}

fn origin_refusal(refusal: OriginRefusal) -> Response<HttpBody> {
    match refusal {
        OriginRefusal::MalformedHost => reply::refusal(
            StatusCode::BAD_REQUEST,
            None,
            "Bad Request: missing or malformed Host header",
            json!({ "rule": "host" }),
        ),
        OriginRefusal::HostNotAllowed => reply::refusal(
            StatusCode::FORBIDDEN,
            None,
            "Forbidden: Host is neither a loopback name nor the host of SNOWLUMA_MCP_PUBLIC_ORIGIN",
            json!({ "rule": "host" }),
        ),
        OriginRefusal::OriginNotAllowed => reply::refusal(
            StatusCode::FORBIDDEN,
            None,
            "Forbidden: Origin is not SNOWLUMA_MCP_PUBLIC_ORIGIN nor this server's own loopback origin",
            json!({ "rule": "origin" }),
        ),
    }
}
