//! The one shared WebSocket connection to SnowLuma's event adapter.
//!
//! It is opened by the first subscription and read by one task. Frames are checked (JSON
//! object, the subscribed `self_id`, a `post_type`), meta events update the status, and other
//! events go to every matching resource.
//!
//! SnowLuma restarts (re-logins, updates, crashes), so a connection that closes, errors or
//! misses two heartbeat intervals is reopened with exponential backoff and jitter for as long
//! as any resource exists. Once it is back, every resource records the outage as one gap entry
//! (after any messages recovery fetched), so no reader meets a silent hole. Configuration
//! errors stop it for good instead: a refused token (close 1008, HTTP 401/403), a URL that is
//! not a WebSocket adapter, another account's events, a malformed or oversized frame. So does
//! a first connection that cannot be opened: the subscription reports it.

use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use tokio::time::Instant;
use tokio_tungstenite::Connector;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::http::header::AUTHORIZATION;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_util::sync::CancellationToken;

use super::EventsUrl;
use super::filter::EventType;
use super::recovery::{MessageHistory, recover};
use super::status::{ConnectionStatus, Feed, Outage, StopReason};
use crate::config::{EventsReconnect, TlsFailure};

/// Largest incoming frame or message; a bigger one stops the connection.
pub const MAX_FRAME_BYTES: usize = 256 * 1024;
/// Longest time for TCP, the handshake and SnowLuma's first frame.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// How one attempt to open the socket ended.
enum Attempt {
    /// Open, with SnowLuma's first message (not yet handled).
    Open(Box<Socket>, Message),
    /// A failure worth another attempt (refused, reset, timed out, a 5xx from a proxy).
    Retry(String),
    /// A configuration error: reconnecting cannot help.
    Stop(StopReason, String),
    Released,
}

/// How an open connection ended.
enum Ended {
    /// Lost: worth reconnecting. `since` is when it was last known alive (unix seconds) when
    /// that is earlier than now: a silent connection may have dropped events long before the
    /// watchdog noticed, and the gap must start there.
    Lost(String, Option<i64>),
    Stop(StopReason, String),
    Released,
}

/// What the reader task needs; the hub keeps the matching stop token and generation.
pub(super) struct ConnectionTask {
    pub hub: Weak<dyn Feed>,
    pub generation: u64,
    pub url: EventsUrl,
    pub token: Option<String>,
    pub tls: Option<std::sync::Arc<rustls::ClientConfig>>,
    pub self_id: i64,
    pub reconnect: EventsReconnect,
    pub history: Option<Arc<dyn MessageHistory>>,
    pub stop: CancellationToken,
    /// Held until the task ends; see `EventHub::closed`.
    pub _running: Option<tokio::sync::OwnedRwLockReadGuard<()>>,
}

impl ConnectionTask {
    pub async fn run(self) {
        let (mut socket, mut first) = match self.attempt().await {
            Attempt::Open(socket, first) => (socket, first),
            // Nothing was ever received: the subscription that opened it reports the failure.
            Attempt::Retry(detail) => return self.stopped(StopReason::ConnectFailed, detail),
            Attempt::Stop(reason, detail) => return self.stopped(reason, detail),
            Attempt::Released => return,
        };
        if let Some(hub) = self.hub.upgrade() {
            hub.opened(self.generation, None);
        }
        loop {
            let ended = self.serve(&mut socket, first).await;
            // Say goodbye, but do not let a stuck peer hold the task.
            let _ = tokio::time::timeout(Duration::from_secs(1), socket.close(None)).await;
            let (lost, since) = match ended {
                Ended::Released => return,
                Ended::Stop(reason, detail) => return self.stopped(reason, detail),
                Ended::Lost(detail, since) => (detail, since.unwrap_or_else(unix_seconds)),
            };
            tracing::warn!(
                detail = lost.as_str(),
                "the event connection to SnowLuma was lost; reconnecting"
            );
            let mut latest = lost.clone();
            let mut attempt = 0;
            (socket, first) = loop {
                attempt += 1;
                let delay = backoff(&self.reconnect, attempt, jitter());
                let Some(hub) = self.hub.upgrade() else {
                    return;
                };
                hub.reconnecting(
                    self.generation,
                    ConnectionStatus::Reconnecting {
                        attempt,
                        next_attempt_at_ms: unix_millis() + delay.as_millis() as i64,
                        since,
                        detail: latest.clone(),
                    },
                );
                drop(hub);
                tokio::select! {
                    _ = self.stop.cancelled() => return,
                    _ = tokio::time::sleep(delay) => {}
                }
                match self.attempt().await {
                    Attempt::Open(socket, first) => break (socket, first),
                    Attempt::Retry(detail) => latest = detail,
                    Attempt::Stop(reason, detail) => return self.stopped(reason, detail),
                    Attempt::Released => return,
                }
            };
            // Recovery and the gap entry come before anything the new socket sends.
            let recovered = match (&self.history, self.reconnect.recover) {
                (Some(history), Some(max)) => {
                    let groups = match self.hub.upgrade() {
                        Some(hub) => hub.recovery_groups(),
                        None => return,
                    };
                    tokio::select! {
                        _ = self.stop.cancelled() => return,
                        found = recover(history.as_ref(), groups, max) => Some(found),
                    }
                }
                _ => None,
            };
            let Some(hub) = self.hub.upgrade() else {
                return;
            };
            tracing::info!(
                attempts = attempt,
                "the event connection to SnowLuma is back"
            );
            hub.opened(
                self.generation,
                Some(Outage {
                    since,
                    until: unix_seconds(),
                    reason: lost,
                    recovered,
                }),
            );
        }
    }

    /// One try at opening the socket and receiving SnowLuma's first message, bounded by
    /// [`CONNECT_TIMEOUT`].
    async fn attempt(&self) -> Attempt {
        let opening = async {
            let mut socket = match self.open().await {
                Ok(socket) => socket,
                Err(attempt) => return attempt,
            };
            // SnowLuma checks the token after the 101: a refusal is the first thing it sends.
            loop {
                return match socket.next().await {
                    Some(Ok(Message::Close(frame))) => {
                        match closed(frame.map(|f| (f.code, f.reason.to_string()))) {
                            Ended::Stop(reason, detail) => Attempt::Stop(reason, detail),
                            Ended::Lost(detail, _) => Attempt::Retry(detail),
                            Ended::Released => Attempt::Released,
                        }
                    }
                    Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => continue,
                    Some(Ok(message)) => Attempt::Open(Box::new(socket), message),
                    Some(Err(e)) => Attempt::Retry(format!("the event socket failed: {e}")),
                    None => Attempt::Retry(
                        "the event socket closed before SnowLuma's first frame".into(),
                    ),
                };
            }
        };
        tokio::select! {
            _ = self.stop.cancelled() => Attempt::Released,
            outcome = tokio::time::timeout(CONNECT_TIMEOUT, opening) => outcome.unwrap_or_else(|_| {
                Attempt::Retry(format!(
                    "no WebSocket handshake within {}s",
                    CONNECT_TIMEOUT.as_secs()
                ))
            }),
        }
    }

    /// Reads an open socket until it ends; `first` is the message [`Self::attempt`] received.
    async fn serve(&self, socket: &mut Socket, first: Message) -> Ended {
        // Set by each heartbeat from its `interval`: two intervals without one is a dead
        // connection (SnowLuma never pings, so TCP alone may not notice).
        let mut deadline: Option<(Instant, u64)> = None;
        let mut last_frame: i64;
        let mut next = Some(Ok(first));
        loop {
            let verdict = match next.take() {
                Some(Ok(Message::Text(text))) => self.frame(text.as_str()),
                Some(Ok(Message::Binary(bytes))) => match std::str::from_utf8(&bytes) {
                    Ok(text) => self.frame(text),
                    Err(_) => Err(Ended::Stop(
                        StopReason::MalformedEvent,
                        "a binary frame was not UTF-8 JSON".into(),
                    )),
                },
                Some(Ok(Message::Close(frame))) => {
                    Err(closed(frame.map(|f| (f.code, f.reason.to_string()))))
                }
                Some(Ok(_)) => Ok(None), // ping, pong: tungstenite answers pings itself
                Some(Err(WsError::Capacity(e))) => Err(Ended::Stop(
                    StopReason::FrameTooLarge,
                    format!(
                        "SnowLuma sent a frame over the {} KiB limit ({e})",
                        MAX_FRAME_BYTES / 1024
                    ),
                )),
                Some(Err(e)) => Err(Ended::Lost(format!("the event socket failed: {e}"), None)),
                None => Err(Ended::Lost(
                    "the event socket closed without a close frame".into(),
                    None,
                )),
            };
            match verdict {
                Err(ended) => return ended,
                Ok(Some(interval_ms)) => {
                    let allowed = 2 * interval_ms;
                    deadline = Some((Instant::now() + Duration::from_millis(allowed), allowed));
                }
                Ok(None) => {}
            }
            last_frame = unix_seconds();
            let silence = async {
                match deadline {
                    Some((at, _)) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            next = tokio::select! {
                _ = self.stop.cancelled() => return Ended::Released,
                _ = silence => {
                    let allowed = deadline.map_or(0, |(_, ms)| ms);
                    return Ended::Lost(
                        format!("no heartbeat from SnowLuma for two intervals ({allowed} ms)"),
                        Some(last_frame),
                    );
                }
                next = socket.next() => next,
            };
        }
    }

    async fn open(&self) -> Result<Socket, Attempt> {
        let stop = |detail: String| Attempt::Stop(StopReason::ConnectFailed, detail);
        let mut request = self
            .url
            .as_str()
            .into_client_request()
            .map_err(|e| stop(format!("bad request: {e}")))?;
        if let Some(token) = &self.token {
            let mut value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
                stop("the token contains characters a header cannot carry".to_string())
            })?;
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
                    .map_err(|e| stop(e.to_string()))?
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
        .map_err(|e| classify_open_error(&e))?;
        Ok(socket)
    }

    /// Checks one frame and hands it on; `Some(interval)` for a heartbeat announcing its
    /// interval in milliseconds; an error stops the connection.
    fn frame(&self, text: &str) -> Result<Option<u64>, Ended> {
        let verdict = check_frame(text, self.self_id)
            .map_err(|(reason, detail)| Ended::Stop(reason, detail))?;
        let Some(hub) = self.hub.upgrade() else {
            return Ok(None);
        };
        match verdict {
            FrameVerdict::Heartbeat { time, interval_ms } => {
                hub.meta_event(self.generation, time);
                return Ok(interval_ms);
            }
            FrameVerdict::Event { kind, event } => {
                hub.deliver(self.generation, kind, &event, text);
            }
            FrameVerdict::Ignored => {}
        }
        Ok(None)
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

/// Whether a failed handshake is worth another attempt. Refused or reset connections, time-outs
/// and a proxy's 5xx are what a restarting SnowLuma looks like; a 4xx, a TLS failure or a
/// server that does not speak HTTP are configuration errors.
fn classify_open_error(error: &WsError) -> Attempt {
    if let Some(failure) = TlsFailure::find(error) {
        return Attempt::Stop(
            StopReason::ConnectFailed,
            format!(
                "{}; {}",
                failure.describe("SnowLuma's event socket"),
                failure.next_step()
            ),
        );
    }
    match error {
        WsError::Http(response) => {
            let status = response.status();
            match status.as_u16() {
                401 | 403 => Attempt::Stop(
                    StopReason::TokenRejected,
                    format!(
                        "SnowLuma refused the handshake with HTTP {status}: the access token is missing or wrong"
                    ),
                ),
                500..=599 => {
                    Attempt::Retry(format!("the handshake was answered with HTTP {status}"))
                }
                _ => Attempt::Stop(
                    StopReason::ConnectFailed,
                    format!(
                        "the handshake was answered with HTTP {status}: no WebSocket adapter at \
                         this URL (SnowLuma matches the path exactly)"
                    ),
                ),
            }
        }
        WsError::Url(_) | WsError::HttpFormat(_) | WsError::Tls(_) => {
            Attempt::Stop(StopReason::ConnectFailed, error.to_string())
        }
        _ => Attempt::Retry(error.to_string()),
    }
}

/// The delay before reconnect attempt `attempt` (1, 2, ...): the first delay doubled per
/// earlier attempt, capped, then scaled by `jitter` (0.0..=1.0) into its upper half, so many
/// clients of one restarted SnowLuma do not all return at once.
pub fn backoff(settings: &EventsReconnect, attempt: u32, jitter: f64) -> Duration {
    let doubled = settings
        .backoff
        .saturating_mul(1u32 << attempt.saturating_sub(1).min(20));
    let capped = doubled.min(settings.backoff_max);
    capped.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0))
}

/// A uniform fraction from the OS random source; without one, no jitter.
fn jitter() -> f64 {
    crate::ids::random::<8>()
        .map(|bytes| (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64)
        .unwrap_or(1.0)
}

pub(super) fn unix_seconds() -> i64 {
    unix_millis() / 1000
}

fn unix_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// What one well-formed frame from SnowLuma is.
#[derive(Debug, PartialEq)]
pub enum FrameVerdict {
    /// A `meta_event` (lifecycle or heartbeat) with its `time`: the connection is alive. A
    /// heartbeat announces its `interval` (milliseconds; SnowLuma's is 30000).
    Heartbeat {
        time: Option<i64>,
        interval_ms: Option<u64>,
    },
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
        let interval_ms = (event.get("meta_event_type").and_then(Value::as_str)
            == Some("heartbeat"))
        .then(|| event.get("interval").and_then(Value::as_u64))
        .flatten()
        .filter(|ms| *ms > 0);
        return Ok(FrameVerdict::Heartbeat { time, interval_ms });
    }
    Ok(match EventType::of_post_type(post_type) {
        Some(kind) => FrameVerdict::Event { kind, event },
        None => FrameVerdict::Ignored,
    })
}

fn closed(frame: Option<(CloseCode, String)>) -> Ended {
    match frame {
        Some((CloseCode::Policy, _)) => Ended::Stop(
            StopReason::TokenRejected,
            "SnowLuma closed the event socket with 1008 (invalid access token); set \
             SNOWLUMA_MCP_TOKEN to the WebSocket adapter's token"
                .into(),
        ),
        Some((code, reason)) => Ended::Lost(
            format!(
                "SnowLuma closed the event socket (code {}, reason {reason:?})",
                u16::from(code)
            ),
            None,
        ),
        None => Ended::Lost("SnowLuma closed the event socket".into(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(first_ms: u64, max_ms: u64) -> EventsReconnect {
        EventsReconnect {
            backoff: Duration::from_millis(first_ms),
            backoff_max: Duration::from_millis(max_ms),
            recover: None,
        }
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_with_jitter_in_the_upper_half() {
        let s = settings(500, 30_000);
        let full: Vec<u128> = (1..=9).map(|n| backoff(&s, n, 1.0).as_millis()).collect();
        assert_eq!(
            full,
            [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]
        );
        assert_eq!(backoff(&s, 3, 0.0).as_millis(), 1000);
        assert_eq!(backoff(&s, 400, 0.0).as_millis(), 15_000);
        let j = jitter();
        assert!((0.0..=1.0).contains(&j), "{j}");
    }

    #[test]
    fn heartbeats_announce_their_interval_and_lifecycle_events_do_not() {
        let beat = r#"{"time":5,"self_id":1,"post_type":"meta_event","meta_event_type":"heartbeat","interval":30000}"#;
        assert_eq!(
            check_frame(beat, 1).unwrap(),
            FrameVerdict::Heartbeat {
                time: Some(5),
                interval_ms: Some(30000)
            }
        );
        let life = r#"{"time":5,"self_id":1,"post_type":"meta_event","meta_event_type":"lifecycle","interval":30000}"#;
        assert_eq!(
            check_frame(life, 1).unwrap(),
            FrameVerdict::Heartbeat {
                time: Some(5),
                interval_ms: None
            }
        );
    }
}
