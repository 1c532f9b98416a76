//! Plain JSON where nothing streams. rmcp's Streamable HTTP service answers a legacy session's
//! POST with an SSE stream even when the stream carries nothing but the response, and clients
//! limit an SSE event's size (python `mcp` refuses events over 1 MiB) where they read a JSON
//! body whole. So an SSE answer is read here until its first message: the request's response
//! becomes an `application/json` body; anything else first (progress, a log message, a
//! server-to-client request such as `elicitation/create`) means the request needs the stream,
//! and the stream goes out unchanged, starting with what was read.

use std::convert::Infallible;

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use http::header::{ACCEPT, CONTENT_LENGTH, CONTENT_TYPE, HeaderMap, HeaderValue};
use http::{Method, Response};
use http_body_util::{BodyExt, BodyStream, Full, StreamBody};
use hyper::body::Frame;
use serde_json::Value;

use super::reply::HttpBody;

/// Whether a request may be answered with a JSON body: a POST whose client accepts
/// `application/json` (every Streamable HTTP client must accept both).
pub fn may_answer_json(method: &Method, headers: &HeaderMap) -> bool {
    *method == Method::POST
        && headers
            .get_all(ACCEPT)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .any(|accept| {
                accept.split(',').any(|item| {
                    let kind = item.split(';').next().unwrap_or("").trim();
                    kind.eq_ignore_ascii_case("application/json")
                        || kind == "*/*"
                        || kind.eq_ignore_ascii_case("application/*")
                })
            })
}

fn is_sse(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/event-stream"))
}

/// What one SSE event holds.
enum Event {
    /// No data: a priming event, a comment or a keep-alive.
    Empty,
    /// A JSON-RPC response or error: the request's answer.
    Response(Bytes),
    /// A notification or a request: the client needs the stream.
    Other,
}

/// The response, with an SSE answer whose first message is the response turned into JSON.
pub async fn unstream(response: Response<HttpBody>) -> Response<HttpBody> {
    if !is_sse(response.headers()) {
        return response;
    }
    let (mut parts, mut body) = response.into_parts();
    let mut read = BytesMut::new();
    let mut scanned = 0;
    loop {
        while let Some((event_len, next)) = event_end(&read[scanned..]) {
            let event = classify(&read[scanned..scanned + event_len]);
            scanned += next;
            match event {
                Event::Empty => {}
                Event::Response(json) => {
                    parts
                        .headers
                        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                    parts.headers.remove(CONTENT_LENGTH);
                    return Response::from_parts(parts, Full::new(json).boxed());
                }
                Event::Other => return resume(parts, read.freeze(), body),
            }
        }
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    read.extend_from_slice(&data);
                }
            }
            Some(Err(never)) => match never {},
            // Ended without a response: pass on what there was.
            None => return resume(parts, read.freeze(), body),
        }
    }
}

/// The stream as it was: the bytes already read, then the rest.
fn resume(parts: http::response::Parts, read: Bytes, rest: HttpBody) -> Response<HttpBody> {
    let first = futures::stream::once(async move { Ok::<_, Infallible>(Frame::data(read)) });
    let body = BodyExt::boxed(StreamBody::new(first.chain(BodyStream::new(rest))));
    Response::from_parts(parts, body)
}

/// The length of the first complete event in `bytes` and where the next one starts.
fn event_end(bytes: &[u8]) -> Option<(usize, usize)> {
    let lf = find(bytes, b"\n\n").map(|at| (at, at + 2));
    let crlf = find(bytes, b"\r\n\r\n").map(|at| (at, at + 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

fn classify(event: &[u8]) -> Event {
    let text = String::from_utf8_lossy(event);
    let data: Vec<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| data.strip_prefix(' ').unwrap_or(data))
        .collect();
    let data = data.join("\n");
    if data.trim().is_empty() {
        return Event::Empty;
    }
    match serde_json::from_str::<Value>(&data) {
        Ok(Value::Object(message))
            if message.contains_key("id")
                && !message.contains_key("method")
                && (message.contains_key("result") || message.contains_key("error")) =>
        {
            Event::Response(Bytes::from(data))
        }
        _ => Event::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sse(body: &'static str) -> Response<HttpBody> {
        Response::builder()
            .header(CONTENT_TYPE, "text/event-stream")
            .header("mcp-session-id", "s1")
            .body(Full::new(Bytes::from_static(body.as_bytes())).boxed())
            .unwrap()
    }

    async fn text(response: Response<HttpBody>) -> String {
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn a_lone_response_becomes_json() {
        let response = unstream(sse(
            "id: 0\nretry: 3000\ndata: \n\n: ping\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
        ))
        .await;
        assert_eq!(response.headers()[CONTENT_TYPE], "application/json");
        assert_eq!(response.headers()["mcp-session-id"], "s1");
        assert_eq!(
            text(response).await,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#
        );
    }

    #[tokio::test]
    async fn a_notification_first_keeps_the_stream_whole() {
        let body = "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n";
        let response = unstream(sse(body)).await;
        assert_eq!(response.headers()[CONTENT_TYPE], "text/event-stream");
        assert_eq!(text(response).await, body);
    }

    #[test]
    fn only_posts_accepting_json_qualify() {
        let mut headers = HeaderMap::new();
        headers.insert(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        assert!(may_answer_json(&Method::POST, &headers));
        assert!(!may_answer_json(&Method::GET, &headers));
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        assert!(!may_answer_json(&Method::POST, &headers));
    }
}
