//! Per-connection state. Everything that belongs to one MCP connection lives in a [`Session`]
//! the handler owns; process-wide things (configuration, catalog, executor, stream limits)
//! live in [`Shared`] behind an `Arc`, so one process can serve several sessions.

use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::ProtocolVersion;
use rmcp::service::RequestContext;

use super::event_routes::SessionEvents;
use super::log_level::ClientLogLevel;
use super::tool_list::ToolLists;
use crate::config::Config;
use crate::config::principals::{DEFAULT_PRINCIPAL, Principal, session_owner};
use crate::exec::ClientCapabilities;
use crate::tools::Services;

/// What every session of this process shares: the tools' services, and the protocol's
/// caches built from them. Reads through to the services (`shared.executor`).
pub struct Shared {
    /// An `Arc` so a tool's work that outlives its call (a background task) can keep it.
    pub services: Arc<Services>,
    /// The `tools/list` definitions, built once per capability set.
    pub tool_lists: ToolLists,
}

impl Shared {
    /// Fails (a start-up error) when the tools' services cannot start (see
    /// [`Services::new`]).
    pub fn new(config: Config) -> Result<Arc<Shared>, String> {
        let shared = Arc::new(Shared {
            services: Services::new(config)?,
            tool_lists: ToolLists::default(),
        });
        super::tool_cap::check(&shared.services)?;
        Ok(shared)
    }
}

impl Deref for Shared {
    type Target = Services;

    fn deref(&self) -> &Services {
        &self.services
    }
}

/// One MCP connection's state.
pub struct Session {
    /// Names the session in logs; never sent to SnowLuma.
    pub id: String,
    /// This connection's event resources and listeners; released when the session drops.
    pub events: Option<SessionEvents>,
    /// Who is calling, as the guards (send limits, audit log) and the call log record it:
    /// see `Call::principal`.
    pub principal: String,
    /// Who owns what this session's calls leave behind (paged results, tasks, input
    /// prompts): see `Call::owner`.
    pub owner: String,
    /// The level this connection's client asked for with `logging/setLevel` (legacy
    /// sessions only; see `call_log`).
    pub log_level: ClientLogLevel,
    /// A legacy HTTP session's paged results, released when it ends (DELETE, idle expiry).
    _pages: Option<ReleasePages>,
}

/// Drops the paged results held for one owner when dropped.
struct ReleasePages {
    services: Arc<Services>,
    owner: String,
}

impl Drop for ReleasePages {
    fn drop(&mut self) {
        self.services.pages.release_owner(&self.owner);
    }
}

/// Which connection a session serves, and for whom.
pub enum Scope<'a> {
    /// The one connection of a stdio process.
    Stdio,
    /// A legacy (`initialize`) HTTP session opened with `principal`'s token.
    HttpSession(&'a Principal),
    /// What `principal`'s 2026-07-28 HTTP requests, which have no session, keep between
    /// requests.
    HttpStateless(&'a Principal),
}

/// The one place that decides a session's two names (see `Call`): the principal the guards
/// record and the owner of what its calls leave behind. stdio serves one connection per
/// process: its calls own under the principal `default`, and the guards record the session
/// id. Over HTTP both are the principal the token names, except that a legacy session owns
/// its continuations itself (`principal/session-id`: `/` is never in a principal's name, so
/// the two cannot meet).
fn identity(scope: &Scope<'_>, session_id: &str) -> (String, String) {
    match scope {
        Scope::Stdio => (
            crate::guard::principal(None, session_id),
            DEFAULT_PRINCIPAL.to_string(),
        ),
        Scope::HttpSession(principal) => (
            crate::guard::principal(Some(principal.name()), session_id),
            session_owner(principal, session_id),
        ),
        Scope::HttpStateless(principal) => (
            crate::guard::principal(Some(principal.name()), session_id),
            principal.name().to_string(),
        ),
    }
}

impl Session {
    pub fn new(shared: &Shared, scope: Scope<'_>) -> Session {
        // Unique per process, which is all an owner key needs: it is never shown to a client
        // nor guessable from outside (ownership is the connection object itself), so it needs
        // no randomness and cannot fail.
        static SESSIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let id = format!(
            "session-{}",
            SESSIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let (principal, owner) = identity(&scope, &id);
        let pages = matches!(scope, Scope::HttpSession(_)).then(|| ReleasePages {
            services: shared.services.clone(),
            owner: owner.clone(),
        });
        Session {
            _pages: pages,
            events: shared
                .events
                .clone()
                .map(|hub| SessionEvents::new(hub, &owner)),
            principal,
            owner,
            log_level: ClientLogLevel::default(),
            id,
        }
    }
}

impl Session {
    /// The stateless session of an HTTP principal: its event resources hold a lease of
    /// `lease` that reads renew (see `events::Leases`).
    pub fn leased(shared: &Shared, principal: &Principal, lease: Duration) -> Session {
        let mut session = Session::new(shared, Scope::HttpStateless(principal));
        if let Some(events) = session.events.as_mut() {
            events.leases = Some(crate::events::Leases::new(lease));
        }
        session
    }

    /// How often the leases of this session should be swept (`None`: no leases).
    pub fn lease_sweep_every(&self) -> Option<Duration> {
        let leases = self.events.as_ref()?.leases.as_ref()?;
        Some(leases.sweep_every())
    }

    /// Releases the event resources whose lease ran out.
    pub fn sweep_leases(&self) -> usize {
        self.events
            .as_ref()
            .map_or(0, |events| events.sweep_leases())
    }
}

/// The MCP Apps extension and the HTML type this server's panel uses.
pub const APPS_EXTENSION: &str = "io.modelcontextprotocol/ui";
const APPS_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The capabilities the client declared for this request: per request for 2026-07-28
/// clients, from initialize for legacy sessions (rmcp picks the source).
pub fn request_capabilities(ctx: &RequestContext<RoleServer>) -> ClientCapabilities {
    let Some(caps) = ctx.client_capabilities() else {
        return ClientCapabilities::default();
    };
    // An empty `elicitation: {}` predates the form/url split and means form support.
    let form_elicitation = caps
        .elicitation
        .as_ref()
        .is_some_and(|e| e.form.is_some() || e.url.is_none());
    let apps_ui = caps
        .extensions
        .as_ref()
        .and_then(|e| e.get(APPS_EXTENSION))
        .and_then(|settings| settings.get("mimeTypes"))
        .and_then(|types| types.as_array())
        .is_some_and(|types| types.iter().any(|t| t.as_str() == Some(APPS_MIME_TYPE)));
    ClientCapabilities {
        form_elicitation,
        apps_ui,
        // Background tasks are a 2026-07-28 feature: a legacy session that declared the
        // extension at initialize is not offered them.
        tasks: is_modern(ctx) && caps.supports_tasks(),
    }
}

/// True when the request being served speaks 2026-07-28 or later (the per-request `_meta`
/// version wins over the initialize handshake).
pub fn is_modern(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
}
