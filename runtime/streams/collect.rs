//! Generic frame streams (test_download_stream, hand-written upload chunk calls, any other
//! stream action): the frames' `data` in order, bounded in count and bytes, with the bound
//! stated when reached. A terminal error frame makes the outcome `failed`.

use serde_json::{Map, Value, json};

use super::frames::{self, FrameKind};
use super::{Link, Progress};
use crate::server::{Outcome, Reply};

pub const MAX_FRAMES: usize = 1000;
pub const MAX_BYTES: usize = 8 * 1024 * 1024;

pub async fn run(
    link: &Link<'_>,
    action: &str,
    params: &Map<String, Value>,
    progress: &mut Progress,
) -> Reply {
    let mut frames = match link.frames(action, params).await {
        Ok(frames) => frames,
        Err(reply) => return reply,
    };
    let mut collected = Vec::new();
    let (mut count, mut bytes, mut truncated) = (0usize, 0usize, false);
    let mut last = None;
    let terminal = loop {
        let frame = match frames.next().await {
            Ok(Some(frame)) => frame,
            // A clean end of the body ends the stream; its last frame is the answer.
            Ok(None) => match last.take() {
                Some(frame) => break frame,
                None => return super::incomplete(),
            },
            Err(reply) => return reply,
        };
        count += 1;
        let data = frame.get("data").cloned().unwrap_or(Value::Null);
        let size = data.to_string().len();
        if collected.len() < MAX_FRAMES && bytes + size <= MAX_BYTES {
            bytes += size;
            collected.push(data);
        } else {
            truncated = true;
        }
        progress.update(count as f64, None).await;
        if frames::kind(&frame) != FrameKind::Intermediate {
            break frame;
        }
        last = Some(frame);
    };
    let failed = frames::kind(&terminal) == FrameKind::Failed;
    let mut result = json!({
        "frames": collected,
        "frame_count": count,
        "truncated": truncated,
        "limits": { "max_frames": MAX_FRAMES, "max_bytes": MAX_BYTES },
        "terminal": terminal,
    });
    if !truncated {
        result.as_object_mut().map(|r| r.remove("limits"));
    }
    let mut reply = Reply::ok(result);
    if failed {
        reply.diagnostics.outcome = Outcome::Failed;
        reply.diagnostics.kind = Some("stream_failed");
        reply.diagnostics.message = Some(format!(
            "the stream ended with an error frame: {}",
            frames::reason(&terminal)
        ));
        reply.diagnostics.next_step =
            Some("read the terminal frame's status, retcode and message".into());
    }
    if truncated {
        reply.diagnostics.extra.insert(
            "truncated".into(),
            json!(format!(
                "only the first {MAX_FRAMES} frames / {} MiB of frame data are kept",
                MAX_BYTES >> 20
            )),
        );
    }
    reply
}
