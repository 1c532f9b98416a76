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
use std::time::Duration;

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

/// Who opened each live legacy session.
#[derive(Default)]
pub struct SessionOwners {
    owners: Mutex<HashMap<String, Principal>>,
}

impl SessionOwners {
    pub fn record(&self, session: &str, principal: Principal) {
        self.lock().insert(session.to_string(), principal);
    }

    /// Whether `principal` may use `session`: it opened it, or the id is unknown here (rmcp
    /// then answers for an unknown session).
    pub fn allows(&self, session: &str, principal: &Principal) -> bool {
        self.lock()
            .get(session)
            .is_none_or(|owner| owner == principal)
    }

    /// Forgets sessions that ended (`live` says which still exist).
    pub fn retain(&self, live: impl Fn(&str) -> bool) {
        self.lock().retain(|id, _| live(id));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Principal>> {
        self.owners.lock().unwrap_or_else(PoisonError::into_inner)
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
