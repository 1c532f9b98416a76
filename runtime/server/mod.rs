//! The protocol layer, the only code that names rmcp: one `ServerHandler` per MCP connection
//! serving both protocol generations, the stdio and HTTP transports, era and cache-hint
//! policy, and the translation between MCP and the tools room (`crate::tools`): requests into
//! calls, definitions into MCP tools, replies into MCP results.

mod boxed_service;
mod call_log;
pub(crate) mod decode;
mod encode;
mod event_resources;
mod event_routes;
pub mod http;
mod input_round;
mod log_level;
mod progress;
mod render;
mod resources;
mod serve_stdio;
mod session;
pub mod stdio;
mod task_methods;
mod tool_call;
mod tool_cap;
mod tool_list;
mod tool_schemas;

use std::sync::Arc;

use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams,
    CompleteResult, CompletionInfo, GetTaskParams, GetTaskResult, Implementation,
    InitializeRequestParams, InitializeResult, JsonObject, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, MetaObject, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Reference,
    ServerCapabilities, ServerConfig, SetLevelRequestMethod, SubscribeRequestParams,
    SubscriptionFilter, UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};

pub use boxed_service::BoxedRequests;
pub use resources::{ACTION_URI_TEMPLATE, CATALOG_URI};
pub use serve_stdio::{StdioEnd, serve_stdio};
pub use session::{Scope, Session, Shared};

use crate::catalog::{ACTIONS, CATALOG_VERSION};
use crate::config::Config;
use crate::trace::TraceContext;
use render::StructuredCopy;
use session::{APPS_EXTENSION, is_modern, request_capabilities};
use tool_list::SchemaCopy;

/// Five minutes, the lifetime of every cacheable catalog response.
const CATALOG_TTL_MS: u64 = 300_000;

/// The handler of one MCP connection: its own [`Session`] and the process-wide [`Shared`].
#[derive(Clone)]
pub struct SnowlumaServer {
    shared: Arc<Shared>,
    session: Arc<Session>,
    /// Whose state a 2026-07-28 request uses: the connection's own on stdio; over HTTP, where
    /// such requests have no session, one process-wide session (see `http`).
    stateless: Arc<Session>,
    /// How tool results carry `structuredContent`: written from the text by this crate's
    /// stdio transport, a value tree for rmcp's HTTP transport. It also decides how
    /// `tools/list` carries schemas (stdio: the committed text, written by the encoder).
    structured: StructuredCopy,
}

impl SnowlumaServer {
    /// A process with one connection, served by [`stdio::StdioTransport`] (which writes each
    /// tool result's `structuredContent` from its text block; no other transport does).
    pub fn new(config: Config) -> Result<Self, String> {
        let shared = Shared::new(config)?;
        let session = Arc::new(Session::new(&shared, Scope::Stdio));
        Ok(SnowlumaServer {
            shared,
            stateless: session.clone(),
            session,
            structured: StructuredCopy::FromText,
        })
    }

    /// A handler for one HTTP legacy session or one stateless HTTP request, made for the
    /// requesting principal: its own session, and `stateless` (that principal's) for whatever
    /// 2026-07-28 requests keep between requests.
    pub fn for_http(
        shared: Arc<Shared>,
        principal: &crate::config::principals::Principal,
        stateless: Arc<Session>,
    ) -> Self {
        let session = Arc::new(Session::new(&shared, Scope::HttpSession(principal)));
        SnowlumaServer {
            shared,
            session,
            stateless,
            structured: StructuredCopy::Value,
        }
    }

    /// The state this request works on: the session's, or for a 2026-07-28 request the
    /// stateless one.
    fn session_for(&self, ctx: &RequestContext<RoleServer>) -> &Arc<Session> {
        if is_modern(ctx) {
            &self.stateless
        } else {
            &self.session
        }
    }

    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    /// This connection's state.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The process's live-event hub, if events are enabled (main waits on it at exit).
    pub fn event_hub(&self) -> Option<crate::events::EventHub> {
        self.shared.events.clone()
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
    fn hinted(self, ttl_ms: u64, scope: CacheScope) -> Self;
}

macro_rules! cache_hinted {
    ($($result:ty),*) => {$(
        impl CacheHinted for $result {
            fn hinted(self, ttl_ms: u64, scope: CacheScope) -> Self {
                self.with_ttl_ms(ttl_ms).with_cache_scope(scope)
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
    cache_hint_ttl(ctx, result, CATALOG_TTL_MS, scope)
}

fn cache_hint_ttl<T: CacheHinted>(
    ctx: &RequestContext<RoleServer>,
    result: T,
    ttl_ms: u64,
    scope: CacheScope,
) -> T {
    if is_modern(ctx) {
        result.hinted(ttl_ms, scope)
    } else {
        result
    }
}

impl ServerHandler for SnowlumaServer {
    fn get_info(&self) -> ServerConfig {
        let builder = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources();
        // Event resources can be watched only when events are on; server/discover (and rmcp's
        // gate on tasks/*) advertise tasks only when they work.
        let mut capabilities = match (self.shared.events.is_some(), self.shared.tasks.is_some()) {
            (true, true) => builder.enable_resources_subscribe().enable_tasks().build(),
            (true, false) => builder.enable_resources_subscribe().build(),
            (false, true) => builder.enable_tasks().build(),
            (false, false) => builder.build(),
        };
        // Completion of action names for the action resource template.
        capabilities.completions = Some(JsonObject::new());
        // Call log messages: legacy sessions ask with logging/setLevel, 2026-07-28 requests
        // with their own `_meta` log level (see `call_log`).
        capabilities.logging = Some(JsonObject::new());
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

    /// `initialize` (always a legacy session).
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        ctx.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    /// Legacy `logging/setLevel`: from now on this session's calls send their log line as a
    /// message at or above `level` (see `call_log`). 2026-07-28 requests are refused: that
    /// revision asks per request, in `_meta`.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if is_modern(&ctx) {
            return Err(ErrorData::method_not_found::<SetLevelRequestMethod>());
        }
        self.session.log_level.set(request.level);
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let caps = self.capabilities(&ctx);
        // Over stdio the encoder writes the committed schema text (see `encode`).
        let copy = match self.structured {
            StructuredCopy::FromText => SchemaCopy::Committed,
            StructuredCopy::Value => SchemaCopy::Tree,
        };
        let tools = self.shared.tool_lists.get(&self.shared, &caps, copy);
        let mut result = ListToolsResult::with_all_items(tools.to_vec());
        result.meta = result_meta(&ctx);
        // Private: the list depends on this server's mode and the client's capabilities.
        Ok(cache_hint(&ctx, result, CacheScope::Private))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Boxed: rmcp keeps the future of every request it dispatches inside the task it spawns
        // for the request, sized for the largest handler, and tokio moves that task by value
        // (spawn, then each stage change). Inline, this future (~5 KB, the typed-tool path
        // included) made every request's task ~9 KB, copied several times per call (memcpy
        // was the largest single entry in a perf profile of get_runtime_info calls).
        Box::pin(self.dispatch_tool_call(request, ctx)).await
    }

    /// `completion/complete`: action names and aliases for the action resource template
    /// (argument `name`, or `action`).
    async fn complete(
        &self,
        request: CompleteRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let Reference::Resource(template) = &request.r#ref else {
            return Err(ErrorData::invalid_params(
                "this server has no prompts; completion is offered for the resource template \
                 snowluma://onebot/actions/{name}",
                None,
            ));
        };
        if template.uri != ACTION_URI_TEMPLATE
            || !matches!(request.argument.name.as_str(), "name" | "action")
        {
            return Err(ErrorData::invalid_params(
                format!(
                    "no completions for `{}` of {}; completion is offered for the `name` argument of {ACTION_URI_TEMPLATE}",
                    request.argument.name, template.uri
                ),
                None,
            ));
        }
        let (values, total) = crate::catalog::complete::complete(&request.argument.value);
        let has_more = total > values.len();
        let values = values.into_iter().map(str::to_string).collect();
        let completion = CompletionInfo::with_pagination(values, Some(total as u32), has_more)
            .map_err(|error| ErrorData::internal_error(error, None))?;
        let mut result = CompleteResult::new(completion);
        result.meta = result_meta(&ctx);
        Ok(result)
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let manager = self.task_manager("tasks/get", &ctx)?;
        let owner = &self.session_for(&ctx).owner;
        let mut result = task_methods::get(manager, owner, &request.task_id).await?;
        result.meta = result_meta(&ctx);
        Ok(result)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let manager = self.task_manager("tasks/cancel", &ctx)?;
        task_methods::cancel(manager, &self.session_for(&ctx).owner, &request.task_id)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let manager = self.task_manager("tasks/update", &ctx)?;
        task_methods::update(manager, &self.session_for(&ctx).owner, &request.task_id)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let caps = request_capabilities(&ctx);
        let mut items = resources::list(&caps);
        if let Some(events) = &self.session_for(&ctx).events {
            items.extend(event_resources::list(events));
        }
        let mut result = ListResourcesResult::with_all_items(items);
        result.meta = result_meta(&ctx);
        // Private: the panel depends on the client's capabilities; with events the list
        // changes whenever this session subscribes, so it is never cached then.
        let ttl = if self.shared.events.is_some() {
            0
        } else {
            CATALOG_TTL_MS
        };
        Ok(cache_hint_ttl(&ctx, result, ttl, CacheScope::Private))
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
        if let Some(events) = event_resources::for_uri(self.session_for(&ctx), &request.uri) {
            let contents = event_resources::read(events, &request.uri)?;
            let mut result = ReadResourceResult::new(vec![contents]);
            result.meta = result_meta(&ctx);
            // Account events and connection state: never cached, never shared.
            return Ok(cache_hint_ttl(&ctx, result, 0, CacheScope::Private).into());
        }
        let contents = resources::read(&request.uri, &request_capabilities(&ctx))?;
        let mut result = ReadResourceResult::new(vec![contents]);
        result.meta = result_meta(&ctx);
        // Public: the catalog and the panel are static assets bundled in the binary.
        Ok(cache_hint(&ctx, result, CacheScope::Public).into())
    }

    /// Legacy `resources/subscribe`: only this session's event resources can be watched.
    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let events = event_resources::owned(&self.session, &request.uri)?;
        events
            .routes
            .subscribe_legacy(&request.uri, ctx.peer.clone());
        Ok(())
    }

    /// Legacy `resources/unsubscribe`: stops the notifications and releases the resource.
    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let events = event_resources::owned(&self.session, &request.uri)?;
        events.routes.unsubscribe_legacy(&request.uri);
        events
            .hub
            .release(&events.owner, &request.uri)
            .map_err(|e| event_resources::protocol_error(&e, &request.uri))
    }

    /// Modern `subscriptions/listen`: resource subscriptions are accepted for this session's
    /// event resources only (the acknowledgement lists them); nothing else is offered.
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let events = self.stateless.events.as_ref()?;
        let owned: Vec<String> = requested
            .resource_subscriptions
            .iter()
            .flatten()
            .filter(|uri| events.owns(uri))
            .cloned()
            .collect();
        let mut accepted = SubscriptionFilter::new();
        accepted.resource_subscriptions = Some(owned);
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let uris = context
            .accepted()
            .resource_subscriptions
            .clone()
            .unwrap_or_default();
        // Closing the stream stops notifications; it does not release the resources.
        let _registered = self
            .stateless
            .events
            .as_ref()
            .map(|events| events.routes.listen(uris, context.sink().clone()));
        context.cancelled().await;
        Ok(())
    }
}

/// The bytes stdio writes for a `tools/call` of a catalog tool (`list_actions`,
/// `search_actions`, `get_action`, `list_categories`): the handler, the rendering and the
/// encoding the server runs, without the JSON-RPC dispatch around them. For the criterion
/// benches, so they measure the path the server serves; `None` for any other tool.
#[doc(hidden)]
pub fn catalog_call_line(
    tool: &str,
    args: serde_json::Map<String, serde_json::Value>,
) -> Option<Vec<u8>> {
    let handler = match tool {
        "list_actions" => crate::tools::docs::list_actions,
        "search_actions" => crate::tools::docs::search_actions,
        "get_action" => {
            |args| crate::tools::docs::get_action(args, &crate::exec::ActionPolicy::default())
        }
        "list_categories" => crate::tools::docs::list_categories,
        _ => return None,
    };
    let trace = TraceContext::start(None, None).ok()?;
    let reply = handler(Some(args));
    // Encoded as the stdio transport encodes it.
    let result: CallToolResponse =
        render::into_result(reply, &trace, MetaObject::new(), StructuredCopy::FromText).into();
    let message = rmcp::model::JsonRpcMessage::Response(rmcp::model::JsonRpcResponse {
        jsonrpc: rmcp::model::JsonRpcVersion2_0,
        id: rmcp::model::NumberOrString::Number(1),
        result: result.into(),
    });
    encode::message_line(&message).ok()
}
