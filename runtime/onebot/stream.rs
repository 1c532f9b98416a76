//! The connection side of a stream action: one POST whose body is a sequence of frames, each
//! read with a per-read idle timeout instead of the total request timeout, abandoned at once
//! on cancellation.

use std::time::Duration;

use bytes::Bytes;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use hyper::body::Incoming;

use super::client::{CallError, OneBotClient, next_chunk};
use super::frames::{FrameError, FrameReader};
use crate::trace::TraceContext;

/// Why a stream stopped without a frame.
#[derive(Debug)]
pub enum StreamStop {
    /// The exchange failed (connect, status, broken, cancelled).
    Call(CallError),
    /// Nothing arrived for the idle timeout.
    Idle(Duration),
    /// The body is not a sequence of frames.
    Frame(FrameError),
}

/// What one stream call needs to talk to SnowLuma.
#[derive(Clone, Copy)]
pub struct StreamLink<'a> {
    pub client: &'a OneBotClient,
    pub idle: Duration,
    pub trace: &'a TraceContext,
    pub cancel: &'a CancellationToken,
}

impl<'a> StreamLink<'a> {
    /// Sends one stream request and waits (up to the idle timeout) for its response head.
    pub async fn open(
        &self,
        action: &str,
        params: &Map<String, Value>,
    ) -> Result<FrameStream<'a>, StreamStop> {
        let request = self
            .client
            .request(action, params, self.trace)
            .map_err(StreamStop::Call)?;
        let send = self.client.send(request);
        let response = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => return Err(StreamStop::Call(CallError::Cancelled)),
            sent = tokio::time::timeout(self.idle, send) => match sent {
                Err(_) => return Err(StreamStop::Idle(self.idle)),
                Ok(result) => result.map_err(StreamStop::Call)?,
            },
        };
        let status = response.status().as_u16();
        if status == 401 {
            return Err(StreamStop::Call(CallError::Unauthorized {
                token_sent: self.client.sends_token(),
            }));
        }
        if status != 200 {
            return Err(StreamStop::Call(CallError::Status(status, None)));
        }
        Ok(FrameStream {
            link: *self,
            body: response.into_body(),
            reader: FrameReader::default(),
        })
    }
}

/// The frames of one stream response, read as they arrive.
pub struct FrameStream<'a> {
    link: StreamLink<'a>,
    body: Incoming,
    reader: FrameReader,
}

impl FrameStream<'_> {
    /// The next frame, or `None` when the body ended cleanly after the last frame.
    pub async fn next(&mut self) -> Result<Option<Value>, StreamStop> {
        loop {
            if let Some(frame) = self.reader.next_frame().map_err(StreamStop::Frame)? {
                return Ok(Some(frame));
            }
            match self.read().await? {
                Some(bytes) => self.reader.push(&bytes),
                None => {
                    // The body ended: a plain envelope left over is the last frame.
                    let last = self.reader.finish().map_err(StreamStop::Frame)?;
                    self.reader = FrameReader::default();
                    return Ok(last);
                }
            }
        }
    }

    /// The next piece of the body, waiting at most the idle timeout.
    async fn read(&mut self) -> Result<Option<Bytes>, StreamStop> {
        let link = self.link;
        tokio::select! {
            biased;
            _ = link.cancel.cancelled() => Err(StreamStop::Call(CallError::Cancelled)),
            chunk = tokio::time::timeout(link.idle, next_chunk(&mut self.body)) => match chunk {
                Err(_) => Err(StreamStop::Idle(link.idle)),
                Ok(result) => result.map_err(StreamStop::Call),
            },
        }
    }
}
