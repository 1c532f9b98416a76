//! Leases on the event resources of 2026-07-28 (stateless) HTTP clients. Such a client has no
//! session that could end, so a client that goes away would keep its resources (and their
//! buffers and the event socket) forever. Each resource instead lives while it is read: every
//! `read_events` or `resources/read` renews its lease, and a sweep releases resources left
//! unread for the lease (`SNOWLUMA_MCP_EVENT_LEASE_SECS`). A later read of one says the lease
//! ran out rather than that it never existed.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::{EventHub, EventsError, OwnerId};

/// How many released URIs are remembered for the "lease ran out" message.
const REMEMBERED: usize = 256;

pub struct Leases {
    lifetime: Duration,
    state: Mutex<LeaseState>,
}

#[derive(Default)]
struct LeaseState {
    /// When each held resource was last read (or first seen by a sweep).
    renewed: HashMap<String, Instant>,
    /// Resources whose lease ran out, oldest first.
    expired: VecDeque<String>,
}

/// The resource part of an event URI (a read may carry `?after=`).
fn canonical(uri: &str) -> &str {
    uri.split('?').next().unwrap_or_default()
}

impl Leases {
    pub fn new(lifetime: Duration) -> Leases {
        Leases {
            lifetime,
            state: Mutex::new(LeaseState::default()),
        }
    }

    /// How often a sweep runs: often enough that a resource outlives its lease by at most a
    /// quarter of it.
    pub fn sweep_every(&self) -> Duration {
        (self.lifetime / 4).clamp(Duration::from_millis(50), Duration::from_secs(30))
    }

    fn lock(&self) -> MutexGuard<'_, LeaseState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Renews `uri`'s lease, or says that it ran out.
    pub fn renew(&self, uri: &str) -> Result<(), EventsError> {
        let uri = canonical(uri);
        let mut state = self.lock();
        if state.expired.iter().any(|gone| gone == uri) {
            return Err(EventsError::LeaseExpired {
                uri: uri.to_string(),
                lease_secs: self.lifetime.as_secs(),
            });
        }
        state.renewed.insert(uri.to_string(), Instant::now());
        Ok(())
    }

    /// Releases `owner`'s resources whose lease ran out; returns how many.
    pub fn sweep(&self, hub: &EventHub, owner: &OwnerId) -> usize {
        let now = Instant::now();
        let held: Vec<String> = hub.list(owner).into_iter().map(|r| r.uri).collect();
        let mut due = Vec::new();
        {
            let mut state = self.lock();
            // Resources released otherwise (unsubscribe_events) need no lease any more.
            state.renewed.retain(|uri, _| held.contains(uri));
            for uri in held {
                let renewed = *state.renewed.entry(uri.clone()).or_insert(now);
                if now.duration_since(renewed) >= self.lifetime {
                    state.renewed.remove(&uri);
                    if state.expired.len() == REMEMBERED {
                        state.expired.pop_front();
                    }
                    state.expired.push_back(uri.clone());
                    due.push(uri);
                }
            }
        }
        for uri in &due {
            let _ = hub.release(owner, uri);
        }
        due.len()
    }
}
