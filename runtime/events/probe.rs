//! A one-off connection to SnowLuma's event adapter, for `snowluma-mcp check`: it proves the
//! URL, the path and the token without subscribing to anything, and reports what the event
//! connection would see (SnowLuma checks the token after the handshake, so the first frames
//! are read too).

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::Value;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::http::header::AUTHORIZATION;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use super::EventsUrl;

/// What an accepted probe learned from SnowLuma's first frames.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProbeReport {
    /// The account the events carry.
    pub self_id: Option<i64>,
    /// The heartbeat interval SnowLuma announced, in milliseconds.
    pub heartbeat_interval_ms: Option<u64>,
}

/// Opens one connection, reads until the first heartbeat (or `limit`), and closes it; the
/// error says what failed without the token.
pub async fn probe(
    url: &EventsUrl,
    token: Option<&str>,
    limit: Duration,
) -> Result<ProbeReport, String> {
    let mut request = url
        .as_str()
        .into_client_request()
        .map_err(|e| format!("not a usable WebSocket URL ({e})"))?;
    if let Some(token) = token {
        let mut value = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| "the token contains characters a header cannot carry".to_string())?;
        value.set_sensitive(true);
        request.headers_mut().insert(AUTHORIZATION, value);
    }
    let deadline = tokio::time::Instant::now() + limit;
    let connect = tokio_tungstenite::connect_async(request);
    let (mut socket, _) = match tokio::time::timeout_at(deadline, connect).await {
        Err(_) => return Err(format!("no handshake within {} s", limit.as_secs())),
        Ok(Err(WsError::Http(response))) => {
            let status = response.status();
            return Err(match status.as_u16() {
                401 | 403 => format!(
                    "SnowLuma refused the handshake with HTTP {status}: the access token is missing or wrong"
                ),
                404 => format!("HTTP {status}: no WebSocket adapter at this path"),
                _ => format!("the handshake was answered with HTTP {status}"),
            });
        }
        Ok(Err(error)) => return Err(format!("cannot connect: {error}")),
        Ok(Ok(connected)) => connected,
    };
    let mut report = ProbeReport::default();
    let mut frames = 0;
    let outcome = loop {
        let next = match tokio::time::timeout_at(deadline, socket.next()).await {
            Ok(next) => next,
            // Accepted, but quiet: the handshake and the token are fine as far as is known.
            Err(_) if frames > 0 => break Ok(()),
            Err(_) => {
                break Err(format!(
                    "the handshake succeeded but SnowLuma sent nothing within {} s",
                    limit.as_secs()
                ));
            }
        };
        match next {
            Some(Ok(Message::Text(text))) => {
                frames += 1;
                let frame: Value = serde_json::from_str(text.as_str()).unwrap_or(Value::Null);
                report.self_id = report
                    .self_id
                    .or_else(|| frame.get("self_id").and_then(Value::as_i64));
                if frame.get("meta_event_type").and_then(Value::as_str) == Some("heartbeat") {
                    report.heartbeat_interval_ms = frame.get("interval").and_then(Value::as_u64);
                    break Ok(());
                }
            }
            Some(Ok(Message::Close(Some(close)))) if close.code == CloseCode::Policy => {
                break Err(
                    "SnowLuma closed the socket with 1008 (invalid access token): set \
                           SNOWLUMA_MCP_TOKEN to the WebSocket adapter's token"
                        .into(),
                );
            }
            Some(Ok(Message::Close(close))) => {
                break Err(format!(
                    "SnowLuma closed the socket at once ({})",
                    close.map_or("no close frame".into(), |c| format!(
                        "code {}",
                        u16::from(c.code)
                    ))
                ));
            }
            Some(Ok(_)) => {}
            Some(Err(error)) => break Err(format!("the socket failed: {error}")),
            None => break Err("SnowLuma closed the socket at once".into()),
        }
    };
    let _ = socket.send(Message::Close(None)).await;
    outcome.map(|()| report)
}
