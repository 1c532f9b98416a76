//! `get_runtime_info`'s connection check: three read-only calls through the ordinary
//! pipeline and gate, each kept with its own response and diagnostics, and SnowLuma's version
//! compared with the bundled catalog's.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::{ActionArgs, Entry, Executor};
use crate::catalog::CATALOG_VERSION;
use crate::guard::Caller;

/// How a maintainer brings the catalog in step with another SnowLuma release.
const SYNC_HINT: &str = "to bring the catalog in step, run `cargo run -p snowluma-mcp-codegen --bin catalog-sync -- <catalog.json>` in a snowluma-mcp checkout, with SnowLuma's packages/mcp/src/generated/catalog.json of that release (README, \"Adding an action\")";
use crate::outcome::Outcome;
use crate::streams::Progress;
use crate::trace::TraceContext;

/// The actions the check runs, in order.
pub const CONNECTION_CHECKS: [&str; 3] = ["get_login_info", "get_status", "get_version_info"];

/// What the check found, as it appears in the runtime overview.
#[derive(Serialize, JsonSchema)]
pub struct ConnectionCheck {
    /// Per action: `{result, diagnostics}`, as query_action would have returned them.
    pub checks: Map<String, Value>,
    /// Whether SnowLuma's reported version is the release the catalog describes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub catalog_matches_server: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// How many checks did not succeed.
    #[serde(skip)]
    pub failed: usize,
}

impl Executor {
    pub async fn check_connection(
        &self,
        trace: &TraceContext,
        cancel: &CancellationToken,
    ) -> ConnectionCheck {
        let mut checks = Map::new();
        let mut failed = 0;
        for action in CONNECTION_CHECKS {
            let call = ActionArgs {
                action: action.to_string(),
                params: None,
                execution: None,
            };
            let caller = Caller::internal("get_runtime_info");
            let reply = self
                .run(
                    &caller,
                    Entry::Query,
                    call,
                    trace,
                    cancel,
                    &mut Progress::silent(),
                )
                .await;
            if reply.outcome() != Outcome::Success {
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
        let mut check = ConnectionCheck {
            checks,
            catalog_matches_server: None,
            hint: None,
            failed,
        };
        if let Some(version) = server_version {
            // SnowLuma reports e.g. `1.11.1-node`; the catalog names the release it describes.
            let release = version
                .split(['-', '+'])
                .next()
                .unwrap_or(&version)
                .trim_start_matches('v');
            let matches = release == CATALOG_VERSION;
            check.catalog_matches_server = Some(matches);
            if !matches {
                check.hint = Some(format!(
                    "SnowLuma reports version {version}, the bundled catalog describes {CATALOG_VERSION}: actions, params or results may differ; {SYNC_HINT}"
                ));
            }
        }
        check
    }
}
