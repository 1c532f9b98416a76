//! The transport's own refusals: an HTTP status with a JSON-RPC error body (no `id` unless
//! the request's is known) that names the rule or limit and what to do instead.

use std::convert::Infallible;

use bytes::Bytes;
use http::header::{CONNECTION, CONTENT_TYPE, HeaderValue, RETRY_AFTER, WWW_AUTHENTICATE};
use http::{Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};

pub type HttpBody = BoxBody<Bytes, Infallible>;

/// JSON-RPC "Invalid Request": the request itself is not acceptable.
const INVALID_REQUEST: i64 = -32600;
/// Implementation-defined server error: the server is at a limit, try later.
const SERVER_BUSY: i64 = -32000;

pub fn refusal(
    status: StatusCode,
    id: Option<Value>,
    message: &str,
    data: Value,
) -> Response<HttpBody> {
    let code = if status == StatusCode::SERVICE_UNAVAILABLE {
        SERVER_BUSY
    } else {
        INVALID_REQUEST
    };
    let body = json!({
        "jsonrpc": "2.0",
        "id": id.unwrap_or(Value::Null),
        "error": { "code": code, "message": message, "data": data },
    });
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

pub fn unauthorized() -> Response<HttpBody> {
    let mut response = refusal(
        StatusCode::UNAUTHORIZED,
        None,
        "Unauthorized: send `Authorization: Bearer <token>` with the token this server was given in SNOWLUMA_MCP_HTTP_TOKEN or SNOWLUMA_MCP_HTTP_TOKEN_FILE",
        json!({ "rule": "bearer-token" }),
    );
    response
        .headers_mut()
        .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

/// 503 with a hint of when to retry.
pub fn busy(id: Option<Value>, message: &str, data: Value, retry_secs: u32) -> Response<HttpBody> {
    let mut response = refusal(StatusCode::SERVICE_UNAVAILABLE, id, message, data);
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(retry_secs));
    response
}

/// Ends the connection after this response: a peer that failed the Host, Origin or token
/// check keeps no connection slot for its next try.
pub fn closing(mut response: Response<HttpBody>) -> Response<HttpBody> {
    response
        .headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    response
}

/// Keeps `held` alive until the response body ends (or is dropped).
pub fn holding<T: Send + Sync + 'static>(
    response: Response<HttpBody>,
    held: T,
) -> Response<HttpBody> {
    let (parts, body) = response.into_parts();
    let body = body
        .map_frame(move |frame| {
            let _held = &held;
            frame
        })
        .boxed();
    Response::from_parts(parts, body)
}
