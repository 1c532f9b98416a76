//! The MCP server: one rmcp `ServerHandler` serving both protocol generations over stdio.
//! Tool calls go through [`SnowlumaServer::call_tool`], which decides availability, traces the
//! call and shapes every result the same way.

mod docs;
mod reply;
mod resources;
pub mod stdio;
pub mod tools;

use std::sync::Arc;
use std::time::Instant;

use rmcp::model::MetaObject;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, Implementation,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

pub use docs::unknown_action;
pub use reply::{Diagnostics, Outcome, Reply};
pub use resources::{ACTION_URI_TEMPLATE, CATALOG_URI};

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::catalog::{self, ACTIONS, CATALOG_VERSION};
use crate::config::Config;
use crate::exec::{self, ActionArgs, Entry, Executor};
use crate::streams::Progress;
use crate::trace::{self, TraceContext};

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

/// Five minutes, the lifetime of every cacheable catalog response.
const CATALOG_TTL_MS: u64 = 300_000;

#[derive(Clone)]
pub struct SnowlumaServer {
    config: Arc<Config>,
    /// Present in read and write mode only; docs mode has no way to reach SnowLuma.
    exec: Option<Arc<Executor>>,
}

/// True when the request being served speaks 2026-07-28 or later (the per-request `_meta`
/// version wins over the initialize handshake).
fn is_modern(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
}

impl SnowlumaServer {
    pub fn new(config: Config) -> Result<Self, String> {
        let exec = if config.mode.executes() {
            Some(Arc::new(Executor::new(&config)?))
        } else {
            None
        };
        Ok(SnowlumaServer {
            config: Arc::new(config),
            exec,
        })
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Runs one tool. Availability is checked here on every call, listed or not.
    async fn dispatch(
        &self,
        name: &str,
        args: Option<rmcp::model::JsonObject>,
        trace: &TraceContext,
        cancel: &CancellationToken,
        progress: &mut Progress,
    ) -> Reply {
        let Some(tool) = tools::find(name) else {
            return Reply::error(
                "unknown_tool",
                format!("no tool named `{name}`"),
                "call tools/list to see the tools this server offers",
            );
        };
        let mode = self.config.mode;
        // The executing tools are gated per action by exec::gate, which can name the right
        // tool or mode for that action; the others are gated by their mode alone.
        let executing = matches!(tool.name, "query_action" | "invoke_action");
        if !executing && !tool.available_in(mode) {
            return Reply::error(
                "mode",
                format!(
                    "{} needs SNOWLUMA_MCP_MODE={} or higher; this server runs in {} mode",
                    tool.name,
                    tool.min_mode.as_str(),
                    mode.as_str()
                ),
                "change SNOWLUMA_MCP_MODE (and SNOWLUMA_MCP_ENDPOINT) in the MCP client's server configuration",
            );
        }
        match tool.name {
            "list_actions" => docs::list_actions(args),
            "search_actions" => docs::search_actions(args),
            "get_action" => docs::get_action(args),
            "list_categories" => docs::list_categories(args),
            "get_runtime_info" => self.runtime_info(args, trace, cancel).await,
            "query_action" | "invoke_action" => {
                let entry = if tool.name == "query_action" {
                    Entry::Query
                } else {
                    Entry::Invoke
                };
                match (exec::parse(tool.name, args), &self.exec) {
                    (Err(reply), _) => reply,
                    (Ok(args), Some(executor)) => {
                        executor.run(entry, args, trace, cancel, progress).await
                    }
                    (Ok(args), None) => match catalog::resolve(args.action.trim()) {
                        None => unknown_action(args.action.trim()),
                        Some(resolved) => exec::gate(entry, self.config.mode, resolved)
                            .err()
                            .unwrap_or_else(|| {
                                Reply::error(
                                    "mode",
                                    "execution is not configured",
                                    "set SNOWLUMA_MCP_ENDPOINT",
                                )
                            }),
                    },
                }
            }
            other => Reply::error(
                "unknown_tool",
                format!("no handler for `{other}`"),
                "report this as a bug",
            ),
        }
    }
}

/// The actions `get_runtime_info` runs when asked to check the connection.
const CONNECTION_CHECKS: [&str; 3] = ["get_login_info", "get_status", "get_version_info"];

impl SnowlumaServer {
    /// `get_runtime_info`: the local overview, and with `check_connection` three read-only
    /// calls through the ordinary gate, each with its own response and diagnostics.
    async fn runtime_info(
        &self,
        args: Option<rmcp::model::JsonObject>,
        trace: &TraceContext,
        cancel: &CancellationToken,
    ) -> Reply {
        let args = match tools::parse_args::<docs::RuntimeInfoArgs>("get_runtime_info", args) {
            Ok(args) => args,
            Err(reply) => return reply,
        };
        let mut info = docs::runtime_info(&self.config);
        if let Some(executor) = &self.exec {
            info["request_timeout_ms"] = json!(executor.timeout_ms() as u64);
            if let (Value::Object(info), Value::Object(streams)) =
                (&mut info, executor.streams().overview())
            {
                info.extend(streams);
            }
        }
        if !args.check_connection {
            return Reply::ok(info);
        }
        let Some(executor) = &self.exec else {
            return docs::check_connection_refused();
        };
        let mut checks = Map::new();
        let mut failed = 0;
        for action in CONNECTION_CHECKS {
            let call = ActionArgs {
                action: action.to_string(),
                params: None,
                execution: None,
            };
            let reply = executor
                .run(Entry::Query, call, trace, cancel, &mut Progress::silent())
                .await;
            if reply.diagnostics.outcome != Outcome::Success {
                failed += 1;
            }
            checks.insert(
                action.into(),
                json!({ "result": reply.result, "diagnostics": reply.diagnostics }),
            );
        }
        let server_version = checks["get_version_info"]["result"]["data"]["app_version"]
            .as_str()
            .map(str::to_string);
        info["connection_checked"] = json!(true);
        info["checks"] = Value::Object(checks);
        let mut reply = Reply::ok(info);
        if let Some(version) = server_version {
            // SnowLuma reports e.g. `1.11.1-node`; the catalog names the release it describes.
            let release = version
                .split(['-', '+'])
                .next()
                .unwrap_or(&version)
                .trim_start_matches('v');
            let matches = release == CATALOG_VERSION;
            reply.result["catalog_matches_server"] = json!(matches);
            if !matches {
                reply.result["hint"] = json!(format!(
                    "SnowLuma reports version {version}, the bundled catalog describes {CATALOG_VERSION}: actions, params or results may differ"
                ));
            }
        }
        if failed > 0 {
            reply.diagnostics.outcome = Outcome::Failed;
            reply.diagnostics.kind = Some("connection_check");
            reply.diagnostics.message = Some(format!(
                "{failed} of {} connection checks did not succeed; see checks",
                CONNECTION_CHECKS.len()
            ));
            reply.diagnostics.next_step =
                Some("read each check's diagnostics for the cause".into());
        }
        reply
    }
}

impl ServerHandler for SnowlumaServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("snowluma-mcp", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "SnowLuma OneBot 11 action catalog ({} actions, SnowLuma {CATALOG_VERSION}), mode {}. \
                 Find actions with search_actions (match=\"keywords\" understands Chinese and English, e.g. \
                 `群 禁言` or `mute member`), read one with get_action (params, returnsSchema, examples), \
                 and check what this server may do with get_runtime_info.",
                ACTIONS.len(),
                self.config.mode.as_str()
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mode = self.config.mode;
        let tools = tools::TOOLS
            .iter()
            .filter(|t| t.available_in(mode))
            .map(|t| t.definition(mode))
            .collect();
        let mut result = ListToolsResult::with_all_items(tools);
        result.meta = result_meta(&ctx);
        if is_modern(&ctx) {
            // Private: the list depends on this server's mode.
            result = result
                .with_ttl_ms(CATALOG_TTL_MS)
                .with_cache_scope(CacheScope::Private);
        }
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let started = Instant::now();
        let trace = TraceContext::start(&ctx.meta);
        let name = request.name.as_ref();
        if tools::find(name).is_none() {
            trace::log_call(
                "unknown",
                &trace,
                "failed",
                Some("unknown_tool"),
                started.elapsed(),
            );
            return Err(ErrorData::invalid_params(
                format!("tool not found: {name}"),
                None,
            ));
        }
        let mut progress = Progress::new(ctx.peer.clone(), ctx.meta.get_progress_token());
        let reply = self
            .dispatch(name, request.arguments, &trace, &ctx.ct, &mut progress)
            .await;
        trace::log_call(
            name,
            &trace,
            reply.diagnostics.outcome.as_str(),
            reply.diagnostics.kind,
            started.elapsed(),
        );
        let meta = result_meta(&ctx).unwrap_or_default();
        Ok(reply.into_result(&trace, meta).into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let mut result = ListResourcesResult::with_all_items(resources::list());
        result.meta = result_meta(&ctx);
        if is_modern(&ctx) {
            result = result
                .with_ttl_ms(CATALOG_TTL_MS)
                .with_cache_scope(CacheScope::Private);
        }
        Ok(result)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let mut result = ListResourceTemplatesResult::with_all_items(resources::templates());
        result.meta = result_meta(&ctx);
        if is_modern(&ctx) {
            result = result
                .with_ttl_ms(CATALOG_TTL_MS)
                .with_cache_scope(CacheScope::Public);
        }
        Ok(result)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let contents = resources::read(&request.uri)?;
        let mut result = ReadResourceResult::new(vec![contents]);
        result.meta = result_meta(&ctx);
        if is_modern(&ctx) {
            result = result
                .with_ttl_ms(CATALOG_TTL_MS)
                .with_cache_scope(CacheScope::Public);
        }
        Ok(result.into())
    }
}
