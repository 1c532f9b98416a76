//! Incremental parsing of SnowLuma's stream body: JSON frames, each followed by `\r\n\r\n`.
//! Bytes are appended as they arrive and whole frames are handed out one at a time; a frame
//! that grows past [`MAX_FRAME_BYTES`] without its delimiter is an error, so a broken or
//! hostile stream cannot make the buffer grow without bound.

use bytes::BytesMut;
use serde_json::Value;
use tokio_util::codec::Decoder;

const DELIMITER: &[u8] = b"\r\n\r\n";

/// SnowLuma caps chunks at 16 MiB, which base64 turns into about 21.4 MiB, plus the envelope.
pub const MAX_FRAME_BYTES: usize = 24 * 1024 * 1024;

#[derive(Debug, PartialEq, Eq)]
pub enum FrameError {
    /// A frame exceeded [`MAX_FRAME_BYTES`].
    Oversized,
    /// A complete frame was not a JSON object.
    NotJson(String),
    /// The body ended inside a frame.
    Truncated,
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::Oversized => write!(
                f,
                "a stream frame exceeded {} MiB without its delimiter",
                MAX_FRAME_BYTES >> 20
            ),
            FrameError::NotJson(cause) => {
                write!(f, "a stream frame is not a JSON object ({cause})")
            }
            FrameError::Truncated => f.write_str("the stream ended in the middle of a frame"),
        }
    }
}

/// The decoder can be fed from an `AsyncRead` too; there a failed read leaves the frame it
/// was in unfinished.
impl From<std::io::Error> for FrameError {
    fn from(_: std::io::Error) -> Self {
        FrameError::Truncated
    }
}

/// SnowLuma's stream body as a tokio-util [`Decoder`]: one JSON object per frame.
#[derive(Debug, Default)]
pub struct FrameDecoder {
    /// Where to resume looking for the delimiter, so each byte is scanned once.
    scanned: usize,
    /// Whether any frame was handed out.
    framed: bool,
}

impl Decoder for FrameDecoder {
    type Item = Value;
    type Error = FrameError;

    fn decode(&mut self, buffer: &mut BytesMut) -> Result<Option<Value>, FrameError> {
        let from = self.scanned.min(buffer.len());
        let Some(offset) = find(&buffer[from..]) else {
            // The delimiter may straddle this piece and the next one.
            self.scanned = buffer.len().saturating_sub(DELIMITER.len() - 1);
            if buffer.len() > MAX_FRAME_BYTES {
                return Err(FrameError::Oversized);
            }
            return Ok(None);
        };
        let end = from + offset;
        let frame = buffer.split_to(end + DELIMITER.len());
        self.scanned = 0;
        self.framed = true;
        match serde_json::from_slice::<Value>(&frame[..end]) {
            Ok(value @ Value::Object(_)) => Ok(Some(value)),
            Ok(_) => Err(FrameError::NotJson("not an object".into())),
            Err(error) => Err(FrameError::NotJson(error.to_string())),
        }
    }

    /// Once the body has ended, after the last frame: `None` when nothing but white space is
    /// left; the envelope when the whole body is one JSON object without a delimiter
    /// (SnowLuma answers an unknown action or a refused request with a plain envelope, not a
    /// frame); else an error. The buffer is emptied either way.
    fn decode_eof(&mut self, buffer: &mut BytesMut) -> Result<Option<Value>, FrameError> {
        if let Some(frame) = self.decode(buffer)? {
            return Ok(Some(frame));
        }
        let rest = buffer.split();
        self.scanned = 0;
        if rest.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        if self.framed {
            return Err(FrameError::Truncated);
        }
        match serde_json::from_slice::<Value>(&rest) {
            Ok(value @ Value::Object(_)) => Ok(Some(value)),
            _ => Err(FrameError::Truncated),
        }
    }
}

/// A [`FrameDecoder`] with its buffer, fed the body in pieces as they arrive.
#[derive(Debug, Default)]
pub struct FrameReader {
    buffer: BytesMut,
    decoder: FrameDecoder,
}

impl FrameReader {
    pub fn push(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    /// The next complete frame, if the buffer holds one.
    pub fn next_frame(&mut self) -> Result<Option<Value>, FrameError> {
        self.decoder.decode(&mut self.buffer)
    }

    /// Once the body has ended: what is left (see [`FrameDecoder::decode_eof`]).
    pub fn finish(&mut self) -> Result<Option<Value>, FrameError> {
        self.decoder.decode_eof(&mut self.buffer)
    }
}

/// Where the next delimiter starts. memchr's searcher looks at many bytes per step; a loop
/// over bytes for the first `\r` was a tenth of a download's time (the frames are mostly
/// base64, which has none).
fn find(haystack: &[u8]) -> Option<usize> {
    memchr::memmem::find(haystack, DELIMITER)
}

/// Whether a frame ends the stream, and how. SnowLuma marks every stream frame's `data.type`:
/// `stream` for intermediate frames, `response` for the successful end and `error` for the
/// failed end (`reset` is defined but never sent). Anything else, a missing `type` included,
/// is not a frame this client can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameKind {
    /// `data.type == "stream"`: more frames follow.
    Intermediate,
    /// `data.type == "response"` with status ok: the stream succeeded.
    Complete,
    /// A failed envelope or `data.type == "error"`: the stream failed.
    Failed,
    /// An ok envelope whose `data.type` is missing or unknown: a protocol error, never a
    /// success.
    Unexpected,
}

pub fn kind(frame: &Value) -> FrameKind {
    let failed = frame.get("status").and_then(Value::as_str) == Some("failed")
        || frame
            .get("retcode")
            .and_then(Value::as_i64)
            .is_some_and(|c| c != 0);
    match frame.pointer("/data/type").and_then(Value::as_str) {
        _ if failed => FrameKind::Failed,
        Some("error") => FrameKind::Failed,
        Some("stream") => FrameKind::Intermediate,
        Some("response") => FrameKind::Complete,
        _ => FrameKind::Unexpected,
    }
}

/// What an [`FrameKind::Unexpected`] frame carried, for the error message.
pub fn describe_type(frame: &Value) -> String {
    match frame.pointer("/data/type") {
        None => "no data.type".to_string(),
        Some(Value::String(name)) => format!("data.type {name:?}"),
        Some(other) => format!("a data.type that is not a string ({other})"),
    }
}

/// SnowLuma's reason for a failed frame.
pub fn reason(frame: &Value) -> String {
    ["message", "wording"]
        .iter()
        .find_map(|k| {
            frame
                .get(*k)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        })
        .unwrap_or("the stream failed without a reason")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_split_across_pushes() {
        let mut reader = FrameReader::default();
        let body = b"{\"a\":1}\r\n\r\n{\"b\":2}\r\n\r\n";
        for byte in body.chunks(3) {
            reader.push(byte);
        }
        assert_eq!(
            reader.next_frame().unwrap(),
            Some(serde_json::json!({"a":1}))
        );
        assert_eq!(
            reader.next_frame().unwrap(),
            Some(serde_json::json!({"b":2}))
        );
        assert_eq!(reader.next_frame().unwrap(), None);
        assert_eq!(reader.finish(), Ok(None));
    }

    #[test]
    fn delimiter_straddling_pushes_is_found() {
        let mut reader = FrameReader::default();
        reader.push(b"{\"a\":1}\r\n");
        assert_eq!(reader.next_frame().unwrap(), None);
        reader.push(b"\r\n");
        assert!(reader.next_frame().unwrap().is_some());
    }

    #[test]
    fn bad_and_partial_frames_are_errors() {
        let mut reader = FrameReader::default();
        reader.push(b"nope\r\n\r\n");
        assert!(matches!(reader.next_frame(), Err(FrameError::NotJson(_))));
        let mut reader = FrameReader::default();
        reader.push(b"{\"a\":");
        assert_eq!(reader.next_frame().unwrap(), None);
        assert_eq!(reader.finish(), Err(FrameError::Truncated));
    }

    #[test]
    fn a_plain_envelope_without_delimiter_is_the_last_frame() {
        let mut reader = FrameReader::default();
        reader.push(br#"{"status":"failed","retcode":1404,"data":null}"#);
        assert_eq!(reader.next_frame().unwrap(), None);
        assert_eq!(
            reader.finish().unwrap().unwrap()["retcode"],
            serde_json::json!(1404)
        );
        // After real frames, an unterminated object is a truncated stream, not an answer.
        let mut reader = FrameReader::default();
        reader.push(b"{\"a\":1}\r\n\r\n{\"b\":2}");
        assert!(reader.next_frame().unwrap().is_some());
        assert_eq!(reader.next_frame().unwrap(), None);
        assert_eq!(reader.finish(), Err(FrameError::Truncated));
    }

    #[test]
    fn kinds() {
        use serde_json::json;
        assert_eq!(
            kind(&json!({"status":"ok","retcode":0,"data":{"type":"stream"}})),
            FrameKind::Intermediate
        );
        assert_eq!(
            kind(&json!({"status":"ok","retcode":0,"data":{"type":"response"}})),
            FrameKind::Complete
        );
        assert_eq!(
            kind(&json!({"status":"failed","retcode":100,"data":{"type":"error"}})),
            FrameKind::Failed
        );
        // Success needs the terminal type itself: a frame without one, or with a type
        // SnowLuma never sends, is not a clean end.
        for data in [
            json!({}),
            json!({"type":"reset"}),
            json!({"type":"done"}),
            json!({"type":1}),
            json!(null),
        ] {
            assert_eq!(
                kind(&json!({"status":"ok","retcode":0,"data":data})),
                FrameKind::Unexpected,
                "{data}"
            );
        }
        assert_eq!(
            kind(&json!({"status":"ok","retcode":0})),
            FrameKind::Unexpected
        );
    }
}
