//! Progress of a stream call: at most one update per 250 ms, strictly increasing values, the
//! last pending value flushed before a successful response, and nothing after completion or
//! cancellation. Where updates go (an MCP progress notification, a task record) is the
//! [`ProgressSink`]'s business; a failed delivery is remembered and reported in the call's
//! diagnostics.

use std::time::{Duration, Instant};

use futures::future::BoxFuture;

/// Receives a stream call's progress updates.
pub trait ProgressSink: Send + Sync {
    /// Delivers one update; `Err` says why it could not be delivered.
    fn deliver(&self, value: f64, total: Option<f64>) -> BoxFuture<'_, Result<(), String>>;
}

const MIN_INTERVAL: Duration = Duration::from_millis(250);

pub struct Progress {
    sink: Option<Box<dyn ProgressSink>>,
    last_sent_at: Option<Instant>,
    last_sent: f64,
    pending: Option<(f64, Option<f64>)>,
    pub delivery_failure: Option<String>,
    /// Notifications sent, for diagnostics.
    pub sent: u64,
}

impl Progress {
    /// Updates go to `sink`; without one, nothing is sent.
    pub fn new(sink: Option<Box<dyn ProgressSink>>) -> Self {
        Progress {
            sink,
            last_sent_at: None,
            last_sent: 0.0,
            pending: None,
            delivery_failure: None,
            sent: 0,
        }
    }

    /// A progress reporter that never sends (no token).
    pub fn silent() -> Self {
        Progress::new(None)
    }

    /// Records `value` (and `total` when a positive size is known); sends it now if the rate
    /// allows, else keeps it pending.
    pub async fn update(&mut self, value: f64, total: Option<f64>) {
        if self.sink.is_none() || value <= self.last_sent {
            return;
        }
        let total = total.filter(|t| *t > 0.0);
        let due = self
            .last_sent_at
            .is_none_or(|at| at.elapsed() >= MIN_INTERVAL);
        if due {
            self.send(value, total).await;
        } else {
            self.pending = Some((value, total));
        }
    }

    /// Sends the last pending value; call before a successful response only.
    pub async fn flush(&mut self) {
        if let Some((value, total)) = self.pending.take() {
            self.send(value, total).await;
        }
    }

    async fn send(&mut self, value: f64, total: Option<f64>) {
        let Some(sink) = &self.sink else {
            return;
        };
        match sink.deliver(value, total).await {
            Ok(()) => self.sent += 1,
            Err(error) => {
                self.delivery_failure.get_or_insert_with(|| {
                    format!("a progress notification could not be delivered: {error}")
                });
            }
        }
        self.last_sent = value;
        self.last_sent_at = Some(Instant::now());
        self.pending = None;
    }
}
