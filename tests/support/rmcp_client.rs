//! rmcp's own client driving the built binary: connect in either protocol generation, and
//! tools/call with the result checked against the outputSchema the server advertised for the
//! tool (which must be listed) and against its text block.

#![allow(dead_code)]

use rmcp::model::{CallToolRequestParams, CallToolResult, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::process::Command;

/// Spawns `command` and connects `handler` to it: `server/discover` with 2026-07-28 when
/// `modern`, else the legacy `initialize` handshake.
pub async fn connect<H: ClientHandler>(
    handler: H,
    command: Command,
    modern: bool,
) -> RunningService<RoleClient, H> {
    let transport = TokioChildProcess::new(command).expect("spawn");
    connect_to(handler, transport, modern).await
}

/// Connects `handler` over any transport (e.g. rmcp's Streamable HTTP client), in the
/// generation `modern` picks.
pub async fn connect_to<H, T, E, A>(
    handler: H,
    transport: T,
    modern: bool,
) -> RunningService<RoleClient, H>
where
    H: ClientHandler,
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let client = if modern {
        handler
            .serve_with_lifecycle(
                transport,
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
    } else {
        handler.serve(transport).await
    };
    client.expect("connect")
}

/// Calls a listed tool; returns the result and its structuredContent, after checking both
/// against the advertised outputSchema and the text block.
pub async fn call_listed<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    name: &str,
    args: Value,
) -> (CallToolResult, Value) {
    let mut params = CallToolRequestParams::new(name.to_string());
    params.arguments = args.as_object().cloned();
    let result = client.call_tool(params).await.expect("tools/call");
    let structured = result
        .structured_content
        .clone()
        .expect("structuredContent");
    let tools = client.list_all_tools().await.expect("tools/list");
    let schema = tools
        .iter()
        .find(|t| t.name == name)
        .and_then(|t| t.output_schema.clone())
        .unwrap_or_else(|| panic!("{name} is not listed with an outputSchema"));
    crate::raw_client::assert_valid(name, &Value::Object((*schema).clone()), &structured);
    let text = &result.content[0].as_text().expect("text block").text;
    assert_eq!(serde_json::from_str::<Value>(text).unwrap(), structured);
    (result, structured)
}
