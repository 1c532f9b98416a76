//! The stdio transport: newline-delimited JSON-RPC, with the robustness rmcp's own transport
//! lacks (see the rmcp notes in the shared reference):
//!
//! - an unparsable line is answered with `-32700 Parse error` and `id: null`;
//! - well-formed JSON that is not a JSON-RPC message gets `-32600` with its `id` (or null);
//! - notifications and responses that arrive before a lifecycle has started (before initialize,
//!   or before the first modern request other than `ping` and `server/discover`) are dropped
//!   instead of ending the process (rmcp's bootstrap loop treats them as fatal);
//! - lines longer than [`MAX_LINE_BYTES`] are discarded with a `-32600` reply.

use std::future::Future;
use std::io;
use std::sync::Arc;

use bytes::BytesMut;
use futures::StreamExt as _;
use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::Mutex;
use tokio_util::codec::{Decoder, FramedRead, LinesCodec, LinesCodecError};

/// Why a stdio session could not start, in words that never repeat what the client sent:
/// rmcp's own text for an unexpected first message prints the whole message in debug form,
/// parameters included (a notification's free text, the answer inside a response), and that
/// text would end up in the log.
pub fn start_failure(error: &rmcp::service::ServerInitializeError) -> String {
    use rmcp::model::JsonRpcMessage;
    use rmcp::service::ServerInitializeError as Failure;
    match error {
        Failure::ExpectedInitializeRequest(message) => {
            let what = match message {
                Some(JsonRpcMessage::Notification(_)) => "a notification",
                Some(JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_)) => "a response",
                Some(JsonRpcMessage::Request(_)) => "a request",
                None => "nothing",
            };
            format!(
                "the client sent {what} before the session started; an MCP client sends \
                 initialize, or a request carrying its protocol version, first"
            )
        }
        Failure::UnexpectedInitializeResponse(_) => {
            "the client sent an unexpected result during initialize".into()
        }
        Failure::InitializeFailed(error) => format!("initialize failed: {}", error.message),
        // Connection and transport failures carry no client content.
        other => other.to_string(),
    }
}

/// Whether rmcp's bootstrap loop (`serve_server_with_ct_inner`) leaves for a lifecycle on this
/// message: an `initialize` request, or any other request except `ping` and `server/discover`
/// whose `_meta` is complete and names a version rmcp serves. The loop answers everything else
/// itself and reads on, and a notification or response it reads there ends the process, so
/// the transport holds those back until this has been true once. A modern client may well
/// send `notifications/cancelled` right after `server/discover`.
fn starts_lifecycle(message: &RxJsonRpcMessage<RoleServer>) -> bool {
    use rmcp::model::{ClientRequest, GetMeta, ProtocolVersion};
    let RxJsonRpcMessage::<RoleServer>::Request(request) = message else {
        return false;
    };
    match &request.request {
        ClientRequest::InitializeRequest(_) => true,
        ClientRequest::PingRequest(_) | ClientRequest::DiscoverRequest(_) => false,
        other => {
            let meta = other.get_meta();
            meta.missing_required_keys(&ProtocolVersion::V_2026_07_28)
                .is_empty()
                && meta
                    .protocol_version()
                    .is_some_and(|version| ProtocolVersion::KNOWN_VERSIONS.contains(&version))
        }
    }
}

/// The longest line accepted, as rmcp's default.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// One line read from stdin, its `\n` and any `\r` before it removed.
enum Line {
    Text(String),
    /// Longer than the limit; the rest of it up to its newline is dropped.
    Oversized,
    /// Not UTF-8, so not JSON either.
    NotUtf8,
}

/// tokio-util's [`LinesCodec`] with its two per-line refusals turned into lines, so one bad
/// line is answered and the reading goes on (`FramedRead` would pause on a decoder error).
struct LineDecoder(LinesCodec);

impl Decoder for LineDecoder {
    type Item = Line;
    type Error = io::Error;

    fn decode(&mut self, buffer: &mut BytesMut) -> io::Result<Option<Line>> {
        Ok(match self.0.decode(buffer) {
            Ok(line) => line.map(Line::Text),
            Err(LinesCodecError::MaxLineLengthExceeded) => Some(Line::Oversized),
            // The only I/O error the codec makes itself: a line that is not UTF-8.
            Err(LinesCodecError::Io(_)) => Some(Line::NotUtf8),
        })
    }

    /// A last line without its newline is dropped, as a half-written message.
    fn decode_eof(&mut self, buffer: &mut BytesMut) -> io::Result<Option<Line>> {
        self.decode(buffer)
    }
}

pub struct StdioTransport<R, W> {
    lines: FramedRead<R, LineDecoder>,
    /// [`MAX_LINE_BYTES`], except in the fuzz target, which needs lines it can reach.
    max_line: usize,
    writer: Arc<Mutex<W>>,
    /// Whether rmcp has left its bootstrap loop (see [`starts_lifecycle`]).
    started: bool,
}

impl<R, W> StdioTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    pub fn new(reader: R, writer: W) -> Self {
        Self::with_line_limit(reader, writer, MAX_LINE_BYTES)
    }

    /// A transport whose longest line is `max_line` bytes (newline included) instead of
    /// [`MAX_LINE_BYTES`]: the fuzz target's way to reach the oversized-line path with small
    /// inputs. The server itself always uses [`StdioTransport::new`].
    #[doc(hidden)]
    pub fn with_line_limit(reader: R, writer: W, max_line: usize) -> Self {
        // The codec's limit leaves the newline out.
        let codec = LinesCodec::new_with_max_length(max_line.saturating_sub(1));
        StdioTransport {
            lines: FramedRead::with_capacity(reader, LineDecoder(codec), 64 * 1024),
            max_line,
            writer: Arc::new(Mutex::new(writer)),
            started: false,
        }
    }

    fn write_line(&self, bytes: Vec<u8>) -> impl Future<Output = io::Result<()>> + Send + 'static {
        let writer = self.writer.clone();
        async move {
            let mut writer = writer.lock().await;
            writer.write_all(&bytes).await?;
            writer.flush().await
        }
    }

    /// Answers a line that is not a usable message with a protocol error, through the same
    /// writer as every other message. The read loop waits for the write, so a flood of bad
    /// lines is paced by the client reading stdout instead of piling up tasks.
    fn reply_error(
        &self,
        id: Value,
        code: i64,
        message: &str,
    ) -> impl Future<Output = ()> + Send + 'static {
        let body =
            json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } });
        let mut bytes = serde_json::to_vec(&body).unwrap_or_default();
        bytes.push(b'\n');
        let write = self.write_line(bytes);
        async move {
            if let Err(error) = write.await {
                tracing::warn!(%error, "could not answer a malformed message");
            }
        }
    }

    /// Passes a decoded message on, or holds it back (`None`) while rmcp's bootstrap loop would
    /// end the process on it (see [`starts_lifecycle`]).
    fn admit(
        &mut self,
        message: RxJsonRpcMessage<RoleServer>,
    ) -> Option<RxJsonRpcMessage<RoleServer>> {
        if !self.started {
            if !matches!(message, RxJsonRpcMessage::<RoleServer>::Request(_)) {
                tracing::debug!(
                    "dropped a notification or response sent before the session started"
                );
                return None;
            }
            self.started = starts_lifecycle(&message);
        }
        Some(message)
    }
}

impl<R, W> Transport<RoleServer> for StdioTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        let writer = self.writer.clone();
        // Tool results are written with their text copied as structuredContent.
        let bytes = super::encode::message_line(&item);
        async move {
            let bytes = bytes.map_err(io::Error::other)?;
            let mut writer = writer.lock().await;
            writer.write_all(&bytes).await?;
            writer.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let line = match self.lines.next().await? {
                Err(error) => {
                    tracing::error!(%error, "reading stdin failed");
                    return None;
                }
                Ok(Line::Oversized) => {
                    tracing::warn!(limit = self.max_line, "discarded an oversized message");
                    self.reply_error(
                        Value::Null,
                        -32600,
                        "Invalid Request: message exceeds 16 MiB",
                    )
                    .await;
                    continue;
                }
                Ok(Line::NotUtf8) => {
                    self.reply_error(Value::Null, -32700, "Parse error").await;
                    continue;
                }
                Ok(Line::Text(line)) => line,
            };
            let text = line.strip_prefix('\u{FEFF}').unwrap_or(&line).as_bytes();
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            // Tool calls, the bulk of the traffic, in one pass (see `decode`).
            if let Some(call) = super::decode::tool_call(text) {
                match self.admit(call) {
                    Some(call) => return Some(call),
                    None => continue,
                }
            }
            // One parse on the happy path; a line that is not a message is looked at again
            // only to choose the right error.
            let error = match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(text) {
                Ok(message) => match self.admit(message) {
                    Some(message) => return Some(message),
                    None => continue,
                },
                Err(error) => error,
            };
            let Ok(value) = serde_json::from_slice::<Value>(text) else {
                self.reply_error(Value::Null, -32700, "Parse error").await;
                continue;
            };
            let is_notification = value.get("method").is_some() && value.get("id").is_none();
            if is_notification {
                tracing::debug!(%error, "ignored a malformed notification");
                continue;
            }
            let id = value
                .get("id")
                .filter(|id| id.is_string() || id.is_number())
                .cloned();
            self.reply_error(id.unwrap_or(Value::Null), -32600, "Invalid Request")
                .await;
        }
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        self.writer.lock().await.flush().await
    }
}
