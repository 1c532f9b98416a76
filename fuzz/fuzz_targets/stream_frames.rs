//! SnowLuma's stream body: `FrameReader` fed the body in arbitrary pieces, as a stream
//! response arrives.
//!
//! Input: see `common::Chunked` (the setting nibble is unused).
//!
//! Checked: the frames and the error (if any) do not depend on how the body was split, nor
//! does the final `finish`; it is the same fed one byte at a time; every frame handed out is a
//! JSON object whose text, framed again, reads back the same; `kind` and `reason` accept any
//! frame.

#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use snowluma_mcp::onebot::frames::{FrameError, FrameReader, kind, reason};

#[derive(Debug, PartialEq)]
enum Read {
    Frame(Value),
    Error(FrameError),
    Finished(Result<Option<Value>, FrameError>),
}

/// What a stream consumer sees: frames as they complete, stopping at the first error, and the
/// end of the body.
fn read(pieces: &[&[u8]]) -> Vec<Read> {
    let mut reader = FrameReader::default();
    let mut out = Vec::new();
    for piece in pieces {
        reader.push(piece);
        loop {
            match reader.next_frame() {
                Ok(Some(frame)) => out.push(Read::Frame(frame)),
                Ok(None) => break,
                Err(error) => {
                    out.push(Read::Error(error));
                    return out;
                }
            }
        }
    }
    out.push(Read::Finished(reader.finish()));
    out
}

fuzz_target!(|data: &[u8]| {
    let Some(input) = common::Chunked::parse(data) else {
        return;
    };
    let whole = read(&[input.body]);
    let pieces = input.pieces();
    if pieces.len() > 1 {
        assert_eq!(read(&pieces), whole, "the frames depend on the split");
    }
    if input.body.len() <= 2048 {
        let bytes: Vec<&[u8]> = input.body.chunks(1).collect();
        assert_eq!(read(&bytes), whole, "byte-by-byte reading differs");
    }

    let mut reframed = Vec::new();
    let mut frames = 0;
    for item in &whole {
        let frame = match item {
            Read::Frame(frame) | Read::Finished(Ok(Some(frame))) => frame,
            _ => continue,
        };
        assert!(frame.is_object(), "a frame that is not an object: {frame}");
        let _ = kind(frame);
        assert!(!reason(frame).is_empty());
        if matches!(item, Read::Frame(_)) {
            frames += 1;
            reframed.extend_from_slice(&serde_json::to_vec(frame).unwrap());
            reframed.extend_from_slice(b"\r\n\r\n");
        }
    }
    // The frames, written back as SnowLuma would, read back the same.
    let again = read(&[&reframed]);
    assert_eq!(again.len(), frames + 1);
    for (a, b) in again.iter().zip(&whole).take(frames) {
        match (a, b) {
            (Read::Frame(a), Read::Frame(b)) => assert!(common::same_json(a, b), "{a} != {b}"),
            _ => panic!("a frame read back as {a:?}, not as {b:?}"),
        }
    }
    assert_eq!(again.last(), Some(&Read::Finished(Ok(None))));
});
