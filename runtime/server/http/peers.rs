//! Open connections per peer address (`SNOWLUMA_MCP_HTTP_MAX_CONNS_PER_PEER`). The listener
//! takes a connection slot at `accept`, before any Host, Origin or token check can run, so
//! without a per-peer bound one peer (authenticated or not) could hold every slot.
//!
//! At its bound a peer's new connection is still taken when one of its connections has no
//! request in progress: that oldest idle one is closed instead. Failing that, the oldest
//! connection that only carries a standalone `GET` event stream is closed: the protocol lets a
//! server end such a stream at any time and a client that still listens opens it again, while
//! clients that go away without closing them (the official conformance runner leaves one per
//! failed scenario, about 25 in one run) would otherwise pin every slot of their address. Only
//! a peer whose every connection is answering a request is refused, and a peer never holds
//! more than twice its bound while the closed ones finish.

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
    listening: Arc<AtomicUsize>,
    close: CancellationToken,
}

impl Connection {
    /// Which connection goes first at the bound: an idle one (0), then one that only carries
    /// event streams (1); `None` for one answering a request or already closing.
    fn closable(&self) -> Option<u8> {
        if self.close.is_cancelled() || self.busy.load(Ordering::SeqCst) > 0 {
            return None;
        }
        Some(u8::from(self.listening.load(Ordering::SeqCst) > 0))
    }
}

/// One open connection of a peer; dropping it gives the slot back.
pub struct PeerSlot {
    limits: Arc<PeerLimits>,
    peer: IpAddr,
    id: u64,
    /// Requests of this connection in progress (their responses not ended), standalone `GET`
    /// event streams excepted.
    pub busy: Arc<AtomicUsize>,
    /// Standalone `GET` event streams of this connection still open.
    pub listening: Arc<AtomicUsize>,
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
            // The oldest of the first kind (`min_by_key` keeps the first of equals).
            let closable = connections
                .iter()
                .filter_map(|c| Some((c.closable()?, c)))
                .min_by_key(|(kind, _)| *kind)?;
            closable.1.close.cancel();
        }
        let slot = PeerSlot {
            limits: self.clone(),
            peer,
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            busy: Arc::new(AtomicUsize::new(0)),
            listening: Arc::new(AtomicUsize::new(0)),
            close: CancellationToken::new(),
        };
        connections.push(Connection {
            id: slot.id,
            busy: slot.busy.clone(),
            listening: slot.listening.clone(),
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

    #[test]
    fn event_streams_make_room_after_idle_connections() {
        let limits = PeerLimits::new(3);
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let streaming = limits.admit(a).unwrap();
        let answering = limits.admit(a).unwrap();
        let idle = limits.admit(a).unwrap();
        let _listening = Busy::new(&streaming.listening);
        let _busy = Busy::new(&answering.busy);
        // The idle one goes first, although the streaming one is older.
        let fourth = limits.admit(a).unwrap();
        assert!(idle.close.is_cancelled() && !streaming.close.is_cancelled());
        let _busy_too = Busy::new(&fourth.busy);
        // Then the one that only carries an event stream; never one answering a request.
        let _fifth = limits.admit(a).unwrap();
        assert!(streaming.close.is_cancelled() && !answering.close.is_cancelled());
        assert!(!fourth.close.is_cancelled());
    }
}
