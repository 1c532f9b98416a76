//! The HTTP client: one `reqwest` client with connection reuse, POST
//! `{action, params}` to the configured endpoint with the bearer token and the call's trace
//! headers. Nothing is retried. Every wait (connect, send, body) is bounded by the request
//! timeout and abandoned on cancellation, which drops the connection.

use std::time::Duration;

use bytes::Bytes;
use reqwest::StatusCode;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::trace::TraceContext;

/// The largest ordinary response body read; anything longer is not a OneBot envelope.
pub const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

/// Why a call produced no OneBot envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// Nothing listens at the endpoint, or the connection could not be made; nothing was sent.
    Connect(String),
    /// No complete answer within the request timeout; the request may have been received.
    Timeout,
    /// The MCP client cancelled the call; the request may have been received.
    Cancelled,
    /// The connection broke after the request was sent.
    Broken(String),
    /// An HTTP status other than 200, with SnowLuma's `wording` when it sent one.
    Status(u16, Option<String>),
    /// A 200 whose body is not a JSON object.
    NotJson(String),
    /// A body larger than [`MAX_RESPONSE_BYTES`].
    TooLarge,
}

#[derive(Clone)]
pub struct OneBotClient {
    http: reqwest::Client,
    endpoint: String,
    authorization: Option<String>,
    timeout: Duration,
}

impl OneBotClient {
    pub fn new(endpoint: &str, token: Option<&str>, timeout: Duration) -> Result<Self, String> {
        let http = reqwest::Client::builder()
            // Loopback and LAN SnowLuma instances must not be sent through a proxy from the
            // environment, and a redirect would carry the token elsewhere.
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .pool_idle_timeout(Duration::from_secs(90))
            .tcp_nodelay(true)
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(OneBotClient {
            http,
            endpoint: endpoint.to_string(),
            authorization: token.map(|t| format!("Bearer {t}")),
            timeout,
        })
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
    ) -> reqwest::RequestBuilder {
        let body = serde_json::json!({ "action": action, "params": params });
        let mut request = self
            .http
            .post(&self.endpoint)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("traceparent", &trace.traceparent)
            .body(serde_json::to_vec(&body).unwrap_or_default());
        if let Some(state) = &trace.tracestate {
            request = request.header("tracestate", state);
        }
        if let Some(authorization) = &self.authorization {
            request = request.header(reqwest::header::AUTHORIZATION, authorization);
        }
        request
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
                .request(action, params, trace)
                .send()
                .await
                .map_err(classify)?;
            let status = response.status();
            let body = read_body(response).await?;
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

async fn read_body(mut response: reqwest::Response) -> Result<Bytes, CallError> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(classify)? {
        if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Err(CallError::TooLarge);
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
