//! Per-connection state. Everything that belongs to one MCP connection lives in a [`Session`]
//! the handler owns; process-wide things (configuration, catalog, executor, stream limits)
//! live in [`Shared`] behind an `Arc`, so one process can serve several sessions.

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::ProtocolVersion;
use rmcp::service::RequestContext;

use super::docs::StaticAnswer;
use super::event_routes::SessionEvents;
use super::tool_list::ToolLists;
use crate::config::Config;
use crate::events::{EventHub, MessageHistory};
use crate::exec::{ClientCapabilities, Executor, PipelineHistory, Setup};
use crate::input::{Continuations, STATE_LIFETIME, SystemClock};
use crate::paging::{ContinuationStore, StoreLimits};

/// Test-only: how long prompts for missing params live (and how long a legacy
/// `elicitation/create` is awaited), in milliseconds. Read only in builds with the
/// `test-knobs` feature (the test suite's); the binary users get always uses ten minutes.
const INPUT_TTL_ENV: &str = "SNOWLUMA_MCP_INPUT_STATE_TTL_MS";
use crate::tasks::{ScopeInputs, TaskManager, TaskSettings, TaskStore, TaskStoreError};

/// What every session of this process shares.
pub struct Shared {
    pub config: Config,
    pub executor: Arc<Executor>,
    /// Open prompts for missing params, process-wide so the 256 limit and single use hold
    /// across sessions; its key dies with the process.
    pub continuations: Continuations,
    /// How long a prompt may stay unanswered.
    pub input_lifetime: Duration,
    /// Live events, when `SNOWLUMA_MCP_EVENTS_URL` is set and the mode executes. Creating the
    /// hub never connects; the first subscription does.
    pub events: Option<EventHub>,
    /// Durable background tasks; present when SNOWLUMA_MCP_TASK_DIR is set (write mode).
    pub tasks: Option<Arc<TaskManager>>,
    /// The `tools/list` definitions, built once per capability set.
    pub tool_lists: ToolLists,
    /// `get_runtime_info`'s answer without the connection check: fixed for the process's
    /// configuration, serialized at the first call.
    pub runtime_info: OnceLock<StaticAnswer>,
    /// Paged results waiting for `read_more`.
    pub pages: ContinuationStore,
}

impl Shared {
    /// Fails (a start-up error) when the task directory cannot be used: not private, leased
    /// by another process, made for another configuration, or holding a corrupt record.
    pub fn new(config: Config) -> Result<Arc<Shared>, String> {
        let executor = Arc::new(Executor::new(&config)?);
        let input_lifetime = input_lifetime()?;
        let continuations = Continuations::with_clock(Box::new(SystemClock::new()), input_lifetime)
            .map_err(|error| format!("input prompts: {error}"))?;
        let events = config
            .events_url
            .clone()
            .filter(|_| config.mode.executes())
            .map(|url| {
                // Recovery runs get_group_msg_history through the one pipeline and gate.
                let history: Arc<dyn MessageHistory> = Arc::new(PipelineHistory(executor.clone()));
                EventHub::with_reconnect(
                    url,
                    config.token.clone(),
                    Some(config.tls.client_config()),
                    config.events_reconnect,
                    config.events_reconnect.recover.map(|_| history),
                )
            });
        let pages = ContinuationStore::new(
            Box::new(SystemClock::new()),
            continuation_lifetime(config.results.continuation_ttl)?,
            StoreLimits::default(),
        )
        .map_err(|error| format!("paged results: {error}"))?;
        let tasks = match &config.task_dir {
            Some(dir) => Some(open_tasks(dir, &config).map_err(|e| e.to_string())?),
            None => None,
        };
        let shared = Arc::new(Shared {
            config,
            executor,
            continuations,
            input_lifetime,
            events,
            tasks,
            tool_lists: ToolLists::default(),
            runtime_info: OnceLock::new(),
            pages,
        });
        super::tool_cap::check(&shared)?;
        Ok(shared)
    }

    /// What the gate needs to know about this server.
    pub fn setup(&self) -> Setup {
        Setup {
            mode: self.config.mode,
            events: self.events.is_some(),
        }
    }
}

/// [`STATE_LIFETIME`], unless a test shortens it through [`INPUT_TTL_ENV`].
fn input_lifetime() -> Result<Duration, String> {
    if !cfg!(feature = "test-knobs") {
        return Ok(STATE_LIFETIME);
    }
    match std::env::var(INPUT_TTL_ENV) {
        Err(_) => Ok(STATE_LIFETIME),
        Ok(text) => match text.trim().parse::<u64>() {
            Ok(ms) if (1..=3_600_000).contains(&ms) => Ok(Duration::from_millis(ms)),
            _ => Err(format!(
                "{INPUT_TTL_ENV} must be a whole number of milliseconds from 1 to 3600000"
            )),
        },
    }
}

/// Test-only: the continuation lifetime in milliseconds (0 = already expired when issued),
/// read only in builds with the `test-knobs` feature so tests need not wait for expiry.
const CONTINUATION_TTL_ENV: &str = "SNOWLUMA_MCP_TEST_CONTINUATION_TTL_MS";

/// `configured`, unless a test overrides it through [`CONTINUATION_TTL_ENV`].
fn continuation_lifetime(configured: Duration) -> Result<Duration, String> {
    if !cfg!(feature = "test-knobs") {
        return Ok(configured);
    }
    match std::env::var(CONTINUATION_TTL_ENV) {
        Err(_) => Ok(configured),
        Ok(text) => text
            .trim()
            .parse::<u64>()
            .map(Duration::from_millis)
            .map_err(|_| format!("{CONTINUATION_TTL_ENV} must be a whole number of milliseconds")),
    }
}

fn open_tasks(dir: &Path, config: &Config) -> Result<Arc<TaskManager>, TaskStoreError> {
    let store = TaskStore::open(
        dir,
        ScopeInputs {
            mode: config.mode.as_str(),
            endpoint: config.endpoint.as_deref().unwrap_or(""),
            token: config.token.as_deref(),
        },
    )?;
    for id in store.recovered() {
        tracing::warn!(
            task = id.as_str(),
            "task was running when the server stopped; marked failed (remote outcome unknown)"
        );
    }
    TaskManager::new(
        store,
        TaskSettings {
            retention: config.task_retention,
            shutdown: config.streams.shutdown.clone(),
        },
    )
}

/// One MCP connection's state.
pub struct Session {
    /// Names the session in logs; never sent to SnowLuma.
    pub id: String,
    /// This connection's event resources and listeners; released when the session drops.
    pub events: Option<SessionEvents>,
    /// Who owns what this session leaves behind (paged results): see
    /// `read_more::principal`.
    pub principal: String,
}

impl Session {
    pub fn new(shared: &Shared) -> Session {
        // Unique per process, which is all an owner key needs: it is never shown to a client
        // nor guessable from outside (ownership is the connection object itself), so it needs
        // no randomness and cannot fail.
        static SESSIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let id = format!(
            "session-{}",
            SESSIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        Session {
            events: shared
                .events
                .clone()
                .map(|hub| SessionEvents::new(hub, &id)),
            principal: id.clone(),
            id,
        }
    }

    /// The one session every 2026-07-28 HTTP request shares (they have no session of their
    /// own); its principal is "default".
    pub fn stateless(shared: &Shared) -> Session {
        Session {
            principal: "default".into(),
            ..Session::new(shared)
        }
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
