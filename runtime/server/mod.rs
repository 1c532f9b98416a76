//! The protocol layer, the only code that names rmcp: one `ServerHandler` per MCP connection
//! serving both protocol generations, the stdio transport, era and cache-hint policy, the
//! tool registry, and the rendering of tool replies into MCP results.

mod docs;
mod progress;
mod registry;
mod render;
mod resources;
mod session;
pub mod stdio;
mod task_tools;

use std::sync::Arc;
use std::time::Instant;

use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CancelTaskParams, GetTaskParams,
    GetTaskResult, Implementation, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, MetaObject, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, ServerCapabilities, ServerConfig, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

pub use resources::{ACTION_URI_TEMPLATE, CATALOG_URI};
pub use session::{Session, Shared};

use crate::catalog::{ACTIONS, CATALOG_VERSION};
use crate::config::Config;
use crate::exec::{Capability, ClientCapabilities, gate};
use crate::trace::{self, TraceContext};
use registry::{Answer, Call};
use session::{is_modern, request_capabilities};

/// Five minutes, the lifetime of every cacheable catalog response.
const CATALOG_TTL_MS: u64 = 300_000;

/// The handler of one MCP connection: its own [`Session`] and the process-wide [`Shared`].
#[derive(Clone)]
pub struct SnowlumaServer {
    shared: Arc<Shared>,
    session: Arc<Session>,
}

impl SnowlumaServer {
    /// A process with one connection (stdio).
    pub fn new(config: Config) -> Result<Self, String> {
        Ok(Self::for_session(Shared::new(config)?))
    }

    /// A handler for a new connection of a process that may serve several.
    pub fn for_session(shared: Arc<Shared>) -> Self {
        SnowlumaServer {
            shared,
            session: Arc::new(Session::new()),
        }
    }

    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    /// This connection's state.
    pub fn session(&self) -> &Session {
        &self.session
    }
}

/// Result `_meta` for modern clients: every 2026-07-28 result names the server.
fn result_meta(ctx: &RequestContext<RoleServer>) -> Option<MetaObject> {
    if !is_modern(ctx) {
        return None;
    }
    let mut meta = MetaObject::new();
    meta.insert(
        "io.modelcontextprotocol/serverInfo".into(),
        serde_json::json!({ "name": "snowluma-mcp", "version": env!("CARGO_PKG_VERSION") }),
    );
    Some(meta)
}

/// Results that can carry cache hints (SEP-2549).
trait CacheHinted: Sized {
    fn hinted(self, scope: CacheScope) -> Self;
}

macro_rules! cache_hinted {
    ($($result:ty),*) => {$(
        impl CacheHinted for $result {
            fn hinted(self, scope: CacheScope) -> Self {
                self.with_ttl_ms(CATALOG_TTL_MS).with_cache_scope(scope)
            }
        }
    )*};
}

cache_hinted!(
    ListToolsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ReadResourceResult
);

/// Cache hints go to modern clients only; legacy results never carry them.
fn cache_hint<T: CacheHinted>(ctx: &RequestContext<RoleServer>, result: T, scope: CacheScope) -> T {
    if is_modern(ctx) {
        result.hinted(scope)
    } else {
        result
    }
}

impl SnowlumaServer {
    /// The client's capabilities for this request, less what this server cannot serve: the
    /// tasks extension counts only when a task directory is configured.
    fn capabilities(&self, ctx: &RequestContext<RoleServer>) -> ClientCapabilities {
        let mut caps = request_capabilities(ctx);
        caps.tasks &= self.shared.tasks.is_some();
        caps
    }

    /// A call to a tool this request is not offered because of a missing capability: a
    /// 2026-07-28 client that could declare it gets -32021 naming it; anyone else (a legacy
    /// session, or a server without the feature) gets the unknown-tool error.
    fn refuse_capability(
        &self,
        tool: &str,
        needed: Capability,
        ctx: &RequestContext<RoleServer>,
    ) -> ErrorData {
        if needed == Capability::Tasks && is_modern(ctx) && self.shared.tasks.is_some() {
            return task_tools::missing_tasks_capability();
        }
        ErrorData::invalid_params(format!("tool not found: {tool}"), None)
    }

    /// The task manager for a tasks/* request (rmcp already refused clients that did not
    /// declare the extension, and every request when the server does not advertise it).
    fn task_manager(
        &self,
        method: &str,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<&crate::tasks::TaskManager, ErrorData> {
        if !is_modern(ctx) {
            return Err(task_tools::refuse_legacy(method));
        }
        self.shared
            .tasks
            .as_deref()
            .ok_or_else(|| task_tools::refuse_legacy(method))
    }
}

impl ServerHandler for SnowlumaServer {
    fn get_info(&self) -> ServerConfig {
        let builder = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources();
        // server/discover (and rmcp's gate on tasks/*) advertise tasks only when they work.
        let capabilities = if self.shared.tasks.is_some() {
            builder.enable_tasks().build()
        } else {
            builder.build()
        };
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("snowluma-mcp", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "SnowLuma OneBot 11 action catalog ({} actions, SnowLuma {CATALOG_VERSION}), mode {}. \
                 Find actions with search_actions (match=\"keywords\" understands Chinese and English, e.g. \
                 `群 禁言` or `mute member`), read one with get_action (params, returnsSchema, examples), \
                 and check what this server may do with get_runtime_info.",
                ACTIONS.len(),
                self.shared.config.mode.as_str()
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mode = self.shared.config.mode;
        let caps = self.capabilities(&ctx);
        let tools = registry::TOOLS
            .iter()
            .filter(|t| t.available(mode, &caps))
            .map(|t| t.definition(mode))
            .collect();
        let mut result = ListToolsResult::with_all_items(tools);
        result.meta = result_meta(&ctx);
        // Private: the list depends on this server's mode and the client's capabilities.
        Ok(cache_hint(&ctx, result, CacheScope::Private))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let started = Instant::now();
        let trace = TraceContext::start(ctx.meta.get("traceparent"), ctx.meta.get("tracestate"));
        let name = request.name.as_ref();
        let Some(tool) = registry::find(name) else {
            trace::log_call(
                "unknown",
                &trace,
                "failed",
                Some(crate::outcome::ErrorKind::UnknownTool),
                started.elapsed(),
            );
            return Err(ErrorData::invalid_params(
                format!("tool not found: {name}"),
                None,
            ));
        };
        let mode = self.shared.config.mode;
        // Capabilities are gated on every call, whether or not the tool was listed.
        if let Some(needed) = tool.requirement.capability
            && !self.capabilities(&ctx).has(needed)
        {
            return Err(self.refuse_capability(tool.name, needed, &ctx));
        }
        let answer = match gate::tool_gate(tool.name, tool.requirement.access, mode) {
            Err(refusal) if !tool.gated_per_action => Answer::Reply(refusal),
            _ => {
                let call = Call {
                    shared: &self.shared,
                    args: request.arguments,
                    trace: &trace,
                    cancel: &ctx.ct,
                    progress: progress::for_request(&ctx.peer, ctx.meta.get_progress_token()),
                };
                (tool.handler)(call).await
            }
        };
        let reply = match answer {
            Answer::Reply(reply) => reply,
            Answer::Continuation(response) => {
                trace::log_call(tool.name, &trace, "continued", None, started.elapsed());
                return Ok(response);
            }
        };
        trace::log_call(
            tool.name,
            &trace,
            reply.outcome().as_str(),
            reply.diagnostics.kind,
            started.elapsed(),
        );
        let meta = result_meta(&ctx).unwrap_or_default();
        Ok(render::into_result(reply, &trace, meta).into())
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let manager = self.task_manager("tasks/get", &ctx)?;
        let mut result = task_tools::get(manager, &request.task_id)?;
        result.meta = result_meta(&ctx);
        Ok(result)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let manager = self.task_manager("tasks/cancel", &ctx)?;
        task_tools::cancel(manager, &request.task_id)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let manager = self.task_manager("tasks/update", &ctx)?;
        task_tools::update(manager, &request.task_id)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let mut result = ListResourcesResult::with_all_items(resources::list());
        result.meta = result_meta(&ctx);
        Ok(cache_hint(&ctx, result, CacheScope::Private))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let mut result = ListResourceTemplatesResult::with_all_items(resources::templates());
        result.meta = result_meta(&ctx);
        Ok(cache_hint(&ctx, result, CacheScope::Public))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let contents = resources::read(&request.uri)?;
        let mut result = ReadResourceResult::new(vec![contents]);
        result.meta = result_meta(&ctx);
        Ok(cache_hint(&ctx, result, CacheScope::Public).into())
    }
}
