//! Per-connection state. Everything that belongs to one MCP connection lives in a [`Session`]
//! the handler owns; process-wide things (configuration, catalog, executor, stream limits)
//! live in [`Shared`] behind an `Arc`, so one process can serve several sessions.

use std::path::Path;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::ProtocolVersion;
use rmcp::service::RequestContext;

use crate::config::Config;
use crate::exec::{ClientCapabilities, Executor};
use crate::ids::random_hex;
use crate::tasks::{ScopeInputs, TaskManager, TaskStore, TaskStoreError};

/// What every session of this process shares.
pub struct Shared {
    pub config: Config,
    pub executor: Executor,
    /// Durable background tasks; present when SNOWLUMA_MCP_TASK_DIR is set (write mode).
    pub tasks: Option<Arc<TaskManager>>,
}

impl Shared {
    /// Fails (a start-up error) when the task directory cannot be used: not private, leased
    /// by another process, made for another configuration, or holding a corrupt record.
    pub fn new(config: Config) -> Result<Arc<Shared>, String> {
        let executor = Executor::new(&config)?;
        let tasks = match &config.task_dir {
            Some(dir) => Some(open_tasks(dir, &config).map_err(|e| e.to_string())?),
            None => None,
        };
        Ok(Arc::new(Shared {
            config,
            executor,
            tasks,
        }))
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
    TaskManager::new(store)
}

/// One MCP connection's state.
pub struct Session {
    /// Names the session in logs; never sent to SnowLuma.
    pub id: String,
}

impl Session {
    pub fn new() -> Session {
        Session {
            id: random_hex::<8>(),
        }
    }
}

impl Default for Session {
    fn default() -> Self {
        Session::new()
    }
}

/// The MCP Apps extension and the HTML type this server's panel uses.
const APPS_EXTENSION: &str = "io.modelcontextprotocol/ui";
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
