//! The process-wide hub: resources, their owners and buffers, and the shared connection.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use super::buffer::EventBuffer;
use super::connection::{CONNECT_TIMEOUT, ConnectionTask, unix_seconds};
use super::filter::EventFilter;
use super::page::{read_page, split_after};
use super::recovery::MessageHistory;
use super::status::{ConnectionStatus, Feed, StopReason};
use super::{EventNotifier, EventsError, EventsUrl, OwnerId, Page, ResourceSummary, URI_PREFIX};
use crate::config::EventsReconnect;

/// Most resources one process holds.
pub const MAX_RESOURCES: usize = 16;
/// Longest `wait`, in milliseconds.
pub const MAX_WAIT_MS: u64 = 30_000;
/// Most events one `wait` returns.
pub const MAX_WAIT_LIMIT: usize = 256;

/// The process-wide registry of event resources. Cloning shares it.
#[derive(Clone)]
pub struct EventHub {
    shared: Arc<HubShared>,
}

impl std::fmt::Debug for EventHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token is deliberately left out.
        f.debug_struct("EventHub")
            .field("url", &self.shared.url)
            .finish_non_exhaustive()
    }
}

pub(crate) struct HubShared {
    url: EventsUrl,
    token: Option<String>,
    /// For `wss:`: the process's shared rustls configuration (see [`EventHub::with_tls`]).
    tls: Option<Arc<rustls::ClientConfig>>,
    reconnect: EventsReconnect,
    /// With recovery on: how missed group messages are fetched after a reconnect.
    history: Option<Arc<dyn MessageHistory>>,
    /// Each reader task holds a read guard until it has finished (closing its socket), so
    /// [`EventHub::closed`] can wait for them with a write lock.
    readers: Arc<tokio::sync::RwLock<()>>,
    state: Mutex<HubState>,
    /// Each principal's share of [`MAX_RESOURCES`], with two or more principals.
    share: std::sync::OnceLock<crate::config::principals::Share>,
}

pub(super) struct HubState {
    pub(super) resources: HashMap<String, Resource>,
    pub(super) connection: Option<Connection>,
    generations: u64,
}

impl HubState {
    /// The connection, if it is still the one of `generation`: a reader task that lost its
    /// place (every resource released, a new connection opened) gets `None`.
    pub(super) fn current(&self, generation: u64) -> Option<&Connection> {
        self.connection
            .as_ref()
            .filter(|c| c.generation == generation)
    }
}

pub(super) struct Connection {
    self_id: i64,
    pub(super) generation: u64,
    pub(super) status: watch::Sender<ConnectionStatus>,
    stop: CancellationToken,
}

pub(super) struct Resource {
    owner: OwnerId,
    pub(super) filter: EventFilter,
    pub(super) buffer: EventBuffer,
    /// Bumped on every change, so a waiter never misses one.
    changed: watch::Sender<u64>,
    waiting: bool,
    /// One stored permit = one pending notification: the coalescing.
    notify: Arc<Notify>,
    stop_notifier: CancellationToken,
    notification_failed: bool,
    /// When it was created (unix seconds): an outage it saw starts no earlier.
    pub(super) created: i64,
    /// The message ids the latest recovery inserted, so their live copies, read from the
    /// socket after the recovery, are not kept twice.
    pub(super) recovered_ids: HashSet<i64>,
}

impl Resource {
    pub(super) fn touch(&self) {
        self.changed.send_modify(|n| *n += 1);
        self.notify.notify_one();
    }
}

impl EventHub {
    /// A hub for SnowLuma's event socket at `url`; `token` is `Config.token`.
    /// A `wss:` socket then trusts the system roots only; see [`EventHub::with_tls`].
    pub fn new(url: EventsUrl, token: Option<String>) -> EventHub {
        EventHub::with_tls(url, token, None)
    }

    /// Like [`EventHub::new`], opening a `wss:` socket with `tls`: the process's one rustls
    /// configuration (system roots plus SNOWLUMA_MCP_CA_FILE), shared with the HTTP client.
    pub fn with_tls(
        url: EventsUrl,
        token: Option<String>,
        tls: Option<Arc<rustls::ClientConfig>>,
    ) -> EventHub {
        EventHub::with_reconnect(url, token, tls, EventsReconnect::default(), None)
    }

    /// Limits each principal to its share of [`MAX_RESOURCES`]. Set once, at start-up, when
    /// two or more principals can use the server.
    pub fn set_principal_share(&self, share: crate::config::principals::Share) {
        let _ = self.shared.share.set(share);
    }

    /// Like [`EventHub::with_tls`], reconnecting as `reconnect` says; with recovery on,
    /// missed group messages are fetched through `history`.
    pub fn with_reconnect(
        url: EventsUrl,
        token: Option<String>,
        tls: Option<Arc<rustls::ClientConfig>>,
        reconnect: EventsReconnect,
        history: Option<Arc<dyn MessageHistory>>,
    ) -> EventHub {
        EventHub {
            shared: Arc::new(HubShared {
                url,
                token: token.filter(|t| !t.is_empty()),
                tls,
                reconnect,
                history,
                readers: Arc::default(),
                share: std::sync::OnceLock::new(),
                state: Mutex::new(HubState {
                    resources: HashMap::new(),
                    connection: None,
                    generations: 0,
                }),
            }),
        }
    }

    /// Creates a resource for `filter` and returns its canonical URI. The first resource opens
    /// the connection and this call waits (at most 10 s) until SnowLuma's first frame or a
    /// refusal, so a rejected token is reported here. Must run inside a Tokio runtime.
    pub async fn subscribe(
        &self,
        owner: &OwnerId,
        filter: EventFilter,
        notifier: Arc<dyn EventNotifier>,
    ) -> Result<String, EventsError> {
        let id = crate::ids::random_hex::<8>().map_err(|_| EventsError::RandomUnavailable)?;
        let uri = format!("{URI_PREFIX}{id}");
        let mut status = {
            let mut state = self.shared.lock();
            if state.resources.len() >= MAX_RESOURCES {
                return Err(EventsError::TooManyResources {
                    limit: MAX_RESOURCES,
                    share: None,
                });
            }
            if let Some(share) = self.shared.share.get().copied() {
                let principal = owner.principal();
                let held = state
                    .resources
                    .values()
                    .filter(|r| r.owner.principal() == principal)
                    .count();
                if held >= share.of(MAX_RESOURCES) {
                    return Err(EventsError::TooManyResources {
                        limit: MAX_RESOURCES,
                        share: Some(share),
                    });
                }
            }
            let status = match &state.connection {
                Some(c) if c.self_id != filter.self_id => {
                    return Err(EventsError::OtherAccount {
                        connected: c.self_id,
                        requested: filter.self_id,
                    });
                }
                Some(c) => {
                    match &*c.status.borrow() {
                        ConnectionStatus::Stopped {
                            reason: StopReason::TokenRejected,
                            ..
                        } => return Err(EventsError::TokenRejected),
                        ConnectionStatus::Stopped { detail, .. } => {
                            return Err(EventsError::ConnectionStopped {
                                detail: detail.clone(),
                            });
                        }
                        _ => {}
                    }
                    c.status.subscribe()
                }
                None => self.open_connection(&mut state, filter.self_id),
            };
            let resource = self.new_resource(owner, filter, &uri, &id, notifier);
            state.resources.insert(id.clone(), resource);
            status
        };
        let settled = tokio::time::timeout(
            CONNECT_TIMEOUT + Duration::from_secs(1),
            status.wait_for(|s| *s != ConnectionStatus::Connecting),
        )
        .await;
        let failure = match settled {
            Ok(Ok(s)) => match &*s {
                ConnectionStatus::Stopped {
                    reason: StopReason::TokenRejected,
                    ..
                } => Some(EventsError::TokenRejected),
                ConnectionStatus::Stopped { detail, .. } => Some(EventsError::ConnectFailed {
                    detail: detail.clone(),
                }),
                _ => None,
            },
            // The sender went away: every resource was released meanwhile.
            Ok(Err(_)) => Some(EventsError::UnknownResource { uri: uri.clone() }),
            Err(_) => Some(EventsError::ConnectFailed {
                detail: "SnowLuma sent no event within the connect timeout".into(),
            }),
        };
        match failure {
            None => Ok(uri),
            Some(error) => {
                // Nothing useful was created; do not leave a dead resource behind.
                self.shared.remove(&id);
                Err(error)
            }
        }
    }

    /// Releases one resource. The last release closes the socket.
    pub fn release(&self, owner: &OwnerId, uri: &str) -> Result<(), EventsError> {
        let id = self.owned_id(owner, uri)?;
        self.shared.remove(&id);
        Ok(())
    }

    /// Releases every resource of `owner` (its MCP connection closed); returns how many.
    pub fn release_owner(&self, owner: &OwnerId) -> usize {
        let ids: Vec<String> = {
            let state = self.shared.lock();
            state
                .resources
                .iter()
                .filter(|(_, r)| &r.owner == owner)
                .map(|(id, _)| id.clone())
                .collect()
        };
        ids.iter().for_each(|id| self.shared.remove(id));
        ids.len()
    }

    /// The resources `owner` holds, by URI. Never connects.
    pub fn list(&self, owner: &OwnerId) -> Vec<ResourceSummary> {
        let state = self.shared.lock();
        let mut list: Vec<ResourceSummary> = state
            .resources
            .iter()
            .filter(|(_, r)| &r.owner == owner)
            .map(|(id, r)| ResourceSummary {
                uri: format!("{URI_PREFIX}{id}"),
                filter: r.filter.clone(),
                buffered_events: r.buffer.len(),
            })
            .collect();
        list.sort_by(|a, b| a.uri.cmp(&b.uri));
        list
    }

    /// Reads a resource; `uri` may carry `?after=<cursor>`. Every buffered event after the
    /// cursor is returned (at most 256 exist).
    pub fn read(&self, owner: &OwnerId, uri: &str) -> Result<Page, EventsError> {
        let (base, after) = split_after(uri)?;
        let id = self.owned_id(owner, base)?;
        self.shared.page(&id, after.as_deref(), MAX_WAIT_LIMIT)
    }

    /// Returns as soon as at least one entry after `after` is buffered (an event, or the gap
    /// of an outage once the connection is back) or the connection has stopped, else an empty page when `wait_ms` (0..=30000) runs out. `limit` (1..=256)
    /// bounds the entries. Cancelling `cancel` ends the wait at once with
    /// [`EventsError::Cancelled`]. One wait per resource at a time.
    pub async fn wait(
        &self,
        owner: &OwnerId,
        uri: &str,
        after: Option<&str>,
        wait_ms: u64,
        limit: usize,
        cancel: CancellationToken,
    ) -> Result<Page, EventsError> {
        if wait_ms > MAX_WAIT_MS {
            return Err(EventsError::InvalidArgument {
                field: "wait_ms".into(),
                problem: format!("must be between 0 and {MAX_WAIT_MS} (got {wait_ms})"),
            });
        }
        if !(1..=MAX_WAIT_LIMIT).contains(&limit) {
            return Err(EventsError::InvalidArgument {
                field: "limit".into(),
                problem: format!("must be between 1 and {MAX_WAIT_LIMIT} (got {limit})"),
            });
        }
        let id = self.owned_id(owner, uri)?;
        let mut changed = {
            let mut state = self.shared.lock();
            let resource = state.resources.get_mut(&id).ok_or_else(|| unknown(uri))?;
            if resource.waiting {
                return Err(EventsError::WaitInProgress {
                    uri: format!("{URI_PREFIX}{id}"),
                });
            }
            resource.waiting = true;
            resource.changed.subscribe()
        };
        let _guard = WaitGuard {
            shared: &self.shared,
            id: &id,
        };
        let deadline = tokio::time::Instant::now() + Duration::from_millis(wait_ms);
        loop {
            changed.borrow_and_update();
            let page = self.shared.page(&id, after, limit)?;
            if !page.entries.is_empty() || page.status.is_stopped() || wait_ms == 0 {
                return Ok(page);
            }
            tokio::select! {
                _ = cancel.cancelled() => return Err(EventsError::Cancelled),
                _ = tokio::time::sleep_until(deadline) => {
                    return self.shared.page(&id, after, limit);
                }
                gone = changed.changed() => if gone.is_err() {
                    return Err(EventsError::Released { uri: format!("{URI_PREFIX}{id}") });
                },
            }
        }
    }

    /// Waits (at most `limit`) until every reader task has ended, so a socket whose last
    /// resource was released has said goodbye with a close frame. For process exit: a runtime
    /// that shuts down first would drop the socket without one.
    pub async fn closed(&self, limit: Duration) -> bool {
        tokio::time::timeout(limit, self.shared.readers.write())
            .await
            .is_ok()
    }

    /// Whether the shared socket is open or opening (for status and tests).
    pub fn connection_status(&self) -> Option<ConnectionStatus> {
        let state = self.shared.lock();
        state.connection.as_ref().map(|c| c.status.borrow().clone())
    }

    fn owned_id(&self, owner: &OwnerId, uri: &str) -> Result<String, EventsError> {
        let id = uri.strip_prefix(URI_PREFIX).ok_or_else(|| unknown(uri))?;
        let state = self.shared.lock();
        match state.resources.get(id) {
            Some(r) if &r.owner == owner => Ok(id.to_string()),
            _ => Err(unknown(uri)),
        }
    }

    /// Starts the reader task; returns a view of its status.
    fn open_connection(
        &self,
        state: &mut HubState,
        self_id: i64,
    ) -> watch::Receiver<ConnectionStatus> {
        state.generations += 1;
        let stop = CancellationToken::new();
        let (status, receiver) = watch::channel(ConnectionStatus::Connecting);
        state.connection = Some(Connection {
            self_id,
            generation: state.generations,
            status,
            stop: stop.clone(),
        });
        let task = ConnectionTask {
            hub: Arc::downgrade(&self.shared) as Weak<dyn Feed>,
            generation: state.generations,
            url: self.shared.url.clone(),
            token: self.shared.token.clone(),
            tls: self.shared.tls.clone(),
            self_id,
            reconnect: self.shared.reconnect,
            history: self.shared.history.clone(),
            stop,
            _running: self.shared.readers.clone().try_read_owned().ok(),
        };
        tokio::spawn(task.run());
        receiver
    }

    fn new_resource(
        &self,
        owner: &OwnerId,
        filter: EventFilter,
        uri: &str,
        id: &str,
        notifier: Arc<dyn EventNotifier>,
    ) -> Resource {
        let notify = Arc::new(Notify::new());
        let stop_notifier = CancellationToken::new();
        tokio::spawn(notify_loop(
            Arc::downgrade(&self.shared),
            id.to_string(),
            uri.to_string(),
            notify.clone(),
            stop_notifier.clone(),
            notifier,
        ));
        Resource {
            owner: owner.clone(),
            filter,
            buffer: EventBuffer::new(),
            changed: watch::channel(0).0,
            waiting: false,
            notify,
            stop_notifier,
            notification_failed: false,
            created: unix_seconds(),
            recovered_ids: HashSet::new(),
        }
    }
}

/// Delivers at most one notification at a time per resource; changes during a delivery leave
/// one permit, hence one more delivery.
async fn notify_loop(
    hub: std::sync::Weak<HubShared>,
    id: String,
    uri: String,
    notify: Arc<Notify>,
    stop: CancellationToken,
    notifier: Arc<dyn EventNotifier>,
) {
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = notify.notified() => {}
        }
        let delivered = tokio::select! {
            _ = stop.cancelled() => return,
            delivered = notifier.updated(&uri) => delivered,
        };
        if delivered.is_err() {
            let Some(hub) = hub.upgrade() else { return };
            if let Some(resource) = hub.lock().resources.get_mut(&id) {
                resource.notification_failed = true;
            }
        }
    }
}

/// Frees the resource's single wait slot however the wait ends.
struct WaitGuard<'a> {
    shared: &'a HubShared,
    id: &'a str,
}

impl Drop for WaitGuard<'_> {
    fn drop(&mut self) {
        if let Some(resource) = self.shared.lock().resources.get_mut(self.id) {
            resource.waiting = false;
        }
    }
}

impl HubShared {
    pub(super) fn lock(&self) -> MutexGuard<'_, HubState> {
        // No code path panics while holding the lock; recover anyway rather than wedge.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn remove(&self, id: &str) {
        let mut state = self.lock();
        if let Some(resource) = state.resources.remove(id) {
            resource.stop_notifier.cancel();
        }
        if state.resources.is_empty()
            && let Some(connection) = state.connection.take()
        {
            connection.stop.cancel();
        }
    }

    fn page(&self, id: &str, after: Option<&str>, limit: usize) -> Result<Page, EventsError> {
        let state = self.lock();
        let resource = state
            .resources
            .get(id)
            .ok_or_else(|| unknown(&format!("{URI_PREFIX}{id}")))?;
        let status = state
            .connection
            .as_ref()
            .map_or(ConnectionStatus::Connecting, |c| c.status.borrow().clone());
        read_page(
            id,
            &resource.buffer,
            after,
            limit,
            status,
            resource.notification_failed,
        )
    }
}

fn unknown(uri: &str) -> EventsError {
    EventsError::UnknownResource {
        // Echo only the canonical part, never an arbitrary query a client sent.
        uri: uri.split('?').next().unwrap_or_default().to_string(),
    }
}
