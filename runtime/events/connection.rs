//! The one shared WebSocket connection to SnowLuma's event adapter.
//!
//! It is opened by the first subscription and read by one task. Frames are checked (JSON
//! object, the subscribed `self_id`, a `post_type`), meta events update the status, and other
//! events go to every matching resource. Anything wrong stops the connection for good: the
//! status says why until every resource is released. There is no reconnect, so no reader is
//! ever told that missing events were recovered.

use std::sync::Weak;
use std::time::Duration;

use futures::StreamExt;
use serde::Serialize;
use serde_json::Value;
use tokio_tungstenite::Connector;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::http::header::AUTHORIZATION;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_util::sync::CancellationToken;

use super::filter::EventType;
use super::{EventsUrl, HubShared};
use crate::config::TlsFailure;

/// Largest incoming frame or message; a bigger one stops the connection.
pub const MAX_FRAME_BYTES: usize = 256 * 1024;
/// Longest time for TCP, the handshake and SnowLuma's first frame.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the shared connection stands, as every read reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ConnectionStatus {
    /// Opening the socket or waiting for SnowLuma's first frame.
    Connecting,
    /// Open; `last_heartbeat` is the `time` of SnowLuma's latest heartbeat or lifecycle event.
    Connected { last_heartbeat: Option<i64> },
    /// Closed for good. Release every resource before subscribing again.
    Stopped { reason: StopReason, detail: String },
}

/// Why the connection stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Close code 1008: the access token was rejected.
    TokenRejected,
    /// An event carried another `self_id`.
    AccountMismatch,
    /// A frame was not a OneBot event.
    MalformedEvent,
    /// A frame exceeded 256 KiB.
    FrameTooLarge,
    /// The socket could not be opened.
    ConnectFailed,
    /// SnowLuma closed the socket or the network dropped it.
    Disconnected,
}

impl ConnectionStatus {
    pub fn is_stopped(&self) -> bool {
        matches!(self, ConnectionStatus::Stopped { .. })
    }
}

/// What the reader task needs; the hub keeps the matching stop token and generation.
pub(super) struct ConnectionTask {
    pub hub: Weak<HubShared>,
    pub generation: u64,
    pub url: EventsUrl,
    pub token: Option<String>,
    pub tls: Option<std::sync::Arc<rustls::ClientConfig>>,
    pub self_id: i64,
    pub stop: CancellationToken,
    /// Held until the task ends; see `EventHub::closed`.
    pub _running: Option<tokio::sync::OwnedRwLockReadGuard<()>>,
}

impl ConnectionTask {
    pub async fn run(self) {
        let outcome = tokio::select! {
            _ = self.stop.cancelled() => return,
            outcome = tokio::time::timeout(CONNECT_TIMEOUT, self.open()) => outcome,
        };
        let mut socket = match outcome {
            Ok(Ok(socket)) => socket,
            Ok(Err(detail)) => return self.stopped(StopReason::ConnectFailed, detail),
            Err(_) => {
                return self.stopped(
                    StopReason::ConnectFailed,
                    format!(
                        "no WebSocket handshake within {}s",
                        CONNECT_TIMEOUT.as_secs()
                    ),
                );
            }
        };
        loop {
            let next = tokio::select! {
                _ = self.stop.cancelled() => {
                    // Released: say goodbye, but do not let a stuck peer hold the task.
                    let _ = tokio::time::timeout(Duration::from_secs(1), socket.close(None)).await;
                    return;
                }
                next = socket.next() => next,
            };
            let verdict = match next {
                Some(Ok(Message::Text(text))) => self.frame(text.as_str()),
                Some(Ok(Message::Binary(bytes))) => match std::str::from_utf8(&bytes) {
                    Ok(text) => self.frame(text),
                    Err(_) => Err((
                        StopReason::MalformedEvent,
                        "a binary frame was not UTF-8 JSON".into(),
                    )),
                },
                Some(Ok(Message::Close(frame))) => {
                    Err(closed(frame.map(|f| (f.code, f.reason.to_string()))))
                }
                Some(Ok(_)) => Ok(()), // ping, pong: tungstenite answers pings itself
                Some(Err(WsError::Capacity(e))) => Err((
                    StopReason::FrameTooLarge,
                    format!(
                        "SnowLuma sent a frame over the {} KiB limit ({e})",
                        MAX_FRAME_BYTES / 1024
                    ),
                )),
                Some(Err(e)) => Err((
                    StopReason::Disconnected,
                    format!("the event socket failed: {e}"),
                )),
                None => Err((
                    StopReason::Disconnected,
                    "the event socket closed without a close frame".into(),
                )),
            };
            if let Err((reason, detail)) = verdict {
                let _ = tokio::time::timeout(Duration::from_secs(1), socket.close(None)).await;
                return self.stopped(reason, detail);
            }
        }
    }

    async fn open(
        &self,
    ) -> Result<
        tokio_tungstenite::WebSocketStream<
            tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
        >,
        String,
    > {
        let mut request = self
            .url
            .as_str()
            .into_client_request()
            .map_err(|e| format!("bad request: {e}"))?;
        if let Some(token) = &self.token {
            let mut value = HeaderValue::from_str(&format!("Bearer {token}"))
                .map_err(|_| "the token contains characters a header cannot carry".to_string())?;
            value.set_sensitive(true);
            request.headers_mut().insert(AUTHORIZATION, value);
        }
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_FRAME_BYTES))
            .max_frame_size(Some(MAX_FRAME_BYTES));
        // Plain for ws:, rustls for wss:. Without the shared configuration (a hub built
        // without one) the system roots alone are trusted.
        let connector = if self.url.is_tls() {
            let tls = match &self.tls {
                Some(tls) => tls.clone(),
                None => crate::config::Tls::load(None, true)
                    .map_err(|e| e.to_string())?
                    .client_config(),
            };
            Connector::Rustls(tls)
        } else {
            Connector::Plain
        };
        let (socket, _response) = tokio_tungstenite::connect_async_tls_with_config(
            request,
            Some(config),
            true,
            Some(connector),
        )
        .await
        .map_err(|e| match TlsFailure::find(&e) {
            Some(failure) => format!(
                "{}; {}",
                failure.describe("SnowLuma's event socket"),
                failure.next_step()
            ),
            None => e.to_string(),
        })?;
        Ok(socket)
    }

    /// Checks one frame and hands it on; an error stops the connection.
    fn frame(&self, text: &str) -> Result<(), (StopReason, String)> {
        let verdict = check_frame(text, self.self_id)?;
        let Some(hub) = self.hub.upgrade() else {
            return Ok(());
        };
        match verdict {
            FrameVerdict::Heartbeat { time } => hub.meta_event(self.generation, time),
            FrameVerdict::Event { kind, event } => {
                hub.deliver(self.generation, kind, &event, text);
            }
            FrameVerdict::Ignored => {}
        }
        Ok(())
    }

    fn stopped(&self, reason: StopReason, detail: String) {
        if let Some(hub) = self.hub.upgrade() {
            hub.connection_stopped(
                self.generation,
                ConnectionStatus::Stopped { reason, detail },
            );
        }
    }
}

/// What one well-formed frame from SnowLuma is.
#[derive(Debug, PartialEq)]
pub enum FrameVerdict {
    /// A `meta_event` (lifecycle or heartbeat) with its `time`: the connection is alive.
    Heartbeat { time: Option<i64> },
    /// A message, notice or request event for the resources' filters.
    Event { kind: EventType, event: Value },
    /// An event of a `post_type` no resource can ask for.
    Ignored,
}

/// Checks one text frame against the subscribed account: a JSON value with an integer
/// `self_id` equal to `self_id` and a string `post_type`. An error stops the connection with
/// its reason. Pure, so the fuzz target can drive it without a socket.
pub fn check_frame(text: &str, self_id: i64) -> Result<FrameVerdict, (StopReason, String)> {
    let malformed = |what: &str| {
        (
            StopReason::MalformedEvent,
            format!("SnowLuma sent a frame that is not a OneBot event: {what}"),
        )
    };
    let event: Value = serde_json::from_str(text).map_err(|_| malformed("not JSON"))?;
    let frame_self_id = event
        .get("self_id")
        .and_then(Value::as_i64)
        .ok_or_else(|| malformed("no integer self_id"))?;
    let post_type = event
        .get("post_type")
        .and_then(Value::as_str)
        .ok_or_else(|| malformed("no post_type"))?;
    if frame_self_id != self_id {
        return Err((
            StopReason::AccountMismatch,
            format!(
                "an event carried self_id {frame_self_id}, but the subscriptions are for \
                 {self_id}; SnowLuma is logged in to another account"
            ),
        ));
    }
    if post_type == "meta_event" {
        let time = event.get("time").and_then(Value::as_i64);
        return Ok(FrameVerdict::Heartbeat { time });
    }
    Ok(match EventType::of_post_type(post_type) {
        Some(kind) => FrameVerdict::Event { kind, event },
        None => FrameVerdict::Ignored,
    })
}

fn closed(frame: Option<(CloseCode, String)>) -> (StopReason, String) {
    match frame {
        Some((CloseCode::Policy, _)) => (
            StopReason::TokenRejected,
            "SnowLuma closed the event socket with 1008 (invalid access token); set \
             SNOWLUMA_MCP_TOKEN to the WebSocket adapter's token"
                .into(),
        ),
        Some((code, reason)) => (
            StopReason::Disconnected,
            format!(
                "SnowLuma closed the event socket (code {}, reason {reason:?})",
                u16::from(code)
            ),
        ),
        None => (
            StopReason::Disconnected,
            "SnowLuma closed the event socket".into(),
        ),
    }
}
