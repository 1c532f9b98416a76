//! `notifications/progress` for stream calls: only when the caller sent a progress token, at
//! most one per 250 ms, strictly increasing values, the last pending value flushed before a
//! successful response, and nothing after completion or cancellation. A failed delivery is
//! remembered and reported in the call's diagnostics.

use std::time::{Duration, Instant};

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};

const MIN_INTERVAL: Duration = Duration::from_millis(250);

pub struct Progress {
    target: Option<(Peer<RoleServer>, ProgressToken)>,
    last_sent_at: Option<Instant>,
    last_sent: f64,
    pending: Option<(f64, Option<f64>)>,
    pub delivery_failure: Option<String>,
    /// Notifications sent, for diagnostics.
    pub sent: u64,
}

impl Progress {
    pub fn new(peer: Peer<RoleServer>, token: Option<ProgressToken>) -> Self {
        Progress {
            target: token.map(|t| (peer, t)),
            last_sent_at: None,
            last_sent: 0.0,
            pending: None,
            delivery_failure: None,
            sent: 0,
        }
    }

    /// A progress reporter that never sends (no token).
    pub fn silent() -> Self {
        Progress {
            target: None,
            last_sent_at: None,
            last_sent: 0.0,
            pending: None,
            delivery_failure: None,
            sent: 0,
        }
    }

    /// Records `value` (and `total` when a positive size is known); sends it now if the rate
    /// allows, else keeps it pending.
    pub async fn update(&mut self, value: f64, total: Option<f64>) {
        if self.target.is_none() || value <= self.last_sent {
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
        let Some((peer, token)) = &self.target else {
            return;
        };
        let mut param = ProgressNotificationParam::new(token.clone(), value);
        if let Some(total) = total {
            param = param.with_total(total);
        }
        match peer.notify_progress(param).await {
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
