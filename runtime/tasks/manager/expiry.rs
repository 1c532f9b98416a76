//! Expiry: finished records past the retention are forgotten and deleted by a periodic
//! sweep that holds the manager weakly and ends with it.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{SWEEP_EVERY, TaskManager};
use crate::tasks::record::TaskSummary;

impl TaskManager {
    /// Starts the periodic expiry sweep once (nothing to sweep when records are kept
    /// forever). It holds the manager weakly and ends with it.
    pub(super) fn ensure_sweeper(self: &Arc<Self>, runtime: &tokio::runtime::Handle) {
        let Some(retention) = self.settings.retention else {
            return;
        };
        if self.sweeping.swap(true, Ordering::Relaxed) {
            return;
        }
        let every = (retention / 2).clamp(Duration::from_secs(1), SWEEP_EVERY);
        let manager = Arc::downgrade(self);
        runtime.spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            // The first tick is immediate; start-up has just swept.
            ticks.tick().await;
            loop {
                ticks.tick().await;
                let Some(manager) = manager.upgrade() else {
                    return;
                };
                manager.sweep().await;
            }
        });
    }

    /// Forgets finished tasks past the retention and deletes their records on the blocking
    /// pool.
    pub(super) async fn sweep(&self) {
        let now = chrono::Utc::now();
        let expired_ids: Vec<String> = {
            let mut index = self.lock();
            let ids: Vec<String> = index
                .by_seq
                .values()
                .filter(|summary| expired(self.settings.retention, summary, now))
                .map(|summary| summary.id.clone())
                .collect();
            for id in &ids {
                index.forget(id);
            }
            ids
        };
        if expired_ids.is_empty() {
            return;
        }
        let removed = self
            .on_disk(move |store| {
                expired_ids
                    .iter()
                    .try_for_each(|id| store.remove(id))
                    .map(|()| expired_ids.len())
            })
            .await;
        match removed {
            Ok(count) => tracing::info!(count, "removed expired task records"),
            Err(err) => tracing::warn!(error = %err, "could not remove an expired task record"),
        }
    }
}

/// A finished task whose final update is older than the retention. Working tasks never
/// expire; neither does anything when the retention is off.
pub(super) fn expired(
    retention: Option<Duration>,
    summary: &TaskSummary,
    now: chrono::DateTime<chrono::Utc>,
) -> bool {
    let (Some(retention), true) = (retention, summary.state.is_terminal()) else {
        return false;
    };
    let (Some(updated), Ok(retention)) =
        (summary.updated(), chrono::TimeDelta::from_std(retention))
    else {
        return false;
    };
    updated + retention <= now
}
