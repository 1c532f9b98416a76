//! Open connections per peer address (`SNOWLUMA_MCP_HTTP_MAX_CONNS_PER_PEER`). The listener
//! takes a connection slot at `accept`, before any Host, Origin or token check can run, so
//! without a per-peer bound one peer (authenticated or not) could hold every slot.
//!
//! At its bound a peer's new connection is still taken when one of its connections has no
//! request in progress: that oldest idle one is closed instead (clients such as the official
//! conformance runner leave keep-alive connections open and never reuse them). Only a peer
//! whose every connection is busy is refused, and a peer never holds more than twice its
//! bound while the closed ones finish.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio_util::sync::CancellationToken;

pub struct PeerLimits {
    max_per_peer: usize,
    open: Mutex<HashMap<IpAddr, Vec<Connection>>>,
    next_id: AtomicU64,
}

/// What the limits know of one open connection.
struct Connection {
    id: u64,
    busy: Arc<AtomicUsize>,
    close: CancellationToken,
}

/// One open connection of a peer; dropping it gives the slot back.
pub struct PeerSlot {
    limits: Arc<PeerLimits>,
    peer: IpAddr,
    id: u64,
    /// Requests of this connection in progress (their responses, streams included, not ended).
    pub busy: Arc<AtomicUsize>,
    /// Fired when the limits want this idle connection closed.
    pub close: CancellationToken,
}

/// Counts one request of a connection until dropped (with its response body).
pub struct Busy(Arc<AtomicUsize>);

impl Busy {
    pub fn new(counter: &Arc<AtomicUsize>) -> Busy {
        counter.fetch_add(1, Ordering::SeqCst);
        Busy(counter.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl PeerLimits {
    pub fn new(max_per_peer: usize) -> Arc<PeerLimits> {
        Arc::new(PeerLimits {
            max_per_peer,
            open: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
        })
    }

    /// A slot for one more connection from `peer`; at the bound, only by closing the peer's
    /// oldest idle connection. `None` when every connection of the peer is busy.
    pub fn admit(self: &Arc<Self>, peer: IpAddr) -> Option<PeerSlot> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let connections = open.entry(peer).or_default();
        let live = connections
            .iter()
            .filter(|c| !c.close.is_cancelled())
            .count();
        if live >= self.max_per_peer {
            if connections.len() >= 2 * self.max_per_peer {
                return None;
            }
            let idle = connections
                .iter()
                .find(|c| !c.close.is_cancelled() && c.busy.load(Ordering::SeqCst) == 0)?;
            idle.close.cancel();
        }
        let slot = PeerSlot {
            limits: self.clone(),
            peer,
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            busy: Arc::new(AtomicUsize::new(0)),
            close: CancellationToken::new(),
        };
        connections.push(Connection {
            id: slot.id,
            busy: slot.busy.clone(),
            close: slot.close.clone(),
        });
        Some(slot)
    }
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut open = self
            .limits
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(connections) = open.get_mut(&self.peer) {
            connections.retain(|c| c.id != self.id);
            if connections.is_empty() {
                open.remove(&self.peer);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_peers_are_bounded_and_idle_connections_make_room() {
        let limits = PeerLimits::new(2);
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "127.0.0.2".parse().unwrap();
        let first = limits.admit(a).unwrap();
        let second = limits.admit(a).unwrap();
        let _busy = (Busy::new(&first.busy), Busy::new(&second.busy));
        assert!(limits.admit(a).is_none(), "every connection is busy");
        assert!(limits.admit(b).is_some(), "another peer is not affected");
        drop(_busy);
        // Idle now: the oldest is asked to close and the new one is taken.
        let third = limits.admit(a).unwrap();
        assert!(first.close.is_cancelled() && !second.close.is_cancelled());
        let _busy = (Busy::new(&second.busy), Busy::new(&third.busy));
        assert!(limits.admit(a).is_none());
        drop(first);
        drop(_busy);
        assert!(limits.admit(a).is_some());
    }
}
