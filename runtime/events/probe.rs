//! A one-off WebSocket handshake with SnowLuma's event adapter, for `snowluma-mcp check`:
//! it proves the URL, the path and the token without subscribing to anything.

use std::time::Duration;

use futures::SinkExt;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::http::header::AUTHORIZATION;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use super::EventsUrl;

/// Opens and closes one connection; the error says what failed without the token.
pub async fn probe(url: &EventsUrl, token: Option<&str>, limit: Duration) -> Result<(), String> {
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
    let connect = tokio_tungstenite::connect_async(request);
    let (mut socket, _) = match tokio::time::timeout(limit, connect).await {
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
    let _ = socket.send(Message::Close(None)).await;
    Ok(())
}
