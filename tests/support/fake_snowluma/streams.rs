//! Stream API: frame envelopes, the download / test producers (written with
//! backpressure, one frame at a time) and the `upload_file_stream` state
//! machine, ported from SnowLuma's `stream-file.ts` but kept in memory.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use base64::engine::{DecodePaddingMode, general_purpose};
use bytes::Bytes;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

use super::actions::{as_bool, as_int, as_string, failed, ok};
use super::server::{Chunk, abort_body};
use super::{Fault, State, UPLOAD_DIR, UploadState};

pub(super) const DEFAULT_CHUNK: u64 = 64 * 1024;
pub(super) const MAX_CHUNK_REQUEST: u64 = 16 * 1024 * 1024;
const STREAM_MARK: &str = "stream-action";
const DELIM: &[u8] = b"\r\n\r\n";
/// Size of the `OversizedFrame` fault's frame: past the 24 MiB frame cap of
/// the server (SnowLuma's 16 MiB chunks in base64, plus the envelope).
const OVERSIZED: usize = 25 * 1024 * 1024;

const MAX_STREAMS: usize = 64;
const MAX_CHUNKS: i64 = 200_000;
const MAX_CHUNK_BYTES: usize = 32 * 1024 * 1024;
const MAX_UPLOAD_BYTES: u64 = 4 * 1024 * 1024 * 1024;

/// A downloadable file.
#[derive(Clone)]
pub(super) enum Source {
    /// A file in SnowLuma's stream directory: its size is known, chunks are
    /// `chunk_size` (the last one shorter).
    Bytes(Bytes),
    Generated {
        size: u64,
        seed: u8,
    },
    /// An http(s) body (a URL, or a cached image or voice fetched from the
    /// CDN): chunks as the network delivers them, and with no Content-Length
    /// the size is announced as 0.
    Remote {
        body: Bytes,
        content_length: bool,
    },
}

/// The sizes a network body arrives in, cycled: nothing like `chunk_size`.
const NETWORK_PIECES: [u64; 7] = [16_384, 1, 1_460, 65_536, 7, 32_768, 4_096];

impl Source {
    fn len(&self) -> u64 {
        match self {
            Source::Bytes(b) | Source::Remote { body: b, .. } => b.len() as u64,
            Source::Generated { size, .. } => *size,
        }
    }

    /// The size file_info announces: 0 when SnowLuma does not know it.
    fn announced(&self) -> u64 {
        match self {
            Source::Remote {
                content_length: false,
                ..
            } => 0,
            other => other.len(),
        }
    }

    /// How many bytes the chunk at `index` carries, when `left` remain.
    fn piece(&self, index: u64, chunk_size: u64, left: u64) -> u64 {
        let want = match self {
            Source::Remote { .. } => NETWORK_PIECES[(index % NETWORK_PIECES.len() as u64) as usize],
            _ => chunk_size,
        };
        want.min(left)
    }

    fn read(&self, offset: u64, len: usize) -> Bytes {
        match self {
            Source::Bytes(b) | Source::Remote { body: b, .. } => {
                b.slice(offset as usize..offset as usize + len)
            }
            Source::Generated { seed, .. } => {
                let mut buf = vec![0u8; len];
                fill_generated(*seed, offset, &mut buf);
                Bytes::from(buf)
            }
        }
    }
}

/// One 64-bit word of a generated file (splitmix64 of the word index).
fn generated_word(seed: u8, word: u64) -> u64 {
    let mut z = word.wrapping_add((u64::from(seed) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Byte `i` of a file from `add_generated_file(.., seed)`: byte `i % 8`
/// (little-endian) of `splitmix64((seed + 1) * 0x9E3779B97F4A7C15 + i / 8)`.
pub fn generated_byte(seed: u8, i: u64) -> u8 {
    (generated_word(seed, i / 8) >> (8 * (i % 8))) as u8
}

/// Fill `buf` with bytes `offset..offset + buf.len()` of a generated file.
pub fn fill_generated(seed: u8, offset: u64, buf: &mut [u8]) {
    let mut word_index = offset / 8;
    let mut word = generated_word(seed, word_index).to_le_bytes();
    for (k, b) in buf.iter_mut().enumerate() {
        let i = offset + k as u64;
        if i / 8 != word_index {
            word_index = i / 8;
            word = generated_word(seed, word_index).to_le_bytes();
        }
        *b = word[(i % 8) as usize];
    }
}

/// Lowercase hex sha256 of a generated file, computed in 1 MiB pieces.
pub fn generated_sha256(size: u64, seed: u8) -> String {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut offset = 0;
    while offset < size {
        let n = (size - offset).min(buf.len() as u64) as usize;
        fill_generated(seed, offset, &mut buf[..n]);
        hasher.update(&buf[..n]);
        offset += n as u64;
    }
    hex(&hasher.finalize())
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(super) enum StreamJob {
    Download {
        source: Source,
        name: String,
        chunk_size: u64,
    },
    Test {
        error: bool,
    },
    /// A stream that is only its terminal frame (upload replies, errors).
    Terminal(Value),
}

/// Intermediate frame (`wrapStreamFrame`).
fn intermediate_frame(data: Value, echo: &Option<Value>) -> Value {
    let mut frame = json!({
        "status": "ok", "retcode": 0, "data": data, "message": "", "wording": "",
        "stream": STREAM_MARK
    });
    if let Some(echo) = echo {
        frame["echo"] = echo.clone();
    }
    frame
}

/// Terminal frame (`wrapStreamTerminal`): stream mark, echo, `message`
/// mirrors `wording`, failures get an error packet as data.
fn terminal_frame(envelope: Value, echo: &Option<Value>) -> Value {
    let Value::Object(mut frame) = envelope else {
        return envelope; // a raw `set_answer` value goes out as given
    };
    frame.insert("stream".into(), json!(STREAM_MARK));
    if let Some(echo) = echo {
        frame.insert("echo".into(), echo.clone());
    }
    if frame.get("status").and_then(Value::as_str) == Some("failed") {
        frame.insert(
            "data".into(),
            json!({"type": "error", "data_type": "error"}),
        );
    }
    let wording = frame
        .get("wording")
        .filter(|w| !w.is_null())
        .cloned()
        .unwrap_or(json!(""));
    frame.insert("message".into(), wording);
    frame.entry("wording").or_insert(json!(""));
    Value::Object(frame)
}

/// The client left (or a fault ended the body): stop producing.
pub(super) struct Gone;

/// Writes frames into the response body, applying the injected fault.
pub(super) struct FrameSink {
    tx: mpsc::Sender<Chunk>,
    fault: Option<Fault>,
    echo: Option<Value>,
    sent: usize,
}

impl FrameSink {
    pub(super) fn new(tx: mpsc::Sender<Chunk>, fault: Option<Fault>, echo: Option<Value>) -> Self {
        FrameSink {
            tx,
            fault,
            echo,
            sent: 0,
        }
    }

    async fn send(&mut self, data: Value) -> Result<(), Gone> {
        let frame = intermediate_frame(data, &self.echo);
        self.write(frame, false).await
    }

    async fn finish(mut self, envelope: Value) {
        if self.fault == Some(Fault::NoTerminal) {
            return; // dropping the sender ends the body cleanly
        }
        let mut envelope = if self.fault == Some(Fault::ErrorFrame) {
            failed(100, "injected error frame")
        } else {
            envelope
        };
        if let (Some(Fault::TerminalType(kind)), Some(data)) = (
            &self.fault,
            envelope.get_mut("data").and_then(Value::as_object_mut),
        ) {
            match kind {
                Some(value) => data.insert("type".into(), json!(value)),
                None => data.remove("type"),
            };
        }
        let frame = terminal_frame(envelope, &self.echo);
        if self.write(frame, true).await.is_ok()
            && matches!(self.fault, Some(Fault::DisconnectMidStream { .. }))
        {
            // Fewer frames than `after_frames`: still never end cleanly.
            abort_body(&self.tx).await;
        }
    }

    async fn write(&mut self, frame: Value, terminal: bool) -> Result<(), Gone> {
        match self.fault {
            Some(Fault::DisconnectMidStream { after_frames }) if self.sent >= after_frames => {
                abort_body(&self.tx).await;
                return Err(Gone);
            }
            Some(Fault::OversizedFrame) => {
                send_oversized(&self.tx).await;
                return Err(Gone);
            }
            _ => {}
        }
        let mut buf = serde_json::to_vec(&frame).expect("frame serializes");
        buf.extend_from_slice(DELIM);
        let mut buf = Bytes::from(buf);
        if self.fault == Some(Fault::StallBody) && (self.sent >= 1 || terminal) {
            let _ = self.tx.send(Ok(buf.split_to(buf.len() / 2))).await;
            self.tx.closed().await;
            return Err(Gone);
        }
        self.tx.send(Ok(buf)).await.map_err(|_| Gone)?;
        self.sent += 1;
        Ok(())
    }
}

/// A frame that never ends: 25 MiB of base64-like text, no delimiter.
async fn send_oversized(tx: &mpsc::Sender<Chunk>) {
    let head = r#"{"status":"ok","retcode":0,"data":{"type":"stream","data_type":"file_chunk","index":0,"data":""#;
    if tx
        .send(Ok(Bytes::from_static(head.as_bytes())))
        .await
        .is_err()
    {
        return;
    }
    let piece = Bytes::from(vec![b'A'; 64 * 1024]);
    for _ in 0..OVERSIZED / piece.len() {
        if tx.send(Ok(piece.clone())).await.is_err() {
            return;
        }
    }
    let _ = tx
        .send(Ok(Bytes::from_static(
            br#""},"message":"","wording":"","stream":"stream-action"}"#,
        )))
        .await;
}

/// Produce a whole stream response; runs as its own task.
pub(super) async fn run(job: StreamJob, mut sink: FrameSink) {
    let terminal = match job {
        StreamJob::Terminal(envelope) => envelope,
        StreamJob::Test { error } => {
            let big = sink.fault == Some(Fault::BigFrames);
            let count = match sink.fault {
                Some(Fault::ManyFrames(count)) => count,
                _ => 10,
            };
            for i in 1..=count {
                let data = if big {
                    "\"".repeat(700_000)
                } else {
                    format!("Index-> {i}")
                };
                let packet = json!({"type": "stream", "data": data, "data_type": "data_chunk"});
                if sink.send(packet).await.is_err() {
                    return;
                }
            }
            if error {
                failed(100, "This is a test error")
            } else {
                ok(
                    json!({"type": "response", "data_type": "data_complete", "data": "Stream transmission complete"}),
                )
            }
        }
        StreamJob::Download {
            source,
            name,
            chunk_size,
        } => {
            let fault = sink.fault.clone();
            match download(&mut sink, &source, &name, chunk_size, fault).await {
                Ok(envelope) => envelope,
                Err(Gone) => return,
            }
        }
    };
    sink.finish(terminal).await;
}

async fn download(
    sink: &mut FrameSink,
    source: &Source,
    name: &str,
    chunk_size: u64,
    fault: Option<Fault>,
) -> Result<Value, Gone> {
    let total = source.len();
    let announced = if fault == Some(Fault::UnknownSize) {
        0
    } else {
        source.announced()
    };
    sink.send(json!({
        "type": "stream", "data_type": "file_info", "file_name": name,
        "file_size": announced, "chunk_size": chunk_size
    }))
    .await?;
    let (mut offset, mut index) = (0u64, 0u64);
    while offset < total {
        let n = source.piece(index, chunk_size, total - offset) as usize;
        let chunk = source.read(offset, n);
        offset += n as u64;
        let b64 = STANDARD.encode(&chunk);
        drop(chunk);
        // SnowLuma: 0 throughout when the size is unknown.
        let progress = if announced > 0 {
            ((offset as f64 / announced as f64) * 100.0)
                .round()
                .min(100.0) as u64
        } else {
            0
        };
        let base64_size = b64.len();
        let mut chunk = json!({
            "type": "stream", "data_type": "file_chunk", "index": index, "data": b64,
            "size": n, "progress": progress, "base64_size": base64_size
        });
        let last = offset >= total;
        match &fault {
            Some(Fault::ChunkWithout(key)) if index == 1 => {
                chunk.as_object_mut().expect("object").remove(*key);
            }
            Some(Fault::ChunkDataNotString) if index == 1 => chunk["data"] = json!(12345),
            _ => {}
        }
        match fault {
            Some(Fault::MissingChunk) if index == 1 => {}
            Some(Fault::CorruptChunk) if index == 1 => {
                let mut chunk = chunk;
                chunk["data"] = json!("this is not base64!");
                sink.send(chunk).await?;
            }
            Some(Fault::ShortFile) if last && index > 0 => {}
            Some(Fault::DuplicateChunk) if index == 1 => {
                sink.send(chunk.clone()).await?;
                sink.send(chunk).await?;
            }
            _ => sink.send(chunk).await?,
        }
        index += 1;
        if index % 64 == 0 {
            // Let other connections run during a long generated download.
            tokio::time::sleep(Duration::ZERO).await;
        }
    }
    let mut complete = json!({
        "type": "response", "data_type": "file_complete", "file_name": name,
        "total_chunks": index, "total_bytes": total, "message": "Download completed"
    });
    match fault {
        Some(Fault::ShortFile) => {
            complete
                .as_object_mut()
                .expect("object")
                .remove("total_bytes");
        }
        Some(Fault::WrongTotalBytes) => complete["total_bytes"] = json!(total + 1),
        Some(Fault::WrongTotalChunks) => complete["total_chunks"] = json!(index + 1),
        Some(Fault::TerminalDataType(data_type)) => match data_type {
            Some(value) => complete["data_type"] = json!(value),
            None => {
                complete
                    .as_object_mut()
                    .expect("object")
                    .remove("data_type");
            }
        },
        _ => {}
    }
    Ok(ok(complete))
}

// ─────────────────────────── uploads ───────────────────────────

#[derive(Default)]
pub(super) struct Uploads {
    active: HashMap<String, Active>,
    records: HashMap<String, UploadState>,
}

impl Uploads {
    pub(super) fn record(&self, stream_id: &str) -> Option<UploadState> {
        self.records.get(stream_id).cloned()
    }

    /// `clean_stream_temp_file`: drop streams in progress.
    pub(super) fn clean(&mut self) -> usize {
        let n = self.active.len();
        self.active.clear();
        n
    }
}

/// A stream in progress. Chunks are hashed (and appended) as soon as the
/// contiguous prefix grows, so only out-of-order chunks wait in `pending`.
struct Active {
    filename: String,
    total: u64,
    next: u64,
    pending: BTreeMap<u64, Bytes>,
    hasher: Sha256,
    bytes_written: u64,
    assembled: Option<Vec<u8>>,
    expected_sha256: Option<String>,
}

impl Active {
    fn written(&self) -> u64 {
        self.next + self.pending.len() as u64
    }

    fn has(&self, index: u64) -> bool {
        index < self.next || self.pending.contains_key(&index)
    }

    fn status(&self, id: &str, status: &str) -> Value {
        json!({
            "type": "stream", "stream_id": id, "status": status,
            "received_chunks": self.written(), "total_chunks": self.total
        })
    }
}

/// One `upload_file_stream` call → the envelope of its single frame.
pub(super) fn upload(st: &mut State, keep_bytes: bool, p: &Map<String, Value>) -> Value {
    let id = p.get("stream_id").and_then(as_string).unwrap_or_default();
    match upload_call(st, keep_bytes, &id, p) {
        Ok(data) => ok(data),
        Err(wording) => {
            if let Some(rec) = st.uploads.records.get_mut(&id) {
                rec.last_error = Some(wording.clone());
            }
            failed(100, wording)
        }
    }
}

fn upload_call(
    st: &mut State,
    keep_bytes: bool,
    id: &str,
    p: &Map<String, Value>,
) -> Result<Value, String> {
    let valid_id = !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !valid_id {
        return Err("invalid stream_id (allowed: 1-128 chars of A-Z a-z 0-9 _ -)".into());
    }
    let int = |k: &str| p.get(k).and_then(as_int);
    let flag = |k: &str| p.get(k).and_then(as_bool).unwrap_or(false);
    let text = |k: &str| p.get(k).and_then(as_string);
    let uploads = &mut st.uploads;

    if flag("reset") {
        uploads.active.remove(id);
        let rec = uploads.records.entry(id.to_string()).or_default();
        rec.stream_id = id.to_string();
        rec.reset_seen = true;
        // SnowLuma (like NapCat) reports a reset as an error frame.
        return Err("Stream reset completed".into());
    }
    if flag("verify_only") {
        let state = uploads.active.get(id).ok_or("stream not found")?;
        return Ok(state.status(id, "file_created"));
    }
    if !uploads.active.contains_key(id) {
        let total = int("total_chunks").unwrap_or(0);
        if total <= 0 {
            return Err("total_chunks required for new stream".into());
        }
        if total > MAX_CHUNKS {
            return Err(format!("total_chunks exceeds limit ({MAX_CHUNKS})"));
        }
        if int("file_size").is_some_and(|n| n as u64 > MAX_UPLOAD_BYTES) {
            return Err(format!(
                "file_size exceeds limit ({MAX_UPLOAD_BYTES} bytes)"
            ));
        }
        if uploads.active.len() >= MAX_STREAMS {
            return Err(format!(
                "too many concurrent upload streams ({MAX_STREAMS})"
            ));
        }
        let filename = safe_filename(text("filename").as_deref().unwrap_or(""), id);
        let rec = uploads.records.entry(id.to_string()).or_default();
        *rec = UploadState {
            stream_id: id.to_string(),
            filename: filename.clone(),
            total_chunks: total as u64,
            reset_seen: rec.reset_seen,
            ..UploadState::default()
        };
        uploads.active.insert(
            id.to_string(),
            Active {
                filename,
                total: total as u64,
                next: 0,
                pending: BTreeMap::new(),
                hasher: Sha256::new(),
                bytes_written: 0,
                assembled: keep_bytes.then(Vec::new),
                expected_sha256: None,
            },
        );
    }
    let state = uploads.active.get_mut(id).expect("stream exists");
    let rec = uploads.records.get_mut(id).expect("record exists");
    // The sha256 may come on any call, typically the completing one.
    if let Some(sha) = text("expected_sha256") {
        rec.expected_sha256 = Some(sha.clone());
        state.expected_sha256 = Some(sha);
    }

    if let (Some(data), Some(index)) = (text("chunk_data"), int("chunk_index")) {
        rec.chunk_calls += 1;
        if index < 0 || index as u64 >= state.total {
            return Err(format!("invalid chunk index: {index}"));
        }
        let index = index as u64;
        if state.has(index) {
            return Ok(state.status(id, "chunk_received")); // idempotent duplicate
        }
        let chunk = decode_base64_lenient(&data);
        if chunk.len() > MAX_CHUNK_BYTES {
            return Err(format!(
                "chunk exceeds size limit ({MAX_CHUNK_BYTES} bytes)"
            ));
        }
        if state.bytes_written + chunk.len() as u64 > MAX_UPLOAD_BYTES {
            return Err(format!(
                "stream exceeds total size limit ({MAX_UPLOAD_BYTES} bytes)"
            ));
        }
        state.bytes_written += chunk.len() as u64;
        state.pending.insert(index, Bytes::from(chunk));
        while let Some(next) = state.pending.remove(&state.next) {
            state.hasher.update(&next);
            if let Some(out) = state.assembled.as_mut() {
                out.extend_from_slice(&next);
            }
            state.next += 1;
        }
        rec.received_chunks = state.written();
        return Ok(state.status(id, "chunk_received"));
    }

    if !(flag("is_complete") || state.written() == state.total) {
        return Ok(state.status(id, "file_created"));
    }
    if state.written() != state.total {
        let missing_count = state.total - state.written();
        let missing: Vec<String> = (state.next..state.total)
            .filter(|i| !state.has(*i))
            .take(16)
            .map(|i| i.to_string())
            .collect();
        let more = if missing_count > missing.len() as u64 {
            "…"
        } else {
            ""
        };
        return Err(format!(
            "incomplete stream: missing {missing_count} chunk(s) [{}{more}]",
            missing.join(",")
        ));
    }
    let sha256 = hex(&state.hasher.clone().finalize());
    if let Some(expected) = state.expected_sha256.as_deref()
        && !expected.is_empty()
        && expected != sha256
    {
        // The stream stays open, as in SnowLuma: a corrected retry may follow.
        return Err(format!(
            "sha256 mismatch (expected {expected}, got {sha256})"
        ));
    }
    let state = uploads.active.remove(id).expect("stream exists");
    let file_path = format!("{UPLOAD_DIR}/{id}__{}", state.filename);
    let bytes = state.assembled.map(Bytes::from);
    rec.complete = true;
    rec.received_chunks = state.total;
    rec.file_path = Some(file_path.clone());
    rec.file_size = Some(state.bytes_written);
    rec.sha256 = Some(sha256.clone());
    rec.bytes = bytes.clone();
    if let Some(bytes) = bytes {
        // Downloadable again, like the real file in the stream temp dir.
        st.files.insert(file_path.clone(), Source::Bytes(bytes));
    }
    Ok(json!({
        "type": "response", "stream_id": id, "status": "file_complete",
        "received_chunks": state.total, "total_chunks": state.total,
        "file_path": file_path, "file_size": state.bytes_written, "sha256": sha256
    }))
}

/// SnowLuma's `safeFilename`.
fn safe_filename(name: &str, id: &str) -> String {
    let replaced = name.replace(['/', '\\'], "_");
    let mut out = String::with_capacity(replaced.len());
    let mut dots = 0;
    for c in replaced.chars().chain(std::iter::once('\0')) {
        if c == '.' {
            dots += 1;
            continue;
        }
        match dots {
            0 => {}
            1 => out.push('.'),
            _ => out.push('_'),
        }
        dots = 0;
        if c != '\0' {
            out.push(c);
        }
    }
    let base = out.trim_start_matches('.').trim();
    if base.is_empty() {
        format!("upload_{id}")
    } else {
        base.to_string()
    }
}

/// Node's `Buffer.from(s, 'base64')`: either alphabet, padding optional,
/// other characters skipped, decoding stops at `=`.
fn decode_base64_lenient(s: &str) -> Vec<u8> {
    const LENIENT: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new()
            .with_decode_padding_mode(DecodePaddingMode::RequireNone)
            .with_decode_allow_trailing_bits(true),
    );
    let mut clean: Vec<u8> = s
        .bytes()
        .take_while(|&b| b != b'=')
        .filter_map(|b| match b {
            b'-' => Some(b'+'),
            b'_' => Some(b'/'),
            b if b.is_ascii_alphanumeric() || b == b'+' || b == b'/' => Some(b),
            _ => None,
        })
        .collect();
    if clean.len() % 4 == 1 {
        clean.pop(); // a lone trailing symbol carries no whole byte
    }
    LENIENT
        .decode(&clean)
        .or_else(|_| general_purpose::STANDARD_NO_PAD.decode(&clean))
        .unwrap_or_default()
}
