//! The HTTP client: one `reqwest` client with connection reuse, POST
//! `{action, params}` to the configured endpoint with the bearer token and the call's trace
//! headers. Nothing is retried. Every wait (connect, send, body) is bounded by the request
//! timeout and abandoned on cancellation, which drops the connection.

use std::time::Duration;

use bytes::Bytes;
use reqwest::StatusCode;
use reqwest::header::HeaderValue;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::config::TlsFailure;
use crate::trace::TraceContext;

/// SnowLuma refuses request bodies over 2 MiB by resetting the connection without an answer,
/// so larger bodies are refused here, before anything is sent.
pub const MAX_REQUEST_BYTES: usize = 2 * 1024 * 1024;

/// Why a call produced no OneBot envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// Nothing listens at the endpoint, or the connection could not be made; nothing was sent.
    Connect(String),
    /// The TLS handshake failed (e.g. an untrusted certificate); nothing was sent.
    Tls(TlsFailure),
    /// No complete answer within the request timeout; the request may have been received.
    Timeout,
    /// The MCP client cancelled the call; the request may have been received.
    Cancelled,
    /// The connection broke after the request was sent.
    Broken(String),
    /// HTTP 401; `token_sent` says whether a token was configured and sent.
    Unauthorized { token_sent: bool },
    /// An HTTP status other than 200 or 401, with SnowLuma's `wording` when it sent one.
    Status(u16, Option<String>),
    /// A 200 whose body is not a JSON object.
    NotJson(String),
    /// An answer larger than the response cap (the cap in bytes).
    TooLarge(usize),
    /// A request body over [`MAX_REQUEST_BYTES`] (its size); nothing was sent.
    BodyTooLarge(usize),
}

#[derive(Clone)]
pub struct OneBotClient {
    http: reqwest::Client,
    endpoint: String,
    /// `endpoint` parsed once: parsing it for every request cost more than building the
    /// request body (callgrind).
    url: reqwest::Url,
    /// Built once at start-up and marked sensitive, so no debug output shows it.
    authorization: Option<HeaderValue>,
    timeout: Duration,
    max_response: usize,
}

impl OneBotClient {
    pub fn new(
        endpoint: &str,
        token: Option<&str>,
        timeout: Duration,
        max_response: usize,
        tls: std::sync::Arc<rustls::ClientConfig>,
    ) -> Result<Self, String> {
        let authorization = match token {
            None => None,
            Some(token) => {
                let mut value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
                    "the access token cannot be sent in an HTTP header (it has a control character)"
                        .to_string()
                })?;
                value.set_sensitive(true);
                Some(value)
            }
        };
        let http = reqwest::Client::builder()
            // Loopback and LAN SnowLuma instances must not be sent through a proxy from the
            // environment, and a redirect would carry the token elsewhere.
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .pool_idle_timeout(Duration::from_secs(90))
            .tcp_nodelay(true)
            // The shared rustls configuration (system roots plus SNOWLUMA_MCP_CA_FILE); reqwest
            // takes it as is, so https and wss trust exactly the same CAs.
            .tls_backend_preconfigured((*tls).clone())
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        let endpoint = endpoint.trim().to_string();
        let url = reqwest::Url::parse(&endpoint)
            .map_err(|e| format!("the endpoint is not a valid URL: {e}"))?;
        Ok(OneBotClient {
            http,
            endpoint,
            url,
            authorization,
            timeout,
            max_response,
        })
    }

    /// The path part of the endpoint (`/` for SnowLuma's default).
    pub fn endpoint_path(&self) -> &str {
        let after_scheme = self.endpoint.split_once("://").map_or("", |(_, rest)| rest);
        after_scheme.find('/').map_or("/", |i| &after_scheme[i..])
    }

    pub fn max_response(&self) -> usize {
        self.max_response
    }

    /// Whether requests carry an access token.
    pub fn sends_token(&self) -> bool {
        self.authorization.is_some()
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Starts a POST of `{action, params}` with auth and trace headers.
    pub fn request(
        &self,
        action: &str,
        params: &Map<String, Value>,
        trace: &TraceContext,
    ) -> Result<reqwest::RequestBuilder, CallError> {
        // Serialized straight from the borrowed params (no copy into a value tree first).
        #[derive(serde::Serialize)]
        struct Body<'a> {
            action: &'a str,
            params: &'a Map<String, Value>,
        }
        let body = serde_json::to_vec(&Body { action, params }).unwrap_or_default();
        if body.len() > MAX_REQUEST_BYTES {
            return Err(CallError::BodyTooLarge(body.len()));
        }
        let mut request = self
            .http
            .post(self.url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("traceparent", &trace.traceparent)
            .body(body);
        if let Some(state) = &trace.tracestate {
            request = request.header("tracestate", state);
        }
        if let Some(authorization) = &self.authorization {
            request = request.header(reqwest::header::AUTHORIZATION, authorization.clone());
        }
        Ok(request)
    }

    /// One ordinary action call: the parsed envelope, or why there is none.
    pub async fn call(
        &self,
        action: &str,
        params: &Map<String, Value>,
        trace: &TraceContext,
        cancel: &CancellationToken,
    ) -> Result<Value, CallError> {
        let exchange = async {
            let response = self
                .request(action, params, trace)?
                .send()
                .await
                .map_err(classify)?;
            let status = response.status();
            if status == StatusCode::UNAUTHORIZED {
                return Err(CallError::Unauthorized {
                    token_sent: self.authorization.is_some(),
                });
            }
            let body = read_body(response, self.max_response).await?;
            if status != StatusCode::OK {
                let wording = serde_json::from_slice::<Value>(&body)
                    .ok()
                    .and_then(|v| v.get("wording").and_then(Value::as_str).map(str::to_string));
                return Err(CallError::Status(status.as_u16(), wording));
            }
            match serde_json::from_slice::<Value>(&body) {
                Ok(envelope @ Value::Object(_)) => Ok(envelope),
                Ok(_) => Err(CallError::NotJson(
                    "the body is JSON but not an object".into(),
                )),
                Err(error) => Err(CallError::NotJson(format!(
                    "the body is not JSON ({error})"
                ))),
            }
        };
        tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(CallError::Cancelled),
            outcome = tokio::time::timeout(self.timeout, exchange) => outcome.unwrap_or(Err(CallError::Timeout)),
        }
    }
}

async fn read_body(mut response: reqwest::Response, cap: usize) -> Result<Bytes, CallError> {
    if response.content_length().is_some_and(|n| n > cap as u64) {
        return Err(CallError::TooLarge(cap));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(classify)? {
        if body.len() + chunk.len() > cap {
            return Err(CallError::TooLarge(cap));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(body))
}

/// Maps reqwest's error to a known cause. URLs are dropped from messages.
pub(super) fn classify(error: reqwest::Error) -> CallError {
    if error.is_timeout() {
        return CallError::Timeout;
    }
    let error = error.without_url();
    if let Some(failure) = TlsFailure::find(&error) {
        return CallError::Tls(failure);
    }
    if error.is_connect() {
        return CallError::Connect(root_cause(&error));
    }
    CallError::Broken(root_cause(&error))
}

fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error;
    while let Some(source) = cause.source() {
        cause = source;
    }
    cause.to_string()
}
