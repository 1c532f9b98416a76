//! Signed, single-use continuation state for the modern `input_required` round.
//!
//! A state string carries a per-process sequence number, its expiry, the tool it was issued
//! for and a SHA-256 digest of the exact original arguments, signed with HMAC-SHA256 under a
//! random 32-byte key that lives only in this process (so a restart invalidates every
//! state). Signing makes the string tamper-evident; the table of open sequence numbers makes
//! it single-use, bounded and purgeable. The string holds no token and no params value. The
//! tag also covers the principal that opened the prompt, so only that principal can redeem it.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use base64_simd::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::{Answer, InputError, complete};
use crate::config::principals::{Share, principal_of};
use crate::exec::ActionArgs;

/// How long a prompt can be answered.
pub const STATE_LIFETIME: Duration = Duration::from_secs(10 * 60);

/// Most prompts one process keeps open at a time.
pub const MAX_PENDING: usize = 256;

/// Format tag of the state string; bumping it retires every older string.
const STATE_PREFIX: &str = "sli1";

/// Mixed into every tag so these tags can never be mistaken for another use of the key.
const TAG_DOMAIN: &[u8] = b"snowluma-mcp/input/continuation/v1\0";

/// Sequence number, expiry (ms), arguments digest; the tool name follows.
const FIXED_PAYLOAD: usize = 8 + 8 + 32;

const KEY_BYTES: usize = 32;

type HmacSha256 = Hmac<Sha256>;

/// A monotonic time source, as time elapsed since some fixed start. Tests inject their own.
pub trait Clock: Send + Sync {
    fn now(&self) -> Duration;
}

/// The real clock: time since this value was created.
#[derive(Debug, Clone, Copy)]
pub struct SystemClock {
    start: Instant,
}

impl SystemClock {
    pub fn new() -> SystemClock {
        SystemClock {
            start: Instant::now(),
        }
    }
}

impl Default for SystemClock {
    fn default() -> SystemClock {
        SystemClock::new()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.start.elapsed()
    }
}

/// A freshly opened prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// The `requestState` string to hand to the client.
    pub state: String,
    /// How long the client has to answer.
    pub expires_in: Duration,
}

/// The process-wide registry of open prompts. Create one per process and share it.
pub struct Continuations {
    /// Keyed once at start-up; cloned per tag so the raw key is not kept around.
    mac: HmacSha256,
    clock: Box<dyn Clock>,
    lifetime: Duration,
    table: Mutex<Table>,
    /// Each principal's share of [`MAX_PENDING`], with two or more principals.
    share: std::sync::OnceLock<Share>,
}

/// Open prompts by sequence number, with their expiry on the [`Clock`].
struct Table {
    next_id: u64,
    open: HashMap<u64, Opened>,
}

/// One open prompt: when it expires, and the principal holding it (for the share).
struct Opened {
    expires_at: Duration,
    principal: String,
}

/// What a verified state string says.
struct Claims {
    id: u64,
    expires_at: Duration,
    args_digest: [u8; 32],
    tool: String,
}

impl fmt::Debug for Continuations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Continuations")
            .field("lifetime", &self.lifetime)
            .field("pending", &self.pending())
            .finish_non_exhaustive()
    }
}

impl Continuations {
    /// The production registry: a fresh random key, the real clock and [`STATE_LIFETIME`].
    pub fn new() -> Result<Continuations, InputError> {
        Continuations::with_clock(Box::new(SystemClock::new()), STATE_LIFETIME)
    }

    /// A registry on `clock` whose prompts live for `lifetime`.
    pub fn with_clock(
        clock: Box<dyn Clock>,
        lifetime: Duration,
    ) -> Result<Continuations, InputError> {
        // A weak key would make states forgeable, so a failing random source is an error
        // here rather than a fallback.
        let mut key = [0u8; KEY_BYTES];
        getrandom::fill(&mut key).map_err(|_| InputError::RandomUnavailable)?;
        let mac = HmacSha256::new_from_slice(&key).map_err(|_| InputError::RandomUnavailable);
        key.fill(0);
        Ok(Continuations {
            mac: mac?,
            clock,
            lifetime,
            table: Mutex::new(Table {
                next_id: 0,
                open: HashMap::new(),
            }),
            share: std::sync::OnceLock::new(),
        })
    }

    /// Limits each principal to its share of [`MAX_PENDING`]. Set once, at start-up, when
    /// two or more principals can use the server.
    pub fn set_principal_share(&self, share: Share) {
        let _ = self.share.set(share);
    }

    /// Prompts issued and neither answered nor expired yet.
    pub fn pending(&self) -> usize {
        let now = self.clock.now();
        let mut table = self.lock();
        table.open.retain(|_, opened| opened.expires_at > now);
        table.open.len()
    }

    /// Opens a prompt for a call of `tool` with exactly `args` and returns its state string.
    /// Expired prompts are purged first; if [`MAX_PENDING`] are still open, this fails and
    /// nothing is evicted.
    /// The state redeems only for `owner` (see `Call::owner`); for anyone else it does not
    /// verify, exactly like a made-up state.
    pub fn open(
        &self,
        owner: &str,
        tool: &str,
        args: &Map<String, Value>,
    ) -> Result<Pending, InputError> {
        let now = self.clock.now();
        let expires_at = now.saturating_add(self.lifetime);
        let id = {
            let mut table = self.lock();
            table.open.retain(|_, opened| opened.expires_at > now);
            if table.open.len() >= MAX_PENDING {
                return Err(InputError::TooManyPending {
                    limit: MAX_PENDING,
                    share: None,
                });
            }
            let principal = principal_of(owner);
            if let Some(share) = self.share.get().copied() {
                let held = table
                    .open
                    .values()
                    .filter(|opened| opened.principal == principal)
                    .count();
                if held >= share.of(MAX_PENDING) {
                    return Err(InputError::TooManyPending {
                        limit: MAX_PENDING,
                        share: Some(share),
                    });
                }
            }
            let id = table.next_id;
            table.next_id = table.next_id.wrapping_add(1);
            table.open.insert(
                id,
                Opened {
                    expires_at,
                    principal: principal.to_string(),
                },
            );
            id
        };
        let claims = Claims {
            id,
            expires_at,
            args_digest: args_digest(args),
            tool: tool.to_string(),
        };
        Ok(Pending {
            state: self.seal(owner, &claims),
            expires_in: self.lifetime,
        })
    }

    /// Redeems `state` for a retried call of `tool` with `args` and validates `answer`.
    ///
    /// The state must verify, belong to this tool and these exact arguments, and be
    /// unexpired; then it is consumed (removed) before the answer is looked at, so a state
    /// runs at most once even when answers race or repeat. A declined, cancelled or invalid
    /// answer therefore also uses the state up: ask again with a fresh [`open`](Self::open).
    pub fn resume(
        &self,
        owner: &str,
        tool: &str,
        args: &Map<String, Value>,
        state: &str,
        answer: Answer,
    ) -> Result<ActionArgs, InputError> {
        self.redeem(owner, tool, args, state)?;
        complete(args, answer)
    }

    /// Swaps a still-valid `state` for a fresh one, for a retry that carries `requestState`
    /// but no response to the prompt (MRTR asks the server to prompt again rather than
    /// fail). The old state is used up, so the swap never adds to the pending count.
    pub fn reopen(
        &self,
        owner: &str,
        tool: &str,
        args: &Map<String, Value>,
        state: &str,
    ) -> Result<Pending, InputError> {
        self.redeem(owner, tool, args, state)?;
        self.open(owner, tool, args)
    }

    /// Verifies `state` against `tool` and `args` and uses it up.
    pub fn redeem(
        &self,
        owner: &str,
        tool: &str,
        args: &Map<String, Value>,
        state: &str,
    ) -> Result<(), InputError> {
        let claims = self.unseal(owner, state).ok_or(InputError::UnknownState)?;
        if claims.tool != tool {
            return Err(InputError::WrongTool {
                issued_for: claims.tool,
                used_with: tool.to_string(),
            });
        }
        if claims.args_digest != args_digest(args) {
            return Err(InputError::WrongArguments);
        }
        self.consume(&claims)
    }

    /// Takes the prompt out of the table, or says why it cannot be.
    fn consume(&self, claims: &Claims) -> Result<(), InputError> {
        let now = self.clock.now();
        let mut table = self.lock();
        table.open.retain(|_, opened| opened.expires_at > now);
        if claims.expires_at <= now {
            return Err(InputError::Expired {
                lifetime_secs: self.lifetime.as_secs(),
            });
        }
        // A genuine, unexpired state whose number is gone was answered already: numbers
        // are never reused within a process and only expired entries are purged.
        match table.open.remove(&claims.id) {
            Some(_) => Ok(()),
            None => Err(InputError::Replayed),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        // The table stays consistent even if a holder panicked; keep serving.
        self.table
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The tag binds the payload to its owner: the owner is not in the state string, so
    /// another principal's state cannot even be recognised as a state.
    fn tag(&self, owner: &str, payload: &[u8]) -> HmacSha256 {
        let mut mac = self.mac.clone();
        mac.update(TAG_DOMAIN);
        mac.update(&(owner.len() as u64).to_be_bytes());
        mac.update(owner.as_bytes());
        mac.update(payload);
        mac
    }

    fn seal(&self, owner: &str, claims: &Claims) -> String {
        let mut payload = Vec::with_capacity(FIXED_PAYLOAD + claims.tool.len());
        payload.extend_from_slice(&claims.id.to_be_bytes());
        payload.extend_from_slice(&millis(claims.expires_at).to_be_bytes());
        payload.extend_from_slice(&claims.args_digest);
        payload.extend_from_slice(claims.tool.as_bytes());
        let tag = self.tag(owner, &payload).finalize().into_bytes();
        format!(
            "{STATE_PREFIX}.{}.{}",
            URL_SAFE_NO_PAD.encode_to_string(&payload),
            URL_SAFE_NO_PAD.encode_to_string(tag)
        )
    }

    /// The claims of a state string this process signed, or `None` for anything else.
    fn unseal(&self, owner: &str, state: &str) -> Option<Claims> {
        let mut parts = state.split('.');
        let (prefix, body, tag) = (parts.next()?, parts.next()?, parts.next()?);
        if prefix != STATE_PREFIX || parts.next().is_some() {
            return None;
        }
        let payload = URL_SAFE_NO_PAD.decode_to_vec(body).ok()?;
        let tag = URL_SAFE_NO_PAD.decode_to_vec(tag).ok()?;
        self.tag(owner, &payload).verify_slice(&tag).ok()?;
        if payload.len() < FIXED_PAYLOAD {
            return None;
        }
        let (id, rest) = payload.split_at(8);
        let (expires_ms, rest) = rest.split_at(8);
        let (digest, tool) = rest.split_at(32);
        Some(Claims {
            id: u64::from_be_bytes(id.try_into().ok()?),
            expires_at: Duration::from_millis(u64::from_be_bytes(expires_ms.try_into().ok()?)),
            args_digest: digest.try_into().ok()?,
            tool: String::from_utf8(tool.to_vec()).ok()?,
        })
    }
}

fn millis(at: Duration) -> u64 {
    u64::try_from(at.as_millis()).unwrap_or(u64::MAX)
}

/// SHA-256 of the arguments in a canonical form (object keys sorted at every level), so a
/// client that re-sends the same arguments with keys in another order still matches.
fn args_digest(args: &Map<String, Value>) -> [u8; 32] {
    let mut hasher = Sha256::new();
    canonical_object(args, &mut hasher);
    hasher.finalize().into()
}

fn canonical_object(object: &Map<String, Value>, hasher: &mut Sha256) {
    let mut entries: Vec<(&String, &Value)> = object.iter().collect();
    entries.sort_by_key(|(key, _)| *key);
    hasher.update(b"{");
    for (i, (key, value)) in entries.into_iter().enumerate() {
        if i > 0 {
            hasher.update(b",");
        }
        canonical(&Value::String(key.clone()), hasher);
        hasher.update(b":");
        canonical(value, hasher);
    }
    hasher.update(b"}");
}

fn canonical(value: &Value, hasher: &mut Sha256) {
    match value {
        Value::Object(object) => canonical_object(object, hasher),
        Value::Array(items) => {
            hasher.update(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    hasher.update(b",");
                }
                canonical(item, hasher);
            }
            hasher.update(b"]");
        }
        // Scalars serialize the same way every time; Value's Display is its compact JSON.
        scalar => hasher.update(scalar.to_string().as_bytes()),
    }
}
