//! The HTTP side: hyper http1 connections, SnowLuma's request parsing
//! (`http-server-adapter.ts`), recording, auth and fault injection.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};

use super::actions::{self, Outcome, failed};
use super::streams::{self, FrameSink, StreamJob};
use super::{Fault, Recorded, Shared};

/// SnowLuma's request body cap.
const MAX_BODY: usize = 2 * 1024 * 1024;
/// Past the cap the body is still drained up to here, so the client gets
/// the 500 answer instead of a reset; beyond it the connection is dropped.
const DRAIN_LIMIT: u64 = 64 * 1024 * 1024;
const JSON_TYPE: &str = "application/json; charset=utf-8";

/// A body error makes hyper drop the connection mid-response.
#[derive(Debug)]
pub(super) struct BodyError(&'static str);

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for BodyError {}

pub(super) type Chunk = Result<Bytes, BodyError>;

/// A service error makes hyper close the connection without a response.
#[derive(Debug)]
struct Refused;

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection refused by fault")
    }
}

impl std::error::Error for Refused {}

/// Response body: whole, or fed by a producer task through a small channel
/// (backpressure: the producer waits while hyper cannot write).
enum FakeBody {
    Full(Option<Bytes>),
    Channel {
        rx: mpsc::Receiver<Chunk>,
        len: Option<u64>,
    },
}

impl Body for FakeBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        match self.get_mut() {
            FakeBody::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            FakeBody::Channel { rx, .. } => rx.poll_recv(cx).map(|c| c.map(|r| r.map(Frame::data))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, FakeBody::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            FakeBody::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            FakeBody::Full(None) => SizeHint::with_exact(0),
            FakeBody::Channel { len: Some(n), .. } => SizeHint::with_exact(*n),
            FakeBody::Channel { .. } => SizeHint::default(),
        }
    }
}

/// Abort a channel body after what was queued has reached the socket, so
/// the client sees those bytes, then the connection closing.
pub(super) async fn abort_body(tx: &mpsc::Sender<Chunk>) {
    for _ in 0..500 {
        if tx.capacity() == tx.max_capacity() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    let _ = tx.send(Err(BodyError("injected disconnect"))).await;
}

pub(super) async fn serve(
    listener: std::net::TcpListener,
    shared: Arc<Shared>,
    mut stop: oneshot::Receiver<()>,
    tls: Option<Arc<rustls::ServerConfig>>,
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    loop {
        tokio::select! {
            _ = &mut stop => break,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    // e.g. out of descriptors: back off instead of spinning.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let shared = shared.clone();
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| handle(shared.clone(), req));
                    match acceptor {
                        None => {
                            let _ = http1::Builder::new()
                                .serve_connection(TokioIo::new(stream), service)
                                .await;
                        }
                        // A client that does not trust the certificate aborts the handshake:
                        // nothing reaches `handle`, so nothing is recorded.
                        Some(acceptor) => {
                            let Ok(stream) = acceptor.accept(stream).await else {
                                return;
                            };
                            let _ = http1::Builder::new()
                                .serve_connection(TokioIo::new(stream), service)
                                .await;
                        }
                    }
                });
            }
        }
    }
}

struct ReadBody {
    body: Vec<u8>,
    too_large: bool,
    /// The client went away, or sent far too much.
    broken: bool,
}

async fn read_body(mut body: Incoming) -> ReadBody {
    let mut out = ReadBody {
        body: Vec::new(),
        too_large: false,
        broken: false,
    };
    let mut total = 0u64;
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else {
            out.broken = true;
            break;
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        total += data.len() as u64;
        let room = MAX_BODY - out.body.len();
        out.body.extend_from_slice(&data[..room.min(data.len())]);
        if total > MAX_BODY as u64 {
            out.too_large = true;
        }
        if total > DRAIN_LIMIT {
            out.broken = true;
            break;
        }
    }
    out
}

/// The request as SnowLuma's adapter understands it.
struct Parsed {
    action: String,
    params: Map<String, Value>,
    echo: Option<Value>,
    health: bool,
    error: Option<(StatusCode, String)>,
}

/// `None` = not under the base path (404). Otherwise the action named by
/// the path: the raw rest, not decoded, trailing slash kept.
fn route(base: &str, path: &str) -> Option<String> {
    let prefix = if base.ends_with('/') {
        base.to_string()
    } else {
        format!("{base}/")
    };
    if path == base || path == format!("{base}/") {
        Some(String::new())
    } else {
        path.strip_prefix(&prefix).map(str::to_string)
    }
}

fn parse(
    method: &Method,
    path_action: String,
    query: &str,
    content_type: &str,
    body: &[u8],
) -> Parsed {
    let mut p = Parsed {
        action: path_action,
        params: Map::new(),
        echo: None,
        health: false,
        error: None,
    };
    if method == Method::GET {
        if p.action.is_empty() {
            p.health = true;
        }
        // Query values are JSON when they parse; echo is not extracted.
        for (k, v) in form_pairs(query) {
            p.params.insert(k, json_or_string(v));
        }
        return p;
    }
    if method != Method::POST {
        p.error = Some((StatusCode::METHOD_NOT_ALLOWED, "method not allowed".into()));
        return p;
    }
    let text = String::from_utf8_lossy(body);
    if text.trim().is_empty() {
        return p;
    }
    if content_type.contains("application/x-www-form-urlencoded") {
        parse_form(&mut p, &text);
    } else if content_type.contains("application/json") || content_type.is_empty() {
        match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(o)) => {
                if p.action.is_empty()
                    && let Some(a) = o.get("action").and_then(truthy_string)
                {
                    p.action = a;
                }
                p.params = match o.get("params") {
                    Some(Value::Object(params)) => params.clone(),
                    _ => o.clone(), // the flat form: the whole body is params
                };
                p.echo = o.get("echo").cloned();
            }
            Ok(_) => {}
            Err(_) if content_type.contains("application/json") => {
                p.error = Some((StatusCode::BAD_REQUEST, "bad request: invalid json".into()));
            }
            Err(_) => parse_form(&mut p, &text),
        }
    } else {
        p.error = Some((
            StatusCode::BAD_REQUEST,
            format!("bad request: unsupported content-type: {content_type}"),
        ));
    }
    p
}

fn parse_form(p: &mut Parsed, text: &str) {
    for (k, v) in form_pairs(text) {
        p.params.insert(k, json_or_string(v));
    }
    if p.action.is_empty()
        && let Some(a) = p.params.get("action").and_then(truthy_string)
    {
        p.action = a;
        p.params.remove("action");
    }
    if let Some(echo) = p.params.remove("echo") {
        p.echo = Some(echo);
    }
}

/// JS `String(x)` for the truthy values an action name can be.
fn truthy_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) if n.as_f64() != Some(0.0) => Some(n.to_string()),
        Value::Bool(true) => Some("true".into()),
        _ => None,
    }
}

fn json_or_string(v: String) -> Value {
    serde_json::from_str(&v).unwrap_or(Value::String(v))
}

/// `URLSearchParams` decoding: `&`-separated, `+` is a space, `%XX` bytes.
fn form_pairs(s: &str) -> Vec<(String, String)> {
    s.split('&')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let (k, v) = part.split_once('=').unwrap_or((part, ""));
            (form_decode(k), form_decode(v))
        })
        .collect()
}

fn form_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                match (
                    bytes.get(i + 1).and_then(|b| hex(*b)),
                    bytes.get(i + 2).and_then(|b| hex(*b)),
                ) {
                    (Some(h), Some(l)) => {
                        out.push((h * 16 + l) as u8);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn authorized(token: Option<&str>, req_headers: &hyper::HeaderMap, query: &str) -> bool {
    let Some(token) = token else {
        return true;
    };
    let bearer = format!("Bearer {token}");
    if req_headers.get(AUTHORIZATION).map(HeaderValue::as_bytes) == Some(bearer.as_bytes()) {
        return true;
    }
    form_pairs(query)
        .into_iter()
        .find(|(k, _)| k == "access_token")
        .is_some_and(|(_, v)| v == token)
}

fn json_response(status: StatusCode, value: &Value) -> Response<FakeBody> {
    let body = Bytes::from(serde_json::to_vec(value).expect("json"));
    Response::builder()
        .status(status)
        .header(CONTENT_TYPE, JSON_TYPE)
        .body(FakeBody::Full(Some(body)))
        .expect("response")
}

async fn handle(
    shared: Arc<Shared>,
    req: Request<Incoming>,
) -> Result<Response<FakeBody>, Refused> {
    let (head, body) = req.into_parts();
    let read = read_body(body).await;
    let path = head.uri.path().to_string();
    let query = head.uri.query().unwrap_or("").to_string();
    let content_type = head
        .headers
        .get(CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default();
    let route = route(&shared.base_path, &path);
    let parsed = match (&route, read.too_large || read.broken) {
        (Some(action), false) => Some(parse(
            &head.method,
            action.clone(),
            &query,
            &content_type,
            &read.body,
        )),
        _ => None,
    };
    let action = parsed
        .as_ref()
        .map(|p| p.action.clone())
        .filter(|a| !a.is_empty());

    // Record before anything can fail, then pick the fault.
    let fault = {
        let mut st = shared.lock();
        if shared.record {
            st.requests.push(Recorded {
                method: head.method.to_string(),
                path: path.clone(),
                query: head.uri.query().map(str::to_string),
                headers: head
                    .headers
                    .iter()
                    .map(|(k, v)| {
                        (
                            k.as_str().to_string(),
                            String::from_utf8_lossy(v.as_bytes()).into_owned(),
                        )
                    })
                    .collect(),
                body: read.body.clone(),
                action: action.clone(),
                params: parsed.as_ref().map(|p| Value::Object(p.params.clone())),
            });
        }
        st.take_fault(action.as_deref())
    };

    // SnowLuma resets the connection without answering a body over its 2 MiB cap.
    if read.broken || read.too_large {
        return Err(Refused);
    }
    let Some(parsed) = parsed else {
        return Ok(json_response(
            StatusCode::NOT_FOUND,
            &failed(1404, "not found"),
        ));
    };
    let stream = action.as_deref().is_some_and(actions::is_stream);
    match &fault {
        Some(Fault::Refuse) => return Err(Refused),
        Some(Fault::Unauthorized) => {
            return Ok(json_response(
                StatusCode::UNAUTHORIZED,
                &failed(1401, "unauthorized"),
            ));
        }
        Some(Fault::ServerError) => {
            return Ok(json_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                &failed(1200, "injected server error"),
            ));
        }
        Some(Fault::BadJson) => {
            let mut res = Response::builder().status(StatusCode::OK);
            let body: &'static [u8] = if stream {
                b"this is not json\r\n\r\n"
            } else {
                res = res.header(CONTENT_TYPE, JSON_TYPE);
                b"<html><body>502 Bad Gateway</body></html>"
            };
            return Ok(res
                .body(FakeBody::Full(Some(Bytes::from_static(body))))
                .expect("response"));
        }
        Some(Fault::Slow(delay)) => tokio::time::sleep(*delay).await,
        _ => {}
    }

    if !authorized(shared.token.as_deref(), &head.headers, &query) {
        return Ok(respond_json(
            StatusCode::UNAUTHORIZED,
            failed(1401, "unauthorized"),
            &fault,
        ));
    }
    if parsed.health {
        return Ok(respond_json(
            StatusCode::OK,
            json!({"status": "ok", "retcode": 0, "data": {"online": true}}),
            &fault,
        ));
    }
    if let Some((status, wording)) = parsed.error {
        return Ok(respond_json(status, failed(1400, wording), &fault));
    }
    if parsed.action.is_empty() {
        return Ok(respond_json(
            StatusCode::BAD_REQUEST,
            failed(1400, "bad request: missing action"),
            &fault,
        ));
    }
    match actions::dispatch(&shared, &parsed.action, &parsed.params) {
        Outcome::Envelope(mut envelope) => {
            if let (Some(echo), Some(obj)) = (parsed.echo, envelope.as_object_mut()) {
                obj.insert("echo".into(), echo);
            }
            Ok(respond_json(StatusCode::OK, envelope, &fault))
        }
        Outcome::Stream(job) => Ok(respond_stream(job, fault, parsed.echo)),
    }
}

/// Status 200, chunked, no Content-Type: frames written by a producer task.
fn respond_stream(job: StreamJob, fault: Option<Fault>, echo: Option<Value>) -> Response<FakeBody> {
    let (tx, rx) = mpsc::channel(1);
    tokio::spawn(streams::run(job, FrameSink::new(tx, fault, echo)));
    Response::builder()
        .status(StatusCode::OK)
        .body(FakeBody::Channel { rx, len: None })
        .expect("response")
}

/// A JSON answer, with a body-shaping fault applied.
fn respond_json(status: StatusCode, envelope: Value, fault: &Option<Fault>) -> Response<FakeBody> {
    let envelope = match fault {
        Some(Fault::ErrorFrame) if status == StatusCode::OK => {
            let mut f = failed(100, "injected failure");
            if let Some(echo) = envelope.get("echo") {
                f["echo"] = echo.clone();
            }
            f
        }
        _ => envelope,
    };
    let body = Bytes::from(serde_json::to_vec(&envelope).expect("json"));
    let (tx, rx) = mpsc::channel::<Chunk>(1);
    let len = match fault {
        Some(Fault::StallBody) => {
            let mut body = body;
            let len = body.len() as u64;
            let half = body.split_to(body.len() / 2);
            tokio::spawn(async move {
                let _ = tx.send(Ok(half)).await;
                tx.closed().await; // hang until the client goes away
            });
            len
        }
        Some(Fault::DisconnectMidStream { .. }) => {
            let mut body = body;
            let len = body.len() as u64;
            let half = body.split_to(body.len() / 2);
            tokio::spawn(async move {
                if tx.send(Ok(half)).await.is_ok() {
                    abort_body(&tx).await;
                }
            });
            len
        }
        Some(Fault::OversizedFrame) => {
            // A valid envelope whose data is a 17 MiB string.
            let head: &'static [u8] = br#"{"status":"ok","retcode":0,"data":""#;
            let tail: &'static [u8] = br#""}"#;
            let piece = Bytes::from(vec![b'x'; 64 * 1024]);
            let pieces = 17 * 16;
            let len = (head.len() + tail.len() + pieces * piece.len()) as u64;
            tokio::spawn(async move {
                let parts = std::iter::once(Bytes::from_static(head))
                    .chain(std::iter::repeat_n(piece, pieces))
                    .chain(std::iter::once(Bytes::from_static(tail)));
                for part in parts {
                    if tx.send(Ok(part)).await.is_err() {
                        break;
                    }
                }
            });
            len
        }
        _ => return json_body(status, FakeBody::Full(Some(body))),
    };
    json_body(status, FakeBody::Channel { rx, len: Some(len) })
}

fn json_body(status: StatusCode, body: FakeBody) -> Response<FakeBody> {
    Response::builder()
        .status(status)
        .header(CONTENT_TYPE, JSON_TYPE)
        .body(body)
        .expect("response")
}
