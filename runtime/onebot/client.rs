//! The HTTP client: hyper's pooled client (keep-alive connections, http or https over the
//! shared rustls configuration) that POSTs `{action, params}` to the configured endpoint with
//! the bearer token and the call's trace headers. Nothing is retried, redirected or proxied.
//! Every wait (connect, send, body) is bounded by the request timeout and abandoned on
//! cancellation, which drops the connection.
//!
//! Why not reqwest: its redirect and retry layers and URL conversions, features these calls
//! never use, cost about 24k of a query_action call's 134k instructions (callgrind; it parsed
//! the endpoint into a `Url` again on every call). The path through hyper costs about 12k.

use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::{Body as _, Incoming};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::config::TlsFailure;
use crate::trace::TraceContext;

type Connector = hyper_rustls::HttpsConnector<HttpConnector>;

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
    http: Client<Connector, Full<Bytes>>,
    endpoint: String,
    /// `endpoint` parsed once; a `Uri` clone is a reference count.
    uri: Uri,
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
        let endpoint = endpoint.trim().to_string();
        // Parsed with the URL standard's rules (as every other URL here), then carried as the
        // `Uri` hyper sends.
        let url = url::Url::parse(&endpoint)
            .map_err(|e| format!("the endpoint is not a valid URL: {e}"))?;
        let uri: Uri = url
            .as_str()
            .parse()
            .map_err(|e| format!("the endpoint is not a valid URL: {e}"))?;
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        tcp.set_connect_timeout(Some(timeout.min(Duration::from_secs(10))));
        // The shared rustls configuration (system roots plus SNOWLUMA_MCP_CA_FILE), so https and
        // wss trust exactly the same CAs. The connector sets ALPN itself (HTTP/1.1 only).
        let mut tls = (*tls).clone();
        tls.alpn_protocols.clear();
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(tcp);
        // No proxy from the environment (loopback and LAN SnowLuma instances must not go through
        // one) and no redirects (one would carry the token elsewhere): hyper does neither.
        let http = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .pool_timer(TokioTimer::new())
            .build(connector);
        Ok(OneBotClient {
            http,
            endpoint,
            uri,
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

    /// The POST of `{action, params}` with auth and trace headers.
    pub fn request(
        &self,
        action: &str,
        params: &Map<String, Value>,
        trace: &TraceContext,
    ) -> Result<Request<Full<Bytes>>, CallError> {
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
        let mut request = Request::post(self.uri.clone())
            .header(header::CONTENT_TYPE, "application/json")
            .header("traceparent", &trace.traceparent);
        if let Some(state) = &trace.tracestate {
            request = request.header("tracestate", state);
        }
        if let Some(authorization) = &self.authorization {
            request = request.header(header::AUTHORIZATION, authorization.clone());
        }
        // Trace headers are validated when the call starts, so this refusal is not expected;
        // if it comes, nothing was sent.
        request
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| CallError::Broken(format!("the request could not be built ({e})")))
    }

    /// Sends a request built by [`OneBotClient::request`] and waits for the response head.
    pub async fn send(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<http::Response<Incoming>, CallError> {
        self.http
            .request(request)
            .await
            .map_err(|e| classify(&e, e.is_connect()))
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
            let response = self.send(self.request(action, params, trace)?).await?;
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

async fn read_body(response: http::Response<Incoming>, cap: usize) -> Result<Bytes, CallError> {
    let mut body = response.into_body();
    let announced = body.size_hint().exact();
    if announced.is_some_and(|n| n > cap as u64) {
        return Err(CallError::TooLarge(cap));
    }
    // Reserved from the announced length, but never more than a MiB before the bytes arrive.
    let mut read = Vec::with_capacity(announced.map_or(0, |n| n.min(1 << 20) as usize));
    while let Some(chunk) = next_chunk(&mut body).await? {
        if read.len() + chunk.len() > cap {
            return Err(CallError::TooLarge(cap));
        }
        read.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(read))
}

/// The next piece of a response body (trailers are skipped), `None` at its end.
pub(super) async fn next_chunk(body: &mut Incoming) -> Result<Option<Bytes>, CallError> {
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| classify(&e, false))?;
        if let Ok(data) = frame.into_data() {
            return Ok(Some(data));
        }
    }
    Ok(None)
}

/// Maps a failed exchange to a known cause from its source chain; `connect` says whether it
/// failed before anything was sent. Messages carry the root cause, never the URL.
fn classify(error: &(dyn std::error::Error + 'static), connect: bool) -> CallError {
    let mut cause = Some(error);
    while let Some(error) = cause {
        let timed_out = error
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
            || error
                .downcast_ref::<hyper::Error>()
                .is_some_and(hyper::Error::is_timeout);
        if timed_out {
            return CallError::Timeout;
        }
        cause = error.source();
    }
    if let Some(failure) = TlsFailure::find(error) {
        return CallError::Tls(failure);
    }
    if connect {
        return CallError::Connect(root_cause(error));
    }
    CallError::Broken(root_cause(error))
}

fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error;
    while let Some(source) = cause.source() {
        cause = source;
    }
    cause.to_string()
}
