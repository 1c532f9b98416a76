//! Where paged results wait for `read_more`: each held once, bounded per principal and in
//! total, reached through signed handles.
//!
//! A handle names a held result, the element the next page starts at and its own expiry,
//! signed with HMAC-SHA256 under a random key that lives only in this process; the principal
//! the handle was issued to is part of the signed text but not of the handle. A handle that is
//! altered, made up, from before a restart or used by another principal therefore fails the
//! same check and is refused the same way; only a genuine handle can say "expired".

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use base64_simd::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use super::Held;
use super::handle::{PAYLOAD, PREFIX, TAG};
use crate::input::Clock;

/// Mixed into every tag so these tags can never be mistaken for another use of the key.
const TAG_DOMAIN: &[u8] = b"snowluma-mcp/paging/continuation/v1\0";

type HmacSha256 = Hmac<Sha256>;

/// How much the store holds.
#[derive(Debug, Clone, Copy)]
pub struct StoreLimits {
    /// Most held results per principal; the oldest goes first.
    pub per_principal: usize,
    /// Most bytes held in total; the oldest goes first.
    pub total_bytes: usize,
}

impl Default for StoreLimits {
    fn default() -> Self {
        StoreLimits {
            per_principal: 64,
            total_bytes: 64 << 20,
        }
    }
}

/// Why a handle cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenError {
    /// Not a handle this process issued to this principal (malformed, altered, foreign).
    Unknown,
    /// A genuine handle whose lifetime ran out, or whose result was evicted.
    Expired,
}

/// The process-wide store of held results.
pub struct ContinuationStore {
    mac: HmacSha256,
    clock: Box<dyn Clock>,
    lifetime: Duration,
    limits: StoreLimits,
    table: Mutex<Table>,
}

struct Table {
    next_id: u64,
    /// By id, which grows with time: the first entry is the oldest.
    held: BTreeMap<u64, Entry>,
    bytes: usize,
}

struct Entry {
    principal: String,
    result: Arc<Held>,
    expires_at: Duration,
    bytes: usize,
}

impl std::fmt::Debug for ContinuationStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContinuationStore")
            .field("lifetime", &self.lifetime)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl ContinuationStore {
    /// A store on `clock` whose handles live for `lifetime`. Fails only when the OS random
    /// source does (a weak key would make handles forgeable).
    pub fn new(
        clock: Box<dyn Clock>,
        lifetime: Duration,
        limits: StoreLimits,
    ) -> Result<ContinuationStore, String> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|_| "the OS random source failed".to_string())?;
        let mac = HmacSha256::new_from_slice(&key).map_err(|e| e.to_string());
        key.fill(0);
        Ok(ContinuationStore {
            mac: mac?,
            clock,
            lifetime,
            limits,
            table: Mutex::new(Table {
                next_id: 0,
                held: BTreeMap::new(),
                bytes: 0,
            }),
        })
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        self.table
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Holds `result` for `principal` and returns its id; `None` when it alone is larger than
    /// the total bound. Expired results go first, then the principal's oldest beyond its
    /// limit, then the oldest of anyone's beyond the total.
    pub fn hold(&self, principal: &str, result: Arc<Held>) -> Option<u64> {
        let bytes = result.bytes();
        if bytes > self.limits.total_bytes {
            return None;
        }
        let now = self.clock.now();
        let mut table = self.table();
        let expired: Vec<u64> = table
            .held
            .iter()
            .filter(|(_, entry)| entry.expires_at <= now)
            .map(|(id, _)| *id)
            .collect();
        for id in expired {
            table.remove(id);
        }
        let own: Vec<u64> = table
            .held
            .iter()
            .filter(|(_, entry)| entry.principal == principal)
            .map(|(id, _)| *id)
            .collect();
        let surplus = (own.len() + 1).saturating_sub(self.limits.per_principal);
        for id in own.into_iter().take(surplus) {
            table.remove(id);
        }
        while table.bytes + bytes > self.limits.total_bytes {
            let Some(oldest) = table.held.keys().next().copied() else {
                break;
            };
            table.remove(oldest);
        }
        let id = table.next_id;
        table.next_id += 1;
        table.bytes += bytes;
        table.held.insert(
            id,
            Entry {
                principal: principal.to_string(),
                result,
                expires_at: now + self.lifetime,
                bytes,
            },
        );
        Some(id)
    }

    /// Drops every result held for `principal` (a legacy HTTP session that ended); returns
    /// how many. Their handles then answer like expired ones.
    pub fn release_owner(&self, principal: &str) -> usize {
        let mut table = self.table();
        let owned: Vec<u64> = table
            .held
            .iter()
            .filter(|(_, entry)| entry.principal == principal)
            .map(|(id, _)| *id)
            .collect();
        for id in &owned {
            table.remove(*id);
        }
        owned.len()
    }

    /// A handle for `principal` to read result `id` from element `from`, living the store's
    /// lifetime from now (and keeping the result that long).
    pub fn handle(&self, principal: &str, id: u64, from: usize) -> String {
        let expires_at = self.clock.now() + self.lifetime;
        if let Some(entry) = self.table().held.get_mut(&id) {
            entry.expires_at = entry.expires_at.max(expires_at);
        }
        let mut payload = Vec::with_capacity(PAYLOAD + TAG);
        payload.extend_from_slice(&id.to_be_bytes());
        payload.extend_from_slice(&(from as u64).to_be_bytes());
        payload.extend_from_slice(&(expires_at.as_millis() as u64).to_be_bytes());
        let tag = self.tag(principal, &payload);
        payload.extend_from_slice(&tag);
        format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode_to_string(&payload))
    }

    /// The held result and the element a handle continues at.
    pub fn open(
        &self,
        principal: &str,
        handle: &str,
    ) -> Result<(u64, Arc<Held>, usize), OpenError> {
        let bytes = handle
            .strip_prefix(PREFIX)
            .and_then(|rest| URL_SAFE_NO_PAD.decode_to_vec(rest).ok())
            .filter(|bytes| bytes.len() == PAYLOAD + TAG)
            .ok_or(OpenError::Unknown)?;
        let (payload, tag) = bytes.split_at(PAYLOAD);
        let mut mac = self.mac.clone();
        mac.update(TAG_DOMAIN);
        mac.update(principal.as_bytes());
        mac.update(&[0]);
        mac.update(payload);
        mac.verify_slice(tag).map_err(|_| OpenError::Unknown)?;
        let field = |at: usize| {
            let mut word = [0u8; 8];
            word.copy_from_slice(&payload[at..at + 8]);
            u64::from_be_bytes(word)
        };
        let (id, from, expires_ms) = (field(0), field(8), field(16));
        if self.clock.now().as_millis() as u64 >= expires_ms {
            return Err(OpenError::Expired);
        }
        let table = self.table();
        let entry = table.held.get(&id).ok_or(OpenError::Expired)?;
        let from = usize::try_from(from).map_err(|_| OpenError::Unknown)?;
        Ok((id, entry.result.clone(), from))
    }

    fn tag(&self, principal: &str, payload: &[u8]) -> [u8; TAG] {
        let mut mac = self.mac.clone();
        mac.update(TAG_DOMAIN);
        mac.update(principal.as_bytes());
        mac.update(&[0]);
        mac.update(payload);
        mac.finalize().into_bytes().into()
    }

    /// How many results are held (tests and benchmarks).
    pub fn held(&self) -> usize {
        self.table().held.len()
    }
}

impl Table {
    fn remove(&mut self, id: u64) {
        if let Some(entry) = self.held.remove(&id) {
            self.bytes -= entry.bytes;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use serde_json::json;

    use super::*;
    use crate::outcome::ToolReply;

    #[derive(Clone, Default)]
    struct TestClock(Arc<AtomicU64>);

    impl Clock for TestClock {
        fn now(&self) -> Duration {
            Duration::from_millis(self.0.load(Ordering::SeqCst))
        }
    }

    fn held(n: usize) -> Arc<Held> {
        Arc::new(Held::split(ToolReply::ok(json!({ "data": vec![1; n] }))))
    }

    fn store(clock: &TestClock, limits: StoreLimits) -> ContinuationStore {
        ContinuationStore::new(Box::new(clock.clone()), Duration::from_secs(600), limits).unwrap()
    }

    #[test]
    fn handles_have_one_length_and_open_for_their_principal_only() {
        let clock = TestClock::default();
        let store = store(&clock, StoreLimits::default());
        let id = store.hold("session-1", held(10)).unwrap();
        let handle = store.handle("session-1", id, 4);
        assert_eq!(handle.len(), super::super::TOKEN_CHARS);
        let (_, result, from) = store.open("session-1", &handle).unwrap();
        assert_eq!((result.total(), from), (10, 4));
        assert_eq!(
            store.open("session-2", &handle).unwrap_err(),
            OpenError::Unknown
        );
        let mut altered = handle.clone().into_bytes();
        let last = altered.len() - 3;
        altered[last] = if altered[last] == b'A' { b'B' } else { b'A' };
        let altered = String::from_utf8(altered).unwrap();
        assert_eq!(
            store.open("session-1", &altered).unwrap_err(),
            OpenError::Unknown
        );
        assert_eq!(
            store.open("session-1", "slp1.nonsense").unwrap_err(),
            OpenError::Unknown
        );
    }

    #[test]
    fn an_ended_sessions_results_are_released() {
        let clock = TestClock::default();
        let store = store(&clock, StoreLimits::default());
        let ended = store.hold("alice/session-1", held(10)).unwrap();
        let kept = store.hold("alice/session-2", held(10)).unwrap();
        let handle = store.handle("alice/session-1", ended, 4);
        let other = store.handle("alice/session-2", kept, 4);
        assert_eq!(store.release_owner("alice/session-1"), 1);
        assert_eq!(
            store.open("alice/session-1", &handle).unwrap_err(),
            OpenError::Expired
        );
        assert!(store.open("alice/session-2", &other).is_ok());
    }

    #[test]
    fn expiry_and_eviction_say_expired() {
        let clock = TestClock::default();
        let store = store(
            &clock,
            StoreLimits {
                per_principal: 2,
                total_bytes: 64 << 20,
            },
        );
        let first = store.hold("p", held(3)).unwrap();
        let first_handle = store.handle("p", first, 1);
        let second = store.hold("p", held(3)).unwrap();
        let _third = store.hold("p", held(3)).unwrap();
        assert_eq!(
            store.open("p", &first_handle).unwrap_err(),
            OpenError::Expired,
            "evicted"
        );
        let second_handle = store.handle("p", second, 1);
        assert!(store.open("p", &second_handle).is_ok());
        clock.0.store(600_000, Ordering::SeqCst);
        assert_eq!(
            store.open("p", &second_handle).unwrap_err(),
            OpenError::Expired
        );
        // Another principal's results are not evicted by p's.
        let other = store.hold("q", held(3)).unwrap();
        let other_handle = store.handle("q", other, 0);
        for _ in 0..4 {
            store.hold("p", held(3));
        }
        assert!(store.open("q", &other_handle).is_ok());
    }

    #[test]
    fn the_total_bound_evicts_the_oldest() {
        let clock = TestClock::default();
        let one = held(1000).bytes();
        let store = store(
            &clock,
            StoreLimits {
                per_principal: 64,
                total_bytes: one * 2,
            },
        );
        let first = store.hold("a", held(1000)).unwrap();
        let first_handle = store.handle("a", first, 1);
        store.hold("b", held(1000)).unwrap();
        store.hold("c", held(1000)).unwrap();
        assert_eq!(store.held(), 2);
        assert_eq!(
            store.open("a", &first_handle).unwrap_err(),
            OpenError::Expired
        );
        assert!(
            store.hold("d", held(5000)).is_none(),
            "larger than the whole bound"
        );
    }
}
