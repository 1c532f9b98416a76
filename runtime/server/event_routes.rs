//! Live events for one MCP connection: its [`OwnerId`] in the process-wide [`EventHub`], and
//! the routing of "resource changed" to the listeners this client set up. The hub calls the
//! notifier for every change; only URIs the client subscribed to (legacy
//! `resources/subscribe`) or listens to (modern `subscriptions/listen`) produce a
//! `notifications/resources/updated`. Dropping the session releases its resources.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use futures::future::BoxFuture;
use rmcp::RoleServer;
use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::{Peer, SubscriptionSink};

use crate::events::{EventHub, EventNotifier, Leases, OwnerId};
use crate::tools::EventRoutes;

/// One session's share of the hub.
pub struct SessionEvents {
    pub hub: EventHub,
    pub owner: OwnerId,
    pub routes: Arc<Routes>,
    /// Present for the stateless sessions of HTTP principals (see `events::Leases`).
    pub leases: Option<Leases>,
}

impl SessionEvents {
    pub fn new(hub: EventHub, session_id: &str) -> SessionEvents {
        SessionEvents {
            hub,
            owner: OwnerId::new(session_id),
            routes: Arc::new(Routes::default()),
            leases: None,
        }
    }

    /// A read of `uri`: renews its lease, or says that the lease ran out.
    pub fn renew(&self, uri: &str) -> Result<(), crate::events::EventsError> {
        match &self.leases {
            Some(leases) => leases.renew(uri),
            None => Ok(()),
        }
    }

    /// Releases the resources whose lease ran out; returns how many.
    pub fn sweep_leases(&self) -> usize {
        match &self.leases {
            Some(leases) => leases.sweep(&self.hub, &self.owner),
            None => 0,
        }
    }

    /// The notifier handed to the hub for this session's resources.
    pub fn notifier(&self) -> Arc<dyn EventNotifier> {
        self.routes.clone()
    }

    /// Whether this session holds the resource `uri` names (canonical form, no query).
    pub fn owns(&self, uri: &str) -> bool {
        self.hub.list(&self.owner).iter().any(|r| r.uri == uri)
    }
}

impl Drop for SessionEvents {
    /// The MCP connection ended: its resources and buffers go with it, and the last release
    /// closes the shared socket.
    fn drop(&mut self) {
        let released = self.hub.release_owner(&self.owner);
        if released > 0 {
            tracing::info!(released, "released the event resources of a closed session");
        }
    }
}

/// Who wants to hear about which URI in this session.
#[derive(Default)]
pub struct Routes {
    state: Mutex<RouteState>,
}

#[derive(Default)]
struct RouteState {
    /// The legacy client's peer, kept from its `resources/subscribe`.
    peer: Option<Peer<RoleServer>>,
    /// URIs with a legacy `resources/subscribe`.
    legacy: HashSet<String>,
    /// Open `subscriptions/listen` streams by a local key: their URIs and sink.
    listeners: HashMap<u64, (Vec<String>, SubscriptionSink)>,
    next_key: u64,
}

impl Routes {
    fn lock(&self) -> MutexGuard<'_, RouteState> {
        // Nothing panics under this lock; recover rather than wedge notifications.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn subscribe_legacy(&self, uri: &str, peer: Peer<RoleServer>) {
        let mut state = self.lock();
        state.peer = Some(peer);
        state.legacy.insert(uri.to_string());
    }

    /// Forgets a legacy subscription; true when there was one.
    pub fn unsubscribe_legacy(&self, uri: &str) -> bool {
        self.lock().legacy.remove(uri)
    }

    /// Registers a listen stream; the guard unregisters it however `listen` ends.
    pub fn listen(self: &Arc<Self>, uris: Vec<String>, sink: SubscriptionSink) -> ListenGuard {
        let mut state = self.lock();
        state.next_key += 1;
        let key = state.next_key;
        state.listeners.insert(key, (uris, sink));
        ListenGuard {
            routes: self.clone(),
            key,
        }
    }
}

pub struct ListenGuard {
    routes: Arc<Routes>,
    key: u64,
}

impl Drop for ListenGuard {
    fn drop(&mut self) {
        self.routes.lock().listeners.remove(&self.key);
    }
}

impl EventRoutes for Routes {
    fn forget(&self, uri: &str) {
        self.unsubscribe_legacy(uri);
    }
}

impl EventNotifier for Routes {
    fn updated(&self, uri: &str) -> BoxFuture<'static, Result<(), String>> {
        let (legacy, sinks) = {
            let state = self.lock();
            let legacy = state
                .legacy
                .contains(uri)
                .then(|| state.peer.clone())
                .flatten();
            let sinks: Vec<SubscriptionSink> = state
                .listeners
                .values()
                .filter(|(uris, _)| uris.iter().any(|u| u == uri))
                .map(|(_, sink)| sink.clone())
                .collect();
            (legacy, sinks)
        };
        let uri = uri.to_string();
        Box::pin(async move {
            let mut failures = Vec::new();
            if let Some(peer) = legacy
                && let Err(error) = peer
                    .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri.clone()))
                    .await
            {
                failures.push(error.to_string());
            }
            for sink in sinks {
                if let Err(error) = sink.notify_resource_updated(uri.clone()).await {
                    failures.push(error.to_string());
                }
            }
            if failures.is_empty() {
                Ok(())
            } else {
                Err(failures.join("; "))
            }
        })
    }
}
