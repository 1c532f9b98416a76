//! The protocol layer, the only code that names rmcp: one `ServerHandler` per MCP connection
//! serving both protocol generations, the stdio transport, era and cache-hint policy, the
//! tool registry, and the rendering of tool replies into MCP results.

mod docs;
mod input_tools;
mod message_preview;
mod progress;
mod registry;
mod render;
mod resources;
mod session;
pub mod stdio;

use std::sync::Arc;
use std::time::Instant;

use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, Implementation, JsonObject,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, MetaObject,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

pub use resources::{ACTION_URI_TEMPLATE, CATALOG_URI};
pub use session::{Session, Shared};

use crate::catalog::{ACTIONS, CATALOG_VERSION};
use crate::config::Config;
use crate::exec::gate;
use crate::trace::{self, TraceContext};
use registry::{Answer, Call, InputRound};
use session::{APPS_EXTENSION, is_modern, request_capabilities};

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

impl ServerHandler for SnowlumaServer {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .build();
        // MCP Apps: the preview_message panel (offered only to clients that render it).
        capabilities
            .extensions
            .get_or_insert_with(Default::default)
            .insert(APPS_EXTENSION.into(), JsonObject::new());
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
        let caps = request_capabilities(&ctx);
        let tools = registry::TOOLS
            .iter()
            .filter(|t| t.available(mode, &caps))
            .map(|t| t.definition(mode, &caps))
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
        let answer = match gate::tool_gate(tool.name, tool.requirement.access, mode) {
            Err(refusal) if !tool.gated_per_action => Answer::Reply(refusal),
            _ => {
                let call = Call {
                    shared: &self.shared,
                    args: request.arguments,
                    trace: &trace,
                    cancel: &ctx.ct,
                    progress: progress::for_request(&ctx.peer, ctx.meta.get_progress_token()),
                    input: InputRound {
                        caps: request_capabilities(&ctx),
                        modern: is_modern(&ctx),
                        request_state: request.request_state,
                        input_responses: request.input_responses,
                        peer: &ctx.peer,
                    },
                };
                (tool.handler)(call).await
            }
        };
        let reply = match answer {
            Answer::Reply(reply) => reply,
            Answer::Continuation(continuation) => {
                // Not an outcome yet: the call goes on when the client answers.
                trace::log_call(tool.name, &trace, "input_required", None, started.elapsed());
                return Ok(continuation);
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

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let caps = request_capabilities(&ctx);
        let mut result = ListResourcesResult::with_all_items(resources::list(&caps));
        result.meta = result_meta(&ctx);
        // Private: whether the panel is listed depends on the client's capabilities.
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
        let contents = resources::read(&request.uri, &request_capabilities(&ctx))?;
        let mut result = ReadResourceResult::new(vec![contents]);
        result.meta = result_meta(&ctx);
        // Public: the catalog and the panel are static assets bundled in the binary.
        Ok(cache_hint(&ctx, result, CacheScope::Public).into())
    }
}
