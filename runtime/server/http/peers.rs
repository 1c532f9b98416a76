//! Open connections per peer address (`SNOWLUMA_MCP_HTTP_MAX_CONNS_PER_PEER`). The listener
//! takes a connection slot at `accept`, before any Host, Origin or token check can run, so
//! without a per-peer bound one peer (authenticated or not) could hold every slot.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};

pub struct PeerLimits {
    max_per_peer: usize,
    open: Mutex<HashMap<IpAddr, usize>>,
}

/// One open connection of a peer; dropping it gives the slot back.
pub struct PeerSlot {
    limits: Arc<PeerLimits>,
    peer: IpAddr,
}

impl PeerLimits {
    pub fn new(max_per_peer: usize) -> Arc<PeerLimits> {
        Arc::new(PeerLimits {
            max_per_peer,
            open: Mutex::new(HashMap::new()),
        })
    }

    /// A slot for one more connection from `peer`, or `None` when it has
    /// `max_per_peer` open.
    pub fn admit(self: &Arc<Self>, peer: IpAddr) -> Option<PeerSlot> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let count = open.entry(peer).or_insert(0);
        if *count >= self.max_per_peer {
            return None;
        }
        *count += 1;
        Some(PeerSlot {
            limits: self.clone(),
            peer,
        })
    }
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut open = self
            .limits
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = open.get_mut(&self.peer) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.peer);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_gets_its_bound_and_slots_come_back() {
        let limits = PeerLimits::new(2);
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "127.0.0.2".parse().unwrap();
        let first = limits.admit(a).unwrap();
        let _second = limits.admit(a).unwrap();
        assert!(limits.admit(a).is_none());
        assert!(limits.admit(b).is_some(), "another peer is not affected");
        drop(first);
        assert!(limits.admit(a).is_some());
    }
}
