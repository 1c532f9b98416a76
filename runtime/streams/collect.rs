//! Generic frame streams (test_download_stream, hand-written upload chunk calls, any other
//! stream action): the frames' `data` in order, bounded in count and bytes, with the bound
//! stated when reached. A terminal error frame ends the stream as a remote failure.

use serde_json::{Map, Value, json};

use super::{Progress, StreamError, StreamOutcome, StreamResult};
use crate::onebot::StreamLink;
use crate::onebot::frames::{self, FrameKind};

pub const MAX_FRAMES: usize = 1000;
pub const MAX_BYTES: usize = 8 * 1024 * 1024;

pub async fn run(
    link: &StreamLink<'_>,
    action: &str,
    params: &Map<String, Value>,
    progress: &mut Progress,
) -> StreamOutcome {
    let mut frames = super::open(link, action, params).await?;
    let mut collected = Vec::new();
    let (mut count, mut bytes, mut truncated) = (0usize, 0usize, false);
    let mut last = None;
    let terminal = loop {
        let frame = match frames.next().await? {
            Some(frame) => frame,
            // A clean end of the body ends the stream; its last frame is the answer.
            None => match last.take() {
                Some(frame) => break frame,
                None => return Err(StreamError::Incomplete.into()),
            },
        };
        count += 1;
        if frames::kind(&frame) == FrameKind::Failed {
            return Ok(StreamResult::remote_failure(frame)
                .with_detail("frames_received", json!(count - 1)));
        }
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
    let mut result = json!({
        "frames": collected,
        "frame_count": count,
        "truncated": truncated,
        "terminal": terminal,
    });
    let result = if truncated {
        result["limits"] = json!({ "max_frames": MAX_FRAMES, "max_bytes": MAX_BYTES });
        StreamResult::completed(result).with_detail(
            "truncated",
            json!(format!(
                "only the first {MAX_FRAMES} frames / {} MiB of frame data are kept",
                MAX_BYTES >> 20
            )),
        )
    } else {
        StreamResult::completed(result)
    };
    Ok(result)
}
