//! Principals on the HTTP transport: which principal a request is, which principal owns each
//! legacy session, and one stateless session per principal for what 2026-07-28 requests keep
//! between requests (event resources). A request naming a session another principal opened
//! is answered exactly like one naming no live session, so session ids cannot be probed.
//!
//! rmcp builds a handler through a factory that takes no arguments, inside the future of the
//! request that needs it (`initialize` for a legacy session, every stateless POST). The gate
//! runs that future inside [`REQUEST_PRINCIPAL`]'s scope, so the factory can bind the new
//! handler, and the session it owns, to the requesting principal.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::config::principals::Principal;
use crate::server::{Session, Shared};

tokio::task_local! {
    /// The principal of the request being handled by the gate.
    static REQUEST_PRINCIPAL: Principal;
}

/// Runs `work` as `principal`'s request.
pub async fn as_principal<F: Future>(principal: Principal, work: F) -> F::Output {
    REQUEST_PRINCIPAL.scope(principal, work).await
}

/// The principal of the request being handled; `default` outside a request.
pub fn current() -> Principal {
    REQUEST_PRINCIPAL
        .try_with(Clone::clone)
        .unwrap_or_else(|_| Principal::default_principal())
}

/// Who opened each live legacy session, and how it is used: when it was last used and how
/// many of its requests (open streams included) are in progress. At the session cap the
/// least recently used idle session of the principal with the most sessions makes room.
#[derive(Default)]
pub struct SessionOwners {
    sessions: Arc<Mutex<HashMap<String, Usage>>>,
}

struct Usage {
    principal: Principal,
    last_used: Instant,
    active: usize,
}

/// One request of a session in progress; dropping it marks the session used and, when it was
/// the last, idle.
pub struct InUse {
    sessions: Arc<Mutex<HashMap<String, Usage>>>,
    id: String,
}

impl Drop for InUse {
    fn drop(&mut self) {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(usage) = sessions.get_mut(&self.id) {
            usage.active = usage.active.saturating_sub(1);
            usage.last_used = Instant::now();
        }
    }
}

impl SessionOwners {
    pub fn record(&self, session: &str, principal: Principal) {
        self.lock().insert(
            session.to_string(),
            Usage {
                principal,
                last_used: Instant::now(),
                active: 0,
            },
        );
    }

    /// Whether `principal` may use `session`: it opened it, or the id is unknown here (rmcp
    /// then answers for an unknown session).
    pub fn allows(&self, session: &str, principal: &Principal) -> bool {
        self.lock()
            .get(session)
            .is_none_or(|usage| usage.principal == *principal)
    }

    /// Marks a request of `session` in progress until the returned guard drops.
    pub fn begin_use(&self, session: &str) -> Option<InUse> {
        let mut sessions = self.lock();
        let usage = sessions.get_mut(session)?;
        usage.active += 1;
        usage.last_used = Instant::now();
        Some(InUse {
            sessions: self.sessions.clone(),
            id: session.to_string(),
        })
    }

    /// Forgets sessions that ended (`live` says which still exist).
    pub fn retain(&self, live: impl Fn(&str) -> bool) {
        self.lock().retain(|id, _| live(id));
    }

    /// The session to end to make room: of the principals with an idle session (no request
    /// in progress, no open stream), the one holding the most sessions; its least recently
    /// used idle one. `None` when every session is busy.
    pub fn idle_victim(&self) -> Option<(String, Principal)> {
        let sessions = self.lock();
        let mut held: HashMap<&Principal, usize> = HashMap::new();
        for usage in sessions.values() {
            *held.entry(&usage.principal).or_default() += 1;
        }
        sessions
            .iter()
            .filter(|(_, usage)| usage.active == 0)
            .max_by(|(_, a), (_, b)| {
                held[&a.principal]
                    .cmp(&held[&b.principal])
                    .then(b.last_used.cmp(&a.last_used))
            })
            .map(|(id, usage)| (id.clone(), usage.principal.clone()))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Usage>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One stateless session per principal, made at its first 2026-07-28 request.
/// Their event resources hold leases (`SNOWLUMA_MCP_EVENT_LEASE_SECS`): no session end
/// would ever release them.
pub struct StatelessSessions {
    shared: Arc<Shared>,
    lease: Duration,
    sessions: Mutex<HashMap<Principal, Arc<Session>>>,
}

impl StatelessSessions {
    pub fn new(shared: Arc<Shared>, lease: Duration) -> StatelessSessions {
        StatelessSessions {
            shared,
            lease,
            sessions: Mutex::new(HashMap::new()),
        }
    }

    pub fn of(&self, principal: &Principal) -> Arc<Session> {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(session) = sessions.get(principal) {
            return session.clone();
        }
        let session = Arc::new(Session::leased(&self.shared, principal, self.lease));
        sweep_leases(&session);
        sessions.insert(principal.clone(), session.clone());
        session
    }
}

/// Sweeps `session`'s leases until it is dropped (at shutdown).
fn sweep_leases(session: &Arc<Session>) {
    let Some(every) = session.lease_sweep_every() else {
        return;
    };
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let session = Arc::downgrade(session);
    runtime.spawn(async move {
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let Some(session) = session.upgrade() else {
                break;
            };
            let released = session.sweep_leases();
            if released > 0 {
                tracing::info!(
                    principal = %session.principal,
                    released,
                    "released event resources whose lease ran out (SNOWLUMA_MCP_EVENT_LEASE_SECS)"
                );
            }
        }
    });
}
