//! Generic frame streams (test_download_stream, hand-written upload chunk calls, any other
//! stream action): the frames' `data` in order, bounded in count and bytes, with the bound
//! stated when reached. A terminal error frame ends the stream as a remote failure.
//!
//! Only SnowLuma's terminal frame (`data.type: "response"`) completes a stream; a frame with no
//! `data.type`, or one SnowLuma never sends, is `bad_frame`. The one exception is a hand-written
//! `upload_file_stream` chunk call, which the protocol answers with a single intermediate
//! frame (`chunk_received`) and then ends the body: there a clean end after a frame is success.

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
    upload_chunk_call: bool,
    progress: &mut Progress,
) -> StreamOutcome {
    let mut frames = super::open(link, action, params).await?;
    let mut collected = Vec::new();
    let (mut count, mut bytes, mut truncated) = (0usize, 0usize, false);
    let mut last = None;
    let terminal = loop {
        let frame = match frames.next().await? {
            Some(frame) => frame,
            None => match last.take() {
                Some(frame) if upload_chunk_call => break frame,
                _ => return Err(StreamError::Incomplete.into()),
            },
        };
        count += 1;
        let kind = frames::kind(&frame);
        match kind {
            FrameKind::Failed => {
                return Ok(StreamResult::remote_failure(frame)
                    .with_detail("frames_received", json!(count - 1)));
            }
            FrameKind::Unexpected => {
                return Err(super::unexpected_frame(&frame, "nothing was kept")
                    .with_detail("frames_received", json!(count - 1)));
            }
            FrameKind::Intermediate | FrameKind::Complete => {}
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
        if kind == FrameKind::Complete {
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
