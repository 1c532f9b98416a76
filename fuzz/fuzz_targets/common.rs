//! Helpers shared by the fuzz targets (each target includes this file as a module).

#![allow(dead_code)]

use std::future::Future;
use std::task::{Context, Poll, Waker};

/// An input whose first byte chooses how the rest arrives: its low four bits are how many
/// chunk lengths follow (0: the body arrives in one piece), the high four bits are a
/// target-specific setting. The chunk lengths (1..=256 each, used in turn) are the next bytes;
/// the remainder is the body. Seeds start with `\0`: the body in one piece, default setting.
pub struct Chunked<'a> {
    pub setting: u8,
    pub sizes: Vec<usize>,
    pub body: &'a [u8],
}

impl<'a> Chunked<'a> {
    pub fn parse(data: &'a [u8]) -> Option<Chunked<'a>> {
        let (&head, rest) = data.split_first()?;
        let count = usize::from(head & 0x0f).min(rest.len());
        let (sizes, body) = rest.split_at(count);
        Some(Chunked {
            setting: head >> 4,
            sizes: sizes.iter().map(|b| usize::from(*b) + 1).collect(),
            body,
        })
    }

    /// The body cut into the chosen pieces (one piece when no lengths were given).
    pub fn pieces(&self) -> Vec<&'a [u8]> {
        split(self.body, &self.sizes)
    }
}

/// `body` cut into pieces of the given lengths, used in turn; one piece when `sizes` is empty.
pub fn split<'a>(body: &'a [u8], sizes: &[usize]) -> Vec<&'a [u8]> {
    if sizes.is_empty() {
        return vec![body];
    }
    let mut pieces = Vec::new();
    let mut rest = body;
    for size in sizes.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (piece, tail) = rest.split_at((*size).min(rest.len()));
        pieces.push(piece);
        rest = tail;
    }
    pieces
}

/// Runs a future whose I/O is all in memory (so it is never really pending) to completion.
pub fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..10_000 {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
    }
    panic!("a future over in-memory I/O stayed pending");
}

/// JSON equality that allows a float to move by its last bit or so: serde_json's default
/// float parsing is not exact, so a float written out and read back may differ slightly.
pub fn same_json(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if x == y {
                return true;
            }
            match (x.as_f64(), y.as_f64()) {
                (Some(x), Some(y)) => (x - y).abs() <= 1e-12 * x.abs().max(y.abs()),
                _ => false,
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}
